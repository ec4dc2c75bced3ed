"""Passages of recorded turns (pegasus.passages, design §7.11): whole sentences up to a size,
nothing lost or invented, the person's turns only, a long turn's first and last passages."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from pegasus.passages import (
    PASSAGE_WORDS,
    PASSAGES_PER_TURN,
    Passage,
    conversation_key,
    passages_of,
    split,
)


def test_sentences_are_grouped_up_to_the_passage_size():
    text = "I moved to Porto. " * 3 + "My sister Ines works at Santo António hospital."
    assert split(text, words=8) == ["I moved to Porto. I moved to Porto.",
                                    "I moved to Porto.",
                                    "My sister Ines works at Santo António hospital."]
    assert split("One.\nTwo lines\n\nthree") == ["One. Two lines three"]
    assert split("   ") == [] and split("") == []


def test_a_sentence_longer_than_a_passage_is_cut():
    words = [f"w{i}" for i in range(95)]
    assert [len(p.split()) for p in split(" ".join(words))] == [40, 40, 15]


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]),
               max_size=600))
@example("a. " * 100)
@example("x" * 5000)
def test_no_word_is_lost_or_added_and_none_is_too_long(text):
    found = split(text)
    assert all(0 < len(p.split()) <= PASSAGE_WORDS for p in found)
    assert " ".join(found).split() == text.split()


def test_only_the_persons_turns_give_passages_and_a_long_one_its_ends():
    long = " ".join(f"Sentence number {i} is here." for i in range(200))
    turns = [(0, {"role": "user", "content": "My brother teaches chemistry."}),
             (1, {"role": "assistant", "content": "How lovely, chemistry!"}),
             (2, {"role": "user", "content": long}),
             (3, {"role": "user", "content": None})]
    found = passages_of(turns)
    assert [p.turn for p in found] == [0] + [2] * PASSAGES_PER_TURN
    pieces = split(long)
    assert [p.text for p in found[1:]] == pieces[:4] + pieces[-4:]
    assert [p.place for p in found[1:]] == [0, 1, 2, 3] + list(range(len(pieces) - 4,
                                                                     len(pieces)))


def test_ids_and_keys_never_carry_the_ids_as_written():
    hostile = 'a" OR 1=1 // +user_key:*'
    passage = Passage(turn=3, place=1, text="hi")
    assert passage.id(hostile).endswith(":3:1") and hostile not in passage.id(hostile)
    assert passage.id("a") != passage.id("b")
    key = conversation_key("alice", hostile)
    assert key.startswith("c") and key[1:].isalnum() and len(key) == 33
    # one conversation id under two users is two conversations
    assert conversation_key("alice", "chat") != conversation_key("bob", "chat")


def test_a_continuation_belongs_to_the_conversation_it_continues():
    from pegasus.passages import family

    assert family("chat") == ["chat"]
    assert family("chat.2") == ["chat.2", "chat"]
    assert family("chat.4") == ["chat.4", "chat", "chat.2", "chat.3"]
    assert family("v1.0") == ["v1.0"] and family("a.101") == ["a.101"]
