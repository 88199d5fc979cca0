"""JSON lines of an Arrow table, built with Arrow's string kernels (no Python loop over the rows).

One object a line, as DataTrove's ``JsonlWriter`` and Dolma write documents: ``id`` and ``text`` first, every
other column under ``metadata`` (``nested``), or every column at the top level (``flat``).  Strings are escaped
as JSON requires (quote, backslash, the control characters; and U+0085, U+2028, U+2029, which some readers take
for line ends); text stays UTF-8 (``ensure_ascii=False``); a
missing value, NaN or an infinity is ``null``; a timestamp is an ISO 8601 string.  A column of lists or structs
is encoded value by value with ``json.dumps`` (the one case Arrow has no kernel for).
"""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pyarrow.compute as pc

TOP = ("id", "text")
_ESCAPES = [("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"), ("\b", "\\b"), ("\f", "\\f")]
_ESCAPES += [(chr(c), f"\\u{c:04x}") for c in range(32) if chr(c) not in "\n\r\t\b\f"]
# line separators other than \n (str.splitlines and some JSON lines readers break lines there): escaped too
_ESCAPES += [(chr(c), f"\\u{c:04x}") for c in (0x85, 0x2028, 0x2029)]


def _lit(text: str) -> pa.Scalar:
    return pa.scalar(text, pa.large_string())


def _join(*pieces) -> pa.Array:
    """The pieces (arrays or literal strings) concatenated row by row."""
    return pc.binary_join_element_wise(*(_lit(p) if isinstance(p, str) else p for p in pieces), _lit(""))


def _string(values: pa.Array) -> pa.Array:
    """JSON string literals of a string array (nulls stay null)."""
    out = values.cast(pa.large_string())
    for raw, escaped in _ESCAPES:
        out = pc.replace_substring(out, raw, escaped)
    return _join('"', out, '"')


def encode(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Each value as a JSON literal (``null`` for a missing one)."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    kind = values.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        out = _string(values)
    elif pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        fmt = "%Y-%m-%dT%H:%M:%SZ" if pa.types.is_timestamp(kind) and kind.tz else "%Y-%m-%dT%H:%M:%S"
        out = _string(pc.strftime(values, format=fmt if pa.types.is_timestamp(kind) else "%Y-%m-%d"))
    elif pa.types.is_boolean(kind):
        out = pc.if_else(values, _lit("true"), _lit("false"))
    elif pa.types.is_floating(kind):
        finite = pc.is_finite(values)
        out = pc.if_else(finite, values.cast(pa.large_string()), pa.scalar(None, pa.large_string()))
    elif pa.types.is_integer(kind):
        out = values.cast(pa.large_string())
    elif pa.types.is_null(kind):
        out = pa.nulls(len(values), pa.large_string())
    else:  # lists, structs, maps: Python's encoder, value by value
        out = pa.array(
            [
                None if v is None else json.dumps(_finite(v), ensure_ascii=False, default=str)
                for v in values.to_pylist()
            ],
            pa.large_string(),
        )
    return pc.fill_null(out, "null")


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _object(table: pa.Table, names: list[str]) -> pa.Array:
    """``{"name": value, ...}`` for each row, over ``names`` (``{}`` when none)."""
    if not names:
        return pa.repeat(_lit("{}"), len(table))
    pieces: list = ["{"]
    for i, name in enumerate(names):
        pieces += [("," if i else "") + json.dumps(name, ensure_ascii=False) + ":", encode(table.column(name))]
    pieces.append("}")
    return _join(*pieces)


def lines(table: pa.Table, layout: str = "nested") -> pa.Array:
    """One JSON object per row (no newline)."""
    if layout == "flat":
        return _object(table, table.column_names)
    top = [c for c in TOP if c in table.column_names]
    rest = [c for c in table.column_names if c not in TOP]
    if not rest:
        return _object(table, top)
    inner = _object(table, rest)
    head = _object(table, top)
    opened = pc.utf8_slice_codeunits(head, 0, -1)  # '{"id":..,"text":..' without its closing brace
    sep = "," if top else ""
    return _join(opened, f'{sep}"metadata":', inner, "}")


def to_bytes(table: pa.Table, layout: str = "nested") -> bytes:
    """The rows of ``table`` as JSON lines (UTF-8, one newline after each)."""
    if not len(table):
        return b""
    rows = lines(table, layout)
    joined = pc.binary_join(pa.LargeListArray.from_arrays(pa.array([0, len(rows)], pa.int64()), rows), _lit("\n"))
    return joined[0].as_buffer().to_pybytes() + b"\n"
