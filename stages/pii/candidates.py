"""The cheap pass: where in a document could an entity be, and which text presidio must see.

One regular expression per configuration finds *candidates*: text that any
enabled recognizer could match (a run of enough digits, an ``@`` between word
characters, a dotted quad, ``::``, an IBAN-shaped token, ``://user:pass@``).
It is deliberately loose (a superset of what presidio's recognizers accept: a
date is a phone candidate) because precision comes from presidio afterwards;
what it must never do is miss text a recognizer would match.  A document
without candidates is never given to presidio.

The expression runs in Arrow's RE2 over the whole batch, twice, both in C++:
a yes/no per document, then, on the documents with a candidate, a replace that
wraps every candidate in NUL marks, from which the spans are read with one
``str.split``.  (Python's ``re`` runs this alternation at about 5 MB/s; RE2 at
hundreds.)  The same expression in Python syntax serves documents that hold a
NUL themselves, and the tests (RE2's version matches at least what Python's does).

Around each candidate, a *window* of ``context_chars`` either side (snapped
out to whitespace, so no word is cut) carries presidio's context words;
overlapping windows merge.  A window longer than ``chunk_chars`` is cut into
overlapping pieces, and each piece *owns* the findings that start in its
middle part, so an entity that crosses a cut is found whole, once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from stages.pii.config import PiiConfig
from stages.pii.recognizers import glued

# What python-phonenumbers accepts between the digits of a number (its
# VALID_PUNCTUATION without the letter x), plus whitespace.
_PHONE_PUNCT = (
    r"\-\u2010-\u2015\u2212\u30fc\uff0d-\uff0f\u00ad\u200b\u2060().\[\]/~\u2053\u223c\uff5e\uff08\uff09\uff3b\uff3d"
)
_PHONE_SEP = rf"[\s{_PHONE_PUNCT}]"
# RE2 (Arrow) spells the same classes so that they match at least what Python's do:
# its \d, \w, \s are ASCII-only, and it has no look-behind.
_RE2_SPACE = r"\s\pZ\x{85}\x{0b}\x{0c}\x{1c}-\x{1f}"


def _re2_class_escapes(cls: str) -> str:
    """\\uXXXX -> \\x{XXXX} (RE2's spelling of a code point)."""
    return re.sub(r"\\u([0-9a-fA-F]{4})", r"\\x{\1}", cls)


_RE2_PHONE_SEP = "[" + _RE2_SPACE + _re2_class_escapes(_PHONE_PUNCT) + "]"


def _digit_run(min_digits: int) -> tuple[str, str]:
    """At least min_digits digits (any script), up to 4 separator characters between two: (Python, RE2)."""
    py = rf"[+\uff0b(\uff08]?\d(?:{_PHONE_SEP}{{0,4}}\d){{{min_digits - 1},}}"
    return py, rf"\pN(?:{_RE2_PHONE_SEP}{{0,4}}\pN){{{min_digits - 1},}}"


# Each entity's candidate, (Python, RE2): a superset of what its presidio recognizer matches.
# Every alternative starts with a character, not an optional part, so the scan skips fast.
CANDIDATES = {
    # an @ between a local-part character and a dotted domain; RE2 (no look-behind) takes the whole local part,
    # else a number run in it ("jane604280994@...") is a candidate of its own that swallows the character before @
    "EMAIL_ADDRESS": (r"(?<=[^\s@])@\w[\w-]*\.\w", r"[^\s@]+@[\pL\pN_][\pL\pN_-]*\.[\pL\pN_]"),
    "URL_CREDENTIALS": (r"://[^\s/?#@]*:[^\s/?#@]*@", r"://[^\s/?#@]*:[^\s/?#@]*@"),
    # a dotted quad; an IPv6 address has "::" or (all 8 groups) ":h:h:"
    "IP_ADDRESS": (
        r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|::|:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:",
        r"\pN{1,3}\.\pN{1,3}\.\pN{1,3}\.\pN{1,3}|::|:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:",
    ),
    "IBAN_CODE": (r"(?<![A-Z0-9])[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]{4}){2}", r"[A-Z]{2}\pN{2}(?:[ -]?[A-Z0-9]{4}){2}"),
}
# Digit-only entities: the fewest digits each can have (card: 13 in presidio's pattern; SSN: 9).
MIN_DIGITS = {"CREDIT_CARD": 13, "US_SSN": 9}


@dataclass(frozen=True)
class CandidatePattern:
    """The candidate regex in Python (spans) and in RE2 (Arrow's vectorized yes/no per document)."""

    python: re.Pattern
    re2: str


def candidate_pattern(config: PiiConfig, entities: list[str]) -> CandidatePattern | None:
    """One regex for the enabled pattern entities (None: nothing to look for)."""
    parts = [CANDIDATES[e] for e in entities if e in CANDIDATES]
    digits = [MIN_DIGITS.get(e, config.min_phone_digits) for e in entities if e in MIN_DIGITS or e == "PHONE_NUMBER"]
    if digits:
        parts.append(_digit_run(min(digits)))
    if not parts:
        return None
    return CandidatePattern(
        re.compile("|".join(f"(?:{py})" for py, _ in parts)), "|".join(f"(?:{r2})" for _, r2 in parts)
    )


@dataclass(frozen=True)
class Piece:
    """A stretch of one document that presidio analyzes: text[start:end];
    it reports findings starting in [own_start, own_end)."""

    doc: int
    start: int
    end: int
    own_start: int
    own_end: int
    #: the entities whose recognizers must run on it (those its candidates may be)
    entities: frozenset = frozenset()


def _snap_left(text: str, pos: int, slack: int = 32) -> int:
    if pos <= 0:
        return 0
    cut = max(text.rfind(" ", pos - slack, pos), text.rfind("\n", pos - slack, pos))
    return cut + 1 if cut >= 0 else pos


def _snap_right(text: str, pos: int, slack: int = 32) -> int:
    n = len(text)
    if pos >= n:
        return n
    hits = [i for i in (text.find(" ", pos, pos + slack), text.find("\n", pos, pos + slack)) if i >= 0]
    return min(hits) if hits else pos


_DOTTED_QUAD = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_EMAIL_LIKE = frozenset({"EMAIL_ADDRESS", "URL_CREDENTIALS"})
_IP_ONLY = frozenset({"IP_ADDRESS"})
_NUMBERS = frozenset({"PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IP_ADDRESS"})
_IBAN = _NUMBERS | {"IBAN_CODE"}


def span_entities(candidate: str) -> frozenset:
    """The entities a candidate may belong to, so that only their recognizers run on its window.

    The point is the phone recognizer, which costs the most: a dotted quad
    (an IP address) or an e-mail address does not need it.
    """
    if "@" in candidate:
        return _EMAIL_LIKE
    if ":" in candidate or _DOTTED_QUAD.fullmatch(candidate):
        return _IP_ONLY
    if candidate[:2].isalpha():
        return _IBAN
    return _NUMBERS


def glued_number(text: str, start: int, end: int) -> bool:
    """A bare run of ASCII digits joined to a word: by a hyphen, slash, underscore or # (``article-8772683``), which
    the phone, card and SSN recognizers drop (recognizers.glued), or directly to an ASCII letter (``n11752374``,
    ``article202159566``), where presidio's card and SSN patterns find no word boundary and python-phonenumbers
    refuses a number next to a Latin letter.  No match can start or end inside a run without separators, so
    presidio need not see it.  Common in URL slugs."""
    run = text[start:end]
    if not (run.isascii() and run.isdigit()):
        return False
    letter = (start > 0 and text[start - 1].isascii() and text[start - 1].isalpha()) or (
        end < len(text) and text[end].isascii() and text[end].isalpha()
    )
    return letter or glued(text, start, end)


def windows(text: str, spans: list[tuple[int, int]], context: int) -> list[tuple[int, int, frozenset]]:
    """Candidate spans widened by ``context`` characters (to whitespace) and merged, with the entities their
    candidates may be; spans must be sorted."""
    out: list[list] = []
    for s, e in spans:
        if glued_number(text, s, e):
            continue
        lo, hi = _snap_left(text, s - context), _snap_right(text, e + context)
        kinds = span_entities(text[s:e])
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
            out[-1][2] = out[-1][2] | kinds
        else:
            out.append([lo, hi, kinds])
    return [(a, b, k) for a, b, k in out]


def pieces(doc: int, start: int, end: int, chunk: int, overlap: int, entities: frozenset = frozenset()) -> list[Piece]:
    """Cut [start, end) into pieces of at most ``chunk`` characters overlapping by ``overlap``.

    A finding that starts in a piece's owned part and is at most ``overlap // 2``
    long lies wholly inside that piece, and every start position is owned by
    exactly one piece.
    """
    if end - start <= chunk:
        return [Piece(doc, start, end, start, end, entities)]
    half = overlap // 2
    step = chunk - overlap
    out = []
    k = 0
    while True:
        s = start + k * step
        e = min(end, s + chunk)
        own_s = start if k == 0 else s + half
        last = e >= end
        own_e = end if last else s + step + half
        out.append(Piece(doc, s, e, own_s, own_e, entities))
        if last:
            return out
        k += 1


_DIGIT = re.compile(r"\d")
MARK = "\x00"


def marked_texts(texts: pa.Array | pa.ChunkedArray, pattern: CandidatePattern) -> list[str | None]:
    """Each text with every candidate wrapped in MARKs (Arrow's RE2 replace, all documents at once)."""
    return pc.replace_substring_regex(texts, pattern.re2, MARK + r"\0" + MARK).to_pylist()


def candidate_spans(text: str, marked: str | None, pattern: CandidatePattern) -> Iterator[tuple[int, int]]:
    """(start, end) of each candidate in ``text``, read off its marked copy (or found by Python's re)."""
    if marked is None or MARK in text:  # a NUL of its own would confuse the marks
        yield from (m.span() for m in pattern.python.finditer(text))
        return
    pos = 0
    for i, part in enumerate(marked.split(MARK)):
        if i % 2:
            yield pos, pos + len(part)
        pos += len(part)


def find_pieces(
    doc: int, text: str, spans: Iterable[tuple[int, int]], config: PiiConfig, overlap: int
) -> list[Piece] | None:
    """The pieces of one document that presidio must analyze (empty: no candidate).

    None when the candidates hold more than ``max_candidate_digits`` digits: the
    document is a dump of numbers, and the reading stops there.
    """
    kept, digits = [], 0
    for s, e in spans:
        kept.append((s, e))
        digits += len(_DIGIT.findall(text, s, e))
        if digits > config.max_candidate_digits:
            return None
    out = []
    for lo, hi, entities in windows(text, kept, config.context_chars):
        out += pieces(doc, lo, hi, config.chunk_chars, overlap, entities)
    return out
