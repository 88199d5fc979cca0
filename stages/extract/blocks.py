"""Cut a DOM subtree into text blocks: one line each, with the features the
classifier needs.

A block is what a reader sees as one line: a paragraph, a heading, a list
item, a table row (its cells apart by tabs), a ``<pre>`` line (with its
indentation), or one run of text between ``<br>`` tags.  Lines cut by ``<br>`` inside one element share a
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

from selectolax.lexbor import LexborHTMLParser, LexborNode, create_tag

#: Elements that start and end a line.
BLOCK_TAGS = frozenset(
    """address article aside blockquote body center dd details dialog dir div dl dt fieldset figcaption
    figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr legend li main menu nav ol p pre section
    summary table tbody thead tfoot tr ul caption""".split()
)
HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
_CELLS = frozenset(("td", "th"))
# What a block is called after the innermost block element around it.
_KIND = {
    **{h: "h" for h in HEADINGS},
    "p": "p",
    "li": "li",
    "dt": "li",
    "dd": "li",
    "tr": "tr",
    "pre": "pre",
    "blockquote": "quote",
    "figcaption": "caption",
    "caption": "caption",
}


class Block:
    """One output line and its features."""

    __slots__ = ("text", "chars", "link_chars", "links", "kind", "group", "skip", "box")

    def __init__(
        self, text: str, chars: int, link_chars: int, kind: str, group: int, skip: int, box: int, links: int = 0
    ):
        self.text = text
        self.chars = chars  # non-whitespace characters (wide scripts count double)
        self.link_chars = link_chars  # of those, inside <a href>
        self.links = links  # <a href> elements started in the line
        self.kind = kind  # p, h, li, tr, pre, quote, caption, div (anything else)
        self.group = group
        self.skip = skip  # innermost marked-boilerplate element around it, or -1
        self.box = box  # innermost marked-content element around it, or -1

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
    """``_weight`` of ``text`` with its whitespace runs made single spaces (the
    same number, without building the spaced string)."""
    text = "".join(text.split())
    n = len(text)
    if not text.isascii():
        n += (WIDE_WEIGHT - 1) * len(_WIDE_RE.findall(text))
    return n


class Marks:
    """Elements found beforehand (by :mod:`stages.extract.hints`), by ``mem_id``.

    ``index[mem_id]`` is the element's number; it is boilerplate if
    ``boilerplate[number]``, else a content container.  The walk fills
    ``parent``: the enclosing marked element of the same sort, or -1, and
    ``wraps_content``: whether a boilerplate element has a content container
    inside (then it is more likely a wrapper with an unlucky name), and
    ``entered``: the marks in walk order.  ``tag_ids``, if given, are the tag
    ids of the marked elements: the walk looks up only elements with those.
    """

    def __init__(
        self,
        index: dict[int, int],
        boilerplate: list[bool],
        fixed: list[bool] | None = None,
        tag_ids: frozenset[int] | None = None,
        reason: list[int] | None = None,
        words: list[str] | None = None,
    ):
        self.index = index
        self.boilerplate = boilerplate
        #: boilerplate whatever it holds: the page says outright this is its footer (<footer>,
        #: role=contentinfo, class "footer"), or a consent banner (whose long paragraphs read as prose)
        self.fixed = fixed or [False] * len(boilerplate)
        #: why a boilerplate element is marked, when the kind of page may overrule it
        #: (hints.THREAD: comments or replies; hints.HIDDEN: hidden), else 0
        self.reason = reason or [0] * len(boilerplate)
        #: the class word that made an element boilerplate ("widget", "sidebar"), else ""
        self.words = words or [""] * len(boilerplate)
        self.tag_ids = tag_ids
        self.parent = [-1] * len(boilerplate)
        self.wraps_content = [False] * len(boilerplate)
        self.entered: list[int] = []  # marks in the order the walk entered them: parents first


# What the walk does at each node, by lexbor tag id (an int, which is cheaper
# to read than the tag name and to look up).  Tag ids of standard HTML
# elements are fixed; every other node (custom tags, comments, processing
# instructions) is _PLAIN: walked into, with no effect of its own.
_PLAIN, _A, _CELL, _BR, _SKIP, _BLOCK, _BLOCK_LI, _PRE = range(8)  # block elements last
#: Elements whose text is not part of the line: ruby annotations (the
#: readings printed above Japanese and Chinese characters, 法律<rt>ほうりつ</rt>)
#: would otherwise be read into the middle of every word they annotate.
SKIPPED_TAGS = ("rt", "rp")


def _actions() -> tuple[dict[int, int], dict[int, str]]:
    """(action per tag id, kind per block tag id)."""
    action, kind = {}, {}
    for tag in BLOCK_TAGS:
        tag_id = create_tag(tag).tag_id
        # div and section inside a list item continue it; pre keeps its newlines.
        action[tag_id] = _PRE if tag == "pre" else _BLOCK_LI if tag in ("div", "section") else _BLOCK
        kind[tag_id] = _KIND.get(tag, "div")
    action[create_tag("br").tag_id] = _BR
    for tag in _CELLS:
        action[create_tag(tag).tag_id] = _CELL
    action[create_tag("a").tag_id] = _A
    for tag in SKIPPED_TAGS:
        action[create_tag(tag).tag_id] = _SKIP
    return action, kind


_ACTION, _BLOCK_KIND = _actions()
_TEXT_ID = LexborHTMLParser("<p>x</p>").css_first("p").child.tag_id  # text nodes, the most common


class _AnyTag:
    """Holds every tag id: for marks whose tag ids are not known."""

    def __contains__(self, tag_id: object) -> bool:
        return True


# A table cell starts with this mark in the line being built; the line comes
# out with its cells apart by tabs (a Unicode noncharacter: no page has it,
# and str.split() does not take it for whitespace).
_CELL_MARK = "\ufdd0"
_CELL_SEP = f" {_CELL_MARK} "

# What leaving an open element undoes (kept on the walk's stack with it).
_LEAVE_PLAIN, _LEAVE_LINK, _LEAVE_MARK, _LEAVE_BLOCK, _LEAVE_PRE = range(5)


def extract_blocks(root: LexborNode, marks: Marks | None = None) -> list[Block]:
    """The blocks of ``root``'s subtree, in document order.

    One loop over the nodes with the line being built in local variables:
    this is the extractor's hot path (~1,600 nodes a page).  Each node is
    read as little as possible (tag id, then text or mark), as every
    attribute access on a lexbor node costs a Python call.
    """
    blocks: list[Block] = []
    parts: list[str] = []  # text of the line being built
    link_parts: list[str] = []  # of which inside <a href>
    n_links = 0  # links started in the line
    group = 0
    new_group = True  # a block boundary was passed since the last line
    skip = box = -1  # innermost boilerplate / content mark around
    index = marks.index if marks is not None else {}
    # Elements of other tags are not looked up (most elements are not marked).
    marked_tags = frozenset() if marks is None else _AnyTag() if marks.tag_ids is None else marks.tag_ids
    is_bp = marks.boilerplate if marks is not None else []
    parent = marks.parent if marks is not None else []
    wraps = marks.wraps_content if marks is not None else []
    entered = marks.entered if marks is not None else []
    kinds = ["div"]  # kind of the innermost open block element
    pre = links = 0  # depth inside <pre>, <a href>
    actions, block_kind, text_id = _ACTION, _BLOCK_KIND, _TEXT_ID

    def flush() -> None:
        nonlocal parts, link_parts, group, new_group, n_links
        raw = parts[0] if len(parts) == 1 else "".join(parts)
        if pre:
            text = raw.rstrip() if not raw.isspace() else ""  # code keeps its indentation
        else:
            text = " ".join(raw.split())
        if text:
            if new_group:
                group += 1
                new_group = False
            if _CELL_MARK in text:  # a table row: its cells apart by tabs, as text keeps a table's structure
                text = text.replace(f" {_CELL_MARK} ", "\t").replace(_CELL_MARK, "").strip()
            chars = _weight(text) - text.count("\t") if pre or "\t" in text else _weight(text)
            if not link_parts:
                link_chars = 0
            elif link_parts == parts:
                link_chars = chars  # the whole line is a link (menus)
            else:  # counted once a line, not once a link: the count adds up over pieces
                link_chars = min(_nonspace("".join(link_parts)), chars)
            blocks.append(Block(text, chars, link_chars, kinds[-1], group, skip, box, n_links))
        parts = []
        link_parts = []
        n_links = links  # a link around block elements (a card) counts in each of their lines

    # Open elements: (node, what leaving it undoes, mark number or -1).
    stack: list[tuple[LexborNode, int, int]] = []
    node = root.child
    while True:
        if node is None:
            if not stack:
                break
            node, leave, mark = stack.pop()
            if leave == _LEAVE_LINK:
                links -= 1
            elif leave:
                # Leaving a block or a marked element: undo what entering it did.
                if parts:
                    flush()
                new_group = True
                if leave != _LEAVE_MARK:
                    kinds.pop()
                    if leave == _LEAVE_PRE:
                        pre -= 1
                if mark >= 0:
                    if is_bp[mark]:
                        skip = parent[mark]
                    else:
                        box = parent[mark]
            node = node.next
            continue
        tag_id = node.tag_id
        if tag_id == text_id:
            # Whitespace between blocks (indentation) would only make empty
            # lines; most of it is ASCII, which lexbor tells without a str.
            if parts or pre or not node.is_empty_text_node:
                text = node.text_content
                if text and (parts or pre or not text.isspace()):
                    if pre and "\n" in text:
                        lines = text.split("\n")
                        for line in lines[:-1]:
                            parts.append(line)
                            flush()
                        text = lines[-1]
                    parts.append(text)
                    if links:
                        link_parts.append(text)
            node = node.next
            continue
        action = actions.get(tag_id, _PLAIN)
        mark = index.get(node.mem_id, -1) if tag_id in marked_tags else -1
        leave = _LEAVE_PLAIN
        if action >= _BLOCK or mark >= 0:
            if parts:
                flush()
            new_group = True
            leave = _LEAVE_MARK
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
            if action >= _BLOCK:
                leave = _LEAVE_BLOCK
                if (action == _BLOCK_LI and kinds[-1] == "li") or kinds[-1] == "caption":
                    kinds.append(kinds[-1])
                else:
                    kinds.append(block_kind[tag_id])
                if action == _PRE:
                    pre += 1
                    leave = _LEAVE_PRE
        elif action == _PLAIN:
            pass  # most inline elements: tested first
        elif action == _A:
            # Only an <a> with a target is a link: XHTML anchors (<a id="x"/>)
            # parse as open <a> elements around the text that follows.
            if "href" in node.attrs:
                links += 1
                n_links += 1
                leave = _LEAVE_LINK
        elif action == _CELL:
            parts.append(_CELL_SEP)
        elif action == _SKIP:
            node = node.next
            continue
        elif parts:  # <br>
            flush()
        child = node.child
        if child is None and leave == _LEAVE_PLAIN:
            node = node.next  # an empty inline element (<img>, <br>, a comment): nothing to undo
            continue
        stack.append((node, leave, mark))
        node = child  # None for an empty element: it is left at once
    if parts:
        flush()
    return blocks
