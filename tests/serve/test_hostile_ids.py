"""What an export file brings to the memory page (#47): ids holding "/", "?", "#", "%", dots,
spaces or any Unicode open and are managed like any other (every link percent-encodes an id as
one path segment); invisible characters in stored text are shown as marks, and a form sends
the exact text back."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime

import httpx
import pytest
from fastapi.testclient import TestClient

from pegasus import Memory
from pegasus.serve.app import create_app
from tests.helpers import rel
from tests.serve.servers import serving
from tests.serve.test_page import csrf_of
from tests.unit.test_import_check import good

KEY, OTHER = "key-hostile-ids-1", "key-hostile-ids-2"
# The ids of the file (test_import_check's good file): entities, a memory, merge records.
HOSTILE = {"e1": "e/1 ?x=1#frag", "e2": "ü/../s%2Fa%zz x", "m1": "m/1?#%", "r1": "r/1#x",
           "r2": "../r2/forget"}


def hostile_file(path) -> None:
    records = good()
    records[0] = {**records[0], "minor": 1}
    records.append({"type": "end", "entities": 2, "memories": 1, "conversations": 1,
                    "merge_records": 2})
    text = "".join(json.dumps(r) + "\n" for r in records)
    for old, new in HOSTILE.items():
        text = text.replace(f'"{old}"', json.dumps(new))
        text = text.replace(f'\\"{old}\\"', json.dumps(json.dumps(new))[1:-1])
    path.write_text(text)


@pytest.fixture
def imported(settings, user_id, tmp_path):
    """The hostile file imported through the page of a real server (uvicorn decodes a path
    once, as every server does; Starlette's TestClient decodes it twice, so an id holding
    "%2F" would not reach the route as sent)."""
    path = tmp_path / "hostile.jsonl"
    hostile_file(path)
    keys = {KEY: user_id, OTHER: f"{user_id}-other"}
    with Memory(settings.model_copy(update={"api_keys": keys})) as memory, \
            serving(create_app(memory)) as base, httpx.Client(base_url=base, timeout=300) as client:
        answer = client.post("/sign-in", data={"key": KEY}, follow_redirects=False)
        assert answer.status_code == 303
        csrf = csrf_of(client.get("/memories").text)
        done = client.post("/import", data={"csrf": csrf}, files={
            "file": ("hostile.jsonl", path.read_bytes(), "application/x-ndjson")})
        assert done.status_code == 200, done.text
        yield client, memory, user_id, csrf


def links(page: str, prefix: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(rf'(?:href|action)="({prefix}[^"]*)"', page)]


def test_every_link_to_a_hostile_id_opens_it(imported):
    client, memory, user, _ = imported
    listing = client.get("/memories")
    assert listing.status_code == 200
    # Each id is one percent-encoded path segment: "/" too. The list links each memory; the
    # memory's own page links both its ends.
    assert 'href="/memories/m%2F1%3F%23%25"' in listing.text
    [memory_link] = set(links(listing.text, "/memories/"))
    story = client.get(memory_link)
    assert story.status_code == 200 and "my boss Sarah" in story.text
    assert 'href="/entities/e%2F1%20%3Fx%3D1%23frag"' in story.text
    entity_links = set(links(story.text, "/entities/"))
    assert len(entity_links) == 2
    for href in entity_links:
        opened = client.get(href)
        assert opened.status_code == 200, href
        assert "Bill" in opened.text or "Sarah" in opened.text


def test_a_hostile_id_is_managed_through_its_pages_forms(imported):
    client, memory, user, csrf = imported
    sarah = client.get("/entities/" + _encoded(HOSTILE["e2"])).text
    actions = {a.rsplit("/", 1)[1]: a for a in links(sarah, "/entities/")
               if a.rsplit("/", 1)[1] in ("rename", "aliases", "merge", "forget")}
    assert set(actions) == {"rename", "aliases", "merge", "forget"}
    renamed = client.post(actions["rename"], data={"csrf": csrf, "name": "Sara"})
    assert renamed.status_code == 200 and memory.entity(user, HOSTILE["e2"]).name == "Sara"
    back = [a for a in links(renamed.text, "/entities/")  # not the undo form's action
            if not a.endswith(("/rename", "/aliases", "/merge", "/forget"))]
    assert back and client.get(back[0]).status_code == 200  # "Back to this entity" opens
    client.post(actions["aliases"], data={"csrf": csrf, "add": "SK"})
    assert "SK" in memory.entity(user, HOSTILE["e2"]).aliases

    memory_page = client.get("/memories/" + _encoded(HOSTILE["m1"])).text
    [retract] = [a for a in links(memory_page, "/memories/") if a.endswith("/retract")]
    assert client.post(retract, data={"csrf": csrf}).status_code == 200
    assert memory.memory(user, HOSTILE["m1"]).memory.state == "retracted"

    merges = client.get("/merges").text
    undo = [a for a in links(merges, "/merges/") if a.endswith("/undo")]
    assert "/merges/r%2F1%23x/undo" in undo
    undone = client.post("/merges/r%2F1%23x/undo", data={"csrf": csrf})
    assert undone.status_code == 200 and "The merge is undone" in undone.text

    forgot = client.post(actions["forget"], data={"csrf": csrf, "confirm": "yes"})
    assert forgot.status_code == 200 and "is forgotten" in forgot.text
    assert HOSTILE["e2"] not in {e for m in memory.memories(user, state="all")
                                 for e in (m.source_id, m.target_id)}
    assert client.get("/entities/" + _encoded(HOSTILE["e2"])).status_code == 404


def test_a_hostile_id_of_another_user_is_not_found(imported):
    client, memory, user, _ = imported
    other = httpx.Client(base_url=str(client.base_url), timeout=300)
    assert other.post("/sign-in", data={"key": OTHER}, follow_redirects=False).status_code == 303
    for href in ["/entities/" + _encoded(HOSTILE["e2"]), "/memories/" + _encoded(HOSTILE["m1"])]:
        assert other.get(href).status_code == 404


def _encoded(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


def test_invisible_characters_are_marked_on_the_page_and_sent_back_exact(settings, user_id):
    tagged = "".join(chr(0xE0000 + ord(c)) for c in "obey")  # ASCII smuggling: invisible tags
    with Memory(settings.model_copy(update={"api_keys": {KEY: user_id}})) as memory:
        memory.commit(user_id, "c1", {
            "entities": [{"name": "Sarah", "kind": "PERSON", "aliases": ["Sa\u200brah"]}],
            "relations": [rel("User", "HAS_BOSS", "Sarah", f"my boss Sarah{tagged} soft\u00adly")]},
            at=datetime(2026, 3, 1, 9, tzinfo=UTC))
        [boss] = memory.memories(user_id)
        with TestClient(create_app(memory), base_url="http://testserver") as client:
            client.post("/sign-in", data={"key": KEY}, follow_redirects=False)
            listing = client.get("/memories").text
            csrf = csrf_of(listing)
            assert "my boss Sarah⟨U+E006F⟩⟨U+E0062⟩⟨U+E0065⟩⟨U+E0079⟩ soft⟨U+00AD⟩ly" in listing
            assert tagged[0] not in listing and "\u00ad" not in listing
            entity = client.get(f"/entities/{boss.target_id}").text
            assert "also called Sa⟨U+200B⟩rah" in entity
            # The form sends the alias back as stored, so removing it works.
            assert 'name="remove" value="Sa\u200brah"' in entity
            removed = client.post(f"/entities/{boss.target_id}/aliases",
                                  data={"csrf": csrf, "remove": "Sa\u200brah"})
            assert removed.status_code == 200
            assert memory.entity(user_id, boss.target_id).aliases == []
            block = client.post("/search", data={"csrf": csrf, "q": "Sarah boss"}).text
            assert "\\U000e006f\\U000e0062" in block and tagged[0] not in block


def test_a_hostile_id_recalled_is_reinforced_at_the_close_and_forgotten_from_the_log(imported):
    """The read log names each edge by its ids joined with "/": an id holding "/" or "%" is
    escaped there, so the close reinforces the right edge and forgetting it takes it out."""
    _, memory, user_id, _ = imported
    for conversation in ("later", "forgets"):
        recall = memory.recall(user_id, "my boss Sarah", conversation_id=conversation)
        assert recall.edge_ids == [HOSTILE["m1"]]
    memory.settle_reads()
    assert memory.close_conversation(user_id, "later") == 1
    [edge] = [e for e in memory.edges(user_id) if e.id == HOSTILE["m1"]]
    assert edge.touched_at > "2026-06", edge.touched_at  # reinforced now, not the file's date

    def pending(conversation: str) -> list[str]:
        return memory.store.read("read/read_log", user_id=user_id,
                                  conversation_id=conversation)[0]["pending"]

    assert len(pending("forgets")) == 1 and pending("forgets")[0].count("/") == 2
    memory.forget_memory(user_id, HOSTILE["m1"])
    assert pending("forgets") == []
