from pathlib import Path

import pytest

from pegasus import cypher
from pegasus.errors import MigrationError, PegasusError


def test_split_statements_drops_comments_and_splits_on_line_end_semicolons():
    text = "// a comment\nCREATE INDEX a IF NOT EXISTS FOR (n:A) ON (n.x);\n\nRETURN 'a;b' AS s;\n"
    assert cypher.split_statements(text) == [
        "CREATE INDEX a IF NOT EXISTS FOR (n:A) ON (n.x)",
        "RETURN 'a;b' AS s",
    ]


def test_load_reads_a_file_by_name():
    assert "PegasusMigration" in cypher.load("read/applied_migrations")


@pytest.mark.parametrize("name", ["../pyproject", "read/../../secrets", "read/no_such_query"])
def test_load_refuses_paths_outside_and_missing_files(name):
    with pytest.raises(PegasusError):
        cypher.load(name)


def test_migrations_are_versioned_in_order():
    found = cypher.migrations()
    assert [m.version for m in found] == sorted(m.version for m in found)
    assert found[0].path.name.startswith("V0001__")
    assert all(len(m.checksum) == 64 for m in found)


def test_check_applied_returns_pending_and_refuses_changed_or_missing_files():
    found = cypher.migrations()
    first = found[0]
    assert cypher.check_applied({}, found) == found
    assert cypher.check_applied({first.version: first.checksum}, found) == found[1:]
    with pytest.raises(MigrationError, match="changed after it was applied"):
        cypher.check_applied({first.version: "0" * 64}, found)
    with pytest.raises(MigrationError, match="file is gone"):
        cypher.check_applied({9999: "0" * 64}, found)


def test_misnamed_migration_file_is_refused(tmp_path: Path, monkeypatch):
    (tmp_path / "schema").mkdir()
    (tmp_path / "schema" / "constraints.cypher").write_text("RETURN 1")
    monkeypatch.setenv("PEGASUS_CYPHER_DIR", str(tmp_path))
    with pytest.raises(MigrationError, match="V0001__Description"):
        cypher.migrations()


def test_an_instant_utc_cannot_hold_is_a_clear_error():
    """Found by fuzzing the HTTP API: year 1 at +00:01 overflowed into a server error."""
    from datetime import datetime, timedelta, timezone

    import pytest

    from pegasus.clock import aware
    from pegasus.errors import PegasusError

    early = datetime(1, 1, 1, tzinfo=timezone(timedelta(minutes=1)))
    with pytest.raises(PegasusError, match="outside the instants UTC can hold"):
        aware(early)


def test_a_migration_numbered_below_the_highest_applied_is_refused():
    found = cypher.migrations()
    latest = found[-1]
    # Everything but V0002 applied: V0002 would now run after V0003 and later, out of order.
    applied = {m.version: m.checksum for m in found if m.version != 2}
    with pytest.raises(MigrationError, match=rf"V0002__\w+\.cypher is numbered below "
                                             rf"V{latest.version:04d}"):
        cypher.check_applied(applied, found)


def test_every_cypher_file_is_used_and_every_loaded_name_exists():
    """Queries are named in Python by string literals: each must have its file, and each file
    (but the saved Browser queries and the migrations) must be named somewhere."""
    import re

    root = Path(__file__).resolve().parents[2]
    sources = "\n".join(p.read_text() for folder in ("src", "benchmarks")
                        for p in (root / folder).rglob("*.py"))
    named = set(re.findall(r'"((?:read|write|maintenance|ownership|transfer)/[a-z_0-9]+)"', sources))
    files = {str(p.relative_to(root / "cypher").with_suffix(""))
             for p in (root / "cypher").rglob("*.cypher")
             if p.parts[-2] not in ("explore", "schema", "fragments")}
    assert named - files == set(), "names without a file"
    assert files - named == set(), "files never loaded"
    queries = "\n".join(p.read_text() for p in (root / "cypher").rglob("*.cypher"))
    used = set(re.findall(r"@([a-z_]+)\(", queries))
    fragments = {p.stem for p in (root / "cypher" / "fragments").glob("*.cypher")}
    assert used == fragments, "fragments used without a file, or never used"


def _query_files() -> list[Path]:
    root = Path(__file__).resolve().parents[2] / "cypher"
    return [p for folder in ("read", "write", "maintenance") for p in (root / folder).glob("*.cypher")]


def test_what_current_means_is_written_once():
    """"Current" (not superseded, not dormant, not expired) lives in cypher/fragments: no query
    spells the dormant or expiry test itself, and every query that reads current edges says
    @current."""
    import re

    by_hand = re.compile(r"NOT coalesce\(\w+\.dormant|\.expires_at\s*>")
    spelled = [p.name for p in _query_files() if by_hand.search(p.read_text())]
    assert spelled == []
    users = sorted(p.stem for p in _query_files() if "@current(" in p.read_text())
    assert users == ["entity_by_name", "entity_neighbourhood", "recall_walk"]


def test_the_decay_formula_is_written_once():
    """S0·e^(−λt) lives in cypher/fragments/strength.cypher (issue 40): no query and no Python
    module spells `exp(` itself, and the daily pass, the reinforcement, the list of memories and a
    memory's history all say @strength."""
    root = Path(__file__).resolve().parents[2]
    queries = [*_query_files(), *(root / "cypher" / "ownership").glob("*.cypher"),
               *(root / "cypher" / "transfer").glob("*.cypher")]
    spelled = [p.name for p in queries if "exp(" in p.read_text()]
    spelled += [p.name for p in (root / "src" / "pegasus").rglob("*.py")
                if "math.exp(" in p.read_text()]
    assert spelled == []
    users = sorted(p.stem for p in queries if "@strength(" in p.read_text())
    assert users == ["decay", "memories", "memory", "reinforce"]
    assert "exp(" in (root / "cypher" / "fragments" / "strength.cypher").read_text()


def test_a_fragment_edit_reaches_every_query_that_uses_it(tmp_path, monkeypatch):
    import shutil

    copy = tmp_path / "cypher"
    shutil.copytree(cypher.cypher_dir(), copy)
    current = copy / "fragments" / "current.cypher"
    current.write_text(current.read_text() + "  AND NOT coalesce(EDGE.retracted, false)\n")
    monkeypatch.setenv("PEGASUS_CYPHER_DIR", str(copy))
    cypher.load.cache_clear()
    try:
        walk = cypher.load("read/recall_walk")
        assert "@current(" not in walk
        # the degree and the spread of both hops
        assert walk.count("NOT coalesce(x.retracted, false)") == 2
        # the label seeds, the expanded nodes' edges, the named entities' faded ones (NOT
        # current) and the keyword hits
        assert walk.count("NOT coalesce(r.retracted, false)") == 4
        assert "coalesce(r.retracted, false)" in cypher.load("read/entity_neighbourhood")
        assert cypher.fragment("current").startswith("((EDGE.user_id = $user_id AND")
    finally:
        cypher.load.cache_clear()


def test_a_fragment_that_uses_itself_is_refused(tmp_path, monkeypatch):
    (tmp_path / "fragments").mkdir()
    (tmp_path / "read").mkdir()
    (tmp_path / "fragments" / "loop.cypher").write_text("@loop(EDGE) AND EDGE.x\n")
    (tmp_path / "read" / "q.cypher").write_text("MATCH ()-[r]-() WHERE @loop(r) RETURN r\n")
    monkeypatch.setenv("PEGASUS_CYPHER_DIR", str(tmp_path))
    cypher.load.cache_clear()
    try:
        with pytest.raises(PegasusError, match="fragment 'loop' uses itself"):
            cypher.load("read/q")
    finally:
        cypher.load.cache_clear()
