"""The deterministic cleaning pass (design §4): repairs what it can, drops the rest with a note.

Pure: no database. `known` says whether a name already names something on the user's graph.
Nothing here merges or decides identity.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import datetime

from rapidfuzz import fuzz

from pegasus.errors import InvalidBatchError
from pegasus.models.batch import CleanBatch, CleanEntity, CleanRelation, Dropped, ExtractionBatch
from pegasus.text import fold, is_placeholder, sentences
from pegasus.vocab import CARDINALITIES, KINDS, STABILITIES

LABEL_PATTERN = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+){0,3}$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_PROPERTY_KEY = re.compile(r"[^a-z0-9]+")
# A snippet that is not verbatim in the user's turns is replaced by the user sentence that best
# carries it, when that sentence scores at least this (rapidfuzz partial ratio, 0–100).
SNIPPET_MATCH_MIN = 75.0

KIND_SYNONYMS = {
    "ORGANIZATION": "ORG", "ORGANISATION": "ORG", "COMPANY": "ORG", "INSTITUTION": "ORG",
    "EMPLOYER": "ORG", "BUSINESS": "ORG", "TEAM": "ORG", "SCHOOL": "ORG", "STARTUP": "ORG",
    "LOCATION": "PLACE", "CITY": "PLACE", "COUNTRY": "PLACE", "GPE": "PLACE", "ADDRESS": "PLACE",
    "VENUE": "PLACE", "REGION": "PLACE",
    "HUMAN": "PERSON", "INDIVIDUAL": "PERSON", "PEOPLE": "PERSON", "PER": "PERSON",
    "USER": "PERSON", "PET": "OTHER",
    "OBJECT": "THING", "PRODUCT": "THING", "ITEM": "THING", "DEVICE": "THING", "TOOL": "THING",
    "CONCEPT": "TOPIC", "SUBJECT": "TOPIC", "THEME": "TOPIC", "IDEA": "TOPIC", "SKILL": "TOPIC",
    "PREF": "PREFERENCE", "LIKE": "PREFERENCE", "TASTE": "PREFERENCE", "HOBBY": "PREFERENCE",
    "DATE": "EVENT", "OCCASION": "EVENT", "MEETING": "EVENT", "TRIP": "EVENT",
}
# Stabilities whose edges may not expire (design §2, §4).
PERMANENT = {"immutable", "stable", "mutable"}


def clean_text(value: str) -> str:
    """Control characters removed, whitespace collapsed."""
    return " ".join(_CONTROL.sub(" ", value).split())


def clean_label(raw: str) -> str:
    """A relation label in canonical form (it may still be malformed: check LABEL_PATTERN)."""
    label = clean_text(raw).upper().replace("-", "_").replace(" ", "_")
    return re.sub(r"_+", "_", label).strip("_")


def clean_kind(raw: str) -> tuple[str, str | None]:
    """The kind in upper case, a synonym mapped, anything else OTHER (with a note)."""
    kind = clean_text(raw).upper().replace(" ", "_")
    if kind in KINDS:
        return kind, None
    if kind in KIND_SYNONYMS:
        return KIND_SYNONYMS[kind], None
    return "OTHER", f"unknown kind {raw!r} filed as OTHER"


def clamp_confidence(value: float, default: float = 0.5) -> float:
    if value is None or not math.isfinite(value):
        return default
    return min(max(float(value), 0.0), 1.0)


def _clean_properties(raw: dict, notes: list[str], owner: str) -> dict[str, str | int | float | bool]:
    clean: dict[str, str | int | float | bool] = {}
    for key, value in raw.items():
        name = _PROPERTY_KEY.sub("_", str(key).lower()).strip("_")[:40]
        if not name or not name[0].isalpha():
            notes.append(f"{owner}: property {key!r} dropped (not a usable name)")
            continue
        if isinstance(value, bool | int | str) or (isinstance(value, float) and math.isfinite(value)):
            clean[name] = clean_text(value) if isinstance(value, str) else value
        elif value is not None:
            clean[name] = json.dumps(value, ensure_ascii=False, default=str)[:500]
    return clean


def user_text(transcript: str | list | None) -> str | None:
    """The user's own words from a transcript (a string is taken as all user words)."""
    if transcript is None:
        return None
    if isinstance(transcript, str):
        return transcript
    parts = []
    for turn in transcript:
        role = turn.get("role") if isinstance(turn, dict) else turn.role
        content = turn.get("content") if isinstance(turn, dict) else turn.content
        if role == "user" and isinstance(content, str):
            parts.append(content)
    return "\n".join(parts)


def _verify_snippet(snippet: str, said: str, folded_said: str) -> str | None:
    """The snippet if the user said it; else the user sentence carrying it; else None."""
    if fold(snippet) in folded_said:
        return snippet
    best, best_score = None, 0.0
    for sentence in sentences(said):
        score = fuzz.partial_ratio(fold(snippet), fold(sentence))
        if score > best_score:
            best, best_score = sentence, score
    return best if best is not None and best_score >= SNIPPET_MATCH_MIN else None


def clean_batch(
    batch: ExtractionBatch,
    known: Callable[[str], bool] = lambda name: False,
    transcript: str | list | None = None,
    provisional_confidence: float = 0.3,
    max_entities: int = 5_000,
    max_relations: int = 20_000,
) -> CleanBatch:
    """Check one batch; the result holds only entities and relations that may be committed."""
    if len(batch.entities) > max_entities or len(batch.relations) > max_relations:
        raise InvalidBatchError(
            f"batch too large: {len(batch.entities)} entities / {len(batch.relations)} relations "
            f"(limits {max_entities} / {max_relations}); split the conversation"
        )
    notes: list[str] = []
    dropped: list[Dropped] = []
    entities: dict[tuple[str, str], CleanEntity] = {}

    for raw in batch.entities:
        name = clean_text(raw.name)
        if not name:
            dropped.append(Dropped(item=f"entity {raw.name!r}", reason="empty name"))
            continue
        kind, note = clean_kind(raw.kind)
        if note:
            notes.append(f"{name}: {note}")
        placeholder = is_placeholder(name)
        if raw.is_user or placeholder:
            kind = "PERSON"
        aliases = []
        for alias in raw.aliases:
            alias = clean_text(alias)
            if alias and fold(alias) != fold(name) and not is_placeholder(alias) \
                    and alias not in aliases:
                aliases.append(alias)
        entity = CleanEntity(
            name=name, kind=kind, aliases=aliases,
            properties=_clean_properties(raw.properties, notes, name),
            confidence=clamp_confidence(raw.confidence),
            is_user=raw.is_user, is_placeholder=placeholder and not raw.is_user,
            same_as_hint=clean_text(raw.same_as_hint) if raw.same_as_hint else None,
        )
        key = ("SELF", "") if entity.is_user or entity.is_placeholder else (kind, fold(name))
        if key in entities:
            # The same name twice in one batch is one proposal, not a merge decision.
            first = entities[key]
            if entity.is_user and not first.is_user:
                first.name, first.is_user, first.is_placeholder = name, True, False
            first.aliases += [a for a in [*entity.aliases, entity.name]
                              if fold(a) != fold(first.name) and a not in first.aliases
                              and not is_placeholder(a)]
            first.properties = {**first.properties, **entity.properties}
            first.confidence = max(first.confidence, entity.confidence)
            notes.append(f"{name}: listed twice in the batch, combined")
        else:
            entities[key] = entity

    in_batch = {fold(n) for e in entities.values() for n in [e.name, *e.aliases]}

    def is_known(name: str) -> bool:
        return is_placeholder(name) or fold(name) in in_batch or known(name)

    relations: list[CleanRelation] = []
    said = user_text(transcript)
    folded_said = fold(said) if said is not None else ""
    for raw in batch.relations:
        source, target = clean_text(raw.source), clean_text(raw.target)
        label = clean_label(raw.relation)
        item = f"{source} -[{label or raw.relation}]-> {target}"
        if not source or not target:
            dropped.append(Dropped(item=item, reason="an end has no name"))
            continue
        if not LABEL_PATTERN.match(label):
            dropped.append(Dropped(item=item, reason=f"malformed relation label {raw.relation!r}"))
            continue
        if fold(source) == fold(target) or (is_placeholder(source) and is_placeholder(target)):
            dropped.append(Dropped(item=item, reason="relation points to itself"))
            continue
        snippet = clean_text(raw.snippet or "")
        if not snippet:
            dropped.append(Dropped(item=item, reason="no snippet (the user's words)"))
            continue
        if said is not None:
            verified = _verify_snippet(snippet, said, folded_said)
            if verified is None:
                dropped.append(Dropped(item=item, reason="snippet not found in the user's turns"))
                continue
            if verified != snippet:
                notes.append(f"{item}: snippet replaced by the user's sentence")
                snippet = verified
        source_known, target_known = is_known(source), is_known(target)
        if not source_known and not target_known:
            dropped.append(Dropped(item=item, reason="neither end is known"))
            continue
        status = clean_text(raw.status).lower()
        # An ended relation with an end not known is kept too: nothing stored can match it, so
        # it becomes a past fact (merge/plan.py), its unknown end a provisional node like any.
        for end, end_known in ((source, source_known), (target, target_known)):
            if not end_known:
                entities[("OTHER", fold(end))] = CleanEntity(
                    name=end, kind="OTHER", aliases=[], properties={},
                    confidence=provisional_confidence, provisional=True,
                )
                in_batch.add(fold(end))
                notes.append(f"{end}: unknown end of {label}, provisional node")
        stability = clean_text(raw.stability).lower().replace(" ", "_").replace("-", "_")
        if stability not in STABILITIES:
            notes.append(f"{item}: unknown stability {raw.stability!r}, using stable")
            stability = "stable"
        cardinality = clean_text(raw.cardinality).lower().replace(" ", "_").replace("-", "_")
        if cardinality not in CARDINALITIES:
            notes.append(f"{item}: unknown cardinality {raw.cardinality!r}, using one_to_many")
            cardinality = "one_to_many"
        expires_at: datetime | None = raw.expires_at
        if expires_at is not None and stability in PERMANENT:
            notes.append(f"{item}: expiry removed from a {stability} relation")
            expires_at = None
        if status not in ("current", "ended"):
            notes.append(f"{item}: unknown status {raw.status!r}, using current")
            status = "current"
        evidence = clean_text(raw.evidence or "") or snippet
        relations.append(CleanRelation(
            source=source, label=label, target=target,
            confidence=clamp_confidence(raw.confidence), stability=stability,
            cardinality=cardinality, expires_at=expires_at, status=status,
            snippet=snippet, evidence=evidence,
        ))

    conversation = batch.conversation.model_copy(update={
        "summary": clean_text(batch.conversation.summary),
        "importance": clamp_confidence(batch.conversation.importance),
        "tags": [t for t in (clean_text(x) for x in batch.conversation.tags) if t],
    })
    return CleanBatch(entities=list(entities.values()), relations=relations,
                      conversation=conversation, notes=notes, dropped=dropped)
