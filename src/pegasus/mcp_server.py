"""An MCP server (stdio) over one user's memory, for clients that talk MCP rather than a proxy.

The user is fixed when the server starts (`pegasus mcp --user U`): no tool takes a user id, so
the model on the other end cannot reach another user's partition.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from pegasus.clock import client_instant, parse_instant
from pegasus.errors import ConfigError, InvalidInputError, PegasusError, http_status
from pegasus.memory import Memory


def _tool_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A PegasusError reaches the model with its message, led by its kind (the API's
    `error.type`, pegasus.errors.http_status), so the model can tell a request to fix from
    an outage to wait out; the SDK hides other exceptions."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except PegasusError as exc:
            raise ToolError(f"{http_status(exc)[1]}: {exc}") from exc
    return wrapper


def build_server(memory: Memory, user_id: str) -> MCPServer:
    """The MCP tools for `user_id`'s memory."""
    # WARNING: the SDK logs each failed tool call at INFO with its message, which quotes the
    # person's words (an entity's name, an id), to the stderr the client keeps (docs/privacy.md).
    server = MCPServer("pegasus", log_level="WARNING", instructions=(
        f"Long-term memory of user {user_id!r}. `recall` before answering when earlier "
        "conversations may matter; `remember` or `commit` what a finished conversation said."))

    def at(value: str | None):
        """A tool's `at_time`, bounded as the HTTP API bounds its `at` (max_clock_skew_s)."""
        try:
            instant = parse_instant(value) if value else None
        except ValueError as exc:
            raise InvalidInputError(f"at: not an ISO-8601 instant ({exc})") from exc
        return client_instant(instant, memory.settings.max_clock_skew_s)

    @server.tool()
    @_tool_errors
    def recall(text: str, conversation_id: str | None = None, at_time: str | None = None
               ) -> dict[str, Any]:
        """What this message recalls: [MEMORY] relation lines, [CONTEXT] verbatim snippets and
        the nodes that fired. With a conversation id the read is logged for reinforcement."""
        return memory.recall(user_id, text, conversation_id, at(at_time)).as_json()

    @server.tool()
    @_tool_errors
    def commit(conversation_id: str, batch: dict[str, Any],
               transcript: list[dict[str, str]] | None = None, at_time: str | None = None
               ) -> dict[str, Any]:
        """Commit an extraction batch ({entities, relations, conversation}) for a conversation,
        without any LLM; returns the commit report."""
        report = memory.commit(user_id, conversation_id, batch, at(at_time), transcript)
        return report.model_dump(mode="json", exclude_defaults=True)

    @server.tool()
    @_tool_errors
    def remember(conversation_id: str, turns: list[dict[str, str]], at_time: str | None = None
                 ) -> dict[str, Any]:
        """Extract a transcript ([{role, content}]) with the configured LLM and commit it."""
        if not memory.has_llm:
            raise ConfigError("no LLM configured (PEGASUS_LLM_MODEL): use `commit` instead")
        report = memory.remember(user_id, conversation_id, turns, at(at_time))
        return report.model_dump(mode="json", exclude_defaults=True)

    @server.tool()
    @_tool_errors
    def close_conversation(conversation_id: str, at_time: str | None = None) -> dict[str, Any]:
        """Close a conversation: reinforce once each edge its recalls used."""
        count = memory.close_conversation(user_id, conversation_id, at(at_time))
        return {"conversation_id": conversation_id, "reinforced": count}

    @server.tool()
    @_tool_errors
    def inspect_entity(name: str) -> list[dict[str, Any]]:
        """An entity by name or alias: kind, aliases, properties and its strongest current
        edges with the user's words."""
        return [e.model_dump(mode="json") for e in memory.entities(user_id, name)]

    @server.tool()
    @_tool_errors
    def flagged_merges(include_pending: bool = False) -> list[dict[str, Any]]:
        """Merges the reviewer was unsure of (0.70–0.90), to inspect; optionally also the
        candidate pairs waiting for review."""
        return [r.model_dump(mode="json", exclude={"created_at"})
                for r in memory.merges(user_id, include_pending)]

    @server.tool()
    @_tool_errors
    def list_memories(about: str | None = None, state: str = "current", limit: int = 50,
                      offset: int = 0) -> list[dict[str, Any]]:
        """The user's memories (relation, state, strength, dates, their words, conversations),
        optionally about one entity; state is current, superseded, dormant, expired,
        retracted or all. Use it when the user asks what you remember."""
        return [m.model_dump(mode="json") for m in
                memory.memories(user_id, about, state, limit, offset)]

    @server.tool()
    @_tool_errors
    def memory_history(memory_id: str) -> dict[str, Any]:
        """One memory with its history: every sighting, reinforcements, strength now, and
        what replaced it."""
        return memory.memory(user_id, memory_id).model_dump(mode="json")

    @server.tool()
    @_tool_errors
    def correct(memory_id: str | None = None, retract: bool = False, undo: bool = False,
                entity: str | None = None, new_name: str | None = None,
                add_aliases: list[str] | None = None, remove_aliases: list[str] | None = None,
                merge_into: str | None = None, undo_merge: str | None = None,
                other_end: str | None = None, words: str | None = None,
                since: str | None = None, until: str | None = None, no_end: bool = False,
                undo_correction: bool = False) -> dict[str, Any]:
        """Correct the memory when the user says it is wrong: change what a memory says, by
        id, in place (`other_end`: the right entity; `words`: the right words; `since`,
        `until`: ISO dates it began and ends; `no_end`; `undo_correction` with the
        correction's id takes it back), retract a memory by id (`retract`; `undo` takes it
        back), rename an `entity` (`new_name`), edit its aliases, merge it into another entity
        that is the same (`merge_into`), or undo a merge by its record id (`undo_merge`, from a
        merge's answer or `flagged_merges`)."""
        if undo_merge is not None:
            return memory.undo_merge(user_id, undo_merge).model_dump(mode="json")
        changes = (other_end, words, since, until)
        if memory_id is not None and (undo_correction or no_end or
                                      any(c is not None for c in changes)):
            return memory.correct_memory(
                user_id, memory_id, other_end, words, at(since), at(until), no_end,
                via="mcp",
                undo=undo_correction).model_dump(mode="json")
        if memory_id is not None and (retract or undo):
            return memory.retract(user_id, memory_id, undo=undo).model_dump(mode="json")
        if entity is None:
            raise InvalidInputError("say what to correct: memory_id with other_end, words, since, "
                                    "until or retract, or an entity")
        if merge_into is not None:
            return memory.merge_entities(user_id, merge_into, entity).model_dump(mode="json")
        return memory.correct_entity(user_id, entity, new_name, add_aliases,
                                     remove_aliases).model_dump(mode="json")

    @server.tool()
    @_tool_errors
    def forget(memory_id: str | None = None, entity: str | None = None,
               conversation_id: str | None = None, everything: bool = False,
               confirm_everything: bool = False) -> dict[str, Any]:
        """Erase what the user asks you to forget (not decay: it is gone from the database):
        one memory by id, one entity with all its memories, one conversation, or everything
        (only with confirm_everything, when the user has clearly asked for it)."""
        chosen = [x for x in (memory_id, entity, conversation_id) if x is not None]
        if len(chosen) + int(everything) != 1:
            raise InvalidInputError("name exactly one of memory_id, entity, conversation_id, "
                                    "everything")
        if memory_id is not None:
            report = memory.forget_memory(user_id, memory_id)
        elif entity is not None:
            report = memory.forget_entity(user_id, entity)
        elif conversation_id is not None:
            report = memory.forget_conversation(user_id, conversation_id)
        elif not confirm_everything:
            raise InvalidInputError("forgetting everything needs confirm_everything=true")
        else:
            report = memory.forget_everything(user_id)
        return report.model_dump(mode="json")

    return server
