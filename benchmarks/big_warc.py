"""A ~1 GB Common-Crawl-sized WARC through `curate run`: are the defaults memory-safe?

    python benchmarks/big_warc.py       # generate /tmp/big-warc/big.warc.gz (once), run, write results
    python benchmarks/big_warc.py --size-mib 1024 --workdir /tmp/big-warc --phases extracted,deduped
    python benchmarks/big_warc.py --generate-only

**The file.** Common Crawl's CC-MAIN-2024-51 holds 2.64 billion pages in
~90,000 WARC files of ~1 GB (394 TiB uncompressed): ~29,300 captures per file,
~34 KB compressed and ~164 KB uncompressed per capture (request + response +
metadata records).  This script builds such a file from the pages of
``samples/*.warc.gz``: every capture is a request, a response and a metadata
record, each its own gzip member (ISA-L level 3), and responses carry
``WARC-Identified-Payload-Type``.  Each capture starts from a random sample
response (so the mix of HTML, non-HTML, errors, redirects, charsets and
languages is the samples'); an HTML page with paragraphs gets new text: each
``<p>`` is refilled with a paragraph of the same language from the samples'
paragraph pool, recombined with another (first half of one, second half of
the other) and with ~8% of its words replaced, so extraction, language ID and
the filters work on text they have not seen and dedup sees few copies; 4% of
pages reuse the paragraphs of an earlier generated page with a few edits
(near duplicates on another template) and 1% repeat an earlier payload under
another URL (exact duplicates).  Real pages are large mostly because of inline
scripts and styles: each HTML page gets a ``<script>`` / ``<style>`` block of
slices of the samples' real CSS/JS and page heads, sized from a log-normal
draw so that the file averages CC's bytes per capture; 12% of that block is a base64 inline image
(random bytes), which brings the compression ratio near CC's.  URLs get a unique path
suffix.  Generation is deterministic for a seed.

**The run.** ``curate run jobs/sample.yaml --input FILE --output OUT`` (the real
CLI; sample.yaml's settings: every phase, the demonstration quality model and
tokenizer) in a child process with an embedded Ray on all CPUs.  Sampled every
0.2 s over the child's process tree (benchmarks/memory.py): the peak RSS of the
largest process and of the tree total; every second, a timeline of RSS and of
Ray's object store (the raylet's debug_state.txt: object store memory in use,
bytes spilled) tagged with the phase that was running (from the CLI's log).
Also the CPU seconds of the tree and the load average.  Writes
benchmarks/results/big_warc.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if sys.path and Path(sys.path[0]).resolve() == ROOT / "benchmarks":
    sys.path[0] = str(ROOT)

import argparse
import base64
import datetime as dt
import glob
import html as htmllib
import json
import os
import random
import re
import shutil
import subprocess
import threading
import time
import uuid
from collections import Counter, deque

from benchmarks.memory import PeakMemory, _name, psutil  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "big_warc.md"
MIB = 1 << 20

# Common Crawl CC-MAIN-2024-51 (commoncrawl.org/blog/december-2024-crawl-archive-now-available):
# 2.64 billion pages, 394 TiB uncompressed, ~90,000 WARC files of ~1 GB.
CC_PAGES, CC_FILES, CC_UNCOMPRESSED = 2.64e9, 90_000, 394 * 2**40

P_RE = re.compile(r"(<p\b[^>]*>)(.*?)(</p>)", re.S | re.I)
TAG_RE = re.compile(r"<[^>]+>")
HEAD_END = re.compile(r"</head\s*>", re.I)
NO_SPACES = {"ja", "zh"}


# ----------------------------------------------------------------------------- generation


def _load_samples():
    """Sample responses (HTTP head, payload, metadata) and pools of paragraphs and of CSS/JS."""
    from warcio.archiveiterator import ArchiveIterator

    truth = {}
    for line in (ROOT / "samples" / "ground_truth.jsonl").read_text().splitlines():
        d = json.loads(line)
        truth[d["id"]] = d
    responses = []
    for path in sorted(glob.glob(str(ROOT / "samples" / "*.warc.gz"))):
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f, no_record_parse=False):
                if rec.rec_type != "response":
                    continue
                rid = rec.rec_headers.get_header("WARC-Record-ID").strip("<>")
                t = truth.get(rid, {})
                h = rec.http_headers
                responses.append(
                    {
                        "url": rec.rec_headers.get_header("WARC-Target-URI"),
                        "protocol": h.protocol,
                        "statusline": h.statusline,
                        "headers": [
                            (k, v) for k, v in h.headers if k.lower() not in ("content-length", "transfer-encoding")
                        ],
                        "encoded": any(k.lower() == "content-encoding" for k, _ in h.headers),
                        "payload": rec.raw_stream.read(),
                        "ptype": rec.rec_headers.get_header("WARC-Identified-Payload-Type")
                        or "application/octet-stream",
                        "kind": t.get("kind"),
                        "language": t.get("language"),
                        "charset": t.get("charset"),
                        "status": t.get("status"),
                    }
                )
    paragraphs: dict[str, list[str]] = {}
    code: list[str] = []
    for r in responses:
        if r["ptype"] in ("text/css", "application/javascript"):
            code.append(r["payload"].decode("utf-8", "replace"))
        if r["ptype"] != "text/html" or r["encoded"] or not r["charset"] or not r["language"]:
            continue
        try:
            text = r["payload"].decode(r["charset"])
        except (LookupError, UnicodeDecodeError):
            continue
        m = HEAD_END.search(text)
        if m and m.start() > 500:
            code.append(text[: m.start()])
        for p in P_RE.finditer(text):
            inner = htmllib.unescape(TAG_RE.sub("", p.group(2))).strip()
            size = len(inner) if r["language"] in NO_SPACES else len(inner.split())
            if size >= (60 if r["language"] in NO_SPACES else 15):
                paragraphs.setdefault(r["language"], []).append(" ".join(inner.split()))
    return responses, paragraphs, "\n".join(code)


class Generator:
    def __init__(self, seed: int, mean_capture_kib: float):
        self.rng = random.Random(seed)
        self.responses, self.paragraphs, self.code = _load_samples()
        self.vocab = {lang: [w for p in ps for w in p.split()] for lang, ps in self.paragraphs.items()}
        self.recent: deque = deque(maxlen=3000)  # (language, paragraphs) of generated pages
        self.payloads: deque = deque(maxlen=3000)  # (response, payload) generated
        self.mean_capture = mean_capture_kib * 1024
        self.counts: Counter = Counter()
        self.date = dt.datetime(2024, 12, 1, 0, 0, 0, tzinfo=dt.UTC)

    # -- text
    def _paragraph(self, lang: str, base: str | None = None, edit: float = 0.08) -> str:
        rng = self.rng
        pool = self.paragraphs[lang]
        if base is None:
            a, b = rng.choice(pool), rng.choice(pool)
            if lang in NO_SPACES:
                base = a[: len(a) // 2] + b[len(b) // 2 :]
            else:
                wa, wb = a.split(), b.split()
                base = " ".join(wa[: len(wa) // 2] + wb[len(wb) // 2 :])
        if lang in NO_SPACES:
            chars = list(base)
            other = rng.choice(pool)
            for i in range(len(chars)):
                if rng.random() < edit:
                    chars[i] = rng.choice(other)
            return "".join(chars)
        words = base.split()
        vocab = self.vocab[lang]
        return " ".join(rng.choice(vocab) if rng.random() < edit else w for w in words)

    def _bloat(self, n: int) -> str:
        out, got = [], 0
        while got < n:
            k = min(n - got, self.rng.randint(2_000, 20_000))
            i = self.rng.randrange(0, max(1, len(self.code) - k))
            out.append(self.code[i : i + k])
            got += k
        return "".join(out)

    def _html(self, r: dict, idx: int) -> bytes | None:
        lang = r["language"]
        if lang not in self.paragraphs or r["encoded"] or r["status"] != 200 or r["kind"] == "odd":
            return None
        try:
            text = r["payload"].decode(r["charset"])
        except (LookupError, UnicodeDecodeError, TypeError):
            return None
        slots = len(P_RE.findall(text))
        if not slots:
            return None
        roll = self.rng.random()
        near = [x for x in list(self.recent)[-500:] if x[0] == lang] if roll < 0.04 else []
        if near:
            _, source = self.rng.choice(near)
            paras = [self._paragraph(lang, p, edit=0.03) for p in source]
            self.counts["near_duplicate_pages"] += 1
        else:
            paras = [self._paragraph(lang) for _ in range(slots)]
        self.recent.append((lang, paras))
        it = iter(paras)
        text = P_RE.sub(lambda m: m.group(1) + htmllib.escape(next(it, ""), quote=False) + m.group(3), text)
        # inline scripts and styles: a log-normal page size around CC's mean bytes per capture
        target = int(min(4_000_000, self.rng.lognormvariate(0, 0.8) * self.mean_capture * 0.73))
        extra = max(0, target - len(text))
        if extra:
            k = self.rng.random()
            data = base64.b64encode(
                self.rng.randbytes(int(extra * 0.12 * 0.75))
            ).decode()  # inline images, as real pages have
            extra = max(0, extra - len(data))
            block = (
                f'<script>/* {idx} */\nvar hero = "data:image/webp;base64,{data}";\n'
                f"{self._bloat(int(extra * k))}\n</script>\n"
                f"<style>\n{self._bloat(extra - int(extra * k))}\n</style>\n"
            )
            m = HEAD_END.search(text)
            text = text[: m.start()] + block + text[m.start() :] if m else block + text
        return text.encode(r["charset"], "xmlcharrefreplace")

    # -- records
    def capture(self, idx: int) -> list[bytes]:
        rng = self.rng
        if self.payloads and rng.random() < 0.01:
            r, payload = rng.choice(self.payloads)
            self.counts["exact_duplicate_pages"] += 1
        else:
            r = rng.choice(self.responses)
            payload = self._html(r, idx) if r["ptype"] == "text/html" else None
            if payload is None:
                payload = r["payload"]
                self.counts["copied_" + ("html" if r["ptype"] == "text/html" else "other")] += 1
            else:
                self.counts["rewritten_html"] += 1
                self.payloads.append((r, payload))
        scheme, _, rest = r["url"].partition("://")
        host, _, path = rest.partition("/")
        url = f"{scheme}://{host}/{path.split('?')[0].rstrip('/')}/c{idx:07d}"
        self.date += dt.timedelta(milliseconds=rng.randint(5, 60))
        date = self.date.strftime("%Y-%m-%dT%H:%M:%SZ")
        ids = [f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128), version=4)}>" for _ in range(3)]
        ip = f"192.0.2.{rng.randint(1, 254)}"
        head = f"{r['protocol']} {r['statusline']}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in r["headers"])
        head += f"Content-Length: {len(payload)}\r\n\r\n"
        request = (
            f"GET /{path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: CCBot/2.0 (https://commoncrawl.org/faq/)\r\n"
            "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nAccept-Language: "
            "en-US,en;q=0.5\r\n"
            "Accept-Encoding: br,gzip\r\nConnection: Keep-Alive\r\n\r\n"
        ).encode()
        meta = (
            f"fetchTimeMs: {rng.randint(20, 3000)}\r\ncharset-detected: {r['charset'] or 'UTF-8'}\r\n"
            f'languages-cld2: {{"reliable":true,"languages":[{{"code":"{r["language"] or "en"}"}}]}}\r\n'
        ).encode()
        common = f"WARC-Date: {date}\r\nWARC-Target-URI: {url}\r\nWARC-Warcinfo-ID: {self.warcinfo_id}\r\n"
        return [
            _record(
                "request",
                ids[0],
                common + f"WARC-IP-Address: {ip}\r\nWARC-Concurrent-To: {ids[1]}\r\n",
                "application/http; msgtype=request",
                request,
            ),
            _record(
                "response",
                ids[1],
                common + f"WARC-IP-Address: {ip}\r\nWARC-Concurrent-To: {ids[0]}\r\n"
                f"WARC-Identified-Payload-Type: {r['ptype']}\r\n",
                "application/http; msgtype=response",
                head.encode("latin-1", "replace") + payload,
            ),
            _record("metadata", ids[2], common + f"WARC-Concurrent-To: {ids[1]}\r\n", "application/warc-fields", meta),
        ]


def _record(kind: str, rid: str, headers: str, ctype: str, block: bytes) -> bytes:
    return (
        (
            f"WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Record-ID: {rid}\r\n{headers}Content-Type: {ctype}\r\n"
            f"Content-Length: {len(block)}\r\n\r\n"
        ).encode()
        + block
        + b"\r\n\r\n"
    )


def generate(path: Path, size_bytes: int, seed: int = 0, mean_capture_kib: float = 165.0) -> dict:
    """Write a per-record-gzip WARC of about ``size_bytes`` compressed bytes; returns its statistics."""
    from isal import igzip

    t0 = time.perf_counter()
    gen = Generator(seed, mean_capture_kib)
    gen.warcinfo_id = f"<urn:uuid:{uuid.UUID(int=gen.rng.getrandbits(128), version=4)}>"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    raw = written = captures = 0
    with open(tmp, "wb") as out:
        info = _record(
            "warcinfo",
            gen.warcinfo_id,
            "WARC-Date: 2024-12-01T00:00:00Z\r\nWARC-Filename: big.warc.gz\r\n",
            "application/warc-fields",
            b"software: benchmarks/big_warc.py\r\nformat: WARC File Format 1.0\r\n",
        )
        for rec in [info]:
            data = igzip.compress(rec, 3)
            out.write(data)
            raw, written = raw + len(rec), written + len(data)
        while written < size_bytes:
            for rec in gen.capture(captures):
                data = igzip.compress(rec, 3)
                out.write(data)
                raw, written = raw + len(rec), written + len(data)
            captures += 1
    tmp.rename(path)
    return {
        "captures": captures,
        "records": 3 * captures + 1,
        "compressed_bytes": written,
        "uncompressed_bytes": raw,
        "seconds": round(time.perf_counter() - t0, 1),
        "seed": seed,
        **dict(gen.counts),
        "sample_responses": len(gen.responses),
        "paragraph_pool": {k: len(v) for k, v in sorted(gen.paragraphs.items())},
    }


# ----------------------------------------------------------------------------- the run


def _object_store(session: str | None) -> dict:
    """Object store use and spilling from the raylet's debug_state.txt (rewritten every ~10 s)."""
    if not session:
        return {}
    try:
        text = Path(session, "logs", "debug_state.txt").read_text()
    except OSError:
        return {}
    out = {}
    m = re.search(
        r'Local resources: \{"total":\{[^}]*object_store_memory: '
        r'\[(\d+)\][^}]*\}, "available": \{[^}]*object_store_memory: \[(\d+)\]',
        text,
    )
    if m:
        out["store_total"] = int(m.group(1)) / 1e4
        out["store_used"] = (int(m.group(1)) - int(m.group(2))) / 1e4
    for key, name in (
        ("num bytes currently spilled", "spilled_now"),
        ("cumulative spill requests", "spill_requests"),
        ("pinned objects size", "pinned"),
    ):
        m = re.search(rf"- {key}: (\d+)", text)
        if m:
            out[name] = int(m.group(1))
    return out


class TreePeak(PeakMemory):
    """PeakMemory that survives the end of the process it watches (the child exits before the sampler stops)."""

    def _sample(self) -> None:
        try:
            super()._sample()
        except psutil.Error:
            pass


class Timeline:
    """Every ``interval`` s: RSS total and largest process of the tree, object store use, the phase running."""

    def __init__(self, pid: int, interval: float = 1.0):
        self.root = psutil.Process(pid)
        self.interval = interval
        self.phase = "start"
        self.session: str | None = None
        self.rows: list[dict] = []
        self.per_phase: dict[str, dict] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.t0 = time.perf_counter()

    def _sample(self) -> None:
        total, largest, name = 0, 0, ""
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return
        for p in procs:
            try:
                rss = p.memory_info().rss
                if self.session is None and "raylet" in p.name():
                    m = re.search(r"--session_dir=(\S+)", " ".join(p.cmdline()))
                    self.session = m.group(1) if m else None
            except psutil.Error:
                continue
            total += rss
            if rss > largest:
                largest, name = rss, _name(p)
        store = _object_store(self.session)
        row = {
            "t": round(time.perf_counter() - self.t0, 1),
            "phase": self.phase,
            "total": total,
            "largest": largest,
            "name": name,
            **store,
        }
        self.rows.append(row)
        ph = self.per_phase.setdefault(
            self.phase, {"total": 0, "largest": 0, "name": "", "store_used": 0, "spilled": 0}
        )
        ph["total"] = max(ph["total"], total)
        if largest > ph["largest"]:
            ph["largest"], ph["name"] = largest, name
        ph["store_used"] = max(ph["store_used"], store.get("store_used", 0))
        ph["spilled"] = max(ph["spilled"], store.get("spilled_now", 0))

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.interval)

    def start(self) -> Timeline:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def run_curate(warc: Path, out: Path, phases: str | None, no_progress_timeout: float | None = None) -> dict:
    from benchmarks.memory import TreeCpu

    shutil.rmtree(out, ignore_errors=True)
    curate = Path(sys.executable).parent / "curate"
    cmd = [str(curate), "run", "jobs/sample.yaml", "--input", str(warc), "--output", str(out), "--no-progress", "-v"]
    if phases:
        cmd += ["--phases", phases]
    env = {**os.environ, "PYTHONPATH": ""}
    if (
        no_progress_timeout is not None
    ):  # Ray Data's DataContext.execution_no_progress_timeout_s (Ray's default: 1800 s)
        env["RAY_DATA_EXECUTION_NO_PROGRESS_TIMEOUT_S"] = str(no_progress_timeout)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    timeline = Timeline(child.pid).start()
    cpu = TreeCpu()
    cpu.root = psutil.Process(child.pid)
    log_lines = []
    phase_start = {}
    with TreePeak(pid=child.pid) as mem, cpu:
        for line in child.stdout:
            log_lines.append(f"{time.perf_counter() - t0:8.1f} {line.rstrip()}")
            print(log_lines[-1], flush=True)
            m = re.search(r"phase (\w+): started", line)
            if m:
                timeline.phase = m.group(1)
                phase_start[m.group(1)] = time.perf_counter() - t0
        rc = child.wait()
    wall = time.perf_counter() - t0
    timeline.stop()
    load1 = os.getloadavg()
    spill_lines = []
    if timeline.session:
        for f in glob.glob(os.path.join(timeline.session, "logs", "*")):
            try:
                for line in open(f, errors="replace"):
                    if "Spilled" in line or "spilled" in line.lower() and "MiB" in line:
                        spill_lines.append(line.strip()[:300])
            except (OSError, IsADirectoryError):
                continue
    record = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {}
    return {
        "rc": rc,
        "wall": wall,
        "cpu": cpu.seconds,
        "load": [load0, load1],
        "peak_rss": mem.peak_rss,
        "peak_name": mem.peak_name,
        "peak_total": mem.peak_total,
        "per_phase": timeline.per_phase,
        "timeline": timeline.rows,
        "session": timeline.session,
        "spill_lines": spill_lines[:20],
        "phase_start": phase_start,
        "record": record,
        "log_tail": log_lines[-40:],
        "command": " ".join(cmd),
    }


# ----------------------------------------------------------------------------- S3 requests per file


def s3_requests(warc: Path) -> dict:
    """Read ``warc`` from an S3 server as phase 1 does (core.storage.open_input + WarcReader); count the requests.

    The server is moto on 127.0.0.1 behind tests/s3_proxy.py (which counts what it forwards); only
    reading and framing are done (no extraction), so the count is what one file costs in requests.
    """
    import pyarrow.fs as pafs
    from moto.server import ThreadedMotoServer

    from core.storage import S3Options, open_input
    from stages.warc import ReadStats, WarcReader
    from tests import s3_proxy

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        upstream = f"http://127.0.0.1:{server._server.server_port}"
        state, proxy = s3_proxy.start(upstream)
        url = state.url
        fs = pafs.S3FileSystem(
            endpoint_override=url.removeprefix("http://"),
            scheme="http",
            access_key="testing",
            secret_key="testing",
            region="us-east-1",
            allow_bucket_creation=True,
        )
        fs.create_dir("bench")
        with open(warc, "rb") as src, fs.open_output_stream("bench/file.warc.gz", compression=None) as dst:
            shutil.copyfileobj(src, dst, 8 << 20)
        before = state.forwarded
        stats, responses = ReadStats(), 0
        t0 = time.perf_counter()
        with open_input("s3://bench/file.warc.gz", S3Options(url, "us-east-1", False)) as raw:
            for batch in WarcReader().iter_batches(raw, "s3://bench/file.warc.gz", stats):
                responses += len(batch)
        requests = state.forwarded - before
        size = warc.stat().st_size
        proxy.shutdown()
        return {
            "bytes": size,
            "requests": requests,
            "bytes_per_request": size / max(requests, 1),
            "responses": responses,
            "seconds": round(time.perf_counter() - t0, 1),
        }
    finally:
        server.stop()


# ----------------------------------------------------------------------------- report


def report(gen: dict, res: dict, warc: Path) -> str:
    rec = res["record"]
    phases = rec.get("phases", {})
    ex = phases.get("extracted", {})
    responses = ex.get("responses", 0)
    html = sum(v for k, v in gen.items() if k in ("rewritten_html",)) or 0
    mib = MIB
    lines = [
        "# A 1 GB WARC through `curate run` (memory-safe defaults)",
        "",
        f"- {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC · {os.cpu_count()} CPUs · "
        f"{psutil.virtual_memory().total / 2**30:.1f} GiB · Python {sys.version.split()[0]}",
        f"- load average (1, 5, 15 min) at the start {tuple(round(x, 2) for x in res['load'][0])}, at the end "
        f"{tuple(round(x, 2) for x in res['load'][1])}"
        + (
            ": the machine was shared with other jobs, so wall seconds are inflated; CPU seconds (the run's process "
            "tree, user + system) are the steadier figure"
            if max(res["load"][0][0], res["load"][1][0]) > os.cpu_count()
            else ": nothing else ran (the run's own processes)"
        ),
        "- command: `python benchmarks/big_warc.py"
        + (
            f" --ray-no-progress-timeout {res['ray_no_progress_timeout']:g}"
            if res.get("ray_no_progress_timeout") is not None
            else ""
        )
        + f"` → `{res['command'].replace(str(ROOT) + '/', '')}` "
        "(jobs/sample.yaml's settings, inputs and output overridden; embedded Ray on all CPUs)",
        "",
        "## The file",
        "",
        f"`{warc}`: **{gen['compressed_bytes'] / 2**30:.2f} GiB** compressed ({gen['compressed_bytes']:,} bytes), "
        f"{gen['uncompressed_bytes'] / 2**30:.2f} GiB uncompressed (ratio "
        f"{gen['uncompressed_bytes'] / gen['compressed_bytes']:.1f}), "
        f"**{gen['captures']:,} captures** = {gen['records']:,} records (request, response, metadata; one warcinfo), "
        "one gzip member per record (ISA-L level 3); generated in "
        f"{gen['seconds']:.0f} s by `Generator` (seed {gen['seed']}).",
        "",
        "| | this file | CC-MAIN-2024-51 per file (2.64 B pages, 394 TiB, ~90,000 files of ~1 GB) |",
        "|---|---:|---:|",
        f"| captures | {gen['captures']:,} | {CC_PAGES / CC_FILES:,.0f} |",
        f"| compressed bytes per capture | {gen['compressed_bytes'] / gen['captures'] / 1024:,.1f} KiB | "
        f"{2**30 / (CC_PAGES / CC_FILES) / 1024:,.1f} KiB (1 GiB / pages per file) |",
        f"| uncompressed bytes per capture | {gen['uncompressed_bytes'] / gen['captures'] / 1024:,.1f} KiB | "
        f"{CC_UNCOMPRESSED / CC_PAGES / 1024:,.1f} KiB (394 TiB / 2.64 B) |",
        "",
        f"Captures: {html:,} HTML pages rewritten with new paragraphs "
        f"(of which {gen.get('near_duplicate_pages', 0):,} near "
        "duplicates of an earlier generated page), "
        f"{gen.get('exact_duplicate_pages', 0):,} exact repeats of an earlier payload, "
        f"{gen.get('copied_html', 0):,} HTML pages copied as they are (no paragraphs, errors, redirects, odd pages), "
        f"{gen.get('copied_other', 0):,} non-HTML payloads. Paragraph pool from the samples: "
        + ", ".join(f"{k} {v}" for k, v in gen["paragraph_pool"].items())
        + ".",
        "",
        "## The run",
        "",
        f"Exit code {res['rc']}, status `{rec.get('status')}`. **Wall {res['wall']:.0f} s, CPU {res['cpu']:.0f} s** "
        f"(process tree). HTTP responses read: {responses:,}; kept after phase 1: {ex.get('kept', 0):,}.",
        "",
        f"- **docs/s per core** (responses ÷ wall ÷ {os.cpu_count()} cores): "
        f"{responses / res['wall'] / (os.cpu_count() or 1):,.1f}; per CPU-second (responses ÷ CPU s of the tree): "
        f"{responses / res['cpu']:,.1f}",
        f"- **peak RSS, largest process: {res['peak_rss'] / mib:,.0f} MiB** ({res['peak_name']}); "
        f"**peak RSS, whole tree: {res['peak_total'] / mib:,.0f} MiB** (sampled every 0.2 s; RSS counts object-store "
        "pages a process touched, so it over- rather than under-states)",
        "",
    ]
    lines += [
        "| phase | seconds (run.json) | units | peak tree RSS MiB | peak largest process MiB (which) | "
        "object store in use, peak MiB | spilled, peak MiB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, ph in res["per_phase"].items():
        s = phases.get(name, {})
        lines.append(
            f"| {name} | {s.get('seconds', '')} | {s.get('units', '')} | {ph['total'] / mib:,.0f} | "
            f"{ph['largest'] / mib:,.0f} ({ph['name']}) | {ph['store_used'] / mib:,.0f} | {ph['spilled'] / mib:,.0f} |"
        )
    total_store = next((r.get("store_total") for r in res["timeline"] if r.get("store_total")), None)
    lines += [
        "",
        f"Object store capacity (Ray's default, 30% of RAM): {total_store / mib:,.0f} MiB." if total_store else "",
        f"Spill lines in the Ray session's logs: {len(res['spill_lines'])}"
        + (": " + "; ".join(res["spill_lines"][:5]) if res["spill_lines"] else "."),
        "",
    ]
    if ex:
        lines += [
            "Phase 1 summary: "
            + json.dumps(
                {k: ex.get(k) for k in ("files", "responses", "kept", "rejected", "malformed_records", "errors")}
            ),
            "",
            "Phase 1 stage seconds (summed over workers): " + json.dumps(ex.get("stage_seconds", {})),
            "",
        ]
    for name in ("deduped", "final", "shards", "card"):
        if name in phases:
            s = {k: v for k, v in phases[name].items() if not isinstance(v, (dict, list)) or k in ("step_seconds",)}
            lines += [f"{name} summary: " + json.dumps(s)[:1500], ""]
    if res.get("s3"):
        s3 = res["s3"]
        per_file = gen["compressed_bytes"] / s3["bytes_per_request"]
        lines += [
            "## S3 requests per input file",
            "",
            f"A {s3['bytes'] / MIB:,.0f} MiB WARC from the same generator, read from a local S3 server (moto behind "
            "tests/s3_proxy.py, which counts requests) by "
            "`core.storage.open_input` + `WarcReader` (phase 1's reading, "
            f"no extraction): **{s3['requests']:,} requests, one per {s3['bytes_per_request'] / 1024:,.0f} KiB** "
            f"({s3['responses']:,} responses framed). `open_input` "
            "returns pyarrow's random-access S3 file, and the gzip "
            f"member loop reads it 64 KiB at a time (stages/gunzip.py `_CHUNK`): each read is one ranged GET. "
            f"For this 1 GiB file that is **~{per_file:,.0f} GET requests**; for the snapshot's 90,000 files "
            f"~{per_file * CC_FILES / 1e9:,.2f} billion.",
            "",
        ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=float, default=1024, help="compressed size of the WARC (default 1024 MiB)")
    ap.add_argument("--mean-capture-kib", type=float, default=165.0, help="target mean uncompressed bytes per capture")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", default="/tmp/big-warc", help="where the WARC and the run's output go (not the repo)")
    ap.add_argument("--phases", help="run only these phases (default: all of jobs/sample.yaml)")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument(
        "--ray-no-progress-timeout",
        type=float,
        help="set RAY_DATA_EXECUTION_NO_PROGRESS_TIMEOUT_S for the run (Ray Data ends a dataset after 1800 s without "
        "output: one 1 GB file is one unit, so a slow core can pass it; -1 = never)",
    )
    ap.add_argument(
        "--s3-mib",
        type=float,
        default=64,
        help="also read a WARC of this size (same generator) from a local S3 server and count the requests (0: skip)",
    )
    ap.add_argument("--results", default=str(RESULTS))
    args = ap.parse_args(argv)
    work = Path(args.workdir)
    warc = work / "big.warc.gz"
    info_path = work / "big.warc.json"
    if not warc.exists():
        gen = generate(warc, int(args.size_mib * MIB), args.seed, args.mean_capture_kib)
        info_path.write_text(json.dumps(gen, indent=1))
    gen = json.loads(info_path.read_text())
    print(json.dumps(gen), flush=True)
    if args.generate_only:
        return 0
    res = run_curate(warc, work / "out", args.phases, args.ray_no_progress_timeout)
    res["ray_no_progress_timeout"] = args.ray_no_progress_timeout
    if args.s3_mib:
        small = work / "s3.warc.gz"
        if not small.exists():
            generate(small, int(args.s3_mib * MIB), args.seed + 1, args.mean_capture_kib)
        res["s3"] = s3_requests(small)
        print(json.dumps(res["s3"]), flush=True)
    (work / "result.json").write_text(json.dumps(res, indent=1, default=str))
    text = report(gen, res, warc)
    Path(args.results).write_text(text)
    print(text)
    return 0 if res["rc"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
