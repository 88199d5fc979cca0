"""Run the phases on Ray.

Phase 1 is a Ray Data ``map_batches`` over the list of input files: one file
per batch, processed by an actor pool (each actor loads its models once) that
streams the file through the stages over Arrow batches.  The file is the unit
of work, of output and of resumption, as in Common Crawl itself.

Local runs start an embedded Ray (no server); ``address`` / ``RAY_ADDRESS``
joins a cluster.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import platform
import sys
from collections import Counter
from importlib import metadata

import pyarrow as pa
from tqdm import tqdm

from pipeline.config import RunConfig
from pipeline.inputs import expand_inputs, unit_name
from pipeline.phase1 import PHASE, Phase1, s3_options
from pipeline.phase2 import run_phase2
from pipeline.storage import Storage, is_s3

log = logging.getLogger(__name__)


def init_ray(config: RunConfig, address: str | None = None) -> None:
    import ray

    if ray.is_initialized():
        return
    address = address or config.ray.address or os.environ.get("RAY_ADDRESS")
    quiet = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": True}
    if address:
        ray.init(address=address, **quiet)
    else:
        ray.init(num_cpus=config.ray.num_cpus, **quiet)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False  # we print one bar per phase ourselves
    ctx.print_on_execution_start = False


class _Phase1Actor:
    """Ray Data UDF: a batch of (uri, unit) rows -> a batch of stats rows."""

    def __init__(self, config: dict):
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        self.phase1 = Phase1(RunConfig.model_validate(config))

    def __call__(self, batch: pa.Table) -> pa.Table:
        import json

        out = []
        for uri, unit, source in zip(*(batch.column(c).to_pylist() for c in ("uri", "unit", "source"))):
            out.append(json.dumps(self.phase1.process(uri, unit, source)))
        return pa.table({"stats": out})


def _open_uri(uri: str) -> str:
    # Workers may not share the driver's working directory.
    return uri if is_s3(uri) else os.path.abspath(uri)


def run_phase1(config: RunConfig, files: list[str], storage: Storage, workers: int, progress: bool = True) -> dict:
    """Process every file without a completion marker; returns {unit: stats}."""
    import json

    import ray

    units = {unit_name(f): f for f in files}
    done = {n.removesuffix(".json") for n in storage.list("_done", PHASE, suffix=".json")}
    todo = [(u, f) for u, f in units.items() if u not in done]
    results: dict[str, dict] = {}
    if done & set(units):
        log.warning("phase 1: %d of %d files already done (completion markers found); skipping them", len(done & set(units)), len(units))
    if todo:
        items = [{"uri": _open_uri(f), "unit": u, "source": f} for u, f in todo]
        ds = ray.data.from_items(items, override_num_blocks=len(items))
        ds = ds.map_batches(
            _Phase1Actor,
            fn_constructor_kwargs={"config": config.model_dump(mode="json")},
            batch_size=1,
            batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=max(1, min(workers, len(items)))),
            num_cpus=1,
        )
        bar = tqdm(total=len(items), desc="phase 1: extract", unit="file", disable=not progress, file=sys.stderr)
        docs = Counter()
        for row in ds.iter_rows():
            stats = json.loads(row["stats"])
            results[stats["unit"]] = stats
            docs.update({"kept": stats.get("kept", 0), "responses": stats.get("responses", 0)})
            bar.set_postfix(responses=docs["responses"], kept=docs["kept"])
            bar.update(1)
        bar.close()
    for unit in units:
        if unit not in results and unit in done:
            results[unit] = storage.read_json("_done", PHASE, f"{unit}.json")
    return results


def summarize_phase1(results: dict) -> dict:
    total: Counter = Counter()
    by_type: Counter = Counter()
    reasons: Counter = Counter()
    seconds: Counter = Counter()
    counters: Counter = Counter()
    failed = {}
    for unit, s in sorted(results.items()):
        if "failed" in s:
            failed[s.get("source", unit)] = s["failed"]
            continue
        total.update({k: s[k] for k in ("responses", "kept", "rejected", "malformed_records")})
        by_type.update(s["records_by_type"])
        reasons.update(s["rejected_by_reason"])
        seconds.update(s["stage_seconds"])
        counters.update(s.get("stage_counters", {}))
    return {
        "files": len(results),
        "files_failed": failed,
        **dict(total),
        "records_by_type": dict(sorted(by_type.items())),
        "rejected_by_reason": dict(sorted(reasons.items(), key=lambda kv: -kv[1])),
        "stage_seconds": {k: round(v, 2) for k, v in seconds.items()},
        "stage_counters": dict(sorted(counters.items())),
    }


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for dist in ("curate-pipeline", "ray", "pyarrow", "fastwarc", "resiliparse", "trafilatura", "datasketch"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def run(config: RunConfig, address: str | None = None, progress: bool = True) -> dict:
    """Run the pipeline; returns (and writes) the run record ``run.json``."""
    started = dt.datetime.now(dt.timezone.utc)
    s3 = s3_options(config)
    files = expand_inputs(config.inputs, config.inputs_base, s3)
    storage = Storage(config.output.root, s3)
    init_ray(config, address)
    import ray

    workers = config.ray.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    log.info("%d input files, %d workers, output %s", len(files), workers, storage.root_uri)
    phase1 = summarize_phase1(run_phase1(config, files, storage, workers, progress))
    phases = {PHASE: phase1}
    if config.dedup.enabled:
        phases["deduped"] = run_phase2(config, storage, workers, progress)
    record = {
        "name": config.name,
        "config": config.model_dump(mode="json"),
        "versions": _versions(),
        "inputs": files,
        "started": started.isoformat(),
        "finished": dt.datetime.now(dt.timezone.utc).isoformat(),
        "phases": phases,
    }
    storage.write_json(record, "run.json")
    return record
