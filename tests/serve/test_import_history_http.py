"""Past conversations over HTTP and on the page: POST /v1/memory/import-history (JSON or the
export's zip) and the page's upload form, scoped to the key's user; the new conversations are
extracted by the close worker, oldest first."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from fastapi.testclient import TestClient

from pegasus import Memory
from pegasus.serve.app import create_app
from tests.e2e.running import wait_for
from tests.history_exports import SiblingExtractor, chatgpt_export, claude_export
from tests.serve.test_page import csrf_of

KEY_A, KEY_B = "key-history-alice-1", "key-history-bruno-2"


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def app_of(settings, user_id):
    """A client of the app for alice and bruno; `llm` gives the server a model to extract."""
    def make(llm=None):
        configured = settings.model_copy(update={"api_keys": {KEY_A: f"{user_id}-a",
                                                              KEY_B: f"{user_id}-b"}})
        memory = Memory(configured, llm=llm)
        client = TestClient(create_app(memory), base_url="http://testserver")
        made.append((memory, client))
        return client.__enter__(), memory

    made: list = []
    yield make
    for memory, client in made:
        client.__exit__(None, None, None)
        memory.close()


def test_the_api_estimates_imports_once_and_keeps_users_apart(app_of, user_id):
    client, memory = app_of()
    alice, bruno = f"{user_id}-a", f"{user_id}-b"
    body = json.dumps(chatgpt_export(60)).encode()
    dry = client.post("/v1/memory/import-history?dry_run=true", headers=auth(KEY_A),
                      content=body)
    assert dry.status_code == 200, dry.text
    assert (dry.json()["recorded"], dry.json()["estimate"]["calls"]) == (0, 120)
    assert memory.conversations.awaiting_extraction(alice) == []
    done = client.post("/v1/memory/import-history", headers=auth(KEY_A), content=body)
    assert done.status_code == 200, done.text
    assert (done.json()["source"], done.json()["recorded"]) == ("chatgpt", 60)
    assert done.json()["extraction"].startswith("no LLM to extract with")
    assert len(memory.conversations.awaiting_extraction(alice)) == 60
    again = client.post("/v1/memory/import-history", headers=auth(KEY_A), content=body)
    assert (again.json()["recorded"], again.json()["already"]) == (0, 60)
    # bruno's import of the same file is his own: nothing of alice's is found or touched
    theirs = client.post("/v1/memory/import-history", headers=auth(KEY_B), content=body)
    assert (theirs.json()["recorded"], theirs.json()["already"]) == (60, 0)
    assert {r["user_id"] for r in memory.conversations.awaiting_extraction(bruno)} == {bruno}
    assert len(memory.conversations.awaiting_extraction(alice)) == 60
    nobody = client.post("/v1/memory/import-history", content=body)
    assert nobody.status_code == 401


def test_a_bad_file_is_a_422_naming_it_and_nothing_is_recorded(app_of, user_id):
    client, memory = app_of()
    data = claude_export(10)
    data[4]["chat_messages"] = "not a list"
    bad = client.post("/v1/memory/import-history", headers=auth(KEY_A),
                      content=json.dumps(data).encode())
    assert bad.status_code == 422
    assert bad.json()["error"]["message"] == (
        f'conversation 5 ("{data[4]["name"]}"): `chat_messages` is not a list; nothing was '
        "imported")
    broken = client.post("/v1/memory/import-history", headers=auth(KEY_A), content=b"[{")
    assert broken.status_code == 422 and broken.json()["error"]["message"].startswith(
        "line 1, column 3: not JSON")
    assert memory.conversations.awaiting_extraction(f"{user_id}-a") == []


def test_with_an_llm_the_server_extracts_the_backlog_in_the_background(app_of, user_id):
    client, memory = app_of(SiblingExtractor())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("conversations.json", json.dumps(claude_export(130)))
    done = client.post("/v1/memory/import-history", headers=auth(KEY_A),
                       content=buffer.getvalue())
    assert done.status_code == 200, done.text
    assert done.json()["extraction"] == ("the 130 conversation(s) are extracted in the "
                                         "background, oldest first")
    alice = f"{user_id}-a"
    assert wait_for(lambda: memory.conversations.awaiting_extraction(alice) == [], timeout_s=600)
    maya = [e for e in memory.edges(alice) if (e.relation, e.target) == ("HAS_SISTER", "Maya")]
    assert len(maya) == 1 and len(maya[0].conversations) == 2  # said in two conversations


def test_the_page_form_brings_them_in_with_its_checks(app_of, user_id):
    client, memory = app_of()
    signed = client.post("/sign-in", data={"key": KEY_A}, follow_redirects=False)
    assert signed.status_code == 303
    page = client.get("/data")
    assert 'action="/import-history"' in page.text
    csrf = csrf_of(page.text)
    body = json.dumps(claude_export(25))
    done = client.post("/import-history", data={"csrf": csrf},
                       files={"file": ("conversations.json", body, "application/json")})
    assert done.status_code == 200, done.text
    assert "Your past conversations" in done.text
    assert "25 new, 0 brought in before" in done.text
    assert len(memory.conversations.awaiting_extraction(f"{user_id}-a")) == 25
    # no CSRF token: refused, nothing read
    assert client.post("/import-history", files={
        "file": ("conversations.json", body)}).status_code == 403
    # signed out: sent to sign in
    nobody = TestClient(client.app).post("/import-history", files={
        "file": ("conversations.json", body)}, follow_redirects=False)
    assert nobody.status_code == 303 and nobody.headers["location"] == "/"
    bad = client.post("/import-history", data={"csrf": csrf},
                      files={"file": ("conversations.json", "[1, 2]", "application/json")})
    assert bad.status_code in (400, 422) and "not a conversations.json" in bad.text
    memory.settings.max_upload_bytes = 1000
    big = client.post("/import-history", data={"csrf": csrf},
                      files={"file": ("conversations.json", body, "application/json")})
    assert big.status_code in (400, 413) and "at most" in big.text
    assert len(memory.conversations.awaiting_extraction(f"{user_id}-a")) == 25
