"""The facade is the top floor (CONVENTIONS): no stage imports `pegasus.memory`, so there is no
import circle (memory ↔ ownership/requests ↔ transfer/importer, #35)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pegasus

ROOT = Path(pegasus.__file__).resolve().parent
# The facade itself and what sits above it: the package's front door, the CLI, the servers,
# the demo.
ABOVE = {"__init__.py", "memory.py", "cli.py", "mcp_server.py", "demo.py"}


def imports_memory(path: Path) -> bool:
    """Whether a module imports pegasus.memory (or Memory from the package), even for types."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name == "pegasus.memory" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (
                node.module == "pegasus.memory"
                or node.module == "pegasus" and any(a.name == "Memory" for a in node.names)):
            return True
    return False


def test_no_stage_imports_the_facade():
    stages = [p for p in ROOT.rglob("*.py") if (parts := p.relative_to(ROOT).parts)[0] != "serve"
              and not (len(parts) == 1 and parts[0] in ABOVE)]
    assert len(stages) > 30
    offenders = sorted(str(p.relative_to(ROOT)) for p in stages if imports_memory(p))
    assert offenders == []


def test_the_check_sees_an_import_of_the_facade(tmp_path):
    for text in ["from pegasus.memory import Memory", "import pegasus.memory",
                 "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pegasus import Memory"]:
        (tmp_path / "m.py").write_text(text + "\n")
        assert imports_memory(tmp_path / "m.py"), text
    (tmp_path / "m.py").write_text("from pegasus.models.views import MemoryEdge\n")
    assert not imports_memory(tmp_path / "m.py")


# The write path: the commit driver, the write library and the stages that write.
WRITE_PATH = ("pegasus.commit", "pegasus.write", "pegasus.lifecycle", "pegasus.merge",
              "pegasus.extract", "pegasus.ownership", "pegasus.transfer")


def test_recall_does_not_load_the_write_path():
    """Importing recall loads no module of the write path (a fresh interpreter's sys.modules)."""
    code = ("import sys, pkgutil, importlib, pegasus.recall as r\n"
            "for m in pkgutil.iter_modules(r.__path__): importlib.import_module(f'pegasus.recall.{m.name}')\n"
            "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('pegasus'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, env={**os.environ, "PYTHONPATH": str(ROOT.parent)}
                            ).stdout.split()
    assert "pegasus.recall.engine" in loaded
    assert [m for m in loaded if m.startswith(WRITE_PATH)] == []
