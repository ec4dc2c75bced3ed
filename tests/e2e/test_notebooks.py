"""The notebooks run top to bottom against the session's Neo4j, and say what they should."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from pegasus.settings import secret_text

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def execute(name: str, monkeypatch, settings, figures: Path) -> dict:
    """Run one notebook in a fresh kernel; the JSON its last cell prints."""
    monkeypatch.setenv("NEO4J_URI", settings.neo4j_uri)
    monkeypatch.setenv("NEO4J_USER", settings.neo4j_user)
    if settings.neo4j_password:
        monkeypatch.setenv("NEO4J_PASSWORD", secret_text(settings.neo4j_password))
    monkeypatch.setenv("PEGASUS_FIGURES", str(figures))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    last = notebook.cells[-1].outputs
    return json.loads("".join(o["text"] for o in last if o.get("name") == "stdout"))


def assert_png(path: Path) -> None:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path
    assert path.stat().st_size > 10_000, f"{path} looks empty"


@pytest.mark.neo4j
def test_decay_curves(settings, monkeypatch, tmp_path):
    out = execute("01_decay_curves.ipynb", monkeypatch, settings, tmp_path)
    assert out["max_error"] < 1e-9
    # ln(100 / 2) / λ, rounded up to the first whole day the pass marks dormant.
    assert out["dormant_day"] == {"immutable": None, "stable": 783, "mutable": 196,
                                  "time_bound": 79, "ephemeral": 20}
    assert_png(tmp_path / "decay_curves.png")


@pytest.mark.neo4j
def test_reinforcement_dynamics(settings, monkeypatch, tmp_path):
    out = execute("02_reinforcement_dynamics.ipynb", monkeypatch, settings, tmp_path)
    alive, hub = out["final_alive"], out["final_hub_alive"]
    # Reinforcing what the walk crossed keeps more alive than reinforcing what was shown,
    # which keeps more than never recalling; the hub's edges show it most (design §7.10).
    assert alive["crossed"] > alive["shown"] > alive["no reads"]
    assert hub["crossed"] > hub["shown"]
    assert alive["crossed"] <= out["edges"]
    assert_png(tmp_path / "reinforcement_dynamics.png")


@pytest.mark.neo4j
def test_recall_explained(settings, monkeypatch, tmp_path):
    out = execute("03_recall_explained.ipynb", monkeypatch, settings, tmp_path)
    assert {"Sarah", "Northwind"} <= set(out["seeds"])
    assert {"Sarah", "Northwind"} <= set(out["fired"])
    assert len(out["fired"]) <= 8
    assert out["snippets"] > 0 and out["candidates"] >= out["snippets"]
    assert out["words"] <= out["budget"] and out["ranked_best_first"]
    assert_png(tmp_path / "recall_explained.png")


@pytest.mark.neo4j
def test_growth(settings, monkeypatch, tmp_path):
    out = execute("04_growth.ipynb", monkeypatch, settings, tmp_path)
    assert sorted(out) == ["conversations", "edges", "entities"]
    assert (out["edges"], out["conversations"]) == (600, 20)
    assert 30 <= out["entities"] <= 60
    assert_png(tmp_path / "growth.png")
