"""The default extractor: main text by markup hints and block rules, on lexbor.

1. Parse (lexbor, C) and drop invisible elements (:mod:`stages.extract.dom`).
2. Mark the elements whose tag, ARIA role or class/id name says boilerplate
   (navigation, footers, sharing, comments, related links, cookie banners...)
   or main content (``<article>``, ``<main>``, ``itemprop=articleBody``,
   ``entry-content``...) (:mod:`stages.extract.hints`).
3. Walk the body once, cutting it into blocks, each knowing the marked
   elements around it (:mod:`stages.extract.blocks`).
4. Forget the boilerplate marks of wrappers with unlucky names
   (``page has-sidebar``, ``entry share``): elements holding much of the text.
5. Choose the content root: the tightest content container holding most of
   the page's good text (long, few links), with the good paragraphs before
   it (a lead): those right before it, and those of the content container
   around it (the article around the body), past captions and bylines;
   without one, the whole body.
6. Keep the root's blocks outside boilerplate-marked elements, and judge them
   by link density, length and context (:mod:`stages.extract.classify`).
7. Drop a kept block made of other kept blocks: the second, flattened copy
   of an article that the page carries twice (:mod:`stages.extract.repeats`).

Steps 4 to 7 work on the block list alone: the DOM is walked once.
The output has one block per line, in Unicode NFC.
"""

from __future__ import annotations

import unicodedata

from pydantic import BaseModel, ConfigDict, Field

from stages.extract import dom, hints, pagetype
from stages.extract.blocks import Block, Marks, extract_blocks
from stages.extract.classify import ClassifyConfig, classify
from stages.extract.profiles import ARTICLE_PROFILE, PROFILES, Profile
from stages.extract.repeats import drop_repeats


class BoilerplateConfig(BaseModel):
    """Parameters of the ``boilerplate`` extractor (defaults chosen on the dev set, see docs/extraction.md)."""

    model_config = ConfigDict(extra="forbid")

    root_share: float = Field(
        0.7,
        gt=0,
        le=1,
        description="the root is the tightest content container holding this share of the page's good text",
    )
    include_lead: bool = Field(
        True,
        description="also keep the good paragraphs before the root: right before it, or in the content container "
        "around it (a lead above the body, past captions and bylines)",
    )
    min_root_chars: int = Field(
        100,
        ge=0,
        le=1_000_000,
        description="a content container needs this much good text (non-space chars) to be the root",
    )
    max_prune_share: float = Field(
        0.3,
        gt=0,
        le=1,
        description="an element named boilerplate is a wrapper (kept) if it holds more than this share of the text "
        "and a content container",
    )
    max_prune_good_share: float = Field(
        0.5, gt=0, le=1, description="... or more than this share of the good text (long, link-poor paragraphs)"
    )
    max_word_good_share: float = Field(
        0.4,
        gt=0,
        le=1,
        description="elements made boilerplate by one class word ('widget') that together hold more than this share "
        "of the good text are not boilerplate (a page builder's blocks, a blog index's entries)",
    )
    repeat_share: float = Field(
        0.8,
        gt=0,
        le=1,
        description="a kept block this share of whose text is the texts of two or more other kept blocks is dropped "
        "(a page that carries its article twice: a visible copy and a flattened print or hidden one)",
    )
    drop_repeats: bool = Field(True, description="drop kept blocks that repeat other kept text (see repeat_share)")
    page_types: bool = Field(
        True,
        description="tell forum threads, product pages, listings, documentation... from articles and adapt the "
        "rules to them (stages/extract/profiles.py); false: every page is read as an article",
    )
    max_depth: int = Field(
        2000,
        ge=50,
        le=1_000_000,
        description="pages nested deeper are refused (lexbor parsing time grows with depth x blocks)",
    )
    blocks: ClassifyConfig = Field(default_factory=ClassifyConfig)


class Result:
    """The text and what the extractor saw on the way (for the cascade and for debugging)."""

    __slots__ = ("text", "blocks", "kept", "root_found", "page_type", "chosen")

    def __init__(
        self,
        text: str,
        blocks: list[Block],
        kept: list[Block],
        root_found: bool,
        page_type: str = "article",
        chosen: list[Block] | None = None,
    ):
        self.text = text
        self.blocks = blocks  # every block of the body
        self.kept = kept  # those in the text
        self.root_found = root_found  # a content container was chosen
        self.page_type = page_type  # the kind of page it was taken for (stages.extract.pagetype)
        self.chosen = chosen or []  # the blocks the block rules judged (the root's, outside boilerplate)


def _totals(inner: list[int], marks: Marks, weights: list[int], weights2: list[int]) -> tuple[list[int], list[int]]:
    """Per marked element, the sums of ``weights`` and of ``weights2`` over the
    blocks inside it (two at once: the callers need a pair), for the marks of
    one sort: ``inner`` is each block's innermost mark of that sort (its
    ``skip`` or its ``box``), and a mark's parent is of its own sort
    (:class:`Marks`), so the other sort's blocks and marks never add to these.

    Each block adds to its innermost mark; then every mark hands its sums to
    its parent, children before parents (reverse walk order).  Linear in
    blocks + marks, however deep the marks nest.
    """
    sums = [0] * len(marks.boilerplate)
    sums2 = sums.copy()
    for m, w, w2 in zip(inner, weights, weights2, strict=False):
        if m >= 0:
            sums[m] += w
            sums2[m] += w2
    parent = marks.parent
    for m in reversed(marks.entered):
        p = parent[m]
        if p >= 0:
            sums[p] += sums[m]
            sums2[p] += sums2[m]
    return sums, sums2


def _good_chars(blocks: list[Block], cfg: ClassifyConfig) -> list[int]:
    """Chars of each block that is good on its own (long, few links), else 0."""
    high, density = cfg.length_high, cfg.max_good_link_density
    return [b.chars if b.chars >= high and b.link_chars <= density * b.chars else 0 for b in blocks]


def _within(root: int, marks: Marks) -> list[bool]:
    """Per marked element, whether it is ``root`` or inside it (walk order: parents first)."""
    inside = [False] * len(marks.boilerplate)
    parent = marks.parent
    for m in marks.entered:
        inside[m] = m == root or (parent[m] >= 0 and inside[parent[m]])
    return inside


def unmark_wrappers(blocks: list[Block], marks: Marks, cfg: BoilerplateConfig, good: list[int] | None = None) -> None:
    """Forget the boilerplate mark of an element that looks like a wrapper with an
    unlucky name (``page has-sidebar``, ``entry share``): one that holds more
    than ``max_prune_good_share`` of the good text, or more than
    ``max_prune_share`` of all text with a content container inside.

    Only the innermost mark of a block is looked at: the outer ones hold even
    more text, so they are too big as well.  An element the page calls its
    footer outright keeps its mark (:attr:`Marks.fixed`): on a page whose
    content is all links (a table of contents) the footer's licence text is
    the most "good" text there is, and would otherwise become the page; so
    does a consent banner, whose paragraphs outweigh a forum's short posts.  ``good`` is
    :func:`_good_chars` of the blocks, if the caller has it.
    """
    chars = [b.chars for b in blocks]
    if good is None:
        good = _good_chars(blocks, cfg.blocks)
    limit, good_limit = cfg.max_prune_share * sum(chars), cfg.max_prune_good_share * sum(good)
    # First: the element around them may be a wrapper too.
    unmark_word_wrappers(blocks, marks, good, cfg.max_word_good_share * sum(good))
    in_chars, in_good = _totals([b.skip for b in blocks], marks, chars, good)
    wraps, fixed, parent = marks.wraps_content, marks.fixed, marks.parent
    for b in blocks:
        m = b.skip
        if m >= 0 and not fixed[m] and (in_good[m] > good_limit or (in_chars[m] > limit and wraps[m])):
            # A wrapper: its block is free, unless a footer or consent banner is around it.
            while m >= 0 and not fixed[m]:
                m = parent[m]
            b.skip = m


#: Class words that name navigation and consent banners: never a page builder's word for its blocks
#: (a mega menu of plain text can hold more "good" text than a product page's description).
NAVIGATION_WORDS = frozenset(
    (
        "nav",
        "menu",
        "breadcrumb",
        "pagination",
        "pager",
        "skip-link",
        "skiplink",
        "skip-to",
        "skip-nav",
        "cookie",
        "consent",
        "gdpr",
        "login",
        "signup",
        "social",
    )
)


def unmark_word_wrappers(blocks: list[Block], marks: Marks, good: list[int], good_limit: float) -> None:
    """Forget the marks given for one class word when the elements it names
    hold more than ``good_limit`` of the good text together: a page builder
    that calls each block of the article a ``widget`` (HubSpot, SiteOrigin,
    CSS-module names), a blog that names each entry of its index after its
    ``author``, a theme that puts the article in a ``sidebar-layout``.
    Sidebar widgets and author boxes hold little of a page; navigation
    words are never taken for a builder's (:data:`NAVIGATION_WORDS`)."""
    words, parent, fixed = marks.words, marks.parent, marks.fixed
    by_word: dict[str, int] = {}
    for b, g in zip(blocks, good, strict=False):
        if g and b.skip >= 0:
            w = words[b.skip]
            if w and w not in NAVIGATION_WORDS:
                by_word[w] = by_word.get(w, 0) + g
    many = {w for w, n in by_word.items() if n > good_limit}
    if not many:
        return
    for b in blocks:
        m = b.skip
        while m >= 0 and words[m] in many and not fixed[m]:
            m = parent[m]
        b.skip = m


def choose_root(
    blocks: list[Block],
    marks: Marks,
    cfg: BoilerplateConfig,
    good: list[int] | None = None,
    share: float | None = None,
) -> int:
    """The content container to extract from, or -1 for the whole body.

    The tightest one holding ``root_share`` (or ``share``, the page kind's own:
    :attr:`Profile.root_share`) of the page's good text (outside boilerplate
    marks); on a page without long paragraphs (results tables, recipes,
    product pages) the text outside links counts instead.  ``good`` is
    :func:`_good_chars` of the blocks, if the caller has it.
    """
    if good is None:
        good = _good_chars(blocks, cfg.blocks)
    weights = [g if b.skip < 0 else 0 for b, g in zip(blocks, good, strict=False)]
    if sum(weights) < cfg.min_root_chars:
        weights = [b.chars - b.link_chars if b.skip < 0 else 0 for b in blocks]
    inside, chars = _totals([b.box for b in blocks], marks, weights, [b.chars for b in blocks])
    need = max((cfg.root_share if share is None else share) * sum(weights), cfg.min_root_chars)
    best, best_chars = -1, None
    for m, is_bp in enumerate(marks.boilerplate):
        if not is_bp and inside[m] >= need and (best_chars is None or chars[m] < best_chars):
            best, best_chars = m, chars[m]
    return best


def open_marks(blocks: list[Block], marks: Marks, reasons: set[int], words: frozenset[str] = frozenset()) -> None:
    """Forget the boilerplate marks given for any of ``reasons`` (:attr:`Marks.reason`)
    or for one of the class ``words`` (:attr:`Marks.words`; never those of a
    footer or consent banner): a block in a post's form inside a comment list is
    left with the innermost mark around it given for another reason, or none."""
    why, parent, named, fixed = marks.reason, marks.parent, marks.words, marks.fixed
    for b in blocks:
        m = b.skip
        while m >= 0 and (why[m] in reasons or (named[m] in words and not fixed[m])):
            m = parent[m]
        b.skip = m


def comments_outweigh(blocks: list[Block], marks: Marks, good: list[int]) -> bool:
    """Whether the comment and reply elements hold more good text than the
    rest of the page: the posts of a thread, not the short comments under a
    Q&A page's question and answers."""
    inside = outside = 0
    why = marks.reason
    for b, g in zip(blocks, good, strict=False):
        if g:
            if b.skip < 0:
                outside += g
            elif why[b.skip] == hints.THREAD:
                inside += g
    return inside > outside


def select(
    blocks: list[Block], marks: Marks, cfg: BoilerplateConfig, profile: Profile = ARTICLE_PROFILE
) -> tuple[list[Block], bool]:
    """The blocks of the content root, less those in boilerplate elements,
    under the rules of the page's kind (``profile``)."""
    good = _good_chars(blocks, cfg.blocks)  # fixed per block: computed once
    opened = {
        r
        for r, on in ((hints.HIDDEN, profile.hidden), (hints.REVIEW, profile.reviews), (hints.FORM, profile.forms))
        if on
    }
    if profile.comments == "content" or (
        profile.comments == "content_if_more" and comments_outweigh(blocks, marks, good)
    ):
        opened.add(hints.THREAD)
    if not opened.isdisjoint(marks.reason) or not profile.open_words.isdisjoint(marks.words):
        # in one pass: a post's form inside a comment inside a comment list
        open_marks(blocks, marks, opened, profile.open_words)
    unmark_wrappers(blocks, marks, cfg, good)
    root = choose_root(blocks, marks, cfg, good, profile.root_share)
    if root >= 0:
        in_root = _within(root, marks)
        inside = [b.box >= 0 and in_root[b.box] for b in blocks]
        if cfg.include_lead and True in inside:
            # The good paragraphs right before the root: a lead or intro set
            # above the article body's container.
            i = inside.index(True) - 1
            while i >= 0 and good[i] and blocks[i].skip < 0:
                inside[i] = True
                i -= 1
            outer = marks.parent[root]
            if outer >= 0:
                # Within the content container around the root (the article
                # around its body), the good paragraphs before the root,
                # past captions, bylines and share bars between them.
                in_outer = _within(outer, marks)
                while i >= 0 and blocks[i].box >= 0 and in_outer[blocks[i].box]:
                    if good[i] and blocks[i].skip < 0:
                        inside[i] = True
                    i -= 1
        good = [g for g, x in zip(good, inside, strict=False) if x]
        blocks = [b for b, x in zip(blocks, inside, strict=False) if x]
        unmark_wrappers(blocks, marks, cfg, good)
    return [b for b in blocks if b.skip < 0], root >= 0


#: A page read as an article on which the article rules keep less than this share of its text (outside
#: boilerplate marks) is read again as a listing, if less than ``LIST_MAX_GOOD_SHARE`` of it is long link-poor
#: paragraphs, or as a forum thread, if its comments hold more good text than the rest (the reading that keeps
#: more text wins).
LIST_MAX_KEPT_SHARE = 0.35
LIST_MAX_GOOD_SHARE = 0.2
#: ... and the listing rules keep at least this many lines there (else the article rules' text stays).
LIST_MIN_ITEMS = 5


def found_little(blocks: list[Block], skips: list[int], kept: list[Block]) -> bool:
    """Whether the article rules kept less than :data:`LIST_MAX_KEPT_SHARE` of the
    page's text outside the boilerplate marks ``skips`` the walk gave."""
    total = sum(b.chars for b, s in zip(blocks, skips, strict=False) if s < 0)
    return total > 0 and sum(b.chars for b in kept) < LIST_MAX_KEPT_SHARE * total


def reads_as_list(blocks: list[Block], skips: list[int], length_high: int = 50) -> bool:
    """Whether little of the page's text (outside the boilerplate marks
    ``skips`` the walk gave) is long link-poor paragraphs: on a page where the
    article rules found little (:func:`found_little`), a chart, a news feed,
    a directory or a reading list told by nothing it says about itself, whose
    items are link lines the article rules drop.  A news article keeps most of
    its text, and is mostly paragraphs."""
    total = good = 0
    for b, s in zip(blocks, skips, strict=False):
        if s < 0:
            total += b.chars
            if b.chars >= length_high and b.link_chars * 4 <= b.chars:
                good += b.chars
    return good < LIST_MAX_GOOD_SHARE * total


#: When less than this share of a page's text is outside boilerplate marks as the walk found them, its shape is
#: read with the wrappers' marks forgotten (:func:`page_shape`).
SHAPE_MIN_SHARE = 0.1


def page_shape(blocks: list[Block], marks: Marks, cfg: BoilerplateConfig) -> pagetype.Shape:
    """The shape of the page's text (:func:`pagetype.shape`) outside its boilerplate marks.

    A page whose whole body sits in one element with an unlucky name (ASP.NET's
    page-wide ``<form>``, a theme's ``sidebar-layout`` or ``footer-push``
    wrapper) shows almost no text outside marks as the walk found them, and
    its shape says nothing (no paragraphs, no item titles): then the shape is
    read as the selection will see the page, with the wrappers' marks
    forgotten (:func:`unmark_wrappers`), and the marks are put back.  A few
    pages in a hundred; the others cost one sum.
    """
    sh = pagetype.shape(blocks, cfg.blocks.length_high)
    if sh.chars >= SHAPE_MIN_SHARE * sum(b.chars for b in blocks):
        return sh
    skips = [b.skip for b in blocks]
    unmark_wrappers(blocks, marks, cfg)
    sh = pagetype.shape(blocks, cfg.blocks.length_high)
    for b, s in zip(blocks, skips, strict=False):
        b.skip = s
    return sh


class BoilerplateExtractor:
    """``html -> text`` (call) or ``html -> Result`` (:meth:`run`); ``html`` as text or as UTF-8 bytes."""

    #: The stage may hand it a page's UTF-8 bytes: lexbor parses UTF-8, so no ``str`` need be decoded for it.
    takes_bytes = True

    def __init__(self, config: BoilerplateConfig | None = None):
        self.config = config or BoilerplateConfig()
        # The block rules per kind of page, built once.
        self._rules = {kind: p.block_rules(self.config.blocks) for kind, p in PROFILES.items()}

    def run(self, html: str | bytes, url: str | None = None) -> Result:
        """Extract; ``url`` (where the page is from) helps tell its kind."""
        cfg = self.config
        tree = dom.parse_raw(html, cfg.max_depth)
        signals = pagetype.read_signals(tree, url) if cfg.page_types else None
        # The panels the page's buttons open, read before the buttons are dropped (with the signals, in one pass).
        controlled = signals.controlled if signals is not None else hints.controlled_ids(tree)
        dom.strip_invisible(tree)
        body = tree.body or tree.root
        if body is None:
            return Result("", [], [], False)
        marks = hints.scan(body, drop_captions=not cfg.blocks.keep_captions, controlled=controlled)
        blocks = extract_blocks(body, marks)
        kind = pagetype.ARTICLE
        if signals is not None:
            kind = pagetype.classify(signals, page_shape(blocks, marks, cfg))
        rules = self._rules[kind]
        skips = [b.skip for b in blocks] if signals is not None and kind == pagetype.ARTICLE else None
        chosen, root_found = select(blocks, marks, cfg, PROFILES[kind])
        kept = classify(chosen, rules)
        if skips is not None and found_little(blocks, skips, kept):
            # The article rules found no article: the page may be a list of links with no prose at all (a
            # chart, a feed, a directory), or a thread whose comments hold its text (a link aggregator's post
            # and its comments, a live ticker).  Each reading that fits is tried; the one keeping more text wins.
            # A list has items: a few stray lines (a pager, a login link) are no list.
            readings, judged = [], [b.skip for b in blocks]
            for other in (pagetype.LISTING, pagetype.FORUM):
                for b, s in zip(blocks, skips, strict=False):
                    b.skip = s
                if other == pagetype.LISTING and not reads_as_list(blocks, skips, cfg.blocks.length_high):
                    continue
                if other == pagetype.FORUM and not comments_outweigh(blocks, marks, _good_chars(blocks, cfg.blocks)):
                    continue
                picked, other_root = select(blocks, marks, cfg, PROFILES[other])
                lines = classify(picked, self._rules[other])
                if other == pagetype.FORUM or len(lines) >= LIST_MIN_ITEMS:
                    size = sum(b.chars for b in lines)
                    readings.append((size, other, picked, other_root, lines, [b.skip for b in blocks]))
            final = judged  # the marks as the article rules left them, if no other reading fits
            if readings:
                _, kind, chosen, root_found, kept, final = max(readings, key=lambda r: r[0])
                rules = self._rules[kind]
            for b, s in zip(blocks, final, strict=False):
                b.skip = s
        if cfg.drop_repeats:
            kept = drop_repeats(kept, cfg.repeat_share)
        text = "\n".join(b.text for b in kept)
        if not text.isascii():
            # One form per character: pages mix composed and decomposed
            # forms (Bengali, Vietnamese, macOS-made text), which would make
            # the same words differ for the filters and for dedup.
            text = unicodedata.normalize("NFC", text)
        return Result(text, blocks, kept, root_found, kind, chosen)

    def __call__(self, html: str | bytes, url: str | None = None) -> str:
        return self.run(html, url).text

    def block_rules(self, page_type: str) -> ClassifyConfig:
        """The block rules used on pages of that kind."""
        return self._rules[page_type]
