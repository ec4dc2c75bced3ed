"""A long randomized fuzz of commit, recall and every HTTP route (run on demand, not in CI).

    python -m benchmarks.fuzz --minutes 10

The suite runs its hypothesis tests derandomized, so it can never go red by chance; this is
where new inputs are searched for. Four targets take turns until the time is up:
- `Memory.commit` with batches built from arbitrary JSON values in the contract's shape;
- `Memory.recall` with arbitrary text, and with long texts (up to 2,000,000 characters of
  random words and pieces, #35): each must recall, within LONG_RECALL_S, and its block must
  parse back (`recall/render.py`);
- `Memory.import_memory` with an export file whose lines are mutated (a field set to any JSON
  value or dropped, a line repeated, dropped or moved, its bytes cut or spoiled): either a
  clean refusal that wrote nothing (the target and every staging partition empty) or an
  import whose export is exactly the file;
- every route of `pegasus serve` (memory API and proxy), from its OpenAPI schema, by
  schemathesis, with an LLM configured (a fake that always finishes) and a stub upstream
  model on loopback behind the proxy.
A finding is any exception that is not a PegasusError (Python), an import that is neither
a clean refusal nor exact, any 5xx or schema mismatch
(HTTP), or a traceback logged by the server (its background work included). Each is printed
with its input; pin it in the suite, then fix it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import random
import tempfile
import time
import traceback
import uuid
from pathlib import Path

import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from schemathesis.specs.openapi.checks import positive_data_acceptance

from benchmarks._server import machine, memory
from benchmarks.report import write_section
from pegasus.errors import PegasusError
from pegasus.recall.render import parse_block
from pegasus.serve.app import create_app
from pegasus.transfer.format import RECORD, REGENERATED
from tests.serve.servers import StubUpstream, serving
from tests.serve.test_http_api import _ndjson  # noqa: F401 - registers the import body's serializer

KEY = "key-fuzz-000001"
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12)
NAME = st.one_of(st.sampled_from(["User", "me", "Sarah", "Acme", "", " ", "Ω\x00"]),
                 st.text(max_size=300))
ENTITY = st.fixed_dictionaries({"name": NAME}, optional={
    "kind": st.text(max_size=45), "aliases": st.lists(NAME, max_size=3),
    "properties": st.dictionaries(st.text(max_size=70), JSON, max_size=5),
    "confidence": st.floats() | st.integers(), "is_user": st.booleans(),
    "same_as_hint": st.none() | NAME})
RELATION = st.fixed_dictionaries({"source": NAME, "relation": st.text(max_size=110),
                                  "target": NAME}, optional={
    "snippet": st.none() | st.text(max_size=2100), "evidence": st.none() | st.text(max_size=50),
    "confidence": st.floats(), "stability": st.text(max_size=45),
    "cardinality": st.text(max_size=45), "status": st.text(max_size=45),
    "expires_at": st.none() | st.datetimes().map(lambda d: d.isoformat()) | st.text(max_size=30)})
BATCH = st.fixed_dictionaries({}, optional={
    "entities": st.lists(ENTITY, max_size=5) | JSON,
    "relations": st.lists(RELATION, max_size=6) | JSON,
    "conversation": st.fixed_dictionaries({}, optional={
        "summary": st.text(max_size=50), "importance": st.floats(),
        "tags": st.lists(st.text(max_size=70), max_size=22)}) | JSON})


class Findings(logging.Handler):
    """Collects findings; as a logging handler, every logged traceback is one."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.items: list[str] = []
        self.tried: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.add(f"logged by {record.name}", record.getMessage())

    def count(self, target: str) -> None:
        self.tried[target] = self.tried.get(target, 0) + 1

    def add(self, target: str, detail: str) -> None:
        self.items.append(f"{target}: {detail}")
        print(f"FINDING {target}: {detail}", flush=True)


LONG_RECALL_S = 5.0  # a 2 M-character message costs what its ends cost (design §7.1)


PIECES = st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=20)


def long_text(pieces: list[str], size: int, seed: int) -> str:
    """A long message of `size` characters: the pieces, joined in a random order."""
    rng, words, length = random.Random(seed), [], 0
    while length <= size:  # each word and its separator
        words.append(rng.choice(pieces))
        length += len(words[-1]) + 1
    return " ".join(words)[:size]


def recall_finding(mem, user: str, text: str) -> str | None:
    """What is wrong with recalling on `text`: None for a block that parses back into its
    lines, or a clean refusal (a PegasusError)."""
    try:
        parse_block(mem.recall(user, text).render())
    except PegasusError:
        return None
    except Exception:  # noqa: BLE001 - every other exception is a finding
        return f"{len(text)} characters, {text[:200]!r}…\n{traceback.format_exc(limit=3)}"
    return None


def fuzz_python(mem, findings: Findings, examples: int) -> None:
    user = f"fuzz-{uuid.uuid4().hex[:8]}"

    @given(batch=BATCH)
    @hypothesis_settings(max_examples=examples, deadline=None, database=None,
                         suppress_health_check=list(HealthCheck))
    def commit(batch):
        findings.count("Memory.commit")
        try:
            mem.commit(user, f"c-{uuid.uuid4().hex[:8]}", batch)
        except PegasusError:
            pass
        except Exception:  # noqa: BLE001 - every other exception is a finding
            findings.add("Memory.commit", f"{batch!r:.500}\n{traceback.format_exc(limit=3)}")

    @given(text=st.text(max_size=400))
    @hypothesis_settings(max_examples=examples, deadline=None, database=None,
                         suppress_health_check=list(HealthCheck))
    def recall(text):
        findings.count("Memory.recall")
        try:
            mem.recall(user, text)
        except PegasusError:
            pass
        except Exception:  # noqa: BLE001
            findings.add("Memory.recall", f"{text!r:.300}\n{traceback.format_exc(limit=3)}")

    @given(pieces=PIECES, size=st.integers(1_000, 2_000_000), seed=st.integers(0, 2**32 - 1))
    @hypothesis_settings(max_examples=max(1, examples // 10), deadline=None, database=None,
                         suppress_health_check=list(HealthCheck))
    def recall_long(pieces, size, seed):
        findings.count("Memory.recall (long)")
        text = long_text(pieces, size, seed)
        started = time.perf_counter()
        if (finding := recall_finding(mem, user, text)) is not None:
            findings.add("Memory.recall (long)", finding)
            return
        took = time.perf_counter() - started
        if took > LONG_RECALL_S:
            findings.add("Memory.recall (long)", f"{len(text)} characters took {took:.1f} s")

    commit()
    recall()
    recall_long()


def export_file(mem) -> list[bytes]:
    """The lines of a small memory's export (merges, supersession, turns), its partition then
    forgotten, so the ids are free for the mutated imports."""
    user = f"fuzz-src-{uuid.uuid4().hex[:8]}"
    mem.record_turns(user, "c1", [{"role": "user", "content": "my boss Sarah K"}])
    mem.commit(user, "c1", {
        "entities": [{"name": "Sarah", "kind": "PERSON", "aliases": ["Sarah K"],
                      "properties": {"role": "boss", "since": 2021}}],
        "relations": [{"source": "User", "relation": "HAS_BOSS", "target": "Sarah",
                       "snippet": "my boss Sarah K", "cardinality": "one_to_one"},
                      {"source": "User", "relation": "WORKS_AT", "target": "Acme",
                       "snippet": "I work at Acme", "cardinality": "one_to_one"}]})
    mem.commit(user, "c2", {
        "entities": [{"name": "S. K.", "kind": "PERSON", "same_as_hint": "Sarah"}],
        "relations": [{"source": "User", "relation": "WORKS_AT", "target": "Globex",
                       "snippet": "now at Globex", "cardinality": "one_to_one"}]})
    lines = [line.encode() for line in mem.export(user, with_turns=True)]
    mem.forget_everything(user)
    return lines


def comparable(records: list[dict]) -> list[str]:
    """Records as an export writes them, with the regenerated fields left out, sorted."""
    out = []
    for record in records:
        dumped = json.loads(RECORD.validate_python(record).model_dump_json(exclude_none=True))
        drop = REGENERATED.get(dumped["type"], [])
        out.append(json.dumps({k: v for k, v in dumped.items() if k not in drop},
                              sort_keys=True))
    return sorted(out)


def mutated(source: list[bytes]) -> st.SearchStrategy[list[bytes]]:
    """The export's lines with one to three mutations."""

    def field(draw, lines: list[bytes]) -> list[bytes]:
        index = draw(st.integers(0, len(lines) - 1))
        try:
            record = json.loads(lines[index])
        except ValueError:  # an earlier mutation spoiled the line's bytes
            return lines
        if not isinstance(record, dict):
            return lines
        if isinstance(record.get("record"), dict) and draw(st.booleans()):
            target = record["record"]
        else:
            target = record
        key = draw(st.sampled_from([*target, "user_id", "extra"]))
        if draw(st.booleans()):
            target.pop(key, None)
        else:
            target[key] = draw(JSON | st.sampled_from(
                ["\ud800", "x" * 3000, {"$datetime": "soon"}, [1, "a"], 2**64]))
        lines[index] = json.dumps(record).encode() + b"\n"
        return lines

    def lines_(draw, lines: list[bytes]) -> list[bytes]:
        i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["repeat", "drop", "move"]))
        if action == "repeat":
            lines.insert(j, lines[i])
        elif action == "drop":
            del lines[i]
        else:
            lines.insert(j, lines.pop(i))
        return lines or [b"\n"]

    def bytes_(draw, lines: list[bytes]) -> list[bytes]:
        index = draw(st.integers(0, len(lines) - 1))
        line = lines[index]
        cut = draw(st.integers(0, len(line)))
        lines[index] = line[:cut] + draw(st.binary(max_size=4)) + line[cut + 1:]
        return lines

    @st.composite
    def build(draw) -> list[bytes]:
        lines = list(source)
        for _ in range(draw(st.integers(1, 3))):
            lines = draw(st.sampled_from([field, lines_, bytes_]))(draw, lines)
        return lines

    return build()


def leftovers(mem, user: str) -> bool:
    """Whether a refused import left anything: a staging partition, or the target written."""
    return bool(mem.store.read("transfer/stagings")
                or mem.store.read("transfer/target_state", user_id=user)[0]["holds"])


def import_finding(mem, path: Path, lines: list[bytes], replace: bool) -> str | None:
    """What is wrong with importing these lines into a new partition: None for a one-line
    refusal that wrote nothing, or an import whose export is exactly the file (then
    forgotten again, so its ids are free for the next file)."""
    user = f"fuzz-imp-{uuid.uuid4().hex[:8]}"
    path.write_bytes(b"".join(lines))
    try:
        mem.import_memory(user, path, replace=replace)
    except PegasusError as exc:
        if "\n" in str(exc) or leftovers(mem, user):
            return f"unclean refusal: {str(exc)[:200]}"
        return None
    except Exception:  # noqa: BLE001
        return f"{lines!r:.500}\n{traceback.format_exc(limit=3)}"
    wanted = comparable([json.loads(line) for line in lines if line.strip()])
    got = comparable([json.loads(line) for line in mem.export(user, with_turns=True)])
    mem.forget_everything(user)
    if got != wanted:
        return f"not exact: {sorted(set(wanted) ^ set(got))!r:.500}"
    return None


def fuzz_import(mem, findings: Findings, examples: int, source: list[bytes]) -> None:
    path = Path(tempfile.mkdtemp(prefix="pegasus-fuzz-")) / "import.jsonl"

    @given(lines=mutated(source), replace=st.booleans())
    @hypothesis_settings(max_examples=examples, deadline=None, database=None,
                         suppress_health_check=list(HealthCheck))
    def import_(lines, replace):
        findings.count("Memory.import_memory")
        if (finding := import_finding(mem, path, lines, replace)) is not None:
            findings.add("Memory.import_memory", finding)

    import_()


def fuzz_operation(operation, findings: Findings, examples: int) -> None:
    label = operation.label

    @given(case=operation.as_strategy())
    @hypothesis_settings(max_examples=examples, deadline=None, database=None,
                         suppress_health_check=list(HealthCheck))
    def run(case):
        findings.count(label)
        case.call_and_validate(headers={"Authorization": f"Bearer {KEY}"},
                               excluded_checks=[positive_data_acceptance])

    try:
        run()
    except BaseException as exc:  # schemathesis reports its checks as an exception group
        if isinstance(exc, KeyboardInterrupt):
            raise
        findings.add(label, f"{str(exc)[:800]}")


def fuzz_http(app, findings: Findings, examples: int) -> None:
    # The schema's request starts the app's lifespan again (a health probe, the backlog): on a
    # loaded machine that passed schemathesis's default 10 s.
    schema = schemathesis.openapi.from_asgi("/openapi.json", app, timeout=120)
    for result in schema.get_all_operations():
        fuzz_operation(result.ok(), findings, examples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--examples", type=int, default=50, help="per target per round")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    finish = AIMessage(content="", tool_calls=[{"name": "finish", "args": {}, "id": "1",
                                                "type": "tool_call"}])
    findings, rounds = Findings(), 0
    logging.getLogger("pegasus").addHandler(findings)
    llm = GenericFakeChatModel(messages=itertools.repeat(finish))
    upstream = StubUpstream()
    upstream.CHUNK_DELAY_S = 0.0
    with (serving(upstream.app) as upstream_url,
          memory(api_keys={KEY: "fuzz-http-user"}, llm=llm,
                 upstream_base_url=f"{upstream_url}/v1",
                 anthropic_upstream_base_url=upstream_url) as mem):
        app = create_app(mem)
        source = export_file(mem)
        with TestClient(app):
            # The fuzzing's own time (a throwaway server can take minutes to start on a busy
            # machine), and at least one round.
            began = time.monotonic()
            while rounds == 0 or time.monotonic() - began < args.minutes * 60:
                rounds += 1
                fuzz_python(mem, findings, args.examples)
                fuzz_import(mem, findings, args.examples, source)
                fuzz_http(app, findings, args.examples)
                print(f"round {rounds}: {sum(findings.tried.values())} inputs, "
                      f"{len(findings.items)} findings, {time.monotonic() - began:.0f} s",
                      flush=True)
    minutes = (time.monotonic() - began) / 60
    lines = [f"{rounds} rounds in {minutes:.1f} minutes, {sum(findings.tried.values())} inputs; "
             f"findings: {len(findings.items)}.", "",
             "| target | inputs |", "|---|---|"]
    lines += [f"| {t} | {n} |" for t, n in sorted(findings.tried.items())]
    if findings.items:
        lines += ["", "Findings (first 20):", ""]
        lines += [f"- `{f.splitlines()[0][:200]}`" for f in findings.items[:20]]
    print("\n".join(lines))
    if not args.no_write:
        write_section("Fuzz", f"python -m benchmarks.fuzz --minutes {args.minutes:g}", machine(),
                      lines)


if __name__ == "__main__":
    main()
