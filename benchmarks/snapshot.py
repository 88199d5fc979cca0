"""Dedup (and every phase) at a Common Crawl snapshot's shape: tens of thousands of parts, heavy duplicate clusters.

    python benchmarks/snapshot.py --shape recurring --files 2000 4000 8000          # every phase, through `curate run`
    python benchmarks/snapshot.py --shape same --files 8000                          # one WARC given 8,000 times
    python benchmarks/snapshot.py --shape heavy --files 8000 --dedup-parts 20000 90000  # + dedup alone on more parts
    python benchmarks/snapshot.py --base /tmp/snapshot-bench/recurring/out-8000 --cloned-files 20000 90000
                                                      # every phase after phase 1, on phase 1 cloned to more files

A snapshot is ~90,000 WARC files, so phase 1 leaves ~90,000 parts, and its duplicate clusters are heavy-tailed
(issue 39). The WARCs are made from ``samples/*.warc.gz``, 12 responses a file (``--per-file``), each with a
new WARC-Record-ID:

* ``recurring`` -- the samples' 1,045 responses in turn, so every page recurs across files (~92 times at 8,000
  files): the shape issue 39 reported (8,000 files: a driver of 12 GB before this issue's fixes);
* ``same`` -- one file of the first 12 responses, given ``--files`` times under as many names (every record id
  repeated that many times: the ``duplicate_id`` path with many copies of one id);
* ``heavy`` -- most pages unique (the samples' HTML pages with new paragraphs: benchmarks/big_warc.py's
  Generator, without its inline-script padding), plus planted clusters whose sizes follow a power law
  (``P(size) ~ size^-2`` from 2 up, and one cluster of ``--largest`` copies, default 10,000, at most an eighth
  of the responses), half exact copies and half near copies (1% of each paragraph's words replaced), on other
  URLs and hosts. ``truth.parquet`` gives each record's planted cluster, for precision and recall. It misses
  two kinds of real duplicates among the "unique" pages, which therefore count against precision: sample pages
  the Generator cannot rewrite (sent verbatim each time they are drawn) and the Generator's own near copies
  (4% of its pages). At 2,000 files 432 removed documents were such "unique" pages (101 removed as exact
  copies, 331 as near ones) of 3,968 removed, precision 0.885: recall is the figure to read.

Each ``--files`` point runs ``curate run jobs/sample.yaml`` (every phase, embedded Ray on all CPUs) in a child
process; a sampler reads every process of its tree every 0.5 s: the driver's RSS (the ``curate`` process) and
the largest Ray worker's, per phase, and the CPU seconds of the tree. ``--dedup-parts`` points run the deduped
phase alone (``pipeline.phases.deduped.run_dedup``, jobs/sample.yaml's settings) on phase-1 parts cloned from the
largest ``--files`` run: clone ``c`` of a part gets new ids and URLs, and its unique documents a text of their
own (a suffix of letters naming the clone on every word: no shingle in common), while the copies of a cluster
stay copies (a cluster grows with the clones, as a snapshot's largest clusters do).

``--cloned-files`` points run the whole ``curate run`` (the engine's own run loop: deduped, final, shards and the
card for real, measured as the ``--files`` points are) on N input files whose phase 1 is already done: phase 1 at
90,000 files would take ~85 minutes on 2 cores, and it is the later phases, reading tens of thousands of parts,
that must keep the driver flat. Input t (``warc-cloned-N/files/``, named as the generators name theirs) is a hard
link to the base run's input t % B, and its parts and marker (``out-cloned-N/``) are the base unit's, cloned as
above (clone t // B: its ids and URLs suffixed, so every record id stays unique as in a snapshot; ``heavy``'s
unique pages a text of their own), under the name and fingerprint the engine gives input t (its own planning, no
Ray) and with its public name in the ``source`` column and the marker. Before measuring, the planner must report
every unit of phase 1 done (what ``curate run --dry-run`` prints), or the benchmark stops: otherwise the run would
redo phase 1 and measure something else. ``--prepare-only`` clones and checks without running; a later invocation
on the same ``--base`` keeps the clone (removing only what the later phases left). Writes
benchmarks/results/snapshot_<shape>.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if sys.path and Path(sys.path[0]).resolve() == ROOT / "benchmarks":
    sys.path[0] = str(ROOT)  # a module here named like a standard one would shadow it

import argparse  # noqa: E402
import contextlib  # noqa: E402
import glob  # noqa: E402
import html as htmllib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections import Counter  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from isal import igzip  # noqa: E402
from warcio.archiveiterator import ArchiveIterator  # noqa: E402

from benchmarks._common import (  # noqa: E402
    TreeUsage,
    _descendants,
    _rss_pss_kib,
    machine_info,
    markdown_table,
    role_of,
)
from benchmarks.big_warc import P_RE, Generator  # noqa: E402
from core.layout import DOCUMENTS, DONE, REJECTED, part_file  # noqa: E402
from pipeline.config import load_config  # noqa: E402
from pipeline.engine.units import published_input  # noqa: E402
from pipeline.inputs import unit_name  # noqa: E402
from pipeline.phase import INPUTS  # noqa: E402
from pipeline.runner import plan_context, status  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "snapshot_{shape}.md"
CONFIG = "jobs/sample.yaml"  # every run's config, read from the repository's root
MIB = 1 << 20
#: Share of a near copy's words replaced (two copies then share ~90% of their 5-grams: a copy of a page, not a
#: rewrite of it).
NEAR_EDIT = 0.01


# ----------------------------------------------------------------------------- the WARC files


def _responses() -> list[tuple[list, bytes, str]]:
    """The samples' response records: (WARC headers without id and length, block, record id)."""
    out = []
    for path in sorted(glob.glob(str(ROOT / "samples" / "*.warc.gz"))):
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f, no_record_parse=True):
                if rec.rec_type == "response":
                    headers = [
                        (k, v)
                        for k, v in rec.rec_headers.headers
                        if k.lower() not in ("warc-record-id", "content-length")
                    ]
                    out.append((headers, rec.raw_stream.read(), rec.rec_headers.get_header("WARC-Record-ID")))
    return out


def _record(headers: list, rid: str, block: bytes) -> bytes:
    head = f"WARC/1.0\r\nWARC-Record-ID: {rid}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    return (head + f"Content-Length: {len(block)}\r\n\r\n").encode() + block + b"\r\n\r\n"


def _gz(record: bytes) -> bytes:
    return igzip.compress(record, 1)


def _rid(rng: random.Random) -> str:
    return f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128), version=4)}>"


def write_recurring(folder: Path, files: int, per: int, seed: int = 0) -> dict:
    """File k holds responses k*per ... (k+1)*per - 1 of the samples, in turn: every page recurs across files."""
    resp, rng = _responses(), random.Random(seed)
    for k in range(files):
        recs = [resp[(k * per + j) % len(resp)] for j in range(per)]
        (folder / f"f{k:06d}.warc.gz").write_bytes(b"".join(_gz(_record(h, _rid(rng), b)) for h, b, _ in recs))
    return {"responses": files * per, "sample_responses": len(resp)}


def write_same(folder: Path, files: int, per: int, seed: int = 0) -> dict:
    """One file of the first ``per`` responses (new record ids), given ``files`` times under as many names."""
    resp, rng = _responses(), random.Random(seed)
    data = b"".join(_gz(_record(h, _rid(rng), b)) for h, b, _ in resp[:per])
    for k in range(files):
        (folder / f"f{k:06d}.warc.gz").write_bytes(data)
    return {"responses": files * per, "distinct_record_ids": per}


def cluster_sizes(responses: int, largest: int, share: float, rng: random.Random) -> list[int]:
    """Planted cluster sizes: one of ``largest`` (at most responses / 8), then sizes drawn from P(s) ~ s^-2
    (2 <= s <= largest) until ``share`` of the responses are in clusters."""
    largest = max(2, min(largest, responses // 8))
    sizes, total = [largest], largest
    s = list(range(2, largest + 1))
    weights = [x**-2.0 for x in s]
    while total < share * responses:
        n = min(rng.choices(s, weights)[0], int(share * responses) - total)
        if n < 2:
            break
        sizes.append(n)
        total += n
    return sizes


def write_heavy(folder: Path, files: int, per: int, largest: int, share: float, seed: int = 0) -> dict:
    """Unique pages and planted exact / near clusters (module docstring); writes ``truth.parquet`` beside the
    files' folder: each record id's cluster (null: a unique page)."""
    rng = random.Random(seed)
    gen = Generator(seed, mean_capture_kib=0.0)  # no inline-script padding: small files, as the recurring shape
    resp = [r for r in gen.responses if r["ptype"] == "text/html"]
    seeds = [
        r
        for r in resp
        if r["kind"] == "prose" and r["status"] == 200 and not r["encoded"] and r["language"] in gen.paragraphs
    ]
    n = files * per
    sizes = cluster_sizes(n, largest, share, rng)
    slots = []  # (cluster, copy) per response: None = a unique page
    for c, size in enumerate(sizes):
        slots += [(c, i) for i in range(size)]
    slots += [None] * (n - len(slots))
    rng.shuffle(slots)
    heads: dict[int, tuple[dict, bytes]] = {}
    ids, clusters = [], []
    counts = {"unique": 0, "exact": 0, "near": 0}

    def payload(r: dict, idx: int) -> bytes:
        page = gen._html(r, idx)
        return page if page is not None else r["payload"]

    def near(r: dict, page: bytes) -> bytes:
        text = page.decode(r["charset"], "replace")

        def edit(m):
            inner = htmllib.unescape(re.sub(r"<[^>]+>", "", m.group(2)))
            changed = gen._paragraph(r["language"], inner, edit=NEAR_EDIT)
            return m.group(1) + htmllib.escape(changed, quote=False) + m.group(3)

        return P_RE.sub(edit, text).encode(r["charset"], "xmlcharrefreplace")

    records = []
    for idx, slot in enumerate(slots):
        if slot is None:
            r = rng.choice(resp)
            body, url, cluster = payload(r, idx), f"{r['url'].rstrip('/')}/u{idx:08d}", None
            counts["unique"] += 1
        else:
            c, i = slot
            if c not in heads:
                r = seeds[c % len(seeds)]
                heads[c] = (r, payload(r, idx))
            r, head = heads[c]
            exact = i % 2 == 0
            body = head if exact else near(r, head)
            counts["exact" if exact else "near"] += 1
            url, cluster = f"https://mirror{(c * 31 + i) % 97}.example/c{c}/{i}", c
        head_lines = f"{r['protocol']} {r['statusline']}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in r["headers"])
        block = (head_lines + f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1", "replace") + body
        rid = _rid(rng)
        headers = [
            ("WARC-Type", "response"),
            ("WARC-Date", "2024-12-01T00:00:00Z"),
            ("WARC-Target-URI", url),
            ("WARC-Identified-Payload-Type", r["ptype"]),
            ("Content-Type", "application/http; msgtype=response"),
        ]
        records.append(_gz(_record(headers, rid, block)))
        ids.append(rid.strip("<>"))  # phase 1's id: the record id without its brackets
        clusters.append(cluster)
        if len(records) == per:
            (folder / f"f{idx // per:06d}.warc.gz").write_bytes(b"".join(records))
            records = []
    pa_truth = pa.table({"id": ids, "cluster": pa.array(clusters, pa.int64())})
    pq.write_table(pa_truth, folder.parent / "truth.parquet")
    return {"responses": n, "clusters": len(sizes), "largest": sizes[0], "in_clusters": sum(sizes), **counts}


SHAPES = {"recurring": write_recurring, "same": write_same, "heavy": write_heavy}


# ----------------------------------------------------------------------------- measuring a run


def _driver_kib(pid: int) -> tuple[int, int]:
    """(RssAnon, RssShmem) of the driver in KiB: its own memory, and the object store's pages it wrote (counted in
    its RSS, owned by the store)."""
    got = {"RssAnon:": 0, "RssShmem:": 0}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, *value = line.split()
            if key in got:
                got[key] = int(value[0])
    except (OSError, ValueError, IndexError):
        pass
    return got["RssAnon:"], got["RssShmem:"]


class PhaseUsage(TreeUsage):
    """TreeUsage that also keeps, per phase, the driver's and the largest Ray worker's peak RSS, and the driver's
    own memory (RssAnon) and store pages (RssShmem) at their peaks."""

    def __init__(self, pid: int, interval_s: float = 0.5):
        super().__init__(pid, interval_s)
        self.phase = "start"
        self.per_phase: dict[str, dict[str, float]] = {}

    def _run(self) -> None:
        while not self._stop.is_set():
            peak = self.per_phase.setdefault(self.phase, {"driver": 0.0, "worker": 0.0, "anon": 0.0, "shmem": 0.0})
            for p in _descendants(self.pid):
                role = role_of(p, self.pid)
                if role in ("driver", "Ray workers"):
                    key = "driver" if role == "driver" else "worker"
                    peak[key] = max(peak[key], _rss_pss_kib(p)[0] / 1024)
                if role == "driver":
                    anon, shmem = _driver_kib(p)
                    peak["anon"], peak["shmem"] = max(peak["anon"], anon / 1024), max(peak["shmem"], shmem / 1024)
            self._stop.wait(self.interval_s)


def _watch(pid: int) -> tuple[TreeUsage, PhaseUsage]:
    usage, phases = TreeUsage(pid), PhaseUsage(pid)
    usage._thread.start()
    phases._thread.start()
    return usage, phases


def _stop(*samplers) -> None:
    for s in samplers:
        s._stop.set()
        s._thread.join()


def run_all(inputs: str, out: Path, timeout_s: float, fresh: bool = True) -> dict:
    """``curate run jobs/sample.yaml`` on ``inputs`` (every phase), measured from outside; into an empty ``out``
    unless not ``fresh`` (a cloned phase 1 is there)."""
    if fresh:
        shutil.rmtree(out, ignore_errors=True)
    cmd = [
        sys.executable,
        "-m",
        "pipeline.cli",
        "run",
        CONFIG,
        "--input",
        inputs,
        "--output",
        str(out),
        "--no-progress",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    child = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True
    )
    usage, phases = _watch(child.pid)
    log = []
    timer = threading.Timer(timeout_s, lambda: os.killpg(child.pid, 9))
    timer.start()
    for line in child.stdout:
        log.append(f"{time.perf_counter() - t0:8.1f} {line.rstrip()}")
        print(log[-1], flush=True)
        m = re.search(r"phase (\w+): started", line)
        if m:
            phases.phase = m.group(1)
    rc = child.wait()
    timer.cancel()
    wall = time.perf_counter() - t0
    _stop(usage, phases)
    record = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {}
    return {
        "rc": rc,
        "wall": wall,
        "cpu": usage.cpu_s,
        "load": usage.mean_load,
        "roles": usage.roles(),
        "per_phase": phases.per_phase,
        "record": record,
        "log_tail": log[-20:],
        "command": " ".join(cmd[1:]),
    }


# ----------------------------------------------------------------------------- dedup alone on cloned parts


def _clone_text(text, suffix: str):
    """Every word of the texts with ``suffix`` appended (letters: the dedup normalization keeps them)."""
    return pc.replace_substring_regex(text, r"(\w+)", r"\1" + suffix)


def _suffix(c: int) -> str:
    out = ""
    while True:
        c, r = divmod(c, 26)
        out += "abcdefghijklmnopqrstuvwxyz"[r]
        if c == 0:
            return "q" + out


def _clone_table(table: pa.Table, c: int, source: str, unique: pa.Array | None = None) -> pa.Table:
    """Clone ``c`` of a phase-1 part's table (0: the table as it is): its ids and URLs suffixed with the clone, the
    texts of its ``unique`` documents (a mask) made the clone's own, and ``source`` in its source column."""
    if c:
        if unique is not None:
            text = table.column("text").combine_chunks()
            table = table.set_column(
                table.schema.get_field_index("text"), "text", pc.if_else(unique, _clone_text(text, _suffix(c)), text)
            )
        for col, sep in (("id", "-c"), ("url", "?c=")):
            i = table.schema.get_field_index(col)
            table = table.set_column(i, col, pc.binary_join_element_wise(table.column(col), f"{sep}{c}", ""))
    return table.set_column(table.schema.get_field_index("source"), "source", pa.array([source] * len(table)))


def _write_part(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path, compression="zstd")  # as the engine writes its parts (core/storage.py)


def _read_truth(truth_path: Path | None) -> dict:
    if truth_path is None:
        return {}
    t = pq.read_table(truth_path)
    return dict(zip(t.column("id").to_pylist(), t.column("cluster").to_pylist(), strict=True))


def _clone_all(one, items, truth: dict, dest: Path) -> list:
    """``one`` on every item in threads (Arrow's reads and writes let go of the GIL: 90,000 parts in minutes); the
    ids and clusters they return become ``dest/truth.parquet`` (``heavy``). Returns ``one``'s other results."""
    ids, clusters, rest = [], [], []
    with ThreadPoolExecutor(8) as pool:
        for i, cl, *other in pool.map(one, items):
            ids += i
            clusters += cl
            rest.append(other)
    if truth:
        pq.write_table(pa.table({"id": ids, "cluster": pa.array(clusters, pa.int64())}), dest / "truth.parquet")
    return rest


def clone_parts(base: Path, dest: Path, parts: int, truth_path: Path | None) -> dict:
    """``parts`` phase-1 parts (and their markers) from the finished run ``base``: part t is base part t % B,
    clone t // B (module docstring). Returns the documents written; writes ``dest/truth.parquet`` for ``heavy``."""
    src = sorted((base / "documents" / "extracted").glob("*.parquet"))
    names = [f.name.removeprefix("part-").removesuffix(".parquet") for f in src]
    truth = _read_truth(truth_path)
    (dest / "documents" / "extracted").mkdir(parents=True, exist_ok=True)
    (dest / "_done" / "extracted").mkdir(parents=True, exist_ok=True)

    def one(t: int) -> tuple[list, list, int]:
        s, c = t % len(src), t // len(src)
        table = pq.read_table(src[s])
        name = names[s] if c == 0 else f"{names[s]}-c{c}"
        cl = [truth.get(i) for i in table.column("id").to_pylist()] if truth else []
        table = _clone_table(table, c, name, pa.array([x is None for x in cl]) if truth else None)
        _write_part(table, dest / "documents" / "extracted" / f"part-{name}.parquet")
        marker = json.loads((base / "_done" / "extracted" / f"{names[s]}.json").read_text())
        marker.update(unit=name, fingerprint=f"{marker['fingerprint']}-c{c}")
        (dest / "_done" / "extracted" / f"{name}.json").write_text(json.dumps(marker))
        return (table.column("id").to_pylist() if truth else []), cl, len(table)  # ids: only for truth.parquet

    docs = sum(n for (n,) in _clone_all(one, range(parts), truth, dest))
    return {"parts": parts, "docs": docs}


# ----------------------------------------------------------------------------- every phase after phase 1, cloned

#: What phase 1 leaves in an output (the rest is the later phases'), and the phase's name.
PHASE1 = "extracted"
PHASE1_FOLDERS = (DOCUMENTS, REJECTED, DONE)


def input_name(t: int) -> str:
    """Input file ``t``'s name, as the generators name their files (``write_recurring``)."""
    return f"f{t:06d}.warc.gz"


def _inputs_glob(folder: Path) -> str:
    return str(folder / "*.warc.gz")


def link_inputs(base_inputs: list[Path], folder: Path, files: int) -> None:
    """``files`` input files, file t a hard link to base input t % B (no bytes copied; a copy where links cannot
    be made, another file system)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for t in range(files):
        src, dst = base_inputs[t % len(base_inputs)], folder / input_name(t)
        try:
            os.link(src, dst)
        except OSError:
            shutil.copyfile(src, dst)


def engine_context(inputs: list[str], out: Path, cwd: Path = ROOT):
    """The context of a run on ``inputs`` as ``run_all``'s ``curate run`` builds it (its config, and its working
    directory unless told another: the same unit names and fingerprints), without starting Ray."""
    with contextlib.chdir(cwd):  # the config's relative paths (in the fingerprints) and the inputs' public names
        return plan_context(load_config(ROOT / CONFIG, inputs=inputs, output=str(out)), progress=False)


def _base_inputs(base: Path) -> tuple[list[str], list[Path], Path]:
    """The finished run's input files as it named them (its units' names come from these), where they are, and
    the directory it ran in."""
    record = json.loads((base / "run.json").read_text())
    named, cwd = record["inputs"], Path(record.get("working_dir") or ROOT)
    return named, [cwd / f for f in named], cwd


def check_current(inputs: list[str], out: Path, files: int, what: str = "cloned", cwd: Path = ROOT) -> dict:
    """What ``curate run --dry-run`` on ``inputs`` would say of phase 1 (pipeline.runner.status): every one of
    ``files`` units done, or the benchmark stops. The base is checked where it ran (``cwd``): a checkout's config
    names its own model files, and a run elsewhere takes every unit as not done."""
    ctx = engine_context(inputs, out, cwd)
    row = next(r for r in status(ctx, ctx.phases) if r["phase"] == PHASE1)
    if row["units"] != files or row["done"] != files or row["todo"]:
        fix = {
            "cloned": "the run would redo phase 1 and measure the wrong thing",
            "base": f"its parts are not what phase 1 leaves with today's {CONFIG}: run its --files point again",
        }[what]
        raise SystemExit(
            f"{what} phase 1 is not current in {out}: {row['units']} units, {row['done']} done, {row['todo']} to do "
            f"(expected {files} done): {fix}"
        )
    return row


def clone_run(base: Path, folder: Path, dest: Path, files: int, truth_path: Path | None) -> dict:
    """Phase 1 of ``curate run jobs/sample.yaml`` on ``files`` inputs in ``folder``, done by cloning the finished
    run ``base`` into ``dest``: input t is base input t % B (a hard link), and unit t's parts and marker are base
    unit t % B's, clone t // B (ids and URLs suffixed, ``heavy``'s unique texts made its own: ``_clone_table``),
    under the engine's name and fingerprint for input t, its public name in the source column and the marker."""
    named, paths, _ = _base_inputs(base)
    link_inputs(paths, folder, files)
    for sub in PHASE1_FOLDERS:
        shutil.rmtree(dest / sub / PHASE1, ignore_errors=True)
        (dest / sub / PHASE1).mkdir(parents=True)
    ctx = engine_context([_inputs_glob(folder)], dest)
    phase = ctx.phases[0]
    units = ctx.units_of(phase)
    if phase.name != PHASE1 or phase.reads != INPUTS or len(units) != files:
        raise SystemExit(
            f"cloning: expected phase {PHASE1} with a unit per input file, got {phase.name}, {len(units)}"
        )
    index = {input_name(t): t for t in range(files)}
    truth = _read_truth(truth_path)

    def one(unit) -> tuple[list, list, int]:
        t = index[Path(unit.params["source"]).name]
        s, c = t % len(named), t // len(named)
        base_name = unit_name(named[s])
        marker = json.loads((base / DONE / PHASE1 / f"{base_name}.json").read_text())
        public, published, ids, cl = published_input(unit.params["source"]), [], [], []
        for path in marker["outputs"].get("published", []):
            sub, rest = path.split("/", 1)
            if rest != f"{PHASE1}/{part_file(base_name)}":
                raise SystemExit(f"cloning: base unit {base_name} published {path}, not a part of phase {PHASE1}")
            table = pq.read_table(base / path)
            unique = None
            if sub == DOCUMENTS:
                cl = [truth.get(i) for i in table.column("id").to_pylist()] if truth else []
                unique = pa.array([x is None for x in cl]) if truth else None
            table = _clone_table(table, c, public, unique)
            if sub == DOCUMENTS and truth:  # ids: only for truth.parquet
                ids = table.column("id").to_pylist()
            published.append(f"{sub}/{PHASE1}/{part_file(unit.name)}")
            _write_part(table, dest / published[-1])
        marker.update(unit=unit.name, fingerprint=unit.fingerprint)
        marker["outputs"].update(source=public, published=published)
        (dest / DONE / PHASE1 / f"{unit.name}.json").write_text(json.dumps(marker))
        return ids, cl, int((marker.get("totals") or {}).get("responses", 0))

    responses = sum(n for (n,) in _clone_all(one, units, truth, dest))
    return {"files": files, "base": str(base), "base_files": len(named), "responses": responses}


def only_phase1(out: Path) -> None:
    """Remove from ``out`` all but phase 1's parts and markers: what the later phases (and a lock) left."""

    def remove(path: Path) -> None:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()

    for entry in out.iterdir() if out.exists() else []:
        if entry.name not in PHASE1_FOLDERS:
            remove(entry)
            continue
        for sub in entry.iterdir():
            if sub.name != PHASE1:
                remove(sub)


def prepare_cloned(base: Path, work: Path, files: int) -> tuple[Path, Path, dict]:
    """The inputs and the output of a ``--cloned-files`` point: cloned from ``base`` (or kept from an earlier
    invocation on the same base), the later phases' outputs removed, phase 1 checked current."""
    folder, out = work / f"warc-cloned-{files}" / "files", work / f"out-cloned-{files}"
    stamp = folder.parent / "cloned.json"
    info = json.loads(stamp.read_text()) if stamp.exists() else {}
    finished = json.loads((base / "run.json").read_text()).get("finished")  # a base run again: clone it again
    # another checkout (its config's model paths are in the fingerprints): clone again
    key = (str(base), finished, files, str(ROOT))
    if (info.get("base"), info.get("base_finished"), info.get("files"), info.get("root")) != key:
        named, _, cwd = _base_inputs(base)
        check_current(named, base, len(named), "base", cwd)
        stamp.unlink(missing_ok=True)
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.perf_counter()
        info = clone_run(base, folder, out, files, _base_truth(base))
        info.update(seconds=round(time.perf_counter() - t0, 1), base_finished=finished, root=str(ROOT))
        stamp.write_text(json.dumps(info))
        print(f"cloned {files:,} files' phase 1 from {base} in {info['seconds']:.0f} s", flush=True)
    only_phase1(out)
    t0 = time.perf_counter()
    row = check_current([_inputs_glob(folder)], out, files)
    print(f"phase {PHASE1}: {row['done']:,} of {row['units']:,} units current ({time.perf_counter() - t0:.0f} s)")
    return folder, out, info


def measure_dedup(root: str) -> dict:
    """In this (child) process: the deduped phase alone on ``root``'s phase-1 parts."""
    from core.storage import Storage  # the pipeline only in the child that runs it: the parent measures it
    from pipeline.config import load_config
    from pipeline.distribute import init_ray
    from tests.dedup_standalone import run_dedup

    config = load_config(ROOT / "jobs" / "sample.yaml", inputs=["unused"], output=root)
    init_ray(config.ray.num_cpus, config.ray.address, config.ray.shuffle, config.ray.metrics)
    t0 = time.perf_counter()
    summary = run_dedup(config, Storage(root), workers=os.cpu_count() or 2, progress=False)
    return {"wall": time.perf_counter() - t0, "summary": summary}


def run_dedup_only(root: Path, timeout_s: float) -> dict:
    for folder in ("documents/deduped", "rejected/deduped", "_done/deduped", "dedup", "dedup_index"):
        shutil.rmtree(root / folder, ignore_errors=True)
    result = root / "dedup-result.json"
    cmd = [sys.executable, __file__, "--measure-dedup", str(root), "--result", str(result)]
    t0 = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    usage, phases = _watch(child.pid)
    phases.phase = "deduped"
    try:
        rc = child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, 9)
        rc = child.wait()
    _stop(usage, phases)
    out = json.loads(result.read_text()) if rc == 0 and result.exists() else {}
    return {
        "rc": rc,
        "wall_total": time.perf_counter() - t0,
        "cpu": usage.cpu_s,
        "load": usage.mean_load,
        "roles": usage.roles(),
        **out,
    }


# ----------------------------------------------------------------------------- scoring and the report


def score(root: Path, truth_path: Path) -> dict:
    """Precision and recall of the removed documents against the planted clusters, among the documents dedup saw
    (benchmarks/dedup_scale.py's rule: a removed member of a cluster is right if a member stays). Counted per
    cluster: dedup_scale.score scans a cluster per removed member, quadratic in a cluster of 10,000."""
    seen = set()
    for f in (root / "documents" / "extracted").glob("*.parquet"):
        seen.update(pq.read_table(f, columns=["id"]).column("id").to_pylist())
    truth = pq.read_table(truth_path)
    cluster = {
        i: c
        for i, c in zip(truth.column("id").to_pylist(), truth.column("cluster").to_pylist(), strict=True)
        if i in seen
    }
    removed = {
        i
        for f in (root / "rejected" / "deduped").glob("*.parquet")
        for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()
    }
    size, gone = Counter(c for c in cluster.values() if c is not None), Counter()
    for i in removed:
        if cluster.get(i) is not None:
            gone[cluster[i]] += 1
    tp = sum(n for c, n in gone.items() if n < size[c])  # the cluster kept a member
    should = sum(n - 1 for n in size.values())
    return {
        "removed": len(removed),
        "tp": tp,
        "precision": tp / len(removed) if removed else 1.0,
        "recall": tp / should if should else 1.0,
    }


def _phase_seconds(record: dict) -> dict:
    return {k: v.get("seconds") for k, v in record.get("phases", {}).items() if isinstance(v, dict)}


def every_phase_row(label: str, files: int, responses: int, r: dict, pr: dict | None) -> tuple[list, str]:
    """A results row (and its note) of a ``run_all`` run on ``files`` input files."""
    phases = r["record"].get("phases", {})
    dedup = phases.get("deduped", {})
    responses = phases.get("extracted", {}).get("responses") or responses
    row = [
        label,
        f"{files:,}",
        f"{responses:,}",
        f"{dedup.get('in', 0):,}",
        f"{r['wall']:.0f}",
        f"{(dedup.get('seconds') or 0) / 60:.1f}",
        f"{r['cpu'] / max(responses, 1) * 1000:.1f}",
        f"{r['roles']['largest_rss'].get('driver', 0):,.0f}",
        f"{r['roles']['largest_rss'].get('Ray workers', 0):,.0f}",
        f"{dedup.get('largest_cluster', '')}",
        "" if pr is None else f"{pr['precision']:.4f} / {pr['recall']:.4f}",
        f"exit {r['rc']}; "
        + ", ".join(f"{k} {v:.0f} s" for k, v in _phase_seconds(r["record"]).items() if v is not None)
        + "; driver MB by phase "
        + ", ".join(f"{k} {v['driver']:.0f}" for k, v in r["per_phase"].items())
        + "; its own (RssAnon) "
        + ", ".join(f"{v['anon']:.0f}" for v in r["per_phase"].values())
        + "; the store's pages it wrote (RssShmem) "
        + ", ".join(f"{v['shmem']:.0f}" for v in r["per_phase"].values()),
    ]
    note = (
        f"- {label}, {files:,} files: dedup steps (s) {json.dumps(dedup.get('step_seconds', {}))}; "
        f"load average during the run {r['load']:.1f}"
        if r["load"] is not None
        else ""
    )
    print(markdown_table(["", "parts"], [row[:2]]), "\n", row, flush=True)
    return row, note


def _base_truth(base: Path) -> Path | None:
    """``heavy``: the records' clusters of the finished run ``base`` (beside its inputs), if any."""
    truth = base.parent / f"warc-{base.name.removeprefix('out-')}" / "truth.parquet"
    return truth if truth.exists() else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=sorted(SHAPES), default="recurring")
    ap.add_argument(
        "--files", type=int, nargs="*", help="input files per run of every phase (default: 2000, none with --base)"
    )
    ap.add_argument("--dedup-parts", type=int, nargs="*", default=[], help="parts per run of the deduped phase alone")
    ap.add_argument(
        "--cloned-files",
        type=int,
        nargs="*",
        default=[],
        help="input files per run of every phase whose phase 1 is cloned from --base (not run)",
    )
    ap.add_argument(
        "--base",
        help="the finished run whose phase-1 parts --dedup-parts and --cloned-files clone (default: the largest "
        "--files run of this invocation)",
    )
    ap.add_argument("--prepare-only", action="store_true", help="--cloned-files: clone and check phase 1, run nothing")
    ap.add_argument("--per-file", type=int, default=12, help="responses per file")
    ap.add_argument("--largest", type=int, default=10_000, help="heavy: copies in the largest cluster")
    ap.add_argument("--share", type=float, default=0.3, help="heavy: share of the responses in planted clusters")
    ap.add_argument("--workdir", default="/tmp/snapshot-bench", help="WARCs and outputs (not the repository)")
    ap.add_argument("--timeout", type=float, default=7200, help="seconds a run may take before it is stopped")
    ap.add_argument("--results", default=str(RESULTS), help="markdown table output ({shape}: the shape's name)")
    ap.add_argument("--measure-dedup", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.measure_dedup:  # the child of run_dedup_only
        Path(args.result).write_text(json.dumps(measure_dedup(args.measure_dedup), default=str))
        return 0
    work = Path(args.workdir) / args.shape
    m = machine_info()
    rows, notes = [], []
    base = Path(args.base).resolve() if args.base else None
    for files in args.files if args.files is not None else [] if base else [2000]:
        folder = work / f"warc-{files}" / "files"
        info_path = folder.parent / "generated.json"
        if not info_path.exists():
            shutil.rmtree(folder.parent, ignore_errors=True)
            folder.mkdir(parents=True)
            t0 = time.perf_counter()
            kw = {"largest": args.largest, "share": args.share} if args.shape == "heavy" else {}
            info = SHAPES[args.shape](folder, files, args.per_file, **kw)
            info["seconds"] = round(time.perf_counter() - t0, 1)
            info_path.write_text(json.dumps(info))
        info = json.loads(info_path.read_text())
        print(f"{args.shape} {files} files: {info}", flush=True)
        out = work / f"out-{files}"
        r = run_all(_inputs_glob(folder), out, args.timeout)
        truth = folder.parent / "truth.parquet"
        pr = score(out, truth) if args.shape == "heavy" and r["rc"] == 0 else None
        row, note = every_phase_row("every phase", files, info["responses"], r, pr)
        rows.append(row)
        notes.append(note)
        if r["rc"] == 0 and not args.base:
            base = out
    for files in args.cloned_files:
        if base is None:
            raise SystemExit("--cloned-files needs a finished run to clone its phase 1 (--base, or a --files run)")
        folder, out, info = prepare_cloned(base, work, files)
        if args.prepare_only:
            continue
        r = run_all(_inputs_glob(folder), out, args.timeout, fresh=False)
        truth = out / "truth.parquet"
        pr = score(out, truth) if truth.exists() and r["rc"] == 0 else None
        row, note = every_phase_row("every phase after phase 1 (cloned parts)", files, info["responses"], r, pr)
        rows.append(row)
        notes.append(note)
    for parts in args.dedup_parts:
        if base is None:
            raise SystemExit("--dedup-parts needs a finished --files run to clone its phase-1 parts")
        root = work / f"dedup-{parts}"
        if not (root / "documents" / "extracted").exists():
            clone_parts(base, root, parts, _base_truth(base))
        r = run_dedup_only(root, args.timeout)
        s = r.get("summary", {})
        pr = score(root, root / "truth.parquet") if (root / "truth.parquet").exists() and r["rc"] == 0 else None
        docs = s.get("in", 0)
        rows.append(
            [
                "deduped alone (cloned parts)",
                f"{parts:,}",
                "",
                f"{docs:,}",
                f"{r['wall_total']:.0f}",
                f"{r.get('wall', 0) / 60:.1f}",
                f"{r['cpu'] / max(docs, 1) * 1000:.1f} (per doc into dedup)",
                f"{r['roles']['largest_rss'].get('driver', 0):,.0f}",
                f"{r['roles']['largest_rss'].get('Ray workers', 0):,.0f}",
                f"{s.get('largest_cluster', '')}",
                "" if pr is None else f"{pr['precision']:.4f} / {pr['recall']:.4f}",
                f"exit {r['rc']}; steps (s) {json.dumps(s.get('step_seconds', {}))}",
            ]
        )
        print(rows[-1], flush=True)
    lines = [
        f"# Dedup at a snapshot's shape: `{args.shape}`",
        "",
        f"- {m['date']} · {m['nproc']} CPUs ({m['cpu']}) · {m['mem_gib']} GiB · Python {m['python']} · "
        "load average "
        f"at the start {m['load_avg']}, at the end {machine_info()['load_avg']} (other jobs shared the machine: "
        "compare CPU seconds)",
        f"- command: `python benchmarks/snapshot.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
        "",
        markdown_table(
            [
                "run",
                "files / parts",
                "responses",
                "docs into dedup",
                "wall s",
                "dedup min",
                "CPU ms per response",
                "driver peak RSS MB",
                "largest worker peak RSS MB",
                "largest cluster",
                "precision / recall",
                "notes",
            ],
            rows,
            "lrrrrrrrrrrl",
        ),
        "",
        *[n for n in notes if n],
    ]
    if not rows:  # --prepare-only: nothing measured, the last results stay
        return 0
    results = Path(args.results.format(shape=args.shape))
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
