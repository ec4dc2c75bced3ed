"""The memory page over HTTP: sign-in cookie, security headers, CSRF, tenant isolation, escaping,
and each verb's result, against the real Neo4j (the browser test drives the same page)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from pegasus import Memory
from pegasus.errors import InvalidInputError
from pegasus.page.words import state_words
from pegasus.serve.app import create_app
from pegasus.serve.page import CSP
from tests.helpers import rel, snapshot

KEY_A, KEY_B = "key-page-alice-1", "key-page-bruno-2"
XSS = '<script>alert("x")</script> and <img src=x onerror=alert(1)>'
WORK = {"entities": [{"name": "Sarah", "kind": "PERSON", "aliases": ["Sarah K"]},
                     {"name": "Acme", "kind": "ORG"}],
        "relations": [rel("User", "HAS_BOSS", "Sarah", "my boss Sarah moved the deadline again"),
                      rel("User", "WORKS_AT", "Acme", "I have been at Acme for three years")]}
HOME = {"entities": [{"name": "Lisbon", "kind": "PLACE"}],
        "relations": [rel("User", "LIVES_IN", "Lisbon", f"we moved to Lisbon {XSS}")]}


@pytest.fixture
def page(settings, user_id):
    """A client of the app, alice's memory with two conversations (March and April)."""
    # rank_own 0: the search test needs a memory shown as a relation line, whose words rank
    # under the floor; the user's own-life prior would lift them into the quotes.
    configured = settings.model_copy(update={"api_keys": {KEY_A: f"{user_id}-a",
                                                          KEY_B: f"{user_id}-b"},
                                             "rank_own": 0.0})
    with Memory(configured) as memory:
        alice = f"{user_id}-a"
        memory.commit(alice, "c-work", WORK, at=datetime(2026, 3, 1, 9, tzinfo=UTC))
        memory.commit(alice, "c-home", HOME, at=datetime(2026, 4, 2, 9, tzinfo=UTC))
        with TestClient(create_app(memory), base_url="http://testserver") as client:
            yield client, memory, alice, f"{user_id}-b"


def sign_in(client: TestClient, key: str) -> str:
    """Sign in; the session's CSRF token, read from the page as a browser's form would."""
    answer = client.post("/sign-in", data={"key": key}, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/memories"
    return csrf_of(client.get("/memories").text)


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([0-9a-f]+)"', html).group(1)


def test_sign_in_sets_an_httponly_strict_cookie_that_is_not_the_key(page):
    client = page[0]
    form = client.get("/")
    assert form.status_code == 200 and '<input id="key" name="key" type="password"' in form.text
    assert 'method="post" action="/sign-in"' in form.text
    wrong = client.post("/sign-in", data={"key": "not-a-key-123"}, follow_redirects=False)
    assert wrong.status_code == 401 and "not one this server knows" in wrong.text
    assert "set-cookie" not in wrong.headers
    answer = client.post("/sign-in", data={"key": KEY_A}, follow_redirects=False)
    cookie = answer.headers["set-cookie"]
    assert answer.status_code == 303 and answer.headers["location"] == "/memories"
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert "Secure" not in cookie  # plain HTTP here; over HTTPS the cookie is Secure
    value = client.cookies["pegasus_session"]
    assert KEY_A not in value and KEY_A not in answer.headers["location"]
    listing = client.get("/memories")
    assert listing.status_code == 200 and KEY_A not in listing.text
    # Signed in, / goes straight to the list; signing out ends it.
    assert client.get("/", follow_redirects=False).headers["location"] == "/memories"
    out = client.post("/sign-out", data={"csrf": csrf_of(listing.text)}, follow_redirects=False)
    assert out.status_code == 303 and 'pegasus_session=""' in out.headers["set-cookie"]
    assert client.get("/memories", follow_redirects=False).headers["location"] == "/"


def test_over_https_the_cookie_is_secure(page):
    # The fixture's own client, asked for an https URL: a second TestClient ran the app on an
    # event loop of its own beside the lifespan's, and the fixture's shutdown could hang.
    answer = page[0].post("https://testserver/sign-in", data={"key": KEY_A},
                          follow_redirects=False)
    assert "Secure" in answer.headers["set-cookie"]
    plain = page[0].post("/sign-in", data={"key": KEY_A}, follow_redirects=False)
    assert "Secure" not in plain.headers["set-cookie"]


def test_a_forged_or_expired_cookie_signs_nobody_in(page):
    client = page[0]
    sign_in(client, KEY_A)
    good = client.cookies["pegasus_session"]
    fingerprint, expires, nonce, mac = good.split(".")
    forged = [f"{fingerprint}.{int(expires) + 999}.{nonce}.{mac}",  # a longer life
              f"{fingerprint}.{expires}.{nonce}.{'0' * len(mac)}",
              f"{'0' * 32}.{expires}.{nonce}.{mac}", KEY_A, "", "a.b.c"]
    for value in forged:
        client.cookies.clear()
        client.cookies.set("pegasus_session", value)
        assert client.get("/memories", follow_redirects=False).headers["location"] == "/", value
    # A session signed now but already expired (lifetime 0 would be refused by the settings).
    sessions = client.app.state.page_sessions
    sessions.lifetime_s = -10
    client.cookies.clear()
    client.cookies.set("pegasus_session", sessions.issue(KEY_A))
    sessions.lifetime_s = 3600
    assert client.get("/memories", follow_redirects=False).status_code == 303


def test_every_page_answer_carries_the_content_security_policy(page):
    client = page[0]
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
    assert "frame-ancestors 'none'" in CSP and "form-action 'self'" in CSP
    answers = [client.get("/"), client.get("/static/page.css"), client.get("/static/page.js"),
               client.post("/sign-in", data={"key": "wrong-key-000"})]
    sign_in(client, KEY_A)
    answers += [client.get("/memories"), client.get("/memories/nope"), client.get("/search"),
                client.post("/memories/nope/forget", data={"csrf": "bad"})]
    assert [a.status_code for a in answers] == [200, 200, 200, 401, 200, 404, 200, 403]
    for answer in answers:
        assert answer.headers["content-security-policy"] == CSP
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert answers[1].headers["content-type"].startswith("text/css")
    assert client.get("/static/../app.py").status_code == 404
    assert client.get("/static/nope.css").status_code == 404
    # No inline script or style anywhere the page renders: the policy would block it.
    for html in [answers[0].text, answers[4].text]:
        assert "<style" not in html and " style=" not in html
        assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/page.js" defer>']


def test_the_list_is_most_recent_first_with_words_day_strength_and_state(page):
    client, memory, alice, _ = page
    sign_in(client, KEY_A)
    html = client.get("/memories").text
    # Each memory a sentence in the person's words; no relation code, no "User".
    order = [html.index(w) for w in ("You live in Lisbon", "Your boss is Sarah",
                                     "You work at Acme")]
    assert order == sorted(order)  # April first, then March (by relation on the same day)
    assert "HAS_BOSS" not in html and "LIVES_IN" not in html and "User" not in html
    assert "my boss Sarah moved the deadline again" in html
    assert '<time datetime="2026-04-02">2026-04-02</time> in conversation <code>c-home</code>' \
        in html
    # Strength in words, decayed to now (these memories are months old by the real clock).
    for edge in memory.memories(alice):
        assert f'<span class="state">{state_words(edge.state, edge.strength_now)}</span>' in html
    # At a glance: counts and the last activity; the filters folded.
    glance = re.search(r'<p class="glance".*?</p>', html, re.S).group(0)
    assert re.sub(r"<[^>]+>|\s+", " ", glance).split() == [
        "3", "active", "memories", "1", "person", "1", "place", "0", "topics", "0", "new",
        "this", "week", "last", "activity", "2026-04-02"]
    assert '<details class="card filters-fold">' in html
    boss = memory.memories(alice, about="Sarah")[0]
    memory.retract(alice, boss.id)
    assert '<span class="state">marked wrong: never recalled</span>' in client.get(
        "/memories").text
    about = client.get("/memories", params={"about": "Sarah K"}).text
    assert "Your boss is Sarah" in about and "You live in Lisbon" not in about
    assert '<details class="card filters-fold" open>' in about
    march = client.get("/memories", params={"said_from": "2026-03-01",
                                            "said_until": "2026-03-31"}).text
    assert "Your boss is Sarah" in march and "You live in Lisbon" not in march
    april = client.get("/memories", params={"said_from": "2026-04-02"}).text
    assert "You live in Lisbon" in april and "Your boss is Sarah" not in april
    faded = client.get("/memories", params={"state": "retracted"}).text
    assert "Your boss is Sarah" in faded and "You work at Acme" not in faded
    places = client.get("/memories", params={"kind": "PLACE"}).text
    assert "You live in Lisbon" in places and "You work at Acme" not in places
    assert client.get("/memories", params={"kind": "SPACESHIP"}).status_code == 400
    bad = client.get("/memories", params={"said_from": "yesterday"})
    assert bad.status_code == 400 and "must be a day like" in bad.text


def test_the_list_pages(page, monkeypatch):
    client = page[0]
    monkeypatch.setattr("pegasus.serve.page.PAGE_SIZE", 2)
    sign_in(client, KEY_A)
    first = client.get("/memories").text
    assert first.count('class="memory ') == 2 and 'rel="next"' in first
    second = client.get("/memories", params={"page": 2}).text
    assert second.count('class="memory ') == 1 and 'rel="next"' not in second
    assert 'rel="prev"' in second and "You work at Acme" in second


def test_stored_markup_is_shown_as_text(page):
    client, memory, alice, _ = page
    sign_in(client, KEY_A)
    [home] = memory.memories(alice, about="Lisbon")
    for path in ["/memories", f"/memories/{home.id}", f"/entities/{home.target_id}"]:
        html = client.get(path).text
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html, path
        assert "&lt;img src=x onerror=alert(1)&gt;" in html, path
        assert "<img" not in html and "<script>" not in html, path


def test_a_memory_page_shows_its_history(page):
    client, memory, alice, _ = page
    memory.commit(alice, "c-again", {"relations": [rel("User", "HAS_BOSS", "Sarah",
                                                       "Sarah is still my boss")]},
                  at=datetime(2026, 5, 1, tzinfo=UTC))
    [boss] = memory.memories(alice, about="Sarah")
    memory.close_conversation(alice, "c-again")
    sign_in(client, KEY_A)
    html = client.get(f"/memories/{boss.id}").text
    assert "<h1 class=\"state-current\">Your boss is Sarah</h1>" in html
    assert "<code>c-work</code>" in html and "<code>c-again</code>" in html
    assert "Sarah is still my boss" in html and "2026-05-01" in html
    # The code only in the details; "used" true as of now: reads on an open conversation.
    assert html.index("HAS_BOSS") > html.index("<summary>Details</summary>")
    assert "Strengthened 1 time" in html and "still open" not in html
    shown = memory.recall(alice, "my boss Sarah", conversation_id="c-open",
                          at=datetime(2026, 5, 2, tzinfo=UTC))
    assert boss.id in shown.edge_ids
    memory.settle_reads()
    html = client.get(f"/memories/{boss.id}").text
    assert "Brought into 1 conversation still open (<code>c-open</code>)" in html


def test_search_shows_what_is_recalled_in_plain_words_and_the_block_folded(page):
    client, memory, alice, _ = page
    csrf = sign_in(client, KEY_A)

    def search(asked: str) -> tuple[str, str, str]:
        block = memory.recall(alice, asked).render()
        html = client.post("/search", data={"csrf": csrf, "q": asked}).text
        shown = html[html.index("What your assistant would be reminded of"):
                     html.index("<details")]
        for code in ("[MEMORY]", "[CONTEXT]", "LIVES_IN", "HAS_BOSS", "-[", "]->", "\\"):
            assert code not in shown, code
        assert "<script>" not in html
        # What the model gets, exactly, folded for whoever wants it.
        folded = re.search(r'<details class="card detail">\s*<summary>What the model '
                           r'receives, exactly</summary>\s*<pre class="block">(.*?)</pre>',
                           html, re.S).group(1)
        assert folded.replace("&#34;", '"').replace("&#39;", "'").replace("&lt;", "<").replace(
            "&gt;", ">").replace("&amp;", "&") == block
        return block, shown, html

    # A memory as the list says it, with its dates.
    block, shown, _ = search("where do I live, and what about my boss Sarah")
    assert "User -[LIVES_IN]-> Lisbon (since 2026-04-02)" in block
    lines = re.findall(r'<p class="line"><a href="/memories/[^"]+">([^<]+)</a>', shown)
    assert lines == ["You live in Lisbon"]
    assert 'since <time datetime="2026-04-02">2026-04-02</time>' in shown
    # The person's words as they said them (escaped as text, no backslashes), with the day.
    block, shown, _ = search("we moved to Lisbon, and my boss Sarah moved the deadline")
    assert "alert\\(1\\)" in block
    quotes = re.findall(r'<blockquote class="words">“(.*?)”</blockquote>', shown, re.S)
    assert "we moved to Lisbon &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; and " \
        "&lt;img src=x onerror=alert(1)&gt;" in quotes
    assert "my boss Sarah moved the deadline again" in quotes
    assert 'said <time datetime="2026-04-02">2026-04-02</time>' in shown
    assert client.post("/search", data={"q": "Sarah"}).status_code == 403


def test_another_key_sees_only_its_own_memory(page, raw_driver):
    client, memory, alice, bruno = page
    [boss] = memory.memories(alice, about="Sarah")
    csrf = sign_in(client, KEY_B)
    listing = client.get("/memories").text
    assert "No memory matches." in listing and "Sarah" not in listing
    before = snapshot(raw_driver)
    for path in [f"/memories/{boss.id}", f"/entities/{boss.target_id}",
                 f"/entities/{boss.source_id}"]:
        answer = client.get(path)
        assert answer.status_code == 404 and "Sarah" not in answer.text, path
        assert "deadline" not in answer.text
    assert client.get("/entities/Sarah").status_code == 404  # by name: none of bruno's
    probes = [(f"/memories/{boss.id}/forget", {}), (f"/memories/{boss.id}/retract", {}),
              (f"/entities/{boss.target_id}/rename", {"name": "Sara"}),
              (f"/entities/{boss.target_id}/forget", {"confirm": "yes"}),
              (f"/entities/{boss.target_id}/merge", {"absorb": boss.source_id})]
    for path, form in probes:
        assert client.post(path, data={"csrf": csrf, **form}).status_code == 404, path
    assert client.get("/memories", params={"about": "Sarah"}).status_code == 404
    assert snapshot(raw_driver) == before
    assert len(memory.memories(alice, state="all")) == 3


def test_a_change_without_the_token_or_from_another_site_is_refused(page, raw_driver):
    client, memory, alice, _ = page
    [boss] = memory.memories(alice, about="Sarah")
    csrf = sign_in(client, KEY_A)
    before = snapshot(raw_driver)
    attempts = [({}, {}), ({"csrf": "0" * 64}, {}), ({"csrf": csrf[:-1]}, {}),
                ({"csrf": csrf}, {"Origin": "https://evil.example"}),
                ({"csrf": csrf}, {"Sec-Fetch-Site": "cross-site"}),
                ({"csrf": csrf}, {"Origin": "null"})]
    for form, headers in attempts:
        answer = client.post(f"/memories/{boss.id}/forget", data=form, headers=headers)
        assert answer.status_code == 403 and "Reload the page" in answer.text, (form, headers)
    refused = client.post("/sign-in", data={"key": KEY_A},
                          headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403
    assert snapshot(raw_driver) == before
    # A session's token is its own: bruno's token does not work with alice's session.
    other = TestClient(client.app)
    assert csrf != sign_in(other, KEY_B)
    done = client.post(f"/memories/{boss.id}/forget", data={"csrf": csrf, "confirm": "yes"},
                       headers={"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"})
    assert done.status_code == 200 and "The memory is forgotten" in done.text
    assert memory.memories(alice, about="Sarah") == []


def test_correct_rename_alias_merge_and_undo(page):
    client, memory, alice, _ = page
    csrf = sign_in(client, KEY_A)
    [boss] = memory.memories(alice, about="Sarah")
    sarah, user = boss.target_id, boss.source_id
    entity = client.get(f"/entities/{sarah}").text
    assert "also called Sarah K" in entity and "<svg" in entity
    assert f'href="/entities/{user}"' in entity  # the neighbour, drawn and linked
    renamed = client.post(f"/entities/{sarah}/rename", data={"csrf": csrf, "name": "Sara"})
    assert renamed.status_code == 200 and "Sara" in renamed.text
    assert memory.entity(alice, sarah).name == "Sara"
    client.post(f"/entities/{sarah}/aliases", data={"csrf": csrf, "add": "SK"})
    client.post(f"/entities/{sarah}/aliases", data={"csrf": csrf, "remove": "Sarah K"})
    assert memory.entity(alice, sarah).aliases == ["SK"]
    [acme] = memory.memories(alice, about="Acme")
    merged = client.post(f"/entities/{sarah}/merge", data={"csrf": csrf, "absorb": "Acme"})
    assert merged.status_code == 200 and "Undo this merge" in merged.text
    assert "Acme and Sara are one now" in merged.text and "edges moved" not in merged.text
    assert "Acme" in memory.entity(alice, sarah).aliases
    record = re.search(r'action="/merges/([^/]+)/undo"', merged.text).group(1)
    assert record in client.get("/merges").text
    undone = client.post(f"/merges/{record}/undo", data={"csrf": csrf})
    assert undone.status_code == 200 and "The merge is undone" in undone.text
    assert memory.entity(alice, acme.target_id).name == "Acme"
    retracted = client.post(f"/memories/{boss.id}/retract", data={"csrf": csrf})
    assert "“Your boss is Sara” is marked wrong" in retracted.text
    assert '<input type="hidden" name="undo" value="true">' in retracted.text  # its undo
    assert memory.memory(alice, boss.id).memory.state == "retracted"
    client.post(f"/memories/{boss.id}/retract", data={"csrf": csrf, "undo": "true"})
    assert memory.memory(alice, boss.id).memory.state == "current"
    taken = client.post(f"/entities/{sarah}/rename", data={"csrf": csrf, "name": "Acme"})
    assert taken.status_code == 400 and "already names another entity" in taken.text


def test_correct_a_memory_on_its_page_and_undo_it(page):
    client, memory, alice, bruno = page
    csrf = sign_in(client, KEY_A)
    [home] = memory.memories(alice, about="Lisbon")
    form = client.get(f"/memories/{home.id}").text
    assert f'action="/memories/{home.id}/correct"' in form and 'value="Lisbon"' in form
    fixed = client.post(f"/memories/{home.id}/correct", data={
        "csrf": csrf, "other_end": "Porto", "words": "we moved to Porto in the spring",
        "since": "2026-04-02", "until": ""})
    assert fixed.status_code == 200, fixed.text
    assert "“You live in Lisbon” now reads “You live in Porto”." in fixed.text
    assert "In your words: “we moved to Porto in the spring”." in fixed.text
    [now] = memory.memories(alice, about="Porto")
    assert (now.snippet, now.corrects) == ("we moved to Porto in the spring", home.id)
    assert now.created_at == home.created_at  # the unchanged "since" day left the date alone
    assert "we moved to Porto in the spring" in memory.recall(alice, "where do I live").render()
    old = client.get(f"/memories/{home.id}").text
    assert "corrected by you on this page" in old and f'href="/memories/{now.id}"' in old
    assert 'action="/memories/' + home.id + '/correct"' not in old  # history is not edited
    undo = re.search(r'action="(/memories/[^"]+/correct/undo)"', fixed.text).group(1)
    # Bruno cannot undo alice's correction, even with his own valid session.
    other = TestClient(client.app)
    other_csrf = sign_in(other, KEY_B)
    assert other.post(undo, data={"csrf": other_csrf}).status_code == 404
    assert other.post(f"/memories/{home.id}/correct",
                      data={"csrf": other_csrf, "words": "x"}).status_code == 404
    undone = client.post(undo, data={"csrf": csrf})
    assert undone.status_code == 200 and "“You live in Lisbon” is back" in undone.text
    assert [m.id for m in memory.memories(alice, about="Lisbon")] == [home.id]
    nothing = client.post(f"/memories/{home.id}/correct", data={
        "csrf": csrf, "other_end": "Lisbon", "words": home.snippet,
        "since": home.created_at[:10]})
    assert nothing.status_code == 400 and "changes nothing" in nothing.text


def test_forgetting_a_memory_asks_first_and_the_icon_is_served(page):
    client, memory, alice, _ = page
    csrf = sign_in(client, KEY_A)
    [boss] = memory.memories(alice, about="Sarah")
    asked = client.get(f"/memories/{boss.id}/forget")
    assert asked.status_code == 200 and "Forget this memory?" in asked.text
    assert '<input type="hidden" name="confirm" value="yes">' in asked.text
    # A POST without the confirmation (one click, or an old form) only asks.
    once = client.post(f"/memories/{boss.id}/forget", data={"csrf": csrf})
    assert once.status_code == 200 and "Forget this memory?" in once.text
    assert len(memory.memories(alice, about="Sarah")) == 1
    done = client.post(f"/memories/{boss.id}/forget", data={"csrf": csrf, "confirm": "yes"})
    assert "“Your boss is Sarah” is erased, with your words" in done.text
    assert "This cannot be undone." in done.text and "user id" not in done.text
    assert memory.memories(alice, about="Sarah") == []
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
    assert icon.text.startswith("<svg")


def test_forget_an_entity_a_conversation_and_everything(page):
    client, memory, alice, _ = page
    csrf = sign_in(client, KEY_A)
    [acme] = memory.memories(alice, about="Acme")
    unconfirmed = client.post(f"/entities/{acme.target_id}/forget", data={"csrf": csrf})
    assert unconfirmed.status_code == 400 and len(memory.memories(alice)) == 3
    gone = client.post(f"/entities/{acme.target_id}/forget",
                       data={"csrf": csrf, "confirm": "yes"})
    assert gone.status_code == 200 and "Acme is forgotten" in gone.text
    assert "Erased it and 1 memory about it." in gone.text
    assert [m.relation for m in memory.memories(alice)] == ["HAS_BOSS", "LIVES_IN"]
    conversation = client.post("/forget/conversation",
                               data={"csrf": csrf, "conversation": "c-home"})
    assert conversation.status_code == 200 and \
        "Erased 1 conversation and 1 memory only it taught." in conversation.text
    assert [m.relation for m in memory.memories(alice)] == ["HAS_BOSS"]
    wrong = client.post("/forget/everything", data={"csrf": csrf, "confirm": "yes"})
    assert wrong.status_code == 400 and "Type the word everything" in wrong.text
    assert len(memory.memories(alice)) == 1
    everything = client.post("/forget/everything", data={"csrf": csrf, "confirm": "everything"})
    assert everything.status_code == 200 and "Everything is forgotten" in everything.text
    assert memory.memories(alice, state="all") == []


def test_export_download_and_import_upload_with_its_checks(page):
    client, memory, alice, bruno = page
    sign_in(client, KEY_A)
    exported = client.get("/export")
    assert exported.status_code == 200
    assert exported.headers["content-disposition"].startswith("attachment")
    body = exported.text
    lines = [json.loads(line) for line in body.splitlines()]
    assert lines[0]["type"] == "header" and lines[0]["user_id"] == alice
    assert sum(1 for line in lines if line["type"] == "memory") == 3
    # An id lives in one partition of a server (design §11): alice's memory moves to bruno.
    memory.forget_everything(alice)
    other = TestClient(client.app)
    csrf = sign_in(other, KEY_B)
    bad = other.post("/import", data={"csrf": csrf}, files={
        "file": ("m.jsonl", body.replace('"version":1', '"version":7'), "application/x-ndjson")})
    # The status the API answers the same error with (pegasus.errors: InvalidExportError).
    assert bad.status_code == 422 and "Line 1: version: format version 7" in bad.text
    assert memory.memories(bruno, state="all") == []
    done = other.post("/import", data={"csrf": csrf},
                      files={"file": ("m.jsonl", body, "application/x-ndjson")})
    assert done.status_code == 200 and "Imported" in done.text
    assert "Imported 3 memories" in done.text and "<dt>" not in done.text
    assert {m.relation for m in memory.memories(bruno)} == {"HAS_BOSS", "WORKS_AT", "LIVES_IN"}
    again = other.post("/import", data={"csrf": csrf},
                       files={"file": ("m.jsonl", body, "application/x-ndjson")})
    assert again.status_code == 409 and "Your memory is not empty" in again.text
    assert "--replace" not in again.text and "Which one?" not in again.text
    replaced = other.post("/import", data={"csrf": csrf, "replace": "true"},
                          files={"file": ("m.jsonl", body, "application/x-ndjson")})
    assert replaced.status_code == 200 and "forgotten first" in replaced.text
    assert "True" not in replaced.text
    assert other.post("/import", files={"file": ("m.jsonl", body)}).status_code == 403


def test_an_upload_is_refused_by_its_size_before_it_is_read_and_nobody_can_upload(page):
    client, memory, alice, _ = page
    body = "x" * 5000
    # No session: sent to sign in, nothing read or imported.
    nobody = TestClient(client.app).post("/import", files={"file": ("m.jsonl", body)},
                                         follow_redirects=False)
    assert nobody.status_code == 303 and nobody.headers["location"] == "/"
    csrf = sign_in(client, KEY_A)
    memory.settings.max_upload_bytes = 1000
    big = client.post("/import", data={"csrf": csrf}, files={"file": ("m.jsonl", body)})
    assert big.status_code == 400 and "at most 0 MiB" in big.text
    assert len(memory.memories(alice)) == 3


def test_a_far_day_filter_and_the_cdn_docs_pages(page):
    client, *_ = page
    sign_in(client, KEY_A)
    assert client.get("/memories?said_until=9999-12-31").status_code == 200
    assert client.get("/memories?said_from=0001-01-01").status_code == 200
    # FastAPI's /docs and /redoc would run a CDN's script on this origin: they are off.
    assert client.get("/docs").status_code == 404
    assert client.get("/redoc").status_code == 404
    assert client.get("/openapi.json").status_code == 200


def test_a_wrong_address_or_a_forms_address_is_a_page_in_words_and_the_api_keeps_json(page):
    client = page[0]

    def a_page(answer, status: int, back: str) -> str:
        assert answer.status_code == status, answer.text
        assert answer.headers["content-type"].startswith("text/html")
        assert answer.headers["content-security-policy"] == CSP
        html = answer.text
        assert html.startswith("<!doctype html>") and '<html lang="en">' in html
        assert '"detail"' not in html and "Not Found" not in html
        assert str(status) not in re.search(r"<title>(.*?)</title>", html).group(1)
        assert f'href="{back}"' in html
        return html

    # Signed out, a mistyped address still answers in words, with the way back to sign in.
    html = a_page(client.get("/memory"), 404, "/")
    assert "<title>Not found · Pegasus</title>" in html and "Sign in to see your memories" in html
    sign_in(client, KEY_A)
    for path in ["/memory", "/entity/x", "/nope/deeper", "/static/"]:
        html = a_page(client.get(path), 404, "/memories")
        assert "There is no page at this address" in html and "Back to your memories" in html
    for path in ["/merges/abc/undo", "/sign-out", "/forget/everything", "/forget/conversation",
                 "/import", "/import-history"]:
        answer = client.get(path)
        html = a_page(answer, 405, "/memories")
        assert "<title>Nothing to show here · Pegasus</title>" in html, path
        assert "only takes a form sent from your memory page" in html
        assert answer.headers["allow"] == "POST"
    # The sign-in form's own address goes to the form (signed in: on to the memories).
    assert client.get("/sign-in", follow_redirects=False).headers["location"] == "/"
    # The API, the probes and the schema keep FastAPI's JSON errors.
    for method, path, status in [("GET", "/v1/nope", 404), ("GET", "/v1/memory/recall", 405),
                                 ("POST", "/healthz", 405), ("GET", "/metrics/x", 404),
                                 ("POST", "/openapi.json", 405)]:
        answer = client.request(method, path)
        assert answer.status_code == status, path
        assert answer.headers["content-type"] == "application/json", path
        assert answer.json() == {"detail": "Not Found" if status == 404
                                 else "Method Not Allowed"}, path


def test_a_correction_is_undone_from_its_own_page_and_the_old_one_links_to_it(page):
    client, memory, alice, _ = page
    csrf = sign_in(client, KEY_A)
    [home] = memory.memories(alice, about="Lisbon")
    client.post(f"/memories/{home.id}/correct", data={"csrf": csrf, "other_end": "Porto",
                                                      "words": home.snippet})
    [now] = memory.memories(alice, about="Porto")
    old = client.get(f"/memories/{home.id}").text
    assert f'href="/memories/{now.id}">see the correction</a> (you can undo it there)' in old
    mine = client.get(f"/memories/{now.id}").text
    assert f'action="/memories/{now.id}/correct/undo"' in mine and "Undo the correction" in mine
    assert f'You corrected <a href="/memories/{home.id}">an earlier version</a>' in mine
    undone = client.post(f"/memories/{now.id}/correct/undo", data={"csrf": csrf})
    assert undone.status_code == 200 and "“You live in Lisbon” is back" in undone.text
    assert [m.id for m in memory.memories(alice, about="Lisbon")] == [home.id]
    # Said again in a conversation, a correction is the person's own: no undo offered.
    client.post(f"/memories/{home.id}/correct", data={"csrf": csrf, "other_end": "Braga",
                                                      "words": home.snippet})
    [braga] = memory.memories(alice, about="Braga")
    memory.commit(alice, "c-braga", {"relations": [rel("User", "LIVES_IN", "Braga",
                                                       "Braga is home now")]},
                  at=datetime(2026, 5, 1, tzinfo=UTC))
    kept = client.get(f"/memories/{braga.id}").text
    assert "/correct/undo" not in kept and "It can no longer be undone" in kept


def test_correction_dates_that_make_no_sense_are_refused_and_a_date_is_said_in_words(page):
    client, memory, alice, _ = page
    csrf = sign_in(client, KEY_A)
    [home] = memory.memories(alice, about="Lisbon")
    form = {"csrf": csrf, "words": home.snippet}  # as the form sends it: its words as they are

    def held() -> list[tuple[str, str, str | None, str | None]]:
        return [(m.id, m.state, m.created_at, m.expires_at)
                for m in memory.memories(alice, state="all")]

    before = held()
    backwards = client.post(f"/memories/{home.id}/correct", data={
        **form, "since": "2026-04-02", "until": "2026-01-31"})
    assert backwards.status_code == 400
    assert "It would end (until 2026-01-31) before it began (since 2026-04-02)" in \
        backwards.text and "nothing was changed" in backwards.text
    ahead = client.post(f"/memories/{home.id}/correct", data={**form, "since": "2999-01-01"})
    assert ahead.status_code == 400 and "a day still to come" in ahead.text
    assert held() == before
    # The HTTP API and the library refuse the same, with nothing changed.
    api = client.patch(f"/v1/memory/edges/{home.id}", headers={"Authorization": f"Bearer {KEY_A}"},
                       json={"until": "2026-01-31T00:00:00Z"})
    assert api.status_code == 400 and "before it began" in api.json()["error"]["message"]
    with pytest.raises(InvalidInputError, match="a day still to come"):
        memory.correct_memory(alice, home.id, since=datetime(2999, 1, 1, tzinfo=UTC))
    assert held() == before
    # A change of dates only is said in words, not "X now reads X".
    ended = client.post(f"/memories/{home.id}/correct", data={**form, "until": "2026-12-31"})
    assert ended.status_code == 200, ended.text
    assert "now reads" not in ended.text
    assert "“You live in Lisbon” is now true until 2026-12-31." in ended.text
    [now] = memory.memories(alice, about="Lisbon")
    both = client.post(f"/memories/{now.id}/correct", data={
        **form, "since": "2026-01-05", "until": "2026-06-30"})
    assert "“You live in Lisbon” is now true from 2026-01-05 until 2026-06-30." in both.text


def test_messages_are_plain_words_without_ids_flags_or_status_codes(page):
    client, memory, alice, _ = page
    csrf = sign_in(client, KEY_A)
    [boss] = memory.memories(alice, about="Sarah")
    you, sarah = boss.source_id, boss.target_id

    def problem(answer) -> tuple[str, str]:
        html = answer.text
        title = re.search(r"<title>(.*?) · Pegasus</title>", html).group(1)
        said = re.search(r'<p class="problem" role="alert">(.*?)</p>', html, re.S).group(1)
        for hidden in (alice, you, sarah, boss.id, "node", "--", "`", "user_id"):
            assert hidden not in said, (hidden, said)
        assert not title.isdigit() and str(answer.status_code) not in title
        return title, said

    # The person's own node: what forgetting it means, and where to do that.
    page_you = client.get(f"/entities/{you}").text
    assert f'action="/entities/{you}/forget"' not in page_you
    assert 'forgetting you would forget everything' in page_you
    assert 'href="/data#forget-everything"' in page_you
    title, said = problem(client.post(f"/entities/{you}/forget",
                                      data={"csrf": csrf, "confirm": "yes"}))
    assert title == "That was not done"
    assert said.startswith("This is you: forgetting you would forget everything") and \
        "type the word everything under “Forget everything”" in said
    assert len(memory.memories(alice)) == 3
    # No id of a memory, an entity or the user in what the page says.
    title, said = problem(client.get("/memories/no-such-memory"))
    assert (title, said) == ("Not found", "This memory is not in your memory: it may have been "
                                          "forgotten, or the link is old")
    title, said = problem(client.post(f"/entities/{sarah}/merge",
                                      data={"csrf": csrf, "absorb": "Nobody Here"}))
    assert said == "Nothing in your memory goes by that name"
    title, said = problem(client.post(f"/entities/{sarah}/rename",
                                      data={"csrf": csrf, "name": "Acme"}))
    assert "already names another entity (Acme)" in said
    title, said = problem(client.post("/merges/no-such-merge/undo", data={"csrf": csrf}))
    assert said.startswith("That merge is not in your memory")
    # Empty fields are refused in words, nothing changed.
    title, said = problem(client.post(f"/entities/{sarah}/aliases",
                                      data={"csrf": csrf, "add": "  "}))
    assert said == "Type the other name first; nothing was changed"
    assert memory.entity(alice, sarah).aliases == ["Sarah K"]
    title, said = problem(client.post(f"/entities/{sarah}/rename",
                                      data={"csrf": csrf, "name": ""}))
    assert said == "Type its right name first; nothing was changed"
    # Forgetting a conversation that is not there says so.
    nothing = client.post("/forget/conversation", data={"csrf": csrf, "conversation": "c-nope"})
    assert nothing.status_code == 200
    assert "<title>Nothing to forget · Pegasus</title>" in nothing.text
    assert "<h1>Nothing to forget</h1>" in nothing.text and "is forgotten" not in nothing.text
    assert len(memory.memories(alice)) == 3


def test_a_forget_result_names_the_erased_memories(page):
    client, memory, alice, _ = page
    csrf = sign_in(client, KEY_A)
    [acme] = memory.memories(alice, about="Acme")
    gone = client.post(f"/entities/{acme.target_id}/forget",
                       data={"csrf": csrf, "confirm": "yes"}).text
    erased = re.search(r'<ul class="erased">(.*?)</ul>', gone, re.S).group(1)
    assert re.findall(r"<li>(.*?)</li>", erased) == [
        "You work at Acme: “I have been at Acme for three years”"]
    conversation = client.post("/forget/conversation",
                               data={"csrf": csrf, "conversation": "c-home"}).text
    assert "<li>You live in Lisbon: “we moved to Lisbon &lt;script&gt;" in conversation
