"""The ``source_name`` column: which named source of the run (``sources:`` in the config) a document came from.

``source`` is the input file's URI; ``source_name`` is the name the config gives the source that file
belongs to (``crawl``, ``code``, ``wiki``).  It is set once, in the phase that reads the inputs, and every
later phase keeps it: dedup ranks copies by it (``dedup.keep.source_priority``), the shards phase draws
each source's share of the training mix by it (stages/mix.py).
"""

from __future__ import annotations

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from stages.base import set_column

SOURCE_NAME = "source_name"


class SourceTag(BaseModel):
    """The name a source's documents carry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str


class SourceNameStage:
    """Adds ``source_name`` (the same value on every row of an input file); removes nothing."""

    name = "source_name"
    label = "named source recorded (source_name)"
    needs: tuple[str, ...] = ()
    adds = (SOURCE_NAME,)
    types = {SOURCE_NAME: pa.string()}  # the Arrow type of what it adds
    reasons: tuple[str, ...] = ()

    def __init__(self, config: SourceTag):
        self.value = config.name

    def __call__(self, batch: pa.Table) -> pa.Table:
        return set_column(batch, SOURCE_NAME, pa.repeat(pa.scalar(self.value, pa.string()), len(batch)))
