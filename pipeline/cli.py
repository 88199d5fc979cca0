"""``curate``: the command line.

    curate run CONFIG [--input PATH_OR_GLOB ...] [--output ROOT] [--address ADDR]
    curate validate CONFIG        check a config and list its inputs
    curate config-reference       print every config field with its default
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from pipeline.config import ConfigError, load_config
from pipeline.inputs import InputError, expand_inputs


def _add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="YAML run config (e.g. jobs/sample.yaml)")
    p.add_argument("--input", "-i", action="append", metavar="PATH_OR_GLOB",
                   help="input WARC path, glob, s3:// URI or warc.paths listing; repeatable; replaces the config's inputs")
    p.add_argument("--output", "-o", metavar="ROOT", help="output folder or s3://bucket/prefix; replaces the config's output.root")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="curate", description="Common Crawl WARCs to clean, deduplicated training data on Ray.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the pipeline", description="Run the pipeline described by CONFIG.")
    _add_config_args(run)
    run.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, else an embedded local Ray)")
    run.add_argument("--no-progress", action="store_true", help="no progress bars (logs only)")
    run.add_argument("-v", "--verbose", action="store_true", help="info-level logs")

    val = sub.add_parser("validate", help="check a config and list its inputs", description="Validate CONFIG and expand its inputs without running.")
    _add_config_args(val)

    sub.add_parser("config-reference", help="print every config field, its default and meaning",
                   description="Print the config reference (the same table as the README's).")
    return parser


def _fail(msg: str, code: int = 2) -> int:
    print(msg, file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "config-reference":
        from pipeline.reference import config_reference

        print(config_reference())
        return 0
    logging.basicConfig(level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    try:
        config = load_config(args.config, args.input, args.output)
        if args.command == "validate":
            from pipeline.phase1 import s3_options

            files = expand_inputs(config.inputs, config.inputs_base, s3_options(config))
            print(f"config ok: {len(files)} input files, output {config.output.root}")
            for f in files:
                print(f"  {f}")
            return 0
        from pipeline.runner import run

        record = run(config, address=args.address, progress=not args.no_progress)
    except (ConfigError, InputError) as e:
        return _fail(str(e))
    return _report(record, config.output.root)


def _report(record: dict, output: str) -> int:
    """Print each phase's counts; exit 1 if any unit failed (a rerun retries it)."""
    phase1 = record["phases"]["extracted"]
    print("phase 1 (extracted):", json.dumps({k: phase1[k] for k in ("files", "responses", "kept", "rejected", "malformed_records") if k in phase1}))
    phase2 = record["phases"].get("deduped")
    if phase2:
        print("phase 2 (deduped):", json.dumps({k: phase2[k] for k in ("in", "kept", "rejected") if k in phase2}))
    print(f"output: {output}")
    failed = 0
    for src, err in phase1["files_failed"].items():
        print(f"failed: {src}: {err}", file=sys.stderr)
        failed += 1
    for part, err in (phase2 or {}).get("failed_parts", {}).items():
        print(f"failed: phase 2: {part}: {err}", file=sys.stderr)
        failed += 1
    if failed:
        return _fail(f"{failed} units failed; rerun the same command to retry them", 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
