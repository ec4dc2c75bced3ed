"""The house reads top-down (ARCHITECTURE.md, "Floors" and "Rules"): no import circle among
pegasus modules, no stage imports the `Memory` facade, recall does not load the write path,
serve never imports the hook program nor reaches the store, and the models stand on leaves
only.

The import graph is read from the source with `ast` (every import, also those inside functions
and under TYPE_CHECKING: a circle there is still one idea split wrongly); networkx, already a
test dependency, finds the circles."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx

import pegasus

ROOT = Path(pegasus.__file__).resolve().parent
# The facade itself and what sits above it: the package's front door, the CLI, the servers,
# the demo.
ABOVE = {"__init__.py", "memory.py", "cli.py", "mcp_server.py", "demo.py"}
# The write path: the commit driver, the write library and the stages that write.
WRITE_PATH = ("pegasus.commit", "pegasus.write", "pegasus.conversations", "pegasus.lifecycle",
              "pegasus.migrations", "pegasus.merge", "pegasus.extract", "pegasus.ownership",
              "pegasus.transfer")


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package at `root`, by dotted name."""
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(root: Path) -> nx.DiGraph:
    """Module → module it imports, within the package at `root` (an imported name that is no
    module counts as its module)."""
    known = modules(root)
    top = root.name
    graph = nx.DiGraph()

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    for name, path in known.items():
        graph.add_node(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{parent}.{base}" if base else parent
                targets = [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for target in targets:
                if target.split(".")[0] == top and (home := resolve(target)) not in (None, name):
                    graph.add_edge(name, home, line=node.lineno)
    return graph


def circles(graph: nx.DiGraph) -> list[list[str]]:
    """One circle through each strongly connected group of modules, as [a, b, …, a] from its
    first module by name."""
    found = []
    for group in nx.strongly_connected_components(graph):
        if len(group) > 1:
            walk = [a for a, _ in nx.find_cycle(graph.subgraph(group))]
            start = walk.index(min(walk))
            walk = walk[start:] + walk[:start]
            found.append([*walk, walk[0]])
    return sorted(found)


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


def test_no_import_circle_among_pegasus_modules():
    graph = import_graph(ROOT)
    assert graph.number_of_nodes() > 80 and graph.number_of_edges() > 200
    assert circles(graph) == []


def test_the_check_sees_a_circle_however_it_is_imported(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("def late():\n    from ..c import thing\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    import pkg.a\n")
    (package / "d.py").write_text("from . import c\n")
    assert circles(import_graph(package)) == [["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]]
    (package / "c.py").write_text("thing = 1\n")
    assert circles(import_graph(package)) == []


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


def test_recall_does_not_load_the_write_path():
    """Importing every recall module loads no module of the write path (a fresh interpreter's
    sys.modules)."""
    code = ("import sys, pkgutil, importlib, pegasus.recall as r\n"
            "for m in pkgutil.iter_modules(r.__path__): importlib.import_module(f'pegasus.recall.{m.name}')\n"
            "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('pegasus'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, env={**os.environ, "PYTHONPATH": str(ROOT.parent)}
                            ).stdout.split()
    assert "pegasus.recall.engine" in loaded
    assert [m for m in loaded if m.startswith(WRITE_PATH)] == []


def _imports(path: Path) -> list[tuple[str, int]]:
    """(module named, line) of every import of a file, `from a import b` as a.b."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(f"{node.module}.{a.name}", node.lineno) for a in node.names]
    return found


SERVE = sorted((ROOT / "serve").glob("*.py"))


def test_serve_never_imports_the_hook_program():
    """The hook is a client of the server (it talks HTTP); what both need lives below them
    (pegasus.preamble)."""
    assert len(SERVE) > 10
    offenders = [f"{p.name}:{line}" for p in SERVE for name, line in _imports(p)
                 if name == "pegasus.hook" or name.startswith("pegasus.hook.")]
    assert offenders == []


def test_serve_never_reaches_the_store():
    """Serve asks the facade (Memory's methods), never the store under it: no `.store`
    attribute, and from pegasus.store only the request deadline."""
    offenders = []
    for path in SERVE:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        offenders += [f"{path.name}:{n.lineno} .store" for n in ast.walk(tree)
                      if isinstance(n, ast.Attribute) and n.attr == "store"]
        offenders += [f"{path.name}:{line} {name}" for name, line in _imports(path)
                      if name.startswith("pegasus.store") and name != "pegasus.store.deadline"]
    assert offenders == []


def test_the_check_sees_serve_reaching_the_store(tmp_path):
    (tmp_path / "m.py").write_text("def f(memory):\n    return memory.store.read('x')\n")
    tree = ast.parse((tmp_path / "m.py").read_text())
    assert [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)] == ["read", "store"]


def _leaf(module: str, known: dict[str, Path]) -> bool:
    """A module that imports no pegasus module (nor does its package's __init__)."""
    paths = [known[module]]
    package = module.rpartition(".")[0]
    if package in known and package != ROOT.name:
        paths.append(known[package])
    return all(not name.startswith(f"{ROOT.name}.") and name != ROOT.name
               for path in paths for name, _ in _imports(path))


def test_the_models_stand_on_leaves_only():
    """A model module imports other model modules and leaves (modules that import no pegasus
    module: vocab, portable, the block renderer), so the floor every stage shares pulls in
    nothing above it."""
    known = modules(ROOT)
    graph = import_graph(ROOT)
    models = [m for m in known if m.startswith("pegasus.models")]
    assert len(models) >= 5
    offenders = sorted(f"{m} -> {t}" for m in models for t in graph.successors(m)
                       if not t.startswith("pegasus.models") and not _leaf(t, known))
    assert offenders == []


def test_the_hook_program_stands_on_leaves_only():
    """`pegasus-hook` runs for every prompt of a coding agent: it loads no server stack."""
    known = modules(ROOT)
    assert sorted(t for t in import_graph(ROOT).successors("pegasus.hook")
                  if not _leaf(t, known)) == []
