"""Python's character classes spelled out for RE2, Arrow's regex engine.

The filters define words, lines and whitespace the way Python's ``re`` and
``str`` do (``\\s``, ``[^\\W_]``, ``str.split()``, ``str.strip()``).  RE2's own
classes differ: its ``\\s`` is ASCII only (no ``\\v``, no ``\\xa0``), its
``\\pL``/``\\pN`` follow its Unicode version, not Python's.  Here each class is
the list of code points where the Python predicate holds, computed from the
running interpreter, so an Arrow kernel and the Python definition agree on
every character.
"""

from __future__ import annotations

import array
import re
import sys
import unicodedata

_UTF32 = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"


def _runs(pattern: str, chars: str) -> list[tuple[int, int]]:
    """Code point ranges (first, last) where a Python regex class matches (``chars``: every code point)."""
    return [(m.start(), m.end() - 1) for m in re.finditer(pattern + "+", chars)]


def _ranges(codes: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for cp in codes:
        if out and out[-1][1] == cp - 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


def re2_class(ranges: list[tuple[int, int]]) -> str:
    """The body of an RE2 character class (``[...]`` without the brackets)."""
    return "".join(f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges)


def re2_chars(chars: str) -> str:
    """An RE2 class body for a set of literal characters."""
    return re2_class(_ranges(sorted({ord(c) for c in chars})))


def py_class(ranges: list[tuple[int, int]]) -> str:
    """The same ranges as the body of a Python ``re`` class."""
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)


def _python_classes() -> tuple[list[tuple[int, int]], ...]:
    # Every code point as one string (lone surrogates included): a UTF-32 decode is 10x "".join(map(chr, ...)).
    chars = array.array("I", range(sys.maxunicode + 1)).tobytes().decode(_UTF32, "surrogatepass")
    space = _runs(r"\s", chars)  # str.isspace: Python's \s, str.split(), str.strip()
    alnum = _runs(r"[^\W_]", chars)  # str.isalnum
    marks = _ranges([cp for cp, ch in enumerate(chars) if unicodedata.category(ch)[0] == "M"])
    return space, alnum, marks


SPACE_RANGES, ALNUM_RANGES, MARK_RANGES = _python_classes()

#: Every character ``str.isspace`` accepts: the ``characters`` of ``pc.utf8_trim`` for ``str.strip()``.
WHITESPACE = "".join(chr(cp) for a, b in SPACE_RANGES for cp in range(a, b + 1))
SPACE = re2_class(SPACE_RANGES)
