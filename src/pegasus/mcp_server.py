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

from pegasus.clock import parse_instant
from pegasus.errors import ConfigError, PegasusError
from pegasus.memory import Memory


def _tool_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A PegasusError reaches the model with its message (the SDK hides other exceptions)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except PegasusError as exc:
            raise ToolError(str(exc)) from exc
    return wrapper


def build_server(memory: Memory, user_id: str) -> MCPServer:
    """The MCP tools for `user_id`'s memory."""
    server = MCPServer("pegasus", instructions=(
        f"Long-term memory of user {user_id!r}. `recall` before answering when earlier "
        "conversations may matter; `remember` or `commit` what a finished conversation said."))

    def at(value: str | None):
        try:
            return parse_instant(value) if value else None
        except ValueError as exc:
            raise PegasusError(f"at: not an ISO-8601 instant ({exc})") from exc

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

    return server
