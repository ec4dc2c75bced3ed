"""The memory page in headless Chromium, against `pegasus serve` and the real Neo4j: sign in, list,
search, a memory's history, forget one, export; stored markup stays text; a change from another
site or without the token is refused; another key sees nothing of this memory."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from pegasus import Memory
from pegasus.operations.neo4j_local import free_port
from pegasus.page.words import state_words
from pegasus.serve.app import create_app
from tests.e2e.browsing import axe_violations, page_text
from tests.helpers import rel, snapshot
from tests.serve.servers import serving

KEY_A, KEY_B = "key-browser-alice-1", "key-browser-bruno-2"
XSS = '<script>alert("x")</script> and <img src=x onerror=alert(1)>'
WORK = {"entities": [{"name": "Sarah", "kind": "PERSON", "aliases": ["Sarah K"]},
                     {"name": "Acme", "kind": "ORG"}, {"name": "Lisbon", "kind": "PLACE"}],
        "relations": [rel("User", "HAS_BOSS", "Sarah", "my boss Sarah moved the deadline again"),
                      rel("User", "WORKS_AT", "Acme", "I have been at Acme for three years"),
                      rel("Acme", "LOCATED_IN", "Lisbon", "Acme's office is in Lisbon")]}
HOME = {"entities": [{"name": "Porto", "kind": "PLACE"}],
        "relations": [rel("User", "LIVES_IN", "Porto", f"we moved to Porto {XSS}")]}


@pytest.fixture
def page(settings, user_id):
    """The served app (uvicorn on a loopback port, as `pegasus serve` runs it) with two keys,
    alice's memory committed (March, then April); (URL, the Memory, alice, bruno)."""
    alice, bruno = f"{user_id}-a", f"{user_id}-b"
    keyed = settings.model_copy(update={"api_keys": {KEY_A: alice, KEY_B: bruno}})
    with Memory(keyed) as memory:
        memory.commit(alice, "c-work", WORK, at=datetime(2026, 3, 1, 9, tzinfo=UTC))
        memory.commit(alice, "c-home", HOME, at=datetime(2026, 4, 2, 9, tzinfo=UTC))
        with serving(create_app(memory)) as url:
            yield url, memory, alice, bruno


def sign_in(browser, url: str, key: str) -> None:
    browser.get(url + "/")
    field = browser.find_element(By.CSS_SELECTOR, 'input[name="key"]')
    assert field.get_attribute("type") == "password"
    field.send_keys(key)
    browser.find_element(By.CSS_SELECTOR, "form.sign-in button").click()
    WebDriverWait(browser, 30).until(lambda b: "Your memories" in page_text(b))


def no_alert(browser) -> bool:
    with contextlib.suppress(NoAlertPresentException):
        browser.switch_to.alert  # noqa: B018 - raises when there is none
        return False
    return True


def shoot(browser, tmp_path: Path, name: str) -> None:
    """PEGASUS_SCREENSHOTS=docs/screenshots keeps the pictures (the README shows them)."""
    shot = Path(os.environ.get("PEGASUS_SCREENSHOTS", tmp_path)) / name
    browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@contextlib.contextmanager
def attacker_site(folder: Path):
    """Another origin (same host, another port) serving a page with a form aimed at ours."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def viewport(browser, width: int, height: int) -> None:
    """The page's viewport exactly width × height CSS pixels (a window's size includes its
    frame); a phone's (touch, its own viewport rules) below 600 px."""
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})


def accessible(browser) -> None:
    """No serious or critical axe-core violation on the page shown (contrast AA included)."""
    assert axe_violations(browser) == [], browser.current_url


def wait_for(browser, words: str) -> None:
    WebDriverWait(browser, 30).until(lambda b: words in page_text(b))


def test_a_person_sees_searches_forgets_and_exports_their_memory(page, chromium, raw_driver,
                                                                   tmp_path):
    url, memory, alice, _ = page
    viewport(chromium, 1280, 900)
    chromium.get(url + "/")
    accessible(chromium)
    sign_in(chromium, url, KEY_A)
    assert KEY_A not in chromium.page_source and KEY_A not in chromium.current_url
    cookie = chromium.get_cookie("pegasus_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and KEY_A not in cookie["value"]
    assert chromium.execute_script("return document.cookie") == ""
    # The list: most recent first, each a sentence in the person's words, with the words
    # they said, the day and conversation, and its strength in words; no relation code.
    lines = [e.text for e in chromium.find_elements(By.CSS_SELECTOR, ".memory .line")]
    assert lines == ["You live in Porto", "Acme is in Lisbon", "Your boss is Sarah",
                     "You work at Acme"]
    text = page_text(chromium)
    assert "I have been at Acme for three years" in text
    assert "said 2026-03-01 in conversation c-work" in text
    for edge in memory.memories(alice):  # strength in words, decayed to now (the real clock)
        assert state_words(edge.state, edge.strength_now) in text
    assert "LIVES_IN" not in text and "HAS_BOSS" not in text and "User" not in text
    assert "4 active memories" in text and "last activity 2026-04-02" in text
    # The stored markup is shown as characters; nothing ran, nothing was injected.
    assert f"we moved to Porto {XSS}" in text
    assert no_alert(chromium)
    assert chromium.execute_script("return document.images.length") == 0
    assert chromium.execute_script(
        "return [...document.scripts].map(s => new URL(s.src).pathname)") == ["/static/page.js"]
    accessible(chromium)
    shoot(chromium, tmp_path, "page-memories.png")
    # Filter by entity: the filters are folded until asked for.
    about = chromium.find_element(By.ID, "about")
    assert not about.is_displayed()
    chromium.find_element(By.CSS_SELECTOR, ".filters-fold summary").click()
    about.send_keys("Sarah K")
    chromium.find_element(By.CSS_SELECTOR, "form.filters button").click()
    WebDriverWait(chromium, 30).until(lambda b: "about=Sarah" in b.current_url)
    assert [e.text for e in chromium.find_elements(By.CSS_SELECTOR, ".memory .line")] == [
        "Your boss is Sarah"]
    accessible(chromium)
    # A memory's page: its words, how it is used, its history; the code only in Details.
    chromium.find_element(By.LINK_TEXT, "Your boss is Sarah").click()
    wait_for(chromium, "Its history")
    text = page_text(chromium)
    assert "c-work" in text and "my boss Sarah moved the deadline again" in text
    assert "HAS_BOSS" not in text  # folded in Details
    accessible(chromium)
    shoot(chromium, tmp_path, "page-memory-history.png")
    boss_id = chromium.current_url.rsplit("/", 1)[1]
    # The entity's page: its neighbourhood drawn, each neighbour a link, said in words.
    chromium.find_element(By.LINK_TEXT, "you").click()
    WebDriverWait(chromium, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "svg a.node"))
    drawn = {e.text for e in chromium.find_elements(By.CSS_SELECTOR, "svg.wide a.node text")}
    assert {"Sarah", "Acme", "Porto", "You", "your boss is", "you work at"} <= drawn
    assert not any(t.startswith(("←", "→")) for t in drawn)
    accessible(chromium)
    shoot(chromium, tmp_path, "page-entity-you.png")
    # Keyboard: Tab reaches the picture's neighbours.
    chromium.execute_script("document.activeElement.blur()")
    reached = set()
    for _ in range(40):
        ActionChains(chromium).send_keys(Keys.TAB).perform()
        reached.add(chromium.execute_script(
            "const a = document.activeElement;"
            "return a.closest('svg.wide') ? a.querySelector('text.name').textContent : ''"))
    assert {"Sarah", "Acme", "Porto"} <= reached
    chromium.find_element(By.XPATH, "//*[local-name()='a'][.//*[text()='Acme']]").click()
    WebDriverWait(chromium, 30).until(lambda b: b.find_element(By.TAG_NAME, "h1").text == "Acme")
    assert "Lisbon" in {e.text for e in chromium.find_elements(By.CSS_SELECTOR, "svg text")}
    assert "Acme is in Lisbon" in page_text(chromium)  # its timeline
    accessible(chromium)
    shoot(chromium, tmp_path, "page-entity.png")
    # Search: what a message recalls, in the list's sentences and the person's words; the
    # block the model would get, exactly, folded.
    chromium.find_element(By.LINK_TEXT, "Search").click()
    chromium.find_element(By.ID, "q").send_keys("what did my boss Sarah do")
    chromium.find_element(By.CSS_SELECTOR, "form[role=search] button").click()
    block = WebDriverWait(chromium, 30).until(expected_conditions.presence_of_element_located(
        (By.CSS_SELECTOR, "pre.block")))
    assert not block.is_displayed()
    assert block.get_attribute("textContent") == memory.recall(
        alice, "what did my boss Sarah do").render()
    text = page_text(chromium)
    assert "In your words" in text and "“my boss Sarah moved the deadline again”" in text
    assert "[MEMORY]" not in text and "HAS_BOSS" not in text
    accessible(chromium)
    shoot(chromium, tmp_path, "page-search.png")
    for path in ["/merges", "/data", "/memories/no-such-memory"]:
        chromium.get(url + path)
        accessible(chromium)
    # Forget one memory: asked first, then gone from the database, its words too.
    chromium.get(f"{url}/memories/{boss_id}")
    chromium.find_element(By.LINK_TEXT, "Forget it…").click()
    wait_for(chromium, "Forget this memory?")
    accessible(chromium)
    shoot(chromium, tmp_path, "page-forget-confirm.png")
    chromium.find_element(By.CSS_SELECTOR, "button.danger").click()
    wait_for(chromium, "The memory is forgotten")
    assert "“Your boss is Sarah” is erased" in page_text(chromium)
    accessible(chromium)
    left = raw_driver.execute_query(
        "MATCH ()-[r {id: $id}]->() RETURN count(r) AS edges", id=boss_id).records[0]["edges"]
    words = raw_driver.execute_query(
        "MATCH (s:Snippet {user_id: $u}) WHERE s.text CONTAINS 'deadline' RETURN count(s) AS n",
        u=alice).records[0]["n"]
    assert (left, words) == (0, 0)
    # Export: the downloaded file is this memory, without the forgotten one.
    chromium.find_element(By.PARTIAL_LINK_TEXT, "Export").click()
    chromium.find_element(By.LINK_TEXT, "Download your memory").click()
    exported = chromium.downloads / "pegasus-memory.jsonl"
    deadline = time.monotonic() + 30
    while not exported.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert lines[0]["type"] == "header" and lines[0]["user_id"] == alice
    assert sorted(m["relation"] for m in lines if m["type"] == "memory") == [
        "LIVES_IN", "LOCATED_IN", "WORKS_AT"]
    # The icon every browser asks for is there.
    assert chromium.execute_async_script(
        "fetch('/favicon.ico').then(r => arguments[0](r.status))") == 200


def test_a_person_corrects_a_memory_and_undoes_it(page, chromium, tmp_path):
    url, memory, alice, _ = page
    viewport(chromium, 1280, 900)
    sign_in(chromium, url, KEY_A)
    [home] = memory.memories(alice, about="Porto")
    chromium.find_element(By.LINK_TEXT, "You live in Porto").click()
    wait_for(chromium, "Correct it")
    other_end = chromium.find_element(By.ID, "other_end")
    other_end.clear()
    other_end.send_keys("Braga")
    words = chromium.find_element(By.ID, "words")
    words.clear()
    words.send_keys("we moved to Braga last spring")
    chromium.find_element(By.CSS_SELECTOR, "form.correct button").click()
    wait_for(chromium, "The memory is corrected")
    text = page_text(chromium)
    assert "“You live in Porto” now reads “You live in Braga”." in text
    assert "corrected_id" not in text and "True" not in text  # words, not report fields
    accessible(chromium)
    shoot(chromium, tmp_path, "page-corrected.png")
    assert "we moved to Braga last spring" in memory.recall(alice, "where do I live").render()
    chromium.find_element(By.XPATH, "//button[text()='Undo the correction']").click()
    wait_for(chromium, "The correction is undone")
    assert "“You live in Porto” is back" in page_text(chromium)
    assert [m.id for m in memory.memories(alice, about="Porto")] == [home.id]
    # Retract, with its undo on the result page.
    chromium.get(f"{url}/memories/{home.id}")
    chromium.find_element(By.XPATH, "//button[contains(., 'mark it wrong')]").click()
    wait_for(chromium, "The memory is marked wrong")
    accessible(chromium)
    chromium.find_element(By.XPATH, "//button[text()='Undo: it was right']").click()
    wait_for(chromium, "The memory is active again")
    assert memory.memory(alice, home.id).memory.state == "current"


def test_on_a_phone_the_first_memory_is_on_the_first_screen(page, chromium, tmp_path):
    url, _, alice, _ = page
    viewport(chromium, 390, 844)
    sign_in(chromium, url, KEY_A)
    first = chromium.execute_script(
        "const r = document.querySelector('.memory').getBoundingClientRect();"
        "return [r.top, r.bottom, window.innerHeight, window.innerWidth];")
    assert first[2:] == [844, 390]
    assert first[1] <= first[2], first  # the whole first memory, without scrolling
    assert chromium.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")
    assert not chromium.find_element(By.ID, "about").is_displayed()  # the filters folded
    accessible(chromium)
    shoot(chromium, tmp_path, "page-phone.png")
    chromium.find_element(By.CSS_SELECTOR, ".memory .line a").click()
    wait_for(chromium, "Its history")
    assert chromium.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")
    accessible(chromium)
    shoot(chromium, tmp_path, "page-phone-memory.png")
    chromium.find_element(By.LINK_TEXT, "you").click()
    WebDriverWait(chromium, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "svg.narrow"))
    narrow = chromium.find_element(By.CSS_SELECTOR, "svg.narrow")
    assert narrow.is_displayed() and not chromium.find_element(
        By.CSS_SELECTOR, "svg.wide").is_displayed()
    # Its words at least 13 px on the screen: readable.
    sizes = chromium.execute_script(
        "return [...document.querySelectorAll('svg.narrow text')].map("
        "t => t.getBoundingClientRect().height)")
    assert sizes and min(sizes) >= 13, sizes
    assert chromium.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")
    accessible(chromium)
    shoot(chromium, tmp_path, "page-phone-entity.png")


def test_changes_from_elsewhere_are_refused_and_another_key_sees_nothing(page, chromium,
                                                                          raw_driver, tmp_path):
    url, memory, alice, _ = page
    [boss] = memory.memories(alice, about="Sarah")
    sign_in(chromium, url, KEY_A)
    before = snapshot(raw_driver)
    # A form on the page with a wrong token, and one without: refused, nothing changed.
    for token in ["0" * 64, None]:
        chromium.get(f"{url}/memories/{boss.id}/forget")
        chromium.execute_script(
            "const form = document.querySelector(`form[action$='/forget']`);"
            "const csrf = form.querySelector('[name=csrf]');"
            "if (arguments[0] === null) csrf.remove(); else csrf.value = arguments[0];"
            "form.submit();", token)
        WebDriverWait(chromium, 30).until(lambda b: "Refused" in page_text(b))
    # Another site's page posting to ours with the browser's cookie: refused.
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil" / "index.html").write_text(
        f'<form method="post" action="{url}/memories/{boss.id}/forget">'
        f'<input name="csrf" value="guess"><button id="go">win a prize</button></form>')
    with attacker_site(tmp_path / "evil") as evil:
        chromium.get(evil + "/index.html")
        chromium.find_element(By.ID, "go").click()
        WebDriverWait(chromium, 30).until(lambda b: "Refused" in page_text(b))
    assert snapshot(raw_driver) == before
    # Another key: its own empty memory, and "not found" for every id of alice's.
    chromium.get(url + "/memories")
    chromium.find_element(By.CSS_SELECTOR, "form.sign-out button").click()
    WebDriverWait(chromium, 30).until(lambda b: b.find_elements(By.NAME, "key"))
    sign_in(chromium, url, KEY_B)
    assert "No memory matches." in page_text(chromium) and "Sarah" not in page_text(chromium)
    accessible(chromium)
    for path in [f"/memories/{boss.id}", f"/entities/{boss.target_id}"]:
        chromium.get(url + path)
        assert chromium.find_element(By.TAG_NAME, "h1").text == "Not found"
        assert "Sarah" not in page_text(chromium) and "deadline" not in page_text(chromium)
    assert snapshot(raw_driver) == before


MANY = {"entities": [{"name": name, "kind": kind} for name, kind in [
            ("Photography", "TOPIC"), ("Japan", "PLACE"), ("Tomás", "PERSON"),
            ("Marathon training", "TOPIC"), ("Kyoto", "PLACE"), ("Ana Beatriz", "PERSON"),
            ("Jazz piano", "TOPIC"), ("Lisbon Book Club", "ORG"), ("Rex", "THING"),
            ("Sourdough baking", "TOPIC"), ("Grandmother Lucia", "PERSON"),
            ("Hiking in the Alps", "EVENT"), ("Spanish", "TOPIC"), ("Climbing gym", "ORG")]],
        "relations": [
            rel("User", "INTERESTED_IN", "Photography", "I have been into photography lately"),
            rel("User", "PLANS_TRIP_TO", "Japan", "we are planning a trip to Japan"),
            rel("User", "FRIENDS_WITH", "Tomás", "my friend Tomás called"),
            rel("User", "INTERESTED_IN", "Marathon training", "training for a marathon"),
            rel("User", "WANTS_TO_VISIT", "Kyoto", "I want to see Kyoto"),
            rel("User", "HAS_SISTER", "Ana Beatriz", "my sister Ana Beatriz"),
            rel("User", "LEARNING", "Jazz piano", "learning jazz piano"),
            rel("User", "MEMBER_OF", "Lisbon Book Club", "my book club in Lisbon"),
            rel("User", "OWNS", "Rex", "our dog Rex"),
            rel("User", "ENJOYS", "Sourdough baking", "I bake sourdough on Sundays"),
            rel("User", "VISITS", "Grandmother Lucia", "visiting grandmother Lucia"),
            rel("User", "PLANS_TRIP_TO", "Hiking in the Alps", "hiking in the Alps next summer"),
            rel("User", "LEARNING", "Spanish", "my Spanish lessons"),
            rel("User", "MEMBER_OF", "Climbing gym", "the climbing gym near work")]}


def test_the_picture_of_many_neighbours_keeps_its_labels_apart(page, chromium, tmp_path):
    url, memory, alice, _ = page
    memory.commit(alice, "c-many", MANY, at=datetime(2026, 4, 20, 9, tzinfo=UTC))
    [home] = memory.memories(alice, about="Porto")
    viewport(chromium, 1280, 800)
    sign_in(chromium, url, KEY_A)
    chromium.get(f"{url}/entities/{home.source_id}")
    WebDriverWait(chromium, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "svg a.node"))
    # Every label's box as drawn (its letters, at 1280 px): no two meet.
    boxes = chromium.execute_script(
        "return [...document.querySelectorAll('svg.wide text')].map(t => {"
        "const r = t.getBoundingClientRect();"
        "return [t.textContent, r.left, r.top, r.right, r.bottom]; });")
    assert len(boxes) == 2 * 12 + 1, boxes
    for i, (name, *box) in enumerate(boxes):
        for other, *box2 in boxes[i + 1:]:
            assert not (box[0] < box2[2] and box2[0] < box[2] and box[1] < box2[3]
                        and box2[1] < box[3]), (name, other)
    text = page_text(chromium)
    assert "you are interested in" in text and "you plan a trip to" in text
    assert "—" not in {e.text for e in chromium.find_elements(By.CSS_SELECTOR, "svg text")}
    accessible(chromium)
    shoot(chromium, tmp_path, "page-entity-many.png")
    # The error pages are pages too, in words, and accessible.
    for path, heading in [("/memory", "Not found"), ("/forget/everything", "Nothing to show here")]:
        chromium.get(url + path)
        assert chromium.find_element(By.TAG_NAME, "h1").text == heading
        assert chromium.title == f"{heading} · Pegasus"
        assert chromium.find_element(By.LINK_TEXT, "Back to your memories")
        accessible(chromium)
