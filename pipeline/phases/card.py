"""Phase ``card``: a Hugging Face dataset card for the run, computed from its outputs (pipeline/card).

Its unit is the run.  The fingerprint covers the state of every other phase
(each unit's fingerprint and whether its marker is current, each part's
fingerprint), the config and the package versions, so a rerun after any
change to the data rebuilds the card, and a rerun with nothing changed skips
it.  The card is written last: ``card/*.svg``, ``card/stats.json``, ``README.md`` (at the
output root: a Hub dataset repo as it stands), then ``_done/card/run.json``.  A part file the card cannot
read is left out and named in the card, which is written without its marker:
the unit fails with that one line, and a rerun rebuilds the card.
"""

from __future__ import annotations

import logging
import traceback

from pipeline.card.build import FOLDER, README, compute, publish
from pipeline.card.plan import plan_from_context
from pipeline.card.reading import CardInputError, check_record, read_object
from pipeline.config import RunConfig
from pipeline.context import RunContext
from pipeline.phase import Phase, SinkInfo, Unit, fingerprint
from pipeline.result import UnitResult
from pipeline.record import versions
from pipeline.units import UnitWork

log = logging.getLogger(__name__)

#: Bump when the card's content changes, so existing cards are rebuilt.
CARD_VERSION = 4  # 4: plots as SVG (card/*.svg), no longer PNG


def card_settings(config: RunConfig) -> dict:
    """What the card shows besides the data: the config (not where the output is, nor Ray) and versions."""
    return {"config": config.model_dump(mode="json", exclude={"ray": True, "storage": True, "output": {"root"}}),
            "versions": versions(), "card": CARD_VERSION}


def card_unit(ctx: RunContext) -> Unit:
    state = []
    for p in ctx.phases:
        if not p.reported:  # the card itself
            continue
        units = [(u.name, u.fingerprint, ctx.marker(p, u) is not None) for u in ctx.units_of(p)]
        parts = [(pt.name, pt.fingerprint) for pt in ctx.parts(p)] if p.writes_documents else []
        state.append((p.name, units, parts))
    return Unit("run", fingerprint(state, card_settings(ctx.config)))


class CardIncomplete(RuntimeError):
    """The card was written without some part files it could not read (it names them)."""


def write_card(ctx: RunContext, unit: Unit) -> UnitResult:
    """Compute and publish the card of ``ctx``'s output, then its marker."""
    record = check_record(read_object(ctx.storage, "run.json"), ctx.storage.uri("run.json"))
    plan = plan_from_context(ctx, record)
    stats = compute(plan, ctx.storage, config=ctx.config, workers=ctx.workers, ray=True)
    if stats["unreadable"]:
        publish(ctx.storage, stats)
        files = [u["file"] for u in stats["unreadable"]]
        raise CardIncomplete(f"{len(files)} part files could not be read; the card is written without them and says so: "
                             + ", ".join(files[:5]) + (" ..." if len(files) > 5 else ""))
    with UnitWork.for_phase(ctx.storage, CardPhase.name, unit) as work:
        return work.commit(UnitResult(unit.name, totals=publish(ctx.storage, stats)))


class CardPhase(Phase):
    name = "card"
    label = "the dataset card: every number computed from the outputs"
    unit_kind = "run"
    writes_documents = False
    reported = False
    headline_keys = ("documents", "tokens", "card")

    def sinks(self, config: RunConfig) -> list[SinkInfo]:
        return [SinkInfo("card", "the dataset card (Hugging Face README at the output root), its plots and stats.json",
                         f"{README}, {FOLDER}/")]

    def enabled(self, config: RunConfig) -> bool:
        return config.card.enabled

    def settings(self, config: RunConfig) -> dict:
        return card_settings(config)

    def units(self, ctx: RunContext) -> list[Unit]:
        return [card_unit(ctx)]

    def run(self, ctx: RunContext, todo: list[Unit]):
        for unit in todo:
            try:
                yield write_card(ctx, unit)
            except (CardInputError, CardIncomplete) as e:  # one line names the file: no traceback needed
                log.error("card: %s", e)
                yield UnitResult.failure(unit.name, str(e))
            except Exception as e:  # the data phases are done: a card failure is a failed unit, retried on rerun
                log.error("card: %s", traceback.format_exc())
                yield UnitResult.failure(unit.name, f"{type(e).__name__}: {e}")

    def headline(self, summary: dict) -> dict:
        return {k: summary[k] for k in self.headline_keys if summary.get(k) is not None}
