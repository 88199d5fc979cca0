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
  same scheme;
- an e-mail address followed by a file extension or another word
  (``maria@gmail.com.html``, ``maria@gmail.com_profile``) is read up to its
  public suffix, which presidio's check of the whole domain refuses;
- a query value whose key names an SSN or a phone number (``ssn``,
  ``social_security_number``, ``phone``, ``tel``, ...) is that entity when its
  digits are one (9 digits of a valid SSN; 7 to 15 of a phone number), however
  it is written (``?ssn=536221974``): the key is its format;
- the host is read too, whole and label by label (decoded): labels with a
  finding are replaced (``536-22-1974.ssn.example`` -> ``%3CUS_SSN%3E.ssn.example``,
  an address across labels as one token), and, with ``host_leftover``, a label
  that still looks like PII (the candidate pattern: 7+ digits, an IP written with
  dashes) becomes ``<MASKED>``; a host that is an IP address (any spelling) is
  the server's and is kept (the card prints it as ``(IP address)``);
- a value too dense to analyze (more than ``max_candidate_digits`` digits in
  candidates) is replaced by ``<MASKED>``, never kept unread.

Most URLs hold none of this: one RE2 scan of the batch (:func:`UrlRedactor.needs`)
picks the few with a userinfo, an escape, a ``+`` between digits or what may be
a text candidate (:func:`url_trigger`), and only those become Python strings.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
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
_URL = re.compile(
    r"(?P<scheme>[^:/?#]+:)?(?://(?P<authority>[^/?#]*))?(?P<path>[^?#]*)(?:\?(?P<query>[^#]*))?(?:#(?P<fragment>.*))?",
    re.DOTALL,
)
_ITEM_SEPS = re.compile(r"[&;?]")  # a second "?" in a query is data, but it ends a value as well as "&" does
#: Read as spaces by the recognizers (one character each, so offsets hold): presidio's e-mail pattern takes
#: "social?e=john" for a local part, then refuses the whole match, and the address would be missed.
_DETECT_SPACES = str.maketrans("?=&;", "    ")
# an address whose domain goes on past its public suffix: "maria@gmail.com.html", "maria@gmail.com_profile"
_EMAIL_LIKE = re.compile(r"[^\s@/]+@(?P<domain>[\w-]+(?:[._][\w-]+)+)")
_LABEL_SEP = re.compile(r"[._]")
# query keys whose value is an entity when its digits are (tokens of the key, lower case): the key is the format
_SSN_KEYS = frozenset({"ssn", "ssns", "usssn", "socialsecurity", "socialsecuritynumber", "socialsecurityno", "socsec"})
_PHONE_KEYS = frozenset(
    {
        "phone",
        "phonenumber",
        "phoneno",
        "tel",
        "telephone",
        "telefon",
        "telefono",
        "mobile",
        "mobilephone",
        "cell",
        "cellphone",
        "fax",
        "msisdn",
        "whatsapp",
        "handy",
        "portable",
    }
)
_KEY_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_KEY_DIGITS = re.compile(r"\+?\(?\d[\d\s().\-/]*")
#: The entities a query key can name for its value.
KEYED_ENTITIES = ("US_SSN", "PHONE_NUMBER")
#: The score of a keyed value (SSN5's "medium" 0.5 with its context word's 0.35: the key is both).
KEYED_SCORE = 0.85

# WHATWG URL: a host whose last label is a number (decimal, 0x hex, 0 octal) is an IPv4 address
_NUMBER_LABEL = re.compile(r"0[xX][0-9A-Fa-f]*|[0-9]+")
_PORT = re.compile(r":[0-9]*$")


def ip_host(host: str) -> bool:
    """Whether a host is an IP address in any spelling a browser accepts: dotted, one number, hex or octal parts,
    IPv6 with or without brackets, full-width digits, percent-escapes, a trailing dot, a port."""
    h = _plain_host(host)
    if h.startswith("[") or h.count(":") >= 2:
        return True
    h = _PORT.sub("", h).rstrip(".")
    last = h.rsplit(".", 1)[-1]
    return bool(last) and _NUMBER_LABEL.fullmatch(last) is not None


def _plain_host(host: str) -> str:
    """Percent-decoded, NFKC (full-width digits and dots), lower-case: what a browser resolves."""
    return unicodedata.normalize("NFKC", unquote(host)).strip().lower()


def email_suffixes(text: str) -> str:
    """``text`` (same length) with a space after the public suffix of each address whose domain goes on past it
    (``maria@gmail.com.html`` -> ``maria@gmail.com html``, ``maria@gmail.com_x`` likewise): presidio's check of the
    whole domain would refuse the address."""
    if "@" not in text:
        return text
    import tldextract  # presidio's own dependency, made offline below (its bundled public suffix list)

    from stages.pii.recognizers import offline_tldextract

    offline_tldextract()
    out = list(text)
    for m in _EMAIL_LIKE.finditer(text):
        domain, start = m.group("domain"), m.start("domain")
        whole = tldextract.extract(domain)
        if "_" not in domain and whole.suffix and whole.domain:
            continue  # presidio reads it as it is
        for cut in reversed([c.start() for c in _LABEL_SEP.finditer(domain)]):  # the longest that ends in a suffix
            head = domain[:cut]
            found = tldextract.extract(head)
            if "_" not in head and found.suffix and found.domain:
                out[start + cut] = " "
                break
    return "".join(out)


def keyed_entity(key: str, value: str, allowed: frozenset) -> str | None:
    """The entity a query value is because its key names it (``ssn=536221974``), if its digits are one; else None."""
    words = [w.lower() for w in _KEY_WORDS.findall(key)]
    joined = "".join(words)
    m = _KEY_DIGITS.fullmatch(value.strip())
    if not words or m is None:
        return None
    digits = "".join(c for c in value if c.isdigit())
    names = {joined, *words}
    if "US_SSN" in allowed and names & _SSN_KEYS and len(digits) == 9 and _valid_ssn(value):
        return "US_SSN"
    if "PHONE_NUMBER" in allowed and names & _PHONE_KEYS and 7 <= len(digits) <= 15:
        return "PHONE_NUMBER"
    return None


@functools.cache
def _ssn_check():
    from stages.pii.recognizers import import_presidio

    import_presidio()
    from presidio_analyzer.predefined_recognizers import UsSsnRecognizer

    return UsSsnRecognizer()


def _valid_ssn(value: str) -> bool:
    """The SSA's rules, as presidio's recognizer applies them (no 000/666 area, no 00 group, no 0000 serial...)."""
    return not _ssn_check().invalidate_result(value.strip())


def url_trigger(min_digits: int) -> str:
    """RE2 for the URLs worth reading: a superset of what makes a value a text candidate or a view trigger, and of
    what makes urlsplit refuse a URL (brackets in its authority: a published URL must split), in
    ASCII classes (the text candidates' Unicode classes cost Arrow ~15 ms to compile per call; ASCII ones 0.3 ms),
    with any non-ASCII character sending the URL to Python."""
    return "|".join(
        [
            r"[\x{80}-\x{10FFFF}]",  # any non-ASCII character: full-width forms, an IRI
            r"@",  # a userinfo, an e-mail
            r"%[0-9A-Fa-f]{2}|[0-9]\+[0-9]",  # an escape; a "+" (a space in a query) between digits
            r"::|:[0-9A-Fa-f]{1,4}:|[0-9]\.[0-9]{1,3}\.[0-9]",  # IPv6, a dotted quad
            r"[A-Za-z]{2}[0-9]{2}",  # an IBAN shape
            rf"[0-9](?:[^A-Za-z]{{0,4}}[0-9]){{{min_digits - 1}}}",  # a run of digits with separators
            r"(?i:[(\[{<]\s*(?:at|dot)\s*[)\]}>])",  # a bracketed at or dot
            r"^[^/?#]*//[^/?#]*[\[\]]",
            # a bracket in the authority: urlsplit may refuse it (a URL is published only if it splits)
        ]
    )


@dataclass(frozen=True)
class Value:
    """A stretch ``url[start:end]`` read on its own; ``key`` is
    the index of the value it is read after (a query key)."""

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
    """Percent-decoded until it no longer changes (at most
    PERCENT_ROUNDS rounds); ``plus``: ``+`` is a space (query)."""
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
                values.append(
                    Value(k_end + 1, pos + len(piece), decode(url[k_end + 1 : pos + len(piece)], plus=True), key_index)
                )
        pos += len(piece) + 1


def _segments(url: str, start: int, end: int, values: list[Value]) -> None:
    """Path-like part url[start:end]: its segments between slashes."""
    pos = start
    for seg in url[start:end].split("/"):
        if seg:
            values.append(Value(pos, pos + len(seg), decode(seg, plus=False)))
        pos += len(seg) + 1


def split(url: str) -> tuple[tuple[int, int] | None, tuple[int, int] | None, list[Value]]:
    """(the span of the userinfo with its "@", or None; the span of the host, or None; the values of the URL):
    offsets into ``url``.  The host is the authority after the userinfo, without the port; a bracketed (IPv6)
    host is no span."""
    m = _URL.match(url)
    userinfo_end = None
    authority = m.group("authority")  # the userinfo is what comes before its last "@"
    host = None
    if authority is not None:
        if "@" in authority:
            userinfo_end = m.start("authority") + authority.rfind("@") + 1
        h_start = userinfo_end if userinfo_end is not None else m.start("authority")
        h_end = h_start + len(_PORT.sub("", url[h_start : m.end("authority")]))
        if h_end > h_start and url[h_start] != "[":
            host = (h_start, h_end)
    values: list[Value] = []
    _segments(url, *m.span("path"), values)
    if m.group("query") is not None:
        _items(url, *m.span("query"), values)
    if m.group("fragment") is not None:
        s, e = m.span("fragment")
        (_items if "=" in m.group("fragment") else _segments)(url, s, e, values)
    return ((m.start("authority"), userinfo_end) if userinfo_end is not None else None), host, values


@dataclass(frozen=True)
class _HostRead:
    """A host read as one text (``labels`` None) or one label of it (``labels`` = (k,)): which labels a finding in
    the text covers, by the decoded labels' bounds in it."""

    bounds: tuple[tuple[int, int], ...]
    labels: tuple[int, ...]


class UrlRedactor:
    """Rewrites URLs (and hosts) with a detector of the text recognizers.

    ``detect(texts, langs)`` -> ({index: findings}, {index: why too dense}); ``token(finding, value)``
    -> the replacement of one finding (its entity's action), None to keep the value (``annotate``);
    ``min_digits``: the fewest digits of a number candidate (the stage's phone/SSN/card minimum);
    ``encode``: percent-encode the replacement tokens (a valid URL) or keep them readable (the card).
    ``leftover``: optional last check of a decoded value; true masks the value whole.
    ``host_leftover``: the same for each label of a host (and the host as a whole).
    ``keyed``: the entities a query key may name for its value (:func:`keyed_entity`).
    """

    def __init__(
        self,
        detect: Callable[[list[str], list[str | None]], tuple[dict[int, list[Finding]], dict[int, str]]],
        token: Callable[[Finding, str], str | None],
        min_digits: int = 7,
        encode: bool = True,
        leftover: Callable[[str], bool] | None = None,
        host_leftover: Callable[[str], bool] | None = None,
        keyed: frozenset = frozenset(),
    ):
        self.detect = detect
        self.token = token
        self.encode = encode
        self.leftover = leftover
        self.host_leftover = host_leftover
        self.keyed = keyed
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
        reads = _Reads()
        for i, url in enumerate(urls):
            if not url:
                continue
            try:
                urlsplit(
                    url
                )  # what readers of the published URL will do with it (a bracketed host that is no IP raises)
                parsed[i] = split(url)
            except Exception as e:  # noqa: BLE001 -- a bad value costs only its URL
                log.warning("pii: a URL could not be split (%s); cut to its origin", type(e).__name__)
                parsed[i] = None
                continue
            values = parsed[i][2]
            for group in _read_groups(values):
                text = email_suffixes(" ".join(values[j].decoded.translate(_DETECT_SPACES) for j in group))
                reads.add((i, "values", group), text, langs[i])
            if parsed[i][1] is not None:
                for text, read in _host_reads(url[slice(*parsed[i][1])]):
                    reads.add((i, "host", read), text, langs[i])
        found, dense = self.detect(reads.texts, reads.langs) if reads.texts else ({}, {})
        results = {i: _Pending() for i, p in parsed.items() if p is not None}
        for t, (i, kind, what) in enumerate(reads.owners):
            if kind == "host":
                self._host_findings(results[i], what, found.get(t, []), t in dense, reads.texts[t])
            else:
                self._value_findings(results[i], parsed[i][2], what, found.get(t, []), t in dense, reads.texts[t])
        out = []
        for i, url in enumerate(urls):
            if i not in parsed:
                out.append(UrlResult(url))
            elif parsed[i] is None:
                out.append(UrlResult(origin(url), cut=True))
            else:
                out.append(self._rebuild(url, *parsed[i], results[i]))
        return out

    def hosts(self, hosts: list[str]) -> list[str]:
        """Each host (not an IP address) with its labels that hold PII replaced, as in a URL."""
        return [r.url.removeprefix("//") for r in self.redact([f"//{h}" for h in hosts])]

    def _value_findings(
        self, pending: _Pending, values: list[Value], group: list[int], findings: list[Finding], dense: bool, text: str
    ) -> None:
        if dense:  # the members with digits (a key such as "ids" stays)
            pending.masked.update([j for j in group if any(c.isdigit() for c in values[j].decoded)] or group)
            return
        bounds = _bounds(values, group)
        if self.keyed and len(group) == 2 and not any(f.end > bounds[1][0] for f in findings):
            entity = keyed_entity(values[group[0]].decoded, values[group[1]].decoded, self.keyed)
            if entity is not None:
                findings = [*findings, Finding(*bounds[1], entity, KEYED_SCORE)]
        for f in findings:
            pending.counts[f.entity] += 1
            token = self.token(f, text[f.start : f.end])
            for j, (lo, hi) in zip(group, bounds, strict=False):
                if f.start < hi and f.end > lo:  # a finding across a key and its value replaces both
                    pending.tokens.setdefault(j, []).append(token)

    def _host_findings(
        self, pending: _Pending, read: _HostRead, findings: list[Finding], dense: bool, text: str
    ) -> None:
        if dense:
            pending.host_masked.update(read.labels)
            return
        for f in findings:
            covered = [k for k, (lo, hi) in zip(read.labels, read.bounds, strict=False) if f.start < hi and f.end > lo]
            if not covered or any(k in pending.host_tokens or k in pending.host_merged for k in covered):
                continue  # an earlier read (the whole host's) found it already
            pending.counts[f.entity] += 1
            token = self.token(f, text[f.start : f.end])
            if token is None:  # annotated: the labels stay, counted once
                pending.host_tokens.update(dict.fromkeys(covered))
                continue
            pending.host_tokens[covered[0]] = token  # one token for the labels it covers (an address across them)
            pending.host_merged.update(covered[1:])

    def _rebuild(
        self,
        url: str,
        userinfo: tuple[int, int] | None,
        host: tuple[int, int] | None,
        values: list[Value],
        pending: _Pending,
    ) -> UrlResult:
        counts = pending.counts
        edits: list[tuple[int, int, str]] = []
        if userinfo is not None:
            edits.append((userinfo[0], userinfo[1], ""))
            counts[USERINFO] += 1
        masked = 0
        if host is not None:
            new_host, masked = self._host(url[slice(*host)], pending)
            if new_host is not None:
                edits.append((host[0], host[1], new_host))
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

    def _host(self, raw: str, pending: _Pending) -> tuple[str | None, int]:
        """The host with its labels replaced (None: unchanged) and how many labels were masked."""
        if ip_host(raw):
            return None, 0
        labels = raw.split(".")
        masked, merged = set(pending.host_masked), set(pending.host_merged)
        if self.host_leftover is not None:
            decoded = [decode(label, plus=False) for label in labels]
            taken = set(pending.host_tokens) | merged | masked
            rest = [k for k in range(len(labels)) if k not in taken]
            masked.update(k for k in rest if decoded[k] and self.host_leftover(decoded[k]))
            rest = [k for k in rest if k not in masked]
            if rest and self.host_leftover(".".join(decoded[k] for k in rest)):  # a shape across labels
                across = rest[:-2] or rest  # all but the registrable name, as one mask
                masked.add(across[0])
                merged.update(across[1:])
        replaced = {k: t for k, t in pending.host_tokens.items() if t is not None}
        if not replaced and not masked:
            return None, 0
        out = []
        for k, label in enumerate(labels):
            if k in merged:
                continue
            out.append(self._encoded(MASK) if k in masked else self._encoded(replaced[k]) if k in replaced else label)
        return ".".join(out), len(masked)


class _Reads:
    """The texts of a batch of URLs read in one detect call, and who each belongs to."""

    def __init__(self):
        self.texts: list[str] = []
        self.langs: list[str | None] = []
        self.owners: list[tuple] = []

    def add(self, owner: tuple, text: str, lang: str | None) -> None:
        self.owners.append(owner)
        self.texts.append(text)
        self.langs.append(lang)


def _host_reads(raw: str) -> list[tuple[str, _HostRead]]:
    """A host's texts to read: the whole host decoded (an address or a dotted quad across labels), then each label
    (a label is read alone too, as the card's hosts table reads it).  An IP host is not read: it is kept."""
    if ip_host(raw):
        return []
    decoded = [decode(label, plus=False) for label in raw.split(".")]
    bounds, pos = [], 0
    for d in decoded:
        bounds.append((pos, pos + len(d)))
        pos += len(d) + 1
    whole = ".".join(decoded)
    out = [(whole, _HostRead(tuple(bounds), tuple(range(len(decoded)))))]
    if len(decoded) > 1:
        out += [(d, _HostRead(((0, len(d)),), (k,))) for k, d in enumerate(decoded) if d]
    return out


@dataclass
class _Pending:
    """Findings of one URL while its values are read: counts, tokens per value, values too dense to read; the
    host's labels replaced (the first label a finding covers holds its token, the others are merged into it)."""

    counts: Counter = field(default_factory=Counter)
    tokens: dict[int, list[str | None]] = field(default_factory=dict)
    masked: set[int] = field(default_factory=set)
    host_tokens: dict[int, str | None] = field(default_factory=dict)
    host_merged: set[int] = field(default_factory=set)
    host_masked: set[int] = field(default_factory=set)


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
