"""URLs redacted like text: userinfo removed, PII in path segments, query keys and values, fragments replaced.

A URL such as ``https://user:pass@host/peter.parker@yahoo.com/?ssn=536-22-1974``
reaches every published output (``documents/final``, the MDS samples, the
WebDataset ``.json`` members) through the ``url`` column, so the PII stage
rewrites that column too:

- the userinfo (``user:pass@``) is always removed (and counted as one
  ``URL_CREDENTIALS`` finding);
- the rest is cut into *values* at its delimiters: path segments (``/``), query
  items (``&``, ``;``) and their keys and values (``=``), the fragment likewise;
- each value is percent-decoded (``+`` is a space in a query), repeatedly
  (``%2540`` -> ``%40`` -> ``@``, at most ``PERCENT_ROUNDS`` rounds), invalid
  escapes left as they are, and read by the stage's own recognizers (the same
  entities, thresholds, validation and normalized views as text; a query key is
  read in front of its value, so ``ssn=...`` is context for the number);
- a value with a finding is replaced *whole* by the tokens of its findings (the
  entity's action: ``<US_SSN>``, a hash token, a mask), percent-encoded so the
  URL stays valid: ``?ssn=%3CUS_SSN%3E``.  ``urllib.parse.urlsplit`` gives the
  same scheme and host (the host is kept; the card groups IP hosts);
- a value too dense to analyze (more than ``max_candidate_digits`` digits in
  candidates) is replaced by ``<MASKED>``, never kept unread.

Most URLs hold none of this: one RE2 scan of the batch (:func:`UrlRedactor.needs`)
picks the few with a userinfo, an escape, a ``+`` between digits or what may be
a text candidate (:func:`url_trigger`), and only those become Python strings.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote, unquote, unquote_plus, urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stages.pii.normalize import PERCENT_ROUNDS
from stages.pii.redact import Finding

log = logging.getLogger(__name__)

#: Replacement of a value that could not be read (too dense), and the entity it is counted as.
MASK = "<MASKED>"
USERINFO = "URL_CREDENTIALS"

# RFC 3986, appendix B: every string matches (DOTALL: a CR or NUL stays in its part)
_URL = re.compile(r"(?P<scheme>[^:/?#]+:)?(?://(?P<authority>[^/?#]*))?(?P<path>[^?#]*)(?:\?(?P<query>[^#]*))?(?:#(?P<fragment>.*))?", re.DOTALL)
_ITEM_SEPS = re.compile(r"[&;?]")  # a second "?" in a query is data, but it ends a value as well as "&" does
#: Read as spaces by the recognizers (one character each, so offsets hold): presidio's e-mail pattern takes
#: "social?e=john" for a local part, then refuses the whole match, and the address would be missed.
_DETECT_SPACES = str.maketrans("?=&;", "    ")

def url_trigger(min_digits: int) -> str:
    """RE2 for the URLs worth reading: a superset of what makes a value a text candidate or a view trigger, and of
    what makes urlsplit refuse a URL (brackets in its authority: a published URL must split), in
    ASCII classes (the text candidates' Unicode classes cost Arrow ~15 ms to compile per call; ASCII ones 0.3 ms),
    with any non-ASCII character sending the URL to Python."""
    return "|".join([
        r"[\x{80}-\x{10FFFF}]",  # any non-ASCII character: full-width forms, an IRI
        r"@",  # a userinfo, an e-mail
        r"%[0-9A-Fa-f]{2}|[0-9]\+[0-9]",  # an escape; a "+" (a space in a query) between digits
        r"::|:[0-9A-Fa-f]{1,4}:|[0-9]\.[0-9]{1,3}\.[0-9]",  # IPv6, a dotted quad
        r"[A-Za-z]{2}[0-9]{2}",  # an IBAN shape
        rf"[0-9](?:[^A-Za-z]{{0,4}}[0-9]){{{min_digits - 1}}}",  # a run of digits with separators
        r"(?i:[(\[{<]\s*(?:at|dot)\s*[)\]}>])",  # a bracketed at or dot
        r"^[^/?#]*//[^/?#]*[\[\]]",  # a bracket in the authority: urlsplit may refuse it (a URL is published only if it splits)
    ])



@dataclass(frozen=True)
class Value:
    """A stretch ``url[start:end]`` read on its own; ``key`` is the index of the value it is read after (a query key)."""

    start: int
    end: int
    decoded: str
    key: int | None = None


@dataclass
class UrlResult:
    """What redaction did to one URL."""

    url: str | None
    counts: Counter = field(default_factory=Counter)
    #: values replaced by MASK (too dense to read, or a leftover check)
    masked: int = 0
    #: the URL could not be split and was cut to its origin
    cut: bool = False

    @property
    def findings(self) -> int:
        return sum(self.counts.values())


def decode(raw: str, plus: bool) -> str:
    """Percent-decoded until it no longer changes (at most PERCENT_ROUNDS rounds); ``plus``: ``+`` is a space (query)."""
    value = unquote_plus(raw) if plus else unquote(raw)
    for _ in range(PERCENT_ROUNDS - 1):
        nxt = unquote(value)
        if nxt == value:
            break
        value = nxt
    return value


def _items(url: str, start: int, end: int, values: list[Value]) -> None:
    """Query-like part url[start:end]: items split at &, ; and ?, each key=value as two values (the key read first)."""
    pos = start
    for piece in _ITEM_SEPS.split(url[start:end]):
        k_end = pos + piece.find("=") if "=" in piece else None
        if k_end is None:
            if piece:
                values.append(Value(pos, pos + len(piece), decode(piece, plus=True)))
        else:
            key_index = None
            if k_end > pos:
                values.append(Value(pos, k_end, decode(url[pos:k_end], plus=True)))
                key_index = len(values) - 1
            if pos + len(piece) > k_end + 1:
                values.append(Value(k_end + 1, pos + len(piece), decode(url[k_end + 1 : pos + len(piece)], plus=True), key_index))
        pos += len(piece) + 1


def _segments(url: str, start: int, end: int, values: list[Value]) -> None:
    """Path-like part url[start:end]: its segments between slashes."""
    pos = start
    for seg in url[start:end].split("/"):
        if seg:
            values.append(Value(pos, pos + len(seg), decode(seg, plus=False)))
        pos += len(seg) + 1


def split(url: str) -> tuple[tuple[int, int] | None, list[Value]]:
    """(the span of the userinfo with its "@", or None; the values of the URL): offsets into ``url``."""
    m = _URL.match(url)
    userinfo_end = None
    authority = m.group("authority")  # the userinfo is what comes before its last "@"
    if authority is not None and "@" in authority:
        userinfo_end = m.start("authority") + authority.rfind("@") + 1
    values: list[Value] = []
    _segments(url, *m.span("path"), values)
    if m.group("query") is not None:
        _items(url, *m.span("query"), values)
    if m.group("fragment") is not None:
        s, e = m.span("fragment")
        (_items if "=" in m.group("fragment") else _segments)(url, s, e, values)
    return ((m.start("authority"), userinfo_end) if userinfo_end is not None else None), values


class UrlRedactor:
    """Rewrites URLs with a detector of the text recognizers.

    ``detect(texts, langs)`` -> ({index: findings}, {index: why too dense}); ``token(finding, value)``
    -> the replacement of one finding (its entity's action), None to keep the value (``annotate``);
    ``min_digits``: the fewest digits of a number candidate (the stage's phone/SSN/card minimum);
    ``encode``: percent-encode the replacement tokens (a valid URL) or keep them readable (the card).
    ``leftover``: optional last check of a decoded value; true masks the value whole.
    """

    def __init__(
        self,
        detect: Callable[[list[str], list[str | None]], tuple[dict[int, list[Finding]], dict[int, str]]],
        token: Callable[[Finding, str], str | None],
        min_digits: int = 7,
        encode: bool = True,
        leftover: Callable[[str], bool] | None = None,
    ):
        self.detect = detect
        self.token = token
        self.encode = encode
        self.leftover = leftover
        self.trigger = url_trigger(min_digits)

    def needs(self, urls: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Which URLs may hold something to redact (one RE2 scan of the batch)."""
        return pc.fill_null(pc.match_substring_regex(urls, self.trigger), False).to_numpy(zero_copy_only=False)

    def _encoded(self, token: str) -> str:
        return quote(token, safe="*") if self.encode else token

    def redact(self, urls: list[str | None], langs: list[str | None] | None = None) -> list[UrlResult]:
        """Each URL redacted; a URL that cannot be split is cut to its scheme and host (counted, logged)."""
        langs = langs or [None] * len(urls)
        parsed: dict[int, tuple | None] = {}
        texts, owners, text_langs = [], [], []
        for i, url in enumerate(urls):
            if not url:
                continue
            try:
                urlsplit(url)  # what readers of the published URL will do with it (a bracketed host that is no IP raises)
                parsed[i] = split(url)
            except Exception as e:  # noqa: BLE001 -- a bad value costs only its URL
                log.warning("pii: a URL could not be split (%s); cut to its origin", type(e).__name__)
                parsed[i] = None
                continue
            for group in _read_groups(parsed[i][1]):
                texts.append(" ".join(parsed[i][1][j].decoded.translate(_DETECT_SPACES) for j in group))
                owners.append((i, group))
                text_langs.append(langs[i])
        found, dense = self.detect(texts, text_langs) if texts else ({}, {})
        results = {i: _Pending() for i, p in parsed.items() if p is not None}
        for t, (i, group) in enumerate(owners):
            pending = results[i]
            values = parsed[i][1]
            if t in dense:  # the members with digits (a key such as "ids" stays)
                pending.masked.update([j for j in group if any(c.isdigit() for c in values[j].decoded)] or group)
                continue
            bounds = _bounds(values, group)
            for f in found.get(t, []):
                pending.counts[f.entity] += 1
                token = self.token(f, texts[t][f.start : f.end])
                for j, (lo, hi) in zip(group, bounds):
                    if f.start < hi and f.end > lo:  # a finding across a key and its value replaces both
                        pending.tokens.setdefault(j, []).append(token)
        out = []
        for i, url in enumerate(urls):
            if i not in parsed:
                out.append(UrlResult(url))
            elif parsed[i] is None:
                out.append(UrlResult(origin(url), cut=True))
            else:
                out.append(self._rebuild(url, *parsed[i], results[i]))
        return out

    def _rebuild(self, url: str, userinfo: tuple[int, int] | None, values: list[Value], pending: "_Pending") -> UrlResult:
        counts = pending.counts
        edits: list[tuple[int, int, str]] = []
        if userinfo is not None:
            edits.append((userinfo[0], userinfo[1], ""))
            counts[USERINFO] += 1
        masked = 0
        for j, v in enumerate(values):
            tokens = [t for t in pending.tokens.get(j, []) if t is not None]  # None: an annotated finding
            if j in pending.masked or (not tokens and self.leftover is not None and self.leftover(v.decoded)):
                edits.append((v.start, v.end, self._encoded(MASK)))
                masked += 1
            elif tokens:
                edits.append((v.start, v.end, self._encoded("".join(tokens))))
        out, pos = [], 0
        for s, e, rep in sorted(edits):
            out += [url[pos:s], rep]
            pos = e
        out.append(url[pos:])
        return UrlResult("".join(out), counts, masked)


@dataclass
class _Pending:
    """Findings of one URL while its values are read: counts, tokens per value, values too dense to read."""

    counts: Counter = field(default_factory=Counter)
    tokens: dict[int, list[str | None]] = field(default_factory=dict)
    masked: set[int] = field(default_factory=set)


def _read_groups(values: list[Value]) -> list[list[int]]:
    """The values read together: a query key with its value ("ssn 536-22-1974"), every other value alone."""
    keys = {v.key for v in values if v.key is not None}
    return [[v.key, j] if v.key is not None else [j] for j, v in enumerate(values) if j not in keys]


def _bounds(values: list[Value], group: list[int]) -> list[tuple[int, int]]:
    """Offsets of each value inside the text it was read in (the group's values joined by one space)."""
    out, pos = [], 0
    for j in group:
        n = len(values[j].decoded)
        out.append((pos, pos + n))
        pos += n + 1
    return out


def origin(url: str) -> str | None:
    """scheme://host[:port]/ of a URL without its userinfo (the fallback of a URL that cannot be read);
    None when even that does not split (a bracketed host that is no IP address)."""
    m = _URL.match(url or "")
    if not m or m.group("authority") is None:
        return None
    host = m.group("authority").rpartition("@")[2]
    cut = f"{m.group('scheme') or ''}//{host}/"
    try:
        urlsplit(cut)
    except ValueError:
        return None
    return cut
