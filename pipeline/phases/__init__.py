"""The built-in phases, in run order: the plan a run has unless it is given another.

A run's phases are this explicit tuple (or another one handed to ``pipeline.runner.run``): nothing
registers itself on import, and the order here is the order of the run.
"""

from pipeline.phases.card import CardPhase
from pipeline.phases.deduped import DedupedPhase
from pipeline.phases.extracted import ExtractedPhase
from pipeline.phases.final import FinalPhase
from pipeline.phases.shards import ShardsPhase

DEFAULT_PHASES = (
    ExtractedPhase,  # input files -> documents, language ID, filters, quality scores
    DedupedPhase,  # exact, near-duplicate (and paragraph) dedup over the whole corpus
    FinalPhase,  # quality filter, PII redaction: the text to tokenize
    ShardsPhase,  # tokenized, shuffled training shards
    CardPhase,  # last: the dataset card of the run
)

__all__ = ["DEFAULT_PHASES", "CardPhase", "DedupedPhase", "ExtractedPhase", "FinalPhase", "ShardsPhase"]
