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
