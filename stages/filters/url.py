"""URL filter (RefinedWeb, Penedo et al. 2023, App. G.1; as used by FineWeb).

Runs before decoding and extraction: it needs only ``url``.  A document is
removed when

- its host, or any parent domain of it, is on the domain blocklist
  (``a.b.example.com`` is blocked by ``example.com``);
- the URL (without scheme, ``www.`` and trailing slash) is on the URL blocklist;
- a word of the URL (lower case, split on non-alphanumerics) is a banned word;
- at least ``soft_word_threshold`` distinct soft-banned words are in the URL;
- the URL, lower-cased with every non-alphanumeric removed, contains a
  banned subword.  All subwords are matched in one pass of a compiled RE2
  automaton (Arrow's regex kernel), the equivalent of Aho-Corasick.

RefinedWeb's domain list is UT1's (~4.6 M domains, 123 MB): too big to bundle;
point ``block_domains_files`` at it (plain, ``.gz``, or a tar archive whose
members are named ``domains``/``urls``, as UT1's and DataTrove's are).  Large
lists are held as sorted 64-bit hashes, ~8 bytes a domain.  The word lists are
bundled: RefinedWeb's, as shipped by DataTrove.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import tarfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

from stages.base import add_rejections
from stages.filters.rules import SKIPPED, record_skips
from stages.named_files import ConfigPath, NamedFile, list_file

REFINEDWEB = "RefinedWeb (Penedo et al. 2023, App. G.1)"
DATA = Path(__file__).parent / "data"
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://")


class UrlFilterConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description=f"{REFINEDWEB}: run the URL filter (before extraction)")
    block_domains: list[str] = Field(
        default_factory=list, description=f"{REFINEDWEB}: blocked domains (and their subdomains)"
    )
    block_domains_files: list[ConfigPath] = Field(
        default_factory=list,
        description=f"{REFINEDWEB}: files of blocked domains, one a line (.gz, or a tar with 'domains' members: UT1)",
    )
    block_urls: list[str] = Field(default_factory=list, description=f"{REFINEDWEB}: blocked URLs")
    block_urls_files: list[ConfigPath] = Field(
        default_factory=list, description=f"{REFINEDWEB}: files of blocked URLs (.gz, or a tar with 'urls' members)"
    )
    use_bundled_word_lists: bool = Field(
        True, description=f"{REFINEDWEB}: use the bundled banned / soft-banned words and banned subwords (DataTrove's)"
    )
    banned_words: list[str] = Field(default_factory=list, description=f"{REFINEDWEB}: extra banned URL words")
    soft_banned_words: list[str] = Field(
        default_factory=list, description=f"{REFINEDWEB}: extra soft-banned URL words"
    )
    banned_subwords: list[str] = Field(default_factory=list, description=f"{REFINEDWEB}: extra banned URL substrings")
    soft_word_threshold: int = Field(
        2, ge=1, le=1000, description=f"{REFINEDWEB}: soft-banned words needed to remove a URL"
    )

    def named_files(self) -> list[NamedFile]:
        return [
            *(NamedFile("block_domains_files", p, list_file) for p in self.block_domains_files),
            *(NamedFile("block_urls_files", p, list_file) for p in self.block_urls_files),
        ]


def read_list(path: str | Path, member: str | None = None) -> Iterator[str]:
    """Entries of a list file: one a line, '#' starts a comment line; .gz and tar archives are read directly."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"url filter: list file not found: {path}")
    if member is not None and tarfile.is_tarfile(path):
        with tarfile.open(path) as tar:
            for info in tar:
                if info.isfile() and Path(info.name).name == member:
                    yield from _entries(io.TextIOWrapper(tar.extractfile(info), encoding="utf-8", errors="replace"))
        return
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        yield from _entries(f)


def _entries(lines: Iterable[str]) -> Iterator[str]:
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            yield line


class HashedSet:
    """A set of strings stored as sorted 64-bit hashes: ~8 bytes an entry instead of ~80.

    blake2b, not ``hash()``: stable across processes, so a pickled stage stays
    correct.  A false match needs a 64-bit collision (about 1 in 4*10^12 per
    lookup against 4.6 M entries).
    """

    def __init__(self, entries: Iterable[str]):
        self._hashes = np.unique(np.fromiter((_h64(e) for e in entries), dtype=np.uint64))

    def __len__(self) -> int:
        return len(self._hashes)

    def __contains__(self, item: str) -> bool:
        if not len(self._hashes):
            return False
        h = np.uint64(_h64(item))
        i = np.searchsorted(self._hashes, h)
        return bool(i < len(self._hashes) and self._hashes[i] == h)


def _h64(s: str) -> int:
    return int.from_bytes(hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def normalise_domain(entry: str) -> str:
    return entry.strip().lower().rstrip(".").removeprefix("*.")


def normalise_url(url: str) -> str:
    """Lower case, no scheme, no 'www.', no trailing slash: how UT1 writes URLs."""
    url = _SCHEME.sub("", url.strip().lower())
    return url.removeprefix("www.").rstrip("/")


def host_of(url: str) -> str:
    rest = _SCHEME.sub("", url.strip().lower()).removeprefix("//")
    host = re.split(r"[/?#]", rest, maxsplit=1)[0]
    return host.rpartition("@")[2].split(":")[0].rstrip(".")


def _words(entries: Iterable[str]) -> set[str]:
    """List entries normalised like URL words: lower case, non-alphanumerics removed."""
    return {w for w in (_NON_ALNUM.sub("", e.lower()) for e in entries) if w}


class UrlFilter:
    name = "url_filter"
    label = "URL filter (RefinedWeb block list)"
    needs = ("url",)
    adds = (SKIPPED,)
    types = {SKIPPED: pa.list_(pa.string())}  # the Arrow type of what it adds
    reasons = (
        "url_filter:blocked_domain",
        "url_filter:blocked_url",
        "url_filter:banned_word",
        "url_filter:soft_banned_words",
        "url_filter:banned_subword",
    )

    def __init__(self, config: UrlFilterConfig | None = None):
        self.config = c = config or UrlFilterConfig()
        self.domains = HashedSet(
            normalise_domain(d)
            for d in [*c.block_domains, *(e for f in c.block_domains_files for e in read_list(f, "domains"))]
        )
        self.urls = HashedSet(
            normalise_url(u) for u in [*c.block_urls, *(e for f in c.block_urls_files for e in read_list(f, "urls"))]
        )

        def bundled(name: str) -> list[str]:
            return list(read_list(DATA / f"{name}.txt")) if c.use_bundled_word_lists else []

        self.banned_words = _words(bundled("banned_words") + c.banned_words)
        self.soft_banned_words = _words(bundled("soft_banned_words") + c.soft_banned_words)
        self.banned_subwords = sorted(_words(bundled("banned_subwords") + c.banned_subwords))
        self._subword_re = "|".join(re.escape(w) for w in self.banned_subwords)

    def judge(self, url: str) -> tuple[str | None, str | None]:
        host = host_of(url)
        parts = host.split(".")
        for i in range(len(parts)):
            domain = ".".join(parts[i:])
            if domain in self.domains:
                return f"{self.name}:blocked_domain", domain
        if normalise_url(url) in self.urls:
            return f"{self.name}:blocked_url", None
        words = set(_NON_ALNUM.split(url.lower()))
        banned = words & self.banned_words
        if banned:
            return f"{self.name}:banned_word", ",".join(sorted(banned))
        soft = words & self.soft_banned_words
        if len(soft) >= self.config.soft_word_threshold:
            return f"{self.name}:soft_banned_words", ",".join(sorted(soft))
        return None, None

    def __call__(self, batch: pa.Table) -> pa.Table:
        urls = batch.column("url").to_pylist()
        reasons: list[str | None] = [None] * len(urls)
        details: list[str | None] = [None] * len(urls)
        skips = [[] for _ in urls]
        for i, url in enumerate(urls):
            if not url:
                skips[i].append(f"{self.name}: no url")
                continue
            reasons[i], details[i] = self.judge(url)
        if self._subword_re:
            squashed = pc.replace_substring_regex(
                pc.utf8_lower(pc.fill_null(batch.column("url"), "")), "[^a-z0-9]+", ""
            )
            hits = pc.match_substring_regex(squashed, self._subword_re).to_numpy(zero_copy_only=False)
            for i in np.flatnonzero(hits):
                if reasons[i] is None:
                    s = squashed[int(i)].as_py()
                    reasons[i] = f"{self.name}:banned_subword"
                    details[i] = next(w for w in self.banned_subwords if w in s)
        return record_skips(add_rejections(batch, reasons, details), skips)
