"""The text the recognizers read: obfuscated PII written plainly, with offsets back to the original.

People write PII so that scrapers miss it, and presidio's patterns are ASCII:

- full-width and other compatibility forms (``john＠example.com``, ``４１１１ １１１１ …``):
  each character whose NFKC form is one ASCII character becomes that character;
- ``name (at) domain (dot) com``, ``[at]``/``[dot]``, ``{at}``, ``<at>`` inside an address:
  the bracketed word becomes ``@`` or ``.``;
- dotted card numbers ``4111.1111.1111.1111``: the dots become spaces when the
  digits pass Luhn (presidio checks Luhn again);
- lower-case IBANs ``de89 3704 …``: upper-cased when the checksum (mod-97) holds;
- percent-encoding (``john.smith%40gmail.com``, ``536%2D22%2D1974``, double-encoded
  ``%2540``), decoded in rounds (at most ``PERCENT_ROUNDS``), invalid escapes left as
  they are: for URLs and published strings (``decode_percent``).

A :class:`TextView` holds the rewritten text and, for each of its characters,
the span of the original it came from, so a finding in the view redacts the
whole original form (``john (at) example (dot) com`` as one e-mail).  Only
documents with a trigger (:data:`TRIGGER_RE2`, one Arrow scan of the batch) get
a view; the others are read as they are.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote

#: Rounds of percent-decoding (``%252540`` needs three); more is an attack, left encoded.
PERCENT_ROUNDS = 4

_OPEN, _CLOSE = r"[(\[{<]", r"[)\]}>]"
_AT = rf"\s*{_OPEN}\s*(?:at|@)\s*{_CLOSE}\s*"
_DOT = rf"\s*{_OPEN}\s*(?:dot|\.)\s*{_CLOSE}\s*"
_LABEL = r"[\w+\-]+"
# local (at) label (dot) label ...: a whole obfuscated address, at least one bracketed word in it
_OBFUSCATED_EMAIL = re.compile(
    rf"{_LABEL}(?:(?:{_DOT}|\.){_LABEL})*(?:{_AT}|@){_LABEL}(?:(?:{_DOT}|\.){_LABEL})+", re.IGNORECASE
)
_BRACKETED = re.compile(rf"(?P<at>{_AT})|(?P<dot>{_DOT})", re.IGNORECASE)
_LAST_LABEL = re.compile(rf"(?:{_DOT}|\.)\s*([\w-]+)$", re.IGNORECASE)
# The top-level domains an obfuscated address may end in: any country code (two letters) and the
# generic ones people write addresses in.  Brand and dictionary TLDs (.sharp, .party, .link) would
# turn "meet me (at) noon (dot) sharp" into an address; presidio's public-suffix check accepts them.
MAIL_TLDS = frozenset("com net org edu gov mil int info biz name pro mobi app dev io co me tv email online".split())
# 13-19 digits in dotted groups of 4 (the last 1-7), or Amex's 4.6.5
_DOTTED_CARD = re.compile(r"(?<![\d.])(?:\d{4}\.\d{4}\.\d{4}\.\d{1,7}|\d{4}\.\d{6}\.\d{5})(?![\d]|\.\d)")
# an IBAN written with lower-case letters (country code, check digits, groups of 4, a shorter last group)
_IBAN_ANY_CASE = re.compile(
    r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]{4}){2,7}(?:[ -]?[A-Za-z0-9]{1,3})?(?![A-Za-z0-9])"
)
_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_BRACKET_WORD = re.compile(rf"{_OPEN}\s*(?:at|dot)\s*{_CLOSE}", re.IGNORECASE)

# What makes a document need a view, as (RE2 for Arrow's scan of a batch, Python for a few short strings): a
# compatibility digit or at sign, a bracketed at/dot, a dotted card shape, an IBAN shape in any case, (an escape).
_TRIGGER_PARTS = (
    (
        r"[\x{FF10}-\x{FF19}\x{FF20}\x{FE6B}\x{1D7CE}-\x{1D7FF}\x{1FBF0}-\x{1FBF9}]",
        "[\uff10-\uff19\uff20\ufe6b\U0001d7ce-\U0001d7ff\U0001fbf0-\U0001fbf9]",
    ),
    (r"(?i:[(\[{<]\s*(?:at|dot)\s*[)\]}>])",) * 2,
    (r"\d{4}\.\d{4}\.\d{4}\.\d|\d{4}\.\d{6}\.\d{5}",) * 2,
    # an IBAN shape with a lower-case letter in its country code or first group (upper case needs no view)
    (
        r"\b(?:[a-z][A-Za-z]|[A-Z][a-z])\d{2}[ -]?[A-Za-z0-9]{4}[ "
        r"-]?[A-Za-z0-9]{4}|\b[A-Z]{2}\d{2}[ -]?[A-Z0-9]{0,3}[a-z]",
        r"(?<![A-Za-z0-9])(?:(?:[a-z][A-Za-z]|[A-Z][a-z])\d{2}[ -]?[A-Za-z0-9]{4}[ "
        r"-]?[A-Za-z0-9]{4}|[A-Z]{2}\d{2}[ -]?[A-Z0-9]{0,3}[a-z])",
    ),
)
TRIGGER_RE2 = "|".join(f"(?:{re2})" for re2, _ in _TRIGGER_PARTS)
TRIGGER = re.compile("|".join(f"(?:{py})" for _, py in _TRIGGER_PARTS))
_LOWER_IBAN_HINT = re.compile(_TRIGGER_PARTS[-1][1])
PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
PERCENT_RE2 = r"%[0-9A-Fa-f]{2}"


@functools.cache
def _nfkc_table() -> dict[int, str]:
    """Code point -> its NFKC form, for every character whose NFKC form is one other ASCII character."""
    table = {}
    for cp in range(0x80, 0x20000):
        c = chr(cp)
        n = unicodedata.normalize("NFKC", c)
        if n != c and len(n) == 1 and n.isascii():
            table[cp] = n
    return table


@functools.cache
def _nfkc_chars() -> re.Pattern:
    """The characters of _nfkc_table as one class (a scan finds the few in a page faster than translate())."""
    ranges: list[list[int]] = []
    for cp in sorted(_nfkc_table()):
        if ranges and cp == ranges[-1][1] + 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return re.compile("[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges) + "]")


@dataclass(frozen=True)
class Edit:
    """One replacement of a rewrite: view[start:end] came from the previous text's [old_start:old_end]."""

    start: int
    end: int
    old_start: int
    old_end: int


@dataclass(frozen=True)
class TextView:
    """``text`` as the recognizers read it, and the rewrites (``layers``, oldest first) that lead back to ``original``.

    Rewrites that keep the length (NFKC, dotted cards, IBAN case) need no layer.
    """

    original: str
    text: str
    layers: tuple[tuple[Edit, ...], ...] = ()

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span a view span [start, end) came from (a rewritten form is taken whole)."""
        if end <= start:
            return start, end
        lo, hi = start, end
        for edits in reversed(self.layers):
            lo, hi = _back(edits, lo)[0], _back(edits, hi - 1)[1]
        return lo, hi

    @property
    def changed(self) -> bool:
        return self.text != self.original


def _back(edits: tuple[Edit, ...], pos: int) -> tuple[int, int]:
    """The span of the previous text that character ``pos`` of a rewritten text came from."""
    i = bisect.bisect_right(edits, pos, key=lambda e: e.start) - 1
    if i < 0:
        return pos, pos + 1
    e = edits[i]
    if pos < e.end:
        return e.old_start, e.old_end
    old = pos - e.end + e.old_end
    return old, old + 1


def _rewrite(view: TextView, edits: list[tuple[int, int, str]]) -> TextView:
    """Apply non-overlapping, sorted edits (start, end, replacement) to a view's text, as one more layer."""
    if not edits:
        return view
    out, layer, pos, shift = [], [], 0, 0
    for s, e, rep in edits:
        out += [view.text[pos:s], rep]
        layer.append(Edit(s + shift, s + shift + len(rep), s, e))
        shift += len(rep) - (e - s)
        pos = e
    out.append(view.text[pos:])
    return TextView(view.original, "".join(out), (*view.layers, tuple(layer)))


def _same_length(view: TextView, text: str) -> TextView:
    return view if text == view.text else TextView(view.original, text, view.layers)


def _percent_decoded(view: TextView) -> TextView:
    """One round: each run of escapes decoded as UTF-8 (invalid bytes stay escaped)."""
    edits = []
    for m in _PERCENT.finditer(view.text):
        decoded = unquote(m.group(), errors="strict") if _valid_utf8(m.group()) else None
        if decoded is not None and decoded != m.group():
            edits.append((m.start(), m.end(), decoded))
    return _rewrite(view, edits)


def _valid_utf8(escapes: str) -> bool:
    try:
        bytes.fromhex(escapes.replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _deobfuscated_emails(view: TextView) -> TextView:
    edits = []
    for m in _OBFUSCATED_EMAIL.finditer(view.text):
        tld = _LAST_LABEL.search(m.group()).group(1).lower()
        if not (tld in MAIL_TLDS or len(tld) == 2 and tld.isalpha()):
            continue
        for b in _BRACKETED.finditer(view.text, m.start(), m.end()):
            edits.append((b.start(), b.end(), "@" if b.group("at") else "."))
    return _rewrite(view, edits)


def luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _undotted_cards(text: str) -> str:
    return _DOTTED_CARD.sub(
        lambda m: m.group().replace(".", " ") if luhn(m.group().replace(".", "")) else m.group(), text
    )


def iban_checksum(compact: str) -> bool:
    """ISO 13616 mod-97 on an upper-case IBAN without separators."""
    if len(compact) < 15 or not compact.isalnum():
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _upper_ibans(text: str) -> str:
    def fix(m: re.Match) -> str:
        value = m.group()
        if value.isupper() or not value[:2].isalpha():
            return value
        groups = re.split(r"([ -])", value.upper())
        # the longest prefix of whole groups that passes mod-97 (trailing words may follow an IBAN)
        for k in range(len(groups), 0, -2):
            head = "".join(groups[:k])
            if iban_checksum(re.sub(r"[ -]", "", head)):
                return head + value[len(head) :]
        return value

    return _IBAN_ANY_CASE.sub(fix, text)


def text_view(text: str, decode_percent: bool = False) -> TextView:
    """The view of one text (see the module docstring); the text itself when nothing applies.

    Each rewrite runs only where a quick search finds what it rewrites (most triggered documents need one).
    """
    view = TextView(text, text)
    if decode_percent and "%" in text:
        for _ in range(PERCENT_ROUNDS):
            nxt = _percent_decoded(view)
            if nxt is view:
                break
            view = nxt
    if not view.text.isascii() and _nfkc_chars().search(view.text):
        table = _nfkc_table()
        view = _same_length(view, _nfkc_chars().sub(lambda m: table[ord(m.group())], view.text))
    if _BRACKET_WORD.search(view.text):
        view = _deobfuscated_emails(view)
    if _DOTTED_CARD.search(view.text):
        view = _same_length(view, _undotted_cards(view.text))
    if _LOWER_IBAN_HINT.search(view.text):
        view = _same_length(view, _upper_ibans(view.text))
    return view
