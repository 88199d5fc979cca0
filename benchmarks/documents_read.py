"""Documents/s per core of the document source (stages/sources/documents.py) on a 100k-line dump.

    python benchmarks/documents_read.py           # writes benchmarks/results/documents_read.md
    python benchmarks/documents_read.py --quick   # 20k lines, prints only

The texts are what the phase-1 stages (decode, extract) keep from
``samples/*.warc.gz``, repeated to ``--lines`` JSON lines (id, url, date, text
and two fields carried in ``metadata``), written as ``.jsonl.gz``,
``.jsonl.zst`` and Parquet (zstd, row groups of 10,000).  Each row reads the
whole file with :class:`DocumentsSource` in this process, pinned to one CPU;
the best of ``--repeats`` passes is kept (the machine may be shared: the
minimum is the least disturbed).  Docs/s is documents over CPU seconds.  The
last row is the floor a JSON lines reader cannot go under here: gunzip
(ISA-L) and ``json.loads`` of every line, nothing else.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import Measure, machine_info, markdown_table, pick_cpu, pin_to_cpu  # noqa: E402


def sample_texts() -> list[str]:
    """Texts the decode and extract stages keep from the sample WARCs."""
    from stages.base import ChainStats, run_chain
    from stages.charset import CharsetConfig, DecodeStage
    from stages.extract import ExtractConfig, ExtractStage
    from stages.warc import ReadStats, WarcReader

    chain = [DecodeStage(CharsetConfig()), ExtractStage(ExtractConfig())]
    texts: list[str] = []
    try:
        for path in sorted((ROOT / "samples").glob("*.warc.gz")):
            with open(path, "rb") as f:
                for batch in WarcReader().iter_batches(f, str(path), ReadStats()):
                    kept, _ = run_chain(chain, batch, ChainStats())
                    texts += [t for t in kept.column("text").to_pylist() if t]
    finally:
        for stage in chain:
            getattr(stage, "close", lambda: None)()
    return texts


def records(texts: list[str], lines: int) -> list[dict]:
    return [
        {
            "id": f"doc-{i}",
            "url": f"https://example.org/{i}",
            "date": f"2024-{1 + i % 12:02d}-01T00:00:00Z",
            "text": texts[i % len(texts)],
            "lang": "en",
            "score": i % 97 / 97,
        }
        for i in range(lines)
    ]


def write_inputs(folder: Path, docs: list[dict]) -> dict[str, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    data = b"".join(json.dumps(d, ensure_ascii=False).encode() + b"\n" for d in docs)
    paths = {"jsonl.gz": folder / "d.jsonl.gz", "jsonl.zst": folder / "d.jsonl.zst", "parquet": folder / "d.parquet"}
    paths["jsonl.gz"].write_bytes(gzip.compress(data, 6))
    paths["jsonl.zst"].write_bytes(zstandard.ZstdCompressor(level=3).compress(data))
    pq.write_table(pa.Table.from_pylist(docs), paths["parquet"], row_group_size=10_000, compression="zstd")
    return paths


def read_all(path: Path, carry: str) -> int:
    import pyarrow as pa

    from stages.sources.documents import DocumentsConfig, DocumentsSource, DocumentStats

    stats = DocumentStats()
    with pa.OSFile(str(path)) as f:
        for _ in DocumentsSource(DocumentsConfig(carry=carry)).read(f, str(path), stats):
            pass
    return stats.documents


def parse_floor(path: Path) -> int:
    from stages.gunzip import Gunzip

    n = 0
    with open(path, "rb") as f:
        for line in io.BufferedReader(_Raw(Gunzip(f)), 1 << 20):
            json.loads(line)
            n += 1
    return n


class _Raw(io.RawIOBase):
    def __init__(self, gz):
        self.gz = gz

    def readable(self):
        return True

    def readinto(self, b):
        data = self.gz.read1(len(b))
        b[: len(data)] = data
        return len(data)


def measure(fn, repeats: int) -> dict:
    best = None
    for _ in range(repeats):
        with Measure() as m:
            docs = fn()
        if best is None or m.cpu_s < best["cpu_s"]:
            best = {"docs": docs, "cpu_s": m.cpu_s, "wall_s": m.wall_s}
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="20k lines, one pass, print only")
    args = ap.parse_args()
    lines, repeats = (20_000, 1) if args.quick else (args.lines, args.repeats)
    pin_to_cpu(pick_cpu())
    texts = sample_texts()
    docs = records(texts, lines)
    text_mb = sum(len(d["text"].encode()) for d in docs) / 1e6
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_inputs(Path(tmp), docs)
        runs = [(f"{kind}, carry all", lambda p=path: read_all(p, "all")) for kind, path in paths.items()]
        runs.append(("jsonl.gz, carry none", lambda: read_all(paths["jsonl.gz"], "none")))
        runs.append(("jsonl.gz: gunzip + json.loads only", lambda: parse_floor(paths["jsonl.gz"])))
        for name, fn in runs:
            r = measure(fn, repeats)
            assert r["docs"] == lines, (name, r["docs"])
            size = paths[name.split(",")[0].split(":")[0]].stat().st_size / 1e6
            rows.append(
                [
                    name,
                    f"{size:.1f}",
                    f"{r['cpu_s']:.2f}",
                    f"{r['wall_s']:.2f}",
                    f"{lines / r['cpu_s']:,.0f}",
                    f"{text_mb / r['cpu_s']:.1f}",
                ]
            )
            print(rows[-1], flush=True)
    info = machine_info()
    table = markdown_table(["input", "file MB", "CPU s", "wall s", "docs/s per core", "text MB/s"], rows)
    report = "\n".join(
        [
            "# Document source: reading JSON lines and Parquet",
            "",
            f"{lines:,} documents ({len(texts):,} distinct texts from "
            f"`samples/`, {text_mb:.0f} MB of text), one CPU, best of {repeats}.",
            f"Machine: {info['cpu']}, {info['nproc']} CPUs, load average "
            f"{info['load_avg']} at the end (the machine is shared: see the load).",
            "",
            table,
            "",
        ]
    )
    print(report)
    if not args.quick:
        (ROOT / "benchmarks" / "results" / "documents_read.md").write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
