"""Exact duplicates: a 128-bit hash of the normalized text (and of the URL).

Exact copies join the same duplicate graph as near copies (as one more
"band" whose bucket key is the text hash), so one connected-components pass
and one keep rule cover both; the reason ``exact_duplicate`` is given when a
removed document's text hash equals the kept one's.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stages.dedup.config import NormalizeConfig
from stages.dedup.normalize import normalize_batch, string_buffers

#: Pseudo-band numbers of the exact keys in the bucket table (LSH bands are 0..b-1).
TEXT_BAND = -1
URL_BAND = -2


def _digests(data: bytes, offsets: np.ndarray) -> np.ndarray:
    # BLAKE2b is the fastest 128-bit hash in the standard library; one C call per document.
    bounds = offsets.tolist()
    raw = b"".join(
        [hashlib.blake2b(data[s:e], digest_size=16).digest() for s, e in zip(bounds[:-1], bounds[1:], strict=False)]
    )
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, 16)


def text_hashes(texts: pa.Array | pa.ChunkedArray, config: NormalizeConfig) -> np.ndarray:
    """(docs x 16) uint8: BLAKE2b-128 of each normalized text."""
    data, offsets = normalize_batch(texts, config)
    return _digests(data.tobytes(), offsets)


def normalize_urls(urls: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Drop the scheme, the fragment and trailing slashes; lowercase the host."""
    u = pc.fill_null(urls, "")
    u = pc.replace_substring_regex(u, r"^[A-Za-z][A-Za-z0-9+.-]*://", "")
    u = pc.replace_substring_regex(u, r"#.*$", "")
    u = pc.replace_substring_regex(u, r"/+$", "")
    host = pc.utf8_lower(pc.extract_regex(u, r"^(?P<h>[^/?]*)").field("h"))
    rest = pc.replace_substring_regex(u, r"^[^/?]*", "")
    return pc.binary_join_element_wise(host, rest, "")


def url_hashes(urls: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """(docs x 16) uint8: BLAKE2b-128 of each normalized URL."""
    if isinstance(urls, pa.ChunkedArray):
        urls = urls.combine_chunks() if urls.num_chunks else pa.array([], pa.string())
    data, offsets = string_buffers(normalize_urls(urls).cast(pa.large_string()))
    return _digests(data.tobytes(), offsets)


def bucket_key(digests: np.ndarray) -> np.ndarray:
    """The first 64 bits of each digest, as the bucket key (the full 128 decide the reason)."""
    return np.ascontiguousarray(digests[:, :8]).view("<u8").ravel()
