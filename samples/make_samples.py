#!/usr/bin/env python3
"""Build the sample Common-Crawl-like WARC files in samples/.

    python samples/make_samples.py [--cache-dir /tmp/curate-sample-debs] [--out samples]

Needs: warcio, lxml, pillow (generator only), and the Debian documentation packages listed in
samplegen/debian.py.  Missing .deb files are fetched with `apt-get download` into --cache-dir
(run `apt-get update` once first); nothing else touches the network.  The .deb files are not
committed.  Everything random comes from SEED, so a re-run rebuilds the same bytes as long as the
package versions and the warcio/zlib/Pillow versions are the same.

Output:
  CC-MAIN-*.warc.gz     5 WARC files (warcinfo, then request/response/metadata per capture)
  ground_truth.jsonl    one line per response record
  ground_truth.md       counts by kind, language and charset
  broken/               deliberately malformed files (see broken/README.md)
"""

from __future__ import annotations

import argparse
import codecs
import collections
import datetime as dt
import gzip
import ipaddress
import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from samplegen import (  # noqa: E402
    broken,
    charsets,
    debian,
    dups,
    pii as P,  # noqa: E402
    pii_pages,
    synth,
)
from samplegen.sites import SITES, article_html, render, sites_for  # noqa: E402
from samplegen.warcout import Capture, record_uuid, write_warc  # noqa: E402

SEED = 20260112
N_FILES = 5
# The prose pages with planted PII (kind pii_prose) were added later, in a file of their
# own with their own random stream, so the first N_FILES files stayed byte-identical.
PII_PROSE_SEED = SEED + 9
PII_PROSE_PER_LANG = 12
SNAPSHOT = "CC-MAIN-2026-03"
CRAWL_START = dt.datetime(2026, 1, 12, 0, 0, 0)
HERE = os.path.dirname(os.path.abspath(__file__))

# ----------------------------------------------------------------------------- helpers

SERVER_OF_GROUP = {
    "python": "python-docs",
    "debref": "debian",
    "apache": "apache-httpd",
    "maintguide": "debian",
    "faq": "debian",
}


def norm(label: str | None) -> str | None:
    if not label:
        return None
    try:
        return codecs.lookup(label).name
    except LookupError:
        return label.lower()


def html_capture(
    url: str,
    html: str,
    *,
    kind: str,
    lang: str | None,
    server: str,
    charset: str = "utf-8",
    http: str = "same",
    meta: str = "same",
    ctype_base: str = "text/html",
    **gt,
) -> Capture:
    """Encode an HTML string and set up its charset declarations.

    meta: "same" (in-document declaration says `charset`), "strip" (no declaration), or a label (wrong declaration)
    http: "same" (Content-Type carries charset), "none" (no charset parameter), or a label (wrong charset)
    """
    if meta == "strip":
        html = charsets.strip_declarations(html)
    elif meta == "same":
        declared = charsets.meta_declared(html)
        if declared is None or norm(declared) != norm(charset):
            html = charsets.set_declaration(html, charset)
    else:
        html = charsets.set_declaration(html, meta)
    body = charsets.encode(html, charset)
    http_label = None if http == "none" else charsets.LABELS.get(charset if http == "same" else http, http)
    ctype = f"{ctype_base}; charset={http_label}" if http_label else ctype_base
    cap = Capture(
        url=url,
        kind=kind,
        body=body,
        ctype=ctype,
        payload_type="text/html" if ctype_base == "text/html" else ctype_base,
        server=server,
        language=lang,
        charset=charset,
        charset_declared={"http": http_label, "meta": charsets.meta_declared(html)},
        **gt,
    )
    return cap


_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
# a dotted quad not inside a longer dotted run; a sentence may end right after it
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\w)")
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_URL_CREDENTIALS = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,15}://([^\s/?#@:<>\"']+:[^\s/?#@<>\"']+)@[\w\[]")


def _host_ipv4(v: str) -> bool:
    """A dotted quad that is a host address: not 240.0.0.0/4 (netmasks 255.x) and not four single digits
    (section numbers such as 6.2.4.1, versions such as 2.7.2.2)."""
    try:
        ip = ipaddress.IPv4Address(v)
    except ValueError:
        return False
    return not ip.is_reserved and max(ip.packed) >= 10


def _ipv6(v: str) -> bool:
    if v.count(":") < 2 or v.strip(":") == "":
        return False
    try:
        ipaddress.IPv6Address(v)
    except ValueError:
        return False
    return True


def detect_pii_real(html: str) -> list[dict]:
    """E-mail addresses, IPv4/IPv6 addresses and URL credentials in the visible text of a real page (regex-detected).

    Dotted quads that start a heading are section numbers (12.2.1.1. Title), not addresses.
    """
    import lxml.html

    try:
        tree = lxml.html.fromstring(html.encode("utf-8"), parser=lxml.html.HTMLParser(encoding="utf-8"))
    except Exception:
        return []
    for bad in tree.xpath("//script|//style"):
        bad.drop_tree()
    headings = {
        m.group(0)
        for h in tree.xpath("//h1|//h2|//h3|//h4|//h5|//h6|//title|//dt")
        for m in [_IPV4.match(h.text_content().strip())]
        if m
    }
    text = tree.text_content()
    found, seen = [], set()

    def add(typ: str, v: str) -> None:
        if v not in seen and v in html:
            seen.add(v)
            found.append({"type": typ, "value": v})

    for m in _EMAIL.finditer(text):
        add("EMAIL_ADDRESS", m.group(0))
    for m in _IPV4.finditer(text):
        if _host_ipv4(m.group(0)) and m.group(0) not in headings:
            add("IP_ADDRESS", m.group(0))
    for m in _IPV6.finditer(text):
        if _ipv6(m.group(0)):
            add("IP_ADDRESS", m.group(0))
    for m in _URL_CREDENTIALS.finditer(text):
        add("URL_CREDENTIALS", m.group(1))
    return found


PII_NOTE = "pii list of this real page is regex-detected (e-mail, IPv4, IPv6, URL credentials) in its visible text"


def rand_date(rng: random.Random, lo: int = 2014, hi: int = 2025) -> dt.date:
    return dt.date(lo, 1, 1) + dt.timedelta(days=rng.randint(0, (hi - lo + 1) * 365 - 1))


# ----------------------------------------------------------------------------- planner


class Planner:
    def __init__(self, root: str, rng: random.Random):
        self.root = root
        self.rng = rng
        self.pages = debian.catalogue(root)
        self.used: set[str] = set()
        self.caps: list[Capture] = []
        self.titles: dict[str, list[str]] = collections.defaultdict(list)
        self.prose_urls: list[tuple[str, str]] = []  # (url, lang) of real pages, redirect targets

    # -- page pools
    def pool(
        self, group: str | None = None, lang: str | None = None, path_re: str | None = None
    ) -> list[debian.RealPage]:
        return [
            p
            for p in self.pages
            if p.path not in self.used
            and (group is None or p.group == group)
            and (lang is None or p.lang == lang)
            and (path_re is None or re.search(path_re, p.path))
            and p.size < 420_000
        ]

    def take(self, pages: list[debian.RealPage], k: int) -> list[debian.RealPage]:
        chosen = self.rng.sample(pages, min(k, len(pages)))
        for p in chosen:
            self.used.add(p.path)
        return chosen

    # -- near duplicates ---------------------------------------------------------------
    NEAR_PLAN = [("en", 26), ("de", 7), ("fr", 7), ("es", 5), ("ja", 6), ("zh", 4), ("ru", 5)]
    NEAR_SOURCES = {
        "en": [("python", r"/(howto|tutorial|faq|library|reference|using)/"), ("apache", None)],
        "de": [("debref", None), ("apache", None)],
        "fr": [("debref", None), ("apache", None)],
        "es": [("debref", None), ("apache", None)],
        "ja": [("debref", None), ("apache", None)],
        "zh": [("debref", None), ("apache", None)],
        "ru": [("maintguide", None), ("faq", None)],
    }

    def pick_article(self, lang: str) -> debian.Article:
        for _ in range(200):
            group, rx = self.rng.choice(self.NEAR_SOURCES[lang])
            cands = self.pool(group, lang, rx)
            if not cands:
                continue
            page = self.rng.choice(cands)
            secs = [s for s in debian.sections(page) if len(s.blocks) >= 6]
            self.titles[lang] += [s.title for s in debian.sections(page)][:20]
            if not secs:
                self.used.add(page.path)
                continue
            self.used.add(page.path)
            # prefer leaf-ish sections of moderate length
            secs.sort(key=lambda s: sum(len(t) for _, t in s.blocks))
            return secs[min(len(secs) - 1, self.rng.randrange(max(1, len(secs) // 2 + 1)))]
        raise RuntimeError(f"no article for {lang}")

    def near_duplicates(self):
        n_cluster = 0
        for lang, n in self.NEAR_PLAN:
            for _ in range(n):
                n_cluster += 1
                self._near_cluster(f"near-{n_cluster:03d}", lang, self.pick_article(lang))

    def _near_cluster(self, cid: str, lang: str, art: debian.Article):
        rng = self.rng
        sites = sites_for(lang)
        size = rng.choice([2, 2, 3, 3, 3, 4, 4, 5, 6])
        size = min(size, len(sites) + 1)
        chosen = rng.sample(sites, min(size, len(sites)))
        if size > len(chosen):
            chosen.append(chosen[rng.randrange(len(chosen))])  # same site publishes it twice
        d0 = rand_date(rng, 2016, 2024)
        legacy = {"ja": "shift_jis", "ru": "windows-1251", "zh": "gbk", "de": "windows-1252", "fr": "iso-8859-1"}
        for rank, site in enumerate(chosen):
            blocks = list(art.blocks)
            var = []
            date = d0
            if rank:
                if site is not chosen[0]:
                    var.append("template")
                date = d0 + dt.timedelta(days=rng.randint(3, 900))
                var.append("date")
                if rng.random() < 0.35:
                    blocks = dups.add_paragraph(blocks, lang, rng)
                    var.append("added_paragraph")
                if rng.random() < 0.35:
                    blocks = dups.drop_paragraph(blocks, rng)
                    var.append("dropped_paragraph")
                if rng.random() < 0.45:
                    blocks = dups.edit_words(blocks, lang, rng)
                    var.append("edited_words")
            html = render(site, art.title, article_html(blocks), date, rng)
            cs = "utf-8"
            if rank and lang in legacy and rng.random() < 0.25:
                cs = legacy[lang]
                var.append("charset")
            found = detect_pii_real(html)
            self.caps.append(
                html_capture(
                    site.url(rng, art.title, date),
                    html,
                    kind="near_duplicate",
                    lang=lang,
                    server=site.server,
                    charset=cs,
                    http=rng.choice(["same", "same", "none"]),
                    dup_cluster=cid,
                    dup_variation=var,
                    dup_rank=rank,
                    expect="keep" if rank == 0 else "reject",
                    source=art.source,
                    pii=found,
                    notes=f"article: {art.title!r} from {art.src_url}" + (f"; {PII_NOTE}" if found else ""),
                )
            )

    # -- exact duplicates --------------------------------------------------------------
    EXACT_PLAN = [
        ("python", "en", 5),
        ("debref", "en", 1),
        ("debref", "de", 1),
        ("apache", "fr", 1),
        ("apache", "ja", 1),
        ("apache", "ko", 1),
        ("faq", "ru", 1),
        ("apache", "tr", 1),
    ]

    def exact_duplicates(self):
        n = 0
        for group, lang, k in self.EXACT_PLAN:
            for page in self.take(self.pool(group, lang), k):
                n += 1
                self._exact_cluster(f"exact-{n:03d}", page)

    def _alt_urls(self, url: str) -> list[str]:
        rng = self.rng
        alts = [
            url.replace("https://", "http://", 1),
            url + "?utm_source=twitter&utm_medium=social",
            url + "#" + rng.choice(["top", "contents", "introduction"]),
            url + "?ref=" + rng.choice(["hn", "reddit", "newsletter"]),
        ]
        if "docs.python.org/3.11/" in url:
            alts.append(url.replace("/3.11/", "/3/"))
        if "www.debian.org" in url:
            alts.append(url.replace("www.debian.org", "debian.org"))
        return alts

    def _exact_cluster(self, cid: str, page: debian.RealPage):
        rng = self.rng
        text = page.read_text()
        size = rng.choice([2, 2, 3, 3, 4])
        alts = rng.sample(self._alt_urls(page.url), len(self._alt_urls(page.url)))
        http = rng.choice(["same", "none"])
        for rank in range(size):
            same_url = rank > 0 and rng.random() < 0.5
            url = page.url if rank == 0 or same_url else alts.pop()
            var = [] if rank == 0 else ["exact", "same_url" if same_url else "different_url"]
            self.caps.append(
                html_capture(
                    url,
                    text,
                    kind="exact_duplicate",
                    lang=page.lang,
                    server=SERVER_OF_GROUP[page.group],
                    charset=page.charset,
                    http=http,
                    dup_cluster=cid,
                    dup_variation=var,
                    dup_rank=rank,
                    pii=detect_pii_real(text),
                    expect="keep" if rank == 0 else "reject",
                    source=page.source,
                    notes="; ".join(
                        x
                        for x in [
                            "same URL crawled again" if same_url else "",
                            PII_NOTE if detect_pii_real(text) else "",
                        ]
                        if x
                    )
                    or None,
                )
            )

    # -- real prose pages --------------------------------------------------------------
    PROSE_PLAN = [
        ("python", "en", 150),
        ("debref", None, 5),
        ("apache", "en", 40),
        ("apache", "fr", 30),
        ("apache", "ja", 30),
        ("apache", "ko", 28),
        ("apache", "tr", 25),
        ("apache", "de", 14),
        ("apache", "es", 14),
        ("apache", "zh", 10),
        ("apache", "pt", 4),
        ("apache", "ru", 2),
        ("apache", "da", 1),
        ("maintguide", "ru", 7),
        ("faq", "ru", 10),
    ]
    # (language, target charset, how many, meta mode, http mode)
    CHARSET_PLAN = [
        ("en", "windows-1252", 5, "same", "same"),
        ("en", "iso-8859-1", 2, "same", "none"),
        ("en", "windows-1252", 1, "strip", "none"),
        ("de", "iso-8859-1", 4, "same", "same"),
        ("de", "windows-1252", 2, "strip", "none"),
        ("fr", "iso-8859-1", 5, "same", "same"),
        ("fr", "windows-1252", 2, "same", "none"),
        ("fr", "iso-8859-1", 1, "strip", "none"),
        ("es", "iso-8859-1", 3, "same", "same"),
        ("es", "windows-1252", 1, "strip", "none"),
        ("pt", "iso-8859-1", 1, "same", "same"),
        ("tr", "iso-8859-9", 4, "same", "same"),
        ("ja", "shift_jis", 7, "same", "same"),
        ("ja", "euc-jp", 5, "same", "same"),
        ("ja", "iso-2022-jp", 3, "same", "same"),
        ("ja", "shift_jis", 2, "strip", "none"),
        ("ja", "euc-jp", 1, "strip", "none"),
        ("zh", "gbk", 4, "same", "same"),
        ("zh", "gb2312", 3, "same", "same"),
        ("zh", "gbk", 1, "strip", "none"),
        ("ru", "windows-1251", 5, "same", "same"),
        ("ru", "koi8-r", 4, "same", "same"),
        ("ru", "windows-1251", 2, "strip", "none"),
        ("ru", "koi8-r", 1, "strip", "none"),
        ("ko", "euc-kr", 2, "strip", "none"),  # native EUC-KR pages with their <meta> removed
    ]
    # utf-8 (or native) pages whose HTTP header names the wrong
    # charset: (language, real charset, HTTP label, meta mode)
    WRONG_HTTP = [
        ("en", "utf-8", "iso-8859-1", "same"),
        ("fr", "utf-8", "iso-8859-1", "same"),
        ("de", "utf-8", "iso-8859-1", "same"),
        ("ja", "shift_jis", "utf-8", "same"),
        ("ru", "windows-1251", "utf-8", "same"),
        ("ko", "euc-kr", "iso-8859-1", "same"),
        ("zh", "gbk", "iso-8859-1", "same"),
    ]

    def prose(self):
        chosen: list[debian.RealPage] = []
        for group, lang, k in self.PROSE_PLAN:
            if group == "debref":
                for lg in ("en", "de", "fr", "es", "ja", "zh"):
                    chosen += self.take(self.pool(group, lg), k)
            else:
                chosen += self.take(self.pool(group, lang), k)
        rng = self.rng
        by_lang = collections.defaultdict(list)
        for p in chosen:
            by_lang[p.lang].append(p)
        for lg in by_lang:
            rng.shuffle(by_lang[lg])
        assigned = {}
        for lang, cs, k, meta, http in self.CHARSET_PLAN:
            cands = [p for p in by_lang[lang] if p.path not in assigned and (lang != "ko" or p.charset == "euc-kr")]
            for p in cands[:k]:
                assigned[p.path] = (cs, meta, http, None)
        for lang, cs, http_label, meta in self.WRONG_HTTP:
            cands = [p for p in by_lang[lang] if p.path not in assigned and (lang != "ko" or p.charset == "euc-kr")]
            if cands:
                assigned[cands[0].path] = (
                    cs,
                    meta,
                    http_label,
                    f"HTTP header declares {http_label} but the bytes are {cs}",
                )
        for p in chosen:
            cs, meta, http, note = assigned.get(
                p.path,
                (
                    p.charset,
                    rng.choice(["same", "same", "same", "strip_http"]),
                    rng.choice(["same", "same", "none"]),
                    None,
                ),
            )
            if meta == "strip_http":  # correctly declared in HTTP only
                meta, http = "strip", "same"
            text = p.read_text()
            ctype_base = "application/xhtml+xml" if p.group == "debref" and rng.random() < 0.15 else "text/html"
            cap = html_capture(
                p.url,
                text,
                kind="prose",
                lang=p.lang,
                server=SERVER_OF_GROUP[p.group],
                charset=cs,
                meta=meta,
                http=http,
                ctype_base=ctype_base,
                pii=detect_pii_real(text),
                source=p.source,
                notes=note,
            )
            if ctype_base != "text/html":
                cap.payload_type = "application/xhtml+xml"
            if cs != p.charset:
                cap.notes = (cap.notes + "; " if cap.notes else "") + f"re-encoded from {p.charset} to {cs}"
            if cap.pii:
                cap.notes = (cap.notes + "; " if cap.notes else "") + PII_NOTE
            self.caps.append(cap)
            self.prose_urls.append((p.url, p.lang))
            try:
                self.titles[p.lang] += (
                    [s.title for s in debian.sections(p)][:6] if len(self.titles[p.lang]) < 300 else []
                )
            except Exception:
                pass

    # -- odd records ---------------------------------------------------------------------
    def odd(self):
        rng = self.rng
        root = self.root
        py = os.path.join(root, "usr/share/doc/python3.11/html")
        big = open(os.path.join(py, "contents.html"), "rb").read()
        self.caps.append(
            Capture(
                "https://docs.python.org/3.11/contents.html",
                "odd",
                big,
                "text/html; charset=utf-8",
                "text/html",
                server="python-docs",
                language="en",
                charset="utf-8",
                charset_declared={"http": "utf-8", "meta": "utf-8"},
                expect="reject",
                source="python3.11-doc:doc/python3.11/html/contents.html",
                notes=f"very large page ({len(big)} bytes): the complete table of contents, almost all links",
            )
        )
        idx = open(os.path.join(py, "genindex-all.html"), "rb").read()
        self.caps.append(
            Capture(
                "https://docs.python.org/3.11/genindex-all.html",
                "odd",
                idx[:1048576],
                "text/html; charset=utf-8",
                "text/html",
                server="python-docs",
                language="en",
                charset="utf-8",
                charset_declared={"http": "utf-8", "meta": "utf-8"},
                expect="reject",
                warc_extra={"WARC-Truncated": "length"},
                http_length=len(idx),
                source="python3.11-doc:doc/python3.11/html/genindex-all.html",
                notes=f"payload truncated at 1 MiB like CC does (original {len(idx)} bytes); index page",
            )
        )
        site = rng.choice(sites_for("en"))
        self.caps.append(
            Capture(
                f"https://{site.domain}/feed/empty-page/",
                "odd",
                b"",
                "text/html; charset=UTF-8",
                "text/html",
                server=site.server,
                charset=None,
                expect="reject",
                notes="200 OK with an empty body",
            )
        )
        garbage = bytes(rng.getrandbits(8) for _ in range(3000))
        self.caps.append(
            Capture(
                f"https://{site.domain}/download.php?id=8812",
                "odd",
                garbage,
                "text/html",
                "application/octet-stream",
                server="apache",
                charset=None,
                expect="reject",
                notes="random binary bytes served as text/html",
            )
        )
        # charset mismatch: bytes are windows-1251, header and meta both say UTF-8
        p = self.take(self.pool("faq", "ru") or self.pool("maintguide", "ru"), 1)[0]
        text = p.read_text()
        self.caps.append(
            html_capture(
                p.url,
                text,
                kind="odd",
                lang="ru",
                server="debian",
                charset="windows-1251",
                meta="utf-8",
                http="utf-8",
                pii=detect_pii_real(text),
                source=p.source,
                notes="bytes are windows-1251 but HTTP and <meta> both say UTF-8",
            )
        )
        # Content-Encoding: gzip payload (a real page, compressed on the wire and stored compressed)
        p = self.take(self.pool("python", "en", r"/howto/"), 1)[0]
        text = p.read_text()
        gz = gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)
        self.caps.append(
            Capture(
                p.url,
                "odd",
                gz,
                "text/html; charset=utf-8",
                "application/gzip",
                server="python-docs",
                content_encoding="gzip",
                language="en",
                charset="utf-8",
                charset_declared={"http": "utf-8", "meta": charsets.meta_declared(text)},
                pii=detect_pii_real(text),
                expect="keep",
                source=p.source,
                notes="payload stored with Content-Encoding: gzip; decode it before parsing",
            )
        )
        # UTF-8 with BOM and no other declaration
        p = self.take(self.pool("debref", "ja"), 1)[0]
        text = charsets.strip_declarations(p.read_text())
        self.caps.append(
            Capture(
                p.url,
                "odd",
                b"\xef\xbb\xbf" + text.encode("utf-8"),
                "text/html",
                "text/html",
                server="debian",
                language="ja",
                charset="utf-8",
                charset_declared={"http": None, "meta": None},
                pii=detect_pii_real(text),
                expect="keep",
                source=p.source,
                notes="UTF-8 byte order mark is the only charset signal",
            )
        )
        # no Content-Type header at all
        p = self.take(self.pool("apache", "fr"), 1)[0]
        text = p.read_text()
        cap = html_capture(
            p.url,
            text,
            kind="odd",
            lang="fr",
            server="apache-httpd",
            http="none",
            pii=detect_pii_real(text),
            source=p.source,
            notes="response has no Content-Type header",
        )
        cap.ctype = None
        self.caps.append(cap)
        # soft 404: status 200, body says "not found"
        for lang in ("en", "de"):
            site = rng.choice(sites_for(lang))
            html = synth.soft404(site, rng, rand_date(rng, 2024, 2025))
            self.caps.append(
                html_capture(
                    f"https://{site.domain}/{rng.choice(['old-post', 'p/12345', 'artikel/alt'])}/",
                    html,
                    kind="odd",
                    lang=lang,
                    server=site.server,
                    expect="reject",
                    notes="soft 404: status 200 but a not-found page",
                )
            )

    # -- generated pages ------------------------------------------------------------------
    def spam(self):
        rng = self.rng
        plan = [
            ("en", "stuffing", 16),
            ("en", "products", 16),
            ("en", "spun", 16),
            ("en", "doorway", 12),
            ("de", "stuffing", 5),
            ("de", "spun", 4),
            ("de", "products", 2),
            ("fr", "stuffing", 5),
            ("fr", "doorway", 4),
            ("ru", "stuffing", 5),
            ("ru", "spun", 4),
            ("ja", "stuffing", 4),
            ("ja", "doorway", 3),
        ]
        for lang, style, k in plan:
            for _ in range(k):
                url, title, html = synth.spam_page(rng, lang, style)
                cs = (
                    "windows-1251"
                    if lang == "ru" and rng.random() < 0.5
                    else ("shift_jis" if lang == "ja" and rng.random() < 0.5 else "utf-8")
                )
                self.caps.append(
                    html_capture(
                        url,
                        html,
                        kind="spam",
                        lang=lang,
                        server="spam",
                        charset=cs,
                        http=rng.choice(["same", "none"]),
                        expect="reject",
                        notes=f"spam style: {style}",
                    )
                )

    def nav(self):
        rng = self.rng
        for lang in ("en", "de", "fr", "es", "ja", "zh", "ru"):
            titles = list(dict.fromkeys(self.titles.get(lang, [])))[:200] or ["Untitled"]
            titles += synth.HEADLINES[lang]
            n = 20 if lang == "en" else 6
            for i in range(n):
                site = rng.choice(sites_for(lang))
                date = rand_date(rng, 2023, 2025)
                gen = [synth.category_page, synth.sitemap_page, synth.tag_archive_page, synth.category_page][i % 4]
                url, title, html = gen(site, rng, titles, date)
                self.caps.append(
                    html_capture(
                        url,
                        html,
                        kind="nav",
                        lang=lang,
                        server=site.server,
                        http=rng.choice(["same", "none"]),
                        expect="reject",
                        notes=gen.__name__,
                    )
                )
            if lang in ("en", "de", "fr"):
                site = rng.choice(sites_for(lang))
                url, title, html = synth.login_page(site, rng, rand_date(rng, 2024, 2025))
                self.caps.append(
                    html_capture(
                        url, html, kind="nav", lang=lang, server=site.server, expect="reject", notes="login form"
                    )
                )
        en_titles = list(dict.fromkeys(self.titles["en"]))[:300] + synth.HEADLINES["en"]
        for _ in range(8):
            url, title, html = synth.directory_page(rng, en_titles, rand_date(rng, 2012, 2020))
            self.caps.append(
                html_capture(
                    url,
                    html,
                    kind="nav",
                    lang="en",
                    server="apache",
                    http="none",
                    expect="reject",
                    notes="web directory / link farm",
                )
            )
        for _ in range(6):
            url, title, html = synth.autoindex_page(rng, rand_date(rng, 2020, 2025))
            self.caps.append(
                html_capture(
                    url,
                    html,
                    kind="nav",
                    lang="en",
                    server="apache",
                    meta="strip",
                    charset="iso-8859-1",
                    http="same",
                    expect="reject",
                    notes="Apache directory listing",
                )
            )

    def pii_pages(self):
        rng = self.rng
        plan = [
            ("en", ["contact", "order", "order", "forum", "books", "paste", "ticket", "ticket"] * 3),
            ("de", ["contact", "contact", "order", "forum", "books", "paste", "ticket", "order", "forum", "ticket"]),
            ("fr", ["contact", "order", "forum", "books", "paste", "ticket", "order", "contact"]),
            ("es", ["contact", "order", "forum", "books", "paste", "ticket", "order", "contact"]),
        ]
        for lang, styles in plan:
            for style in styles:
                date = rand_date(rng, 2019, 2025)
                url, title, main, site, c = synth.pii_page(rng, lang, style, date)
                if site is not None:
                    html = render(
                        site, title, main, date, rng, n_comments=0 if style != "forum" else rng.randint(1, 3)
                    )
                    server = site.server
                else:
                    html = simple_page(title, main, lang, rng)
                    server = rng.choice(["nginx", "apache", "cloudflare"])
                cs = (
                    {"de": "windows-1252", "fr": "iso-8859-1", "es": "iso-8859-1"}.get(lang)
                    if rng.random() < 0.2
                    else "utf-8"
                )
                self.caps.append(
                    html_capture(
                        url,
                        html,
                        kind="pii",
                        lang=lang,
                        server=server,
                        charset=cs or "utf-8",
                        pii=c.pii,
                        not_pii=c.not_pii,
                        expect="keep",
                        notes=f"pii style: {style}",
                    )
                )

    # -- prose pages with planted PII (the sixth file) -----------------------------------
    PII_PROSE_SOURCES = {
        "en": [("python", r"/(howto|tutorial|faq|library|reference|using)/"), ("apache", None)],
        "de": [("debref", None), ("apache", None)],
        "fr": [("debref", None), ("apache", None)],
        "es": [("debref", None), ("apache", None)],
    }

    def _pii_articles(self, rng: random.Random, lang: str, k: int) -> list[debian.Article]:
        """k sections of pages no other capture uses, without code (C4 rejects a page with a curly bracket)."""
        pages = [p for group, rx in self.PII_PROSE_SOURCES[lang] for p in self.pool(group, lang, rx)]
        pages = rng.sample(pages, min(len(pages), 4 * k))
        secs = []
        for page in pages:
            self.used.add(page.path)
            secs += [
                a
                for a in debian.sections(page, min_words=150)
                if sum(t == "p" for t, _ in a.blocks) >= 4
                and not any("{" in x or "}" in x for t, x in a.blocks if t != "pre")
            ]
        if len(secs) < k:
            raise RuntimeError(f"only {len(secs)} sections for {lang}")
        return rng.sample(secs, k)

    def pii_prose(self, rng: random.Random) -> list[Capture]:
        """News, forum and blog posts and contact pages in en/de/fr/es with PII and look-alikes in their sentences."""
        caps = []
        for lang in ("en", "de", "fr", "es"):
            styles = [pii_pages.STYLES[i % len(pii_pages.STYLES)] for i in range(PII_PROSE_PER_LANG)]
            for style, art in zip(styles, self._pii_articles(rng, lang, len(styles)), strict=False):
                date = rand_date(rng, 2019, 2025)
                if style == "contact":
                    url, html, server, planted = pii_pages.contact_page(rng, lang, art, date)
                else:
                    url, html, server, planted = pii_pages.post_page(rng, lang, style, art, date)
                caps.append(
                    html_capture(
                        url,
                        html,
                        kind="pii_prose",
                        lang=lang,
                        server=server,
                        http=rng.choice(["same", "none"]),
                        pii=planted.pii,
                        not_pii=planted.not_pii,
                        expect="keep",
                        source=art.source,
                        notes=f"{style} page with PII in its sentences; article {art.title!r} from {art.src_url}",
                    )
                )
        rng.shuffle(caps)
        return caps

    def errors_and_redirects(self):
        rng = self.rng
        for code, style, k in [
            (404, "nginx", 6),
            (404, "apache", 5),
            (404, "site", 8),
            (403, "apache", 3),
            (403, "nginx", 2),
            (500, "apache", 2),
            (410, "apache", 2),
            (503, "nginx", 2),
        ]:
            for _ in range(k):
                site = rng.choice(SITES)
                host = site.domain
                body = synth.error_body(style, code, host, site, rng, rand_date(rng, 2024, 2025))
                lang = site.lang if style == "site" else None
                paths = [
                    "wp-content/uploads/2019/03/report.pdf",
                    "old/page.html",
                    "admin/",
                    "news/12345",
                    "shop/item?id=77",
                    "blog/2017/05/",
                ]
                url = f"https://{host}/{rng.choice(paths)}"
                extra = [("Retry-After", "3600")] if code == 503 else []
                cap = Capture(
                    url,
                    "http_error",
                    body.encode("utf-8"),
                    "text/html; charset=utf-8" if style == "site" else "text/html",
                    "text/html",
                    server="nginx" if style == "nginx" else ("apache" if style == "apache" else site.server),
                    status=code,
                    reason=synth.REASONS[code],
                    extra_headers=extra,
                    language=lang,
                    charset="utf-8",
                    charset_declared={
                        "http": "utf-8" if style == "site" else None,
                        "meta": "utf-8" if style == "site" else None,
                    },
                    expect="reject",
                )
                self.caps.append(cap)
        targets = rng.sample(self.prose_urls, 15)
        for i in range(30):
            code = rng.choice([301, 301, 301, 302, 302, 307, 308])
            style = rng.choice(["nginx", "apache", "empty"])
            if i < 15:
                to, _ = targets[i]
                frm = to.replace("https://", "http://", 1)
            else:
                site = rng.choice(SITES)
                kind_r = rng.choice(["slash", "login", "www", "lang"])
                base = f"https://{site.domain}"
                frm, to = {
                    "slash": (f"{base}/category/linux", f"{base}/category/linux/"),
                    "login": (f"{base}/account/", f"{base}/login?next=%2Faccount%2F"),
                    "www": (f"https://www.{site.domain}/", f"{base}/"),
                    "lang": (f"{base}/", f"{base}/{site.lang}/"),
                }[kind_r]
            body = synth.redirect_body(style, code, to, frm.split("/")[2]).encode("utf-8")
            self.caps.append(
                Capture(
                    frm,
                    "redirect",
                    body,
                    "text/html; charset=iso-8859-1" if style == "apache" else ("text/html" if body else None),
                    "text/html" if body else "application/octet-stream",
                    server="nginx" if style == "nginx" else "apache",
                    status=code,
                    reason=synth.REASONS[code],
                    extra_headers=[("Location", to)],
                    charset="iso-8859-1" if style == "apache" else ("utf-8" if body else None),
                    charset_declared={"http": "iso-8859-1" if style == "apache" else None, "meta": None},
                    expect="reject",
                    notes=f"redirect to {to}",
                )
            )

    def non_html(self):
        rng = self.rng
        root = self.root
        hosts = sorted({s.domain for s in SITES}) + ["docs.python.org", "www.debian.org", "httpd.apache.org"]
        for host in rng.sample(hosts, 26):
            self._raw(f"https://{host}/robots.txt", synth.robots_txt(rng, host).encode(), "text/plain", "text/plain")
        for i in range(5):
            site = rng.choice(SITES)
            self._raw(
                f"https://{site.domain}/wp-content/uploads/2024/0{i + 1}/thumb-{rng.randint(100, 999)}.png",
                synth.png_bytes(rng, 16 + i * 8, 16),
                "image/png",
                "image/png",
            )
        for _ in range(6):
            site = rng.choice(SITES)
            self._raw(
                f"https://{site.domain}/img/{rng.randint(2020, 2025)}/{rng.randint(10**5, 10**6)}.jpg",
                synth.jpeg_bytes(rng),
                "image/jpeg",
                "image/jpeg",
            )
        self._raw(f"https://{rng.choice(SITES).domain}/pixel.gif?u=1", synth.GIF_PIXEL, "image/gif", "image/gif")
        img_dir = os.path.join(root, "usr/share/doc/apache2-doc/manual/images")
        for name in [
            "feather.png",
            "mod_filter_new.png",
            "down.gif",
            "favicon.ico",
            "home.gif",
            "SupportApache-small.png",
        ]:
            data = open(os.path.join(img_dir, name), "rb").read()
            typ = {"png": "image/png", "gif": "image/gif", "ico": "image/vnd.microsoft.icon"}[name.rsplit(".", 1)[1]]
            self._raw(
                f"https://httpd.apache.org/docs/2.4/images/{name}",
                data,
                typ if name != "favicon.ico" else "image/x-icon",
                typ,
                server="apache-httpd",
                source=f"apache2-doc:manual/images/{name}",
            )
        pdf = open(os.path.join(root, "usr/share/doc/maint-guide-ru/maint-guide.ru.pdf"), "rb").read()
        self._raw(
            "https://www.debian.org/doc/manuals/maint-guide/maint-guide.ru.pdf",
            pdf,
            "application/pdf",
            "application/pdf",
            server="debian",
            source="maint-guide-ru:maint-guide.ru.pdf",
        )
        for i in range(2):
            site = rng.choice(SITES)
            data = synth.pdf_bytes(f"Price list {2024 + i}", [f"Item {j}: {P.price(rng, 'en')}" for j in range(6)])
            self._raw(
                f"https://{site.domain}/downloads/pricelist-{2024 + i}.pdf",
                data,
                "application/pdf" if i == 0 else "application/octet-stream",
                "application/pdf",
            )
        for _ in range(4):
            site = rng.choice(SITES)
            self._raw(
                f"https://{site.domain}/wp-json/wp/v2/posts?per_page=4",
                synth.json_api(rng, site.domain, rand_date(rng, 2024, 2025)).encode(),
                "application/json; charset=UTF-8",
                "application/json",
            )
        for _ in range(2):
            site = rng.choice(SITES)
            self._raw(
                f"https://{site.domain}/manifest.json",
                synth.manifest_json(site.name).encode(),
                "application/manifest+json",
                "application/json",
            )
        static = os.path.join(root, "usr/share/doc/python3.11/html/_static")
        for name, typ in [
            ("pydoctheme.css", "text/css"),
            ("pygments.css", "text/css"),
            ("doctools.js", "application/javascript"),
            ("sidebar.js", "application/javascript"),
            ("searchtools.js", "application/javascript"),
        ]:
            path = os.path.join(static, name)
            if os.path.exists(path):
                self._raw(
                    f"https://docs.python.org/3.11/_static/{name}",
                    open(path, "rb").read(),
                    typ + "; charset=utf-8" if typ == "text/css" else typ,
                    typ,
                    server="python-docs",
                    source=f"python3.11-doc:_static/{name}",
                )
        css = os.path.join(root, "usr/share/debian-reference/debian-reference.css")
        if os.path.exists(css):
            self._raw(
                "https://www.debian.org/doc/manuals/debian-reference/debian-reference.css",
                open(css, "rb").read(),
                "text/css",
                "text/css",
                server="debian",
                source="debian-reference-common:debian-reference.css",
            )
        for _ in range(4):
            site = rng.choice(SITES)
            self._raw(
                f"https://{site.domain}/sitemap.xml",
                synth.sitemap_xml(rng, site.domain, rand_date(rng, 2025, 2025)).encode(),
                "application/xml",
                "application/xml",
                server=site.server,
            )
        for site in rng.sample(SITES, 4):
            self._raw(
                f"https://{site.domain}/feed/",
                synth.rss_feed(site, rng, rand_date(rng, 2025, 2025)).encode(),
                "application/rss+xml; charset=UTF-8",
                "application/rss+xml",
                server=site.server,
            )

    def _raw(self, url, data, ctype, ptype, server="nginx", source=None):
        self.caps.append(
            Capture(
                url,
                "non_html",
                data,
                ctype,
                ptype,
                server=server,
                expect="reject",
                source=source,
                charset="utf-8" if ptype.startswith("text/") or "json" in ptype or "xml" in ptype else None,
                charset_declared={"http": (ctype.split("charset=")[1] if "charset=" in ctype else None), "meta": None},
            )
        )


def simple_page(title: str, main: str, lang: str, rng: random.Random) -> str:
    """A plain stand-alone page (shop account page, paste site, company site) without PII in the boilerplate."""
    from html import escape

    nav = " | ".join(
        f'<a href="/{x.lower()}">{x}</a>'
        for x in rng.sample(["Home", "Shop", "Account", "Help", "Blog", "Pricing", "Support"], 4)
    )
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        '<link rel="stylesheet" href="/static/site.css"></head>\n<body><header><div '
        f'class="logo">{escape(title.split("–")[-1].strip())}</div>'
        f"<nav>{nav}</nav></header>\n<main><h1>{escape(title)}</h1>\n{main}\n</main>\n"
        f'<footer><p>© {rng.randint(2019, 2025)} · <a href="/privacy">Privacy</a> '
        '· <a href="/terms">Terms</a></p></footer></body></html>\n'
    )


# ----------------------------------------------------------------------------- placement


def place(caps: list[Capture], rng: random.Random) -> list[list[Capture]]:
    clusters = collections.defaultdict(list)
    for c in caps:
        if c.dup_cluster:
            clusters[c.dup_cluster].append(c)
        else:
            c.file_idx = rng.randrange(N_FILES)
        c.order_key = rng.random()
    for cid in sorted(clusters):
        members = sorted(clusters[cid], key=lambda c: c.dup_rank)
        files = sorted(rng.sample(range(N_FILES), min(len(members), N_FILES)))
        rest = files[1:]
        rng.shuffle(rest)
        members[0].file_idx = files[0]
        for i, m in enumerate(members[1:]):
            m.file_idx = rest[i] if i < len(rest) else rng.randrange(files[0], N_FILES)
        same = [m for m in members if m.file_idx == files[0]]
        members[0].order_key = min(m.order_key for m in same) - 1e-6  # first copy comes first
    per_file = [sorted([c for c in caps if c.file_idx == i], key=lambda c: c.order_key) for i in range(N_FILES)]
    return per_file


def file_names(per_file: list[list[Capture]], rng: random.Random) -> list[tuple[str, dt.datetime]]:
    out = []
    for i, caps in enumerate(per_file):
        start = CRAWL_START + dt.timedelta(hours=i, minutes=rng.randint(0, 20), seconds=rng.randint(0, 59))
        t = start
        for c in caps:
            t += dt.timedelta(seconds=rng.randint(1, 6))
            c.warc_date = t
        end = t + dt.timedelta(seconds=rng.randint(5, 60))
        out.append((f"CC-MAIN-{start:%Y%m%d%H%M%S}-{end:%Y%m%d%H%M%S}-{i:05d}.warc.gz", start))
    return out


def extra_file_name(caps: list[Capture], idx: int, rng: random.Random) -> tuple[str, dt.datetime]:
    """Name and dates of a file added after the first N_FILES (same scheme as file_names)."""
    start = CRAWL_START + dt.timedelta(hours=idx, minutes=rng.randint(0, 20), seconds=rng.randint(0, 59))
    t = start
    for c in caps:
        t += dt.timedelta(seconds=rng.randint(1, 6))
        c.warc_date = t
        c.file_idx = idx
    end = t + dt.timedelta(seconds=rng.randint(5, 60))
    return f"CC-MAIN-{start:%Y%m%d%H%M%S}-{end:%Y%m%d%H%M%S}-{idx:05d}.warc.gz", start


# ----------------------------------------------------------------------------- reports


def write_ground_truth(out_dir: str, per_file, names) -> list[dict]:
    rows = []
    for (name, _), caps in zip(names, per_file, strict=False):
        for c in caps:
            rows.append(c.ground_truth(name))
    with open(os.path.join(out_dir, "ground_truth.jsonl"), "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n")
    return rows


def write_summary(out_dir: str, rows: list[dict], names, counts, sizes, versions):
    def table(title, counter, head):
        lines = [f"## {title}", "", f"| {head} | responses |", "| --- | ---: |"]
        lines += [f"| {k} | {v} |" for k, v in sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))]
        return "\n".join(lines) + "\n"

    md = [
        "# Ground truth summary",
        "",
        "Generated by `samples/make_samples.py`; one row of `ground_truth.jsonl` per response record.",
        "",
        "## Files",
        "",
        "| file | bytes | warcinfo | request | response | metadata |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (name, _), cnt, size in zip(names, counts, sizes, strict=False):
        md.append(
            f"| {name} | {size} | {cnt['warcinfo']} | {cnt['request']} | {cnt['response']} | {cnt['metadata']} |"
        )
    md.append(
        f"| **total** | {sum(sizes)} | {sum(c['warcinfo'] for c in counts)} | {sum(c['request'] for c in counts)} | "
        f"{sum(c['response'] for c in counts)} | {sum(c['metadata'] for c in counts)} |"
    )
    md.append("")
    md.append(table("By kind", collections.Counter(r["kind"] for r in rows), "kind"))
    md.append(table("By expected decision", collections.Counter(r["expect"] for r in rows), "expect"))
    md.append(
        table("By language (HTML pages)", collections.Counter(r["language"] or "none" for r in rows), "language")
    )
    md.append(table("By actual charset", collections.Counter(r["charset"] or "none" for r in rows), "charset"))
    decl = collections.Counter()
    for r in rows:
        if (
            r["identified_payload_type"] not in ("text/html", "application/xhtml+xml")
            or r["status"] != 200
            or not r["charset"]
        ):
            continue
        h, m = r["charset_declared"]["http"], r["charset_declared"]["meta"]
        cs = norm(r["charset"])
        if not h and not m:
            decl["no declaration at all"] += 1
        elif (h and norm(h) != cs) or (m and norm(m) != cs):
            decl["a declaration is wrong"] += 1
        elif h and m:
            decl["HTTP and <meta> both correct"] += 1
        else:
            decl["only HTTP" if h else "only <meta>"] += 1
    md.append(table("Charset declarations (200 HTML pages)", decl, "declarations"))
    near = collections.defaultdict(list)
    for r in rows:
        if r["dup_cluster"]:
            near[r["dup_cluster"]].append(r)
    nn = [c for c in near if c.startswith("near")]
    ne = [c for c in near if c.startswith("exact")]
    md += (
        [
            "## Duplicates",
            "",
            f"- near-duplicate clusters: {len(nn)} with {sum(len(near[c]) for c in nn)} pages "
            f"(sizes {dict(sorted(collections.Counter(len(near[c]) for c in nn).items()))}); "
            f"spread over ≥2 files: {sum(len({r['file'] for r in near[c]}) >= 2 for c in nn)}",
            f"- exact-duplicate clusters: {len(ne)} with {sum(len(near[c]) for c in ne)} pages",
            f"- variations: {dict(sorted(collections.Counter(v for r in rows for v in r['dup_variation']).items()))}",
            "",
            "## PII",
            "",
            f"- pages with PII listed: {sum(bool(r['pii']) for r in rows)}; values by type: "
            f"{dict(sorted(collections.Counter(p['type'] for r in rows for p in r['pii']).items()))}",
            "- look-alikes (not PII) by type: "
            f"{dict(sorted(collections.Counter(p['type'] for r in rows for p in r['not_pii']).items()))}",
            "",
            "## Debian packages used",
            "",
        ]
        + [f"- {k} {v}" for k, v in versions.items()]
        + [""]
    )
    with open(os.path.join(out_dir, "ground_truth.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))


# ----------------------------------------------------------------------------- main


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache-dir", default=os.environ.get("SAMPLES_DEB_CACHE", "/tmp/curate-sample-debs"))
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args(argv)

    root = debian.ensure_packages(args.cache_dir)
    rng = random.Random(SEED)
    plan = Planner(root, rng)
    plan.near_duplicates()
    plan.exact_duplicates()
    plan.prose()
    plan.odd()
    plan.spam()
    plan.nav()
    plan.pii_pages()
    plan.errors_and_redirects()
    plan.non_html()

    per_file = place(plan.caps, rng)
    names = file_names(per_file, rng)
    # the sixth file: its own random stream, after everything the first five depend on
    rng_pii = random.Random(PII_PROSE_SEED)
    per_file.append(plan.pii_prose(rng_pii))
    names.append(extra_file_name(per_file[-1], N_FILES, rng_pii))
    for (name, _), caps in zip(names, per_file, strict=False):
        for seq, c in enumerate(caps):
            c.record_id = record_uuid(name, str(seq), "response")

    for old in os.listdir(args.out):
        if old.startswith("CC-MAIN-") and old.endswith(".warc.gz"):
            os.remove(os.path.join(args.out, old))
    counts, sizes = [], []
    for i, ((name, start), caps) in enumerate(zip(names, per_file, strict=False)):
        path = os.path.join(args.out, name)
        counts.append(write_warc(path, name, SNAPSHOT, start, caps, SEED + i))
        sizes.append(os.path.getsize(path))
        print(f"{name}: {counts[-1]} {sizes[-1]} bytes")
    rows = write_ground_truth(args.out, per_file, names)
    write_summary(args.out, rows, names, counts, sizes, debian.package_versions(args.cache_dir))
    broken.write_all(os.path.join(args.out, "broken"), SEED)
    print(f"{len(rows)} responses, {sum(sizes)} bytes in {len(names)} files")


if __name__ == "__main__":
    main()
