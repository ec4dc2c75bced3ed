"""Proxied conversations: which one a request belongs to, its recorded turns, and closing it.

Closing extracts the recorded transcript (when an LLM is configured) and applies the read
reinforcement, on one background worker, so no reply ever waits for it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from pegasus.errors import PegasusError
from pegasus.memory import Memory

log = logging.getLogger("pegasus.serve")
MAX_CONTINUATIONS = 100


def derived_id(user_id: str, messages: list[dict[str, Any]]) -> str:
    """A conversation id from the history a client resends each turn: its opening messages.

    Clients resend the whole history, so the system prompt and the first user message are
    stable for the life of a conversation. Two conversations that open with the very same
    words share an id: clients that can should send the X-Pegasus-Conversation header.
    """
    system = next((m.get("content") for m in messages if m.get("role") == "system"), None)
    first = next((m.get("content") for m in messages if m.get("role") == "user"), None)
    digest = hashlib.sha256(json.dumps([user_id, system, first], default=str).encode())
    return "auto-" + digest.hexdigest()[:20]


class Conversations:
    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._closer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pegasus-close")
        self._closing: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def shutdown(self) -> None:
        self._closer.shutdown(wait=True)

    def wait(self, timeout_s: float = 120.0) -> None:
        """Return once every close scheduled so far has run (one worker: they run in order)."""
        self._closer.submit(lambda: None).result(timeout=timeout_s)

    def _state(self, user_id: str, conversation_id: str) -> dict[str, Any]:
        return self.memory.conversation_state(user_id, conversation_id)

    def resolve(self, user_id: str, base: str) -> str:
        """`base` while it is open (or new); after it closed, `base.2`, `base.3` … ."""
        for n in range(1, MAX_CONTINUATIONS + 1):
            candidate = base if n == 1 else f"{base}.{n}"
            with self._lock:
                closing = (user_id, candidate) in self._closing
            state = self._state(user_id, candidate)
            if not closing and (not state["exists"] or state["status"] == "open"):
                return candidate
        raise PegasusError(f"conversation {base!r} was closed {MAX_CONTINUATIONS} times; "
                           "start a new one")

    def record(self, user_id: str, conversation_id: str, turns: list[dict[str, str]],
               now: datetime) -> int:
        """Append turns to the conversation's transcript; the number of turns it now holds."""
        if not turns:
            return 0
        return self.memory.record_turns(
            user_id, conversation_id, [json.dumps(t, ensure_ascii=False) for t in turns], now)

    def turns(self, user_id: str, conversation_id: str) -> list[dict[str, str]]:
        return [json.loads(t) for t in self._state(user_id, conversation_id)["turns"]]

    def close(self, user_id: str, conversation_id: str, at: datetime | None = None
              ) -> Future | None:
        """Schedule the close; None when it is already scheduled."""
        with self._lock:
            if (user_id, conversation_id) in self._closing:
                return None
            self._closing.add((user_id, conversation_id))
        return self._closer.submit(self._close, user_id, conversation_id, at)

    def _close(self, user_id: str, conversation_id: str, at: datetime | None) -> dict[str, Any]:
        try:
            result: dict[str, Any] = {"conversation_id": conversation_id, "remembered": None}
            turns = self.turns(user_id, conversation_id)
            if self.memory.has_llm and any(t["role"] == "user" for t in turns):
                report = self.memory.remember(user_id, conversation_id, turns, at=at)
                result["remembered"] = report.model_dump(mode="json", exclude_defaults=True)
            result["reinforced"] = self.memory.close_conversation(user_id, conversation_id, at=at)
            return result
        except PegasusError as exc:
            # The transcript stays recorded and the conversation open: the next sweep retries.
            log.warning("closing %s/%s failed: %s", user_id, conversation_id, exc)
            raise
        except Exception:
            log.exception("closing %s/%s failed", user_id, conversation_id)
            raise
        finally:
            with self._lock:
                self._closing.discard((user_id, conversation_id))

    def sweep(self, users: set[str], now: datetime, idle_s: float) -> list[Future]:
        """Close every proxied conversation of these users unused for `idle_s` seconds."""
        before = now - timedelta(seconds=idle_s)
        futures = []
        for user_id in sorted(users):
            for conversation_id in self.memory.idle_conversations(user_id, before):
                future = self.close(user_id, conversation_id)
                if future is not None:
                    futures.append(future)
        return futures
