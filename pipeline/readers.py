"""The run's own readers (``readers:``, pipeline/plugins.py) as the engine runs a source kind: the input files
their suffixes name go to them (preflight, the plan, the fingerprints and the worker ask here), the others to the
built-in kinds, told by their content (stages/sources/kinds.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from pipeline.plugins import ReaderConfig


class ReaderSource:
    """A user reader as the engine runs a source kind (stages/sources/kinds.py's interface)."""

    section = None  # its settings are its own (``with``), in its fingerprint

    def __init__(self, entry: ReaderConfig):
        cls = entry.cls
        self.entry, self.user_cls = entry, cls
        self.name, self.label, self.records_label = cls.name, cls.label, cls.records_label
        self.provides, self.reasons, self.suffixes = tuple(cls.provides), tuple(cls.reasons), tuple(cls.suffixes)
        self._reader = None

    def claims(self, uri: str) -> bool:
        return uri.lower().endswith(tuple(s.lower() for s in self.suffixes))

    def settings(self) -> dict:
        return {"use": self.entry.use, "with": self.entry.with_}

    def from_run(self, config) -> ReaderSource:
        if self._reader is None:
            self._reader = self.user_cls(**self.entry.with_)
        return self

    def stages(self, config) -> list:
        """Its rows meet the URL rules before the common stages, as documents' do."""
        from stages.base import StageSpec
        from stages.filters import url_filter_specs

        return (
            [StageSpec(cls, cfg, "filters.url") for cls, cfg in url_filter_specs(config.filters)]
            if "url" in self.provides
            else []
        )

    @staticmethod
    def new_stats() -> dict:
        return {"records": 0, "bytes": 0}

    @staticmethod
    def totals(stats: dict) -> dict:
        return {
            "records_by_type": {"record": stats["records"]},
            "rows": stats["records"],
            "malformed_records": 0,
            "read_counters": {},
            "bytes": stats["bytes"],
        }

    def read(self, stream, uri: str, stats: dict) -> Iterator[pa.Table]:
        for batch in self._reader.read(stream, uri):
            if not isinstance(batch, pa.Table):
                raise TypeError(f"{self.user_cls.__name__}.read gave a {type(batch).__name__}, not a pyarrow.Table")
            stats["records"] += len(batch)
            yield batch
        stats["bytes"] = stream.tell()


def source_kinds(config) -> tuple:
    """Every source kind a run may read with: the built-in ones (stages/sources/kinds.py), then its own readers."""
    from stages.sources.kinds import SOURCES

    return (*SOURCES, *readers(config))


def readers(config) -> list[ReaderSource]:
    """The run's own readers (``readers:``), in order."""
    return [ReaderSource(r) for r in getattr(config, "readers", ())]


def reader_for(config, uri: str) -> ReaderSource | None:
    """The user reader that reads ``uri`` (by its name's ending), if any."""
    return next((r for r in readers(config) if r.claims(uri)), None)
