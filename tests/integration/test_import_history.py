"""`pegasus import-history`: ChatGPT's and Claude's exports (written by tests/history_exports.py
to their documented formats, several hundred conversations) recorded with their own dates,
the backlog extracted oldest first, a re-import adding nothing, bad files refused naming the
line or the conversation with nothing written, one user's import never touching another's."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from pegasus import Memory
from pegasus.cli import app
from pegasus.errors import InvalidHistoryError
from pegasus.transfer import history
from tests.history_exports import FACTS, SiblingExtractor, chatgpt_export, claude_export


@pytest.fixture
def cli_env(neo4j_env) -> dict[str, str | None]:
    """The CLI's environment: the suite's Neo4j, and no LLM (imports wait for one)."""
    return {**neo4j_env, **{k: None for k in neo4j_env if k.startswith("PEGASUS_LLM_")}}


def export_file(tmp_path, data, name="conversations.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_chatgpt_export_is_read_along_each_conversations_main_branch():
    data = chatgpt_export(300)
    source, found, shortened = history.conversations(data, 200_000, 2_000_000)
    assert (source, len(found), shortened) == ("chatgpt", 300, 0)
    said = [t.content for c in found for t in c.turns]
    # the edited-away branch, hidden context, system and tool messages are not the conversation
    assert not [s for s in said if "ABANDONED" in s or "custom instructions" in s
                or "Sunny" in s or "search(" in s]
    assert sum(FACTS[7] in s for s in said) == 1
    # each conversation alternates from the person's turn, in date order, by its own dates
    assert all(c.turns[0].role == "user" for c in found)
    assert [c.ended_at for c in found] == sorted(c.ended_at for c in found)
    assert found[0].started_at.isoformat() == "2023-03-01T09:14:34+00:00"
    assert all(a.at <= b.at for c in found for a, b in zip(c.turns, c.turns[1:], strict=False))
    # an image part is dropped, the text beside it kept
    with_image = [c for c in data if any(
        isinstance(p, dict) for n in c["mapping"].values() if n["message"]
        for p in n["message"]["content"]["parts"])]
    assert with_image
    ids = {history.conversation_id("chatgpt", c["id"]) for c in with_image}
    assert all(c.turns[0].content.startswith("About ") for c in found if c.id in ids)


def test_a_claude_export_is_read_from_its_chat_messages():
    source, found, _ = history.conversations(claude_export(250), 200_000, 2_000_000)
    assert (source, len(found)) == ("claude", 250)
    assert all(t.role in ("user", "assistant") and t.content.strip() for c in found
               for t in c.turns)
    assert sum(FACTS[123] in t.content for c in found for t in c.turns) == 1
    assert not [t for c in found for t in c.turns if "attached notes" in t.content]


def test_a_long_turn_is_kept_to_its_first_characters_and_a_long_conversation_in_parts():
    data = claude_export(3)
    data[0]["chat_messages"][0]["content"][0]["text"] = "x" * 5000
    _, found, shortened = history.conversations(data, 1000, 1500)
    assert shortened == 1
    first = next(c for c in found if c.id == history.conversation_id("claude",
                                                                     data[0]["uuid"]))
    assert len(first.turns[0].content) == 1000
    parts = [c for c in found if c.id.startswith(first.id)]
    assert [p.id for p in parts] == [first.id] + [f"{first.id}.{n}"
                                                 for n in range(2, len(parts) + 1)]
    assert sum(len(p.turns) for p in parts) == len([
        m for m in data[0]["chat_messages"] if m["text"]])


@pytest.mark.parametrize("broken, says", [
    ('[{"mapping": {}, "id": "a"},\n  {"mapping": ', "line 2, column 15: not JSON (Expecting value)"),
    ('{"conversations": []}', "it must be a JSON list of conversations"),
    ('[{"title": "x"}]', "no conversation in it has ChatGPT's `mapping` or Claude's"),
])
def test_a_file_that_is_no_export_is_refused_by_line(broken, says):
    with pytest.raises(InvalidHistoryError, match=re.escape(says)):
        history.source_of(history.parse(broken.encode()))


@pytest.mark.parametrize("source, break_it, says", [
    ("chatgpt", lambda c: c.update(mapping=[]), "`mapping` is not an object"),
    ("chatgpt", lambda c: c.update(current_node="nowhere"),
     "`current_node` or a `parent` names no node of `mapping` ('nowhere')"),
    ("chatgpt", lambda c: next(n for n in c["mapping"].values() if n["parent"] is None)
     .update(parent=c["current_node"]), "its `parent` links go round in a circle"),
    ("chatgpt", lambda c: [n["message"].update(create_time="soon") for n in
                           c["mapping"].values() if n["message"]],
     "a message's `create_time` is not a date ('soon')"),
    # dated in the future (outside attack: year 9999 was recorded, quoted, never swept)
    ("chatgpt", lambda c: [n["message"].update(create_time=253402214400) for n in
                           c["mapping"].values() if n["message"]],
     "a message's `create_time` lies in the future (9999-12-31"),
    ("claude", lambda c: c["chat_messages"][0].update(created_at="9999-01-01T00:00:00Z"),
     "`created_at` lies in the future (9999-01-01"),
    ("claude", lambda c: c["chat_messages"][1].update(sender="robot"),
     "message 2: `sender` is 'robot', not human or assistant"),
    ("claude", lambda c: c.pop("uuid"), "has no `uuid`"),
])
def test_a_conversation_that_breaks_the_format_is_named_and_nothing_is_written(
        settings, cli_env, user_id, tmp_path, source, break_it, says):
    data = chatgpt_export(20) if source == "chatgpt" else claude_export(20)
    break_it(data[12])
    path = export_file(tmp_path, data)
    result = CliRunner().invoke(app, ["import-history", str(path), "--user", user_id],
                                env=cli_env)
    assert result.exit_code == 2
    assert "conversation 13 (" in result.output and says in result.output, result.output
    assert "nothing was imported" in result.output
    with Memory(settings) as memory:
        assert memory.store.read("read/awaiting_extraction", user_id=user_id) == []
        first = history.conversations(data[:12], 200_000, 2_000_000)[1][0]
        assert not memory.conversation_state(user_id, first.id)["exists"]


# The two imports of several hundred conversations are slow (about a minute each on 2 shared
# cores: a transaction per turn, 1,834 turns); `./run test --fast` keeps the 40-conversation
# import of two users, the CLI's zip and the refused files, and the whole suite runs these.
@pytest.mark.slow
def test_with_no_llm_the_turns_are_kept_awaiting_extraction_in_date_order_once(
        settings, user_id, tmp_path):
    data = chatgpt_export(300)
    _, found, _ = history.conversations(data, 200_000, 2_000_000)
    said: list[history.HistoryReport] = []
    with Memory(settings) as memory:
        assert not memory.has_llm
        dry = history.import_history(memory, user_id, data, dry_run=True, before=said.append)
        assert said == [dry] and dry.recorded == 0
        assert dry.estimate == history.Estimate(
            conversations=300, turns=1834, calls=600, input_tokens=636979,
            output_tokens=120000)
        assert memory.conversations.awaiting_extraction(user_id) == []

        steps: list[str] = []

        class Bar:
            def __init__(self, total: int, what: str) -> None:
                steps.append(f"{what} {total}")

            def update(self, n: int = 1) -> None:
                steps.append("+")

            def close(self) -> None:
                steps.append("closed")

        report = history.import_history(memory, user_id, data, progress=Bar)
        assert (report.recorded, report.already, report.turns) == (300, 0, 1834)
        assert steps == ["recording 300", *["+"] * 300, "closed"]
        assert report.extraction.startswith("no LLM to extract with (")
        backlog = [r["id"] for r in memory.conversations.awaiting_extraction(user_id)]
        assert backlog == [c.id for c in found]  # oldest first
        first = memory.conversation_state(user_id, found[0].id)
        assert (first["status"], first["awaiting_extraction"]) == ("closed", True)
        assert [json.loads(t) for t in first["turns"]] == [
            {"role": t.role, "content": t.content} for t in found[0].turns]

        again = history.import_history(memory, user_id, data)
        assert (again.recorded, again.already, again.turns) == (0, 300, 0)
        assert [r["id"] for r in memory.conversations.awaiting_extraction(user_id)] == backlog
        assert memory.conversation_state(user_id, found[0].id)["turns"] == first["turns"]


@pytest.mark.slow
def test_with_an_llm_the_backlog_is_extracted_oldest_first(settings, user_id, tmp_path):
    data = claude_export(250)
    extractor = SiblingExtractor()
    path = export_file(tmp_path, data)
    with Memory(settings, llm=extractor) as memory:
        report = history.import_history(memory, user_id, history.load(path))
        assert (report.recorded, report.extraction) == (
            250, "extracted 250 of 250 conversation(s); what is left stays awaiting "
                 "extraction (`pegasus extract --pending`)")
        assert extractor.calls == 250  # the estimate's ROUNDS is the upper bound: 2 each
        assert memory.conversations.awaiting_extraction(user_id) == []
        found = {(e.source, e.relation, e.target): e for e in memory.edges(user_id)}
        assert set(found) == {("User", "HAS_SISTER", "Maya"), ("User", "HAS_BROTHER", "Tomas")}
        maya = found[("User", "HAS_SISTER", "Maya")]
        assert len(maya.conversations) == 2  # 7 and 123: the same sister, twice
        # remembered when it was said (March-April 2023), not when the import extracted it
        assert maya.created_at.startswith("2023-03-") and maya.said_at.startswith("2023-0")
        assert maya.touched_at.startswith("2023-0"), maya.touched_at
        block = memory.recall(user_id, "How is Maya doing?").render()
        assert "Bergen" in block or "Oslo marathon" in block


def test_one_users_import_never_touches_another_users(settings, user_id, tmp_path):
    """The same export for two users: the second is not told its conversations were imported
    (ids are per user), and each user's backlog holds only their own."""
    data = chatgpt_export(40)
    other = f"{user_id}-other"
    with Memory(settings) as memory:
        assert history.import_history(memory, user_id, data).recorded == 40
        theirs = history.import_history(memory, other, data)
        assert (theirs.recorded, theirs.already) == (40, 0)
        mine = {r["id"] for r in memory.conversations.awaiting_extraction(user_id)}
        assert mine == {r["id"] for r in memory.conversations.awaiting_extraction(other)}
        assert {r["user_id"] for r in memory.conversations.awaiting_extraction(other)} == {other}
        memory.forget_everything(other)
        assert {r["id"] for r in memory.conversations.awaiting_extraction(user_id)} == mine


def test_the_cli_shows_the_estimate_and_reads_the_exports_zip(cli_env, user_id, tmp_path):
    import zipfile

    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("conversations.json", json.dumps(claude_export(30)))
        out.writestr("users.json", "[]")
    runner = CliRunner()
    env = cli_env
    dry = runner.invoke(app, ["import-history", str(archive), "--user", user_id, "--dry-run"],
                        env=env)
    assert dry.exit_code == 0, dry.output
    assert "30 conversations from claude (" in dry.output
    assert "model calls" in dry.output and "input and ~12,000 output tokens" in dry.output
    assert json.loads(dry.stdout[dry.stdout.index("{"):])["recorded"] == 0
    done = runner.invoke(app, ["import-history", str(archive), "--user", user_id], env=env)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout[done.stdout.index("{"):])["recorded"] == 30
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as out:
        out.writestr("users.json", "[]")
    refused = runner.invoke(app, ["import-history", str(empty), "--user", user_id], env=env)
    assert refused.exit_code == 2 and "the zip holds no conversations.json" in refused.output
