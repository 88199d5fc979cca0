"""Data-Juicer's Ray MinHash deduplication on a dedup_scale.py corpus (run in Data-Juicer's own venv).

    .venv-dj/bin/python benchmarks/dedup_datajuicer.py ROOT WORKERS BANDS ROWS

benchmarks/dedup_scale.py starts this with ``--data-juicer PYTHON`` and scores
the result.  It runs ``ray_bts_minhash_deduplicator`` (Data-Juicer 1.6, its
CPU path: Python shingles, sha1 hashes, numpy permutations, then its BTS
union-find actors) on ``ROOT/documents/extracted/*.parquet`` in an embedded
Ray with WORKERS CPUs, with the settings closest to ours: word 5-grams of
the lower-cased text without punctuation, 128 permutations, BANDS x ROWS
bands.  Ray's start is not timed (as for ours).  It prints one line
``RESULT {json}``: wall and CPU seconds, peak RSS of the largest process and
of the whole process tree, the removed ids (written to ROOT/datajuicer/removed.json).

Nothing is downloaded at run time: Data-Juicer's LazyLoader would pip-install a
missing module; here that raises instead (install the venv first, see
benchmarks/README.md).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.memory import PeakMemory, TreeCpu  # noqa: E402


def forbid_runtime_installs() -> None:
    from data_juicer.utils.lazy_loader import LazyLoader

    def refuse(package, *args, **kwargs):
        raise ImportError(f"Data-Juicer wanted to install {package} at run time: add it to its venv")

    LazyLoader._install_package = staticmethod(refuse)


def run(root: Path, workers: int, bands: int, rows: int) -> dict:
    import pyarrow.parquet as pq
    import ray
    from data_juicer.ops.deduplicator.ray_bts_minhash_deduplicator import RayBTSMinhashDeduplicator

    forbid_runtime_installs()
    parts = sorted(str(p) for p in (root / "documents" / "extracted").glob("*.parquet"))
    all_ids = [i for p in parts for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()]
    work = root / "datajuicer"
    # Its temporary Parquet goes to work/.tmp/<Ray job id>, and every fresh embedded Ray numbers
    # its first job alike: a folder left by an earlier run would be read back as this run's rows.
    shutil.rmtree(work, ignore_errors=True)
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    op = RayBTSMinhashDeduplicator(
        tokenization="space", window_size=5, lowercase=True, ignore_pattern=r"\p{P}", num_permutations=128,
        num_bands=bands, num_rows_per_band=rows, work_dir=str(work),
    )  # fmt: skip
    t0 = time.perf_counter()
    with PeakMemory() as mem, TreeCpu() as cpu:
        dataset = ray.data.read_parquet(parts).select_columns(["id", "text"])
        kept = op.run(dataset).select_columns(["id"]).to_arrow_refs()
        kept_ids = {i for t in ray.get(kept) for i in t.column("id").to_pylist()}
    wall = time.perf_counter() - t0
    ray.shutdown()
    removed = sorted(set(all_ids) - kept_ids)
    work.mkdir(parents=True, exist_ok=True)
    (work / "removed.json").write_text(json.dumps(removed))
    return {"wall": wall, "cpu": cpu.seconds, "peak_rss": mem.peak_rss, "peak_name": mem.peak_name,
            "peak_total": mem.peak_total, "docs": len(all_ids), "kept": len(kept_ids)}  # fmt: skip


def main(argv: list[str]) -> int:
    root, workers, bands, rows = Path(argv[0]), int(argv[1]), int(argv[2]), int(argv[3])
    print("RESULT " + json.dumps(run(root, workers, bands, rows)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
