"""A person's past conversations brought in from ChatGPT's and Claude's data exports.

Both exports hold a `conversations.json` (also read straight from the export's zip):

- ChatGPT: a list of conversations, each `{id | conversation_id, title, create_time, mapping,
  current_node}`; `mapping` is a tree of nodes `{id, message, parent, children}`, a message
  `{author: {role}, content: {content_type, parts}, create_time, recipient, metadata}`. An
  edited or regenerated message leaves siblings; the conversation as the person last saw it is
  the path from `current_node` back through the parents. Only the person's and the
  assistant's text is kept (system messages, tool calls and their output, hidden context are
  not what was said).
- Claude: a list of conversations, each `{uuid, name, created_at, chat_messages}`, a message
  `{uuid, sender: human | assistant, text, content: [{type: "text", text}], created_at}`.

The file is a trust boundary, checked whole here before anything is written: a file that is
not one of these is refused naming the line (JSON) or the conversation and field.

Each conversation becomes one recorded conversation with its own dates (its id derived from
the export's, so a second import of the same file finds it and adds nothing), closed at its
last message and left awaiting extraction: the backlog `pegasus extract --pending` (or the
import itself, when an LLM is configured) extracts in the order they closed, which is the
order they happened, and resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from pegasus.clock import now
from pegasus.errors import InvalidHistoryError
from pegasus.transfer.format import IMPORT_CLOCK_SKEW

Source = Literal["chatgpt", "claude"]
NAMES = {"chatgpt": "ChatGPT", "claude": "Claude"}
# What one extraction sends, for the estimate: the prompt (extract_v2, ~2.7k characters) and
# the known-memory block around the person's turns, each round; ~4 characters a token.
PROMPT_CHARS = 4_000
ROUNDS = 2  # the tool calls, then `finish`
CHARS_PER_TOKEN = 4
OUTPUT_TOKENS = 400


@dataclass(frozen=True)
class Turn:
    id: str
    role: Literal["user", "assistant"]
    content: str
    at: datetime


@dataclass
class HistoryConversation:
    """One conversation of an export, as it will be recorded."""

    id: str  # the recorded conversation's id, derived from the export's
    title: str
    turns: list[Turn] = field(default_factory=list)

    @property
    def started_at(self) -> datetime:
        return self.turns[0].at

    @property
    def ended_at(self) -> datetime:
        return self.turns[-1].at


class Estimate(BaseModel):
    """What extracting an import costs, roughly, before it starts."""

    conversations: int
    turns: int
    calls: int  # model calls
    input_tokens: int
    output_tokens: int


class HistoryReport(BaseModel):
    """What an import of a chat history did."""

    source: Source
    conversations: int  # in the file, with something the person said
    recorded: int = 0  # new ones, now awaiting extraction
    already: int = 0  # imported before: left as they were
    turns: int = 0
    shortened_turns: int = 0  # kept to their first max_turn_chars characters
    estimate: Estimate | None = None
    extraction: str = ""  # what happens next, in a sentence


# --- reading the export --------------------------------------------------------------------

def load(path: Path) -> Any:
    """The JSON of `conversations.json`, or of the one inside an export's zip."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidHistoryError(f"{path}: cannot be read ({exc})") from exc
    return read(raw)


def read(raw: bytes) -> Any:
    """An export's bytes (conversations.json, or the export's zip) as its JSON."""
    if raw[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(raw)) as archive:
                names = [n for n in archive.namelist()
                         if n.rsplit("/", 1)[-1] == "conversations.json"]
                if not names:
                    raise InvalidHistoryError("the zip holds no conversations.json; nothing "
                                              "was imported")
                raw = archive.read(names[0])
        except (zipfile.BadZipFile, OSError) as exc:
            raise InvalidHistoryError(f"not a zip that can be read ({exc}); nothing was "
                                      "imported") from exc
    return parse(raw)


def parse(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise InvalidHistoryError(f"not UTF-8 text (byte {exc.start}); nothing was "
                                  "imported") from exc
    except json.JSONDecodeError as exc:
        raise InvalidHistoryError(f"line {exc.lineno}, column {exc.colno}: not JSON "
                                  f"({exc.msg}); nothing was imported") from exc


def source_of(data: Any) -> Source:
    """Which export this is, from its first conversation's fields."""
    if not isinstance(data, list):
        raise InvalidHistoryError("not a conversations.json of ChatGPT or Claude: it must be "
                                  "a JSON list of conversations; nothing was imported")
    for item in data:
        if isinstance(item, dict) and "mapping" in item:
            return "chatgpt"
        if isinstance(item, dict) and "chat_messages" in item:
            return "claude"
    raise InvalidHistoryError("no conversation in it has ChatGPT's `mapping` or Claude's "
                              "`chat_messages`: not a conversations.json of ChatGPT or "
                              "Claude; nothing was imported")


def conversations(data: Any, max_turn_chars: int, max_transcript_chars: int
                  ) -> tuple[Source, list[HistoryConversation], int]:
    """(source, the conversations with something the person said in date order, how many
    turns were kept to their first max_turn_chars characters). A conversation longer than a
    transcript may be goes on in parts (`<id>.2`, …). Refuses the whole file at the first
    conversation that breaks the format."""
    source = source_of(data)
    read = _chatgpt if source == "chatgpt" else _claude
    found: list[HistoryConversation] = []
    shortened = 0
    for index, item in enumerate(data, start=1):
        try:
            if not isinstance(item, dict):
                raise ValueError("is not a JSON object")
            conversation = read(item)
        except ValueError as exc:
            title = item.get("title") or item.get("name") if isinstance(item, dict) else None
            named = f" ({json.dumps(str(title)[:60], ensure_ascii=False)})" if title else ""
            raise InvalidHistoryError(f"conversation {index}{named}: {exc}; nothing was "
                                      "imported") from exc
        if not any(t.role == "user" for t in conversation.turns):
            continue
        for n, turn in enumerate(conversation.turns):
            if len(turn.content) > max_turn_chars:
                conversation.turns[n] = Turn(turn.id, turn.role, turn.content[:max_turn_chars],
                                             turn.at)
                shortened += 1
        found.extend(_parts(conversation, max_transcript_chars))
    ids = [c.id for c in found]
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise InvalidHistoryError(f"two conversations have the same id (recorded as {twice}); "
                                  "nothing was imported")
    found.sort(key=lambda c: (c.ended_at, c.id))
    return source, found, shortened


def _parts(conversation: HistoryConversation, limit: int) -> list[HistoryConversation]:
    """The conversation in parts that each fit a recorded transcript (counted as recorded:
    each turn as JSON text), the second one `<id>.2`, as a conversation that goes on after a
    close is named."""
    parts = [HistoryConversation(conversation.id, conversation.title)]
    size = 0
    for turn in conversation.turns:
        length = len(json.dumps({"role": turn.role, "content": turn.content},
                                ensure_ascii=False))
        if parts[-1].turns and size + length > limit:
            parts.append(HistoryConversation(f"{conversation.id}.{len(parts) + 1}",
                                             conversation.title))
            size = 0
        parts[-1].turns.append(turn)
        size += length
    return parts


def conversation_id(source: Source, export_id: str) -> str:
    """The recorded conversation's id: the same for the same export id, whatever it holds."""
    return f"{source}-{hashlib.sha256(export_id.encode()).hexdigest()[:24]}"


def _instant(value: Any, what: str) -> datetime | None:
    """An export's date (epoch seconds, or ISO-8601) as an aware datetime; None for none. A
    date past this server's clock (beyond a day's skew) is refused: a conversation dated 9999
    would be quoted with that date and never swept."""
    at = _parsed(value, what)
    if at is not None and at > now() + IMPORT_CLOCK_SKEW:
        raise ValueError(f"{what} lies in the future ({at.isoformat()})")
    return at


def _parsed(value: Any, what: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"{what} is not a date")
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise ValueError(f"{what} is not a date ({value!r})") from exc
    if isinstance(value, str):
        try:
            at = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValueError(f"{what} is not a date ({value[:40]!r})") from exc
        return at if at.tzinfo else at.replace(tzinfo=UTC)
    raise ValueError(f"{what} is not a date")


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} is not text")
    return value


def _chatgpt(item: dict[str, Any]) -> HistoryConversation:
    export_id = item.get("conversation_id") or item.get("id")
    if not isinstance(export_id, str) or not export_id:
        raise ValueError("has no `id` (nor `conversation_id`)")
    mapping = item.get("mapping")
    if not isinstance(mapping, dict):
        raise ValueError("`mapping` is not an object")
    started = _instant(item.get("create_time"), "`create_time`")
    node_id = item.get("current_node")
    if node_id is None and mapping:  # older exports: the last leaf
        leaves = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("children")]
        node_id = leaves[-1] if leaves else None
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    while node_id is not None:
        if not isinstance(node_id, str) or node_id not in mapping:
            raise ValueError(f"`current_node` or a `parent` names no node of `mapping` "
                             f"({str(node_id)[:40]!r})")
        if node_id in seen:
            raise ValueError("its `parent` links go round in a circle")
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            raise ValueError(f"node {node_id[:40]!r} is not an object")
        path.append(node)
        node_id = node.get("parent")
    conversation = HistoryConversation(conversation_id("chatgpt", export_id),
                                       str(item.get("title") or ""))
    at = started
    for node in reversed(path):
        message = node.get("message")
        if message is None:
            continue
        if not isinstance(message, dict):
            raise ValueError(f"node {str(node.get('id'))[:40]!r}: `message` is not an object")
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        if role not in ("user", "assistant"):
            if author is None or not isinstance(author, dict):
                raise ValueError(f"node {str(node.get('id'))[:40]!r}: `message.author` is "
                                 "not an object")
            continue  # system, tool: not what the person or the assistant said
        metadata = message.get("metadata") or {}
        if (message.get("recipient", "all") != "all"
                or (isinstance(metadata, dict)
                    and metadata.get("is_visually_hidden_from_conversation"))):
            continue  # a call to a tool, or context the person never saw
        content = message.get("content")
        if not isinstance(content, dict):
            raise ValueError(f"node {str(node.get('id'))[:40]!r}: `message.content` is not "
                             "an object")
        if content.get("content_type") not in ("text", "multimodal_text"):
            continue  # code, browsing, reasoning: not the conversation's words
        parts = content.get("parts")
        if not isinstance(parts, list):
            raise ValueError(f"node {str(node.get('id'))[:40]!r}: `content.parts` is not a "
                             "list")
        text = "\n".join(p for p in parts if isinstance(p, str)).strip()
        at = _instant(message.get("create_time"), "a message's `create_time`") or at
        if not text:
            continue
        if at is None:
            raise ValueError("neither it nor its messages have a `create_time`")
        conversation.turns.append(Turn(f"chatgpt:{len(conversation.turns)}", role, text, at))
    return conversation


def _claude(item: dict[str, Any]) -> HistoryConversation:
    export_id = item.get("uuid")
    if not isinstance(export_id, str) or not export_id:
        raise ValueError("has no `uuid`")
    messages = item.get("chat_messages")
    if not isinstance(messages, list):
        raise ValueError("`chat_messages` is not a list")
    at = _instant(item.get("created_at"), "`created_at`")
    conversation = HistoryConversation(conversation_id("claude", export_id),
                                       str(item.get("name") or ""))
    for number, message in enumerate(messages, start=1):
        if not isinstance(message, dict):
            raise ValueError(f"message {number} is not an object")
        sender = message.get("sender")
        if sender not in ("human", "assistant"):
            raise ValueError(f"message {number}: `sender` is {str(sender)[:20]!r}, not human "
                             "or assistant")
        content = message.get("content")
        if isinstance(content, list) and content:
            text = "\n".join(_text(c.get("text"), f"message {number}: a text part")
                             for c in content if isinstance(c, dict) and c.get("type") == "text")
        else:
            text = _text(message.get("text", ""), f"message {number}: `text`")
        at = _instant(message.get("created_at"), f"message {number}: `created_at`") or at
        if not text.strip():
            continue
        if at is None:
            raise ValueError("neither it nor its messages have a `created_at`")
        role: Literal["user", "assistant"] = "user" if sender == "human" else "assistant"
        conversation.turns.append(Turn(f"claude:{len(conversation.turns)}", role,
                                       text.strip(), at))
    return conversation


# --- the estimate ------------------------------------------------------------------------

def estimate(found: Iterable[HistoryConversation]) -> Estimate:
    """Calls and tokens the extraction of these conversations takes, roughly: ROUNDS calls
    each, every call sending the prompt and the person's turns (the extractor reads theirs)."""
    found = list(found)
    said = sum(len("USER: ") + len(t.content) + 1 for c in found for t in c.turns
               if t.role == "user")
    calls = ROUNDS * len(found)
    return Estimate(conversations=len(found), turns=sum(len(c.turns) for c in found),
                    calls=calls,
                    input_tokens=ROUNDS * (said + PROMPT_CHARS * len(found)) // CHARS_PER_TOKEN,
                    output_tokens=OUTPUT_TOKENS * len(found))


# --- recording -------------------------------------------------------------------------

class Recording(Protocol):
    """What recording a history needs of the memory (the facade's public methods)."""

    def conversation_state(self, user_id: str, conversation_id: str) -> dict[str, Any]: ...

    def record_turns(self, user_id: str, conversation_id: str, turns: list[dict[str, Any]],
                     at: datetime | None = None, source: str = "proxy",
                     model: str | None = None) -> int: ...

    def await_extraction(self, user_id: str, conversation_id: str, why: str,
                         at: datetime | None = None) -> None: ...

    def close_conversation(self, user_id: str, conversation_id: str,
                           at: datetime | None = None) -> int: ...

    def extract_pending(self, user_id: str | None = None, at: datetime | None = None
                        ) -> list[dict[str, Any]]: ...

    @property
    def settings(self) -> Any: ...

    @property
    def extraction(self) -> Any: ...


class Progress(Protocol):
    """A progress bar (tqdm's): advanced by one, closed at the end."""

    def update(self, n: int = 1) -> Any: ...

    def close(self) -> None: ...


def import_history(memory: Recording, user_id: str, data: Any, dry_run: bool = False,
                   extract: bool = True,
                   progress: Callable[[int, str], Progress] | None = None,
                   before: Callable[[HistoryReport], None] = lambda report: None
                   ) -> HistoryReport:
    """Check the whole export, estimate, record what is new, then (`extract`, with an LLM)
    extract the backlog in date order. `before` hears the report with the estimate before
    anything is written; `progress(total, what)` makes a bar for each long step. Every call
    into the memory an import makes is in here and in `record`."""
    settings = memory.settings
    source, found, shortened = conversations(data, settings.max_turn_chars,
                                             settings.max_transcript_chars)
    report = HistoryReport(source=source, conversations=len(found), shortened_turns=shortened,
                           estimate=estimate(found))
    before(report)
    if dry_run:
        report.extraction = "a dry run: nothing was recorded"
        return report
    bar = progress(len(found), "recording") if progress else None
    try:
        recorded = record(memory, user_id, source, found, report,
                          bar.update if bar else lambda: None)
    finally:
        if bar:
            bar.close()
    # the estimate of what is left to extract: the new conversations only
    report.estimate = estimate(c for c in found if c.id in set(recorded))
    if not memory.extraction.on:
        report.extraction = (f"no LLM to extract with ({memory.extraction.why}): the "
                             f"{report.recorded} conversation(s) are kept awaiting extraction; "
                             "`pegasus extract --pending` extracts them once one is set")
    elif not extract:
        report.extraction = (f"the {report.recorded} conversation(s) are extracted in the "
                             "background, oldest first")
    else:
        done = _extract(memory, user_id, recorded, progress)
        report.extraction = (f"extracted {done} of {report.recorded} conversation(s); what is "
                             "left stays awaiting extraction (`pegasus extract --pending`)")
    return report


def _extract(memory: Recording, user_id: str, recorded: list[str],
             progress: Callable[[int, str], Progress] | None) -> int:
    """The backlog extracted (extract_pending, oldest first), the bar following the imported
    conversations as they leave it; how many of them were extracted."""
    results: list[dict[str, Any]] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            results.extend(memory.extract_pending(user_id))
        except BaseException as exc:  # raised again below, in the caller's thread
            failed.append(exc)

    worker = threading.Thread(target=work, daemon=True)
    bar = progress(len(recorded), "extracting") if progress and recorded else None
    worker.start()
    shown = 0
    try:
        while worker.is_alive():
            worker.join(timeout=1.0)
            while shown < len(recorded) and not memory.conversation_state(
                    user_id, recorded[shown]).get("awaiting_extraction"):
                shown += 1
                if bar:
                    bar.update()
    finally:
        if bar:
            bar.close()
    if failed:
        raise failed[0]
    mine = set(recorded)
    return sum(r["outcome"] == "extracted" for r in results if r["conversation_id"] in mine)


def record(memory: Recording, user_id: str, source: Source,
           found: list[HistoryConversation], report: HistoryReport,
           step: Callable[[], None] = lambda: None) -> list[str]:
    """Record each conversation not imported before, turn by turn at its own date, then
    close it at its last message, awaiting extraction (the backlog, in date order). The ids of
    the conversations recorded now; `step` is called after each conversation."""
    why = f"imported from {NAMES[source]}'s export"
    recorded = []
    for conversation in found:
        state = memory.conversation_state(user_id, conversation.id)
        if state.get("exists") and state.get("status") == "closed":
            report.already += 1
            step()
            continue
        for turn in conversation.turns:  # a turn recorded before (an import cut off) is not
            memory.record_turns(user_id, conversation.id, [
                {"id": turn.id, "role": turn.role, "content": turn.content}],
                at=turn.at, source="import")
        memory.await_extraction(user_id, conversation.id, why, at=conversation.ended_at)
        memory.close_conversation(user_id, conversation.id, at=conversation.ended_at)
        report.recorded += 1
        report.turns += len(conversation.turns)
        recorded.append(conversation.id)
        step()
    return recorded
