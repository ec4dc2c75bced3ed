"""`pegasus-hook EVENT`: one memory for Claude Code and Codex, through their hooks.

Both CLIs run a command on hook events with the same JSON on stdin (`session_id`,
`hook_event_name`, the event's fields) and read the same answer on stdout, so one program
serves both:

- `UserPromptSubmit`: the prompt is recorded as the user's turn (POST /v1/memory/turns), then
  recalled on (POST /v1/memory/recall); when something fires, the block is printed as
  `hookSpecificOutput.additionalContext`, which the CLI adds to what the model sees. Nothing
  is printed when nothing fires. A session's first prompt also learns whether the server can
  extract memories; when it cannot, the person is told once (`systemMessage`, and through the
  model's reply, which is all a headless CLI shows) what to set on the server.
- `Stop`: `last_assistant_message` is recorded as the assistant's turn.
- `SessionEnd`: the conversation is closed (POST /v1/conversations/{id}/close): the server
  extracts it in the background and retries when that fails.

Gemini CLI (`BeforeAgent`, `AfterAgent` with `prompt_response`, `SessionEnd`), Qwen Code (Claude
Code's names and shapes) and GitHub Copilot CLI (`userPromptTransformed`, answered with
`modifiedTransformedPrompt`; `agentStop`, whose reply is read from its transcript, waiting a
moment for Copilot to write it; `sessionEnd`, which sends that reply too when agentStop could
not, once)
are the same three moments under other names: `canonical` maps them.

The server's URL and the key come from PEGASUS_URL / PEGASUS_API_KEY, else from the client file
`pegasus connect` writes ($XDG_CONFIG_HOME/pegasus/client.json, readable by its owner only).

The conversation id is the CLI's `session_id` (after a close, the server continues it as
`<id>.2`, and the spool remembers which). The hook talks to `pegasus serve` over HTTP with the
user's key rather than opening the graph itself: the server keeps the embedding model loaded
and the Neo4j connections open, so a hook costs a Python start (this module imports only the
standard library) and two small requests, where loading the model would cost seconds on every
prompt; and one server holds the keys, the tenant rule and the close worker for every client.

Nothing is lost when the server is down: what could not be sent waits in a spool file and is
sent, in order, by the next hook that reaches the server; the prompt goes on with one warning
line per outage (`systemMessage`, which the CLI shows the person). Every item carries an id
made when it is spooled, so a resend after a lost answer is recorded once. An item the server
refuses for good (a 4xx answer about the item itself: not 401/403, which are about the key, nor
408/429, which say "later") is set aside in the spool's `refused` list with one warning, and
the items after it go on. The hook always exits 0: it never blocks a prompt.

Configuration (environment): PEGASUS_URL (default http://127.0.0.1:8080), PEGASUS_API_KEY,
PEGASUS_HOOK_SPOOL (default $XDG_STATE_HOME/pegasus/hook-spool.json), PEGASUS_HOOK_TIMEOUT_S
(per request, default 5; a session end's close waits 2 s at most: Codex gives that hook 3 s).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pegasus.preamble import MEMORY_PREAMBLE, memory_note  # noqa: F401 - the hooks' wording

try:
    import fcntl
except ImportError:  # Windows: hooks of one session run one after another anyway
    fcntl = None  # type: ignore[assignment]

EVENTS = ("UserPromptSubmit", "Stop", "SessionEnd", "SessionStart")
# Other CLIs' names for the same moments (the hook is named by event on its command line):
# Gemini CLI's BeforeAgent/AfterAgent; Copilot CLI's camelCase events, where the prompt can be
# extended only after its transformation (`userPromptTransformed`: the output of
# `userPromptSubmitted` command hooks is dropped) and a turn's end names only its transcript.
SAME_AS = {"BeforeAgent": "UserPromptSubmit", "AfterAgent": "Stop",
           "userPromptTransformed": "UserPromptSubmit", "agentStop": "Stop",
           "sessionEnd": "SessionEnd", "sessionStart": "SessionStart"}
# How the person hears of a notice when the CLI shows no hook message (headless): the model
# says it, once, in its reply.
NOTICE_FOR_MODEL = ("Notice from the user's memory tool (Pegasus), for the user: {}. Tell the "
                    "user this in one short sentence at the start of your reply, once.")
KEPT_SESSIONS = 1000  # continuation ids remembered, newest last
KEPT_REFUSED = 100  # items set aside, newest last, for the person to look at
TRANSCRIPT_WAIT_S = 3.0  # how long agentStop waits for the reply to reach the transcript
KEPT_SENT = 200  # ids of the turns sent last: a turn two hooks both hold is sent once
# A session id that may name a folder (Copilot CLI's are UUIDs).
SESSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
# 4xx answers that do not mean "this item is wrong": the key (401, 403), "try later" (408, 429).
NOT_ABOUT_THE_ITEM = {401, 403, 408, 429}
# A spool file is never opened through a symbolic link someone planted where it goes.
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def client_path() -> Path:
    """Where `pegasus connect` keeps the server's URL and the key for every connected CLI."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "pegasus" / "client.json"


def client_settings() -> dict[str, str]:
    """`url` and `key` from the client file (the environment wins over it); {} without one."""
    try:
        data = json.loads(client_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if k in ("url", "key") and isinstance(v, str)} \
        if isinstance(data, dict) else {}


def spool_path() -> Path:
    configured = os.environ.get("PEGASUS_HOOK_SPOOL")
    if configured:
        return Path(configured)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "pegasus" / "hook-spool.json"


class Spool:
    """What waits for the server, and each session's conversation id on it: a JSON file,
    locked against the other hooks while one holds it, saved after every change (a CLI kills
    a hook that overruns its timeout: what was saved stays)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError):
            data = {}
        self.pending: list[dict[str, Any]] = data.get("pending", [])
        self.conversations: dict[str, str] = data.get("conversations", {})
        self.down: bool = data.get("down", False)
        self.refused: list[dict[str, Any]] = data.get("refused", [])
        self.sent: list[str] = [i for i in data.get("sent", []) if isinstance(i, str)]

    def save(self) -> None:
        for old in list(self.conversations)[:-KEPT_SESSIONS]:
            del self.conversations[old]
        del self.refused[:-KEPT_REFUSED]
        del self.sent[:-KEPT_SENT]
        temporary = self.path.with_name(self.path.name + ".tmp")
        # The spool holds the user's prompts: readable by its owner only (docs/privacy.md).
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | NOFOLLOW, 0o600),
                  "w", encoding="utf-8") as out:
            out.write(json.dumps({"pending": self.pending, "conversations": self.conversations,
                                  "down": self.down, "refused": self.refused,
                                  "sent": self.sent}))
        os.chmod(temporary, 0o600)  # a leftover .tmp of an older version kept its mode
        os.replace(temporary, self.path)


def private_folder(folder: Path) -> None:
    """The spool's folder, created 0700, or narrowed to 0700 when it exists wider (an older
    version, a umask, a hand-made folder) and is this user's own. A shared sticky folder such
    as /tmp is left as it is: the spool's files in it are still 0600, opened without following
    a planted link."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    owner = getattr(os, "getuid", lambda: info.st_uid)()
    if info.st_uid == owner and not info.st_mode & stat.S_ISVTX and info.st_mode & 0o077:
        os.chmod(folder, 0o700)


@contextlib.contextmanager
def locked_spool(path: Path) -> Iterator[Spool]:
    private_folder(path.parent)
    lock_path = path.with_name(path.name + ".lock")
    descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o600)
    os.chmod(lock_path, 0o600)
    if os.path.lexists(path):
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode) or info.st_uid != os.stat(lock_path).st_uid:
            # someone else's file where the spool goes (a shared folder): never read as the
            # person's turns, never written through
            os.close(descriptor)
            raise PermissionError(f"{path} is a link or another user's file: name a spool in a "
                                  "folder of your own (PEGASUS_HOOK_SPOOL)")
        if stat.S_IMODE(info.st_mode) != 0o600:
            os.chmod(path, 0o600)  # a spool an older version wrote wider
    with open(descriptor, "a+") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield Spool(path)


class Refused(OSError):
    """The server refused the item itself (a 4xx about it): sending it again cannot help."""

    code = 400


class Server:
    def __init__(self, url: str, key: str, timeout_s: float) -> None:
        self.url = url.rstrip("/")
        self.key = key
        self.timeout_s = timeout_s

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The answer's JSON; raises OSError (urllib's errors are OSErrors) with a reason."""
        request = urllib.request.Request(
            self.url + path, data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.key}"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                return json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                detail = json.loads(exc.read())["error"]["message"]
            except (ValueError, KeyError, TypeError):
                detail = exc.reason
            if 400 <= exc.code < 500 and exc.code not in NOT_ABOUT_THE_ITEM:
                refused = Refused(f"{path} answered {exc.code}: {detail}")
                refused.code = exc.code
                raise refused from exc
            raise OSError(f"{path} answered {exc.code}: {detail}") from exc
        except ValueError as exc:  # not JSON: not pegasus serve at that address
            raise OSError(f"{path} answered something that is not JSON") from exc


def send(server: Server, spool: Spool, item: dict[str, Any]) -> str | None:
    """Send one item; for a turn, what the server says of extraction ("on: …"/"off: …")."""
    session = item["session"]
    if "turn" in item:
        answer = server.post("/v1/memory/turns", {"conversation_id": session[:180],
                                                  "turns": [item["turn"]]})
        spool.conversations.pop(session, None)  # newest last
        spool.conversations[session] = answer.get("conversation_id", session)
        return answer.get("extraction")
    conversation = spool.conversations.get(session, session[:180])
    try:
        server.post(f"/v1/conversations/{urllib.parse.quote(conversation, safe='')}/close", {})
    except Refused as exc:
        if exc.code != 404:
            raise
        # A session that recorded nothing (no prompt reached the server) has nothing to close.
    spool.conversations.pop(session, None)
    return None


def extraction_notice(extraction: str | None) -> str | None:
    """The one line a session's first prompt shows when the server can extract nothing."""
    if not isinstance(extraction, str) or not extraction.startswith("off:"):
        return None
    return ("memories are not being formed: pegasus serve has "
            f"{extraction.removeprefix('off:').strip()}")


def last_assistant_message(transcript: object) -> str | None:
    """The last assistant message of the last turn in a Copilot CLI transcript (JSON Lines of
    events: `{"type": "user.message", …}`, then `{"type": "assistant.message", "data":
    {"content": …}}`, …); None when the turn has none."""
    found = last_assistant_event(transcript)
    return found[0] if found else None


def last_assistant_event(transcript: object) -> tuple[str, str | None] | None:
    """The last assistant message of the transcript's last turn and its `messageId`."""
    if not isinstance(transcript, str) or not transcript:
        return None
    found = None
    try:
        with open(transcript, encoding="utf-8") as lines:
            for line in lines:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                data = event.get("data") if isinstance(event, dict) else None
                if event.get("type") == "user.message":  # a new turn: only its reply counts
                    found = None
                elif (event.get("type") == "assistant.message" and isinstance(data, dict)
                        and isinstance(data.get("content"), str) and data["content"].strip()):
                    message_id = data.get("messageId")
                    found = (data["content"],
                             message_id if isinstance(message_id, str) else None)
    except OSError:
        return None
    return found


def copilot_transcript(session: object) -> str | None:
    """Where Copilot CLI keeps a session's events ($COPILOT_HOME/session-state/<id>/
    events.jsonl); None for an id that is not a plain name (never a path someone sends)."""
    if not isinstance(session, str) or not SESSION_NAME.fullmatch(session):
        return None
    home = os.environ.get("COPILOT_HOME") or os.path.join(os.path.expanduser("~"), ".copilot")
    return os.path.join(home, "session-state", session, "events.jsonl")


def canonical(event: str, payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The event and payload in Claude Code's terms (`session_id`, `prompt`,
    `last_assistant_message`), whichever CLI sent them."""
    if event not in SAME_AS:
        return event, payload
    session = payload.get("session_id", payload.get("sessionId"))
    same = {**payload, "session_id": session}
    if event == "AfterAgent":
        same["last_assistant_message"] = payload.get("prompt_response")
    elif event in ("agentStop", "sessionEnd"):
        # Both read the turn's reply from the transcript, under an id made from its message id:
        # when agentStop did not find it in time (or was cut off), sessionEnd sends it before
        # the close, and a reply sent already is not sent again (Spool.sent).
        path = (payload.get("transcriptPath", payload.get("transcript_path"))
                if event == "agentStop" else copilot_transcript(session))
        found = last_assistant_event(path)
        # Copilot writes its transcript in the background: the turn's reply may reach the file
        # a moment after agentStop starts (seen in CI), so that hook waits a little for it.
        waited = time.monotonic() + (TRANSCRIPT_WAIT_S if event == "agentStop" else 0.0)
        while found is None and time.monotonic() < waited:
            time.sleep(0.05)
            found = last_assistant_event(path)
        if found is not None:
            same["last_assistant_message"], same["assistant_message_id"] = found
    return SAME_AS[event], same


def items_for(event: str, payload: dict[str, Any]) -> list[dict[str, Any]]:
    """What the event asks to send (a turn, a close; a session end that knows the last reply
    sends it before the close)."""
    session = payload.get("session_id")
    if not isinstance(session, str) or not session.strip():
        return []
    if event == "SessionEnd":
        return [*items_for("Stop", payload), {"session": session, "close": True}]
    role, text = {"UserPromptSubmit": ("user", payload.get("prompt")),
                  "Stop": ("assistant", payload.get("last_assistant_message"))}.get(
        event, (None, None))
    if role is None or not isinstance(text, str) or not text.strip():
        return []
    message_id = payload.get("assistant_message_id") if role == "assistant" else None
    turn_id = (uuid.uuid5(uuid.NAMESPACE_URL, f"copilot:{session}/{message_id}").hex
               if isinstance(message_id, str) and message_id else uuid.uuid4().hex)
    return [{"session": session, "turn": {"id": turn_id, "role": role, "content": text}}]


def run(event: str, payload: dict[str, Any], server: Server, path: Path,
        warn, notice=None) -> str | None:
    """Spool the event's item, send what waits, recall for a prompt; the block, if any.
    `notice` hears what the person must be told once per session (extraction off)."""
    notice = notice or warn
    items = items_for(event, payload)
    item = items[-1] if items else None
    with locked_spool(path) as spool:
        # A session's first prompt (its id not yet on the spool) learns whether the server
        # extracts: told once per session, as the CLI shows it (main).
        first_prompt = (event == "UserPromptSubmit" and item is not None
                        and item["session"] not in spool.conversations)
        if items:
            spool.pending.extend(items)
            spool.save()
        problem = None
        while spool.pending:
            if spool.pending[0].get("turn", {}).get("id") in spool.sent:
                spool.pending.pop(0)  # sent already, by the other hook of the same moment
                spool.save()
                continue
            try:
                said = send(server, spool, spool.pending[0])
                if first_prompt and spool.pending[0] is item and extraction_notice(said):
                    notice(extraction_notice(said))
            except Refused as exc:  # set aside, said once, and the rest goes on
                spool.refused.append({**spool.pending.pop(0), "refused": str(exc)})
                spool.save()
                warn(f"pegasus serve refused an item ({exc}); it is set aside under "
                     f"\"refused\" in {path} and not sent again")
                continue
            except OSError as exc:
                problem = str(getattr(exc, "reason", None) or exc)
                break
            sent = spool.pending.pop(0)
            if "turn" in sent:
                spool.sent.append(sent["turn"]["id"])
            spool.save()
        if problem is not None:
            if not spool.down:
                warn(f"pegasus serve at {server.url} is unavailable ({problem}); "
                     f"{len(spool.pending)} item(s) kept in {path} and sent later; "
                     "the prompt goes on without memory")
                spool.down = True
                spool.save()
            return None
        if spool.down:
            spool.down = False
            spool.save()
        conversation = spool.conversations.get(payload.get("session_id") or "")
    if event != "UserPromptSubmit" or item is None:
        return None
    try:
        result = server.post("/v1/memory/recall", {"text": item["turn"]["content"],
                                                   "conversation_id": conversation})
    except OSError as exc:
        warn(f"recall failed ({getattr(exc, 'reason', None) or exc}); the prompt goes on "
             "without memory")
        return None
    block = result.get("text")
    return block if isinstance(block, str) and block.strip() else None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    warnings: list[str] = []
    notices: list[str] = []

    def answer(block: str | None = None) -> int:
        """The hook's answer on stdout: the memory for the model, a warning for the person
        (`systemMessage`, which both CLIs show when interactive; also on stderr for logs).
        A notice goes to the model too: headless (`claude -p`, `codex exec`) the reply is all
        the person sees. Exit 0 always."""
        out: dict[str, Any] = {}
        context = [memory_note(block)] if block else []
        context += [NOTICE_FOR_MODEL.format(notice) for notice in notices[:1]]
        if context and event == "userPromptTransformed":
            # Copilot CLI: the content the model receives, with the memory after it
            transformed = payload.get("transformedPrompt") or payload.get("prompt") or ""
            out["modifiedTransformedPrompt"] = "\n\n".join([transformed, *context])
        elif context:
            out["hookSpecificOutput"] = {
                "hookEventName": "BeforeAgent" if event == "BeforeAgent" else "UserPromptSubmit",
                "additionalContext": "\n\n".join(context)}
        if warnings or notices:
            out["systemMessage"] = f"[pegasus] {(warnings + notices)[0]}"
            print(out["systemMessage"], file=sys.stderr)
        if out:
            print(json.dumps(out))
        return 0

    payload: dict[str, Any] = {}
    event = args[0] if args else None
    try:
        payload = json.load(sys.stdin)
        if not isinstance(payload, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        warnings.append(f"the hook's input is not the JSON a CLI sends ({exc}); nothing "
                        "recorded")
        return answer()
    event = event or payload.get("hook_event_name")
    if event not in EVENTS and event not in SAME_AS:
        warnings.append(f"unknown hook event {event!r} (one of "
                        f"{', '.join([*EVENTS, *SAME_AS])}); nothing recorded")
        return answer()
    client = client_settings()
    key = os.environ.get("PEGASUS_API_KEY") or client.get("key")
    if not key:
        warnings.append("PEGASUS_API_KEY is not set: set it to your key for pegasus serve "
                        "(or run `pegasus connect`); nothing recorded")
        return answer()
    try:
        timeout_s = float(os.environ.get("PEGASUS_HOOK_TIMEOUT_S", "5"))
    except ValueError:
        timeout_s = 5.0
    same, same_payload = canonical(event, payload)
    if same == "SessionEnd":
        timeout_s = min(timeout_s, 2.0)
    server = Server(os.environ.get("PEGASUS_URL") or client.get("url")
                    or "http://127.0.0.1:8080", key, timeout_s)
    try:
        return answer(run(same, same_payload, server, spool_path(), warnings.append,
                          notices.append))
    except Exception as exc:  # a hook never breaks the prompt: say what went wrong, go on
        warnings.append(f"{type(exc).__name__}: {exc}")
        return answer()


if __name__ == "__main__":
    sys.exit(main())
