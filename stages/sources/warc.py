"""WARC files as a :class:`stages.sources.Source`: the reader of :mod:`stages.warc`, described.

Its rows are HTTP responses with the payload still encoded: decoding and
extraction turn them into ``text``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import pyarrow as pa

from stages.base import DETAILS, REASON, StageSpec
from stages.warc import BATCH_SCHEMA, ReadStats, WarcConfig, WarcReader

#: Every reason the WARC reader gives at read time (stages/warc.py, stages/http_decode.py).
REASONS = (
    "too_large",
    "truncated_record",
    "bad_http",
    "http_status",
    "not_html",
    "empty",
    "duplicate_record_id",
    "bad_encoding",
    "decompression_bomb",
    "read_error",
)


class WarcSource:
    """Reads WARC files (plain or gzipped) into batches of HTTP responses."""

    name = "warc"
    label = "HTML responses (record checks: type, HTTP status, size, truncation)"
    records_label = "HTTP responses among the WARC records"
    provides = tuple(name for name in BATCH_SCHEMA.names if name not in (REASON, DETAILS))
    schema = BATCH_SCHEMA  # its batches' columns and their types
    reasons = REASONS
    #: the run config's section that configures it
    section = "warc"

    def __init__(self, config: WarcConfig | None = None):
        self.reader = WarcReader(config)

    @classmethod
    def from_run(cls, config) -> WarcSource:
        return cls(config.warc)

    @staticmethod
    def stages(config) -> list[StageSpec]:
        """What turns a response into text, after the URL rules: decoding and main-text extraction."""
        from stages.charset import DecodeStage
        from stages.extract import ExtractStage
        from stages.filters import url_filter_specs

        urls = [StageSpec(cls, cfg, "filters.url") for cls, cfg in url_filter_specs(config.filters)]
        return [
            *urls,
            StageSpec(DecodeStage, config.charset, "charset"),
            StageSpec(ExtractStage, config.extract, "extract"),
        ]

    @staticmethod
    def new_stats() -> ReadStats:
        return ReadStats()

    @staticmethod
    def totals(stats: ReadStats) -> dict:
        """What the run records of a file's reading: records by type; ``rows``: those that became rows."""
        responses = stats.records_by_type.get("response", 0)
        return {
            "records_by_type": dict(sorted(stats.records_by_type.items())),
            "rows": responses,
            "responses": responses,
            "malformed_records": stats.malformed_records,
            "read_counters": dict(sorted(stats.counters.items())),
        }

    def read(self, stream: BinaryIO, uri: str, stats: ReadStats) -> Iterator[pa.Table]:
        return self.reader.iter_batches(stream, uri, stats)
