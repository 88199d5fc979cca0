"""Markup hints: what the page's own tags, roles and class/id names say a
subtree is (boilerplate, or the main content).

lexbor's CSS engine finds the elements that carry any hint in C (attribute
presence tests); a Python regex then reads their class and id, matched in
lower case from the start of a word (``site-footer``, ``relatedPosts``,
``comment_list``), so that ``canvas`` is not taken for ``nav`` nor
``commentary`` for ``comment``.  The verdict per name is cached: class names
repeat within a page and across a site.
"""

from __future__ import annotations

import functools
import re

from selectolax.lexbor import LexborNode

from stages.extract.blocks import Marks

#: Class/id word prefixes that name boilerplate (navigation, page furniture,
#: sharing, comments, related links, consent banners, ads, hidden helpers).
BOILERPLATE_WORDS = (
    "nav", "menu", "breadcrumb", "pagination", "pager", "footer", "sidebar", "widget", "masthead",
    "topbar", "toolbar", "skip-link", "skiplink", "skip-to", "skip-nav", "cookie", "consent", "gdpr",
    "newsletter", "subscri", "signup", "login", "share", "sharing", "social", "related", "recommend",
    "popular", "trending", "more-stories", "comment", "disqus", "respond", "reply", "promo", "advert",
    "sponsor", "banner", "popup", "modal", "overlay", "outbrain", "taboola", "tags", "tag-cloud", "tagcloud",
    "author-bio", "author-box", "about-author", "byline", "post-meta", "entry-meta", "article-meta",
    "meta-info", "sr-only", "screen-reader", "visually-hidden", "print-only", "rating",
)
#: Whole class names that hide an element ("hidden", but not "field--label-hidden" or "hidden-xs").
HIDDEN_CLASSES = frozenset(("hidden", "is-hidden", "d-none", "invisible", "hide"))
# Exceptions: names that start like boilerplate but are not.
_NOT_BOILERPLATE = ("commentary", "elementor-widget", "navigator")
_WORD_RE = re.compile(
    r"(?:^|[^a-z0-9])(?:" + "|".join(re.escape(w) for w in BOILERPLATE_WORDS) + r"|ads?(?:$|[^a-z]))"
)
_EXCEPT_RE = re.compile("|".join(_NOT_BOILERPLATE))

#: Elements and ARIA roles that are boilerplate whatever their names.
BOILERPLATE_TAGS = frozenset(("nav", "aside", "footer", "form", "dialog"))
BOILERPLATE_ROLES = frozenset(("navigation", "contentinfo", "complementary", "banner", "menu", "menubar",
                               "dialog", "alertdialog", "search", "toolbar"))

#: Class/id words that name the main content container (anywhere in a name)...
CONTENT_WORDS = (
    "article-body", "articlebody", "article__body", "article-content", "article__content", "article-text",
    "articletext", "post-content", "postcontent", "post-body", "post-text", "post-entry", "entry-content",
    "entry-body", "story-body", "storybody", "story-content", "content-body", "main-content", "maincontent",
    "page-content", "text-content", "single-content", "blog-content", "body-text", "bodytext", "rich-text",
    "richtext", "field-body", "news-text", "article-detail", "post-detail", "news-detail",
)
#: ... and generic words that count only as a whole class or id ("content", not "text-center").
CONTENT_NAMES = frozenset(("content", "post", "entry", "story", "article", "text", "main", "maincontent"))
_CONTENT_RE = re.compile(r"(?:^|[^a-z0-9])(?:" + "|".join(re.escape(w) for w in CONTENT_WORDS) + ")")
CONTENT_TAGS = frozenset(("article", "main"))
CONTENT_ITEMPROPS = frozenset(("articlebody", "text"))

# Everything that can carry a hint, found in one CSS pass (attribute presence
# tests cost lexbor ~0.1 ms a page, where substring tests on the 100 words
# above cost ~3 ms).  Inline elements are left out: their names are icons and
# styles ("icon-share", "text-muted"), and they are a third of all named elements.
_INLINE = "a,span,img,i,em,li,label,time,strong,b,small,td,h1,h2,h3,h4,h5,h6,svg,input,button,option,abbr,sup,sub"
_CANDIDATES = (
    f"[class]:not({_INLINE}),[id]:not({_INLINE}),[role],[itemprop],[hidden],[aria-hidden],[style],"
    + ",".join(sorted(BOILERPLATE_TAGS | CONTENT_TAGS))
)


BOILERPLATE, CONTENT = 1, 2  # what a hint says


@functools.lru_cache(maxsize=1 << 16)
def name_hint(name: str) -> int:
    """What a lower-case "class id" string says: BOILERPLATE, CONTENT or 0.

    Cached: class names repeat heavily within a page and across a site.
    """
    if _CONTENT_RE.search(name):
        return CONTENT  # "article-content sticky-sidebar": the specific content word wins
    words = name.split()
    if (_WORD_RE.search(name) and not _EXCEPT_RE.search(name)) or not HIDDEN_CLASSES.isdisjoint(words):
        return BOILERPLATE
    if not CONTENT_NAMES.isdisjoint(words):
        return CONTENT
    return 0


def _hidden(attrs: dict) -> bool:
    if "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    style = attrs.get("style")
    if style:
        style = style.replace(" ", "").lower()
        return "display:none" in style or "visibility:hidden" in style
    return False


def hint(node: LexborNode) -> int:
    """What an element's tag and attributes say it is: BOILERPLATE, CONTENT or 0."""
    tag = node.tag
    attrs = node.attributes
    role = attrs.get("role")
    if tag in BOILERPLATE_TAGS or role in BOILERPLATE_ROLES or _hidden(attrs):
        return BOILERPLATE
    name = f"{attrs.get('class') or ''} {attrs.get('id') or ''}"
    by_name = name_hint(name.lower()) if len(name) > 1 else 0
    if by_name:
        return by_name
    if tag in CONTENT_TAGS or role == "main" or (attrs.get("itemprop") or "").lower() in CONTENT_ITEMPROPS:
        return CONTENT
    return 0


_FOOTER_NAMES = frozenset(("footer", "site-footer", "page-footer", "global-footer"))


def is_footer(node: LexborNode) -> bool:
    """The page's own word that this is its footer: never a content wrapper."""
    attrs = node.attributes
    if node.tag == "footer" or attrs.get("role") == "contentinfo":
        return True
    names = f"{attrs.get('class') or ''} {attrs.get('id') or ''}".lower().split()
    return not _FOOTER_NAMES.isdisjoint(names)


def scan(root: LexborNode) -> Marks:
    """Mark the elements under ``root`` that carry a boilerplate or content hint."""
    index: dict[int, int] = {}
    boilerplate: list[bool] = []
    footer: list[bool] = []
    for node in root.css(_CANDIDATES):
        key = node.mem_id
        if key in index:
            continue  # lexbor lists an element once per selector it matches
        h = hint(node)
        if h:
            index[key] = len(boilerplate)
            boilerplate.append(h == BOILERPLATE)
            footer.append(h == BOILERPLATE and is_footer(node))
    return Marks(index, boilerplate, footer)
