"""Import an export file into a user's partition (design §11). The import file is a trust
boundary, checked here in one place: every line is read as bytes, decoded, parsed and
validated against the format's models (types and the batch contract's limits), and the ids it
brings are compared with every other user's; nothing is written when any line fails. Every
person's word a valid line holds is then screened for secrets (pegasus.screen, design §15): a
secret in a file is replaced by its marker before it is written.

Then all or nothing: the file is written into a staging partition of its own (an id no user
can have), and one transaction swaps it in (with replace, the user's memory goes in that same
transaction). A failure anywhere leaves the user's memory as it was; the staging of an import
that died (kill -9, a lost server) is removed by the sweep every import runs first."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from neo4j import ManagedTransaction
from neo4j.exceptions import Neo4jError
from pydantic import ValidationError

from pegasus.embedding.embed import Embedder, pack_vector
from pegasus.errors import ErasureInProgressError, InvalidExportError, PartitionNotEmptyError
from pegasus.merge.rules import StoredEntity
from pegasus.models.batch import describe_validation_error
from pegasus.models.reports import ImportReport
from pegasus.portable import RepeatedKeyError, one_line, unique_keys
from pegasus.screen import Screen
from pegasus.snippets import sync_sightings, user_key
from pegasus.store import Store, run
from pegasus.transfer.format import (
    ADDED,
    COUNTED,
    FORMAT,
    MAX_ID_CHARS,
    MINOR,
    ORDER,
    OWNER_PROPS,
    RECORD,
    VERSION,
    ConversationRecord,
    End,
    EntityRecord,
    Header,
    MemoryRecord,
    MergeRecordRecord,
)
from pegasus.vocab import KIND_LABELS
from pegasus.write.keys import write_keys

BATCH = 500
ID_BATCH = 5000
# A line holds at most one conversation's turns (2 M characters, up to 4 bytes each, and
# JSON's escapes); a longer line is refused before it is read whole.
MAX_LINE_BYTES = 32 * 2**20
MAX_DEPTH = 6  # the deepest a line of the format nests (a merge record's instants)
STAGING = "import-staging:"
LEASE_S = 600  # a staging partition idle this long belongs to a dead import, on any host
HOLDER = f"{socket.gethostname()}:{os.getpid()}"
# The stagings this process is writing now. One of this process's that is not here died with
# its import: Neo4j was lost midway, so erasing it on the way out failed too (#47).
_WRITING: set[str] = set()

# What the importer needs from its caller: erase a whole partition (the staging of a failed
# import), given the store-level `forget_everything` of ownership/forget.py.
Erase = Callable[[str], Any]


def staging_id() -> str:
    """A staging partition's id: longer than any user id may be, so no user can hold it."""
    return f"{STAGING}{uuid.uuid4().hex}".ljust(MAX_ID_CHARS + 1, "~")


# --- the check ---------------------------------------------------------------------------


def _raw_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as lines:
        number = 0
        while raw := lines.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise InvalidExportError(f"line {number}: longer than {MAX_LINE_BYTES} bytes; "
                                         "no line of the format is")
            yield number, raw


def _structure_problem(data: Any) -> str | None:
    """Where a parsed line nests deeper than any record of the format, or holds a string (or
    key) that is no Unicode text (a lone surrogate from a \\ud800 escape, which Neo4j cannot
    store): "path: problem", or None. Iterative: a 100,000-deep line costs no recursion."""
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    while stack:
        path, value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"{path}: nests deeper than any record of the format ({MAX_DEPTH} levels)"
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return f"{path or 'line'}: not Unicode text (a lone surrogate escape)"
        elif isinstance(value, dict):
            for key, item in value.items():
                stack.append((path, key, depth + 1))
                stack.append((f"{path}.{key}".lstrip(".") if _plain(key) else path, item,
                              depth + 1))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v, depth + 1) for i, v in enumerate(value))
    return None


def _plain(key: str) -> bool:
    """A key fit to be named in a message (a bad key is named by where it is)."""
    return key.isascii() and key.isprintable() and len(key) <= MAX_ID_CHARS


# What a line holds that is no one's words: ids, instants, the format's own words. Everything
# else is screened for secrets once the line passed the format's check (design §15).
_NOT_WORDS = {"type", "format", "version", "user_id", "id", "conversations", "mentions",
              "read_log", "edge_ids", "candidate_ids", "superseded_by", "superseded_in",
              "said_in", "batch_hash", "kind", "stability", "cardinality", "status", "role",
              "rule", "source", "reinforced_at", "corrects", "corrected_via"}
_LABELS = {"relation", "label"}


def _not_words(key: str) -> bool:
    return key in _NOT_WORDS or key.endswith(("_id", "_at")) or key == "$datetime"


def _screened(data: Any, number: int, kind: str, checker: Screen) -> Any:
    """A parsed line with every secret in its words replaced by a marker (`checker` counts
    them for the whole file). A label cannot hold a marker: a line whose label holds a secret
    is refused."""
    if not isinstance(data, dict):
        return data
    checker.learn(checker.strings(data, _not_words))
    try:
        screened = _screened_part(checker, data)
    except _SecretName as exc:
        raise InvalidExportError(f"line {number} ({kind}): a {exc.args[0]} holds what looks "
                                 "like a secret, which Pegasus never keeps; edit the file"
                                 ) from None
    return screened


class _SecretName(Exception):  # noqa: N818 - a signal, turned into InvalidExportError
    """A name that becomes a Neo4j token (a relation type, a property key) held a secret: it
    can hold no marker, and Neo4j never deletes a token."""


def _screened_part(checker: Screen, part: Any) -> Any:
    """Every word of a part screened; a merge record's parts held as JSON text are screened
    as text (a marker holds no quote or backslash: the text stays JSON)."""
    if isinstance(part, dict):
        named = part.get("properties")  # the one map whose keys become names in the graph
        if isinstance(named, dict) and any(checker.key(k) != k for k in named):
            raise _SecretName("property name")
        return {k: v if _not_words(k) else _screened_label(checker, v) if k in _LABELS
                else checker.keyed(k, v) if isinstance(v, str)
                else _screened_part(checker, v) for k, v in part.items()}
    if isinstance(part, list):
        return [_screened_part(checker, v) for v in part]
    return checker.data(part)


def _screened_label(checker: Screen, label: Any) -> Any:
    if isinstance(label, str) and checker(label) != label:
        raise _SecretName("relation label")
    return label


def _parsed(path: Path, checker: Screen | None = None) -> Iterator[tuple[int, Any]]:
    """(line number, record) of every non-empty line, its words screened for secrets (counted
    by `checker`); the first problem as one clear line."""
    checker = checker or Screen()
    first = True
    for number, raw in _raw_lines(path):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidExportError(f"line {number}: not UTF-8 text (byte {exc.start + 1}: "
                                     f"{exc.reason})") from None
        if not text.strip():
            continue
        try:
            data = json.loads(text, object_pairs_hook=unique_keys)
        except RepeatedKeyError as exc:
            key = f" {exc.key!r}" if _plain(exc.key) else ""
            raise InvalidExportError(f"line {number}: a key{key} appears twice in one object "
                                     "(which one counts would be a guess)") from None
        except (json.JSONDecodeError, RecursionError) as exc:
            problem = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise InvalidExportError(f"line {number}: not JSON ({problem})") from None
        except ValueError:  # an integer past Python's 4,300 digits (no export writes one)
            raise InvalidExportError(f"line {number}: not JSON (a number too long to read)"
                                     ) from None
        kind = data["type"] if isinstance(data, dict) and data.get("type") in ORDER else "record"
        problem = _structure_problem(data)
        if problem is not None:
            raise InvalidExportError(f"line {number} ({kind}): {problem}")
        header, first = first, False
        if header:
            _check_header(data, number)
        try:
            # Checked as the file holds it first (a value past its limit is refused before
            # anything reads it whole), then screened, and checked again when that changed it.
            record = RECORD.validate_python(data)
            if not header and (screened := _screened(data, number, kind, checker)) != data:
                record = RECORD.validate_python(screened)
        except ValidationError as exc:
            problem = describe_validation_error(exc)
            problem = problem.removeprefix(f"{kind}.").removeprefix(f"{kind}: ")
            # keys and values the file chose may be quoted: one printable line, bounded
            raise InvalidExportError(f"line {number} ({kind}): {one_line(problem)}") from None
        yield number, record


def _check_header(data: Any, number: int) -> None:
    if not isinstance(data, dict) or data.get("type") != "header" or data.get("format") != FORMAT:
        raise InvalidExportError(f"line {number}: not a {FORMAT} file (its first line must be "
                                 "the header)")
    version = data.get("version")
    if type(version) is not int or version != VERSION:  # true == 1.0 == 1 in Python
        raise InvalidExportError(f"line {number}: version: format version "
                                 f"{one_line(json.dumps(version), 40)} is unknown; this "
                                 f"Pegasus reads version {VERSION}")
    minor = data.get("minor", 0)
    if type(minor) is int and minor > MINOR:
        raise InvalidExportError(f"line {number}: minor: format {VERSION}.{minor} is newer than "
                                 f"this Pegasus reads ({VERSION}.0 to {VERSION}.{MINOR}); "
                                 "import it with a newer Pegasus")


# Ids a link cannot carry as a path segment: a browser reads them as "this folder" and "the one
# above" (even percent-encoded), so an entity or memory so named could never be opened.
DOT_SEGMENTS = frozenset({".", ".."})


def _linkable(record_id: str) -> bool:
    """An id a link and a form carry exactly: no space at either end (forms and path
    parameters trim them), no control character."""
    return record_id == record_id.strip() and not any(
        unicodedata.category(c) == "Cc" for c in record_id)


class _Taken:
    """The file's generated ids, compared in batches with every other user's partition."""

    def __init__(self, store: Store, user_id: str) -> None:
        self.store, self.user_id = store, user_id
        self.lines: dict[str, tuple[int, str, str]] = {}  # id: (line, its kind, field)
        self.ids: dict[str, list[str]] = {"entity": [], "memory": [], "merge_record": []}

    def add(self, number: int, kind: str, record_id: str, line: str | None = None,
            field: str = "id") -> None:
        """An id of `kind` on line `number` (a `line` record, at `field`)."""
        self.lines.setdefault(record_id, (number, line or kind, field))
        self.ids[kind].append(record_id)
        if sum(map(len, self.ids.values())) >= ID_BATCH:
            self.flush()

    def flush(self) -> None:
        rows = self.store.read("transfer/taken_ids", user_id=self.user_id, staging=STAGING,
                                entity_ids=self.ids["entity"], memory_ids=self.ids["memory"],
                                merge_record_ids=self.ids["merge_record"])
        if rows:
            number, kind, field = min(self.lines[r["id"]] for r in rows)
            raise InvalidExportError(
                f"line {number} ({kind}): {field}: another user's memory holds this id; ids are "
                "kept on import, so a file can go into one partition of a server only")
        self.lines.clear()
        self.ids = {kind: [] for kind in self.ids}


def check(path: Path, store: Store | None = None, user_id: str | None = None) -> Header:
    """Read the whole file once without writing; its header. Refuses records out of order, a
    memory whose end or a conversation whose mention is no exported entity, two self nodes,
    and (given the store and the user it goes to) an id another user's partition holds."""
    header, place, selves, ending = None, 0, 0, None
    counts = dict.fromkeys(COUNTED, 0)
    entity_ids: set[str] = set()
    taken = _Taken(store, user_id) if store is not None and user_id is not None else None
    for number, record in _parsed(path):
        rank = ORDER.index(record.type)
        if ending is not None:
            raise InvalidExportError(f"line {number} ({record.type}): after the end line; "
                                     "nothing follows it")
        if header is not None and rank == 0 or rank < place:
            raise InvalidExportError(f"line {number} ({record.type}): out of order; the format "
                                     f"keeps {', '.join(ORDER)} in that order")
        place = rank
        if isinstance(record, Header):
            header = record
            continue
        if isinstance(record, End):
            _check_end(number, record, counts, header)
            ending = record
            continue
        counts[record.type] += 1
        _check_fields_of_minor(number, record, header)
        if record.type != "conversation" and record.id in DOT_SEGMENTS:
            raise InvalidExportError(f"line {number} ({record.type}): id: {record.id!r} cannot "
                                     "be named in a link (a browser reads it as a folder)")
        if record.type != "conversation" and not _linkable(record.id):
            raise InvalidExportError(
                f"line {number} ({record.type}): id: {record.id!r} begins or ends with a space "
                "or holds a control character: no page could open it (Pegasus's own ids never "
                "do)")
        if isinstance(record, EntityRecord):
            if record.id in entity_ids:
                raise InvalidExportError(f"line {number} (entity): id: a second entity "
                                         f"{record.id!r}")
            entity_ids.add(record.id)
            selves += record.is_self
            if selves > 1:
                raise InvalidExportError(f"line {number} (entity): is_self: a second self node")
        elif isinstance(record, MemoryRecord):
            for end in (record.source_id, record.target_id):
                if end not in entity_ids:
                    raise InvalidExportError(f"line {number} (memory): source_id/target_id: "
                                             f"{end!r} is no entity of the file")
        elif isinstance(record, ConversationRecord):
            # A mention is a link to an entity: one the file does not hold could not be
            # written, and the import would not be exact (found by benchmarks.fuzz).
            for mention in record.mentions:
                if mention not in entity_ids:
                    raise InvalidExportError(f"line {number} (conversation): mentions: "
                                             f"{mention!r} is no entity of the file")
        if taken is not None and not isinstance(record, ConversationRecord):
            taken.add(number, record.type, record.id)
            if isinstance(record, MergeRecordRecord):
                # Undo writes these back: they must be no other partition's ids either.
                fields = record.record
                for name, part in (("absorbed", fields.absorbed), ("before", fields.before)):
                    if part is not None:
                        taken.add(number, "entity", part.id, record.type, f"record.{name}.id")
                for i, edge in enumerate(fields.between):
                    if isinstance(edge.props.get("id"), str):
                        taken.add(number, "memory", edge.props["id"], record.type,
                                  f"record.between[{i}].props.id")
    if header is None:
        raise InvalidExportError("line 1: the file is empty")
    if header.minor >= 1 and ending is None:
        raise InvalidExportError(
            f"the file ends without its end line (its header says format {VERSION}."
            f"{header.minor}, which ends with one): it was cut short, an export that failed or "
            "a copy that stopped; nothing was imported. Export it again")
    if taken is not None:
        taken.flush()
    return header


def _check_fields_of_minor(number: int, record: Any, header: Header | None) -> None:
    """A field a minor version added only in a file whose header says that minor or later (as
    the end line only in one of minor 1 or later): a file holds what its format has."""
    minor = header.minor if header is not None else 0
    for added, fields in ADDED.items():
        held = [f for f in fields.get(record.type, ()) if getattr(record, f) is not None]
        if held and minor < added:
            raise InvalidExportError(
                f"line {number} ({record.type}): {held[0]}: format {VERSION}.{minor} has no "
                f"such field, {VERSION}.{added} added it (the header's minor says which format "
                "the file is)")


def _check_end(number: int, end: End, counts: dict[str, int], header: Header | None) -> None:
    """The end line: only in a file whose header says minor 1 or later, and counting exactly
    the records before it."""
    if header is None or header.minor < 1:
        raise InvalidExportError(f"line {number} (end): format {VERSION}.0 has no end line "
                                 "(the header's minor says which format the file is)")
    for kind, field in COUNTED.items():
        if getattr(end, field) != counts[kind]:
            raise InvalidExportError(
                f"line {number} (end): {field}: the end line counts {getattr(end, field)}, the "
                f"file holds {counts[kind]}; the file was changed or cut, nothing was imported")


# --- the rows written: every field named, never a map from the file ----------------------


def _entity_row(record: EntityRecord) -> tuple[dict[str, Any], StoredEntity]:
    row = record.model_dump(exclude={"type", "properties"})
    row["properties"] = {f"p_{k}": v for k, v in record.properties.items()}
    row["kind_label"] = KIND_LABELS[record.kind]
    entity = StoredEntity(id=record.id, name=record.name, kind=record.kind,
                          aliases=list(record.aliases))
    return row, entity


def _memory_row(record: MemoryRecord) -> dict[str, Any]:
    row = record.model_dump(exclude={"type", "sightings"})
    row["sightings"] = [s.model_dump_json(exclude_none=True) for s in record.sightings]
    return row


def _conversation_row(record: ConversationRecord) -> dict[str, Any]:
    row = record.model_dump(exclude={"type", "turns"})
    row["turns"] = None if record.turns is None else [
        json.dumps(t.model_dump(), ensure_ascii=False) for t in record.turns]
    return row


def _merge_record_row(record: MergeRecordRecord, user_id: str) -> dict[str, Any]:
    # An undo writes the edges a merge by hand took off back as they are: they belong to the
    # user imported into, whatever user id the file's text carries.
    fields = record.record.model_copy(update={"between": [
        edge.model_copy(update={"props": {**edge.props, **{
            key: user_id for key in OWNER_PROPS if key == "user_id" or key in edge.props}}})
        for edge in record.record.between]})
    return {"id": record.id, **fields.model_dump()}


# --- staging, swap, sweep -----------------------------------------------------------------


def _alive(holder: str | None, idle_s: int | None, staging: str | None = None) -> bool:
    """Whether the import holding a staging partition may still be running."""
    host, _, pid = (holder or "").rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        if int(pid) == os.getpid():
            return staging in _WRITING
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
    return idle_s is not None and idle_s < LEASE_S


def sweep(store: Store, erase: Erase) -> int:
    """Remove the staging partitions of imports that died; how many."""
    dead = [r["staging_id"] for r in store.read("transfer/stagings")
            if not _alive(r["holder"], r["idle_s"], r["staging_id"])]
    for staging in dead:
        erase(staging)
    return len(dead)


class _Writer:
    """Writes checked records into a staging partition in batches."""

    def __init__(self, store: Store, embedder: Embedder, staging: str, now: datetime,
                 report: ImportReport) -> None:
        self.store, self.embedder, self.staging, self.now = store, embedder, staging, now
        self.report = report
        self.user_id = report.user_id
        self.labels: set[str] = set()
        self.self_id: str | None = None

    def flush(self, kind: str, batch: list[Any]) -> None:
        if not batch:
            return
        staging, embedder, now = self.staging, self.embedder, self.now
        if kind == "entity":
            rows, entities = zip(*(_entity_row(r) for r in batch), strict=True)

            def entities_and_keys(tx: ManagedTransaction) -> None:
                run(tx, "transfer/import_entities", user_id=staging, rows=list(rows))
                write_keys(tx, embedder, staging, now, list(entities), set())

            self.store.write(entities_and_keys)
            self.report.entities += len(batch)
        elif kind == "memory":
            vectors = embedder.embed([r.snippet for r in batch])
            rows = [{**_memory_row(r), "packed": pack_vector(v), "vector": v.tolist()}
                    for r, v in zip(batch, vectors, strict=True)]

            def memories(tx: ManagedTransaction) -> None:
                run(tx, "transfer/import_memories", user_id=staging, owner=self.user_id,
                    user_key=user_key(staging), rows=rows)
                sync_sightings(tx, embedder, staging, [
                    {"edge_id": r["id"], "source_id": r["source_id"],
                     "target_id": r["target_id"]} for r in rows])

            self.store.write(memories)
            self.report.memories += len(batch)
        elif kind == "conversation":
            self.store.write(lambda tx: run(tx, "transfer/import_conversations",
                                            user_id=staging, now=now,
                                            rows=[_conversation_row(r) for r in batch]))
            self.report.conversations += len(batch)
        else:
            self.store.write(lambda tx: run(tx, "transfer/import_merge_records",
                                            user_id=staging,
                                            rows=[_merge_record_row(r, self.user_id)
                                                  for r in batch]))
            self.report.merge_records += len(batch)
        self.store.write("transfer/heartbeat", staging_id=staging)

    def write(self, path: Path) -> None:
        pending: dict[str, list[Any]] = {kind: [] for kind in COUNTED}
        checker = Screen()
        for _, record in _parsed(path, checker):
            if isinstance(record, Header | End):
                continue
            if isinstance(record, EntityRecord) and record.is_self:
                self.self_id = record.id
            if isinstance(record, MemoryRecord) and record.superseded_at is None:
                self.labels.add(record.relation)
            if pending["entity"] and record.type != "entity":
                self.flush("entity", pending["entity"])
                pending["entity"] = []
            pending[record.type].append(record)
            if len(pending[record.type]) >= BATCH:
                self.flush(record.type, pending[record.type])
                pending[record.type] = []
        for kind, batch in pending.items():
            self.flush(kind, batch)
        self.report.secrets_removed = dict(checker.found)
        self.store.write(lambda tx: write_keys(tx, self.embedder, self.staging, self.now, [],
                                               self.labels))
        self.store.write("transfer/end_import", staging_id=self.staging, self_id=self.self_id)


def _refuse_held(user_id: str, holds: bool, erasing_since: Any) -> None:
    if erasing_since is not None:
        raise ErasureInProgressError(f"the memory of {user_id!r} is being forgotten; nothing was "
                                     "imported. Finish that erasure first")
    if holds:
        raise PartitionNotEmptyError(
            f"{user_id} already has memories: importing would mix two memories; forget them "
            "first or import with replace (--replace), which forgets them")


def _swap(store: Store, user_id: str, staging: str, now: datetime, replace: bool) -> None:
    """The staging partition becomes the user's, in one transaction (with replace, the user's
    memory goes in the same one), unless another user's partition took one of its ids while it
    was written: swaps take one lock, so of two imports of the same ids, the second sees the
    first's."""

    def swap(tx: ManagedTransaction) -> None:
        run(tx, "transfer/lock_swaps")
        state = run(tx, "transfer/lock_target", user_id=user_id, now=now)[0]
        _refuse_held(user_id, state["holds"] and not replace, state["erasing_since"])
        taken = run(tx, "transfer/taken_by_others", user_id=user_id, staging_id=staging,
                    staging=STAGING)
        if taken:
            raise InvalidExportError(
                f"{taken[0]['kind']} id: another user's memory took this id while the file "
                "was imported (two imports of one file at once); nothing was imported. Ids are "
                "kept on import, so a file can go into one partition of a server only")
        if replace:
            run(tx, "transfer/drop_target", user_id=user_id)
        run(tx, "transfer/adopt_staging", user_id=user_id, staging_id=staging,
            user_key=user_key(user_id))
        run(tx, "transfer/adopt_partition", user_id=user_id, staging_id=staging, now=now)

    store.write(swap)


def import_file(store: Store, embedder: Embedder, erase: Erase, user_id: str, path: Path,
                now: datetime, replace: bool = False) -> ImportReport:
    """Import `path` as `user_id`'s memory (any user id; ids another user holds are refused):
    all of it or, on any failure, nothing."""
    sweep(store, erase)
    header = check(path, store, user_id)
    if not replace:
        state = store.read("transfer/target_state", user_id=user_id)[0]
        _refuse_held(user_id, state["holds"], state["erasing_since"])
    report = ImportReport(user_id=user_id, source_user_id=header.user_id, replaced=replace)
    staging = staging_id()
    _WRITING.add(staging)
    try:
        store.write("transfer/begin_import", staging_id=staging, user_id=user_id,
                      holder=HOLDER, now=now)
        _Writer(store, embedder, staging, now, report).write(path)
        _swap(store, user_id, staging, now, replace)
    except BaseException as exc:
        # The first failure is the one to report; the next import's sweep removes what an
        # erasure that failed too has left.
        with contextlib.suppress(Exception):
            erase(staging)
        if isinstance(exc, Neo4jError):
            raise InvalidExportError(f"the import failed while writing ({exc.code}); nothing "
                                     "was imported") from exc
        raise
    finally:
        _WRITING.discard(staging)
    return report
