"""A memory in the person's words (page/words.py): sentences, never relation codes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pegasus.page.words import label_words, phrase, state_words, strength_words


@pytest.mark.parametrize(("source", "label", "target", "you", "said"), [
    ("User", "LIVES_IN", "Porto", "source", "You live in Porto"),
    ("Ines", "WORKS_AT", "Santo António", None, "Ines works at Santo António"),
    ("User", "WORKS_AT", "Acme", "source", "You work at Acme"),
    ("User", "HAS_BOSS", "Sarah", "source", "Your boss is Sarah"),
    ("Tom", "HAS_BOSS", "User", "target", "Tom's boss is you"),
    ("James", "HAS_SISTER", "Ana", None, "James' sister is Ana"),
    ("User", "HAS_PARTNER", "Ines", "source", "Your partner is Ines"),
    ("User", "KNOWS", "Tom", "source", "You know Tom"),
    ("Sarah", "KNOWS", "User", "target", "Sarah knows you"),
    ("User", "WORRIES_ABOUT", "the move", "source", "You worry about the move"),
    ("User", "PLANS_TRIP_TO", "Japan", "source", "You plan a trip to Japan"),
    ("User", "INTERESTED_IN", "photography", "source", "You are interested in photography"),
    ("Ana", "EMPLOYED_BY", "Acme", None, "Ana is employed by Acme"),
    ("User", "LEARNING", "Spanish", "source", "You are learning Spanish"),
    ("Ana", "SISTER_OF", "User", "target", "Ana is your sister"),
    ("User", "FRIEND_OF", "Tom", "source", "You are Tom's friend"),
    ("User", "FRIENDS_WITH", "Tom", "source", "You are friends with Tom"),
    ("User", "GRADUATED_FROM", "MIT", "source", "You graduated from MIT"),
    ("User", "WORKS_AS", "a nurse", "source", "You work as a nurse"),
    ("User", "LOOKS_AFTER", "Rex", "source", "You look after Rex"),
    ("User", "CONSIDERS_OFFER_FROM", "Globex", "source", "You consider offer from Globex"),
    ("User", "WORKED_WITH", "Priya", "source", "You worked with Priya"),
    ("User", "WANTS_TO_VISIT", "Petra", "source", "You want to visit Petra"),
    ("User", "WATCHES", "Dark", "source", "You watch Dark"),
    ("Ines", "WORKS_NIGHT_SHIFTS", "Santo António", None,
     "Ines works night shifts: Santo António"),
    ("Platform migration", "PART_OF", "Acme", None, "Platform migration is part of Acme"),
    ("Acme", "LOCATED_IN", "Lisbon", None, "Acme is in Lisbon"),
    ("User", "MARRIED_TO", "Ines", "source", "You are married to Ines"),
    ("User", "IS", "a nurse", "source", "You are a nurse"),
    ("User", "HAS", "a dog", "source", "You have a dog"),
    # No rule reads it: its words between the ends, never the code.
    ("Ines", "BLORBS_ZAP", "Acme", None, "Ines — blorbs zap — Acme"),
    ("User", "ZAPPED", "Acme", "source", "You — zapped — Acme"),
    ("Ines", "weird label", "Acme", None, "Ines — weird label — Acme"),
])
def test_memories_read_as_sentences(source, label, target, you, said):
    assert phrase(source, label, target, you == "source", you == "target") == said


@given(st.from_regex(r"[A-Z]{1,8}(_[A-Z0-9]{1,8}){1,3}", fullmatch=True),
       st.sampled_from(["Ines", "User", "Acme Corp"]), st.sampled_from(["Porto", "Tom"]),
       st.booleans())
def test_no_sentence_shows_the_code(label, source, target, self_source):
    said = phrase(source, label, target, self_source)
    assert label not in said and "_" not in said
    assert label_words(label).split()[-1] in said.lower()


def test_strength_and_state_in_words_follow_the_dormant_line():
    assert strength_words(100) == "strong"
    assert strength_words(50) == "strong"
    assert strength_words(49.9) == "fair"
    assert strength_words(14.9) == "fading"
    assert strength_words(2.0) == "fading"
    assert strength_words(1.99) == "dormant: only found when you name it"
    assert strength_words(None) == "strength unknown"
    assert state_words("current", 1.0) == "dormant: only found when you name it"
    assert state_words("current", 80.0) == "strong"
    assert state_words("dormant", 80.0) == "dormant: only found when you name it"
    assert state_words("superseded", 50.0, corrected=True) == "corrected by you"
    assert state_words("superseded", 50.0) == "replaced by a newer memory"
    assert state_words("retracted", 50.0) == "marked wrong: never recalled"
    assert state_words("expired", 50.0) == "ended: its time is over"


def test_what_an_erasure_did_reads_as_sentences():
    from pegasus.page.words import forgotten

    assert forgotten("memory", 1, 0, 0) == [
        "It is erased, with its words, everywhere they were stored.", "This cannot be undone."]
    assert forgotten("entity", 3, 1, 0)[0] == "Erased it and 3 memories about it."
    assert forgotten("conversation", 1, 0, 1, changed=2, revived=1) == [
        "Erased 1 conversation and 1 memory only it taught.",
        "2 memories also said elsewhere are kept, without its words.",
        "1 memory it had replaced is current again.", "This cannot be undone."]
    assert forgotten("everything", 0, 0, 0)[0] == (
        "Erased no memory, no person, place or thing and no conversation.")


def test_messages_on_the_page_name_no_command_line_flag():
    from pegasus.page.words import for_page

    assert for_page("'Acme' already names another entity (Acme, e1); if they are the same, "
                    "merge them (`pegasus correct merge`)") == (
        "'Acme' already names another entity (Acme); if they are the same, merge them")


def test_messages_on_the_page_show_no_id():
    from pegasus.page.words import for_page

    user, memory_id, entity_id = "user-7f3a", "5b0c9e1d-aaaa", "e-42"
    for message in [f"no memory {memory_id!r} in {user}'s memory",
                    f"no entity named {entity_id!r} in {user}'s memory",
                    f"no entity {entity_id!r} in {user}'s memory",
                    f"no merge record {memory_id!r} for this user",
                    f"a memory You -[LIVES_IN]-> that end already exists ({memory_id}); retract "
                    "or forget this one instead; nothing was changed",
                    f"2 entities are named 'Ana': {entity_id} (Ana, PERSON, 1 memories); e-43 "
                    "(Ana, PERSON, 2 memories). Name one by its id; nothing was changed",
                    "'You' is the user's own node: forgetting it is forgetting everything "
                    "(`forget --everything --yes`); nothing was changed"]:
        said = for_page(message)
        for hidden in (user, memory_id, entity_id, "node", "--", "LIVES_IN"):
            assert hidden not in said, (message, said)
    assert for_page(f"no memory {memory_id!r} in {user}'s memory") == (
        "this memory is not in your memory: it may have been forgotten, or the link is old")
    assert "type the word everything" in for_page(
        "'You' is the user's own node: forgetting it is forgetting everything "
        "(`forget --everything --yes`); nothing was changed")
    assert "--replace" not in for_page("import with replace (--replace), which forgets them")
    assert for_page("was interrupted, run `pegasus import --replace` for this user again") == (
        "was interrupted, import the file again with “Replace what is in my memory now” ticked")
    assert for_page("plain words stay") == "plain words stay"
