"""Tool-calling extraction with a staged batch (design §8).

The model records each entity and relation through a tool call as soon as it considers it;
every valid call is appended to a staging file at once. A cut-off run resumes from the staged
part (shown to the model) instead of starting over. Nothing touches the graph until the staged
batch goes through clean → merge → commit.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, ValidationError
from tenacity import (
    Retrying,
    before_sleep_log,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from pegasus.errors import ExtractionError
from pegasus.llm import prompt
from pegasus.models.batch import ConversationIn, EntityIn, ExtractionBatch, ForgetIn, RelationIn
from pegasus.recall.render import visible

log = logging.getLogger(__name__)


class record_entity(EntityIn):  # noqa: N801 - the tool's name as the model sees it
    """Record an entity (person, org, place, event, thing, topic, preference, other)."""


class record_relation(RelationIn):  # noqa: N801
    """Record a relation between two entities, with the user's verbatim words as snippet."""


class record_conversation(ConversationIn):  # noqa: N801
    """Record the conversation: a short summary, importance 0–1, a few tags."""


class record_forget(ForgetIn):  # noqa: N801
    """Record the user asking to forget something they said before ("forget what I told you
    about Tom": action forget) or saying it was wrong ("that's not true, I never had a sister":
    action retract). `about` is the entity; give `relation` and `target` to aim at one memory."""


class finish(BaseModel):  # noqa: N801
    """Call once when everything worth remembering is recorded."""


TOOLS = {t.__name__: t for t in (record_entity, record_relation, record_conversation,
                                 record_forget, finish)}
MAX_ROUNDS = 40
# What an in-session extraction is shown of the conversation's turns already consolidated: the
# last this many characters (enough to resolve a pronoun; the cost stays near a close's).
EARLIER_CHARS = 1200


def is_transient(exc: BaseException) -> bool:
    """Errors worth retrying: timeouts, dropped connections, rate limits, 5xx."""
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    return type(exc).__name__ in {"APITimeoutError", "APIConnectionError", "RateLimitError",
                                  "InternalServerError", "ServiceUnavailableError"}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class Staging:
    """The staged tool calls of one (user, conversation), one JSON line each, fsynced. Each
    user's files share one folder, so forgetting a user removes them all (design §10)."""

    def __init__(self, root: Path, user_id: str, conversation_id: str) -> None:
        self.path = self.user_dir(root, user_id) / f"{_digest(conversation_id)}.jsonl"

    @staticmethod
    def user_dir(root: Path, user_id: str) -> Path:
        return root / "staging" / _digest(user_id)

    def load(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        items = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut off by a crash
        return items

    def append(self, item: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(item, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def batch_from(items: list[dict[str, Any]]) -> ExtractionBatch:
    """The staged calls as one batch (cleaning combines repeated entities)."""
    batch = ExtractionBatch()
    for item in items:
        args = item["args"]
        if item["tool"] == "record_entity":
            batch.entities.append(EntityIn.model_validate(args))
        elif item["tool"] == "record_relation":
            batch.relations.append(RelationIn.model_validate(args))
        elif item["tool"] == "record_conversation":
            batch.conversation = ConversationIn.model_validate(args)
        elif item["tool"] == "record_forget":
            batch.forget.append(ForgetIn.model_validate(args))
    return batch


def transcript_block(turns: list[dict[str, str]], with_assistant: bool) -> str:
    """The turns as the extraction model reads them. A character that draws as nothing (tag
    characters, zero-width runs, bidi overrides) is shown as a mark, as on the memory page:
    text the person could not see ("ASCII smuggling") never reaches the model as an
    instruction. Snippets are checked against the turns as said (clean.py), marks or not."""
    return "\n".join(
        f"{t['role'].upper()}: {visible(t['content'])}" for t in turns
        if t["role"] == "user" or (with_assistant and t["role"] == "assistant")
    )


class Extractor:
    """Drives one chat model through the recording tools."""

    def __init__(self, model: BaseChatModel, max_retries: int = 4) -> None:
        try:
            self.bound = model.bind_tools(list(TOOLS.values()))
        except NotImplementedError:  # scripted test models emit tool calls without binding
            self.bound = model
        self.max_retries = max_retries

    def _invoke(self, messages: list[BaseMessage]) -> AIMessage:
        for attempt in Retrying(
            retry=retry_if_exception(is_transient),
            wait=wait_exponential(multiplier=0.5, max=30),
            stop=stop_after_attempt(self.max_retries),
            before_sleep=before_sleep_log(log, logging.WARNING),
            reraise=True,
        ):
            with attempt:
                return self.bound.invoke(messages)
        raise AssertionError("unreachable")

    def run(self, turns: list[dict[str, str]], staging: Staging, context: str,
            with_assistant: bool = False, earlier: list[dict[str, str]] | None = None,
            ) -> tuple[ExtractionBatch, list[str]]:
        """Extract into `staging`; the staged batch and notes on refused calls. `earlier`: the
        turns of the same conversation already consolidated (an in-session extraction reads
        the new turns only; the last of these are shown so that "she" or "there" resolve)."""
        staged = staging.load()
        notes: list[str] = []
        human = "TRANSCRIPT\n" + transcript_block(turns, with_assistant)
        if earlier:
            before = transcript_block(earlier, with_assistant)[-EARLIER_CHARS:]
            human = ("EARLIER IN THIS CONVERSATION (already remembered: record only what the "
                     "TRANSCRIPT below adds)\n" + before + "\n\n" + human)
        human += "\n\nKNOWN MEMORY\n" + (context or "(nothing relevant yet)")
        if staged:
            human += ("\n\nALREADY RECORDED (an earlier run was cut off; do not repeat these, "
                      "continue from here)\n" + "\n".join(json.dumps(i) for i in staged))
        messages: list[BaseMessage] = [SystemMessage(prompt("extract_v2")), HumanMessage(human)]
        finished = False
        for _ in range(MAX_ROUNDS):
            reply = self._invoke(messages)
            if not isinstance(reply, AIMessage):
                raise ExtractionError("the extractor returned something other than a message")
            messages.append(reply)
            calls = list(reply.tool_calls) + [
                {"name": None, "args": {}, "id": c.get("id")}
                for c in getattr(reply, "invalid_tool_calls", [])
            ]
            if not calls:
                break
            done = False
            for call in calls:
                tool = TOOLS.get(call["name"] or "")
                if tool is None:
                    notes.append(f"unknown or unreadable tool call {call['name']!r} ignored")
                    answer = "error: unknown tool, or arguments that are not JSON"
                elif tool is finish:
                    done, answer = True, "finished"
                else:
                    try:
                        args = tool.model_validate(call["args"]).model_dump(mode="json")
                    except ValidationError as exc:
                        message = exc.errors()[0]["msg"]
                        notes.append(f"{call['name']} refused: {message}")
                        answer = f"error: {message}; fix the arguments and call again"
                    else:
                        staging.append({"tool": call["name"], "args": args})
                        answer = "recorded"
                messages.append(ToolMessage(answer, tool_call_id=call.get("id") or "call"))
            if done:
                finished = True
                break
        else:
            notes.append(f"stopped after {MAX_ROUNDS} rounds")
        staged = staging.load()
        if not staged and not finished:
            # An empty memory is valid only when the model says so by calling finish.
            raise ExtractionError(
                "the extractor recorded nothing and did not call finish"
                + (": " + "; ".join(notes[:5]) if notes else ""))
        if not finished:
            notes.append("the extractor stopped without calling finish; kept what it recorded")
        return batch_from(staged), notes
