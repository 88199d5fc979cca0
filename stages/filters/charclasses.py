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
import json
import re
import sys
import unicodedata
from pathlib import Path

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


#: The classes as computed by the interpreter that wrote the file: scanning all 1.1M code points costs
#: ~0.15 s in every process that imports the filters (the driver and each worker), so it is done once.
_CACHE = Path(__file__).with_name("charclasses.json")


def _interpreter() -> dict:
    return {
        "python": "{}.{}".format(*sys.version_info[:2]),
        "unidata": unicodedata.unidata_version,
        "maxunicode": sys.maxunicode,
    }


def _classes() -> tuple[list[tuple[int, int]], ...]:
    """The cached classes when they were computed by this Python and Unicode version, else computed here."""
    try:
        cached = json.loads(_CACHE.read_text(encoding="utf-8"))
        if cached["interpreter"] == _interpreter():
            return tuple([tuple(r) for r in cached[k]] for k in ("space", "alnum", "marks"))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return _python_classes()


def write_cache() -> None:
    """Recompute the classes with this interpreter and store them
    (``python -c "from stages.filters.charclasses import write_cache; write_cache()"``)."""
    space, alnum, marks = _python_classes()
    _CACHE.write_text(
        json.dumps({"interpreter": _interpreter(), "space": space, "alnum": alnum, "marks": marks}) + "\n",
        encoding="utf-8",
    )


SPACE_RANGES, ALNUM_RANGES, MARK_RANGES = _classes()

#: Every character ``str.isspace`` accepts: the ``characters`` of ``pc.utf8_trim`` for ``str.strip()``.
WHITESPACE = "".join(chr(cp) for a, b in SPACE_RANGES for cp in range(a, b + 1))
SPACE = re2_class(SPACE_RANGES)
