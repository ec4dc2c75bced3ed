"""Loads the Cypher files under `cypher/` by name and applies the versioned schema migrations."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pegasus.errors import MigrationError, PegasusError

_MIGRATION_NAME = re.compile(r"^V(\d{4})__([A-Za-z0-9_]+)\.cypher$")


def cypher_dir() -> Path:
    """The Cypher files: PEGASUS_CYPHER_DIR, else `cypher/` of this checkout, else the copy
    installed with the package (`pegasus.queries`)."""
    override = os.environ.get("PEGASUS_CYPHER_DIR")
    if override:
        return Path(override)
    checkout = Path(__file__).resolve().parents[2] / "cypher"
    if (checkout / "schema").is_dir():
        return checkout
    return Path(__file__).resolve().parent / "queries"


_FRAGMENT_USE = re.compile(r"@([a-z_]+)\(([A-Za-z_][A-Za-z_0-9]*)\)")
_FRAGMENT_SLOT = re.compile(r"\bEDGE\b")


def _read(name: str) -> str:
    if ".." in Path(name).parts:
        raise PegasusError(f"bad query name {name!r}")
    path = cypher_dir() / f"{name}.cypher"
    if not path.is_file():
        raise PegasusError(f"no Cypher file {path}")
    return path.read_text(encoding="utf-8")


def fragment(name: str) -> str:
    """A shared predicate, `cypher/fragments/<name>.cypher`, as one parenthesised line without
    comments, its own fragment uses expanded. Its relationship variable is spelled `EDGE`."""
    return _fragment(name, (name,))


def _fragment(name: str, within: tuple[str, ...]) -> str:
    lines = [line.strip() for line in _read(f"fragments/{name}").splitlines()
             if line.strip() and not line.strip().startswith("//")]
    return "(" + _expand(" ".join(lines), within) + ")"


def _expand(text: str, within: tuple[str, ...] = ()) -> str:
    def one(use: re.Match[str]) -> str:
        name, variable = use.group(1), use.group(2)
        if name in within:
            raise PegasusError(f"Cypher fragment {name!r} uses itself")
        return _FRAGMENT_SLOT.sub(variable, _fragment(name, (*within, name)))

    return _FRAGMENT_USE.sub(one, text)


@cache
def load(name: str) -> str:
    """The text of `cypher/<name>.cypher`, e.g. `load("read/recall_walk")`, with every use of a
    fragment, `@current(r)`, replaced by that fragment for the variable `r` (design, "Current
    edges"): a fixed text of the repository, never user data."""
    return _expand(_read(name))


def split_statements(text: str) -> list[str]:
    """Statements of a migration file: separated by `;` at the end of a line; `//` comments go."""
    body = "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))
    return [s.strip() for s in re.split(r";\s*(?:\n|$)", body) if s.strip()]


@dataclass(frozen=True)
class Migration:
    """One versioned schema file."""

    version: int
    description: str
    path: Path
    checksum: str

    @property
    def statements(self) -> list[str]:
        return split_statements(self.path.read_text(encoding="utf-8"))


def migrations() -> list[Migration]:
    """All files of `cypher/schema/`, in version order; a misnamed file is an error."""
    found: list[Migration] = []
    for path in sorted((cypher_dir() / "schema").glob("*.cypher")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise MigrationError(
                f"{path.name}: migration files are named V0001__Description.cypher"
            )
        checksum = hashlib.sha256(path.read_bytes()).hexdigest()
        found.append(Migration(int(match[1]), match[2], path, checksum))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError("two migration files share a version number")
    return found


def check_applied(applied: dict[int, str], available: list[Migration]) -> list[Migration]:
    """The migrations still to apply; refuses when an applied file changed or vanished."""
    by_version = {m.version: m for m in available}
    for version, checksum in sorted(applied.items()):
        current = by_version.get(version)
        if current is None:
            raise MigrationError(
                f"migration V{version:04d} is recorded in the database but its file is gone"
            )
        if current.checksum != checksum:
            raise MigrationError(
                f"migration {current.path.name} was changed after it was applied "
                f"(checksum {checksum[:12]} in the database, {current.checksum[:12]} on disk); "
                "restore the file and put the change in a new migration"
            )
    pending = [m for m in available if m.version not in applied]
    highest = max(applied, default=0)
    for migration in pending:
        if migration.version < highest:
            raise MigrationError(
                f"{migration.path.name} is numbered below V{highest:04d}, the highest version "
                "this database has applied, so it would run out of order; give it a number "
                f"above V{highest:04d}")
    return pending
