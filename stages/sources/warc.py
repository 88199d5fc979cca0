"""WARC files as a :class:`stages.sources.Source`: the reader of :mod:`stages.warc`, described.

Its rows are HTTP responses with the payload still encoded: decoding and
extraction turn them into ``text``.
"""

from __future__ import annotations

from typing import BinaryIO, Iterator

import pyarrow as pa

from stages.base import DETAILS, REASON
from stages.warc import BATCH_SCHEMA, ReadStats, WarcConfig, WarcReader

#: Every reason the WARC reader gives at read time (stages/warc.py, stages/http_decode.py).
REASONS = ("too_large", "truncated_record", "bad_http", "http_status", "not_html", "empty", "duplicate_record_id",
           "bad_encoding", "decompression_bomb", "read_error")


class WarcSource:
    """Reads WARC files (plain or gzipped) into batches of HTTP responses."""

    name = "warc"
    label = "responses read from WARC files"
    provides = tuple(name for name in BATCH_SCHEMA.names if name not in (REASON, DETAILS))
    reasons = REASONS

    def __init__(self, config: WarcConfig | None = None):
        self.reader = WarcReader(config)

    def read(self, stream: BinaryIO, uri: str, stats: ReadStats) -> Iterator[pa.Table]:
        return self.reader.iter_batches(stream, uri, stats)
