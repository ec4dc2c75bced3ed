"""The memory page's pure parts: the session token and the neighbourhood picture's layout."""

from __future__ import annotations

import math

import pytest

from pegasus.models.views import MemoryEdge
from pegasus.page.picture import MAX_NAME, MAX_NEIGHBOURS, neighbourhood, timeline_rows
from pegasus.serve.auth import KeyRing
from pegasus.serve.session import Sessions, csrf_matches

KEYS = {"key-alice-0001": "alice", "key-bruno-0002": "bruno"}


def test_a_session_names_its_user_and_holds_no_key():
    sessions = Sessions(KeyRing(KEYS), 3600)
    cookie = sessions.issue("key-alice-0001")
    assert "key-alice-0001" not in cookie
    session = sessions.check(cookie)
    assert session.user == "alice"
    assert csrf_matches(session, session.csrf) and not csrf_matches(session, "")
    # Each sign-in has its own CSRF token.
    assert sessions.check(sessions.issue("key-alice-0001")).csrf != session.csrf


def test_another_key_map_or_a_removed_key_ends_the_session():
    cookie = Sessions(KeyRing(KEYS), 3600).issue("key-alice-0001")
    assert Sessions(KeyRing({"key-alice-0001": "alice"}), 3600).check(cookie) is None
    # Same map in another process (a worker, a replica): the same cookie is accepted.
    assert Sessions(KeyRing(dict(reversed(KEYS.items()))), 3600).check(cookie).user == "alice"


def test_a_tampered_or_expired_session_is_refused():
    sessions = Sessions(KeyRing(KEYS), 3600)
    fingerprint, expires, nonce, mac = sessions.issue("key-bruno-0002").split(".")
    for forged in [f"{fingerprint}.{int(expires) + 1}.{nonce}.{mac}",
                   f"{fingerprint}.{expires}.{nonce[::-1]}.{mac}",
                   f"{fingerprint}.{expires}.{nonce}", "x" * 500, None, ""]:
        assert sessions.check(forged) is None, forged
    assert Sessions(KeyRing(KEYS), -1).check(
        Sessions(KeyRing(KEYS), -1).issue("key-bruno-0002")) is None


def edge(i: int, source: str, target: str, strength: float, state: str = "current",
         relation: str = "KNOWS") -> MemoryEdge:
    return MemoryEdge(id=f"e{i}", source_id=source, source=source.upper(), relation=relation,
                      target_id=target, target=target.upper(), state=state, strength=strength,
                      source_is_self=source == "me", target_is_self=target == "me")


def test_the_picture_puts_the_entity_in_the_middle_and_each_neighbour_once():
    edges = [edge(1, "me", "sarah", 80, relation="HAS_BOSS"),
             edge(2, "sarah", "me", 40, relation="KNOWS"),
             edge(3, "me", "acme", 10, state="dormant", relation="WORKS_AT")]
    picture = neighbourhood("me", "Me", edges)
    wide = picture.wide
    centre = wide.nodes[-1]
    assert (centre.centre, centre.x) == (True, wide.width / 2)
    assert 0 < centre.y < wide.height
    assert [n.name for n in wide.nodes] == ["SARAH", "ACME", "Me"]
    # The relation in words, no arrow, no code; the second memory with Sarah counted.
    assert [n.words for n in wide.nodes[:-1]] == ["your boss is (+1)", "you work at"]
    assert [link.faded for link in wide.links] == [False, True]
    assert picture.any_faded and picture.count == 2
    assert [n.words for n in picture.narrow.nodes[:-1]] == ["your boss is (+1)", "you work at"]
    for node in wide.nodes[:-1]:  # inside the picture, off the centre
        assert 0 < node.x < wide.width and 0 < node.y < wide.height
        assert math.dist((node.x, node.y), (centre.x, centre.y)) > 80
    assert not neighbourhood("me", "Me", edges[:1]).any_faded
    # Seen from Sarah, the person is "You", and what links them is said from there.
    around = neighbourhood("sarah", "SARAH", edges[:2]).wide.nodes
    assert (around[0].name, around[0].words) == ("You", "Your boss is SARAH (+1)")
    knows = neighbourhood("sarah", "SARAH", edges[1:2]).wide.nodes[0]
    assert (knows.name, knows.words) == ("You", "SARAH knows you")
    seen = neighbourhood("acme", "ACME", edges[2:]).wide.nodes[0]
    assert (seen.name, seen.words) == ("You", "You work at ACME")


def _crosses(link, box) -> bool:
    """Whether a line segment passes through a label's box (sampled along the line)."""
    left, top, right, bottom = box
    for k in range(101):
        x = link.x1 + (link.x2 - link.x1) * k / 100
        y = link.y1 + (link.y2 - link.y1) * k / 100
        if left < x < right and top < y < bottom:
            return True
    return False


def _label_box(node, char_w: float = 8.5) -> tuple[float, float, float, float]:
    width = char_w * max(len(node.name), len(node.words))
    left = {"start": node.text_x, "end": node.text_x - width,
            "middle": node.text_x - width / 2}[node.anchor]
    top = min(node.name_y, node.words_y or node.name_y) - 14
    bottom = max(node.name_y, node.words_y) + 4
    return left, top, left + width, bottom


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 9, 12])
@pytest.mark.parametrize("long", [False, True])
def test_no_line_crosses_a_label_and_every_label_fits(n, long):
    edges = [edge(i, "me", f"n{i}" + "x" * 40 * long, 100.0 - i,
                  relation="CONSIDERS_OFFER_FROM_ABROAD" if long else "WORKS_AT")
             for i in range(n)]
    picture = neighbourhood("me", "Me", edges)
    for layout in (picture.wide, picture.narrow):
        for node in layout.nodes[:-1]:
            box = _label_box(node)
            assert box[0] >= 0 and box[2] <= layout.width, (n, node)
            assert box[1] >= 0 and box[3] <= layout.height, (n, node)
            assert not any(_crosses(link, box) for link in layout.links), (n, node.name)


def _line_boxes(node) -> list[tuple[float, float, float, float]]:
    """Each line of a node's label as a box, as wide as its letters could be (bold 16 px
    names, up to 10 units a character; 14 px words, up to 8.2)."""
    boxes = []
    for text, base, char_w, ascent in [(node.name, node.name_y, 10.0, 15),
                                       (node.words, node.words_y, 8.2, 13)]:
        if not text:
            continue
        width = char_w * len(text)
        left = {"start": node.text_x, "end": node.text_x - width,
                "middle": node.text_x - width / 2}[node.anchor]
        boxes.append((left, base - ascent, left + width, base + 4))
    return boxes


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("n", [3, 6, 11, 12, 13, 16, 20])
@pytest.mark.parametrize("long", [False, True])
def test_no_two_labels_of_the_wide_picture_overlap(n, long):
    # The person's own node with many memories (the tester's: 12 neighbours at 1280 px).
    edges = [edge(i, "me", f"n{i}" + "W" * 40 * long, 100.0 - i,
                  relation="CONSIDERS_OFFER_FROM_ABROAD" if long else "INTERESTED_IN")
             for i in range(n)]
    edges += [edge(100 + i, "me", f"n{i}" + "W" * 40 * long, 50.0) for i in range(n)]
    wide = neighbourhood("me", "M" * 40 * long or "You", edges).wide
    labels = [(node.name, box) for node in wide.nodes for box in _line_boxes(node)]
    assert len(labels) == 2 * min(n, MAX_NEIGHBOURS) + 1
    for i, (name, box) in enumerate(labels):
        assert box[0] >= 0 and box[2] <= wide.width and box[1] >= 0 and box[3] <= wide.height
        for other, box2 in labels[i + 1:]:
            assert not _overlap(box, box2), (n, name, other)
        for node in wide.nodes:  # nor over a circle
            r = 26 if node.centre else 16
            assert not _overlap(box, (node.x - r, node.y - r, node.x + r, node.y + r)), name
    # A name or words cut to fit are whole in the tooltip.
    first = wide.nodes[0]
    assert first.full.startswith("N0") and ("W" * 40 in first.full) is long


def test_the_picture_keeps_the_strongest_neighbours_and_cuts_long_names():
    edges = [edge(i, "me", f"n{i:02d}" + "x" * 30, float(i)) for i in range(MAX_NEIGHBOURS + 5)]
    picture = neighbourhood("me", "Me", edges)
    assert picture.left_out == 5 and len(picture.wide.nodes) == MAX_NEIGHBOURS + 1
    first = picture.wide.nodes[0].name
    assert first.startswith("N16") and first.endswith("…") and len(first) == MAX_NAME
    assert neighbourhood("me", "Me", []).wide.nodes[0].centre


def test_the_timeline_runs_by_date_and_says_how_each_memory_ended():
    rows = timeline_rows([
        MemoryEdge(id="b", source_id="me", source="You", relation="LIVES_IN", target_id="l",
                   target="Lisbon", created_at="2026-04-02T09:00:00Z", corrects="a"),
        MemoryEdge(id="a", source_id="me", source="You", relation="LIVES_IN", target_id="p",
                   target="Porto", state="superseded", created_at="2026-03-01T09:00:00Z",
                   superseded_at="2026-04-02T09:00:00Z", corrected_at="2026-04-02T09:00:00Z"),
        MemoryEdge(id="c", source_id="me", source="You", relation="KNOWS", target_id="t",
                   target="Tom", state="retracted", created_at="2026-03-05T09:00:00Z",
                   retracted_at="2026-03-06T09:00:00Z")])
    assert [(r.day, r.edge.id, r.ended, r.how_ended) for r in rows] == [
        ("2026-03-01", "a", "2026-04-02", "corrected by you"),
        ("2026-03-05", "c", "2026-03-06", "marked wrong"),
        ("2026-04-02", "b", None, None)]
