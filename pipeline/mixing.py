"""The training mix in the shards phase: every document's tokens tallied per source, the draw planned and stored.

With ``mix.weights``, ``mix.epochs`` or ``mix.rehydrate`` set, the shards phase first runs a tally pass
over documents/final (one task per part, or in the driver for a small input, as the shards themselves):
each document is tokenized as the shards will tokenize it and its tokens added to its source's histogram
over hash bins (stages/mix.py).  The plan drawn from the tallies (the copies of every pool item, the bins
that get one more) goes to ``shards/mix.json`` with the corpus fingerprint, so a rerun that finds it
current redoes no tally; then each shard task draws its documents from it (stages.mix.draw).  The tally
costs one more tokenization of the corpus: the shares are shares of tokens, known only once tokenized.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.layout import DOCUMENTS, part_file
from core.storage import Storage
from pipeline.config import ConfigError, RunConfig, s3_options
from pipeline.context import RunContext
from pipeline.phase import Unit
from pipeline.result import add_totals
from stages.base import REASON
from stages.mix import (
    CLUSTER,
    REPEAT_WARNING_EPOCHS,
    MixError,
    MixPlan,
    Tally,
    add_tallies,
    manifest_section,
    plan_mix,
    repeated_sources,
    tally,
)
from stages.source_name import SOURCE_NAME
from stages.tokenize import TokenizeStage

log = logging.getLogger(__name__)

#: The stored plan: the draw of the current corpus (its fingerprint) and every source's numbers.
PLAN = ("shards", "mix.json")
BATCH_ROWS = 4096


def columns(config: RunConfig) -> list[str]:
    """The columns of documents/final the draw reads (besides id and text)."""
    return [SOURCE_NAME, CLUSTER] if config.mix.draws else []


class TallyWorker:
    """The tallies of one part of documents/final (a Ray task, or the driver for a small input)."""

    def __init__(self, config: RunConfig, source: str, tokenizer: bytes):
        self.config = config
        self.source = source
        self.storage = Storage(config.output.root, s3_options(config))
        self.stage = TokenizeStage(config.shards.tokenize, tokenizer_bytes=tokenizer)  # the shards' own tokenization

    def process(self, unit: Unit) -> dict:
        part = pq.ParquetFile(
            self.storage.path(DOCUMENTS, self.source, part_file(unit.name)), filesystem=self.storage.fs
        )
        wanted = [c for c in ("id", "text", *columns(self.config)) if c in part.schema_arrow.names]
        out: dict[str, Tally] = {}
        for batch in part.iter_batches(batch_size=BATCH_ROWS, columns=wanted):
            tokenized = self.stage(pa.Table.from_batches([batch]))
            drawn = (
                pc.is_null(tokenized.column(REASON)).to_numpy(zero_copy_only=False)
                if REASON in tokenized.column_names
                else None
            )
            tokens = tokenized.column("num_tokens").to_numpy(zero_copy_only=False)
            out = add_tallies(
                out, tally(tokenized, tokens, drawn if drawn is not None else tokens >= 0, self.config.mix)
            )
        return {"unit": unit.name, "tallies": {k: v.to_json() for k, v in out.items()}}


def draw_plan(
    ctx: RunContext, manifest: Unit, tokenizer: Callable[[], bytes], is_small: Callable[[list[str]], bool]
) -> MixPlan | None:
    """The run's draw (None without a mix): the stored one when it is of this corpus (the shards' manifest
    unit names it), else tallied and planned now (``tokenizer``: the tokenizer file's bytes; ``is_small``: whether
    these part files are tallied in the driver); ConfigError when the documents cannot give the mix asked for."""
    config = ctx.config
    if not config.mix.draws:
        return None
    corpus, source, parts = manifest.params["corpus"], manifest.params["source"], manifest.params["parts"]
    if ctx.storage.exists(*PLAN):
        stored = ctx.storage.read_json(*PLAN)
        if stored.get("fingerprint") == corpus:
            return MixPlan.from_json(stored["plan"])
    tallies = _tally(
        ctx, source, parts, tokenizer(), is_small([ctx.storage.path(DOCUMENTS, source, part_file(p)) for p in parts])
    )
    try:
        plan = plan_mix(tallies, config.mix)
    except MixError as e:
        raise ConfigError(f"config error: {e}") from None
    ctx.storage.write_json({"fingerprint": corpus, "plan": plan.to_json()}, *PLAN)
    log.info(
        "mix: %s", ", ".join(f"{s.name or 'all'} {s.drawn_tokens:,} tokens ({s.epochs} epochs)" for s in plan.sources)
    )
    for name, epochs in repeated_sources(plan).items():
        log.warning(
            "mix: source %r is drawn %.1f epochs: past %d epochs repeated tokens are worth less and less "
            "(Muennighoff et al. 2023); the card lists it under Known limitations",
            name or "all",
            epochs,
            REPEAT_WARNING_EPOCHS,
        )
    return plan


def _tally(ctx: RunContext, source: str, parts: list[str], tokenizer: bytes, small: bool) -> dict[str, Tally]:
    from pipeline.distribute import map_units

    units = [Unit(p, "") for p in parts]
    if small:
        worker = TallyWorker(ctx.config, source, tokenizer)
        results = [worker.process(u) for u in units]
    else:
        results = list(
            map_units(
                ctx.config, units, TallyWorker, workers=ctx.workers(), extra={"source": source, "tokenizer": tokenizer}
            )
        )
    failed = [r for r in results if "failed" in r]
    if failed:  # the mix needs every document: no shard is written without it
        raise RuntimeError(
            f"mix: {len(failed)} parts could not be tallied, e.g. {failed[0]['unit']}: {failed[0]['failed']}"
        )
    out: dict[str, Tally] = {}
    for r in sorted(results, key=lambda r: r["unit"]):
        out = add_tallies(out, {k: Tally.from_json(v) for k, v in r["tallies"].items()})
    return out


def manifest_mix(plan: MixPlan, groups: list) -> dict:
    """The manifest's ``mix`` section from the plan and what every group wrote (their ``mix`` totals)."""
    totals: dict = {}
    for g in groups:
        totals = add_totals(totals, g.totals.get("mix", {}))
    section = manifest_section(plan, totals)
    if section["tokens"] != plan.drawn_tokens:  # the tally and the shards tokenized the same texts
        log.warning("mix: the shards hold %d tokens, the plan drew %d", section["tokens"], plan.drawn_tokens)
    return section
