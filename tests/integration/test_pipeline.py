"""Phase 1 end to end on Ray: accounting, resumption, determinism, S3."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from pipeline.config import parse_config
from pipeline.runner import run
from tests.conftest import Page, html

pytestmark = pytest.mark.ray

PROSE = (
    "The committee met on Tuesday to discuss the new budget for the public library. "
    "Members agreed that the reading rooms need better lighting and more seats for students. "
)


def corpus(warc_factory, tmp_path) -> Path:
    warc_factory(
        "one.warc.gz",
        [
            Page("http://news.example/a", html("Library budget", PROSE * 5, PROSE * 3).encode()),
            Page("http://news.example/robots.txt", b"User-agent: *\n", "text/plain"),
            Page(
                "http://news.example/b",
                html(
                    "Städtische Bibliothek", "Die Bibliothek bekommt neue Lampen und mehr Plätze für Studenten. " * 6
                ).encode("cp1252"),
                "text/html; charset=iso-8859-1",
            ),
            Page("http://news.example/empty", b"<html><body></body></html>"),
            Page("http://news.example/gone", html("Missing", "nothing").encode(), status="404 Not Found"),
        ],
        with_requests=True,
    )
    warc_factory(
        "two.warc",
        [Page(f"http://blog.example/{i}", html(f"Post {i}", PROSE * (i + 2)).encode()) for i in range(4)],
        gzip=False,
    )
    data = (tmp_path / "one.warc.gz").read_bytes()
    (tmp_path / "cut.warc.gz").write_bytes(data[: len(data) * 2 // 3])
    return tmp_path


# The text filters have their own tests; these documents are deliberately repetitive.
NO_TEXT_FILTERS = {name: {"enabled": False} for name in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}


def config(inputs, output, **extra):
    return parse_config(
        # phase 1 with the final phase (PII) after it; shards and the card have their own tests
        {
            "inputs": inputs,
            "output": output,
            "langid": {"min_score": 0.3},
            "filters": NO_TEXT_FILTERS,
            "dedup": {"enabled": False},
            "shards": {"enabled": False},
            "card": {"enabled": False},
            **extra,
        }
    )


def read_parts(root: Path, kind: str):
    return {p.name: pq.read_table(p) for p in sorted((root / kind / "extracted").glob("part-*.parquet"))}


def test_every_response_is_kept_or_rejected_with_a_reason(ray_local, warc_factory, tmp_path):
    src = corpus(warc_factory, tmp_path)
    out = tmp_path / "out"
    record = run(config([str(src / "*.warc*")], str(out)), progress=False)
    phase = record["phases"]["extracted"]
    assert phase["files"] == 3 and phase["failed_units"] == {}
    kept, rejected = read_parts(out, "documents"), read_parts(out, "rejected")
    for marker in (out / "_done" / "extracted").glob("*.json"):
        marker = json.loads(marker.read_text())
        stats = marker["totals"]
        part = f"part-{marker['unit']}.parquet"
        n_kept = kept[part].num_rows if part in kept else 0
        n_rej = rejected[part].num_rows if part in rejected else 0
        assert stats["responses"] == n_kept + n_rej == stats["records_by_type"].get("response", 0)
    one = next(v for k, v in rejected.items() if k.startswith("part-one-")).to_pylist()
    assert {r["url"].rsplit("/", 1)[1]: r["reason"] for r in one} == {
        "robots.txt": "not_html",
        "empty": "no_text",
        "gone": "http_status",
    }
    docs = next(v for k, v in kept.items() if k.startswith("part-one-")).to_pylist()
    assert [d["language"] for d in docs] == ["en", "de"]
    assert "Plätze für Studenten" in docs[1]["text"] and docs[1]["charset"] == "cp1252"
    assert set(docs[0]) >= {"id", "url", "warc_date", "source", "text", "language", "language_score"}
    one_stats = json.loads(next((out / "_done" / "extracted").glob("one-*.json")).read_text())["totals"]
    assert one_stats["records_by_type"] == {"warcinfo": 1, "request": 5, "response": 5}
    assert phase["malformed_records"] >= 1  # the cut file (a file that is not a WARC is refused before the run)
    assert phase["responses"] == phase["kept"] + phase["rejected"]


def _digest(root: Path) -> dict:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.parquet"))
    }


def test_rerun_skips_done_files_and_output_is_deterministic(ray_local, warc_factory, tmp_path):
    src = corpus(warc_factory, tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    run(config([str(src / "*.warc*")], str(a), ray={"workers": 1}), progress=False)
    run(
        config([str(src / "two.warc"), str(src / "one.warc.gz"), str(src / "*.warc*")], str(b), ray={"workers": 2}),
        progress=False,
    )
    assert _digest(a) == _digest(b) and len(_digest(a)) >= 4

    marker = next((a / "_done" / "extracted").glob("one-*.json"))
    before = marker.stat().st_mtime_ns
    other = next((a / "_done" / "extracted").glob("two-*.json"))
    other.unlink()  # as if the job died while processing it
    record = run(config([str(src / "*.warc*")], str(a)), progress=False)
    assert marker.stat().st_mtime_ns == before  # not redone
    assert other.exists() and record["phases"]["extracted"]["files"] == 3
    assert _digest(a) == _digest(b)


@pytest.mark.s3
def test_inputs_and_outputs_on_s3(ray_local, s3_server, warc_factory, tmp_path):
    src = corpus(warc_factory, tmp_path)
    fs = pafs.S3FileSystem(
        endpoint_override=s3_server.split("//")[1],
        scheme="http",
        region="us-east-1",
        allow_bucket_creation=True,
        force_virtual_addressing=False,
    )
    fs.create_dir("crawl")
    fs.create_dir("curated")
    for name in ("one.warc.gz", "two.warc"):
        with fs.open_output_stream(f"crawl/in/{name}", compression=None) as f:  # not gzipped again for the .gz name
            f.write((src / name).read_bytes())
    cfg = config(["s3://crawl/in/*"], "s3://curated/run1", storage={"endpoint_url": s3_server})
    record = run(cfg, progress=False)
    assert record["phases"]["extracted"]["files"] == 2 and not record["phases"]["extracted"]["failed_units"]
    names = sorted(
        i.path
        for i in fs.get_file_info(pafs.FileSelector("curated/run1", recursive=True))
        if i.type == pafs.FileType.File
    )
    assert "curated/run1/run.json" in names
    assert sum(n.startswith("curated/run1/documents/extracted/part-") for n in names) == 2
    assert not any(".tmp" in n for n in names)
    kept = pq.read_table("curated/run1/documents/extracted", filesystem=fs)
    assert kept.num_rows == 2 + 4
