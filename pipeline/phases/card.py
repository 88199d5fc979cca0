"""Phase ``card``: a Hugging Face dataset card for the run, computed from its outputs (pipeline/card).

One FINAL step whose unit is the run.  It reads the state of every other phase (each unit's fingerprint and
whether its marker is current, each part's fingerprint) and depends on the whole config and the package
versions, so its fingerprint (the engine's) changes with any change to the data and a rerun with nothing
changed skips it.  The card is computed in one Ray task on the driver's node, from the run's context as the
driver planned it (``RunContext.detached``): its plan of every phase, their markers and what the parts' tasks
counted are a worker's, never the driver's.  The card is written last: ``card/*.svg``, ``card/stats.json``,
``README.md`` (at the output root: a Hub dataset repo as it stands), then ``_done/card/run.json``.  A part file
the card cannot read is left out and named in the card, which is written without its marker: the unit fails
with that one line, and a rerun rebuilds the card.
"""

from __future__ import annotations

import logging
import traceback

from pipeline.card.build import FOLDER, README, compute_and_publish
from pipeline.card.plan import plan_from_context
from pipeline.card.reading import CardInputError, check_record, read_object
from pipeline.config import RunConfig
from pipeline.context import RunContext
from pipeline.engine import beside
from pipeline.engine.steps import Job
from pipeline.phase import FINAL, ROLE_CARD, STATE, Phase, Sink, Step, Unit
from pipeline.record import versions
from pipeline.result import UnitResult
from pipeline.units import PUBLISHED

log = logging.getLogger(__name__)

#: Bump when the card's content changes, so existing cards are rebuilt.
CARD_VERSION = 4  # 4: plots as SVG (card/*.svg), no longer PNG


def card_version() -> dict:
    """What the card shows besides the data and the config: the package versions and the card's own version."""
    return {"versions": versions(), "card": CARD_VERSION}


class CardIncomplete(RuntimeError):
    """The card was written without some part files it could not read (it names them)."""


def write_card(ctx: RunContext, unit: Unit) -> UnitResult:
    """Compute and publish the card of ``ctx``'s output (the engine, or ``curate report``, writes its marker)."""
    record = check_record(read_object(ctx.storage, "run.json"), ctx.storage.uri("run.json"))
    plan = plan_from_context(ctx, record)
    published = compute_and_publish(plan, ctx.storage, config=ctx.config, workers=ctx.workers)
    if published["unreadable"]:
        files = published["unreadable"]
        raise CardIncomplete(
            f"{len(files)} part files could not be read; the card is written without them and says so: "
            + ", ".join(files[:5])
            + (" ..." if len(files) > 5 else "")
        )
    return card_result(unit, published)


def card_result(unit: Unit, totals: dict) -> UnitResult:
    """The card's unit's result: what it reports, and the files it published (its marker holds while they exist)."""
    return UnitResult(unit.name, totals=totals, outputs={PUBLISHED: [README, f"{FOLDER}/stats.json"]})


def _card(job: Job, unit: Unit) -> UnitResult:
    """The card, computed in one Ray task: it reads every phase's units, markers and parts (90,000 of each in a
    snapshot) and adds up what the parts' tasks counted; the driver holds none of it (issue 39)."""
    # on the driver's node: the inputs a run names relative to its directory are there (a cluster's are not)
    try:
        result, why = beside.call(_card_task, job.ctx, unit, name="card")
    except Exception as e:  # its process died past Ray's retries: a failed unit, retried on rerun, as any failure
        result, why = UnitResult.failure(unit.name, f"{type(e).__name__}: {e}"), f"{type(e).__name__}: {e}"
    if why is not None:
        log.error("card: %s", why)
    return result


def _card_task(ctx: RunContext, unit: Unit) -> tuple[UnitResult, str | None]:
    """The card's unit's result, and what to log when it failed (the driver logs it, as its own line)."""
    try:
        return write_card(ctx, unit), None
    except (CardInputError, CardIncomplete) as e:  # one line names the file: no traceback needed
        return UnitResult.failure(unit.name, str(e)), str(e)
    except Exception as e:  # the data phases are done: a card failure is a failed unit, retried on rerun
        return UnitResult.failure(unit.name, f"{type(e).__name__}: {e}"), traceback.format_exc()


#: Its one step: the card of the run, from the state of every other phase and the whole config.
STEPS = (
    Step(
        "card",
        "stats.json, the plots and the README computed from the outputs",
        FINAL,
        _card,
        reads=(STATE,),
        sections=("*",),
        version=card_version,
        unit="run",
        counted=True,
    ),
)


class CardPhase(Phase):
    name = "card"
    label = "the dataset card: every number computed from the outputs"
    unit_kind = "run"
    role = ROLE_CARD
    headline_keys = ("documents", "tokens", "card")

    def sinks(self, config: RunConfig) -> list[Sink]:
        return [
            Sink(
                "card",
                "the dataset card (Hugging Face README at the output root), its plots and stats.json",
                f"{README}, {FOLDER}/",
                ROLE_CARD,
            )
        ]

    def enabled(self, config: RunConfig) -> bool:
        return config.card.enabled

    def steps(self, config: RunConfig) -> list[Step]:
        return list(STEPS)

    def headline(self, summary: dict) -> dict:
        return {k: summary[k] for k in self.headline_keys if summary.get(k) is not None}
