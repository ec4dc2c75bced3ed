"""`pegasus-hook`, the program Claude Code and Codex run on their hook events, as a subprocess
against a real `pegasus serve` app (the CLIs themselves: tests/e2e/test_agents.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pegasus import Memory
from pegasus.hook import MEMORY_PREAMBLE
from pegasus.operations.neo4j_local import free_port
from pegasus.serve.app import create_app
from tests.serve.servers import serving
from tests.serve.test_proxy import RECALLS, SISTER_BATCH, recorded, remember_samples

KEY = "key-hooks-0001"
ROOT = Path(__file__).resolve().parents[2]
HOOK = Path(sys.executable).parent / "pegasus-hook"


def run_hook(event: str, payload: dict | str, url: str, spool: Path, key: str | None = KEY,
             **more: str) -> subprocess.CompletedProcess:
    """The hook as a CLI runs it: the event's JSON on stdin, its answer on stdout."""
    # A loaded machine may take more than the hook's 5 s for a recall; what these tests check
    # is what the hook says and keeps, not how fast (a server that is down fails at once).
    env = {"PATH": os.environ["PATH"], "PEGASUS_URL": url, "PEGASUS_HOOK_SPOOL": str(spool),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
           "PEGASUS_HOOK_TIMEOUT_S": "50", **more}
    if key:
        env["PEGASUS_API_KEY"] = key
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run([str(HOOK), event], input=data, env=env, capture_output=True,
                          text=True, timeout=60)


def prompt(session: str, text: str) -> dict:
    return {"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": text,
            "cwd": "/tmp", "transcript_path": "/tmp/t.jsonl"}


def stop(session: str, text: str) -> dict:
    return {"session_id": session, "hook_event_name": "Stop", "stop_hook_active": False,
            "last_assistant_message": text}


def end(session: str) -> dict:
    return {"session_id": session, "hook_event_name": "SessionEnd", "reason": "other"}


@pytest.fixture
def server(settings, user_id):
    """A server that can extract (the scripted model), so no prompt carries the notice."""
    configured = settings.model_copy(update={"api_keys": {KEY: user_id},
                                             "llm_factory": "tests.e2e.opencode_llm:extractor"})
    with Memory(configured) as memory, serving(create_app(memory)) as url:
        yield url, memory


def test_with_no_llm_the_first_prompt_of_each_session_says_so_once(settings, user_id,
                                                                   tmp_path):
    with (Memory(settings.model_copy(update={"api_keys": {KEY: user_id}})) as memory,
          serving(create_app(memory)) as url):
        spool = tmp_path / "spool.json"
        first = run_hook("UserPromptSubmit", prompt("n1", "hello"), url, spool)
        notice = json.loads(first.stdout)
        assert notice["systemMessage"] == (
            "[pegasus] memories are not being formed: pegasus serve has "
            f"{memory.extraction.why}")
        assert first.stderr.strip() == notice["systemMessage"]
        # the model hears it too: headless CLIs show nothing but its reply
        assert notice["hookSpecificOutput"]["additionalContext"] == (
            "Notice from the user's memory tool (Pegasus), for the user: memories are not "
            f"being formed: pegasus serve has {memory.extraction.why}. Tell the user this in "
            "one short sentence at the start of your reply, once.")
        again = run_hook("UserPromptSubmit", prompt("n1", "and again"), url, spool)
        assert again.returncode == 0 and again.stdout == "" and again.stderr == ""
        other = run_hook("UserPromptSubmit", prompt("n2", "a new session"), url, spool)
        assert "memories are not being formed" in json.loads(other.stdout)["systemMessage"]


def test_a_prompt_is_recorded_and_gets_the_memory_it_recalls(server, user_id, tmp_path):
    url, memory = server
    remember_samples(memory, user_id)
    spool = tmp_path / "spool.json"
    fired = run_hook("UserPromptSubmit", prompt("s1", RECALLS), url, spool)
    assert fired.returncode == 0 and fired.stderr == ""
    context = json.loads(fired.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    assert context["additionalContext"].startswith(MEMORY_PREAMBLE + "\n\n[MEMORY]")
    assert "My boss Sarah moved the deadline again" in context["additionalContext"]

    quiet = run_hook("UserPromptSubmit", prompt("s1", "What is 2 + 2?"), url, spool)
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""  # nothing fired
    reply = run_hook("Stop", stop("s1", "Four."), url, spool)
    assert reply.returncode == 0 and reply.stdout == ""
    assert recorded(memory, user_id, "s1") == [
        {"role": "user", "content": RECALLS}, {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "Four."}]
    # the recall was logged on the session's conversation (read reinforcement at its close)
    memory.settle_reads()
    assert memory.store.read("read/read_log", user_id=user_id,
                              conversation_id="s1")[0]["pending"]


def test_the_session_end_closes_it_and_a_resumed_session_continues(server, user_id, tmp_path):
    url, memory = server
    memory.commit(user_id, "earlier", SISTER_BATCH)
    spool = tmp_path / "spool.json"
    run_hook("UserPromptSubmit", prompt("s2", "hello"), url, spool)
    closed = run_hook("SessionEnd", end("s2"), url, spool)
    assert closed.returncode == 0 and closed.stdout == ""
    memory_state = memory.conversation_state(user_id, "s2")
    assert memory_state["status"] in ("closing", "closed", "failed")
    # `claude --resume`: the same session id goes on, in the continuation, recalled there too
    resumed = run_hook("UserPromptSubmit", prompt("s2", "How is Sarah?"), url, spool)
    assert "my sister Sarah is moving again" in resumed.stdout
    assert recorded(memory, user_id, "s2.2") == [{"role": "user", "content": "How is Sarah?"}]
    assert json.loads(spool.read_text())["conversations"] == {"s2": "s2.2"}


def test_while_the_server_is_down_turns_wait_and_are_sent_once(server, user_id, tmp_path):
    url, memory = server
    spool = tmp_path / "spool.json"
    nobody = f"http://127.0.0.1:{free_port()}"
    first = run_hook("UserPromptSubmit", prompt("s3", "Lisbon in May?"), nobody, spool)
    assert first.returncode == 0
    warning = json.loads(first.stdout)["systemMessage"]
    assert warning.startswith(f"[pegasus] pegasus serve at {nobody} is unavailable")
    assert first.stderr.strip() == warning  # one line, for logs too
    second = run_hook("Stop", stop("s3", "Yes, go."), nobody, spool)
    assert second.returncode == 0 and second.stdout == ""  # one warning per outage
    waiting = json.loads(spool.read_text())
    assert [p["turn"]["content"] for p in waiting["pending"]] == ["Lisbon in May?", "Yes, go."]
    # The server answers again: everything is sent in order; sent twice, recorded once.
    copy = spool.read_text()
    back = run_hook("SessionStart", {"session_id": "s3", "hook_event_name": "SessionStart"},
                    url, spool)
    assert back.returncode == 0 and back.stdout == ""
    spool.write_text(copy)  # as if the answer had been lost and the hook ran again
    run_hook("SessionStart", {"session_id": "s3", "hook_event_name": "SessionStart"}, url, spool)
    assert recorded(memory, user_id, "s3") == [
        {"role": "user", "content": "Lisbon in May?"}, {"role": "assistant", "content": "Yes, go."}]
    assert json.loads(spool.read_text())["pending"] == []


def test_an_item_the_server_refuses_is_set_aside_once_and_the_rest_goes_on(server, user_id,
                                                                          tmp_path):
    """A 4xx about the item itself (here a 422: a role no transcript has) cannot succeed by
    sending it again: it is set aside with one warning, and the turns after it are sent."""
    url, memory = server
    spool = tmp_path / "spool.json"
    spool.write_text(json.dumps({"pending": [
        {"session": "s5", "turn": {"id": "bad-1", "role": "robot", "content": "beep"}},
        {"session": "s5", "turn": {"id": "ok-1", "role": "user", "content": "Lisbon in May?"}}]}))
    first = run_hook("UserPromptSubmit", prompt("s5", "And Porto?"), url, spool)
    assert first.returncode == 0
    warning = json.loads(first.stdout)["systemMessage"]
    assert warning.startswith("[pegasus] pegasus serve refused an item (/v1/memory/turns "
                              "answered 422")
    assert f'set aside under "refused" in {spool}' in warning
    later = run_hook("Stop", stop("s5", "Both are lovely."), url, spool)
    assert later.returncode == 0 and later.stdout == "" and later.stderr == ""  # said once
    assert recorded(memory, user_id, "s5") == [
        {"role": "user", "content": "Lisbon in May?"}, {"role": "user", "content": "And Porto?"},
        {"role": "assistant", "content": "Both are lovely."}]
    kept = json.loads(spool.read_text())
    assert kept["pending"] == [] and not kept["down"]
    assert [r["turn"]["id"] for r in kept["refused"]] == ["bad-1"]
    assert "answered 422" in kept["refused"][0]["refused"]


def test_a_refused_key_keeps_every_item_for_later(server, user_id, tmp_path):
    """A 401 is about the key, not the item: nothing is set aside, everything waits."""
    url, memory = server
    spool = tmp_path / "spool.json"
    for text in ("one", "two"):
        run_hook("UserPromptSubmit", prompt("s6", text), url, spool, "key-unknown-9999")
    kept = json.loads(spool.read_text())
    assert [p["turn"]["content"] for p in kept["pending"]] == ["one", "two"]
    assert kept["refused"] == [] and kept["down"]
    run_hook("SessionStart", {"session_id": "s6", "hook_event_name": "SessionStart"}, url, spool)
    assert [t["content"] for t in recorded(memory, user_id, "s6")] == ["one", "two"]


@pytest.mark.parametrize("event, stdin, key, says", [
    ("UserPromptSubmit", "not json", KEY, "is not the JSON a CLI sends"),
    ("Notification", json.dumps(end("s")), KEY, "unknown hook event 'Notification'"),
    ("UserPromptSubmit", json.dumps(prompt("s", "hi")), None, "PEGASUS_API_KEY is not set"),
    ("UserPromptSubmit", json.dumps(prompt("s", "hi")), "key-unknown-9999",
     "answered 401: missing or unknown API key"),
])
def test_a_mistake_is_one_warning_and_never_blocks_the_prompt(server, tmp_path, event, stdin,
                                                              key, says):
    url, _ = server
    answer = run_hook(event, stdin, url, tmp_path / "spool.json", key)
    assert answer.returncode == 0
    assert says in json.loads(answer.stdout)["systemMessage"]
    assert len(answer.stderr.strip().splitlines()) == 1


def test_gemini_cli_events_recall_record_and_close(server, user_id, tmp_path):
    """Gemini CLI's BeforeAgent is answered as Gemini reads it (hookSpecificOutput with
    additionalContext, under its own event name); AfterAgent's prompt_response is the reply."""
    url, memory = server
    remember_samples(memory, user_id)
    spool = tmp_path / "spool.json"
    base = {"session_id": "g1", "cwd": "/tmp", "transcript_path": "/tmp/g.jsonl",
            "timestamp": "2026-12-07T01:19:28.161Z"}
    fired = run_hook("BeforeAgent", {**base, "hook_event_name": "BeforeAgent",
                                     "prompt": RECALLS}, url, spool)
    assert fired.returncode == 0 and fired.stderr == ""
    context = json.loads(fired.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "BeforeAgent"
    assert context["additionalContext"].startswith(MEMORY_PREAMBLE + "\n\n[MEMORY]")
    assert "My boss Sarah moved the deadline again" in context["additionalContext"]
    after = run_hook("AfterAgent", {**base, "hook_event_name": "AfterAgent", "prompt": RECALLS,
                                    "prompt_response": "Tell her after.",
                                    "stop_hook_active": False}, url, spool)
    assert after.returncode == 0 and after.stdout == ""
    assert recorded(memory, user_id, "g1") == [
        {"role": "user", "content": RECALLS}, {"role": "assistant", "content": "Tell her after."}]
    ended = run_hook("SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "exit"},
                     url, spool)
    assert ended.returncode == 0 and ended.stdout == ""
    assert memory.conversation_state(user_id, "g1")["status"] in ("closing", "closed")


def test_copilot_cli_events_recall_record_and_close(server, user_id, tmp_path):
    """Copilot CLI's camelCase events: the memory goes after the transformed prompt
    (`modifiedTransformedPrompt`, the only answer its command hooks can give before the model),
    the reply is read from the transcript, sessionEnd closes."""
    url, memory = server
    remember_samples(memory, user_id)
    spool = tmp_path / "spool.json"
    transformed = f"<current_datetime>2026-12-07T01:18:02</current_datetime>\n\n{RECALLS}"
    fired = run_hook("userPromptTransformed", {
        "sessionId": "c1", "timestamp": 1796606282030, "cwd": "/tmp", "prompt": RECALLS,
        "transformedPrompt": transformed}, url, spool)
    assert fired.returncode == 0 and fired.stderr == ""
    answer = json.loads(fired.stdout)
    assert set(answer) == {"modifiedTransformedPrompt"}
    assert answer["modifiedTransformedPrompt"].startswith(
        transformed + "\n\n" + MEMORY_PREAMBLE + "\n\n[MEMORY]")
    assert "My boss Sarah moved the deadline again" in answer["modifiedTransformedPrompt"]
    transcript = tmp_path / "events.jsonl"
    transcript.write_text("\n".join(json.dumps(e) for e in [
        {"type": "user.message", "data": {"content": RECALLS}},
        {"type": "assistant.message", "data": {"content": "Tell her after."}}]) + "\n")
    stopped = run_hook("agentStop", {"sessionId": "c1", "timestamp": 1796606282584,
                                     "transcriptPath": str(transcript),
                                     "stopReason": "end_turn", "stop_hook_active": False},
                       url, spool)
    assert stopped.returncode == 0 and stopped.stdout == ""
    assert recorded(memory, user_id, "c1") == [
        {"role": "user", "content": RECALLS}, {"role": "assistant", "content": "Tell her after."}]
    ended = run_hook("sessionEnd", {"sessionId": "c1", "reason": "complete"}, url, spool)
    assert ended.returncode == 0 and ended.stdout == ""
    assert memory.conversation_state(user_id, "c1")["status"] in ("closing", "closed")


def test_with_no_key_in_the_environment_the_hook_uses_what_connect_wrote(server, user_id,
                                                                          tmp_path):
    """`pegasus connect` keeps the URL and key in $XDG_CONFIG_HOME/pegasus/client.json: a CLI
    that passes no PEGASUS_* variable to its hooks still reaches the server."""
    url, memory = server
    (tmp_path / "pegasus").mkdir()
    (tmp_path / "pegasus" / "client.json").write_text(json.dumps({"url": url, "key": KEY}))
    env = {"PATH": os.environ["PATH"], "XDG_CONFIG_HOME": str(tmp_path),
           "PEGASUS_HOOK_SPOOL": str(tmp_path / "spool.json"), "PEGASUS_HOOK_TIMEOUT_S": "50",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    ran = subprocess.run([str(HOOK), "UserPromptSubmit"], input=json.dumps(prompt("k1", "hi")),
                         env=env, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr
    assert recorded(memory, user_id, "k1") == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("first", ["sessionEnd", "agentStop"])
def test_copilot_cli_ending_the_session_before_the_turn_hook_ran_loses_no_reply(
        server, user_id, tmp_path, first):
    """Copilot CLI writes its transcript in the background, so `agentStop` may find no reply
    yet (CI, with the real CLI): `sessionEnd` sends it then. Whichever hook finds it, the
    reply lands once, in the conversation it belongs to, before the close; no continuation is
    opened for it."""
    url, memory = server
    spool = tmp_path / "spool.json"
    session = "6e96c1de-96f1-4dfb-b5b8-42e278ee887a"
    home = tmp_path / "copilot"
    transcript = home / "session-state" / session / "events.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("\n".join(json.dumps(e) for e in [
        {"type": "user.message", "data": {"content": "hello"}},
        {"type": "assistant.message", "data": {"messageId": "m-1", "content": "Hi there."}},
        {"type": "assistant.turn_end", "data": {}}]) + "\n")
    run_hook("userPromptTransformed", {"sessionId": session, "prompt": "hello",
                                       "transformedPrompt": "hello"}, url, spool,
             COPILOT_HOME=str(home))
    events = {"agentStop": {"sessionId": session, "transcriptPath": str(transcript),
                            "stopReason": "end_turn"},
              "sessionEnd": {"sessionId": session, "reason": "complete"}}
    for event in (first, *(e for e in events if e != first)):
        ran = run_hook(event, events[event], url, spool, COPILOT_HOME=str(home))
        assert ran.returncode == 0 and ran.stdout == "" and ran.stderr == "", ran.stderr
    assert recorded(memory, user_id, session) == [
        {"role": "user", "content": "hello"}, {"role": "assistant", "content": "Hi there."}]
    assert memory.conversation_state(user_id, session)["status"] in ("closing", "closed")
    assert not memory.conversation_state(user_id, f"{session}.2")["exists"]
    assert json.loads(spool.read_text())["pending"] == []


def test_a_copilot_session_id_that_is_a_path_reads_no_transcript(tmp_path, monkeypatch):
    from pegasus.hook import canonical, copilot_transcript

    monkeypatch.setenv("COPILOT_HOME", str(tmp_path))
    secret = tmp_path / "session-state" / ".." / "x"
    assert copilot_transcript("../../etc") is None and copilot_transcript("a/b") is None
    assert copilot_transcript("") is None and copilot_transcript(None) is None
    assert copilot_transcript("c-1") == str(tmp_path / "session-state" / "c-1" / "events.jsonl")
    assert "last_assistant_message" not in canonical(
        "sessionEnd", {"sessionId": str(secret), "reason": "complete"})[1]
