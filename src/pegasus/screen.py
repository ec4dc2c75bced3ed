"""The secret screen (design §15, docs/privacy.md): an API key, token, password, card number or
private key said in a conversation is replaced by a marker such as `[secret removed: api key]`
before anything is stored, sent to extraction, recalled or exported.

Pure: text in, screened text and the kinds found out; never the secret itself (nothing here
logs, and no result holds a removed value). Detection is detect-secrets' plugins run in-process
on strings (provider keys and tokens, JWTs, URL credentials, quoted keyword assignments, quoted
high-entropy strings), plus what a conversation says that code does not: "my password is …",
unquoted `key=value`, keys of providers newer than its patterns, long random tokens in prose,
Luhn-checked card numbers and whole PEM private-key blocks. Each rule keeps ordinary sentences
unmasked (benchmarks/secrets_fp.py measures that on the dev conversations). Every rule reads a
plain copy of the text (NFKC, characters that draw as nothing dropped, any script's digits as
ASCII) and masks the span as written, so "pass\u200bword：" or fullwidth digits hide nothing.

`screen` is one string. A `Screen` screens many strings that belong together (a batch, the turns
of one call, an import line): it first learns every secret any of them states with its context
("my password is hunter22"), then masks those values wherever they stand alone too (an entity
named "hunter22").
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.filters.heuristic import (
    is_potential_uuid,
    is_prefixed_with_dollar_sign,
    is_sequential_string,
    is_templated_secret,
)
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin

from pegasus.errors import InvalidInputError, SecretInIdError
from pegasus.models.batch import Dropped, ExtractionBatch
from pegasus.models.reports import CommitReport
from pegasus.text import function_words

MARKER = "[secret removed: {kind}]"
MARKER_PATTERN = re.compile(r"\[secret removed: [a-z ]+\]")
NAMED_BY_A_SECRET = "its name held a secret (secrets are never kept)"

# The kinds a person reads in a marker and a report.
API_KEY, TOKEN, PASSWORD, CARD, PRIVATE_KEY, SECRET = (
    "api key", "access token", "password", "card number", "private key", "secret")
KINDS = (API_KEY, TOKEN, PASSWORD, CARD, PRIVATE_KEY, SECRET)

# detect-secrets plugins left out: a public IP address is no secret, and a quoted hex string is
# far more often a commit, a digest or a colour than a key in a conversation (a hex key after
# "key=" or "token:" is still caught by the keyword rules below).
LEFT_OUT = {"Public IP (ipv4)", "Hex High Entropy String"}
# A plugin's type, in the kinds above (a plugin added upstream falls back on its name).
KIND_OF_TYPE = {
    "AWS Access Key": API_KEY, "Azure Storage Account access key": API_KEY,
    "Artifactory Credentials": API_KEY, "Cloudant Credentials": PASSWORD,
    "IBM Cloud IAM Key": API_KEY, "IBM COS HMAC Credentials": API_KEY,
    "Mailchimp Access Key": API_KEY, "OpenAI Token": API_KEY, "SendGrid API Key": API_KEY,
    "SoftLayer Credentials": API_KEY, "Square OAuth Secret": API_KEY,
    "Stripe Access Key": API_KEY, "Twilio API Key": API_KEY,
    "Basic Auth Credentials": PASSWORD, "Private Key": PRIVATE_KEY,
    "Base64 High Entropy String": SECRET, "Secret Keyword": SECRET,
}
# Stronger kinds win where two findings overlap (a PEM block holds base64 runs).
RANK = {PRIVATE_KEY: 0, CARD: 1, API_KEY: 2, TOKEN: 3, PASSWORD: 4, SECRET: 5}

# A value learned from its context is masked elsewhere only from this length: a four-digit PIN
# standing alone is far more often a year or a price than the PIN.
MIN_LEARNED_CHARS = 6
# Text is scanned in pieces of about this size (cut at a line end or a space, overlapping), so
# a 200,000-character turn with no line break never gives a regex more than one piece to search.
PIECE_CHARS = 4096
OVERLAP_CHARS = 512
# A PEM block longer than one piece (an RSA-8192 key is ~6,400 characters) is found on the
# whole text by this rule, which is linear.
_PEM = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.{0,20000}?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"|(?:\s+[A-Za-z0-9-]+: [^\n]{0,200})*(?:\s+[A-Za-z0-9+/=]{16,})*)",
    re.DOTALL)
_PUTTY = re.compile(r"PuTTY-User-Key-File-\d: [^\n]{0,100}(?:\n[^\n]{0,200}){0,60}?"
                    r"\nPrivate-MAC: [0-9a-f]+")

# Keys and tokens of providers detect-secrets has no (current) pattern for. Each starts with
# its literal prefix, so the search jumps from one prefix to the next; the look-behind after
# it checks the prefix starts a word.
def _provider(prefix: str, width: int, rest: str) -> re.Pattern[str]:
    return re.compile(rf"{prefix}(?<![\w.-].{{{width}}}){rest}")


_PROVIDER = [
    (_provider("sk-", 3, r"(?:proj-|ant-(?:api|admin)\d\d-|svcacct-|None-)?[A-Za-z0-9_-]{20,}"),
     API_KEY),  # OpenAI, Anthropic
    (_provider("[srp]k_", 3, r"(?:live|test)_[0-9A-Za-z]{16,}"), API_KEY),  # Stripe
    (_provider("AIza", 4, r"[0-9A-Za-z_-]{35}"), API_KEY),  # Google
    (_provider("hf_", 3, r"[A-Za-z0-9]{30,}"), TOKEN),  # Hugging Face
    (_provider("github_pat_", 11, r"[A-Za-z0-9_]{40,}"), TOKEN),
    (_provider("gh[pousr]_", 4, r"[A-Za-z0-9]{30,}"), TOKEN),
    (_provider("glpat-", 6, r"[A-Za-z0-9_-]{20,}"), TOKEN),
    (_provider("xox[abposr]-", 5, r"[A-Za-z0-9-]{10,}"), TOKEN),  # Slack
    (_provider("npm_", 4, r"[A-Za-z0-9]{36}"), TOKEN),
    (_provider("pypi-", 5, r"[A-Za-z0-9_-]{50,}"), TOKEN),
    (_provider(r"SG\.", 3, r"[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"), API_KEY),  # SendGrid
    (_provider("eyJ", 3, r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
     TOKEN),  # a JWT, signature included
    (_provider("A(?:KIA|SIA|BIA|CCA)", 4, r"[0-9A-Z]{16}(?![0-9A-Z])"), API_KEY),  # AWS
]
# The start of a token cut by a space or a line end ("ghp_aBcD1234eFgH 5678iJkL…"): a prefix
# no word starts with, then eight characters or more with a digit among them. The pieces that
# follow it (letters and digits mixed) go with it.
_FRAGMENTS = [
    (_provider(prefix, width, rf"(?=[{chars}]*\d)[{chars}]{{8,}}"), kind)
    for prefix, width, chars, kind in (
        ("gh[pousr]_", 4, "A-Za-z0-9", TOKEN), ("github_pat_", 11, "A-Za-z0-9_", TOKEN),
        ("glpat-", 6, "A-Za-z0-9_-", TOKEN), ("xox[abposr]-", 5, "A-Za-z0-9-", TOKEN),
        ("hf_", 3, "A-Za-z0-9", TOKEN), ("npm_", 4, "A-Za-z0-9", TOKEN),
        ("pypi-", 5, "A-Za-z0-9_-", TOKEN), ("sk-proj-", 8, "A-Za-z0-9_-", API_KEY),
        ("sk-ant-", 7, "A-Za-z0-9_-", API_KEY))]
_FRAGMENT_PREFIXES = ("gh", "glpat-", "xox", "hf_", "npm_", "pypi-", "sk-")
_TOKEN_PIECE = re.compile(r"[ \t]*\n?[ \t]*([A-Za-z0-9_-]{6,})(?![^\s.,;:!?)\]}>])")
MAX_TOKEN_PIECES = 4
# "Authorization: Bearer …", "Bearer …" in a curl line.
_BEARER = re.compile(r"\b(?:Bearer|Basic|Token)\s+([A-Za-z0-9._~+/=-]{16,})", re.IGNORECASE)
# Unquoted `name=value` / `name: value` with a secret-sounding name (env files, shell, YAML):
# the word is a whole part of the name (DB_PASS, dbPassword, api-key), never the start of
# another word (passion, secretary, tokenizer).
_ASSIGNED = re.compile(
    r"(?<![A-Za-z0-9])((?:[A-Za-z0-9]{1,20}[_.-]|[a-z0-9]{1,20}(?=[A-Z])){0,3}"
    r"(?i:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|access[_-]?key|"
    r"private[_-]?key|auth[_-]?key|client[_-]?key|credentials?)"
    r"(?:[_.-][A-Za-z0-9]{1,20}|[A-Z0-9][A-Za-z0-9]{0,19}){0,2})[\"']?\s{0,3}(?::=|=|:)\s{0,3}"
    r"[\"'`]?([^\s\"'`,;]{4,200})")
# The words for a password, in English and in the languages people most often switch to.
_PASSWORD_WORDS = (r"pass(?:word|phrase|code)s?|passwd|pwd|mot de passe|passw[oö]rt|kennwort|"
                   r"contrase[ñn]as?")
# What a person says: "my password is …", "the API key for staging: …", "pin code is 1234",
# "my password's …", "mein Passwort ist …", "mi contraseña es …".
_SAID = re.compile(
    rf"\b({_PASSWORD_WORDS}|pin(?: code| number)?|"
    r"api[ _-]?keys?|access[ _-]?keys?|secret[ _-]?keys?|private[ _-]?keys?|signing keys?|"
    r"licen[cs]e keys?|(?:access |auth |bearer |refresh |api |personal access )?tokens?|"
    r"client secrets?|secrets?)\b"
    r"((?:\s+[\w.@'/-]{1,40}){0,4}?)"
    r"\s*(?:\b(?:is|was|est|était|ist|war|lautet|es|era)\b|(['’]s\b)|:|=|->|=>)"
    r"\s*[\"'`]?([^\s\"'`]{1,200})",
    re.IGNORECASE)
# "password hunter2abc", "passcode 48213": a password word and the value, nothing between (the
# value must then look like one: digits, or letters with digits).
_SAID_BARE = re.compile(rf"\b({_PASSWORD_WORDS})[ \t]+([^\s\"'`]{{4,200}})", re.IGNORECASE)
# A word that goes on a passphrase ("correct horse battery staple"), up to the clause's end.
_NEXT_WORD = re.compile(r"[ \t]+([^\s\"'`]{1,100})")
MAX_PASSPHRASE_WORDS = 8
# A word of the sentence that an ordinary adjective after "password is" needs this many
# content words after it to be a passphrase ("my password is wrong again" is no password).
PASSPHRASE_AFTER_ORDINARY = 3
# Words that follow "password is" in an ordinary sentence (and never are the password).
_NOT_A_VALUE = function_words() | frozenset((
    "always", "away", "bad", "blank", "broken", "case", "changed", "complicated", "compromised",
    "correct", "different", "easy", "empty", "encrypted", "expired", "fine", "forgotten", "good",
    "great", "hard", "hidden", "incorrect", "insecure", "invalid", "known", "leaked", "long",
    "lost", "missing", "needed", "new", "old", "protected", "ready", "required", "reset", "right",
    "safe", "saved", "secure", "sensitive", "set", "short", "simple", "stolen", "stored",
    "strong", "unknown", "valid", "visible", "weak", "working", "written", "wrong", "true",
    "false", "none", "null", "see", "tbd", "todo", "redacted", "unset", "optional", "default",
    "1password",
    # French, German, Spanish: "mon mot de passe est trop court" is no password
    "très", "trop", "faux", "oublié", "perdu", "nouveau", "facile", "court", "expiré", "changé",
    "le", "la", "les", "un", "une", "mon", "ma", "pas", "bon", "mauvais", "vide", "sûr", "fort",
    "faible", "sehr", "zu", "falsch", "richtig", "lang", "kurz", "einfach", "sicher", "neu",
    "alt", "abgelaufen", "vergessen", "geändert", "der", "die", "das", "ein", "eine", "nicht",
    "gut", "schlecht", "leer", "stark", "schwach", "mein", "muy", "demasiado", "el", "fácil",
    "facil", "largo", "larga", "corto", "corta", "incorrecta", "correcta", "incorrecto",
    "correcto", "nueva", "nuevo", "vieja", "viejo", "segura", "seguro", "débil", "debil",
    "olvidada", "cambiada", "no", "mi", "tu", "su", "fuerte", "vacía"))
_PUNCTUATION = ".,;:!?)]}>"
# What ends a sentence or a clause after a password; "!" and "?" stay in its marker (passwords
# end in them far more often than sentences around a password do).
_CLAUSE_END = ".,;:)]}>"
# A run of digit groups, each separator one of " .-/_" (NBSP, thin and zero-width spaces are
# spaces or nothing once the text is plain); the look-behind after the first digit lets the
# search jump from digit to digit. A card is 13-19 digits of it (the run may hold an expiry or
# a code after it, or a number before it).
_DIGIT_GROUPS = re.compile(r"\d(?<![\d.,/_-]\d)(?:[ ./_-]?\d)*(?![.,]\d)")
_CARD_SEPARATOR = re.compile(r"[ ./_-]")
_CARD_GROUPS = {(4, 4, 4, 4), (4, 4, 4, 4, 3), (4, 6, 5), (4, 6, 4), (4, 4, 4, 1), (4, 4, 4, 2),
                (4, 4, 4, 3), (4, 4, 4, 4, 1), (4, 4, 4, 4, 2), (4, 4, 5)}
# A date in a run ("2023-05-01/2023-05-08") is no card, however Luhn falls.
_DATE = re.compile(r"(?:19|20)\d\d[./-][01]\d[./-][0-3]\d|[0-3]\d[./-][01]\d[./-](?:19|20)\d\d")
# A long token in prose: random enough, mixed enough, and no path or word run.
# maximal runs (greedy: no backtracking), base64's padding only at the end
_TOKEN = re.compile(r"[A-Za-z0-9_+/-]{24,}={0,2}")
MAX_TOKEN_CHARS = 512
# The gates of the rules (see _in_piece).
_LONG_RUN = re.compile(r"[^\s'\"`<>()\[\]{},;]{16,}")
_NAMED = re.compile(r"pass|pwd|secret|token|key|credential|\bpin\b|contrase|kennwort",
                    re.IGNORECASE)
_DIGIT_RUN = re.compile(r"\d(?:[ ./_-]?\d){12}")  # thirteen digits, however grouped
# Secret-sounding words, in a lower-cased piece; the rules for names and sayings search from
# BEFORE_STEM_CHARS before one (a name's prefix, "personal access" before "token") to
# AFTER_STEM_CHARS after it (four words, "is", a value of 200 characters).
_STEMS = re.compile(r"pass|pwd|pin|key|token|secret|credential|contrase|kennwort")
BEFORE_STEM_CHARS = 80
AFTER_STEM_CHARS = 480
# A quoted value assigned or compared: what detect-secrets' keyword plugin needs to find one.
_QUOTED = re.compile(r"[=:(]\s*@?[\"'`]|[\"'`]\s*[!=]=|[\"'`]\s*;")
_HASH_PREFIX = re.compile(r"(?:sha1|sha256|sha384|sha512|md5)[-:]$", re.IGNORECASE)
_HASHED = re.compile(r"(?:sha1|sha256|sha384|sha512|md5)[-:]", re.IGNORECASE)


@dataclass(frozen=True)
class Screened:
    """A text after screening, with the kind of each secret removed (never the secret)."""

    text: str
    kinds: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.kinds)


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    kind: str


def marker(kind: str) -> str:
    """The words that stand where a secret was."""
    return MARKER.format(kind=kind)


def has_marker(text: str) -> bool:
    """Whether a text holds a secret's marker."""
    return bool(MARKER_PATTERN.search(text))


@cache
def _plugins() -> tuple[tuple[BasePlugin, str], ...]:
    plugins: list[tuple[BasePlugin, str]] = []
    mapping: dict[str, Any] = dict(get_mapping_from_secret_type_to_class())
    for secret_type, plugin in sorted(mapping.items()):
        if secret_type in LEFT_OUT:
            continue
        kind = KIND_OF_TYPE.get(secret_type)
        if kind is None:
            kind = TOKEN if "token" in secret_type.lower() else (
                API_KEY if "key" in secret_type.lower() else SECRET)
        plugins.append((plugin(), kind))
    return tuple(plugins)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _random_enough(value: str) -> bool:
    """A value shaped like a generated credential rather than a word, a path, a number or an id
    (detect-secrets' own filters, then mixed character classes and enough entropy)."""
    if is_sequential_string(value) or is_potential_uuid(value) or is_templated_secret(value):
        return False
    if re.fullmatch(r"[0-9a-fA-F-]+", value):  # a commit, a digest, a UUID: not a secret alone
        return False
    classes = sum(bool(re.search(p, value)) for p in (r"[a-z]", r"[A-Z]", r"\d"))
    if classes < 3:
        return False
    if "/" in value and all(re.fullmatch(r"(?:[A-Z]?[a-z]{2,}|\d{1,4}|[._-])*", part)
                            for part in value.split("/")):
        return False  # a path or a route of words
    # A random string of n distinct-ish characters has an entropy near log2(n); words and
    # camelCase identifiers fall well below it.
    return _entropy(value) >= min(4.5, math.log2(len(value)) - 0.7)


def _looks_like_password(value: str) -> bool:
    """A word after "password is" that is not an ordinary word of the sentence."""
    word = value.rstrip(_PUNCTUATION)
    if len(word) < 3 or word.lower() in _NOT_A_VALUE or has_marker(word):
        return False
    return not (is_templated_secret(word) or is_prefixed_with_dollar_sign(word)
                or set(word) <= set("*.x") or word.startswith(("/", "./", "../", "~/")))


def _looks_like_credential(value: str) -> bool:
    """A value after "token is" / "api key:" shaped like a generated credential."""
    word = value.rstrip(_PUNCTUATION)
    if len(word) < 8 or word.lower() in _NOT_A_VALUE or has_marker(word):
        return False
    if is_templated_secret(word) or is_prefixed_with_dollar_sign(word):
        return False
    if word.isalpha() and word.islower():
        return False  # an ordinary word
    return bool(re.search(r"\d", word) and re.search(r"[A-Za-z]", word)) or (
        len(word) >= 16 and _random_enough(word))


def _luhn(digits: str) -> bool:
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def _is_card(candidate: str) -> bool:
    """13-19 digits starting 2-6, Luhn valid, written whole or grouped as a card is: in a
    card's groups (4-4-4-4, 4-6-5 …) or in even groups of two to four digits (the last one
    shorter), whatever separates them."""
    groups = _CARD_SEPARATOR.split(candidate)
    digits = "".join(groups)
    if not 13 <= len(digits) <= 19 or digits[0] not in "23456" or not _luhn(digits):
        return False
    sizes = tuple(len(g) for g in groups)
    if len(sizes) == 1 or sizes in _CARD_GROUPS:
        return True
    return 2 <= sizes[0] <= 4 and all(n == sizes[0] for n in sizes[:-1]) \
        and 1 <= sizes[-1] <= sizes[0] and not _DATE.search(candidate)


def _cards(run: str) -> Iterator[tuple[int, int]]:
    """The spans of card numbers in a run of digit groups: the whole run, or its first or its
    last groups (a card with its expiry after it, a label's number before it)."""
    if len(run) > 200:  # no card is written over 200 characters
        return
    cuts = [m.start() for m in _CARD_SEPARATOR.finditer(run)]
    starts, ends = [0, *(c + 1 for c in cuts)], [*cuts, len(run)]
    for start, end in [(0, len(run)), *((0, e) for e in ends[:-1]),
                       *((b, len(run)) for b in starts[1:])]:
        if _is_card(run[start:end]):
            yield start, end
            return


def _pieces(text: str) -> Iterator[tuple[int, str]]:
    """(offset, piece) covering the text; neighbours overlap by OVERLAP_CHARS."""
    if len(text) <= PIECE_CHARS:
        yield 0, text
        return
    start = 0
    while start < len(text):
        end = min(start + PIECE_CHARS, len(text))
        if end < len(text):
            cut = max(text.rfind("\n", start + PIECE_CHARS // 2, end),
                      text.rfind(" ", start + PIECE_CHARS // 2, end))
            end = cut if cut > start else end
        yield start, text[start:end]
        if end >= len(text):
            return
        start = max(end - OVERLAP_CHARS, start + 1)


def _occurrences(text: str, value: str, start: int = 0) -> Iterator[tuple[int, int]]:
    at = text.find(value, start)
    while at >= 0:
        yield at, at + len(value)
        at = text.find(value, at + 1)


def _in_piece(piece: str) -> Iterator[_Found]:
    """Every secret one piece of text holds, as spans. Each rule runs only where what it looks
    for can be (a long run of non-space characters; near a secret-sounding word; thirteen
    digits): an ordinary sentence costs a few cheap searches."""
    long_run = bool(_LONG_RUN.search(piece))
    windows = _windows(piece)
    yield from _by_plugins(piece, long_run, windows)
    if long_run:
        for pattern, kind in _PROVIDER:
            for match in pattern.finditer(piece):
                yield _Found(match.start(), match.end(), kind)
        lower = piece.lower()
        if "bearer" in lower or "basic" in lower or "token" in lower:
            for match in _BEARER.finditer(piece):
                if _looks_like_credential(match.group(1)):
                    yield _Found(match.start(1), match.end(1), TOKEN)
        for match in _TOKEN.finditer(piece):
            value = match.group().rstrip("=-_").lstrip("-_")
            if 24 <= len(value) <= MAX_TOKEN_CHARS and _random_enough(value) \
                    and not _in_url(piece, match.start()) and not _HASHED.match(value) \
                    and not _after_hash_prefix(piece[:match.start()], ""):
                yield _Found(match.start(), match.end(), SECRET)
    for start, end in windows:
        for match in _ASSIGNED.finditer(piece, start, end):
            value = match.group(2).rstrip(_PUNCTUATION)
            kind = _name_kind(match.group(1))
            if kind == PASSWORD and _looks_like_password(value):
                whole = match.group(2).rstrip(_CLAUSE_END)
                yield _Found(match.start(2), match.start(2) + len(whole), kind)
            elif _looks_like_credential(value):
                yield _Found(match.start(2), match.start(2) + len(value), kind)
        for match in _SAID.finditer(piece, start, end):
            yield from _said(piece, match)
        for match in _SAID_BARE.finditer(piece, start, end):
            if _looks_like_a_bare_password(match.group(2)):
                whole = match.group(2).rstrip(_CLAUSE_END)
                yield _Found(match.start(2), match.start(2) + len(whole), PASSWORD)
    if any(prefix in piece for prefix in _FRAGMENT_PREFIXES):
        for pattern, kind in _FRAGMENTS:
            for match in pattern.finditer(piece):
                yield _Found(match.start(), _token_pieces(piece, match.end()), kind)
    if _DIGIT_RUN.search(piece):
        for match in _DIGIT_GROUPS.finditer(piece):
            for start, end in _cards(match.group()):
                yield _Found(match.start() + start, match.start() + end, CARD)


def _token_pieces(piece: str, end: int) -> int:
    """Where a token cut into pieces ends: the runs of letters mixed with digits after `end`."""
    for _ in range(MAX_TOKEN_PIECES):
        match = _TOKEN_PIECE.match(piece, end)
        if not match or not (re.search(r"\d", match.group(1))
                             and re.search(r"[A-Za-z]", match.group(1))):
            break
        end = match.end(1)
    return end


def _windows(piece: str) -> list[tuple[int, int]]:
    """The stretches of a piece around its secret-sounding words, joined where they overlap:
    the rules for names and sayings search only there."""
    lower = piece.lower()
    if len(lower) != len(piece):  # a character whose lower case is longer: search it all
        return [(0, len(piece))] if _NAMED.search(piece) else []
    windows: list[tuple[int, int]] = []
    for match in _STEMS.finditer(lower):
        start = max(0, match.start() - BEFORE_STEM_CHARS)
        end = min(len(piece), match.end() + AFTER_STEM_CHARS)
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
    return windows


def _by_plugins(piece: str, long_run: bool, windows: list[tuple[int, int]]
                ) -> Iterator[_Found]:
    """What detect-secrets' plugins find in a piece: its keyword plugin near secret-sounding
    words where a quoted value is assigned, the others where a long run or a key's header is."""
    keyed_quote = bool(windows) and bool(_QUOTED.search(piece))
    header = "PRIVATE" in piece or "PuTTY" in piece
    for plugin, kind in _plugins():
        keyword = plugin.secret_type == "Secret Keyword"
        if keyword:
            texts = [piece[start:end] for start, end in windows] if keyed_quote else []
        else:
            texts = [piece] if long_run or header else []
        for text in texts:
            for value in plugin.analyze_string(text):
                yield from _plugin_found(piece, plugin, kind, keyword, value)


def _plugin_found(piece: str, plugin: BasePlugin, kind: str, keyword: bool, value: Any
                  ) -> Iterator[_Found]:
    if not isinstance(value, str) or len(value) < 4 or has_marker(value):
        return
    if isinstance(plugin, HighEntropyStringsPlugin):
        if plugin.calculate_shannon_entropy(value) < plugin.entropy_limit \
                or not _random_enough(value) or _after_hash_prefix(piece, value):
            return
    elif is_templated_secret(value) or is_prefixed_with_dollar_sign(value) \
            or value.startswith(("os.", "process.env", "env.", "getenv")):
        return
    found_kind = _keyword_kind(piece, value) if keyword else kind
    for start, end in _occurrences(piece, value):
        yield _Found(start, end, found_kind)


def _in_url(piece: str, at: int) -> bool:
    """Whether the word holding position `at` is a URL (its query's ids are no secrets; a
    credential in it has a name, `?api_key=`, and the rules for names find it)."""
    start = max(piece.rfind(c, 0, at) for c in " \n\t\"'(<[") + 1
    return "://" in piece[start:at] or piece.startswith("www.", start)


def _said(piece: str, match: re.Match[str]) -> Iterator[_Found]:
    keyword = match.group(1).lower()
    value = match.group(4).rstrip(_PUNCTUATION)
    if not value:
        return
    whole = match.group(4).rstrip(_CLAUSE_END)
    between = match.group(2).split()
    if any(has_marker(w) for w in between):
        return
    kind = _name_kind(keyword)
    start = match.start(4)
    if keyword.startswith("pin"):
        ok = bool(re.fullmatch(r"\d{4,8}", value))
    elif kind == PASSWORD:
        # "the password for the wifi is …" names it; "password reset is easy" does not
        if any(w.lower() in ("reset", "manager", "managers", "policy", "rules", "field", "hint")
               for w in between[:1]):
            return
        # "password's …" is a possessive far more often than a password
        ok = (_looks_like_a_bare_password if match.group(3) else _looks_like_password)(value)
        if whole == match.group(4):  # the clause goes on: a passphrase may too
            more = _passphrase(piece, start + len(whole), ordinary=not ok)
            if more > start + len(whole):
                ok, whole = True, piece[start:more]
    else:
        ok = _looks_like_credential(value)
    if ok:
        yield _Found(start, start + len(whole if kind == PASSWORD else value), kind)


def _passphrase(piece: str, at: int, ordinary: bool) -> int:
    """Where a passphrase begun before `at` ends: the words after it up to the clause's end
    or a function word ("my password is hunter22 for the wifi" ends at hunter22). After an
    ordinary word ("correct") it goes on only over PASSPHRASE_AFTER_ORDINARY words or more,
    else it ends at `at` ("my password is wrong again")."""
    end, words = at, 0
    while words < MAX_PASSPHRASE_WORDS and (match := _NEXT_WORD.match(piece, end)):
        word = match.group(1)
        bare = word.rstrip(_PUNCTUATION).lower()
        if not bare or bare in _NOT_A_VALUE or has_marker(word) or not bare[0].isalnum():
            break
        words += 1
        end = match.start(1) + len(word.rstrip(_CLAUSE_END))
        if word != word.rstrip(_CLAUSE_END):
            break
    if ordinary and words < PASSPHRASE_AFTER_ORDINARY:
        return at
    return end


def _looks_like_a_bare_password(value: str) -> bool:
    """A value with nothing but a space (or "'s") between it and "password": digits (not a
    year), or letters with digits ("password hunter2abc", "passcode 48213")."""
    word = value.rstrip(_PUNCTUATION)
    if len(word) < 4 or word.lower() in _NOT_A_VALUE or has_marker(word):
        return False
    if word.isdigit():
        return len(word) <= 12 and not re.fullmatch(r"(?:19|20)\d\d", word)
    return bool(re.search(r"\d", word) and re.search(r"[^\W\d]", word))


def _name_kind(name: str) -> str:
    """The kind a secret-sounding name (a keyword, a variable) says its value is."""
    name = name.lower()
    if re.search(r"pass|pwd|pin\b|pin |credential|kennwort|contrase", name) \
            or name.startswith("pin"):
        return PASSWORD
    if "token" in name:
        return TOKEN
    if "private" in name:
        return PRIVATE_KEY if "key" in name else SECRET
    if "key" in name:
        return API_KEY
    return SECRET


def _keyword_kind(piece: str, value: str) -> str:
    at = piece.find(value)
    return _name_kind(piece[max(0, at - 40):at]) if at >= 0 else SECRET


def _after_hash_prefix(piece: str, value: str) -> bool:
    at = piece.find(value) if value else len(piece)
    return bool(_HASH_PREFIX.search(piece[max(0, at - 8):at]))


_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")


@cache
def _plain_char(char: str) -> str:
    """A character as the rules read it: a format character that draws as nothing (zero-width
    space, soft hyphen, bidi mark, tag) is dropped, any script's digit is an ASCII digit, and
    the rest is its NFKC form (fullwidth letters, digits and colons, NBSP and thin spaces)."""
    if unicodedata.category(char) == "Cf":
        return ""
    digit = unicodedata.decimal(char, None)
    if digit is not None:
        return str(digit)
    return unicodedata.normalize("NFKC", char)


def _plain(text: str) -> tuple[str, list[int] | None]:
    """The text the rules search ("pass\u200bword：" is "password:", "４１１１ ١١١١" is
    "4111 1111") and, when it differs from `text`, where each of its characters stands in
    `text` (one more entry for the end): a span found is masked in the text as written."""
    if text.isascii():
        return text, None
    parts: list[str] = []
    index: list[int] = []
    at = 0
    for match in _NOT_ASCII.finditer(text):
        parts.append(text[at:match.start()])
        index.extend(range(at, match.start()))
        for where, char in enumerate(match.group(), match.start()):
            plain = _plain_char(char)
            parts.append(plain)
            index.extend([where] * len(plain))
        at = match.end()
    parts.append(text[at:])
    index.extend(range(at, len(text)))
    plain = "".join(parts)
    if plain == text:
        return text, None
    index.append(len(text))
    return plain, index


def _back(spans: list[_Found], index: list[int] | None) -> list[_Found]:
    """Spans of the plain text as spans of the text as written (each covers every character
    its plain characters came from, a zero-width one inside included)."""
    if index is None:
        return spans
    return _joined([_Found(index[f.start], index[f.end - 1] + 1, f.kind) for f in spans])


def _spans(text: str) -> list[_Found]:
    """Every secret in `text` as written, found in its plain form."""
    plain, index = _plain(text)
    return _back(_plain_spans(plain), index)


def _plain_spans(text: str) -> list[_Found]:
    """Every secret in a plain text, overlapping findings joined (the strongest kind names
    them); a marker already there is left as it is (screening twice changes nothing)."""
    found: list[_Found] = []
    for match in _PEM.finditer(text):
        found.append(_Found(match.start(), match.end(), PRIVATE_KEY))
    for match in _PUTTY.finditer(text):
        found.append(_Found(match.start(), match.end(), PRIVATE_KEY))
    for offset, piece in _pieces(text):
        found.extend(_Found(f.start + offset, f.end + offset, f.kind) for f in _in_piece(piece))
    markers = [m.span() for m in MARKER_PATTERN.finditer(text)] if "[secret" in text else []
    return _joined([f for f in found if not any(f.start < end and start < f.end
                                                for start, end in markers)])


def _joined(found: list[_Found]) -> list[_Found]:
    joined: list[_Found] = []
    for f in sorted(set(found), key=lambda f: (f.start, -f.end)):
        if joined and f.start < joined[-1].end:
            last = joined[-1]
            kind = min(last.kind, f.kind, key=RANK.__getitem__)
            joined[-1] = _Found(last.start, max(last.end, f.end), kind)
        else:
            joined.append(f)
    return joined


def _masked(text: str, spans: list[_Found]) -> Screened:
    if not spans:
        return Screened(text)
    parts, at = [], 0
    for span in spans:
        parts += [text[at:span.start], marker(span.kind)]
        at = span.end
    parts.append(text[at:])
    return Screened("".join(parts), tuple(s.kind for s in spans))


def screen(text: str) -> Screened:
    """`text` with each secret it holds replaced by its marker, and the kinds removed."""
    if not isinstance(text, str) or not text:
        return Screened(text)
    return _masked(text, _spans(text))


@dataclass
class Screen:
    """Screens strings that belong together: each secret any of them states is masked in all
    of them, also where it stands without its context. `found` counts the distinct secrets
    removed, by kind (one password said in a turn, a snippet and a summary is one)."""

    # the secrets themselves, for the screen's own use only: never in its repr
    _learned: dict[str, str] = field(default_factory=dict, repr=False)
    _removed: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def found(self) -> Counter[str]:
        return Counter(self._removed.values())

    def learn(self, texts: Iterable[str]) -> None:
        """Find the secrets these texts state (kept in memory only, never returned)."""
        for text in texts:
            if isinstance(text, str) and text:
                plain, _ = _plain(text)
                for span in _plain_spans(plain):
                    value = plain[span.start:span.end]
                    for form in (value, value.rstrip(_PUNCTUATION)):
                        if len(form) >= MIN_LEARNED_CHARS:
                            self._learned.setdefault(form, span.kind)

    def __call__(self, text: str) -> str:
        """`text` screened: detected secrets and learned values masked, counted in `found`."""
        if not isinstance(text, str) or not text:
            return text
        plain, index = _plain(text)
        spans = _plain_spans(plain)
        for value, kind in self._learned.items():
            for start, end in _occurrences(plain, value):
                if _bounded(plain, start, end):
                    spans.append(_Found(start, end, kind))
        spans = _joined(spans)
        for span in spans:
            self._removed.setdefault(_identity(plain[span.start:span.end], span.kind),
                                     span.kind)
        return _masked(text, _back(spans, index)).text

    def data(self, value: Any, skip: Callable[[str], bool] = lambda key: False) -> Any:
        """A JSON-like value with every string screened (dict keys for which `skip` is true are
        left as they are: ids, instants)."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, int) and not isinstance(value, bool) and _is_card(str(value)):
            self._removed.setdefault(str(value), CARD)  # a property may hold a card number
            return marker(CARD)
        if isinstance(value, list):
            return [self.data(v, skip) for v in value]
        if isinstance(value, dict):
            screened = {}
            for k, v in value.items():
                key = k if skip(k) else self.key(k)
                screened[key] = v if skip(k) else self.keyed(key, v) if isinstance(v, str) \
                    else self.data(v, skip)
            return screened
        return value

    def key(self, key: Any) -> Any:
        """A dict key screened like any string (a key holding a secret is masked: it would be
        kept as the words of a JSON text)."""
        return self(key) if isinstance(key, str) else key

    def properties(self, properties: dict[str, Any]) -> dict[str, Any]:
        """An entity's properties screened, those whose key holds a secret left out (counted
        in `found`): a key becomes a Neo4j property name, a token Neo4j never deletes, so it
        can hold no marker either (docs/privacy.md)."""
        return {k: self.keyed(k, v) if isinstance(v, str) else self.data(v)
                for k, v in properties.items() if self.key(k) == k}

    def keyed(self, key: Any, value: str) -> str:
        """A string under a key, screened with its key for context ({"pin": "4821"} is
        `pin=4821`); the key itself is kept as it is."""
        if not isinstance(key, str):
            return self(value)
        framed = self(f"{key}={value}")
        return framed[len(key) + 1:] if framed.startswith(f"{key}=") else self(value)

    def strings(self, value: Any, skip: Callable[[str], bool] = lambda key: False
                ) -> Iterator[str]:
        """Every string of a JSON-like value (the ones `data` screens) to learn from; a string
        under a key is given as `key=value`, so a key names its value ({"password": "…"})."""
        stack: list[tuple[Any, Any]] = [(None, value)]
        while stack:
            key, item = stack.pop()
            if isinstance(item, str):
                yield f"{key}={item}" if isinstance(key, str) else item
            elif isinstance(item, list):
                stack.extend((None, v) for v in item)
            elif isinstance(item, dict):
                stack.extend((k, v) for k, v in item.items() if not skip(k))


def _identity(value: str, kind: str) -> str:
    """One secret however it is written (a card with or without its spaces, a password with
    the sentence's punctuation after it), so it is counted once."""
    return re.sub(r"\D", "", value) if kind == CARD else value.rstrip(_PUNCTUATION)


def _bounded(text: str, start: int, end: int) -> bool:
    """A learned value standing as a whole word, not inside a longer one."""
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    return not (before.isalnum() and text[start].isalnum()) and \
        not (after.isalnum() and text[end - 1].isalnum())


# What an id may not hold. A random run alone (SECRET) is what ids are made of (an Opencode
# session "ses_6f1e…", a UUID), and a long number may be a card-shaped id: neither refuses one.
_NOT_IN_AN_ID = (API_KEY, TOKEN, PASSWORD, PRIVATE_KEY)
_ID_SEPARATOR = re.compile(r"[-.:/= ]")


def check_id(kind: str, value: str) -> str:
    """`value`, a user's or conversation's id as given: InvalidInputError unless a non-empty
    string of at most 200 characters; SecretInIdError for a conversation id holding a secret."""
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise InvalidInputError(f"{kind} must be a non-empty string of at most 200 characters")
    if kind == "conversation_id" and (kinds := secrets_in_id(value)):
        # Refused, not screened: an id is kept as given and cannot hold a marker (two ids
        # masked alike would be one conversation), design §15.
        raise SecretInIdError(f"{kind} holds what looks like a secret ({', '.join(kinds)}); "
                              "Pegasus never keeps one: choose another id; nothing was done")
    return value


def secrets_in_id(value: str) -> tuple[str, ...]:
    """The kinds of the named secrets (a provider's key or token, a password, a private key)
    an id holds, read whole and from each of its separators on ("id-ghp_…", "c.sk-proj-…")."""
    kinds = set(screen(value).kinds)
    for match in _ID_SEPARATOR.finditer(value):
        kinds.update(screen(value[match.end():]).kinds)
    return tuple(kind for kind in _NOT_IN_AN_ID if kind in kinds)


def summary(found: Counter[str] | dict[str, int]) -> str:
    """One line for a report: how many secrets of which kind were removed."""
    total = sum(found.values())
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(found.items(), key=lambda x: -x[1]))
    return (f"{total} secret{'s' if total != 1 else ''} removed before anything was stored "
            f"({kinds}); the words keep a marker where each stood")


def screen_turns(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turns ({role, content, …}) with their contents screened together."""
    contents = [t.get("content") for t in turns]
    if not any(isinstance(c, str | list | dict) and c for c in contents):
        return turns
    checker = Screen()
    checker.learn(s for c in contents for s in checker.strings(c))
    return [{**t, "content": checker.data(t["content"])} if "content" in t else t
            for t in turns]


@dataclass(frozen=True)
class ScreenedBatch:
    """A batch and its transcript screened, what was dropped for holding a secret in a name
    (an entity named by a secret is no entity to keep), and the kinds removed."""

    batch: ExtractionBatch
    transcript: Any
    found: Counter[str]
    dropped: list[Dropped]

    def tell(self, report: CommitReport) -> CommitReport:
        """The report, saying what was removed and dropped."""
        if self.found:
            report.secrets_removed = dict(self.found)
            report.notes.append(summary(self.found))
        report.dropped += self.dropped
        return report


def screen_batch(batch: ExtractionBatch, transcript: Any = None) -> ScreenedBatch:
    """Every text of a batch (names, aliases, properties, labels, snippets, evidence, summary,
    tags, forget requests) and of its transcript screened together: a secret the transcript
    states is masked in the batch too, wherever it stands."""
    checker = Screen()
    turns = transcript if isinstance(transcript, list) else None
    if turns is not None:
        turns = [t if isinstance(t, dict) else t.model_dump() for t in turns]
    checker.learn(checker.strings([batch.model_dump(mode="json"), turns, transcript
                                   if isinstance(transcript, str) else None]))
    if turns is not None:
        transcript = [{**t, "content": checker.data(t.get("content"))} for t in turns]
    elif isinstance(transcript, str):
        transcript = checker(transcript)
    dropped: list[Dropped] = []
    entities = []
    for entity in batch.entities:
        name = checker(entity.name)
        if has_marker(name):
            dropped.append(Dropped(item=f"entity {name!r}", reason=NAMED_BY_A_SECRET))
            continue
        hint = checker(entity.same_as_hint) if entity.same_as_hint else None
        properties = checker.properties(entity.properties)
        if left_out := len(entity.properties) - len(properties):
            dropped.append(Dropped(item=f"{left_out} propert{'y' if left_out == 1 else 'ies'} "
                                        f"of {name!r}", reason=NAMED_BY_A_SECRET))
        entities.append(entity.model_copy(update={
            "name": name, "aliases": [a for a in map(checker, entity.aliases)
                                      if not has_marker(a)],
            "properties": properties,
            "same_as_hint": None if hint and has_marker(hint) else hint}))
    relations = []
    for relation in batch.relations:
        source, label, target = map(checker, (relation.source, relation.relation,
                                              relation.target))
        if has_marker(source) or has_marker(target) or has_marker(label):
            dropped.append(Dropped(item=f"{source} -[{label}]-> {target}",
                                   reason=NAMED_BY_A_SECRET))
            continue
        relations.append(relation.model_copy(update={
            "source": source, "relation": label, "target": target,
            "snippet": checker(relation.snippet) if relation.snippet else relation.snippet,
            "evidence": checker(relation.evidence) if relation.evidence else relation.evidence}))
    conversation = batch.conversation.model_copy(update={
        "summary": checker(batch.conversation.summary),
        "tags": [t for t in map(checker, batch.conversation.tags) if not has_marker(t)]})
    forget = [request.model_copy(update={
        "about": checker(request.about),
        "relation": checker(request.relation) if request.relation else request.relation,
        "target": checker(request.target) if request.target else request.target,
        "snippet": checker(request.snippet) if request.snippet else request.snippet})
        for request in batch.forget]
    screened = batch.model_copy(update={"entities": entities, "relations": relations,
                                        "conversation": conversation, "forget": forget})
    return ScreenedBatch(screened, transcript, checker.found, dropped)
