"""The memory page's pure parts: the session token and the neighbourhood picture's layout."""

from __future__ import annotations

import math

from pegasus.models.views import MemoryEdge
from pegasus.page.picture import MAX_NEIGHBOURS, neighbourhood
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
                      target_id=target, target=target.upper(), state=state, strength=strength)


def test_the_picture_puts_the_entity_in_the_middle_and_each_neighbour_once():
    edges = [edge(1, "me", "sarah", 80, relation="HAS_BOSS"),
             edge(2, "sarah", "me", 40, relation="KNOWS"),
             edge(3, "me", "acme", 10, state="dormant", relation="WORKS_AT")]
    picture = neighbourhood("me", "Me", edges)
    centre = picture.nodes[-1]
    assert (centre.centre, centre.x, centre.y) == (True, picture.width / 2, picture.height / 2)
    assert [n.name for n in picture.nodes] == ["SARAH", "ACME", "Me"]
    assert [link.label for link in picture.links] == ["← KNOWS, → HAS_BOSS", "→ WORKS_AT"]
    assert [link.faded for link in picture.links] == [False, True]
    for node in picture.nodes[:-1]:  # inside the picture, off the centre
        assert 0 < node.x < picture.width and 0 < node.y < picture.height
        assert math.dist((node.x, node.y), (centre.x, centre.y)) > 100


def test_the_picture_keeps_the_strongest_neighbours_and_cuts_long_names():
    edges = [edge(i, "me", f"n{i:02d}" + "x" * 30, float(i)) for i in range(MAX_NEIGHBOURS + 5)]
    picture = neighbourhood("me", "Me", edges)
    assert picture.left_out == 5 and len(picture.nodes) == MAX_NEIGHBOURS + 1
    assert picture.nodes[0].name.startswith("N20") and picture.nodes[0].name.endswith("…")
    assert len(picture.nodes[0].name) == 22
    assert neighbourhood("me", "Me", []).nodes[0].centre
