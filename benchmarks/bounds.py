"""Peaks of the bounds of issue 42 (items 5-8): hostile or huge inputs, this tree against an earlier revision.

    python benchmarks/bounds.py                       # every case, this tree and d13895f: a Markdown table
    python benchmarks/bounds.py --results benchmarks/results/bounds.md   # ... written there too
    python benchmarks/bounds.py --cases blank-zst-1g --sides after

Each case runs in a fresh process (``PYTHONPATH`` = the side's tree, so Ray's workers import it too), its
input made once in a work folder:

- ``blank-zst-16m``/``blank-zst-1g``: a ``.jsonl.zst`` of two documents around 16 MiB / 1 GiB of blank lines
  (a few kB to 32 kB), read by the documents source; ``blank-gz-1g``: the same gzipped (1 MB);
  ``blank-plain-256m``: 256 MiB of blank lines uncompressed (no bomb: the blank runs are read);
  ``empty-objects-gz``: 8 kB of gzip holding 2.8 M ``{}`` lines: rows and the bytes of their rejected Parquet;
- ``metadata``: a run (extracted, deduped, final) of a Parquet file of 20 rows with a 20 MB binary column:
  the largest process's peak RSS and the bytes of ``metadata`` in documents/final;
- ``line-50m``/``line-200m``: a run of one JSON line of 50 / 200 MB of text (``max_record_bytes`` 256 MB):
  the largest process's peak, what a record's bound costs;
- ``mix-1e12``: a run with ``mix.tokens: 1e12`` on 10 documents (stopped once the tree holds ``--cap-gb``);
- ``eval-1m``: the final phase with an eval set of 1M items (492 MB of JSON lines): the driver's peak.

Peak RSS is sampled every 0.2 s over the run's process tree (benchmarks/memory.py: the largest single
process, and the driver's own ``ru_maxrss``); a case that goes past ``--cap-gb`` in total is stopped there.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "bounds.md"
BEFORE = "d13895f"  # the revision issue 42 was filed at
TOKENIZER = ROOT / "samples" / "tokenizer" / "tokenizer.json"
WORDS = (
    "the river rose two metres overnight while residents of the valley moved to the school and the mayor said "
    "that engineers will inspect the dam on monday"
).split()
MiB = 1 << 20


# ---------------------------------------------------------------- inputs


def _prose(rng: random.Random, chars: int) -> str:
    out, n = [], 0
    while n < chars:
        sentence = " ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + ". "
        out.append(sentence)
        n += len(sentence)
    return "".join(out)[:chars]


def _doc(i: int, chars: int = 2000) -> bytes:
    return json.dumps({"id": f"d{i}", "text": _prose(random.Random(i), chars)}).encode() + b"\n"


def _zstd_stream(path: Path, parts) -> None:
    import zstandard

    with open(path, "wb") as f, zstandard.ZstdCompressor().stream_writer(f) as w:
        for part in parts:
            w.write(part)


def _blank(mib: int):
    yield _doc(0)
    for _ in range(mib):
        yield b"\n" * MiB
    yield _doc(1)


def make_input(case: str, work: Path) -> Path:
    """The case's input (made once)."""
    work.mkdir(parents=True, exist_ok=True)
    if case.startswith("blank-zst"):
        path = work / f"{case}.jsonl.zst"
        if not path.exists():
            _zstd_stream(path, _blank(16 if case.endswith("16m") else 1024))
    elif case == "blank-gz-1g":
        path = work / f"{case}.jsonl.gz"
        if not path.exists():
            with gzip.open(path, "wb", compresslevel=9) as f:
                for part in _blank(1024):
                    f.write(part)
    elif case == "blank-plain-256m":
        path = work / f"{case}.jsonl"
        if not path.exists():
            with open(path, "wb") as f:
                for part in _blank(256):
                    f.write(part)
    elif case == "empty-objects-gz":
        path = work / f"{case}.jsonl.gz"
        if not path.exists():
            path.write_bytes(gzip.compress(b"{}\n" * 2_800_000, compresslevel=9))
    elif case == "metadata":
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = work / "binary.parquet"
        if not path.exists():
            rng = random.Random(7)
            rows = 20
            table = pa.table(
                {
                    "id": [f"b{i}" for i in range(rows)],
                    "text": [_prose(rng, 3000) for _ in range(rows)],
                    "image": [rng.randbytes(20_000_000) for _ in range(rows)],
                }
            )
            pq.write_table(table, path, row_group_size=rows)
    elif case.startswith("line-"):
        mb = int(case.split("-")[1].rstrip("m"))
        path = work / f"{case}.jsonl"
        if not path.exists():
            rng = random.Random(3)
            with open(path, "wb") as f:
                f.write(b'{"id": "big", "text": "')
                block = _prose(rng, MiB).encode()
                for _ in range(mb * 1_000_000 // len(block)):
                    f.write(block)
                f.write(b'"}\n' + _doc(1))
    elif case == "mix-1e12":
        path = work / "ten.jsonl"
        if not path.exists():
            path.write_bytes(b"".join(_doc(i, 3000) for i in range(10)))
    elif case == "eval-1m":
        path = work / "eval-1m.jsonl"
        if not path.exists():
            rng = random.Random(11)
            letters = "abcdefghijklmnopqrstuvwxyz"
            vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(20000)]
            with open(path, "w") as f:
                for i in range(1_000_000):
                    f.write(json.dumps({"id": i, "text": " ".join(rng.choice(vocab) for _ in range(70))}) + "\n")
        docs = work / "docs.jsonl"
        if not docs.exists():
            docs.write_bytes(b"".join(_doc(i) for i in range(20)))
    else:
        raise SystemExit(f"unknown case {case}")
    return path


READER_CASES = ("blank-zst-16m", "blank-zst-1g", "blank-gz-1g", "blank-plain-256m", "empty-objects-gz")
RUN_CASES = ("metadata", "line-50m", "line-200m", "mix-1e12", "eval-1m")
CASES = READER_CASES + RUN_CASES


# ---------------------------------------------------------------- child: one case on one tree


class Watch:
    """The run's peaks (benchmarks/memory.py), and a stop once the tree holds more than ``cap`` bytes."""

    def __init__(self, cap: int):
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from memory import PeakMemory

        self.peak = PeakMemory(0.2)
        self.cap, self.capped_at = cap, None
        self._stop = threading.Event()

    def _guard(self, t0: float) -> None:
        while not self._stop.wait(0.2):
            if self.peak.peak_total > self.cap:
                self.capped_at = round(time.perf_counter() - t0, 1)
                report(
                    self.result(
                        {
                            "capped": f"stopped after {self.capped_at} s: the tree held more than "
                            f"{self.cap / 2**30:.0f} GB"
                        }
                    )
                )
                os.killpg(0, signal.SIGKILL)

    def __enter__(self) -> Watch:
        self.t0 = time.perf_counter()
        self.peak.__enter__()
        threading.Thread(target=self._guard, args=(self.t0,), daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.peak.__exit__(*exc)
        self.seconds = round(time.perf_counter() - self.t0, 1)

    def result(self, extra: dict) -> dict:
        return {
            "seconds": getattr(self, "seconds", round(time.perf_counter() - self.t0, 1)),
            "largest_process_mb": round(self.peak.peak_rss / MiB),
            "largest_process": self.peak.peak_name,
            "tree_mb": round(self.peak.peak_total / MiB),
            "driver_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            **extra,
        }


def report(result: dict) -> None:
    Path(os.environ["BOUNDS_RESULT"]).write_text(json.dumps(result))


def read_case(path: Path, watch: Watch) -> dict:
    # (imported here: the child's PYTHONPATH picks the tree it measures)
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from stages.sources.documents import DocumentsSource, DocumentStats

    stats, rows, rejected_bytes = DocumentStats(), 0, 0
    with watch, open(path, "rb") as f, tempfile.TemporaryDirectory() as tmp:
        writer = None
        for table in DocumentsSource().read(f, str(path), stats):
            rows += len(table)
            rejected = table.filter(pc.is_valid(table.column("reason")))
            if len(rejected):
                writer = writer or pq.ParquetWriter(Path(tmp, "rejected.parquet"), rejected.schema)
                writer.write_table(rejected)
        if writer is not None:
            writer.close()
            rejected_bytes = Path(tmp, "rejected.parquet").stat().st_size
    return watch.result(
        {
            "rows": rows,
            "documents": stats.documents,
            "rejected": dict(stats.rejected),
            "rejected_parquet_bytes": rejected_bytes,
            "file_bytes": path.stat().st_size,
        }
    )


def run_case(case: str, path: Path, out: Path, watch: Watch) -> dict:
    import pyarrow.parquet as pq

    from pipeline.config import parse_config
    from pipeline.runner import run

    filters = {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}
    off = {"card": {"enabled": False}, "shards": {"enabled": False}, "filters": filters, "langid": {"enabled": False}}
    config: dict = {"inputs": [str(path)], "output": str(out), **off}  # every document reaches documents/final
    if case.startswith("line-"):
        config["documents"] = {"max_record_bytes": 256 << 20}
    if case == "mix-1e12":
        config = {
            "sources": [{"name": "ten", "inputs": [str(path)]}],
            "output": str(out),
            "card": {"enabled": False},
            "mix": {"weights": {"ten": 1}, "tokens": 10**12},
            "dedup": {"enabled": False},
            "filters": filters,
            "langid": {"enabled": False},
            "shards": {"tokenize": {"tokenizer": str(TOKENIZER)}, "shuffle": {"groups": 2}},
        }
    if case == "eval-1m":
        config.update(inputs=[str(path.parent / "docs.jsonl")], decontam={"eval_sets": [str(path)]})
    with watch:
        try:
            record = run(parse_config(config), progress=False)
            status = record["status"]
        except Exception as e:  # a config error after the work started, or a crash: what the case found
            status = f"{type(e).__name__}: {str(e)[:300]}"
    extra = {"status": status}
    final = out / "documents" / "final"
    if final.exists() and case == "metadata":
        t = pq.read_table(final, columns=["metadata"])
        extra["final_documents"], extra["final_metadata_bytes"] = len(t), t.column("metadata").nbytes
    return watch.result(extra)


def child(case: str, work: Path, cap_gb: float) -> None:
    os.setpgid(0, 0)  # the cap stops the whole tree (Ray's workers too)
    path = make_input(case, work)
    watch = Watch(int(cap_gb * 2**30))
    if case in READER_CASES:
        result = read_case(path, watch)
    else:
        with tempfile.TemporaryDirectory(dir=work) as out:
            result = run_case(case, path, Path(out), watch)
    report(result)


# ---------------------------------------------------------------- driver


def archive(ref: str, into: Path) -> None:
    tar = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, "core", "stages", "pipeline", "classifiers"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(into, filter="data")


def side(case: str, tree: Path, work: Path, cap_gb: float, timeout: float) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        result_path = Path(f.name)
    env = {**os.environ, "PYTHONPATH": str(tree), "BOUNDS_RESULT": str(result_path)}
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        case,
        "--work",
        str(work),
        "--cap-gb",
        str(cap_gb),
    ]
    proc = subprocess.Popen(cmd, env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"timeout": f"not done after {timeout:.0f} s"}
    try:
        return json.loads(result_path.read_text())
    except (OSError, ValueError):
        tail = " / ".join(err.decode(errors="replace").strip().splitlines()[-3:])
        return {"failed": f"exit {proc.returncode}: {tail[-300:]}"}
    finally:
        result_path.unlink(missing_ok=True)


def describe(r: dict) -> str:
    if "failed" in r or "timeout" in r:
        return r.get("failed") or r["timeout"]
    keys = (
        "rows",
        "documents",
        "rejected",
        "rejected_parquet_bytes",
        "status",
        "final_documents",
        "final_metadata_bytes",
        "capped",
    )
    shown = ", ".join(f"{k} {r[k]}" for k in keys if k in r)
    return (
        f"{r['seconds']} s; largest process {r['largest_process_mb']:,} MB ({r['largest_process']}), driver "
        f"{r['driver_mb']:,} MB, tree {r['tree_mb']:,} MB; {shown}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="*", default=list(CASES), choices=CASES)
    ap.add_argument("--sides", nargs="*", default=["before", "after"], choices=["before", "after"])
    ap.add_argument("--ref", default=BEFORE)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "curate-bounds")
    ap.add_argument("--cap-gb", type=float, default=8.0, help="stop a case once its process tree holds this much")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--results", type=Path, help="also write the table here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.work, args.cap_gb)
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="bounds-ref-") as tmp:
        trees = {"after": ROOT}
        if "before" in args.sides:
            archive(args.ref, Path(tmp))
            trees["before"] = Path(tmp)
        for case in args.cases:
            for name in args.sides:
                print(f"{case} ({name}) ...", file=sys.stderr, flush=True)
                r = side(case, trees[name], args.work, args.cap_gb, args.timeout)
                rows.append((case, name if name == "after" else f"before ({args.ref})", describe(r)))
                print(f"  {rows[-1][2]}", file=sys.stderr, flush=True)
    text = (
        "\n".join(
            [
                "# Bounds of issue 42 (items 5-8): peaks before and after",
                "",
                f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · Python {sys.version.split()[0]} · "
                f"{os.cpu_count()} CPUs. Re-run: `python benchmarks/bounds.py --cases ...` (module docstring).",
                "",
                "| case | tree | result |",
                "| --- | --- | --- |",
                *[f"| {c} | {s} | {d.replace('|', '/')} |" for c, s, d in rows],
            ]
        )
        + "\n"
    )
    print(text)
    if args.results:
        args.results.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
