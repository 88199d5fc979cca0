"""``curate report OUTPUT_ROOT``: rebuild the dataset card of an existing output, without rerunning anything.

Reads ``run.json`` (the config, inputs and versions the run recorded), finds
the current parts the way the run would, computes the card from the Parquet
files and the shards manifest, and writes ``README.md`` and ``card/`` (and the card's marker,
so a later ``curate run`` with nothing changed does not redo it).  When the
recorded config does not validate here (a model file that is not on this
machine, a section this version does not know), the parts are those with a
marker, the card says so, and no marker is written.

What it reads is checked (pipeline.card.reading): a missing, truncated or
malformed run.json, marker or shards manifest is a one-line error naming the
file (exit 2); a Parquet file that cannot be read is left out, the card names
it and a check fails (exit 1, no marker: a later run rebuilds the card).
Nothing else ends in a traceback either (``-v`` shows it).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from core.memory import limit_arenas
from core.storage import S3Options, Storage
from pipeline.card.escape import one_line
from pipeline.card.reading import CardInputError, check_record, find_bad_marker, read_object

log = logging.getLogger(__name__)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="curate report",
        description="Rebuild the dataset card (README.md at the root; "
        "card/: plots, stats.json) of an existing output.",
    )
    p.add_argument(
        "output", metavar="OUTPUT_ROOT", help="the run's output folder or s3://bucket/prefix (where run.json is)"
    )
    p.add_argument(
        "--endpoint-url", help="S3-compatible endpoint, e.g. http://127.0.0.1:9000 (default: AWS_ENDPOINT_URL or AWS)"
    )
    p.add_argument("--region", help="S3 region (default: AWS_DEFAULT_REGION or us-east-1)")
    p.add_argument("--anonymous", action="store_true", help="unsigned S3 requests (public buckets)")
    p.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="processes reading parts when the output is large (default: the CPUs of this machine)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="info-level logs")
    return p


def _context(storage: Storage, record: dict):
    """A RunContext of the recorded run over ``storage``, or (None, why) when its config does not validate here."""
    from pipeline.config import ConfigError, parse_config
    from pipeline.context import RunContext
    from pipeline.engine.columns import Paths
    from pipeline.phases import DEFAULT_PHASES
    from pipeline.plan import build_plan

    data = dict(record.get("config") or {})
    data["output"] = {**(data.get("output") or {}), "root": storage.root_uri}
    if storage.s3 is not None:
        data["storage"] = {
            "endpoint_url": storage.s3.endpoint_url,
            "region": storage.s3.region,
            "anonymous": storage.s3.anonymous,
        }
    try:
        config = parse_config(data)
        plan, phases = build_plan(config, DEFAULT_PHASES)
    except ConfigError as e:
        return None, str(e).splitlines()[0]
    return RunContext(config, storage, Paths(record.get("inputs") or ()), phases, progress=False, plan=plan), None


def report(root: str, s3: S3Options | None = None, workers: int = 1) -> dict:
    """Rebuild the card of the output at ``root``; returns what was written."""
    from pipeline.card.build import compute, publish
    from pipeline.card.plan import plan_from_context, plan_from_markers
    from pipeline.phases.card import CardPhase, card_result
    from pipeline.units import UnitWork

    limit_arenas()  # as a run's driver (core/memory.py)
    storage = Storage(root, s3)
    if not storage.exists("run.json"):
        raise FileNotFoundError(f"{storage.uri('run.json')} not found: not the output of a curate run")
    record = check_record(read_object(storage, "run.json"), storage.uri("run.json"))
    ctx, why = _context(storage, record)
    if ctx is None:
        log.warning("the recorded config does not validate here (%s): taking every part with a marker", why)
        from pipeline.phases import DEFAULT_PHASES

        stats = compute(plan_from_markers(storage, record, why, DEFAULT_PHASES), storage, workers=workers)
        return publish(storage, stats)
    try:
        plan, (unit,) = plan_from_context(ctx, record), ctx.units_of(CardPhase())  # the card's unit, by the engine
    except CardInputError:
        raise
    except (ValueError, AttributeError, TypeError) as e:  # the run's context reads markers without naming them
        bad = find_bad_marker(storage)
        if bad is None:
            raise
        raise bad from e
    stats = compute(plan, storage, workers=workers)
    if stats["unreadable"]:  # the card says what it left out; no marker, so the next run rebuilds it
        return publish(storage, stats)
    with UnitWork.for_phase(storage, CardPhase.name, unit) as work:
        return work.commit(card_result(unit, publish(storage, stats))).totals


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    s3 = S3Options(args.endpoint_url, args.region, args.anonymous) if args.output.startswith("s3://") else None
    try:
        out = report(args.output, s3, max(1, args.workers))
    except (FileNotFoundError, CardInputError) as e:
        print(f"error: {one_line(e)}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - one line, never a traceback (unless asked for)
        if args.verbose:
            log.exception("curate report failed")
        print(
            f"error: {type(e).__name__}: {one_line(e)[:1000]}" + ("" if args.verbose else " (-v shows the traceback)"),
            file=sys.stderr,
        )
        return 1
    print(f"card: {out['card']}")
    for name in out.get("unreadable", []):
        print(f"warning: {name} could not be read: the card is built without it", file=sys.stderr)
    print(
        f"documents: {out['documents']:,}" + (f", tokens: {out['tokens']:,}" if out.get("tokens") is not None else "")
    )
    if not out["funnel_adds_up"] or out["checks_failed"]:
        print(f"warning: {out['checks_failed']} checks failed (see the card's summary)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
