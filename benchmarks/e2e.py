"""End to end: our whole pipeline vs the closest DataTrove pipeline, same WARCs, one core each.

    python benchmarks/e2e.py            # samples/ + the extraction dev set, twice (~3,900 docs); writes results/e2e.md
    python benchmarks/e2e.py --quick    # one samples file + 100 dev-set pages, twice (~600 docs); prints only
    python benchmarks/e2e.py --parallel --scale 4   # both at once on two CPUs; then 4 copies (~7,700 docs) too

Corpus (generated into a temp folder, not timed): every record of ``samples/*.warc.gz`` and of the
shared extraction dev set, then ``--copies - 1`` more copies of every response record with a new
WARC-Record-ID and URL (``?e2e-copy=N``): exact duplicates both systems' dedup must remove.  Every
response carries ``WARC-Identified-Payload-Type``, as Common Crawl's do.

Each system runs as whole processes pinned to one CPU (math libraries single-threaded), measured
from outside: wall seconds from spawn to exit (Python start-up and imports included), CPU seconds
and peak PSS of the whole process tree (Ray's daemons and workers; DataTrove's extraction sandbox):

- ours: ``curate run jobs/sample.yaml -i CORPUS -o OUT`` with ``ray.num_cpus: 1`` (embedded Ray,
  started by the run and counted): extracted, deduped, final, shards, card;
- DataTrove 0.10 (benchmark-only extra), FineWeb's pipeline: WarcReader -> URLFilter -> Trafilatura
  -> LanguageFilter -> Gopher repetition / quality -> C4 -> FineWeb -> JsonlWriter, its 4-stage MinHash
  (signatures, buckets, clusters, filter) with our shingles, bands and rows, then DocumentTokenizer with
  our tokenizer.json; ``LocalPipelineExecutor(tasks=1, workers=1)`` (buckets: one task per band);
- NeMo Curator 1.4 (``--systems nemo``; its own venv, ``--nemo-python``, default ``.venv-nemo``): its WARC
  iterator and Common Crawl HTML extractor, its English heuristic filter set, JsonlWriter, on an embedded
  Ray with one CPU (benchmarks/e2e_nemo.py says which stages and why its dedup cannot run here: GPU-only);
- Ray's fixed cost alone: ``init_ray`` with one CPU, one task, one Ray Data map, shutdown.

Then the kept documents of both are compared record by record, and every document one system kept
and the other did not is attributed to the reason the other removed it (our ``rejected/`` Parquet;
DataTrove's drops recorded by pass-through taps between its steps and its filters' exclusion writers).
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from phase1 import DEVSET, HTML_TYPES, SAMPLES, _step_name, fmt, job_config, system_spec, warc_head  # noqa: E402

from _common import (  # noqa: E402
    SINGLE_THREAD_ENV,
    TreeUsage,
    byte_compile,
    child_report,
    child_setup,
    machine_info,
    markdown_table,
    pick_cpu,
    pin_to_cpu,
    wait_or_kill,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "e2e.md"
RESULTS_WCXB = ROOT / "benchmarks" / "results" / "e2e_wcxb.md"
WCXB = ROOT.parent / "wcxb"  # a checkout of WCXB's dev split (benchmarks/wcxb.py)
QUICK_DEVSET_PAGES = 100
COPY_MARK = re.compile(r"[?&]e2e-copy=\d+$")
ORDER = ["ours", "datatrove", "nemo", "ray"]  # run order within a round
NEMO_PYTHON = ROOT / ".venv-nemo" / "bin" / "python"
SYSTEM_LABEL = {"ours": "ours", "datatrove": "datatrove", "nemo": "NeMo Curator 1.4 (no dedup: GPU-only)"}
NEMO = {"python": str(NEMO_PYTHON), "executor": "ray_data"}  # main() sets them from --nemo-python / --nemo-executor


# ---------------------------------------------------------------- corpus


def wcxb_warcs(root: Path, folder: Path, quick: bool, files: int = 8) -> list[Path]:
    """WCXB's dev split (1,497 real pages of seven types, 272 KB of HTML on average) as WARC responses, one gzip
    member per record as Common Crawl writes them: the page's own bytes, its URL, ``WARC-Identified-Payload-Type:
    text/html``; in ``files`` files, so that several workers have units (in --quick: the first 100 pages)."""
    dev = root / "dev"
    pages = sorted((dev / "ground-truth").glob("*.json"))[: QUICK_DEVSET_PAGES if quick else None]
    if not pages:
        raise SystemExit(
            f"no WCXB dev split under {root} (dev/ground-truth/*.json): see benchmarks/wcxb.py for a checkout"
        )
    folder.mkdir(parents=True, exist_ok=True)
    out = [folder / f"wcxb-dev-{i:02d}.warc.gz" for i in range(files)]
    handles = [open(f, "wb") for f in out]
    try:
        for n, truth in enumerate(pages):
            url = json.loads(truth.read_text(encoding="utf-8")).get("url") or f"https://wcxb.invalid/{truth.stem}"
            html = gzip.decompress((dev / "html" / f"{truth.stem}.html.gz").read_bytes())
            block = (
                f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(html)}\r\n\r\n".encode() + html
            )
            headers = {
                "WARC-Type": "response",
                "WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, 'wcxb-dev/' + truth.stem)}>",
                "WARC-Date": "2026-01-12T00:00:00Z",
                "WARC-Target-URI": url,
                "WARC-Identified-Payload-Type": "text/html",
                "Content-Type": "application/http; msgtype=response",
                "Content-Length": str(len(block)),
            }
            head = "WARC/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
            handles[n % files].write(
                gzip.compress(head.encode("utf-8") + block + b"\r\n\r\n", compresslevel=6, mtime=0)
            )
    finally:
        for h in handles:
            h.close()
    return out


def source_files(args, tmp: Path) -> list[Path]:
    """samples/ and the dev set (in --quick: one samples file and the dev set's first pages); or WCXB's dev split."""
    if args.corpus == "wcxb":
        return wcxb_warcs(Path(args.wcxb), tmp / "wcxb", args.quick)
    samples = [Path(p) for p in sorted(glob.glob(str(ROOT / SAMPLES)))][: 1 if args.quick else None]
    devset = Path(args.devset)
    if not devset.is_file():
        return samples
    if args.quick:
        subset = tmp / f"devset-first{QUICK_DEVSET_PAGES}.warc.gz"
        warc_head(devset, subset, QUICK_DEVSET_PAGES)
        devset = subset
    return [*samples, devset]


def http_mime(block: bytes) -> str:
    """The media type of an HTTP response's Content-Type header ('' if none)."""
    head = block.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    m = re.search(r"(?im)^content-type:\s*([^;\r\n]+)", head)
    return m.group(1).strip().lower() if m else ""


def copy_headers(headers: list[tuple[str, str]], n: int) -> list[tuple[str, str]]:
    """Copy ``n`` of a record: a stable new record id and a URL marked with the copy number."""
    out = []
    for k, v in headers:
        if k == "WARC-Record-ID":
            v = f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'{v}#e2e-copy={n}')}>"
        elif k == "WARC-Target-URI":
            v = f"{v}{'&' if '?' in v else '?'}e2e-copy={n}"
        out.append((k, v))
    return out


def write_copy(src: Path, dst: Path, n: int, docs: list[dict]) -> None:
    """Copy 0 rewrites every record; later copies only the responses, with new ids and URLs.

    One gzip member per record, as Common Crawl writes them; a response without
    WARC-Identified-Payload-Type gets it from its HTTP Content-Type (DataTrove keeps only HTML by it).
    """
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    with open(dst, "wb") as out:
        for rec in ArchiveIterator(
            str(src), parse_http=False, fsspec_args=False, record_types=WarcRecordType.any_type
        ):
            is_response = rec.headers.get("WARC-Type") == "response"
            if n and not is_response:
                continue
            headers, block = list(rec.headers.items()), rec.reader.read()
            if is_response and not rec.headers.get("WARC-Identified-Payload-Type"):
                headers.insert(-1, ("WARC-Identified-Payload-Type", http_mime(block)))
            headers = copy_headers(headers, n) if n else headers
            head = rec.headers.status_line + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
            out.write(gzip.compress(head.encode("utf-8") + block + b"\r\n\r\n", compresslevel=6, mtime=0))
            if is_response:
                h = dict(headers)
                ptype = h.get("WARC-Identified-Payload-Type", "").split(";")[0].strip().lower()
                docs.append(
                    {
                        "id": h["WARC-Record-ID"].strip("<>"),
                        "url": h.get("WARC-Target-URI", ""),
                        "page": COPY_MARK.sub("", h.get("WARC-Target-URI", "")),
                        "html": ptype in HTML_TYPES,
                    }
                )


def build_corpus(args, tmp: Path) -> dict:
    folder = tmp / "corpus"
    folder.mkdir()
    docs: list[dict] = []
    files = []
    for n in range(args.copies):
        for src in source_files(args, tmp):
            dst = folder / f"{src.name.removesuffix('.warc.gz')}-copy{n}.warc.gz"
            write_copy(src, dst, n, docs)
            files.append(str(dst))
    urls = Counter(d["url"] for d in docs)
    return {
        "files": files,
        "docs": docs,
        "html": sum(d["html"] for d in docs),
        "responses": len(docs),
        "repeated_urls": sum(c > 1 for c in urls.values()),
        "bytes": sum(os.path.getsize(f) for f in files),
    }


# ---------------------------------------------------------------- measuring a process tree


def run_measured(
    argv: list[str], cpu: int | None, log_path: Path, timeout_s: float, env: dict | None = None, alone: bool = True
) -> dict:
    """Run argv pinned to ``cpu``; wall, CPU and peak PSS of its whole process tree, from outside.

    CPU seconds: the sampled tree, or what the reaped children report if more (only when ``alone``:
    with two systems running at once this process's RUSAGE_CHILDREN mixes them).
    """
    env = {**os.environ, **SINGLE_THREAD_ENV, "PYTHONPATH": "", **(env or {})}
    byte_compile()
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT, start_new_session=True,
                                preexec_fn=lambda: pin_to_cpu(cpu))  # fmt: skip
        with TreeUsage(proc.pid) as usage:
            rc = wait_or_kill(proc, timeout_s)
    wall = time.perf_counter() - t0
    children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    reaped = (children1.ru_utime + children1.ru_stime) - (children0.ru_utime + children0.ru_stime)
    out = {
        "wall_s": wall,
        "cpu_s": max(usage.cpu_s, reaped if alone else 0.0),
        "tree_pss_mb": usage.peak_mb,
        "mean_load": usage.mean_load,
        "memory": usage.roles(),
    }
    if rc != 0:
        tail = " / ".join(log_path.read_text(errors="replace").strip().splitlines()[-3:])
        out["failed"] = f"exit {rc}: {tail[-300:]}".replace("|", "/")
    return out


def child_argv(kind: str, spec_path: Path) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", kind, str(spec_path)]


# ---------------------------------------------------------------- ours


def run_ours(corpus: dict, tmp: Path, cpu: int | None, timeout_s: float, alone: bool = True) -> dict:
    """`curate run` on every phase, jobs/sample.yaml with ray.num_cpus: 1, inputs and output overridden."""
    import yaml

    job = job_config()
    job["ray"] = {**(job.get("ray") or {}), "num_cpus": 1}
    config = tmp / "e2e-job.yaml"
    config.write_text(yaml.safe_dump(job, sort_keys=False))
    out = tmp / "ours"
    shutil.rmtree(out, ignore_errors=True)
    inputs = [a for f in corpus["files"] for a in ("-i", f)]
    # `python -m pipeline.cli` is `curate`; the bench venv's `curate` script starts the test venv's Python
    argv = [sys.executable, "-m", "pipeline.cli", "run", str(config), *inputs, "-o", str(out), "--no-progress", "-v"]
    for attempt in range(3):  # ray.init gives its raylet a fixed 30 s to register: a busy machine can miss it
        r = run_measured(argv, cpu, tmp / "ours.log", timeout_s, alone=alone)
        if "timed out during startup" not in r.get("failed", ""):
            break
        print(f"ours: Ray did not start in time (attempt {attempt + 1}); again", file=sys.stderr, flush=True)
        shutil.rmtree(out, ignore_errors=True)
    r["ray_start_retries"] = attempt
    r["cmd"] = "curate run jobs/sample.yaml (+ ray.num_cpus: 1) -i TMP/corpus/*.warc.gz -o TMP/ours --no-progress -v"
    if r.get("failed"):
        return r
    record = json.loads((out / "run.json").read_text())
    return {**r, **ours_outcome(out, record)}


def ours_outcome(out: Path, record: dict) -> dict:
    import pyarrow.parquet as pq

    phases = record["phases"]
    language = {}
    for f in sorted(glob.glob(str(out / "documents" / "final" / "*.parquet"))):
        t = pq.read_table(f, columns=["id", "language"])
        language.update(zip(t.column("id").to_pylist(), t.column("language").to_pylist(), strict=False))
    removed = {}
    for f in sorted(glob.glob(str(out / "rejected" / "*" / "*.parquet"))):
        t = pq.read_table(f, columns=["id", "reason"])
        phase = Path(f).parent.name
        removed.update(
            {
                i: f"{phase}: {r}"
                for i, r in zip(t.column("id").to_pylist(), t.column("reason").to_pylist(), strict=False)
            }
        )
    return {
        "kept_ids": list(language),
        "language": language,
        "removed": removed,
        "kept": phases["shards"]["documents"] if "shards" in phases else len(language),
        "tokens": phases.get("shards", {}).get("tokens"),
        "phases": {n: phases[n] for n in record["phases_run"]},
    }


# ---------------------------------------------------------------- DataTrove (child process)


DROPS: dict[str, str] = {}  # doc id -> "step: reason"; module-level: the executor deep-copies its steps


class DropLog:
    """A stand-in exclusion writer: records why a filter dropped each document, writes nothing to disk."""

    def __init__(self, step: str):
        self.step = step

    def __enter__(self) -> DropLog:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def write(self, doc, rank: int = 0, **kwargs) -> None:
        DROPS[doc.id] = f"{self.step}: {doc.metadata.get('filter_reason') or 'dropped'}"


def tap(name: str, seen: dict[str, list]):
    """A pass-through step that notes the ids reaching it (DataTrove drops documents silently otherwise)."""
    seen[name] = []

    def step(data, rank: int = 0, world_size: int = 1):
        for doc in data:
            seen[name].append(doc.id)
            yield doc

    return step


def url_filter():
    """URLFilter with what ours uses in jobs/sample.yaml: the bundled word lists, no domain or URL blocklist."""
    from datatrove.pipeline.filters import URLFilter
    from datatrove.utils._import_utils import ASSETS_PATH
    from tldextract import TLDExtract

    def words(name: str) -> list[str]:
        return [w for w in Path(ASSETS_PATH, name).read_text().splitlines() if w.strip()]

    f = URLFilter(use_integrated_lists=False, banned_words=words("banned_words.txt"),
                  banned_subwords=words("banned_subwords.txt"), soft_banned_words=words("soft_banned_words.txt"),
                  exclusion_writer=DropLog("url"))  # fmt: skip
    f.tldextractor = TLDExtract(suffix_list_urls=())  # offline: the bundled public suffix list
    return f


def datatrove_stages(spec: dict, tmp: Path, seen: dict) -> list[tuple[str, list, int]]:
    """FineWeb's pipeline as (name, steps, tasks) executor runs."""
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
    )
    from datatrove.pipeline.readers import JsonlReader, WarcReader
    from datatrove.pipeline.tokens import DocumentTokenizer
    from datatrove.pipeline.writers import JsonlWriter
    from datatrove.utils.hashing import HashConfig

    folder = os.path.commonpath([os.path.dirname(f) for f in spec["files"]])
    paths = tmp / "paths.txt"
    paths.write_text("".join(os.path.relpath(f, folder) + "\n" for f in spec["files"]))
    bands, rows = spec["bands_rows"]
    # Same 5-gram shingles, bands and rows as ours; sha1 64-bit: its xxhash path fails with xxhash 4 (dedup_scale.py).
    mh = MinhashConfig(
        n_grams=5, num_buckets=bands, hashes_per_bucket=rows, hash_config=HashConfig(hash_fc="sha1", precision=64)
    )
    w = {k: str(tmp / k) for k in ("filtered", "sigs", "buckets", "remove_ids", "tokens")}
    first = [
        WarcReader(folder, paths_file=str(paths)), tap("read", seen),
        url_filter(), tap("url", seen),
        Trafilatura(favour_precision=True, timeout=1), tap("extract", seen),
        LanguageFilter(languages=spec["languages"], language_threshold=spec["language_threshold"],
                       exclusion_writer=DropLog("language")), tap("language", seen),
        GopherRepetitionFilter(exclusion_writer=DropLog("gopher_repetition")), tap("gopher_repetition", seen),
        GopherQualityFilter(exclusion_writer=DropLog("gopher_quality")), tap("gopher_quality", seen),
        C4QualityFilter(filter_no_terminal_punct=False, exclusion_writer=DropLog("c4")), tap("c4", seen),
        FineWebQualityFilter(exclusion_writer=DropLog("fineweb")), tap("fineweb", seen),
        JsonlWriter(w["filtered"]),
    ]  # fmt: skip
    return [
        ("filter", first, 1),
        ("minhash signatures", [JsonlReader(w["filtered"]),
                                MinhashDedupSignature(output_folder=w["sigs"], config=mh)], 1),
        ("minhash buckets", [MinhashDedupBuckets(input_folder=w["sigs"],
                                                 output_folder=w["buckets"], config=mh)], bands),
        ("minhash clusters", [MinhashDedupCluster(input_folder=w["buckets"],
                                                  output_folder=w["remove_ids"], config=mh)], 1),
        ("dedup filter + tokenize", [
            JsonlReader(w["filtered"]),
            MinhashDedupFilter(input_folder=w["remove_ids"], exclusion_writer=DropLog("minhash")), tap("dedup", seen),
            DocumentTokenizer(w["tokens"], tokenizer_name_or_path=spec["tokenizer"], eos_token=spec["eos"]),
        ], 1),
    ]  # fmt: skip


def datatrove_fate(seen: dict[str, list], drops: dict) -> dict[str, str]:
    """Every document WarcReader read -> the step that removed it (with the filter's reason), or 'kept'."""
    order = [k for k in seen if k != "read"]
    survivors = {k: set(v) for k, v in seen.items()}
    fate = {}
    for doc_id in seen["read"]:
        gone = next((k for k in order if doc_id not in survivors[k]), None)
        fate[doc_id.strip("<>")] = "kept" if gone is None else drops.get(doc_id, f"{gone}: dropped")
    return fate


def child_datatrove(spec: dict, tmp: Path) -> dict:
    import datatrove.utils.lid as dt_lid
    from datatrove.executor import LocalPipelineExecutor

    from classifiers.langid import bundled_model_path

    # Offline: its LanguageFilter would download lid.176.bin; give it the lid.176.ftz we ship (BASELINES.md).
    dt_lid.cached_asset_path_or_download = lambda *a, **k: bundled_model_path()
    seen: dict[str, list] = {}
    stage_seconds, step_seconds, stats = {}, {}, {}
    for i, (name, steps, tasks) in enumerate(datatrove_stages(spec, tmp, seen)):
        logs = tmp / f"logs-{i}"
        t0 = time.perf_counter()
        LocalPipelineExecutor(steps, tasks=tasks, workers=1, logging_dir=str(logs), skip_completed=False).run()
        stage_seconds[name] = time.perf_counter() - t0
        for s in json.loads((logs / "stats.json").read_text()):
            step = _step_name(s["name"])
            stats[step] = s.get("stats", {})
            if i == 0:
                step_seconds[step] = s["time_stats"]["total"]
    tokens = next((s["tokens"] for s in stats.values() if "tokens" in s), {})  # the tokenizer's step is named "Writer"
    return {
        "fate": datatrove_fate(seen, DROPS),
        "kept": len(seen["dedup"]),
        "tokens": tokens.get("total") if isinstance(tokens, dict) else tokens,
        "stage_seconds": stage_seconds,
        "step_seconds": step_seconds,
        "extract_timeouts": next((v.get("timeout", 0) for k, v in stats.items() if "Trafilatura" in k), 0),
        "stat_keys": sorted(stats),
    }


def _eos_token(config) -> str | None:
    """The EOS token string our run uses (``auto``: the tokenizer's own), for DataTrove's tokenizer."""
    from stages.tokenizers import FROM_MODEL, load

    eos = config.shards.tokenize.eos
    if eos != FROM_MODEL:
        return eos
    own = load(str(ROOT / config.shards.tokenize.tokenizer)).defaults.eos
    return own.token if own is not None else None


def run_datatrove(corpus: dict, job: dict, tmp: Path, cpu: int | None, timeout_s: float, alone: bool = True) -> dict:
    from pipeline.config import parse_config
    from stages.dedup import lsh

    config = parse_config({**job, "inputs": ["unused"], "output": "unused"})
    run_dir = Path(tempfile.mkdtemp(prefix="datatrove-", dir=tmp))
    spec = {**system_spec({"kind": "datatrove"}, job), "files": corpus["files"], "tmp": str(run_dir),
            "bands_rows": list(lsh.bands_rows(config.dedup.minhash)),
            "tokenizer": str(ROOT / config.shards.tokenize.tokenizer), "eos": _eos_token(config)}  # fmt: skip
    spec_path = run_dir / "spec.json"
    spec_path.write_text(json.dumps(spec))
    result_path = run_dir / "result.json"
    env = {"BENCH_RESULT": str(result_path), "BENCH_CPU": "" if cpu is None else str(cpu)}
    r = run_measured(child_argv("datatrove", spec_path), cpu, run_dir / "child.log", timeout_s, env, alone)
    r["spec"] = spec
    if not r.get("failed"):
        r.update(json.loads(result_path.read_text()))
    return r


# ---------------------------------------------------------------- NeMo Curator (child process, its own venv)


def run_nemo(corpus: dict, tmp: Path, cpu: int | None, timeout_s: float, python: str, executor: str) -> dict:
    """benchmarks/e2e_nemo.py with NeMo Curator's interpreter, measured from outside like the others."""
    if not Path(python).exists():
        return {"failed": f"no NeMo Curator venv at {python} (see benchmarks/README.md)"}
    run_dir = Path(tempfile.mkdtemp(prefix="nemo-", dir=tmp))
    spec_path = run_dir / "spec.json"
    spec_path.write_text(json.dumps({"files": corpus["files"], "executor": executor}))
    result_path = run_dir / "result.json"
    env = {"BENCH_RESULT": str(result_path), "BENCH_CPU": "" if cpu is None else str(cpu)}
    argv = [python, str(Path(__file__).resolve().parent / "e2e_nemo.py"), str(spec_path)]
    r = run_measured(argv, cpu, run_dir / "child.log", timeout_s, env)
    if not r.get("failed"):
        r.update(json.loads(result_path.read_text()))
    return r


# ---------------------------------------------------------------- Ray's fixed cost (child process)


def child_ray(spec: dict, tmp: Path) -> dict:
    """Ray start-up as a run pays it: init with one CPU, a first task, a first Ray Data map, shutdown."""
    t = [time.perf_counter()]
    import ray

    from pipeline.distribute import init_ray

    t.append(time.perf_counter())
    init_ray(1)
    t.append(time.perf_counter())
    ray.get(ray.remote(lambda: 1).remote())
    t.append(time.perf_counter())
    ray.data.range(4).map_batches(lambda b: b, batch_size=None).materialize()
    t.append(time.perf_counter())
    ray.shutdown()
    t.append(time.perf_counter())
    names = ["import", "ray.init", "first task", "first Ray Data map", "shutdown"]
    return {"seconds": {n: b - a for n, a, b in zip(names, t, t[1:], strict=False)}}


def run_ray(tmp: Path, cpu: int | None, timeout_s: float) -> dict:
    run_dir = Path(tempfile.mkdtemp(prefix="ray-", dir=tmp))
    result_path = run_dir / "result.json"
    env = {"BENCH_RESULT": str(result_path), "BENCH_CPU": "" if cpu is None else str(cpu)}
    (run_dir / "spec.json").write_text("{}")
    r = run_measured(child_argv("ray", run_dir / "spec.json"), cpu, run_dir / "child.log", timeout_s, env)
    if not r.get("failed"):
        r.update(json.loads(result_path.read_text()))
    return r


def child_main(kind: str, spec_path: str) -> None:
    child_setup()
    spec = json.loads(Path(spec_path).read_text())
    run = {"datatrove": child_datatrove, "ray": child_ray}[kind]
    child_report(run(spec, Path(spec_path).parent))


# ---------------------------------------------------------------- comparison


def overlap(corpus: dict, ours: dict, dt: dict) -> dict:
    """Kept documents of both systems, record by record, and why each one-sided document was removed."""
    docs = {d["id"]: d for d in corpus["docs"]}
    kept_o, kept_d = set(ours["kept_ids"]), {i for i, f in dt["fate"].items() if f == "kept"}
    pages_o, pages_d = {docs[i]["page"] for i in kept_o}, {docs[i]["page"] for i in kept_d}

    def dt_reason(i: str) -> str:
        why = dt["fate"].get(i, "reader: not HTML or undecodable")
        dup = why.startswith(("minhash", "dedup")) and docs[i]["page"] in pages_d
        return why + (" (another copy of the page kept)" if dup else "")

    def our_reason(i: str) -> str:
        why = ours["removed"].get(i, "not recorded")
        dup = "duplicate" in why and docs[i]["page"] in pages_o
        return why + (" (another copy of the page kept)" if dup else "")

    only_o, only_d = kept_o - kept_d, kept_d - kept_o
    html = {i for i, d in docs.items() if d["html"]}
    lang = ours.get("language", {})
    return {
        "only_ours_lang": {why: Counter(lang.get(i) for i in only_o if dt_reason(i) == why)
                           for why, _ in Counter(dt_reason(i) for i in only_o).most_common(4)},
        "kept_lang": {"ours": Counter(lang.get(i) for i in kept_o),
                      "both": Counter(lang.get(i) for i in kept_o & kept_d)},
        "both": len(kept_o & kept_d), "only_ours": len(only_o), "only_dt": len(only_d),
        "pages_both": len(pages_o & pages_d),
        "pages_only_ours": len(pages_o - pages_d), "pages_only_dt": len(pages_d - pages_o),
        "only_ours_by": Counter(dt_reason(i) for i in only_o), "only_dt_by": Counter(our_reason(i) for i in only_d),
        "neither": len(html - kept_o - kept_d),
        "removed_ours_by": Counter(ours["removed"].get(i, "kept") for i in html),
        "removed_dt_by": Counter(dt["fate"].get(i, "reader: not HTML or undecodable") for i in html),
    }  # fmt: skip


# ---------------------------------------------------------------- report


def results_table(docs: int, results: dict) -> str:
    base = results.get("datatrove")

    def rate(r: dict | None, key: str) -> float | None:
        return docs / r[key] if r and not r.get("failed") else None

    rows = []
    for name in ("ours", "datatrove", "nemo"):
        r = results.get(name)
        if r is None:
            continue
        if r.get("failed"):
            rows.append([f"**{SYSTEM_LABEL[name]}**", docs, *[""] * 10, f"failed: {r['failed']}"])
            continue
        ratio = [f"{rate(r, k) / rate(base, k):.2f}×" if rate(base, k) else "–" for k in ("wall_s", "cpu_s")]
        rows.append([f"**{SYSTEM_LABEL[name]}**", docs, r["kept"],
        f"{r['tokens']:,}" if r.get("tokens") else "–", fmt(r["wall_s"]),
                     fmt(rate(r, "wall_s"), 2), fmt(r["cpu_s"]), fmt(rate(r, "cpu_s"), 2), f"**{ratio[0]}**", ratio[1],
                     fmt(r["tree_pss_mb"], 0), fmt(r["mean_load"], 1)])  # fmt: skip
    headers = ["system", "docs", "kept docs", "tokens", "wall s", "docs/s (1 core)", "CPU s", "docs/CPU-s",
               "× DataTrove (wall)", "× DataTrove (CPU)", "peak tree PSS MB", "load during run"]  # fmt: skip
    return markdown_table(headers, rows)


def ours_profile(r: dict) -> str:
    """Our wall time by phase (run.json), with each phase's own split."""
    rows = []
    for name, p in r["phases"].items():
        split = p.get("stage_seconds") or p.get("step_seconds") or {}
        detail = " · ".join(f"{k} {v:.2f}" for k, v in sorted(split.items(), key=lambda kv: -kv[1]))
        rows.append([name, fmt(p["seconds"], 2), detail])
    outside = r["wall_s"] - sum(p["seconds"] for p in r["phases"].values())
    rows.append(
        ["outside the phases", fmt(outside, 2), "Python start-up and imports, Ray start and stop, planning, run.json"]
    )
    return markdown_table(
        ["phase (ours)", "seconds", "split (phase 1: stage seconds; dedup: step seconds; final: stages)"], rows, "lrl"
    )


def datatrove_profile(r: dict) -> str:
    rows = []
    for name, s in r["stage_seconds"].items():
        detail = " · ".join(f"{k} {v:.2f}" for k, v in r["step_seconds"].items()) if name == "filter" else ""
        rows.append([name, fmt(s, 2), detail])
    outside = r["wall_s"] - sum(r["stage_seconds"].values())
    rows.append(["outside the stages", fmt(outside, 2), "Python start-up and imports"])
    return markdown_table(["stage (DataTrove)", "seconds", "its step timers"], rows, "lrl")


#: The memory targets of issue 25: a worker process at most this many times DataTrove's task process, the whole
#: process tree at most TREE_MAX times DataTrove's, the driver under DRIVER_MAX_RSS_MB whatever the input.
WORKER_MAX, TREE_MAX, DRIVER_MAX_RSS_MB = 1.5, 3.0, 500


def memory_section(results: dict) -> list[str]:
    """Where each system's memory is (PSS by role when its tree peaked, the largest process of each role), and
    ours against the targets."""
    ok = {n: r for n, r in results.items() if n in SYSTEM_LABEL and not r.get("failed") and r.get("memory")}
    if "ours" not in ok:
        return []
    rows = []
    for name, r in ok.items():
        m = r["memory"]
        at, big, rss = m["at_peak"], m["largest"], m.get("largest_rss", {})
        rows.append(
            [
                f"**{SYSTEM_LABEL[name]}**",
                fmt(r["tree_pss_mb"], 0),
                *[fmt(at.get(role), 0) for role in ("driver", "Ray daemons", "Ray workers", "helpers")],
                f"{fmt(big.get('driver'), 0)} ({fmt(rss.get('driver'), 0)})",
                f"{fmt(big.get('Ray workers'), 0)} ({fmt(rss.get('Ray workers'), 0)})"
                if "Ray workers" in big
                else "–",
                f"{fmt(big.get('helpers'), 0)} ({fmt(rss.get('helpers'), 0)})" if "helpers" in big else "–",
            ]
        )
    headers = [
        "system",
        "peak tree PSS MB",
        "at the peak: driver",
        "Ray daemons",
        "Ray workers",
        "helpers",
        "largest: driver PSS (RSS) MB",
        "largest Ray worker PSS (RSS)",
        "largest helper PSS (RSS)",
    ]
    out = [
        "## Where the memory is",
        "",
        markdown_table(headers, rows),
        "",
        "PSS splits shared pages between the processes that share them (so the columns add up); RSS counts them in "
        "every process. *Driver*: the process started (ours: `curate run`, which also holds Ray's driver; DataTrove: "
        "its task process, `LocalPipelineExecutor(workers=1)` runs "
        "the task in it); *Ray daemons*: GCS, raylet, its runtime-"
        "env agent, its dashboard agent (ours: a stand-in unless `ray.metrics`), the "
        "log monitor (not in ours: a thread of its driver shows the workers' lines); "
        "*helpers*: our extraction helper, DataTrove's extraction sandbox (a fork).",
        "",
    ]
    ours, dt = ok["ours"]["memory"], ok.get("datatrove", {}).get("memory")
    checks = [f"driver peak RSS {fmt(ours['largest_rss'].get('driver'), 0)} MB (target: under {DRIVER_MAX_RSS_MB} MB)"]
    if dt:
        task = max(dt["largest"].get("driver", 0), dt["largest"].get("helpers", 0))
        worker = ours["largest"].get("Ray workers", 0)
        checks.append(
            f"largest worker process {worker:,.0f} MB PSS = {worker / task:.2f}× DataTrove's largest process "
            f"({task:,.0f} MB; target ≤ {WORKER_MAX}×)"
        )
        checks.append(
            f"process tree {ok['ours']['tree_pss_mb']:,.0f} MB = "
            f"{ok['ours']['tree_pss_mb'] / ok['datatrove']['tree_pss_mb']:.2f}× "
            f"DataTrove's ({ok['datatrove']['tree_pss_mb']:,.0f} MB; target ≤ {TREE_MAX}×)"
        )
    return [*out, "Ours against the targets: " + "; ".join(checks) + ".", ""]


def ray_line(r: dict) -> str:
    if r.get("failed"):
        return f"- Ray fixed cost: failed ({r['failed']})"
    parts = " · ".join(f"{k} {v:.2f}" for k, v in r["seconds"].items())
    return (
        f"- **Ray's fixed cost alone** (a process that starts embedded Ray with one CPU, runs one task and one "
        f"Ray Data map, and stops): **{r['wall_s']:.1f} s wall**, {r['cpu_s']:.1f} CPU s, peak tree PSS "
        f"{r['tree_pss_mb']:,.0f} MB ({parts}; the rest is Python start-up)."
    )


def reason_table(counter: Counter, who: str, limit: int = 12) -> str:
    rows = [[k, v] for k, v in counter.most_common(limit)]
    rest = sum(counter.values()) - sum(v for _, v in rows)
    if rest:
        rows.append(["(other reasons)", rest])
    return markdown_table([f"removed by {who} because", "docs"], rows)


def render(
    args,
    machine: dict,
    cpu: int | None,
    corpus: dict,
    results: dict,
    ov: dict | None,
    scale: dict | None = None,
    ov_nemo: dict | None = None,
) -> str:
    ours, dt, ray = results.get("ours"), results.get("datatrove"), results.get("ray")
    pinned = f"pinned to CPU {cpu}" if cpu is not None else "not pinned"
    if args.parallel:
        pinned = (
            f"ours and DataTrove **at the same time** (`--parallel`), each {pinned.replace(str(cpu), 'of its own')}"
        )
    runs = f"the fastest of {args.repeat} interleaved runs" if args.repeat > 1 else "one run each"
    docs = corpus["html"]
    baselines = (("datatrove", "DataTrove"), ("nemo", "NeMo Curator"))
    out = [
        f"# End to end: ours vs {' and '.join(n for k, n in baselines if k in results) or 'nothing'} "
        "(WARC → … → tokens), one core each",
        "",
        f"- {machine['date']} · {machine['nproc']} CPUs ({machine['cpu']}) "
        f"· {machine['mem_gib']} GiB · Python {machine['python']}",
        f"- load average at the start {machine['load_avg']}, at "
        f"the end {machine['load_avg_end']}; the table gives each "
        "run's mean 1-minute load (the machine is shared: above ~1 "
        "other work competed for the core, so compare docs/CPU-s)",
        f"- command: `{' '.join(['python benchmarks/e2e.py', *sys.argv[1:]])}`",
        f"- each system as whole processes {pinned}, math libraries single-threaded; {runs}; wall = spawn to exit "
        "(start-up, imports, Ray start included), CPU s and peak "
        "PSS over the whole process tree; every system byte-compiled "
        "as an installed package is (ours first compiled as pip "
        "compiles the baselines, whatever PYTHONDONTWRITEBYTECODE says)",
        f"- corpus: {len(corpus['files'])} WARC files "
        f"({corpus['bytes'] / 2**20:,.0f} MiB gz), {corpus['responses']:,} "
        f"response records, **{docs:,} HTML docs** "
        "(`WARC-Identified-Payload-Type` HTML: what DataTrove's WarcReader reads; "
        f"docs/s uses this number for both): {corpus_sources(args)}"
        + f", {args.copies}× — every copy after the first has a new WARC-Record-ID and URL (`?e2e-copy=N`), so "
        f"{(args.copies - 1) / args.copies:.0%} of the corpus are exact duplicates both systems' dedup must remove"
        + (
            f"; {corpus['repeated_urls']} URLs occur twice in the sources themselves"
            if corpus["repeated_urls"]
            else ""
        ),
        "",
        results_table(docs, results),
        "",
        "- **ours**: `curate run` on `jobs/sample.yaml` with `ray.num_cpus: 1` (embedded Ray), every phase: extracted "
        "(boilerplate extractor, language ID, URL/Gopher/C4/FineWeb "
        "filters, quality score), deduped (exact + MinHash-LSH "
        "25×5 on word 5-grams), final (quality threshold 0.5, PII redaction with presidio-style recognizers), shards "
        "(tokenize, global shuffle, MDS + WebDataset), card (stats, plots, README)",
        "- **DataTrove**: `WarcReader → URLFilter → Trafilatura(favour_precision=True, timeout=1) → "
        f"LanguageFilter(languages={dt['spec']['languages'] if dt else None}, language_threshold="
        f"{dt['spec']['language_threshold'] if dt else '–'}) → GopherRepetitionFilter → GopherQualityFilter → "
        "C4QualityFilter(filter_no_terminal_punct=False) → "
        "FineWebQualityFilter → JsonlWriter`, then MinHash signatures "
        "(sha1, 64-bit; its xxhash path fails with xxhash 4), buckets, clusters, and `MinhashDedupFilter → "
        "DocumentTokenizer(samples/tokenizer/tokenizer.json, eos_token=<|endoftext|>)`, each on "
        "`LocalPipelineExecutor(tasks=1, workers=1)` (buckets: one task per band, one worker). Same shingles "
        f"(word 5-grams), bands × rows ({'×'.join(map(str, dt['spec']['bands_rows'])) if dt else '–'}), languages, "
        "threshold and tokenizer as ours. Its URLFilter gets what ours uses: the bundled RefinedWeb word lists and no "
        "domain/URL blocklist (`use_integrated_lists=False`; its "
        "integrated UT1 domain list is not in our sample config), "
        "and the bundled public-suffix list (no network). It does not score quality, redact PII, shuffle globally or "
        "write MDS/WebDataset or a card: ours does more work in this table.",
        "- **tokens**: ours from `run.json` (shards), DataTrove from its "
        "tokenizer's stats; both with one `<|endoftext|>` per document.",
    ]
    if not dt:
        out = [line for line in out if not line.startswith("- **DataTrove**")]
    if results.get("nemo"):
        out += [nemo_line(results["nemo"]), *per_core_vs(docs, ours, results["nemo"], "NeMo Curator")]
    if ours and ours.get("ray_start_retries"):
        out.append(
            f"- ours: `ray.init` timed out {ours['ray_start_retries']} time(s) on the busy machine (its raylet must "
            "register within a fixed 30 s); the run was started again and the table reports the run that started"
        )
    if ray:
        out.append(ray_line(ray))
        if ours and not ours.get("failed") and not ray.get("failed"):
            net = ours["wall_s"] - ray["wall_s"]
            out.append(
                f"- ours without that fixed cost: {net:.1f} s, {docs / net:.2f} docs/s"
                + (f", {docs / net / (docs / dt['wall_s']):.2f}× DataTrove" if dt and not dt.get("failed") else "")
            )
    out.append("")
    out += memory_section(results)
    if scale:
        out += scale_section(docs, results, scale)
    if ours and not ours.get("failed"):
        out += ["## Where our time goes (run.json)", "", ours_profile(ours), ""]
    if dt and not dt.get("failed"):
        out += ["## Where DataTrove's time goes", "", datatrove_profile(dt), ""]
        if dt.get("extract_timeouts"):
            out += [f"DataTrove's Trafilatura hit its 1 s timeout on {dt['extract_timeouts']} documents.", ""]
    if ov:
        out += overlap_section(ov)
    if ov_nemo:
        out += overlap_section(ov_nemo, "NeMo Curator", WHY_NEMO)
    return "\n".join(out) + "\n"


def overlap_section(ov: dict, other: str = "DataTrove", why: list[str] | None = None) -> list[str]:
    rows = [
        ["documents (record id / URL)", ov["both"], ov["only_ours"], ov["only_dt"], ov["neither"]],
        ["pages (URL without the copy mark)", ov["pages_both"], ov["pages_only_ours"], ov["pages_only_dt"], ""],
    ]
    return [
        "## Kept documents: overlap and why they differ" + ("" if other == "DataTrove" else f" (ours vs {other})"),
        "",
        markdown_table(["unit", "kept by both", "only ours", f"only {other}", "kept by neither (docs)"], rows),
        "",
        f"Documents only ours kept, by the {other} step that removed them (step: its reason):",
        "",
        reason_table(ov["only_ours_by"], other),
        "",
        f"Documents only {other} kept, by the reason ours removed them (phase: reason):",
        "",
        reason_table(ov["only_dt_by"], "ours"),
        "",
        *language_notes(ov, other),
        "",
        *(WHY if why is None else why),
        "Every HTML document's fate in each system (top reasons):",
        "",
        markdown_table(["ours", "docs", other, "docs "],
                       [[*a, *b] for a, b in zip(ov["removed_ours_by"].most_common(15),
                                                         ov["removed_dt_by"].most_common(15), strict=False)]),
        "",
    ]  # fmt: skip


def nemo_line(r: dict) -> str:
    if r.get("failed"):
        return f"- **NeMo Curator**: did not run: {r['failed']}"
    return (
        "- **NeMo Curator 1.4** (its own venv; benchmarks/e2e_nemo.py): "
        "`FilePartitioningStage → DocumentIterateExtractStage("
        "CommonCrawlWarcIterator, CommonCrawlHTMLExtractor)` (warcio; "
        "charset decoding, pycld2 language detection, its default "
        "jusText with the detected language's stop list) `→` its English heuristic filter set, the "
        f"{len(r.get('filters', []))} `ScoreFilter` stages of its "
        "packaged `heuristic_filter_english_pipeline.yaml`, in order "
        "(non-alphanumeric, symbols, numbers, URLs, white space, "
        "parentheses, boilerplate strings, repeated lines/paragraphs, "
        "word count 50–100,000, punctuation, words without letters, "
        "common English words, mean and longest word, ellipses, "
        "top 2–4-grams, duplicate 5–10-grams, bullets) `→ "
        f"JsonlWriter`, `{r.get('executor')}` on an embedded Ray with one "
        "CPU. **Not run: its exact and fuzzy deduplication** — in 1.4 both are cuDF stages that ask Ray for a GPU "
        "(`Resources(gpus=1.0)`) and this machine has none; so "
        "its kept documents still hold the corpus's exact copies. "
        "No quality score, PII, tokenizing or shards either. Installed offline from the registry only: "
        "`pip install torch==2.13.0 'nemo-curator[text-cpu]==1.4.0'` "
        "(benchmarks/README.md); nothing is downloaded at run time."
    )


def corpus_sources(args) -> str:
    """What the corpus is made of, for the report."""
    if getattr(args, "corpus", "e2e") == "wcxb":
        return (
            "WCXB's dev split (github.com/Murrough-Foley/web-content-extraction-benchmark, CC-BY-4.0): "
            + (
                "its first 100 pages"
                if args.quick
                else "1,497 real pages of seven types (article, service, product, "
                "collection, forum, listing, documentation), 272 KB of HTML on average"
            )
            + ", each page's own bytes as a WARC response with its URL"
        )
    return f"`samples/*.warc.gz` and `{Path(args.devset).name}`" + (
        " (in --quick: one samples file and the dev set's first 100 pages)" if args.quick else ""
    )


def per_core_vs(docs: int, ours: dict | None, other: dict, label: str) -> list[str]:
    """Ours over another system, docs per second and per CPU-second (one core each)."""
    if not ours or ours.get("failed") or other.get("failed"):
        return []
    wall, cpu = other["wall_s"] / ours["wall_s"], other["cpu_s"] / ours["cpu_s"]
    return [
        f"- **ours vs {label}**: **{wall:.2f}×** its docs/s on one core, {cpu:.2f}× its docs per CPU-second, "
        f"peak tree PSS {ours['tree_pss_mb']:,.0f} vs {other['tree_pss_mb']:,.0f} "
        f"MB ({ours['tree_pss_mb'] / other['tree_pss_mb']:.2f}×); "
        "ours runs every phase (dedup, PII, shards, card) in that time"
    ]


WHY_NEMO = [
    "Why the kept sets differ (ours vs NeMo Curator):",
    "",
    "- **No deduplication on its side.** Its exact and fuzzy dedup need a GPU (see above), so every copy of a page it "
    "keeps stays: the documents only NeMo Curator kept that "
    "ours removed as `exact_duplicate` / `duplicate` are those.",
    "- **English rules on every language.** Its packaged heuristic set is the English one (common English words, "
    "English word splitting), applied to all pages as the sample config keeps every language; its extractor also "
    "returns nothing for a language without a jusText stop list.",
    "- **Extraction.** jusText keeps paragraphs by stop-word density and length, a different cut from our boilerplate "
    "extractor, which moves pages across the word-count and repetition thresholds both ways; it does not look at the "
    "HTTP status (ours rejects non-2xx pages before extracting).",
    "",
]


WHY = [
    "Why the kept sets differ (each point is visible in the tables above):",
    "",
    "- **Languages.** The sample config keeps every language (`langid.keep: []`), so DataTrove's LanguageFilter gets "
    "`languages=None` and passes German, Spanish, Russian, Japanese... pages on to Gopher, C4 and FineWeb rules that "
    "DataTrove applies as if the text were English: GopherQualityFilter wants 2 English stop words and splits words "
    "with an English tokenizer (punctuation counts as words), "
    "so it removes most non-English pages; ours has stop words "
    "in 32 languages, ICU word breaking, and skips a rule where it has no data. FineWeb itself runs these filters on "
    "English only. This is the largest group of documents only ours kept.",
    "- **Extraction.** DataTrove's WarcReader hands every HTML response to trafilatura, error pages and redirects "
    "included (ours rejects non-2xx as `http_status` before extracting); trafilatura and our boilerplate extractor "
    "keep different amounts of text on the same page, which moves documents across the Gopher/C4 thresholds "
    "(`min_doc_words`, `too_few_sentences`, `curly_bracket`) in both directions. DataTrove's 1 s trafilatura timeout "
    "is wall-clock: on a loaded machine it cuts pages that would have extracted (its timeout count is above), which "
    "makes its kept set depend on the load; ours limits extraction time per page too (`extract_timeout`).",
    "- **Deduplication.** Both remove the planted copies and the samples' own near duplicates with the same 5-gram "
    "shingles and bands × rows, but keep a different member of a cluster: ours the highest `quality_score` (ties: "
    "smallest id), DataTrove the root of its union-find (in effect any member). Those documents appear once on "
    'each side with "(another copy of the '
    'page kept)"; by page they agree. Ours also verifies candidate pairs and leaves host boilerplate out.',
    "- **After dedup** ours removes low `quality_score` documents (`final: quality`) and redacts PII; DataTrove's "
    "pipeline here has neither.",
    "",
]


def language_notes(ov: dict, other: str = "DataTrove") -> list[str]:
    """The languages (ours' language ID) behind the largest one-sided groups: the main systematic difference."""

    def share(c: Counter) -> str:
        total = sum(c.values())
        return ", ".join(f"{k} {v}" for k, v in c.most_common(6)) + f" (English {c.get('en', 0) / max(total, 1):.0%})"

    lines = [
        f"- languages of what ours kept: {share(ov['kept_lang']['ours'])}; "
        f"of what both kept: {share(ov['kept_lang']['both'])}"
    ]
    lines += [f"- only ours kept, {other} removed by `{why}`: {share(c)}" for why, c in ov["only_ours_lang"].items()]
    return ["Languages (ours' language ID) of the kept documents:", "", *lines]


# ---------------------------------------------------------------- main


def run_scale(args, job: dict, tmp: Path, cpu: int | None) -> dict:
    """Ours and DataTrove again on ``--scale`` copies of the corpus (numbers only, no overlap)."""
    bigger = argparse.Namespace(**{**vars(args), "copies": args.scale})
    where = tmp / "scale"
    where.mkdir()
    corpus = build_corpus(bigger, where)
    print(f"scale corpus: {len(corpus['files'])} files, {corpus['html']} HTML docs", file=sys.stderr, flush=True)
    runs = run_round(["ours", "datatrove"], corpus, job, where, cpu, args.timeout, args.parallel)
    keep = ("wall_s", "cpu_s", "tree_pss_mb", "mean_load", "kept", "tokens", "failed")
    return {
        "copies": args.scale,
        "html": corpus["html"],
        "files": len(corpus["files"]),
        "results": {n: {k: r[k] for k in keep if k in r} for n, r in runs.items()},
    }


def scale_section(docs: int, results: dict, scale: dict) -> list[str]:
    """Both corpus sizes, and the cost of the documents the bigger one adds: the fixed costs
    (start-up, Ray, imports, per-phase set-up) are in both runs and cancel out."""
    big = scale["results"]
    names = [n for n in ("ours", "datatrove") if n in results and n in big]
    if any(results[n].get("failed") or big[n].get("failed") for n in names):
        return [
            "## Fixed and per-document cost",
            "",
            "- a run failed: "
            + "; ".join(f"{n}: {r.get('failed')}" for n in names for r in (results[n], big[n]) if r.get("failed")),
            "",
        ]
    extra = scale["html"] - docs
    rows, per_doc = [], {}
    for n in names:
        small, large = results[n], big[n]
        d_wall, d_cpu = large["wall_s"] - small["wall_s"], large["cpu_s"] - small["cpu_s"]
        per_doc[n] = (extra / d_wall, extra / d_cpu)
        fixed = small["wall_s"] - docs * d_wall / extra  # the line through both runs, at zero documents
        rows.append(
            [
                f"**{n}**",
                fmt(small["wall_s"]),
                fmt(small["cpu_s"]),
                fmt(large["wall_s"]),
                fmt(large["cpu_s"]),
                fmt(per_doc[n][0], 1),
                fmt(per_doc[n][1], 1),
                fmt(fixed),
            ]
        )
    for row, n in zip(rows, names, strict=False):
        base = per_doc.get("datatrove")
        row += [
            f"**{per_doc[n][0] / base[0]:.2f}×**" if base else "–",
            f"{per_doc[n][1] / base[1]:.2f}×" if base else "–",
        ]
    headers = [
        "system",
        f"wall s ({docs:,} docs)",
        "CPU s",
        f"wall s ({scale['html']:,} docs)",
        "CPU s",
        "added docs/s (wall)",
        "added docs/CPU-s",
        "fixed s (wall at 0 docs)",
        "× DataTrove (wall)",
        "× DataTrove (CPU)",
    ]
    return [
        "## Fixed and per-document cost",
        "",
        f"The same measurement on {scale['copies']} copies of the sources ({scale['html']:,} HTML docs, "
        f"{scale['files']} files): the documents the bigger corpus adds cost what a document costs once the run is "
        "going, the start-up and per-phase fixed costs being in both runs. At Common Crawl scale (~30,000 documents "
        "per WARC file, 90,000 files) a run is all per-document "
        "cost: these columns are the per-core rate to plan with.",
        "",
        markdown_table(headers, rows),
        "",
    ]


def fastest(runs: list[dict]) -> dict:
    ok = [r for r in runs if not r.get("failed")]
    return min(ok, key=lambda r: r["wall_s"]) if ok else runs[-1]


def run_one(name: str, corpus: dict, job: dict, tmp: Path, cpu: int | None, timeout_s: float, alone: bool) -> dict:
    if name == "ours":
        r = run_ours(corpus, tmp, cpu, timeout_s, alone)
    elif name == "datatrove":
        r = run_datatrove(corpus, job, tmp, cpu, timeout_s, alone)
    elif name == "nemo":
        r = run_nemo(corpus, tmp, cpu, timeout_s, **NEMO)
    else:
        r = run_ray(tmp, cpu, timeout_s)
    print(f"{name}: {r.get('failed') or format(r['wall_s'], '.1f') + ' s, ' + format(r['cpu_s'], '.1f') + ' CPU s'}",
          file=sys.stderr, flush=True)  # fmt: skip
    return r


def run_round(
    systems: list[str], corpus: dict, job: dict, tmp: Path, cpu: int | None, timeout_s: float, parallel: bool
) -> dict:
    """One run of each system; with ``parallel``, ours and DataTrove at once on two different CPUs."""
    both = parallel and {"ours", "datatrove"} <= set(systems)
    if not both:
        return {n: run_one(n, corpus, job, tmp, cpu, timeout_s, True) for n in systems}
    from concurrent.futures import ThreadPoolExecutor

    other = min(os.sched_getaffinity(0)) if cpu is not None else None
    with ThreadPoolExecutor(2) as pool:
        futures = {
            "ours": pool.submit(run_one, "ours", corpus, job, tmp, cpu, timeout_s, False),
            "datatrove": pool.submit(run_one, "datatrove", corpus, job, tmp, other, timeout_s, False),
        }
        out = {n: f.result() for n, f in futures.items()}
    for n in systems:
        if n not in out:
            out[n] = run_one(n, corpus, job, tmp, cpu, timeout_s, True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="one samples file + the first 100 dev-set pages; print only"
    )
    parser.add_argument(
        "--copies", type=int, default=2, help="copies of the corpus (every copy after the first: new ids and URLs)"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds, interleaved; the fastest of each system is reported"
    )
    parser.add_argument("--systems", nargs="+", default=ORDER, choices=ORDER, help="what to run")
    parser.add_argument("--devset", default=str(DEVSET), help="the extraction dev set WARC (left out if absent)")
    parser.add_argument(
        "--corpus",
        choices=["e2e", "wcxb"],
        default="e2e",
        help="e2e: samples/ and the extraction dev set; wcxb: WCXB's dev split, 1,497 large real pages of "
        "seven types (--wcxb; writes results/e2e_wcxb.md)",
    )
    parser.add_argument(
        "--wcxb", default=str(WCXB), help="a checkout of WCXB (its dev split only; benchmarks/wcxb.py)"
    )
    parser.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: the last one)")
    parser.add_argument("--no-pin", action="store_true", help="let the OS schedule the processes")
    parser.add_argument(
        "--parallel",
        action="store_true",
        help="run ours and DataTrove at the same time, each pinned to its own CPU (halves the elapsed time; "
        "compare docs/CPU-s)",
    )
    parser.add_argument(
        "--scale",
        type=int,
        metavar="COPIES",
        default=None,
        help="also run ours and DataTrove on COPIES copies of the corpus: what the extra documents cost "
        "(per-document cost, fixed costs cancelled) is reported beside the main table",
    )
    parser.add_argument(
        "--nemo-python",
        default=str(NEMO_PYTHON),
        help="the Python of a venv with nemo-curator[text-cpu] 1.4 (default: .venv-nemo/bin/python)",
    )
    parser.add_argument(
        "--nemo-executor",
        choices=["xenna", "ray_data"],
        default="ray_data",
        help="NeMo Curator's executor: ray_data (its fastest on one CPU) "
        "or xenna (its default, batch mode: ~8x slower on one CPU)",
    )
    parser.add_argument("--timeout", type=float, default=3600, help="seconds before a run is killed")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (corpus, outputs, logs)")
    parser.add_argument(
        "--out", default=None, help="markdown output (default benchmarks/results/e2e.md; none with --quick)"
    )
    parser.add_argument("--from-raw", metavar="RAW_JSON", help="render again from a kept run's raw.json (no run)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(*args.child)
        return 0
    if args.from_raw:
        raw, out = json.loads(Path(args.from_raw).read_text()), args.out
        args = parser.parse_args(raw["argv"])  # the options the run had
        args.out = out or args.out
        return publish(args, render_raw(args, raw))
    NEMO.update(python=args.nemo_python, executor=args.nemo_executor)
    job = job_config()
    machine = machine_info()
    cpu = None if args.no_pin else args.cpu if args.cpu is not None else pick_cpu()
    tmp = Path(tempfile.mkdtemp(prefix="bench-e2e-"))
    try:
        corpus = build_corpus(args, tmp)
        print(f"corpus: {len(corpus['files'])} files, {corpus['html']} HTML docs", file=sys.stderr, flush=True)
        rounds = [
            run_round(args.systems, corpus, job, tmp, cpu, args.timeout, args.parallel) for _ in range(args.repeat)
        ]
        results = {n: fastest([r[n] for r in rounds]) for n in args.systems}
        scale = run_scale(args, job, tmp, cpu) if args.scale else None
        machine["load_avg_end"] = machine_info()["load_avg"]
        raw = {
            "machine": machine,
            "cpu": cpu,
            "corpus": corpus,
            "results": results,
            "scale": scale,
            "argv": sys.argv[1:],
        }
        (tmp / "raw.json").write_text(json.dumps(raw))
        report = render_raw(args, raw)
    finally:
        if args.keep:
            print(f"kept: {tmp} (raw.json: --from-raw renders it again)", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return publish(args, report)


def render_raw(args, raw: dict) -> str:
    results, corpus = raw["results"], raw["corpus"]
    ours, dt, nemo = results.get("ours"), results.get("datatrove"), results.get("nemo")

    def ok(other: dict | None) -> bool:
        return bool(ours and other and not ours.get("failed") and not other.get("failed"))

    sys.argv[1:] = raw["argv"]  # the command shown is the one that ran
    return render(
        args,
        raw["machine"],
        raw["cpu"],
        corpus,
        results,
        overlap(corpus, ours, dt) if ok(dt) else None,
        raw.get("scale"),
        overlap(corpus, ours, nemo) if ok(nemo) else None,
    )


def publish(args, report: str) -> int:
    print(report)
    target = Path(args.out) if args.out else None if args.quick else RESULTS_WCXB if args.corpus == "wcxb" else RESULTS
    if target:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(report)
        print(f"written: {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
