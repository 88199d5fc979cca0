"""Phase 1, one input file: WARC -> decoded HTML -> text -> filtered Parquet.

This is a composite stage: the stages below run over Arrow batches of one
file, streamed, and the file's kept and rejected rows land in one Parquet part
each, published atomically, followed by a completion marker that carries the
file's stats.  A rerun skips files whose marker exists.
"""

from __future__ import annotations

import logging
import time
import traceback

from pipeline.config import RunConfig
from pipeline.storage import PartWriter, S3Options, Storage, open_input
from stages.base import REJECTED_SCHEMA, ChainStats, run_chain
from stages.charset import DecodeStage
from stages.extract import ExtractStage
from stages.filters import build_filters, build_url_filters
from stages.langid import LangIdStage
from stages.warc import ReadStats, WarcReader

log = logging.getLogger(__name__)

PHASE = "extracted"


def s3_options(config: RunConfig) -> S3Options:
    return S3Options(config.storage.endpoint_url, config.storage.region, config.storage.anonymous)


def marker_path(unit: str) -> tuple[str, str]:
    return "_done", f"{PHASE}/{unit}.json"


class Phase1:
    """Everything phase 1 does to one file; built once per worker (models load once)."""

    def __init__(self, config: RunConfig):
        self.config = config
        self.s3 = s3_options(config)
        self.storage = Storage(config.output.root, self.s3)
        self.reader = WarcReader(config.warc)
        self.stages = [
            *build_url_filters(config.filters),
            DecodeStage(config.charset),
            ExtractStage(config.extract),
            LangIdStage(config.langid),
            *build_filters(config.filters),
        ]

    def is_done(self, unit: str) -> bool:
        return self.storage.exists(*marker_path(unit))

    def process(self, uri: str, unit: str, source: str | None = None) -> dict:
        """Process one file; returns its stats (also written as its marker)."""
        source = source or uri
        t0 = time.perf_counter()
        read, chain = ReadStats(), ChainStats()
        kept = PartWriter(self.storage, "documents", PHASE, f"part-{unit}.parquet")
        rejected = PartWriter(self.storage, "rejected", PHASE, f"part-{unit}.parquet", schema=REJECTED_SCHEMA)
        responses = 0
        try:
            with open_input(uri, self.s3) as raw:
                for batch in self.reader.iter_batches(raw, source, read):
                    responses += len(batch)
                    kept_rows, rejected_rows = run_chain(
                        self.stages, batch, chain, keep_rejected_text=self.config.output.rejected_text
                    )
                    kept.write(kept_rows)
                    for r in rejected_rows:
                        rejected.write(r)
            kept.close()
            rejected.close()
        except Exception as e:  # this file fails alone; no marker, so a rerun retries it
            kept.abort()
            rejected.abort()
            log.error("%s: failed: %s", source, traceback.format_exc(limit=3))
            return {"unit": unit, "source": source, "failed": f"{type(e).__name__}: {e}"}
        stats = {
            "unit": unit,
            "source": source,
            "responses": responses,
            "kept": kept.rows,
            "rejected": rejected.rows,
            "seconds": round(time.perf_counter() - t0, 3),
            **read.to_dict(),
            **chain.to_dict(),
        }
        if responses != kept.rows + rejected.rows:  # the accounting invariant: a bug if it breaks
            stats["failed"] = f"{responses} responses != {kept.rows} kept + {rejected.rows} rejected"
            log.error("%s: %s", source, stats["failed"])
            return stats
        self.storage.write_json(stats, *marker_path(unit))
        return stats
