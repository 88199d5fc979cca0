"""Decontamination against eval sets: documents sharing a normalized word n-gram with an eval item
are removed (reason ``contaminated``) or tagged.  See docs/decontam.md.

    index = build_index(config.decontam)          # once (a run: in a Ray task, pipeline/eval_index.py)
    stage = DecontamStage(config.decontam, index)  # in the final phase, after dedup and before PII
"""

from stages.decontam.config import DecontamConfig, EvalSetConfig
from stages.decontam.evalsets import EvalItems, EvalSetError, read_eval_set
from stages.decontam.index import EvalIndex, IndexStats, Matches, build_index, index_items
from stages.decontam.stage import REASON, TAG_COLUMN, DecontamStage, EvalSetSummary, summarize

__all__ = [
    "DecontamConfig",
    "EvalSetConfig",
    "EvalItems",
    "EvalSetError",
    "read_eval_set",
    "EvalIndex",
    "IndexStats",
    "Matches",
    "build_index",
    "index_items",
    "REASON",
    "TAG_COLUMN",
    "DecontamStage",
    "EvalSetSummary",
    "summarize",
]
