"""``curate``: the command line.

    curate run CONFIG [--input PATH_OR_GLOB ...] [--output ROOT] [--address ADDR] [--phases A,B] [--dry-run]
    curate validate CONFIG        check a config and list its inputs
    curate config-reference       print every config field with its default
    curate train-quality ...      train a fastText quality classifier (classifiers/train_quality.py)
    curate report OUTPUT_ROOT     rebuild the dataset card of an output (pipeline/card/report.py)
    curate unlock OUTPUT_ROOT [--force]   break the lock a dead run left on an output (pipeline/lock.py)

The CLI knows no phase by name: it prints what each phase's ``headline`` returns.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import NoReturn

from core.storage import OutputError
from pipeline.config import ConfigError, load_config
from pipeline.inputs import InputError
from pipeline.lock import OutputLocked


def _add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="YAML run config (e.g. jobs/sample.yaml)")
    p.add_argument(
        "--input",
        "-i",
        action="append",
        metavar="PATH_OR_GLOB",
        help="input WARC path, glob, s3:// URI or warc.paths listing; repeatable; replaces the config's inputs",
    )
    p.add_argument(
        "--output", "-o", metavar="ROOT", help="output folder or s3://bucket/prefix; replaces the config's output.root"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="curate", description="Common Crawl WARCs to clean, deduplicated training data on Ray."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the pipeline", description="Run the pipeline described by CONFIG.")
    _add_config_args(run)
    run.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, else an embedded local Ray)")
    run.add_argument(
        "--phases",
        metavar="A,B",
        action="append",
        help="run only these phases (comma-separated or repeated), "
        "e.g. --phases card; the others are left as they are",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (inputs, phases, units done and to do) and exit without running anything",
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bars (logs only)")
    run.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="info-level logs of every library too (Ray, ...); this project's own info lines always show",
    )

    val = sub.add_parser(
        "validate",
        help="check a config and list its inputs",
        description="Validate CONFIG and expand its inputs without running.",
    )
    _add_config_args(val)

    sub.add_parser(
        "config-reference",
        help="print every config field, its default and meaning",
        description="Print the config reference (the same table as the README's).",
    )

    from classifiers.train_quality import add_arguments

    add_arguments(
        sub.add_parser(
            "train-quality",
            help="train a fastText quality classifier",
            description="Train a supervised fastText quality classifier from labeled Parquet/JSONL "
            "or from positives vs negatives; held-out precision/recall/F1 saved beside the model.",
        )
    )
    sub.add_parser(
        "report", help="rebuild the dataset card (README.md, card/) of an existing output (see `curate report --help`)"
    )
    unlock = sub.add_parser(
        "unlock",
        help="break the lock a dead run left on an output root",
        description="Remove the lock of an output root (local or s3://), left by a run that died "
        "without giving it back. A holder that may still run is refused (exit 2): on this "
        "host, its process is alive; on another host, its heartbeat is younger than 5 "
        "minutes. Two live runs on one output mix their outputs.",
    )
    unlock.add_argument("root", help="output folder or s3://bucket/prefix")
    unlock.add_argument(
        "--force",
        action="store_true",
        help="remove the lock even if its holder may still run (you know it is dead: its host is gone)",
    )
    unlock.add_argument("--endpoint-url", help="S3-compatible endpoint (default: AWS_ENDPOINT_URL or AWS)")
    return parser


#: This project's loggers: their INFO lines (phase starts, progress, summaries) show by default.
OWN_LOGGERS = ("pipeline", "stages", "classifiers", "jobs")


def setup_logging(verbose: bool = False) -> None:
    """WARNING for everything, INFO for this project's loggers; ``-v``: INFO for every library too (Ray...)."""
    from pipeline.worker_logs import LOG_DATEFMT, LOG_FORMAT

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format=LOG_FORMAT, datefmt=LOG_DATEFMT)
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)


def _fail(msg: str, code: int = 2) -> int:
    print(msg, file=sys.stderr)
    return code


def entry() -> NoReturn:
    """The ``curate`` command: :func:`main`, then the process ends at once (pipeline.distribute.end_process:
    ~0.4 s less at the end of a local run than Ray's and the interpreter's teardown)."""
    from pipeline.distribute import end_process, shutdown_local_ray

    try:
        code = main(ending=True)
    except BaseException:
        shutdown_local_ray()
        raise
    end_process(code)


def main(argv: list[str] | None = None, *, ending: bool = False) -> int:
    """Run the command in ``argv``; returns its exit status.  ``ending``: the process ends right after
    (:func:`entry`), which stops an embedded Ray itself; else it is stopped here."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["report"]:  # its own parser (pipeline/card/report.py), options included
        from pipeline.card.report import main as report

        return report(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "train-quality":
        from classifiers.train_quality import run as train

        return train(args)
    if args.command == "unlock":
        return _unlock(args.root, args.endpoint_url, args.force)
    if args.command == "config-reference":
        from pipeline.reference import config_reference

        print(config_reference())
        return 0
    setup_logging(getattr(args, "verbose", False))
    try:
        config = load_config(args.config, args.input, args.output)
        if args.command == "validate":
            from pipeline.runner import plan_context

            files = plan_context(config).inputs  # every check a run makes before work
            print(f"config ok: {len(files)} input files, output {config.output.root}")
            for f in files:
                print(f"  {f}")
            return 0
        phases = [n.strip() for arg in (args.phases or []) for n in arg.split(",") if n.strip()]
        if args.dry_run:
            return _print_plan(config, phases)
        from pipeline.distribute import shutdown_local_ray
        from pipeline.runner import run

        try:
            record = run(
                config,
                address=args.address,
                progress=not args.no_progress,
                phases=phases,
                command=["curate", *(argv if argv is not None else sys.argv[1:])],
            )
        finally:
            if not ending:
                shutdown_local_ray()
    except (ConfigError, InputError) as e:
        return _fail(str(e))
    except OutputLocked as e:  # another run holds the output: nothing was done
        return _fail(str(e), 2)
    except OutputError as e:  # a full disk, a read-only output...: the run stopped, run.json says so
        return _fail(str(e), 1)
    return _report(record, config.output.root)


def _unlock(root: str, endpoint_url: str | None, force: bool = False) -> int:
    from core.storage import S3Options, Storage
    from pipeline.lock import LockInUse, unlock

    try:
        removed = unlock(Storage(root, S3Options(endpoint_url=endpoint_url)), force=force)
    except LockInUse as e:  # a live holder: nothing was removed
        return _fail(str(e), 2)
    except OSError as e:
        return _fail(f"output error: cannot unlock {root}: {e}", 1)
    for holder in removed:
        print(f"removed the lock of {holder.describe()}")
    if not removed:
        print(f"{root} holds no lock")
    return 0


def _print_plan(config, phases: list[str]) -> int:
    from pipeline.runner import plan_context, select, status

    ctx = plan_context(config)
    rows = {r["phase"]: r for r in status(ctx, select(ctx, phases))}
    print(f"inputs: {len(ctx.inputs)} files; output: {config.output.root}")
    for phase in ctx.plan.phases:
        if not phase.enabled:
            print(f"  {phase.name:<10} disabled by the config ({phase.label})")
            continue
        r = rows[phase.name]
        units = f"{r['units']} {r['unit']} units: {r['done']} done (skipped), {r['todo']} to do"
        if r["waits_for"]:
            units += f" (as of now; set once {r['waits_for']} has run)"
        print(f"  {phase.name:<10} reads {r['reads']:<10} {units}  [{'run' if r['selected'] else 'not selected'}]")
        print(f"  {'':<10} {phase.label}")
        for source in phase.sources:
            print(
                f"  {'':<10}   source {source.kind}: {source.label}"
                + (f"; then {', '.join(source.stages)}" if source.stages else "")
            )
        for name, keys in phase.overrides.items():
            shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) or "the run's settings"
            print(f"  {'':<10}   named source {name}: {shown}")
        for stage in phase.stages:
            print(f"  {'':<10}   stage {stage.name}: {stage.label}")
        for step in phase.steps:
            print(f"  {'':<10}   step {step.name}: {step.label}")
        for sink in phase.sinks:
            print(f"  {'':<10}   writes {sink.path} ({sink.label})")
    return 0


def _report(record: dict, output: str) -> int:
    """Print each phase's headline counts; exit 1 if any unit failed (a rerun retries it)."""
    from pipeline.exports import PREFIX, ExportPhase
    from pipeline.phases import DEFAULT_PHASES

    known = {cls.name: cls() for cls in DEFAULT_PHASES}
    for name in record["phases_run"]:  # an export's phase (pipeline/exports.py) prints as every export does
        phase = known.get(name) or (ExportPhase() if name.startswith(PREFIX) else None)
        if phase is not None:
            print(f"phase {name}: {json.dumps(phase.headline(record['phases'][name]))}")
    print(f"output: {output}")
    failed = 0
    for name in record["phases_run"]:
        for unit, err in record["phases"][name].get("failed_units", {}).items():
            print(f"failed: {name}: {unit}: {err}", file=sys.stderr)
            failed += 1
    phases = record["phases"]
    lost = {n: phases[n]["lost_to_errors"] for n in record["phases_run"] if phases[n].get("lost_to_errors")}
    for name, why in lost.items():
        print(f"failed: phase {name}: {why}", file=sys.stderr)
    if lost:
        return _fail(
            f"{len(lost)} phases lost every document to errors (the first traceback of each kind is in the "
            "worker logs)",
            1,
        )
    if failed:
        return _fail(f"{failed} units failed; rerun the same command to retry them", 1)
    return 0


if __name__ == "__main__":
    entry()
