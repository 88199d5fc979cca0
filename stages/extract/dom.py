"""Parse HTML into a lexbor DOM (selectolax), safely.

selectolax is used because walking its nodes from Python costs ~0.4 µs a node,
about 20x less than resiliparse's node objects (benchmarks/extraction.py
walks both).  Everything that lexbor can do in C is done there: dropping
invisible elements (``strip_tags``) and finding candidates by CSS selector.
"""

from __future__ import annotations

import re

import numpy as np
from selectolax.lexbor import LexborHTMLParser


class ExtractionError(ValueError):
    """A page this extractor refuses, with the reason (the stage counts it)."""


#: Elements whose content is never visible text.
INVISIBLE_TAGS = [
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "math",
    "iframe",
    "object",
    "embed",
    "canvas",
    "select",
    "option",
    "button",
    "input",
    "textarea",
    "head",
    "title",
    "meta",
    "link",
]
# One CSS pass finds them all; strip_tags walks the tree once per tag.
_INVISIBLE_SELECTOR = ",".join(INVISIBLE_TAGS)

_TAG_RE = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)")
# Elements that never hold children, and those the parser closes implicitly
# when a sibling starts: neither makes the tree deeper.
_FLAT = frozenset("area base br col embed hr img input link meta source track wbr p li dt dd option tr td th".split())
# Their content is text to the parser, not tags (a comment's too).
_RAW_TEXT_RE = re.compile(r"<!--|<(script|style)\b", re.IGNORECASE)


_CLOSERS = {None: re.compile(r"-->"), "script": re.compile(r"</script", re.I), "style": re.compile(r"</style", re.I)}


def _without_raw_text(html: str) -> str:
    """``html`` without comments and script/style content, in one linear pass."""
    out, pos = [], 0
    while True:
        m = _RAW_TEXT_RE.search(html, pos)
        if m is None:
            out.append(html[pos:])
            return "".join(out)
        out.append(html[pos : m.start()])
        name = m.group(1).lower() if m.group(1) else None
        end = _CLOSERS[name].search(html, m.end())
        if end is None:
            return "".join(out)  # unclosed: the rest of the page is text to the parser
        pos = end.end()


def nesting_depth(html: str) -> int:
    """The deepest element nesting the HTML tree builder makes of ``html``, from the tags alone.

    As the parser does: an end tag closes the innermost open element of its
    name and everything opened inside it, and an end tag with no open element
    of its name is ignored (so ``<div></b>`` repeated nests ever deeper);
    void and implicitly closed elements never nest.  Adoption-agency
    reconstruction of formatting elements is not modelled.
    """
    stack: list[str] = []
    open_count: dict[str, int] = {}
    peak = 0
    for close, name in _TAG_RE.findall(_without_raw_text(html)):
        name = name.lower()
        if name in _FLAT:
            continue
        if close:
            if open_count.get(name):
                while True:
                    top = stack.pop()
                    open_count[top] -= 1
                    if top == name:
                        break
        else:
            stack.append(name)
            open_count[name] = open_count.get(name, 0) + 1
            if len(stack) > peak:
                peak = len(stack)
    return peak


#: Pages of more bytes than this are counted by numpy (a few µs a call; below it bytes.count is as fast).
_NUMPY_COUNT_BYTES = 4096


def tag_count(html: str | bytes) -> int:
    """The ``<`` in a page, as text or as UTF-8 bytes (the same number: no multi-byte sequence holds 0x3C)."""
    if isinstance(html, bytes) and len(html) > _NUMPY_COUNT_BYTES:
        # bytes.count looks for one byte with a plain loop: numpy's vectorized compare is 3x faster
        # (0.09 -> 0.03 s for the e2e corpus's 161 MB of HTML, counted twice a page)
        return int(np.count_nonzero(np.frombuffer(html, np.uint8) == 0x3C))
    return html.count(b"<" if isinstance(html, bytes) else "<")


def refuse_deep_nesting(html: str | bytes, max_depth: int = 2000, depth_check_tags: int = 20_000) -> None:
    """Raise ExtractionError for a page nested deeper than ``max_depth``; only
    pages with more than ``depth_check_tags`` tags can be, so only those are scanned."""
    if tag_count(html) > depth_check_tags:
        text = html.decode("utf-8", "replace") if isinstance(html, bytes) else html
        if nesting_depth(text) > max_depth:
            raise ExtractionError(f"elements nested deeper than {max_depth}")


def parse(html: str | bytes, max_depth: int = 2000, depth_check_tags: int = 20_000) -> LexborHTMLParser:
    """The DOM of ``html`` with invisible elements removed.

    selectolax's lexbor tree builder scans the stack of open elements at each
    block start, so its time grows with depth x blocks (100k nested ``<div>``
    take over a minute; resiliparse parses them fast, but its own
    ``main_content`` extraction then hangs).  A C call cannot be interrupted
    by the stage's time limit, so pages with enough tags to be that deep are
    checked first (one regex pass, only for those pages) and refused.
    """
    tree = parse_raw(html, max_depth, depth_check_tags)
    strip_invisible(tree)
    return tree


def parse_raw(html: str | bytes, max_depth: int = 2000, depth_check_tags: int = 20_000) -> LexborHTMLParser:
    """The DOM of ``html`` (text, or UTF-8 bytes) as parsed, after the nesting check of :func:`parse`."""
    refuse_deep_nesting(html, max_depth, depth_check_tags)
    return LexborHTMLParser(html)


def strip_invisible(tree: LexborHTMLParser) -> None:
    """Remove the invisible elements of a parsed page, in place."""
    # As tree.strip_tags(INVISIBLE_TAGS), in one walk: each element is
    # unlinked with its subtree (one inside another is unlinked with it).
    fallbacks = []
    for node in tree.css(_INVISIBLE_SELECTOR):
        if node.tag == "noscript":
            fallbacks.append(node)
        else:
            node.decompose(recursive=False)
    _drop_noscript(tree, fallbacks)


#: A <noscript> with at least this much text may be the page's only copy of its content.
NOSCRIPT_MIN_CHARS = 500


def _drop_noscript(tree: LexborHTMLParser, nodes: list) -> None:
    """Unlink the ``<noscript>`` elements, but those that hold the page.

    A noscript is usually a tracking pixel or "please enable JavaScript";
    but script-built sites serve their whole content to crawlers there
    (Discourse forums put every post of a thread in one), and a stray
    ``<div>`` in a ``<noscript>`` of ``<head>`` makes the parser put the
    whole body inside it.  One that holds more text than the rest of the
    page stays (a C call per noscript; the body's text only when one is
    that long).
    """
    sizes = [len(n.text(deep=True, strip=True)) for n in nodes]
    keep = set()
    if sizes and max(sizes) >= NOSCRIPT_MIN_CHARS:
        body = tree.body
        rest = (len(body.text(deep=True, strip=True)) if body is not None else 0) - sum(sizes)
        keep = {i for i, s in enumerate(sizes) if s >= NOSCRIPT_MIN_CHARS and s > rest}
    for i, node in enumerate(nodes):
        if i not in keep:
            node.decompose(recursive=False)
