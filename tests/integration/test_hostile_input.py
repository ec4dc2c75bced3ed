"""Input built to break things gets a clear error and writes nothing (design §12)."""

import subprocess
import sys

import pytest

from pegasus import Memory
from pegasus.errors import InvalidBatchError, PegasusError
from tests.helpers import snapshot


def test_a_transcript_over_the_limit_is_refused_before_any_llm_call(settings, raw_driver, user_id):
    small = settings.model_copy(update={"max_transcript_chars": 1000})
    before = snapshot(raw_driver)
    with Memory(small, llm=object()) as mem:  # never called: the limit comes first
        with pytest.raises(InvalidBatchError, match="transcript too long"):
            mem.remember(user_id, "c1", [{"role": "user", "content": "x" * 1001}])
        with pytest.raises(PegasusError, match="message too long"):
            mem.recall(user_id, "y" * 1001)
    assert snapshot(raw_driver) == before


def test_malformed_transcripts_are_refused(settings, user_id):
    with Memory(settings, llm=object()) as mem:
        for bad in ([{"role": "robot", "content": "hi"}], [{"content": "hi"}], "just text", [3]):
            with pytest.raises(InvalidBatchError, match="not a transcript"):
                mem.remember(user_id, "c1", bad)


def test_deeply_nested_and_control_character_batches(settings, raw_driver, user_id):
    nested: object = "leaf"
    for _ in range(5000):
        nested = {"k": nested}
    before = snapshot(raw_driver)
    with Memory(settings) as mem, pytest.raises(InvalidBatchError, match="nest at most 32"):
        mem.commit(user_id, "c0", {"entities": [{"name": "X", "properties": {"deep": nested}}]})
    assert snapshot(raw_driver) == before
    nested = {"a": [{"b": {"c": [1, 2, {"d": "e"}]}}]}
    with Memory(settings) as mem:
        report = mem.commit(user_id, "c1", {
            "entities": [{"name": "Sa\x00rah\x1b[31m", "kind": "PERSON",
                          "properties": {"deep": nested, "ok": "fine"}}],
            "relations": [{"source": "User", "relation": "HAS_BOSS", "target": "Sa\x00rah\x1b[31m",
                           "snippet": "my boss\x07 Sarah"}]})
    assert report.edges_created
    node = raw_driver.execute_query(
        "MATCH (n:Entity {user_id: $u, kind: 'PERSON'}) WHERE NOT n.is_self RETURN n",
        u=user_id).records[0]["n"]
    assert "\x00" not in node["name"] and "\x1b" not in node["name"]
    assert node["p_ok"] == "fine" and len(node["p_deep"]) <= 500


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe\x00garbage", "utf-8"),
    (("[" * 200_000 + "]" * 200_000).encode(), "too deeply nested"),
])
def test_cli_rejects_unreadable_files_with_a_clear_error(neo4j_env, tmp_path, user_id,
                                                        content, message):
    path = tmp_path / "batch.json"
    path.write_bytes(content)
    done = subprocess.run(
        [sys.executable, "-m", "pegasus", "commit", "--user", user_id, "--conversation", "c1",
         str(path)], env=neo4j_env,
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr.lower(), done.stderr
    assert "Traceback" not in done.stderr
