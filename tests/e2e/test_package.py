"""The package stands on its own: a wheel built from this tree, installed into a fresh venv,
runs the CLI and finds its Cypher, migrations and samples without the checkout."""

import hashlib
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from pegasus import cypher

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_carries_cypher_and_samples(tmp_path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v",
                            "--no-build-isolation", "-w", str(tmp_path / "dist"), str(ROOT)],
                           check=True, capture_output=True, text=True, timeout=300)
    # A data folder setuptools does not know as a package is a warning on every install.
    assert "is absent from the" not in built.stdout + built.stderr
    [wheel] = (tmp_path / "dist").glob("pegasus_memory-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # No checkout on the path (its src/ holds an egg-info that pip would take for an install),
    # no PEGASUS_CYPHER_DIR: the project comes only from the wheel.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PEGASUS_CYPHER_DIR")}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", str(wheel)], check=True, capture_output=True, timeout=300,
                   env=env, cwd=tmp_path)
    # The dependencies come from this interpreter's site-packages.
    env["PYTHONPATH"] = sysconfig.get_paths()["purelib"]
    helped = subprocess.run([str(python), "-m", "pegasus", "--help"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0, helped.stderr
    assert "commit" in helped.stdout and "recall" in helped.stdout
    probe = subprocess.run([str(python), "-c", (
        "import pegasus, pegasus.cypher as c; from pegasus.demo import samples; "
        "print(pegasus.__file__); print(c.cypher_dir()); print(len(c.migrations())); "
        "import hashlib; print(hashlib.sha256(c.load('read/recall_walk').encode()).hexdigest()); "
        "print(len(samples()))")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    module, folder, migrations, activation, sample_count = probe.stdout.splitlines()
    assert module.startswith(str(venv)) and folder.startswith(str(venv))
    assert int(migrations) == len(cypher.migrations())
    # the installed copy loads the same query, its fragments (cypher/fragments) expanded
    assert activation == hashlib.sha256(cypher.load("read/recall_walk").encode()).hexdigest()
    assert "@current(" not in cypher.load("read/recall_walk")
    assert sample_count == "3"


def test_the_peers_are_benchmark_only():
    """graphiti-core and mem0ai are the `peers` extra: neither the library, nor its runtime or
    test dependencies, nor the suite may need them (benchmarks/peers.py alone imports them)."""
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    peers = {re.split(r"[=<>!~ ]", r)[0] for r in project["optional-dependencies"]["peers"]}
    assert {"graphiti-core", "mem0ai"} <= peers
    needed = project["dependencies"] + project["optional-dependencies"]["test"]
    assert not {re.split(r"[=<>!~ \[]", r)[0] for r in needed} & {"graphiti-core", "mem0ai"}
    importing = [p.relative_to(ROOT).as_posix()
                 for folder in ("src", "tests") for p in (ROOT / folder).rglob("*.py")
                 if "node_modules" not in p.parts
                 and re.search(r"^\s*(from|import)\s+(graphiti_core|mem0)\b",
                               p.read_text(), re.MULTILINE)]
    assert importing == []
