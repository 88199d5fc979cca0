"""What kind of page this is: an article, a forum thread, a product page...

The boilerplate rules were made for articles: one container of prose, with
navigation and readers' comments around it.  Other pages put their content
elsewhere: a forum thread's posts are named like comments, a listing's
items are links, documentation's code is neither prose nor link-poor.  The
extractor asks this module which kind of page it has, then adjusts its
rules to it (:data:`stages.extract.boilerplate.PROFILES`).

The evidence is what the page says about itself, read from the parsed
document before its scripts are dropped (a few CSS queries in C):

- its URL (given, or its ``<link rel=canonical>`` / ``og:url``): the path
  words forum software and shops use (``/threads/``, ``viewtopic.php``,
  ``/products/``, ``/collections/``, ``/docs/``);
- its schema.org types, in JSON-LD or microdata (``DiscussionForumPosting``,
  ``QAPage``, ``Product``, ``CollectionPage``, ``TechArticle``...) and its
  ``og:type`` (``article``, ``product``, ``product.group``);
- the software that made it (``<meta name=generator>``: Discourse, vBulletin,
  Sphinx, MkDocs...);

and, after the walk, the shape of its text (:func:`shape`): how much of it is
long link-poor paragraphs, how many headline-sized links and prices it
shows, how much sits in code blocks.

Each kind is decided by a few rules, strongest evidence first
(:func:`classify`); a page with nothing telling is an article, and a page
that says it is an article (``og:type`` or schema type) and reads like one
(most of its text in long paragraphs) stays one, so that news pages keep the
rules they were tuned for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from selectolax.lexbor import LexborHTMLParser

from stages.extract.blocks import Block

ARTICLE, FORUM, QA, PRODUCT, COLLECTION, LISTING, DOCUMENTATION, SERVICE = (
    "article",
    "forum",
    "qa",
    "product",
    "collection",
    "listing",
    "documentation",
    "service",
)
PAGE_TYPES = (ARTICLE, FORUM, QA, PRODUCT, COLLECTION, LISTING, DOCUMENTATION, SERVICE)


@dataclass(frozen=True)
class Signals:
    """What the page says about itself, read before its scripts and head are dropped."""

    host: str = ""
    path: str = ""  # lower case, with the query string
    og_type: str = ""  # lower case
    generator: str = ""  # lower case
    types: frozenset[str] = frozenset()  # schema.org types, JSON-LD and microdata
    #: ids of the elements the page's buttons and links open (``aria-controls``: collapsed panels,
    #: see :func:`stages.extract.hints.controlled_ids`), read in the same pass
    controlled: frozenset[str] = frozenset()


_SIGNAL_SELECTOR = (
    'meta[property="og:type"],meta[name="generator"],link[rel="canonical"],meta[property="og:url"],'
    'script[type="application/ld+json"],[itemtype],[aria-controls]'
)


def _is_signal(tag: str, attrs: dict) -> bool:
    """Whether an element matches the selector's other parts (for one matched by ``[aria-controls]``)."""
    if tag == "script":
        return attrs.get("type") == "application/ld+json"
    if tag == "link":
        return attrs.get("rel") == "canonical"
    if tag == "meta":
        return attrs.get("property") in ("og:type", "og:url") or attrs.get("name") == "generator"
    return False


_LD_TYPE_RE = re.compile(r'"@type"\s*:\s*(?:\[\s*)?"([A-Za-z]+)"')
_ITEMTYPE_RE = re.compile(r"schema\.org/([A-Za-z]+)")


#: Query parameters that say where a visitor came from, not which page this is (analytics campaign tags, ad
#: click ids, Google's merchant-listing tag ``srsltid``): a shop's home page with them is still its home page.
_TRACKING_PARAM_RE = re.compile(
    r"(?:utm_[a-z]+|srsltid|gclid|gbraid|wbraid|dclid|fbclid|msclkid|yclid|mc_cid|mc_eid|_ga|_gl)(?:=|$)"
)


def _without_tracking(query: str) -> str:
    if not query:
        return query
    return "&".join(p for p in query.split("&") if p and not _TRACKING_PARAM_RE.match(p))


def read_signals(tree: LexborHTMLParser, url: str | None = None) -> Signals:
    """The page's :class:`Signals`; ``url`` is where it was fetched from
    (else its canonical URL, if it names one)."""
    og_type = generator = canonical = ""
    types: set[str] = set()
    controlled: set[str] = set()
    for node in tree.css(_SIGNAL_SELECTOR):
        tag = node.tag
        attrs = node.attributes
        if "aria-controls" in attrs:
            controlled.update((attrs.get("aria-controls") or "").split())
            if "itemtype" not in attrs and not _is_signal(tag, attrs):
                continue  # matched for its aria-controls only
        if tag == "script":
            types.update(_LD_TYPE_RE.findall(node.text(deep=True) or ""))
        elif tag == "link":
            canonical = canonical or (attrs.get("href") or "")
        elif tag == "meta":
            content = (attrs.get("content") or "").strip()
            prop = attrs.get("property")
            if prop == "og:type":
                og_type = og_type or content.lower()
            elif prop == "og:url":
                canonical = canonical or content
            else:
                generator = generator or content.lower()
        if "itemtype" in attrs:
            types.update(_ITEMTYPE_RE.findall(attrs.get("itemtype") or ""))
    host = path = ""
    try:
        parts = urlsplit(url or canonical)
        query = _without_tracking(parts.query.lower())
        host, path = parts.netloc.lower(), parts.path.lower() + ("?" + query if query else "")
    except ValueError:  # a malformed URL says nothing
        pass
    return Signals(host, path, og_type, generator, frozenset(types), frozenset(controlled))


@dataclass(frozen=True)
class Shape:
    """The shape of a page's text, from its blocks outside boilerplate marks."""

    chars: int  # all text
    good_share: float  # share of it in long, link-poor paragraphs
    link_share: float  # share of it inside links
    headlines: int  # lines that are one long link each (a teaser, an item title)
    prices: int  # lines with a price
    code_share: float  # share of the text in <pre>


_PRICE_RE = re.compile(r"[$€£¥₹]\s?\d|\d(?:[.,]\d\d)?\s?(?:€|EUR|USD|GBP|kr|zł)\b")


def shape(blocks: list[Block], length_high: int = 50, headline_chars: int = 30) -> Shape:
    chars = good = code = headlines = prices = linked = 0
    for b in blocks:
        if b.skip >= 0:
            continue
        n = b.chars
        chars += n
        linked += b.link_chars
        if b.kind == "pre":
            code += n
        elif n >= length_high and b.link_chars * 4 <= n:
            good += n
        if b.links and b.link_chars >= headline_chars * b.links and b.link_chars * 2 > n:
            headlines += 1
        if n < 40 and _PRICE_RE.search(b.text):
            prices += 1
    total = max(chars, 1)
    return Shape(chars, good / total, linked / total, headlines, prices, code / total)


# --- evidence per kind --------------------------------------------------------

_FORUM_TYPES = frozenset(("DiscussionForumPosting", "QAPage"))
_QA_TYPES = frozenset(("QAPage", "Question"))
_FORUM_PATH_RE = re.compile(
    r"/(?:forums?|threads?|t|discussions?|community|boards?|questions|comments|talk|showtopic)/"
    r"|/topics?/\d|viewtopic\.php|showthread\.php|/thread-\d|[?&]topic=\d"  # "/topics/cameras" is a section
    r"|/post/\d+/?$"  # a link aggregator's post and its comments (Lemmy)
)
_FORUM_HOST_RE = re.compile(r"^(?:forums?|community|discuss|discussion|boards?|bbs|answers)\.")
_FORUM_GENERATORS = (
    "discourse",
    "vbulletin",
    "xenforo",
    "phpbb",
    "invision",
    "simple machines",
    "mybb",
    "flarum",
    "nodebb",
    "vanilla",
)

_DOC_GENERATORS = (
    "sphinx",
    "docutils",
    "mkdocs",
    "docusaurus",
    "rustdoc",
    "gitbook",
    "mediawiki",
    "dokuwiki",
    "vuepress",
    "vitepress",
    "bookdown",
    "hugo",
    "jekyll",
    "starlight",
    "nextra",
)
_DOC_PATH_RE = re.compile(
    r"/(?:docs?|documentation|reference|manual|handbook|api|man-?pages|wiki|guides?|tutorials?|"
    r"userguide|library|learn|book|title)/"
)
_DOC_HOST_RE = re.compile(r"^(?:docs?|developers?|devdocs|wiki|learn|man\d?)\.|\.readthedocs\.|^docs\.rs$")
_DOC_TYPES = frozenset(("TechArticle", "APIReference", "SoftwareSourceCode"))

_PRODUCT_TYPES = frozenset(("Product", "ProductGroup", "IndividualProduct"))
_PRODUCT_PATH_RE = re.compile(
    r"/(?:products?|p|dp|ip|itm|item|pdp|listing|app|store/detail)/[^/]+"
    r"|/[^/]*-\d{5,}(?:\.html?)?/?$"
)
_COLLECTION_TYPES = frozenset(("CollectionPage", "OfferCatalog", "SomeProducts"))
_COLLECTION_PATH_RE = re.compile(
    r"/(?:collections?|categor(?:y|ies)|c|cat|b|browse|shop|department|departments|l|"
    r"sub-?categor(?:y|ies)|product-category)(?:/|$)"
)

_ARTICLE_TYPES = frozenset(
    (
        "Article",
        "NewsArticle",
        "BlogPosting",
        "ReportageNewsArticle",
        "OpinionNewsArticle",
        "AnalysisNewsArticle",
        "LiveBlogPosting",
        "ScholarlyArticle",
        "Recipe",
        "HowTo",
    )
)

_SERVICE_PATH_RE = re.compile(
    r"/(?:services?|solutions?|features?|platform|pricing|what-we-do|capabilities)(?:/|$|\.)"
)


_SLUG_RE = re.compile(r"\d{3}|[^/]*-[^/]*-|\.|[^/]{25}")


def _section_path(path: str) -> bool:
    """A site's section, not one story in it: one or two short path words without
    a query, none a story's slug (two hyphens or more), id or file name
    ("/technology", "/hub/science", "/gaming/"; not "/2024/05/the-storm-that")."""
    if not path or path == "/" or "?" in path or path.count("/") > 3:
        return False
    parts = [p for p in path.split("/") if p]
    return 0 < len(parts) <= 2 and not any(_SLUG_RE.search(p) for p in parts)


def _forum(s: Signals) -> bool:
    return (
        not _FORUM_TYPES.isdisjoint(s.types)
        or s.og_type == "forum"
        or bool(_FORUM_PATH_RE.search(s.path))
        or bool(_FORUM_HOST_RE.search(s.host))
        or any(g in s.generator for g in _FORUM_GENERATORS)
    )


def _documentation(s: Signals, sh: Shape) -> bool:
    said = (
        any(g in s.generator for g in _DOC_GENERATORS)
        or not _DOC_TYPES.isdisjoint(s.types)
        or bool(_DOC_HOST_RE.search(s.host))
        or bool(_DOC_PATH_RE.search(s.path))
    )
    return said or sh.code_share > 0.15


def _says_article(s: Signals) -> bool:
    return s.og_type == "article" or not _ARTICLE_TYPES.isdisjoint(s.types)


def classify(s: Signals, sh: Shape) -> str:
    """The page's kind, from what it says about itself and the shape of its text."""
    if _forum(s):
        # A question with answers (Stack Exchange, Discourse's Q&A mode) or a thread of posts.
        return QA if not _QA_TYPES.isdisjoint(s.types) or "/questions/" in s.path else FORUM
    # A page that says it is an article and reads like one (a news story,
    # a blog post, a review) keeps the article rules, whatever else it shows.
    if _says_article(s) and sh.good_share >= 0.4:
        return ARTICLE
    if _documentation(s, sh):
        return DOCUMENTATION
    product = s.og_type.startswith("product") and "group" not in s.og_type or not _PRODUCT_TYPES.isdisjoint(s.types)
    says_collection = "group" in s.og_type or not _COLLECTION_TYPES.isdisjoint(s.types)
    collection = says_collection or bool(_COLLECTION_PATH_RE.search(s.path)) or sh.prices >= 8
    product_path = _PRODUCT_PATH_RE.search(s.path)
    if product and not collection and (product_path or sh.prices < 8):
        return PRODUCT
    if product and product_path and not says_collection:
        # One product at a product's address, whatever its "related" grid's prices or a shop
        # section in its path say ("/shop/p/white-mug", "/c/product/1082604-reg/...").
        return PRODUCT
    if collection:
        return COLLECTION
    if _PRODUCT_PATH_RE.search(s.path):
        return PRODUCT
    if sh.headlines >= 8 and (sh.good_share < 0.3 or _section_path(s.path)):
        return LISTING
    if _SERVICE_PATH_RE.search(s.path) or (s.host and s.path in ("", "/")):
        return SERVICE
    return ARTICLE
