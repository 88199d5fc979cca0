"""Strings from the data, made safe for the place the card puts them: one function per context.

The card is published, and the Hugging Face Hub renders it as Markdown with HTML
allowed (and ``$...$`` as math).  Every string that comes from the data or the
run's record (URLs, hosts, file names, language labels, stage names, reasons,
config keys and values, the tokenizer path, the run name...) may be hostile: a
backtick that closes a code span, ``<img src=x onerror=...>``, a ``|`` that
splits a table row, a newline that ends an HTML block or a YAML scalar.  So
render.py never puts such a string anywhere but through one of these:

- :func:`text`: inline Markdown text (table cells, headings, list items);
- :func:`code`: an inline code span that shows the string exactly;
- :func:`html_text`: text inside raw HTML (``<details>``, ``<summary>``, ``<code>``, ``<q>``);
- :func:`fence`: a fenced code block that no line of its content can close;
- :func:`cell`: a Markdown string as a table cell (GFM splits rows at ``|``, even inside code spans).

YAML (the front matter, the config blocks) is written by ``yaml.safe_dump``.
Every function first makes the string one line (:func:`one_line`): the card
never needs a line break from the data, and a break is what ends blocks.
"""

from __future__ import annotations

import html
import re
import unicodedata

#: Characters that start Markdown inline syntax (or Hub math, ``$``), escaped with a backslash in text.
_INLINE = re.compile(r"([\\`*_\[\]<>&!~|$#])")
#: What would start a block (list, heading, quote, setext underline) at the start of a line.
_LEADING = re.compile(r"^([-+=])|^(\d+)([.)])")
#: Bidirectional overrides and isolates: they reorder what a reader sees (a "Trojan source" label).
_BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


def _blank(ch: str) -> bool:
    return ch in _BIDI or unicodedata.category(ch) in ("Cc", "Zl", "Zp")


def one_line(value) -> str:
    """``str(value)`` with control characters, line and paragraph separators and bidi controls as spaces."""
    s = "" if value is None else str(value)
    if all(ch.isprintable() for ch in s):  # the common case: nothing to replace
        return s
    return "".join(" " if _blank(ch) else ch for ch in s)


def text(value) -> str:
    """Inline Markdown that renders as the string itself (outer spaces dropped): no markup, no HTML, no math."""
    s = _INLINE.sub(r"\\\1", one_line(value).strip())
    return _LEADING.sub(lambda m: f"\\{m.group(1)}" if m.group(1) else f"{m.group(2)}\\{m.group(3)}", s)


def code(value) -> str:
    """An inline code span whose content is exactly the string (CommonMark: a longer backtick fence, padded)."""
    s = one_line(value)
    if not s:
        return ""
    runs = [len(r) for r in re.findall(r"`+", s)]
    fence = "`" * (max(runs, default=0) + 1)
    if s.strip(" ") and (s[0] in "` " or s[-1] in "` "):  # the renderer strips one space each side again
        s = f" {s} "
    return f"{fence}{s}{fence}"


def html_text(value) -> str:
    """Text inside raw HTML: one line (a blank line would end the HTML block), ``<>&"'`` as entities."""
    return html.escape(one_line(value), quote=True)


def cell(markdown: str) -> str:
    """A Markdown string as a GFM table cell: every ``|`` escaped (GFM splits cells before inline parsing)."""
    return one_line(markdown).replace("|", "\\|")


def fence(content: str, info: str = "") -> str:
    """A fenced code block of ``content`` (kept as it is, line breaks included) that no line of it closes."""
    runs = [len(r) for r in re.findall(r"`+", content)]
    marks = "`" * max(3, max(runs, default=0) + 1)
    body = content if content.endswith("\n") or not content else content + "\n"
    return f"{marks}{one_line(info)}\n{body}{marks}"
