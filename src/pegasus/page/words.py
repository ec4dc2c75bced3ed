"""A memory in the person's words: "You live in Porto", "Ines works at Santo António".

Pure (no database, no markup). The page shows these sentences first; the relation code stays
in a memory's detail. A label the rules below cannot turn into a sentence is shown as its
lower-cased words between the two ends ("Ines — sues — Acme"), never as the code.
"""

from __future__ import annotations

import re


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Labels that are not "verb + words": what each means between its two ends.
SPECIAL = {
    "PART_OF": "is part of", "LOCATED_IN": "is in", "MARRIED_TO": "is married to",
    "ENGAGED_TO": "is engaged to", "RELATED_TO": "is related to", "FROM": "is from",
    "MEMBER_OF": "is a member of", "BORN_IN": "was born in", "ALLERGIC_TO": "is allergic to",
    "FAN_OF": "is a fan of", "NEAR": "is near", "IS_A": "is a", "IS": "is",
    "PLANS_TRIP_TO": "plans a trip to", "TAKES_TRIP_TO": "takes a trip to",
    "FRIENDS_WITH": "is friends with", "WORKS_AS": "works as", "LIVES_WITH": "lives with",
}
# First words that say what the subject is, not does: "is interested in", "is based in".
STATES = _word_set("""
    interested employed based enrolled subscribed addicted worried excited owned created
    written headquartered diagnosed afraid proud good bad skilled responsible fond involved
    scared passionate keen curious nervous obsessed attached devoted committed dedicated
    known famous close similar opposed used new
""")
# "X_OF" labels naming a role: (Ana, SISTER_OF, you) → "Ana is your sister".
ROLES = _word_set("""
    friend sibling parent child sister brother mother father daughter son wife husband
    partner colleague coworker neighbour neighbor boss manager cousin aunt uncle niece nephew
    grandmother grandfather grandparent grandchild teacher student mentor roommate client
    customer owner founder employee doctor dentist therapist coach girlfriend boyfriend fiance
    fiancee pet
""")
# First words of labels that are verbs (third person, or past): the extraction prompt asks
# for "verb first" labels; these are the ones its examples and the demo samples use, and the
# common ones a model picks for a person's life.
VERBS = _word_set("""
    works lives likes loves knows hates owns reads plays manages leads drives walks sues
    attends attended visits visited emailed mentioned climbs wants plans considers worries
    studies teaches prefers enjoys uses speaks meets met founded runs writes watches cooks
    dislikes misses needs follows supports avoids admires trusts collaborates reports goes
    went moved worked lived studied taught played travelled traveled supports mentors
    volunteers belongs invests waits dates married left joined joins owes helps helped
    calls called texts texted sees saw shares shared learns learned learnt practises
    practices collects builds built designs designed listens listened keeps kept grew
    grows raises raised cares takes took gives gave has had is was does did
    graduated retired started finished completed bought sold ordered recommended borrowed
    adopted rents rented booked celebrates celebrated rides wears eats drinks bakes paints
    sings swims hikes trains cycles flies travels returned returns stays stayed signed
    applied hired feels believes thinks remembers forgot lost won wins sent received
    visits hopes dreams fears wishes volunteered invested ate drank watched heard looks
""")
# Third person → the form that goes with "you".
IRREGULAR = {"has": "have", "is": "are", "was": "were", "does": "do", "goes": "go"}
PREPOSITIONS = _word_set("""with at in on to for from about of by into near as like after
                          under over through around against without towards toward across""")
# A label as the cleaning pass stores it (upper case words joined by underscores).
_LABEL = re.compile(r"^[A-Z0-9]+(?:_[A-Z0-9]+)*$")


def label_words(label: str) -> str:
    """A relation code as lower-case words: WORKS_AT → "works at"."""
    return " ".join(w for w in label.lower().split("_") if w)


def for_you(verb: str) -> str:
    """A third-person verb as it goes with "you": lives → live, worries → worry."""
    if verb in IRREGULAR:
        return IRREGULAR[verb]
    if verb.endswith("ies") and len(verb) > 4:
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        return verb[:-2]
    if verb.endswith("s") and not verb.endswith("ss") and len(verb) > 2:
        return verb[:-1]
    return verb  # a past form (visited, met) is the same for everyone


def _possessive(name: str, is_self: bool) -> str:
    if is_self:
        return "your"
    return name + ("'" if name.endswith(("s", "S")) else "'s")


def _capital(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


def phrase(source: str, label: str, target: str, source_is_self: bool = False,
           target_is_self: bool = False) -> str:
    """One memory as a sentence, the person as "you": (User, LIVES_IN, Porto) → "You live in
    Porto"; (User, HAS_SISTER, Ana) → "Your sister is Ana"; a label no rule reads →
    "Ines — sues — Acme" (its words, never the code)."""
    subject = "you" if source_is_self else source
    other = "you" if target_is_self else target
    words = label_words(label)
    parts = words.split()
    if not parts or not _LABEL.match(label):
        return f"{_capital(subject)} — {words or 'linked to'} — {other}"
    if label in SPECIAL:
        verb, *rest = SPECIAL[label].split()
        verb = for_you(verb) if source_is_self else verb
        return _capital(" ".join([subject, verb, *rest, other]))
    first, rest = parts[0], parts[1:]
    be = "are" if source_is_self else "is"
    if first in STATES or (first.endswith("ing") and len(first) > 5 and first not in VERBS):
        # INTERESTED_IN: "You are interested in photography"; LEARNING: "You are learning".
        return _capital(" ".join([subject, be, *parts, other]))
    if first in ROLES and rest == ["of"]:
        # SISTER_OF: "Ana is your sister", "You are Tom's friend".
        return _capital(f"{subject} {be} {_possessive(target, target_is_self)} {first}")
    if first == "has" and rest and rest[-1] not in PREPOSITIONS:
        # HAS_SISTER: "Your sister is Ana"; the person as the other end: "Tom's boss is you".
        return _capital(f"{_possessive(source, source_is_self)} {' '.join(rest)} is {other}")
    if first in VERBS:
        verb = for_you(first) if source_is_self else first
        # WORKS_NIGHT_SHIFTS: the words do not lead into the other end; a colon does.
        joint = ":" if rest and rest[-1] not in PREPOSITIONS and "to" not in rest else ""
        return _capital(" ".join([subject, verb, *rest]) + joint + " " + other)
    return f"{_capital(subject)} — {words} — {other}"


# How a memory's strength reads (design §6: 100 when new or restated, dormant below
# `dormant_below`, 2.0). Above the dormant line the words are the page's, not the design's.
STRONG_FROM = 50.0
FAIR_FROM = 15.0


def strength_words(strength: float | None, dormant_below: float = 2.0) -> str:
    """A strength in words: strong, fair, fading, or dormant (only found when named)."""
    if strength is None:
        return "strength unknown"
    if strength < dormant_below:
        return "dormant: only found when you name it"
    if strength >= STRONG_FROM:
        return "strong"
    return "fair" if strength >= FAIR_FROM else "fading"


def state_words(state: str, strength: float | None, corrected: bool = False,
                dormant_below: float = 2.0) -> str:
    """A memory's state as the person reads it. A current memory whose strength fell below
    the dormant line reads dormant before the daily pass marks it."""
    if state == "current":
        return strength_words(strength, dormant_below)
    return {
        "dormant": "dormant: only found when you name it",
        "superseded": "corrected by you" if corrected else "replaced by a newer memory",
        "expired": "ended: its time is over",
        "retracted": "marked wrong: never recalled",
    }.get(state, state)


def count(n: int, one: str, many: str | None = None) -> str:
    """"1 memory", "3 memories", "no memory"."""
    if n == 0:
        return f"no {one}"
    return f"{n} {one if n == 1 else (many or one + 's')}"


# What forgetting the person's own node would be, and where the page does it.
FORGET_YOU = ("this is you: forgetting you would forget everything in your memory. To do that, "
              "open “Export, import, forget” and type the word everything under “Forget "
              "everything”; nothing was forgotten")


def forgotten(scope: str, memories: int, entities: int, conversations: int,
              changed: int = 0, revived: int = 0) -> list[str]:
    """What an erasure removed, in sentences (the ForgetReport's numbers, in words)."""
    said = {
        "memory": "It is erased, with its words, everywhere they were stored."
        if memories else "Nothing was erased: it was already gone.",
        "entity": f"Erased it and {count(memories, 'memory', 'memories')} about it.",
        "conversation": f"Erased {count(conversations, 'conversation')} and "
                        f"{count(memories, 'memory', 'memories')} only it taught.",
        "everything": f"Erased {count(memories, 'memory', 'memories')}, "
                      f"{count(entities, 'person, place or thing', 'people, places and things')}"
                      f" and {count(conversations, 'conversation')}.",
    }[scope]
    lines = [said]
    if changed:
        lines.append(f"{count(changed, 'memory', 'memories')} also said elsewhere "
                     f"{'is' if changed == 1 else 'are'} kept, without its words.")
    if revived:
        lines.append(f"{count(revived, 'memory', 'memories')} it had replaced "
                     f"{'is' if revived == 1 else 'are'} current again.")
    lines.append("This cannot be undone.")
    return lines


# What the library's messages tell a command-line user, as the page says it: no command,
# no flag, and no id (a memory's, an entity's, the user's) a person never sees elsewhere.
_PAGE_HINTS = [
    (re.compile(r"already names another entity \(([^()]*), [^(),]*\)"),
     r"already names another entity (\1)"),
    (re.compile(r"no memory .* in .*'s memory", re.S),
     "this memory is not in your memory: it may have been forgotten, or the link is old"),
    (re.compile(r"no entity (named )?.* in .*'s memory", re.S),
     "nothing in your memory goes by that name"),
    (re.compile(r"no merge record .* for this user", re.S),
     "that merge is not in your memory: it may have been undone already"),
    (re.compile(r"a memory .* -\[.*\]-> that end already exists \(.*\); retract or forget "
                r"this one instead", re.S),
     "you already have that memory with the other end you gave; mark this one wrong or "
     "forget it instead"),
    (re.compile(r"\d+ entities are named .*\. Name one by its id", re.S),
     "several people, places or things are called that: open the one you mean below and "
     "make the change from its page"),
    (re.compile(r".* is the user's own node: forgetting it is forgetting everything .*", re.S),
     FORGET_YOU),
    (re.compile(r"run `pegasus forget --everything` for this user again"),
     "forget everything again (Export, import, forget)"),
    (re.compile(r"run `pegasus import --replace` for this user again"),
     "import the file again with “Replace what is in my memory now” ticked"),
    (re.compile(r" ?\(--replace\)"), ""),
    (re.compile(r" ?\(`pegasus [^`]*`\)"), ""),
    (re.compile(r"`pegasus [^`]*`"), "the command line"),
]


def for_page(message: str) -> str:
    """A library message with its command-line hints (flags, commands) put in page words."""
    for pattern, words in _PAGE_HINTS:
        message = pattern.sub(words, message)
    return message
