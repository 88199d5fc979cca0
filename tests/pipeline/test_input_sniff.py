"""Inputs are checked by content, whatever their names: each file goes to the source that reads it (WARC,
JSON lines, Parquet) and a file that none reads is an error naming it (at plan time for local files),
never a run that reads 0 records and ends `ok`."""

from __future__ import annotations

import bz2
import gzip
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from pipeline.inputs import InputError, check_formats
from stages.sources import HEAD_BYTES, NotAnInputError, Sniffed, check_input, sniff
from tests.conftest import SAMPLES, Page, html, write_warc

WARC_HEAD = b"WARC/1.0\r\nWARC-Type: warcinfo\r\nContent-Length: 0\r\n\r\n"
JSONL = b'{"text": "hello", "id": 1}\n{"text": "world", "id": 2}\n'


def _parquet() -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"text": ["a", "b"]}), buf)
    return buf.getvalue()


@pytest.mark.parametrize(
    "data, expected",
    [
        (WARC_HEAD, Sniffed("warc")),
        (gzip.compress(WARC_HEAD), Sniffed("warc", "gzip")),
        (gzip.compress(WARC_HEAD * 5000)[:300], Sniffed("warc", "gzip")),  # cut inside its first member
        (zstandard.ZstdCompressor().compress(WARC_HEAD), Sniffed("warc", "zstd")),
        (JSONL, Sniffed("jsonl")),
        (gzip.compress(JSONL), Sniffed("jsonl", "gzip")),
        (b"\xef\xbb\xbf  " + JSONL, Sniffed("jsonl")),
        (bz2.compress(JSONL), Sniffed("jsonl", "bzip2")),
        (b'[{"text": "x"}]', Sniffed("json")),
        (_parquet(), Sniffed("parquet")),
        (b"<?xml version='1.0'?><Error><Code>AccessDenied</Code></Error>", Sniffed("xml")),
        (b"<!doctype html><html>", Sniffed("html")),
        (b"filedesc://IA-001102.arc 0.0.0.0 19960923142103 text/plain 76\n", Sniffed("arc")),
        (b"just some notes\nabout the crawl\n", Sniffed("text")),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", Sniffed("unknown")),
        (b"", Sniffed("empty")),
        (gzip.compress(b""), Sniffed("empty", "gzip")),
        (b"\x1f\x8b\x08\x00garbage-that-is-not-deflate" * 3, Sniffed("unknown", "gzip")),
    ],
)
def test_sniff_tells_the_format_and_the_compression(data, expected):
    assert sniff(data[:HEAD_BYTES]) == expected


def test_each_readable_format_goes_to_its_source_and_the_rest_is_refused():
    assert Sniffed("warc").kind == Sniffed("warc", "gzip").kind == "warc"
    assert Sniffed("jsonl").kind == Sniffed("jsonl", "gzip").kind == Sniffed("jsonl", "zstd").kind == "documents"
    assert Sniffed("parquet").kind == "documents"
    assert (
        Sniffed("warc", "zstd").kind is None
        and Sniffed("jsonl", "bzip2").kind is None
        and Sniffed("json").kind is None
    )
    assert check_input(sniff(gzip.compress(JSONL)), "dump/part-0.jsonl.gz") == "documents"
    with pytest.raises(NotAnInputError) as e:
        check_input(sniff(b'[{"text": "x"}]'), "dump/all.json")
    assert str(e.value) == (
        "input dump/all.json is not a WARC, JSON lines or Parquet file: it is a JSON file (give WARC files, "
        "plain or gzipped; JSON lines, plain, gzip or zstd; or Parquet)"
    )
    with pytest.raises(NotAnInputError, match="it is an empty file"):
        check_input(sniff(b""), "empty.warc.gz")


def test_every_sample_warc_and_hostile_warc_sniffs_as_a_readable_warc():
    expected = json.loads((SAMPLES / "broken" / "expected.json").read_text())
    files = [*SAMPLES.glob("*.warc.gz"), *(SAMPLES / "broken" / n for n in expected)]
    refused = {f.name for f in files if sniff(f.read_bytes()[:HEAD_BYTES]).kind != "warc"}
    assert refused == {"not-a-warc.warc.gz", "empty.warc.gz"}  # an S3 error body and a zero-byte file


def test_local_inputs_no_source_reads_are_named_at_plan_time(tmp_path):
    good = write_warc(tmp_path / "good.warc.gz", [Page("http://a.example/", html("A", "text").encode())])
    (tmp_path / "dump.jsonl.gz").write_bytes(gzip.compress(JSONL))
    (tmp_path / "table.parquet").write_bytes(_parquet())
    (tmp_path / "empty.warc.gz").write_bytes(b"")
    (tmp_path / "notes.txt").write_bytes(b"just some notes\n")
    check_formats([str(good), str(tmp_path / "dump.jsonl.gz"), str(tmp_path / "table.parquet")])
    with pytest.raises(InputError) as e:
        check_formats(
            [str(good), str(tmp_path / "dump.jsonl.gz"), str(tmp_path / "empty.warc.gz"), str(tmp_path / "notes.txt")]
        )
    tail = "(give WARC files, plain or gzipped; JSON lines, plain, gzip or zstd; or Parquet)"
    assert str(e.value).splitlines() == [
        f"input error: input {tmp_path / 'empty.warc.gz'} is not a "
        f"WARC, JSON lines or Parquet file: it is an empty file {tail}",
        f"input error: input {tmp_path / 'notes.txt'} is not a WARC, "
        f"JSON lines or Parquet file: it is a plain text file {tail}",
    ]


def test_many_bad_inputs_are_summed_up(tmp_path):
    files = []
    for i in range(25):
        files.append(str(tmp_path / f"x{i:02d}.warc.gz"))
        (tmp_path / f"x{i:02d}.warc.gz").write_bytes(b"<html>an error page</html>")
    with pytest.raises(InputError) as e:
        check_formats(files)
    lines = str(e.value).splitlines()
    assert len(lines) == 21 and lines[-1] == "input error: ... and 5 more files that no source reads"


@pytest.mark.ray
@pytest.mark.s3
def test_a_remote_input_that_is_not_a_warc_fails_its_unit_with_one_line(ray_local, s3_server, tmp_path):
    import pyarrow.fs as pafs

    from pipeline.config import parse_config
    from pipeline.runner import run

    fs = pafs.S3FileSystem(
        endpoint_override=s3_server.split("//")[1],
        scheme="http",
        region="us-east-1",
        allow_bucket_creation=True,
        force_virtual_addressing=False,
    )
    fs.create_dir("sniff")
    good = write_warc(
        tmp_path / "good.warc.gz",
        [Page(f"http://a.example/{i}", html(f"Page {i}", "Some words here. " * 30).encode()) for i in range(3)],
    )
    for name, data in (
        ("in/good.warc.gz", good.read_bytes()),
        ("in/dump.warc.gz", gzip.compress(b"<html>an S3 error page</html>")),
    ):
        with fs.open_output_stream(f"sniff/{name}", compression=None) as f:
            f.write(data)
    cfg = parse_config(
        {
            "inputs": ["s3://sniff/in/*"],
            "output": str(tmp_path / "out"),
            "storage": {"endpoint_url": s3_server},
            "langid": {"min_score": 0.0},
            "dedup": {"enabled": False},
            "pii": {"enabled": False},
            "shards": {"enabled": False},
            "card": {"enabled": False},
            "filters": {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")},
        }
    )
    record = run(cfg, progress=False)
    assert record["status"] == "failed_units"
    phase = record["phases"]["extracted"]
    assert list(phase["failed_units"].values()) == [
        "NotAnInputError: input s3://sniff/in/dump.warc.gz is not a WARC, JSON lines "
        "or Parquet file: it is gzip-compressed HTML (give WARC files, plain or gzipped; "
        "JSON lines, plain, gzip or zstd; or Parquet)"
    ]
    assert phase["kept"] == 3
