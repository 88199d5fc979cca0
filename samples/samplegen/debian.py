"""Real HTML pages from Debian documentation packages.

The .deb files are NOT part of the repository.  ensure_packages() downloads them
with `apt-get download` into a cache directory (default /tmp/curate-sample-debs)
and unpacks them with `dpkg-deb -x`.  By hand:

    mkdir -p /tmp/curate-sample-debs && cd /tmp/curate-sample-debs
    apt-get download debian-reference-en=2.100 ...   # see PACKAGES below
    for f in *.deb; do dpkg-deb -x "$f" root/; done
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
from dataclasses import dataclass, field

import lxml.html

# package -> version used to build the committed samples (Debian 12 "bookworm").
PACKAGES = {
    "debian-reference-en": "2.100",
    "debian-reference-de": "2.100",
    "debian-reference-fr": "2.100",
    "debian-reference-es": "2.100",
    "debian-reference-ja": "2.100",
    "debian-reference-zh-cn": "2.100",
    "python3.11-doc": "3.11.2-6+deb12u8",
    "apache2-doc": "2.4.68-1~deb12u1",
    "maint-guide-ru": "1.2.53",
    "debian-faq-ru": "11.1",
}


def _have_deb(cache: str, pkg: str) -> bool:
    return bool(glob.glob(os.path.join(cache, f"{pkg}_*.deb")))


def ensure_packages(cache: str) -> str:
    """Download (if missing) and unpack the documentation packages; return the unpack root."""
    os.makedirs(cache, exist_ok=True)
    for pkg, ver in PACKAGES.items():
        if _have_deb(cache, pkg):
            continue
        # Pinned version first; Debian point releases may have replaced it, then take the current one.
        for spec in (f"{pkg}={ver}", pkg):
            r = subprocess.run(["apt-get", "download", spec], cwd=cache, capture_output=True, text=True)
            if r.returncode == 0 and _have_deb(cache, pkg):
                if spec == pkg:
                    print(f"WARNING: {pkg} {ver} not available, used the current version: output will differ")
                break
        else:
            raise SystemExit(f"could not download {pkg}: run `apt-get update` first?\n{r.stderr}")
    root = os.path.join(cache, "root")
    stamp = os.path.join(root, ".unpacked")
    if not os.path.exists(stamp):
        for deb in sorted(glob.glob(os.path.join(cache, "*.deb"))):
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
        open(stamp, "w").close()
    return root


def package_versions(cache: str) -> dict[str, str]:
    out = {}
    for pkg in PACKAGES:
        debs = sorted(glob.glob(os.path.join(cache, f"{pkg}_*.deb")))
        out[pkg] = os.path.basename(debs[-1]).split("_")[1].replace("%2b", "+").replace("%7e", "~") if debs else "?"
    return out


# ---------------------------------------------------------------- catalogue


@dataclass
class RealPage:
    pkg: str
    path: str  # absolute path on disk
    url: str
    lang: str  # ISO 639-1
    charset: str  # encoding of the file on disk
    group: str  # python | debref | apache | maintguide | faq
    size: int = 0
    tags: list = field(default_factory=list)

    @property
    def source(self) -> str:
        return f"{self.pkg}:{self.path.split('/usr/share/', 1)[-1]}"

    def read_text(self) -> str:
        with open(self.path, "rb") as f:
            return f.read().decode(self.charset)


APACHE_LANGS = {
    "de": "de",
    "en": "en",
    "es": "es",
    "fr": "fr",
    "ja": "ja",
    "ko": "ko",
    "tr": "tr",
    "zh-cn": "zh",
    "pt-br": "pt",
    "ru": "ru",
    "da": "da",
}
DEBREF_LANGS = {"en": "en", "de": "de", "fr": "fr", "es": "es", "ja": "ja", "zh-cn": "zh"}
APACHE_SKIP = {
    "mod/quickreference.html",
    "mod/directives.html",
    "sitemap.html",
    "mod/index.html",
    "programs/index.html",
}
_LANG_ATTR = re.compile(rb'<html[^>]*\blang="([a-zA-Z-]+)"')
_META_CS = re.compile(rb'charset=["\']?([A-Za-z0-9_-]+)', re.I)


def _file_charset(data: bytes) -> str:
    m = _META_CS.search(data[:2048])
    cs = m.group(1).decode().lower() if m else "utf-8"
    return {"utf-8": "utf-8", "euc-kr": "euc-kr", "iso-8859-1": "iso-8859-1"}.get(cs, "utf-8")


def catalogue(root: str) -> list[RealPage]:
    pages: list[RealPage] = []
    doc = os.path.join(root, "usr/share/doc")

    py = os.path.join(doc, "python3.11/html")
    for p in sorted(glob.glob(os.path.join(py, "**/*.html"), recursive=True)):
        rel = os.path.relpath(p, py)
        if rel.startswith(("_", "genindex", "search", "py-modindex")):
            continue
        pages.append(RealPage("python3.11-doc", p, f"https://docs.python.org/3.11/{rel}", "en", "utf-8", "python"))

    dr = os.path.join(root, "usr/share/debian-reference")
    for p in sorted(glob.glob(os.path.join(dr, "*.html"))):
        name = os.path.basename(p)
        code = name.split(".")[1]
        if code in DEBREF_LANGS:
            pages.append(
                RealPage(
                    f"debian-reference-{code}",
                    p,
                    f"https://www.debian.org/doc/manuals/debian-reference/{name}",
                    DEBREF_LANGS[code],
                    "utf-8",
                    "debref",
                )
            )

    ap = os.path.join(doc, "apache2-doc/manual")
    for code, lang in APACHE_LANGS.items():
        base = os.path.join(ap, code)
        for p in sorted(glob.glob(os.path.join(base, "**/*.html"), recursive=True)):
            with open(p, "rb") as f:
                head = f.read(4096)
            m = _LANG_ATTR.search(head)
            if not m or m.group(1).decode().lower() != code:
                continue  # untranslated page: the package falls back to the English text
            rel = os.path.relpath(p, base)
            if rel in APACHE_SKIP:
                continue  # directive tables: mostly untranslated, near-identical across languages
            url = (
                f"https://httpd.apache.org/docs/2.4/{rel}"
                if code == "en"
                else f"https://httpd.apache.org/docs/2.4/{code}/{rel}"
            )
            pages.append(RealPage("apache2-doc", p, url, lang, _file_charset(head), "apache"))

    mg = os.path.join(doc, "maint-guide-ru/html")
    for p in sorted(glob.glob(os.path.join(mg, "*.html"))):
        pages.append(
            RealPage(
                "maint-guide-ru",
                p,
                f"https://www.debian.org/doc/manuals/maint-guide/{os.path.basename(p)}",
                "ru",
                "utf-8",
                "maintguide",
            )
        )
    fq = os.path.join(doc, "debian/FAQ/ru")
    for p in sorted(glob.glob(os.path.join(fq, "*.html"))):
        pages.append(
            RealPage(
                "debian-faq-ru",
                p,
                f"https://www.debian.org/doc/manuals/debian-faq/{os.path.basename(p)}",
                "ru",
                "utf-8",
                "faq",
            )
        )
    for pg in pages:
        pg.size = os.path.getsize(pg.path)
    return pages


# ---------------------------------------------------------------- article sections for near-duplicates

_WS = re.compile(r"\s+")
_CJK = ("ja", "zh", "ko")


def _clean(s: str) -> str:
    return _WS.sub(" ", s).strip().replace("¶", "").strip()


def text_len(s: str, lang: str) -> int:
    return len(s) // 3 if lang in _CJK else len(s.split())


@dataclass
class Article:
    title: str
    blocks: list  # [(tag, text)] with tag in h2/h3/p/pre/li
    lang: str
    source: str  # package:path#section-id
    src_url: str


def sections(page: RealPage, min_words: int = 250, max_blocks: int = 16) -> list[Article]:
    """Sections of a real page that are long enough to be republished as an article."""
    tree = lxml.html.fromstring(page.read_text().encode("utf-8"), parser=lxml.html.HTMLParser(encoding="utf-8"))
    out = []
    for sec in tree.xpath('//section | //div[contains(concat(" ", @class, " "), " section ")]'):
        heads = sec.xpath("./h1|./h2|./h3|./div[@class='titlepage']//h2|./div[@class='titlepage']//h3")
        if not heads:
            continue
        title = _clean(heads[0].text_content())
        blocks = []
        for el in sec.iter("p", "pre", "h3", "h4", "li"):
            if el is heads[0]:
                continue
            if el.tag == "li" and el.xpath(".//p"):
                continue
            if el.tag == "p" and el.xpath("ancestor::li"):
                tag = "li"
            else:
                tag = el.tag
            txt = el.text_content().strip("\n") if el.tag == "pre" else _clean(el.text_content())
            if not txt:
                continue
            blocks.append(("h3" if tag in ("h3", "h4") else tag, txt))
            if len(blocks) >= max_blocks:
                break
        paras = [t for k, t in blocks if k == "p"]
        words = sum(text_len(t, page.lang) for k, t in blocks if k in ("p", "li"))
        if len(paras) >= 4 and words >= min_words and title:
            anchor = sec.get("id") or next(iter(sec.xpath(".//a/@id")), "")
            out.append(Article(title, blocks, page.lang, f"{page.source}#{anchor}", page.url))
    return out
