"""Every source kind, in one explicit tuple: adding one is a module and an entry here.

A source kind reads the files :func:`stages.sources.sniff` gives it (``READABLE``), describes itself
(``name``, ``label``, ``records_label``, ``provides``, ``reasons``, ``section``) and names the stages
that only its rows need before the run's common ones (``stages(config)``: WARC responses are decoded
and extracted; documents are text already).
"""

from __future__ import annotations

from stages.sources import READABLE, Source
from stages.sources.documents import DocumentsSource
from stages.sources.warc import WarcSource

SOURCES: tuple[type[Source], ...] = (WarcSource, DocumentsSource)

assert {s.name for s in SOURCES} == set(READABLE), "every readable kind has its source"


def source_of(kind: str) -> type[Source]:
    """The source class of a kind (``warc``, ``documents``)."""
    return next(s for s in SOURCES if s.name == kind)
