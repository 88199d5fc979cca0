"""Names that reach published outputs without being data: input file names and paths, checksums.

An input file's name reaches ``documents/final`` (the ``source`` column), the shards (when they
store ``source``), the published part's file name (``part-<name>.parquet``, pipeline/inputs.py
``unit_name``) and the card.  A file named after a person (``maria.kowalski@gmail.com.jsonl``, an
export per customer) would publish them.  Names are not analyzed by presidio (plan time, no model):
every path segment that holds a *candidate* of any pattern entity (the PII stage's candidate
expression, a superset of what the recognizers accept: 7+ digits, ``x@y.z``, a dotted quad, an IBAN
shape, read through the normalized view with ``_`` as a space) is masked whole; a long shard number
is masked too, a missed phone number never.  Calendar dates (``2024-01-31``, ``20240131``: valid
dates of 1900-2099) are not candidates in names: dumps are named by their date.

Two kinds of names are known not to be PII and stay readable wherever they are published:

- Common Crawl's file names and paths (``CC-MAIN-20260112000513-20260112030513-00000.warc.gz``,
  ``crawl-data/CC-MAIN-2026-04/segments/1768110000000.0/warc/``), their timestamps checked to be dates
  (a phone number where a timestamp goes is masked);
- hex digests (32, 40, 64 or 128 hex digits with a letter among them: a tokenizer's sha256), in the
  card's own fields (pipeline/card/redaction.py), not in the data's text.

A masked name stays unique and stable: :func:`public_name` ends in ``#`` and the 8 hex digits of the
SHA-1 of the whole URI (those of the part's file name), and :func:`masked_stem` is ``MASKED``, to
which ``unit_name`` adds the same digits.  Someone who can guess the whole URI can check a guess
against those digits (docs/pii.md says so).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import posixpath
import re

from stages.pii.urls import MASK

# a Common Crawl WARC/WAT/WET file: CC-MAIN-<start>-<end>-<5 digits> (2018 on); before: CC-MAIN-<time>-<5>-ip-...
_CC_FILE = (
    r"CC-MAIN-(?P<t1>\d{14})-(?:(?P<t2>\d{14})-\d{5}|\d{5}-ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}\.ec2\.internal)"
    r"\.(?:warc|warc\.wat|warc\.wet|wat|wet)\.gz"
)
# the folders a crawl's files are in: crawl-data/CC-MAIN-<year>-<week>/segments/<ms timestamp>[.n]/<kind>/
_CC_DIRS = (
    r"crawl-data/CC-MAIN-20\d\d-\d\d/segments/(?P<seg>1\d{12})(?:\.\d{1,4})?/"
    r"(?:warc|wat|wet|robotstxt|crawldiagnostics|non200responses)/"
)
_CC_NAME = re.compile(rf"(?<![\w-])(?:{_CC_DIRS})?{_CC_FILE}(?![\w-])")
_HEX_DIGEST = re.compile(
    r"(?<![0-9A-Za-z])(?=[0-9]*[a-fA-F])(?:[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64}|[0-9a-f]{128}|"
    r"[0-9A-F]{32}|[0-9A-F]{40}|[0-9A-F]{64}|[0-9A-F]{128})(?![0-9A-Za-z])"
)
# a date in a file or folder name: not a phone number however many digits (19xx or 20xx, then month and day)
_DATE = re.compile(
    r"(?<![0-9])(?P<y>(?:19|20)[0-9]{2})(?P<sep>[-_.]?)(?P<m>0[1-9]|1[0-2])(?P=sep)(?P<d>[0-3][0-9])(?![0-9])"
)
# the 8 hex digits unit_name and public_name end a name with
_NAME_HASH = re.compile(r"-([0-9a-f]{8})(?=\.parquet(?![0-9A-Za-z]))|#([0-9a-f]{8})$")
# known extensions kept after a masked file name (the reader's kind stays visible)
_EXTENSIONS = (".gz", ".zst", ".warc", ".arc", ".jsonl", ".json", ".ndjson", ".parquet")
#: What a masked file name's stem becomes in a part name (letters only: it is a file name).
MASKED_STEM = "MASKED"


def _date(ts: str | None) -> bool:
    if ts is None:
        return True
    try:
        return 2007 <= dt.datetime.strptime(ts, "%Y%m%d%H%M%S").year <= 2099
    except ValueError:
        return False


def _segment_time(ms: str | None) -> bool:
    return ms is None or 2007 <= dt.datetime.fromtimestamp(int(ms) / 1000, dt.UTC).year <= 2099


def crawl_names(text: str) -> list[tuple[int, int]]:
    """The spans of Common Crawl file names (with their folders, when written) in ``text``, timestamps checked."""
    return [
        m.span()
        for m in _CC_NAME.finditer(text)
        if _date(m.group("t1")) and _date(m.group("t2")) and _segment_time(m.group("seg"))
    ]


def dates(text: str) -> list[tuple[int, int]]:
    """The spans of calendar dates written as file names write them (2024-01-31, 2024_01_31, 20240131), checked."""
    out = []
    for m in _DATE.finditer(text):
        try:
            dt.date(int(m.group("y")), int(m.group("m")), int(m.group("d")))
        except ValueError:
            continue
        out.append(m.span())
    return out


def digests(text: str) -> list[tuple[int, int]]:
    """The spans of hex digests in ``text``, and of the 8 hex digits that end a part's or a published name
    (``part-x-1a2b3c4d.parquet``, ``.../<MASKED>.jsonl#1a2b3c4d``: :func:`short_hash`)."""
    return [m.span() for m in _HEX_DIGEST.finditer(text)] + [m.span(m.lastindex) for m in _NAME_HASH.finditer(text)]


@functools.cache
def _candidates() -> re.Pattern:
    from stages.pii.candidates import candidate_pattern
    from stages.pii.config import PATTERN_ENTITIES, PiiConfig

    return candidate_pattern(PiiConfig(), list(PATTERN_ENTITIES)).python


def has_candidate(name: str) -> bool:
    """Whether a name (a path segment) holds a candidate of any pattern entity, read through its normalized view
    (full-width forms, (at), percent-escapes) with ``_`` as a space (``415_867_5309``), Common Crawl names aside."""
    from stages.pii.normalize import text_view

    for s, e in sorted(crawl_names(name) + dates(name), reverse=True):
        name = name[:s] + " " + name[e:]
    stem = _split_extension(name)[0]  # "maria (at) gmail (dot) com.jsonl": the address ends before the extension
    return any(_candidates().search(text_view(n, decode_percent=True).text.replace("_", " ")) for n in {name, stem})


def _split_extension(name: str) -> tuple[str, str]:
    stem, ext = name, ""
    while True:
        for e in _EXTENSIONS:
            if stem.endswith(e) and len(stem) > len(e):
                stem, ext = stem[: -len(e)], e + ext
                break
        else:
            return stem, ext


def short_hash(uri: str) -> str:
    """The 8 hex digits that keep names of one run apart (unit_name's, since its first version)."""
    return hashlib.sha1(uri.encode()).hexdigest()[:8]


def masked_stem(uri: str) -> str | None:
    """``MASKED_STEM`` when the file name of ``uri`` holds a candidate (not a Common Crawl name), else None."""
    return MASKED_STEM if has_candidate(posixpath.basename(uri)) else None


def public_name(uri: str) -> str:
    """``uri`` as it may be published (the ``source`` column of documents/final, the card's files): a userinfo
    removed, each folder and the file name holding a candidate replaced by ``<MASKED>`` (the file's known
    extensions kept), then, when anything changed, ``#`` and the URI's 8 hex digits (its part's), so that two
    masked files stay apart."""
    head, sep, rest = uri.partition("://")
    if not sep:
        head, rest = "", uri
    authority, slash, path = rest.partition("/")
    changed = "@" in authority and bool(sep)  # user:password@bucket: the userinfo goes, as from a URL
    rest = authority.rpartition("@")[2] + slash + path if sep else rest
    segments = rest.split("/")
    crawl = crawl_names(rest)
    pos = 0
    for k, seg in enumerate(segments):
        start, pos = pos, pos + len(seg) + 1
        if any(s <= start and start + len(seg) <= e for s, e in crawl):  # a crawl's folder or file name
            continue
        if seg and has_candidate(seg):
            segments[k] = MASK + (_split_extension(seg)[1] if k == len(segments) - 1 else "")
            changed = True
    if not changed:
        return uri
    return f"{head}{sep}{'/'.join(segments)}#{short_hash(uri)}"
