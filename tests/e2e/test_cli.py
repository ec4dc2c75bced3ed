"""The CLI verbs end to end against the session's Neo4j (NEO4J_URI points them at it)."""

import json
import subprocess
import sys

import pytest

from tests.helpers import BAD_BATCHES, rel


@pytest.fixture
def env(neo4j_env):
    return neo4j_env


def pegasus(env, *args, stdin=None, check=True):
    done = subprocess.run([sys.executable, "-m", "pegasus", *args], env=env, input=stdin,
                          capture_output=True, text=True, timeout=300)
    if check and done.returncode != 0:
        raise AssertionError(done.stderr)
    return done


def test_commit_recall_close_consolidate(env, tmp_path, user_id, settings):
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps({
        "entities": [{"name": "Sarah", "kind": "PERSON"}],
        "relations": [rel("User", "HAS_BOSS", "Sarah", stability="mutable",
                          snippet="my boss Sarah is brilliant")],
    }))
    at = "2026-05-01T10:00:00Z"
    report = json.loads(pegasus(env, "commit", "--user", user_id, "--conversation", "c1",
                                "--at", at, str(batch)).stdout)
    assert report["edges_created"] == ["User -[HAS_BOSS]-> Sarah"]
    out = pegasus(env, "recall", "--user", user_id, "--json", "--conversation", "c2",
                  "--at", "2026-05-11T10:00:00Z", "how is my boss Sarah").stdout
    data = json.loads(out)
    # The edge's words are quoted with their date, so no [MEMORY] line repeats the edge.
    assert data["memory"] == []
    assert data["context"] == ["my boss Sarah is brilliant"]
    assert data["snippets"][0]["said_at"].startswith("2026-05-01")
    assert data["text"] == '[CONTEXT]\n- 2026-05-01: "my boss Sarah is brilliant"'
    assert {n["name"] for n in data["nodes"]} == {"Sarah"}  # the self node takes no slot
    plain = pegasus(env, "recall", "--user", user_id, "my boss Sarah").stdout
    assert plain.strip() == '[CONTEXT]\n- 2026-05-01: "my boss Sarah is brilliant"'
    closed = pegasus(env, "close", "--user", user_id, "--conversation", "c2",
                     "--at", "2026-05-11T10:00:00Z").stdout
    assert closed.strip() == "reinforced 1 edges"
    decay = json.loads(pegasus(env, "consolidate", "--at", "2026-06-10T10:00:00Z").stdout)
    assert decay["edges"] >= 1 and decay["at"].startswith("2026-06-10")
    # One user's partition: exactly this user's one edge is decayed.
    mine = json.loads(pegasus(env, "consolidate", "--user", user_id, "--at",
                              "2026-06-11T10:00:00Z").stdout)
    assert mine["edges"] == 1 and mine["at"].startswith("2026-06-11")


def test_bad_input_gets_a_clear_error_and_exit_code(env, tmp_path, user_id):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    done = pegasus(env, "commit", "--user", user_id, "--conversation", "c1", str(bad),
                   check=False)
    assert done.returncode == 2 and "bad.json" in done.stderr
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"relations": "nope"}))
    done = pegasus(env, "commit", "--user", user_id, "--conversation", "c1", str(wrong),
                   check=False)
    assert done.returncode == 2 and "not an extraction batch" in done.stderr
    done = pegasus(env, "recall", "--user", user_id, "--at", "yesterday", "x", check=False)
    assert done.returncode == 2 and "--at" in done.stderr


def test_remember_without_an_llm_says_how_to_configure_one(env, tmp_path, user_id):
    transcript = tmp_path / "t.json"
    transcript.write_text(json.dumps([{"role": "user", "content": "my boss Sarah"}]))
    done = pegasus(env, "remember", "--user", user_id, "--conversation", "c1", str(transcript),
                   check=False)
    assert done.returncode == 2 and "PEGASUS_LLM_MODEL" in done.stderr


def test_serve_answers_with_the_keys_user_and_refuses_others(env, user_id, settings):
    """`pegasus serve` as a user starts it: the key's user only, 401 for anything else."""
    import time

    import httpx

    from pegasus.operations.neo4j_local import free_port

    pegasus(env, "commit", "--user", user_id, "--conversation", "c1", "-", stdin=json.dumps({
        "entities": [{"name": "Sarah", "kind": "PERSON"}],
        "relations": [rel("User", "HAS_BOSS", "Sarah", "my boss Sarah moved the deadline")]}))
    port = free_port()
    served = {**env, "PEGASUS_API_KEYS": json.dumps({"key-serve-test-1": user_id})}
    server = subprocess.Popen([sys.executable, "-m", "pegasus", "serve", "--port", str(port)],
                              env=served, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/openapi.json").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline and server.poll() is None, "serve did not start"
            time.sleep(0.5)
        recall = httpx.post(f"{base}/v1/memory/recall", json={"text": "Sarah again"},
                            headers={"Authorization": "Bearer key-serve-test-1"}, timeout=60)
        assert recall.status_code == 200
        assert recall.json()["context"] == ["my boss Sarah moved the deadline"]
        refused = httpx.post(f"{base}/v1/memory/recall", json={"text": "Sarah again"},
                             headers={"Authorization": "Bearer someone-elses-key"})
        assert refused.status_code == 401
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize("batch, path", BAD_BATCHES)
def test_a_bad_batch_file_is_one_line_naming_the_field_and_exit_2(neo4j_env, monkeypatch,
                                                                  tmp_path, batch, path):
    from typer.testing import CliRunner

    from pegasus.cli import app

    for name in ("NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD"):
        monkeypatch.setenv(name, neo4j_env[name])
    file = tmp_path / "batch.json"
    file.write_text(json.dumps(batch))
    done = CliRunner().invoke(app, ["commit", "--user", "u-bad", "--conversation", "c1",
                                    str(file)])
    assert done.exit_code == 2, done.output
    assert done.stderr.strip().splitlines() == [
        next(ln for ln in done.stderr.splitlines() if ln.startswith("error:"))]
    assert f"error: not an extraction batch: {path}: " in done.stderr


def test_see_correct_and_forget_from_the_command_line(env, tmp_path, user_id):
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps({
        "entities": [{"name": "Jordan", "kind": "PERSON"}, {"name": "Jordan", "kind": "PLACE"},
                     {"name": "Sarah", "kind": "PERSON"}],
        "relations": [rel("User", "HAS_BOSS", "Sarah", "my boss Sarah is brilliant"),
                      rel("User", "VISITED", "Petra", "we visited Petra in May")]}))
    pegasus(env, "commit", "--user", user_id, "--conversation", "c1", "--at",
            "2026-05-01T10:00:00Z", str(batch))
    listed = json.loads(pegasus(env, "memories", "--user", user_id, "--json").stdout)
    assert sorted((m["relation"], m["target"], m["state"]) for m in listed) == [
        ("HAS_BOSS", "Sarah", "current"), ("VISITED", "Petra", "current")]
    boss = next(m["id"] for m in listed if m["relation"] == "HAS_BOSS")
    plain = pegasus(env, "memories", "--user", user_id, "--about", "sarah").stdout
    assert plain.startswith(f"{boss}  current") and '"my boss Sarah is brilliant"' in plain
    story = pegasus(env, "memory", boss, "--user", user_id).stdout
    assert "seen in   c1 2026-05-01" in story
    assert json.loads(pegasus(env, "correct", "retract", boss, "--user", user_id).stdout)[
        "action"] == "retracted"
    assert pegasus(env, "recall", "--user", user_id, "my boss Sarah").stdout.strip() == ""
    petra = next(m["id"] for m in listed if m["relation"] == "VISITED")
    fixed = json.loads(pegasus(env, "correct", "memory", petra, "--words",
                               "we visited Petra in June", "--user", user_id).stdout)
    assert (fixed["action"], fixed["corrected_id"]) == ("corrected", petra)
    assert "in June" in pegasus(env, "recall", "--user", user_id, "our visit to Petra").stdout
    assert json.loads(pegasus(env, "correct", "memory", fixed["memory_id"], "--undo",
                              "--user", user_id).stdout)["memory_id"] == petra
    renamed = json.loads(pegasus(env, "correct", "rename", "Petra", "Petra Jordan",
                                 "--user", user_id).stdout)
    assert renamed["name"] == "Petra Jordan"
    # Bad input: one line, exit 2, nothing changed.
    unknown = pegasus(env, "memory", "no-such-id", "--user", user_id, check=False)
    assert unknown.returncode == 2 and unknown.stderr.strip() == \
        f"error: no memory 'no-such-id' in {user_id}'s memory"
    two = pegasus(env, "forget", "--user", user_id, "--entity", "Jordan", check=False)
    assert two.returncode == 2 and len(two.stderr.strip().splitlines()) == 1
    assert "2 entities are named 'Jordan'" in two.stderr and "PLACE" in two.stderr
    unconfirmed = pegasus(env, "forget", "--user", user_id, "--everything", check=False)
    assert unconfirmed.returncode == 2 and "add --yes" in unconfirmed.stderr
    neither = pegasus(env, "forget", "--user", user_id, check=False)
    assert neither.returncode == 2 and "exactly one of" in neither.stderr
    assert len(json.loads(pegasus(env, "memories", "--user", user_id, "--state", "all",
                                  "--json").stdout)) == 2
    forgot = json.loads(pegasus(env, "forget", "--user", user_id, "--memory", boss).stdout)
    assert forgot["memories"] == 1 and forgot["scope"] == "memory"
    everything = json.loads(pegasus(env, "forget", "--user", user_id, "--everything",
                                    "--yes").stdout)
    assert everything["memories"] == 1 and everything["entities"] == 5
    assert pegasus(env, "memories", "--user", user_id, "--state", "all").stdout.strip() == \
        "no memories"


def test_export_and_import_from_the_command_line(env, tmp_path, user_id):
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps({"relations": [
        rel("User", "HAS_BOSS", "Sarah", "my boss Sarah is brilliant")]}))
    pegasus(env, "commit", "--user", user_id, "--conversation", "c1", str(batch))
    out = tmp_path / "memory.jsonl"
    done = pegasus(env, "export", "--user", user_id, "-o", str(out))
    assert done.stderr.strip().endswith(f"exported 4 records of {user_id} to {out}")
    streamed = pegasus(env, "export", "--user", user_id).stdout
    assert [json.loads(x)["type"] for x in streamed.splitlines()] == [
        "header", "entity", "entity", "memory", "conversation", "end"]
    assert not out.with_name(out.name + ".partial").exists()
    # Ids are kept: while the user holds them, the file goes into no other partition (#35).
    taken = pegasus(env, "import", str(out), "--user", f"{user_id}-copy", check=False)
    assert taken.returncode == 2 and taken.stderr.strip().startswith(
        "error: line 2 (entity): id: another user's memory holds this id")
    assert len(taken.stderr.strip().splitlines()) == 1
    pegasus(env, "forget", "--user", user_id, "--everything", "--yes")
    report = json.loads(pegasus(env, "import", str(out), "--user", f"{user_id}-copy").stdout)
    assert (report["entities"], report["memories"]) == (2, 1)
    recalled = pegasus(env, "recall", "--user", f"{user_id}-copy", "my boss Sarah").stdout
    assert "my boss Sarah is brilliant" in recalled
    again = pegasus(env, "import", str(out), "--user", f"{user_id}-copy", check=False)
    assert again.returncode == 2 and "already has memories" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    broken = tmp_path / "broken.jsonl"
    broken.write_text(out.read_text().replace('"version":1', '"version":9'))
    refused = pegasus(env, "import", str(broken), "--user", f"{user_id}-x", check=False)
    assert refused.returncode == 2
    assert refused.stderr.strip() == ("error: line 1: version: format version 9 is unknown; "
                                      "this Pegasus reads version 1")
    replaced = json.loads(pegasus(env, "import", str(out), "--user", f"{user_id}-copy",
                                  "--replace").stdout)
    assert replaced["replaced"] is True and replaced["memories"] == 1


def test_version_and_no_progress_bar(env):
    from importlib.metadata import version

    assert pegasus(env, "--version").stdout.strip() == f"pegasus {version('pegasus-memory')}"
    listed = pegasus(env, "recall", "--user", "nobody-here", "hello")
    assert "Loading weights" not in listed.stderr and listed.stderr == ""
