"""Cut a DOM subtree into text blocks: one line each, with the features the
classifier needs.

A block is what a reader sees as one line: a paragraph, a heading, a list
item, a table row (cells joined by a space), a ``<pre>`` line, or one run of
text between ``<br>`` tags.  Lines cut by ``<br>`` inside one element share a
``group``, so that a ``<br>``-separated paragraph is judged as a whole.

The walk is iterative (an explicit stack, never recursion), so a deeply nested
page cannot overflow the interpreter's stack.  Character counts skip
whitespace, so the density features mean the same for scripts written without
spaces (Chinese, Japanese, Thai) as for those with; Han, kana and hangul
characters count double in the lengths, as one of them says about as much as
a short word.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborNode

#: Elements that start and end a line.
BLOCK_TAGS = frozenset(
    """address article aside blockquote body center dd details dialog dir div dl dt fieldset figcaption
    figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr legend li main menu nav ol p pre section
    summary table tbody thead tfoot tr ul caption""".split()
)
HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
_CELLS = frozenset(("td", "th"))
# What a block is called after the innermost block element around it.
_KIND = {**{h: "h" for h in HEADINGS}, "p": "p", "li": "li", "dt": "li", "dd": "li", "tr": "tr",
         "pre": "pre", "blockquote": "quote", "figcaption": "caption", "caption": "caption"}


class Block:
    """One output line and its features."""

    __slots__ = ("text", "chars", "link_chars", "kind", "group", "skip", "box")

    def __init__(self, text: str, chars: int, link_chars: int, kind: str, group: int, skip: int, box: int):
        self.text = text
        self.chars = chars            # non-whitespace characters (wide scripts count double)
        self.link_chars = link_chars  # of those, inside <a href>
        self.kind = kind              # p, h, li, tr, pre, quote, caption, div (anything else)
        self.group = group
        self.skip = skip              # innermost marked-boilerplate element around it, or -1
        self.box = box                # innermost marked-content element around it, or -1

    @property
    def link_density(self) -> float:
        return self.link_chars / self.chars if self.chars else 0.0

    def __repr__(self) -> str:
        return f"Block({self.kind}, g{self.group}, {self.chars}c, ld={self.link_density:.2f}, {self.text[:40]!r})"


# Han, kana, hangul: a character of these scripts carries about as much as a
# short word, so it weighs WIDE_WEIGHT characters in the length features.
_WIDE_RE = re.compile("[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]")
WIDE_WEIGHT = 2


def _weight(text: str) -> int:
    """Length of ``text`` for the features: whitespace skipped, wide scripts weighted."""
    n = len(text) - text.count(" ")
    if not text.isascii():
        n += (WIDE_WEIGHT - 1) * len(_WIDE_RE.findall(text))
    return n


def _nonspace(text: str) -> int:
    return _weight(" ".join(text.split()))


class Marks:
    """Elements found beforehand (by :mod:`stages.extract.hints`), by ``mem_id``.

    ``index[mem_id]`` is the element's number; it is boilerplate if
    ``boilerplate[number]``, else a content container.  The walk fills
    ``parent``: the enclosing marked element of the same sort, or -1, and
    ``wraps_content``: whether a boilerplate element has a content container
    inside (then it is more likely a wrapper with an unlucky name), and
    ``entered``: the marks in walk order.
    """

    def __init__(self, index: dict[int, int], boilerplate: list[bool], footer: list[bool] | None = None):
        self.index = index
        self.boilerplate = boilerplate
        #: the page says outright this is its footer (<footer>, role=contentinfo, class "footer")
        self.footer = footer or [False] * len(boilerplate)
        self.parent = [-1] * len(boilerplate)
        self.wraps_content = [False] * len(boilerplate)
        self.entered: list[int] = []  # marks in the order the walk entered them: parents first


def extract_blocks(root: LexborNode, marks: Marks | None = None) -> list[Block]:
    """The blocks of ``root``'s subtree, in document order.

    One loop over the nodes with the line being built in local variables:
    this is the extractor's hot path (~1,600 nodes a page).
    """
    blocks: list[Block] = []
    parts: list[str] = []  # text of the line being built
    link_chars = 0         # of which inside <a href>
    group = 0
    new_group = True       # a block boundary was passed since the last line
    skip = box = -1        # innermost boilerplate / content mark around
    index = marks.index if marks is not None else {}
    is_bp = marks.boilerplate if marks is not None else []
    parent = marks.parent if marks is not None else []
    wraps = marks.wraps_content if marks is not None else []
    entered = marks.entered if marks is not None else []
    kinds = ["div"]        # kind of the innermost open block element
    pre = links = 0        # depth inside <pre>, <a>

    def flush() -> None:
        nonlocal parts, link_chars, group, new_group
        text = " ".join("".join(parts).split())
        if text:
            if new_group:
                group += 1
                new_group = False
            chars = _weight(text)
            blocks.append(Block(text, chars, min(link_chars, chars), kinds[-1], group, skip, box))
        parts = []
        link_chars = 0

    # Open elements: (node, tag, mark number or -1).
    stack: list[tuple[LexborNode, str, int]] = []
    node = root.child
    while True:
        if node is None:
            if not stack:
                break
            node, tag, mark = stack.pop()
            # Leaving an element: undo what entering it did.
            if tag in BLOCK_TAGS or mark >= 0:
                if parts:
                    flush()
                new_group = True
                if tag in BLOCK_TAGS:
                    kinds.pop()
                    if tag == "pre":
                        pre -= 1
                if mark >= 0:
                    if is_bp[mark]:
                        skip = parent[mark]
                    else:
                        box = parent[mark]
            elif tag == "a[href]":
                links -= 1
            node = node.next
            continue
        tag = node.tag or ""
        if tag == "-text":
            text = node.text_content
            # Whitespace between blocks (indentation) would only make empty lines.
            if text and (parts or pre or not text.isspace()):
                if pre and "\n" in text:
                    lines = text.split("\n")
                    for line in lines[:-1]:
                        parts.append(line)
                        flush()
                    text = lines[-1]
                parts.append(text)
                if links:
                    link_chars += _nonspace(text)
            node = node.next
            continue
        if not tag or tag[0] in "_!":  # comments, doctype
            node = node.next
            continue
        mark = index.get(node.mem_id, -1) if index else -1
        if tag in BLOCK_TAGS or mark >= 0:
            if parts:
                flush()
            new_group = True
            if mark >= 0:
                entered.append(mark)
                if is_bp[mark]:
                    parent[mark] = skip
                    skip = mark
                else:
                    parent[mark] = box
                    box = mark
                    m = skip
                    while m >= 0 and not wraps[m]:
                        wraps[m] = True
                        m = parent[m]
            if tag in BLOCK_TAGS:
                kinds.append(_KIND.get(tag, "li" if kinds[-1] == "li" and tag in ("div", "section") else "div"))
                if tag == "pre":
                    pre += 1
        elif tag == "br":
            if parts:
                flush()
        elif tag in _CELLS:
            parts.append(" ")
        elif tag == "a" and "href" in node.attrs:
            # Only an <a> with a target is a link: XHTML anchors (<a id="x"/>)
            # parse as open <a> elements around the text that follows.
            links += 1
            tag = "a[href]"
        stack.append((node, tag, mark))
        node = node.child  # None for an empty element: it is left at once
    if parts:
        flush()
    return blocks
