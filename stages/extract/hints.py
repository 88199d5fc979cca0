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

from selectolax.lexbor import LexborNode, create_tag

from stages.extract.blocks import Marks

#: Class/id word prefixes that name boilerplate (navigation, page furniture,
#: sharing, comments, related links, calls to action, ads, hidden helpers).
BOILERPLATE_WORDS = (
    "nav",
    "menu",
    "breadcrumb",
    "pagination",
    "pager",
    "footer",
    "sidebar",
    "widget",
    "masthead",
    "topbar",
    "toolbar",
    "skip-link",
    "skiplink",
    "skip-to",
    "skip-nav",
    "gdpr",
    "newsletter",
    "subscri",
    "signup",
    "login",
    "share",
    "sharing",
    "social",
    "related",
    "recommend",
    "popular",
    "trending",
    "more-stories",
    "promo",
    "advert",
    "sponsor",
    "banner",
    "popup",
    "modal",
    "overlay",
    "outbrain",
    "taboola",
    "tag-cloud",
    "tagcloud",
    "author",
    "about-author",
    "byline",
    "post-meta",
    "entry-meta",
    "article-meta",
    "meta-info",
    "sr-only",
    "screen-reader",
    "visually-hidden",
    "print-only",
    "rating",
    "signature",
)
#: ... that name readers' comments and replies: boilerplate under an article, the content of a forum thread.
THREAD_WORDS = ("comment", "disqus", "respond", "reply")
#: ... that name customers' reviews: boilerplate under a product, the content of a review article.
REVIEW_WORDS = ("review",)
#: ... that count only as a whole word: "tags" but not "tagStyle", "cta" (call to action) but not "ctaxonomy".
BOILERPLATE_TOKENS = ("ad", "ads", "tags", "cta")
#: ... that count anywhere in a name: consent managers name their banners "BorlabsCookie", "cmplz-consent",
#: or after themselves (OneTrust, Didomi, Usercentrics: their long "these cookies..." paragraphs read as prose).
BOILERPLATE_ANYWHERE = ("cookie", "consent", "onetrust", "optanon", "ot-sdk", "didomi", "usercentrics")
#: Class/id word prefixes that name a caption (wp-caption, media-caption, caption-text): dropped with
#: the ``<figcaption>`` captions unless the config keeps captions.
CAPTION_WORDS = ("caption",)
#: Whole class names that hide an element ("hidden", but not "field--label-hidden" or "hidden-xs").
HIDDEN_CLASSES = frozenset(("hidden", "is-hidden", "d-none", "invisible", "hide"))
#: Hidden elements that are content waiting for a click, whatever the page: tab panels, accordion and FAQ
#: panels, collapsed sections (their names), and Tailwind's "hidden lg:block" (visible from a screen width on).
_PANEL_RE = re.compile(r"accordion|tab-?pane|tabpanel|tab-content|collaps|expand|faq|panel")
_SHOWN_FROM_RE = re.compile(r"(?<![a-z0-9])(?:sm|md|lg|xl|2xl):(?:block|flex|grid|inline|table|contents)")
# Exceptions: names that start like boilerplate but are not.
_NOT_BOILERPLATE = ("commentary", "elementor-widget", "navigator")


def _alternation(words: tuple[str, ...]) -> str:
    """A regex matching any of ``words``, shaped as a trie ("post(?:-body|content)"):
    the same matches as "w1|w2|...", but faster, as the regex engine tries the
    alternatives in turn at every position."""
    if "" in words:
        rest = tuple(w for w in words if w)
        return f"(?:{_alternation(rest)})?" if rest else ""
    tails: dict[str, list[str]] = {}
    for w in sorted(set(words)):
        tails.setdefault(w[0], []).append(w[1:])
    branches = [re.escape(first) + _alternation(tuple(rest)) for first, rest in tails.items()]
    return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"


# A word counts from the start of the name or after a character other than a-z0-9.
_FURNITURE_RE = re.compile(
    r"(?<![a-z0-9])(?:"
    + _alternation(BOILERPLATE_WORDS)
    + "|"
    + _alternation(BOILERPLATE_TOKENS)
    + r"(?![a-z]))|"
    + _alternation(BOILERPLATE_ANYWHERE)
)
_THREAD_RE = re.compile(r"(?<![a-z0-9])" + _alternation(THREAD_WORDS))
_REVIEW_RE = re.compile(r"(?<![a-z0-9])" + _alternation(REVIEW_WORDS))
_CAPTION_RE = re.compile(r"(?<![a-z0-9])" + _alternation(CAPTION_WORDS))
_EXCEPT_RE = re.compile("|".join(_NOT_BOILERPLATE))

#: Elements and ARIA roles that are boilerplate whatever their names.
BOILERPLATE_TAGS = frozenset(("nav", "aside", "footer", "form", "dialog"))
BOILERPLATE_ROLES = frozenset(
    (
        "navigation",
        "contentinfo",
        "complementary",
        "banner",
        "menu",
        "menubar",
        "dialog",
        "alertdialog",
        "search",
        "toolbar",
    )
)

#: Class/id words that name the main content container (anywhere in a name)...
CONTENT_WORDS = (
    "article-body",
    "articlebody",
    "article__body",
    "article-content",
    "article__content",
    "article-text",
    "articletext",
    "post-content",
    "postcontent",
    "post-body",
    "post-text",
    "post-entry",
    "entry-content",
    "entry-body",
    "story-body",
    "storybody",
    "story-content",
    "content-body",
    "main-content",
    "maincontent",
    "page-content",
    "text-content",
    "single-content",
    "blog-content",
    "body-text",
    "bodytext",
    "rich-text",
    "richtext",
    "field-body",
    "news-text",
    "article-detail",
    "post-detail",
    "news-detail",
)
#: ... and generic words that count only as a whole class or id ("content", not "text-center").
CONTENT_NAMES = frozenset(("content", "post", "entry", "story", "article", "text", "main", "maincontent"))
_CONTENT_RE = re.compile(r"(?<![a-z0-9])" + _alternation(CONTENT_WORDS))
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


# What a hint says.  THREAD, HIDDEN, REVIEW and FORM mark elements whose fate
# the kind of page decides (stages.extract.profiles): readers' comments and
# replies are a forum thread's posts; hidden elements are the closed tabs and
# accordions of shop, service and documentation pages; customers' reviews are
# boilerplate under a product, and content elsewhere (a review article); a
# <form> is a login or search box, but forum software wraps posts in forms
# (old Reddit, XenForo 1).
BOILERPLATE, CONTENT, THREAD, HIDDEN, REVIEW, FORM = 1, 2, 3, 4, 5, 6
#: the hints that are boilerplate unless the kind of page says otherwise
_OVERRULED = (THREAD, HIDDEN, REVIEW, FORM)


def name_hint(name: str, drop_captions: bool = True) -> int:
    """What a lower-case "class id" string says: BOILERPLATE, CONTENT or 0;
    a caption's name says BOILERPLATE if ``drop_captions``."""
    h = _name_hint(name, drop_captions)[0]
    return 0 if h == REVIEW else BOILERPLATE if h in _OVERRULED else h


@functools.lru_cache(maxsize=1 << 16)
def _name_hint(name: str, drop_captions: bool = True) -> tuple[int, str]:
    """:func:`name_hint`, with THREAD for names that are boilerplate only as
    comments or replies (``comment-list``, ``replies``), HIDDEN for those
    that hide an element (``hidden``, ``d-none``) and REVIEW for customers'
    reviews; and the word that made a name boilerplate ("widget"), else "".

    Cached: class names repeat heavily within a page and across a site.
    """
    if _CONTENT_RE.search(name):
        return CONTENT, ""  # "article-content sticky-sidebar": the specific content word wins
    words = name.split()
    furniture = _FURNITURE_RE.search(name)
    if furniture and not _EXCEPT_RE.search(name):
        return BOILERPLATE, furniture.group(0)
    if drop_captions and _CAPTION_RE.search(name):
        return BOILERPLATE, ""
    if _THREAD_RE.search(name) and not _EXCEPT_RE.search(name):
        return THREAD, ""
    if not HIDDEN_CLASSES.isdisjoint(words) and not _PANEL_RE.search(name) and not _SHOWN_FROM_RE.search(name):
        return HIDDEN, ""
    if _REVIEW_RE.search(name):
        return REVIEW, ""
    if not CONTENT_NAMES.isdisjoint(words):
        return CONTENT, ""
    return 0, ""


def _hidden(attrs: dict) -> bool:
    if "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    style = attrs.get("style")
    if style:
        style = style.replace(" ", "").lower()
        return "display:none" in style or "visibility:hidden" in style
    return False


# Tag ids (ints, cheaper to read from a lexbor node than its name) of the tags above.
_BOILERPLATE_TAG_IDS = frozenset(create_tag(t).tag_id for t in BOILERPLATE_TAGS)
_CONTENT_TAG_IDS = frozenset(create_tag(t).tag_id for t in CONTENT_TAGS)
_FOOTER_TAG_ID = create_tag("footer").tag_id
_FORM_TAG_ID = create_tag("form").tag_id

# The attributes that can hint besides class and id.
_OTHER_HINT_ATTRS = frozenset(("role", "hidden", "aria-hidden", "style", "itemprop"))


#: React's streaming server rendering sends each part of the page that was waiting for data as a
#: ``<div hidden id="S:3">`` at the end of the body, which a script then moves into its place: shown, not hidden.
_STREAMED_SEGMENT_RE = re.compile(r"S:[0-9a-z]+")


#: An id of four or more plain words joined by hyphens is an anchor made of a heading's text ("how-to-reply-to-a-
#: review"): "reply", "comment", "respond" are everyday verbs there, not the name of a comment list.
_HEADING_ANCHOR_RE = re.compile(r"[a-z]+(?:-[a-z]+){3,}")


def controlled_ids(tree) -> frozenset[str]:
    """The ids of the elements that a button or link of the page says it opens
    and closes (``aria-controls``): the collapsed panels of a disclosure,
    accordion or tab widget, hidden until a click.  Read before the invisible
    elements (buttons among them) are dropped; one CSS query in C."""
    ids: set[str] = set()
    for node in tree.css("[aria-controls]"):
        ids.update((node.attributes.get("aria-controls") or "").split())
    return frozenset(ids)


def _shown_later(attrs: dict, controlled: frozenset[str]) -> bool:
    """Whether a hidden element is content waiting to be shown, whatever the
    page: a panel a button of the page opens (its id in ``controlled``: see
    :func:`controlled_ids`), or a segment React's streaming moves into place."""
    i = attrs.get("id")
    return bool(i) and (i in controlled or _STREAMED_SEGMENT_RE.fullmatch(i) is not None)


def _hint(
    tag_id: int, attrs: dict, drop_captions: bool = True, controlled: frozenset[str] = frozenset()
) -> tuple[int, str]:
    """:func:`hint` from an element's tag id and attributes, and the class
    word behind a boilerplate verdict (see :func:`_name_hint`); ``controlled``
    are the ids the page's buttons open (:func:`controlled_ids`)."""
    if tag_id in _BOILERPLATE_TAG_IDS and tag_id != _FORM_TAG_ID:
        return BOILERPLATE, ""
    # Most elements have no attribute but class and id: the tests on the others are skipped.
    others = not _OTHER_HINT_ATTRS.isdisjoint(attrs)
    role = attrs.get("role") if others else None
    if others and role in BOILERPLATE_ROLES:
        return BOILERPLATE, ""
    name = f"{attrs.get('class') or ''} {attrs.get('id') or ''}"
    by_name, word = _name_hint(name.lower(), drop_captions) if len(name) > 1 else (0, "")
    if by_name == THREAD and _HEADING_ANCHOR_RE.fullmatch((attrs.get("id") or "").lower()):
        # "receive-and-reply-to-a-message": a section's anchor made of its heading, whose "reply" is a verb
        by_name, word = _name_hint((attrs.get("class") or "").lower(), drop_captions)
    if by_name == BOILERPLATE:
        return BOILERPLATE, word  # a hidden menu is a menu, whatever the page
    if tag_id == _FORM_TAG_ID:
        return FORM, ""
    if others and _hidden(attrs) and role != "tabpanel" and not _PANEL_RE.search(name.lower()):
        if not _shown_later(attrs, controlled):
            return HIDDEN, ""
    elif by_name == HIDDEN and _shown_later(attrs, controlled):
        by_name = 0
    if by_name:
        return by_name, ""
    if tag_id in _CONTENT_TAG_IDS or (
        others and (role == "main" or (attrs.get("itemprop") or "").lower() in CONTENT_ITEMPROPS)
    ):
        return CONTENT, ""
    return 0, ""


def hint(node: LexborNode) -> int:
    """What an element's tag and attributes say it is: BOILERPLATE, CONTENT or 0."""
    h = _hint(node.tag_id, node.attributes)[0]
    return 0 if h == REVIEW else BOILERPLATE if h in _OVERRULED else h


_FOOTER_NAMES = frozenset(("footer", "site-footer", "page-footer", "global-footer"))


def _is_footer(tag_id: int, attrs: dict) -> bool:
    """The page's own word that an element (tag id, attributes) is its footer:
    never a content wrapper."""
    if tag_id == _FOOTER_TAG_ID or attrs.get("role") == "contentinfo":
        return True
    name = f"{attrs.get('class') or ''} {attrs.get('id') or ''}".lower()
    return "footer" in name and not _FOOTER_NAMES.isdisjoint(name.split())  # each of them has "footer"


def scan(root: LexborNode, drop_captions: bool = True, controlled: frozenset[str] = frozenset()) -> Marks:
    """Mark the elements under ``root`` that carry a boilerplate or content
    hint; elements named as captions are boilerplate if ``drop_captions``;
    hidden elements whose id is in ``controlled`` (:func:`controlled_ids`) are
    not marked hidden."""
    index: dict[int, int] = {}
    boilerplate: list[bool] = []
    fixed: list[bool] = []
    reason: list[int] = []
    words: list[str] = []
    tag_ids: set[int] = set()
    seen: set[int] = set()
    for node in root.css(_CANDIDATES):
        key = node.mem_id
        if key in seen:
            continue  # lexbor lists an element once per selector it matches
        seen.add(key)
        # Each node's attributes are read once (a dict built in C), for both questions.
        attrs = node.attributes
        tag_id = node.tag_id
        h, word = _hint(tag_id, attrs, drop_captions, controlled)
        if h:
            index[key] = len(boilerplate)
            is_bp = h != CONTENT
            boilerplate.append(is_bp)
            # The page's footer and consent banners are never wrappers with an unlucky name.
            fixed.append(is_bp and (word in BOILERPLATE_ANYWHERE or _is_footer(tag_id, attrs)))
            reason.append(h if h in _OVERRULED else 0)
            words.append(word)
            tag_ids.add(tag_id)
    return Marks(index, boilerplate, fixed, frozenset(tag_ids), reason, words)
