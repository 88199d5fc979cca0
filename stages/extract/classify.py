"""Keep or drop each block: a small rule set after jusText (Pomikálek 2011,
"Removing Boilerplate and Duplicate Content from Web Corpora", ch. 3).

1. Each group of lines (a paragraph, with its ``<br>`` lines) gets a class
   from its own features: *bad* if mostly link text (or a caption), *good*
   if long with few links, *short* if very short (but a link-free list item
   or table row, a piece of a larger unit, is near), *near* in between;
   headings are set aside (those of ``max_heading_chars`` or more are
   paragraphs: a subtitle, or body text set in heading tags).
2. Context decides the rest, from the nearest good or bad group on each side
   (the ends of the content count as ``edge``): a short group is kept between
   two good ones, a near group next to one; a heading is kept when the text
   right after it is.
3. A line repeated on the page is kept once; a line that is nothing but a web
   address (an image's or a file's URL printed by a shop template, a link
   target spelled out) is no text and is dropped, but in code.

Lengths are non-whitespace characters (see :mod:`stages.extract.blocks`), so
the rules carry over to scripts written without spaces.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from stages.extract.blocks import Block

GOOD, BAD, SHORT, NEAR, HEADING = "good", "bad", "short", "near", "heading"


class ClassifyConfig(BaseModel):
    """Thresholds of the block rules (lengths in non-space characters)."""

    model_config = ConfigDict(extra="forbid")

    max_link_density: float = Field(
        0.5, ge=0, le=1, description="a paragraph with more link text than this is boilerplate"
    )
    length_low: int = Field(
        30,
        ge=0,
        le=100_000,
        description="paragraphs shorter than this (non-space chars) are short: kept only between good ones",
    )
    length_high: int = Field(50, ge=1, le=100_000, description="paragraphs at least this long are good on their own")
    max_good_link_density: float = Field(
        0.25, ge=0, le=1, description="a long paragraph is good only below this link density"
    )
    max_heading_chars: int = Field(
        100,
        ge=1,
        le=100_000,
        description="a heading this long is judged as a paragraph (a subtitle, or body text set in heading tags)",
    )
    heading_distance: int = Field(
        3, ge=1, le=1000, description="a heading is kept if the kept text after it follows within this many headings"
    )
    keep_captions: bool = Field(
        False,
        description="keep figure and table captions (on the dev set they are photo credits more often than text)",
    )
    short_lines_near: bool = Field(
        False,
        description="every short line without links is judged as near, not only list items and table rows "
        "(a product page's specification lines)",
    )
    short_pages: bool = Field(
        False,
        description="on a page with no paragraph of even 'near' length (a list of names), short ones count as good",
    )
    near_needs_both: bool = Field(False, description="a near paragraph needs good neighbours on both sides (else one)")
    short_links_near: bool = Field(
        False,
        description="with short_lines_near, a short line that is a link is near too (an item's name in a "
        "shop category: the category's products are links)",
    )
    linked_headings_near: bool = Field(
        False,
        description="a heading that is a link is judged as near, not by the text after it (the title of an "
        "item on a listing or in a shop category: a card's only line, or followed by a price or a date)",
    )
    edge: Literal["good", "bad"] = Field(BAD, description="how the ends of the content count as neighbours")


_ITEM_KINDS = ("li", "tr")


def _group_classes(blocks: list[Block], cfg: ClassifyConfig) -> tuple[list[int], list[str]]:
    """Group number per block, and the initial class per group."""
    group_of: list[int] = []
    chars: list[int] = []  # per group
    links: list[int] = []
    kinds: list[str] = []  # of the group's first block
    last = None
    for b in blocks:
        if b.group != last:
            last = b.group
            chars.append(b.chars)
            links.append(b.link_chars)
            kinds.append(b.kind)
        else:
            chars[-1] += b.chars
            links[-1] += b.link_chars
        group_of.append(len(chars) - 1)
    max_density, max_good_density = cfg.max_link_density, cfg.max_good_link_density
    low, high, bad_caption, max_heading = cfg.length_low, cfg.length_high, not cfg.keep_captions, cfg.max_heading_chars
    short_near, linked_headings_near = cfg.short_lines_near, cfg.linked_headings_near
    short_links_near = cfg.short_links_near
    classes: list[str] = []
    for n, link, kind in zip(chars, links, kinds, strict=False):
        density = link / n if n else 0.0
        if density > max_density or (kind == "caption" and bad_caption):
            classes.append(BAD)
        elif kind == "h" and n < max_heading:
            classes.append(NEAR if linked_headings_near and link * 2 > n else HEADING)
        elif n < low:
            # A list item or table row is a piece of a larger unit (a spec
            # table, a list of steps): without links, it is judged as near.
            classes.append(NEAR if (not link or short_links_near) and (kind in _ITEM_KINDS or short_near) else SHORT)
        elif n >= high and density <= max_good_density:
            classes.append(GOOD)
        else:
            classes.append(NEAR)
    return group_of, classes


def _nearest(classes: list[str], edge: str, step: int) -> list[str]:
    """Per group, the class of the nearest good or bad group before it (``step`` 1)
    or after it (``step`` -1); one pass, so a page of 100k short lines stays linear."""
    out = [edge] * len(classes)
    seen = edge
    order = range(len(classes)) if step == 1 else range(len(classes) - 1, -1, -1)
    for i in order:
        out[i] = seen
        if classes[i] in (GOOD, BAD):
            seen = classes[i]
    return out


def _resolve(classes: list[str], cfg: ClassifyConfig) -> list[bool]:
    n = len(classes)
    before, after = _nearest(classes, cfg.edge, 1), _nearest(classes, cfg.edge, -1)
    keep = [c == GOOD for c in classes]
    near_needs_both, distance = cfg.near_needs_both, cfg.heading_distance
    for i, c in enumerate(classes):
        if c == SHORT:
            keep[i] = before[i] == GOOD and after[i] == GOOD
        elif c == NEAR:
            keep[i] = (before[i] == GOOD and after[i] == GOOD) if near_needs_both else GOOD in (before[i], after[i])
    for i, c in enumerate(classes):
        if c == HEADING:
            # Kept when the text right after it (past other headings) is kept.
            j = i + 1
            while j < n and classes[j] == HEADING and j - i < distance:
                j += 1
            keep[i] = j < n and classes[j] != HEADING and keep[j]
    return keep


_ADDRESS_RE = re.compile(r"(?:[a-z][a-z0-9+.-]*://|www\.)\S+", re.IGNORECASE)


def is_address(text: str) -> bool:
    """Whether a line is a web address alone (``https://cdn.example/x.jpg``, ``www.example.org``)."""
    return (
        " " not in text and ("://" in text or text[:4].lower() == "www.") and _ADDRESS_RE.fullmatch(text) is not None
    )


def classify(blocks: list[Block], cfg: ClassifyConfig) -> list[Block]:
    """The blocks to keep, in order, each line once."""
    if not blocks:
        return []
    group_of, classes = _group_classes(blocks, cfg)
    if GOOD not in classes:
        # No long paragraph anywhere (tables, lists, short notes): the
        # longest kind of text there is stands in for good text.
        classes = [GOOD if c == NEAR else c for c in classes]
        if cfg.short_pages and GOOD not in classes:
            classes = [GOOD if c == SHORT else c for c in classes]
    keep = _resolve(classes, cfg)
    seen: set[str] = set()
    out = []
    for b, g in zip(blocks, group_of, strict=False):
        if keep[g] and (b.kind == "pre" or (b.text not in seen and not is_address(b.text))):
            seen.add(b.text)  # code repeats its lines ("}", "return x") on purpose
            out.append(b)
    return out
