"""Fixed costs of a run: what ``curate run`` spends that does not grow with the input.

    python benchmarks/startup.py                       # this checkout; writes results/startup.md
    python benchmarks/startup.py --before 1d3bd25      # and a commit before a change, same runs interleaved

Two inputs, each a whole ``curate run jobs/sample.yaml`` as a user starts it (embedded Ray with
every CPU of the machine, Python start-up, Ray start and stop included):

- **one document**: a WARC with one page of samples/ that every phase keeps, so every phase runs
  and each phase's time is (almost) all fixed cost: Ray workers started, modules imported, models loaded, a Ray Data
  pipeline planned;
- **samples**: the README's first command (``samples/*.warc.gz``), the first run a user sees.

Each checkout runs in its own process tree with ``PYTHONPATH`` set to it (a ``--before`` commit is
checked out in a temporary git worktree); rounds interleave the checkouts so machine load hits
them alike, and the median of the rounds is reported.  Wall and CPU seconds cover the whole
process tree (Ray's daemons and workers), per-phase seconds come from the run's ``run.json``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import TreeUsage, byte_compile, machine_info, markdown_table, wait_or_kill  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "startup.md"
PHASES = ["extracted", "deduped", "final", "shards", "card"]
#: A page of samples/ that every phase keeps (docs.python.org, English, quality score 1.0).
ONE_PAGE = (
    "samples/CC-MAIN-20260112000513-20260112001755-00000.warc.gz",
    "<urn:uuid:90267111-7074-4047-9c9e-2417877a2f6c>",
)


def one_doc_warc(path: Path) -> Path:
    """A WARC holding one response of samples/ (copied by warcio, a third-party reader and writer)."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.warcwriter import WARCWriter

    src, record_id = ONE_PAGE
    with open(ROOT / src, "rb") as f, open(path, "wb") as out:
        w = WARCWriter(out, gzip=True)
        for rec in ArchiveIterator(f):
            if rec.rec_type == "response" and rec.rec_headers.get_header("WARC-Record-ID") == record_id:
                w.write_record(
                    w.create_warc_record(
                        rec.rec_headers.get_header("WARC-Target-URI"),
                        "response",
                        payload=io.BytesIO(rec.content_stream().read()),
                        http_headers=rec.http_headers,
                        warc_headers_dict={"WARC-Record-ID": record_id},
                    )
                )
                return path
    raise SystemExit(f"{record_id} is not in {src}")


def checkout(commit: str, tmp: Path) -> Path:
    """``commit`` in a temporary worktree (removed at the end)."""
    where = tmp / f"worktree-{commit}"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), commit], check=True, capture_output=True
    )
    return where


def run_once(repo: Path, inputs: list[str] | None, out: Path, timeout_s: float) -> dict:
    """One ``curate run jobs/sample.yaml`` from ``repo``; wall, tree CPU and run.json's phase seconds."""
    cmd = [sys.executable, "-m", "pipeline.cli", "run", "jobs/sample.yaml", "-o", str(out), "--no-progress"]
    for f in inputs or []:
        cmd += ["-i", f]
    env = {**os.environ, "PYTHONPATH": str(repo), "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    byte_compile(repo)
    t0 = time.perf_counter()
    with open(out.with_suffix(".log"), "wb") as log:
        proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        with TreeUsage(proc.pid, interval_s=0.1) as usage:
            rc = wait_or_kill(proc, timeout_s)
    wall = time.perf_counter() - t0
    if rc != 0:
        tail = " / ".join(out.with_suffix(".log").read_text(errors="replace").strip().splitlines()[-3:])
        return {"failed": f"exit {rc}: {tail[-300:]}"}
    record = json.loads((out / "run.json").read_text())
    phases = {p: record["phases"][p]["seconds"] for p in PHASES if p in record["phases"]}
    kept = record["phases"].get("shards", {}).get("documents")
    shutil.rmtree(out, ignore_errors=True)
    return {
        "wall_s": wall,
        "cpu_s": usage.cpu_s,
        "pss_mb": usage.peak_mb,
        "phases": phases,
        "outside_s": wall - sum(phases.values()),
        "documents": kept,
    }


def median_run(runs: list[dict]) -> dict:
    ok = [r for r in runs if "failed" not in r]
    if not ok:
        return runs[-1]
    out = {k: statistics.median(r[k] for r in ok) for k in ("wall_s", "cpu_s", "pss_mb", "outside_s")}
    out["phases"] = {p: statistics.median(r["phases"].get(p, 0.0) for r in ok) for p in PHASES}
    out["documents"] = ok[0]["documents"]
    out["rounds"] = len(ok)
    return out


def render(machine: dict, args, results: dict[str, dict[str, dict]]) -> str:
    headers = [
        "input",
        "checkout",
        "wall s",
        "CPU s",
        "peak tree PSS MB",
        *PHASES,
        "outside the phases",
        "docs in shards",
    ]
    rows = []
    for inp, per in results.items():
        for name, r in per.items():
            if "failed" in r:
                rows.append([inp, name, f"failed: {r['failed']}", *[""] * (len(headers) - 3)])
                continue
            rows.append(
                [
                    inp,
                    name,
                    f"{r['wall_s']:.1f}",
                    f"{r['cpu_s']:.1f}",
                    f"{r['pss_mb']:,.0f}",
                    *[f"{r['phases'][p]:.2f}" for p in PHASES],
                    f"{r['outside_s']:.1f}",
                    r["documents"],
                ]
            )
    cmd = (
        "python benchmarks/startup.py"
        + (f" --before {args.before}" if args.before else "")
        + f" --rounds {args.rounds}"
    )
    lines = [
        "# Fixed costs of a run (start-up, per phase)",
        "",
        f"- {machine['date']} · {machine['nproc']} CPUs ({machine['cpu']}) "
        f"· {machine['mem_gib']} GiB · Python {machine['python']}",
        f"- load average at the start {list(machine['load_avg'])}, at the end {list(os.getloadavg())}",
        f"- command: `{cmd}`; median of {args.rounds} interleaved rounds",
        "- each row: `curate run jobs/sample.yaml` (embedded Ray, every CPU), wall from spawn to exit; CPU s and "
        "peak PSS over the whole process tree; phase seconds from `run.json`; *outside the phases*: Python "
        "start-up and imports, Ray start and stop, planning",
        "- **one document**: a WARC with one page of `samples/` that every phase keeps, so the phase times are their "
        "fixed costs; **samples**: "
        "`samples/*.warc.gz`, the README's first command",
        "",
        markdown_table(headers, rows, "ll" + "r" * (len(headers) - 2)),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", help="a commit to measure beside this checkout (in a temporary worktree)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--inputs", nargs="+", default=["one document", "samples"], choices=["one document", "samples"])
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", default=str(RESULTS), help="markdown output ('-': print only)")
    args = ap.parse_args()

    machine = machine_info()
    tmp = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        repos = {"this checkout": ROOT}
        if args.before:
            repos = {f"before ({args.before})": checkout(args.before, tmp), "after (this checkout)": ROOT}
        warc = one_doc_warc(tmp / "one.warc.gz")
        inputs = {"one document": [str(warc)], "samples": None}
        runs: dict[str, dict[str, list]] = {i: {n: [] for n in repos} for i in args.inputs}
        for rnd in range(args.rounds):
            for inp in args.inputs:
                for name, repo in repos.items():
                    r = run_once(
                        repo, inputs[inp], tmp / f"out-{rnd}-{len(runs[inp][name])}-{abs(hash(name))}", args.timeout
                    )
                    runs[inp][name].append(r)
                    print(
                        f"round {rnd + 1} {inp} {name}: "
                        + (r.get("failed") or f"{r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} CPU s"),
                        flush=True,
                    )
        results = {inp: {name: median_run(rs) for name, rs in per.items()} for inp, per in runs.items()}
        text = render(machine, args, results)
        print(text)
        if args.out != "-":
            Path(args.out).write_text(text)
            print(f"written: {args.out}")
    finally:
        if args.before:
            for repo in repos.values():
                if repo != ROOT:
                    subprocess.run(
                        ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(repo)], capture_output=True
                    )
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
