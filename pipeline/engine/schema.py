"""One schema for every part of a map phase: what the engine knows of a phase's columns before it runs.

Parts of one phase used to differ by what their input or named source ran: a WARC's parts have the HTTP and
charset columns, a document dump's its ``metadata``, a source with C4 off no ``c4_*`` columns; a reader of the
folder (``datasets.load_dataset``, a Parquet dataset) then fails on the first part unlike the others.  The engine
gives every part of a phase the union of the columns its chains declare, nulls where a part's chain adds none:

- a phase that reads the inputs: for each source kind the run's inputs have (by content for local files, by name
  for remote ones, every kind when a name does not tell) and each named source, the kind's columns
  (``schema``), then what each stage of its chain adds and removes (a stage's ``adds``, their Arrow ``types``
  and its ``drops``), in order;
- a phase that reads parts (all of one schema): the part's columns, then what each named source's stages add.

Only columns with a declared type are filled in (a user's stage that declares no types is left as it writes);
nothing reads a written part to learn this.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa

from stages.base import DETAILS, REASON

Columns = dict  # name -> Arrow type, or None when no stage declares one; in order


def _chain(start: Iterable[tuple[str, pa.DataType | None]], specs: Sequence) -> Columns:
    """The columns after ``specs`` (StageSpecs) ran on rows of ``start``'s columns, as they declare."""
    cols: Columns = dict(start)
    for spec in specs:
        declared = getattr(spec.cls, "types", None) or {}
        for name in getattr(spec.cls, "drops", ()):
            cols.pop(name, None)
        for name in spec.info().adds:
            if cols.get(name) is None:
                cols[name] = declared.get(name)
    return cols


def _union(chains: Sequence[Columns]) -> pa.Schema:
    """The typed columns of every chain, each once, in the order of the first chain that has it (after the column
    before it there)."""
    order: list[str] = []
    types: dict[str, pa.DataType] = {}
    for cols in chains:
        before = -1
        for name, kind in cols.items():
            if kind is not None:
                types.setdefault(name, kind)
            if name in order:
                before = order.index(name)
            else:
                before += 1
                order.insert(before, name)
    return pa.schema([(n, types[n]) for n in order if n in types])


def inputs_schema(phase, config, kinds: Sequence[str]) -> pa.Schema:
    """The columns of every part of a phase that reads the inputs (``kinds``: the source kinds of the run's inputs)."""
    from pipeline.readers import source_kinds

    by_name = {c.name: c for c in source_kinds(config)}  # the built-in kinds and the run's own readers
    chains = []
    for name in [s.name for s in config.sources] or [None]:
        cfg = config.for_source(name)
        for kind in kinds:
            cls = by_name[kind]
            schema = getattr(cls.from_run(cfg), "schema", None)
            start = [(f.name, f.type) for f in schema if f.name not in (REASON, DETAILS)] if schema is not None else []
            chains.append(_chain(start, [*cls.stages(cfg), *phase.stages(cfg)]))
    return _union(chains)


def parts_schema(phase, config, part: pa.Schema, prepared=None) -> pa.Schema:
    """The columns of every part of a phase that reads parts of schema ``part``."""
    start = [(f.name, f.type) for f in part if f.name not in (REASON, DETAILS)]
    names = [s.name for s in config.sources] or [None]
    return _union([_chain(start, phase.stages(config.for_source(n), prepared)) for n in names])


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``schema``'s columns in its order (nulls of the declared type where it has none), then any column
    no declaration names, as it is."""
    if table.schema.names == schema.names:
        return table
    have = set(table.column_names)
    columns = [table.column(f.name) if f.name in have else pa.nulls(len(table), f.type) for f in schema]
    extra = [n for n in table.column_names if n not in set(schema.names)]
    return pa.table([*columns, *(table.column(n) for n in extra)], names=[*schema.names, *extra])
