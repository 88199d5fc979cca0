"""Document sources (issue 19, item 2): JSON lines and Parquet files read into documents, every bad record a
counted rejection and never the file, bounded memory, local and S3; and the sniff that tells a file's kind."""

from __future__ import annotations

import gzip
import io
import json
import random
import re
import tarfile
import tracemalloc
from collections import Counter
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
import zstandard
from pydantic import ValidationError

from stages.sources import HEAD_BYTES, SourceError, sniff, sniff_stream
from stages.sources.documents import (
    REASONS,
    DocumentsConfig,
    DocumentsSource,
    DocumentStats,
    generated_id,
    open_and_read,
)
from stages.sources.lines import CHUNK, READ_AHEAD, iter_lines
from stages.sources.warc import REASONS as WARC_REASONS, WarcSource
from tests.conftest import REPO, SAMPLES, Page, html

UTC = UTC
WORDS = "the quick brown fox jumps over a lazy dog while seven wise owls watch from an old oak tree".split()


def prose(rng: random.Random, words: int = 60) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def docs(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    return [
        {
            "id": f"doc-{i}",
            "url": f"https://example.org/{i}",
            "date": f"2024-01-{1 + i % 28:02d}T10:00:00Z",
            "text": prose(rng),
            "lang": "en",
            "score": i / 10,
        }
        for i in range(n)
    ]


def jsonl_bytes(records: list) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in records)


def write(path, data: bytes):
    path.write_bytes(data)
    return path


WRITERS = {
    "jsonl": lambda data: data,
    "jsonl.gz": gzip.compress,
    "jsonl.zst": lambda data: zstandard.ZstdCompressor().compress(data),
    "json.gz": gzip.compress,
    "json": lambda data: data,
}


def read(path, config: DocumentsConfig | None = None) -> tuple[list[dict], DocumentStats]:
    table, stats = open_and_read(str(path), config)
    return table.to_pylist(), stats


def kept(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["reason"] is None]


def reasons(rows: list[dict]) -> list[str]:
    return [r["reason"] for r in rows if r["reason"] is not None]


def assert_adds_up(stats: DocumentStats, records: int) -> None:
    assert stats.records == records
    assert stats.records == stats.documents + sum(stats.rejected.values())


# ---------------------------------------------------------------------------- formats


@pytest.mark.parametrize("ext", list(WRITERS))
def test_every_json_lines_extension_reads_the_same_documents(tmp_path, ext):
    records = docs(300)
    rows, stats = read(write(tmp_path / f"dump.{ext}", WRITERS[ext](jsonl_bytes(records))))
    assert [r["text"] for r in rows] == [d["text"] for d in records]
    assert [r["id"] for r in rows] == [d["id"] for d in records]
    first = rows[0]
    assert first["url"] == "https://example.org/0" and first["warc_date"] == datetime(2024, 1, 1, 10, tzinfo=UTC)
    assert first["source"] == str(tmp_path / f"dump.{ext}") and first["content_type"] == "application/jsonl"
    assert json.loads(first["metadata"]) == {"lang": "en", "score": 0.0}
    assert_adds_up(stats, 300)
    assert stats.documents == 300 and stats.bytes == len(jsonl_bytes(records)) - 300  # newlines not counted


def test_parquet_reads_the_same_documents_as_json_lines(tmp_path):
    records = docs(500)
    table = pa.Table.from_pylist(records)
    pq.write_table(table, tmp_path / "dump.parquet", row_group_size=128)
    write(tmp_path / "dump.jsonl", jsonl_bytes(records))
    from_parquet, stats = read(tmp_path / "dump.parquet", DocumentsConfig(batch_size=100))
    from_jsonl, _ = read(tmp_path / "dump.jsonl")
    strip = lambda rows: [{k: v for k, v in r.items() if k not in ("source", "content_type")} for r in rows]  # noqa: E731
    assert strip(from_parquet) == strip(from_jsonl)
    assert from_parquet[0]["content_type"] == "application/vnd.apache.parquet"
    assert_adds_up(stats, 500)


def test_batches_are_bounded_by_count_and_bytes(tmp_path):
    path = write(tmp_path / "d.jsonl", jsonl_bytes(docs(1000)))
    stats = DocumentStats()
    with pa.OSFile(str(path)) as f:
        sizes = [len(t) for t in DocumentsSource(DocumentsConfig(batch_size=64)).read(f, "d", stats)]
    assert max(sizes) == 64 and sum(sizes) == 1000
    with pa.OSFile(str(path)) as f:  # each line is ~400 bytes: 64 KiB holds ~160 of them
        sizes = [
            len(t)
            for t in DocumentsSource(DocumentsConfig(batch_size=10_000, batch_bytes=1 << 16)).read(f, "d", stats)
        ]
    assert 100 < max(sizes) < 200 and sum(sizes) == 1000


# ---------------------------------------------------------------------------- fields


def test_field_names_and_dotted_paths_are_configurable(tmp_path):
    records = [
        {
            "doc_id": 17,
            "content": "first text",
            "metadata": {"url": "https://a.org/x", "tags": ["a"]},
            "created": "03/02/2021",
            "n": 1,
        },
        {"doc_id": "b-2", "content": "second text", "metadata.url": "https://flat.org/", "created": "04/02/2021"},
        {"content": "third text", "metadata": {"url": None}},
    ]
    config = DocumentsConfig(
        text="content", id="doc_id", url="metadata.url", date="created", date_format="%d/%m/%Y", id_prefix="wiki:"
    )
    rows, stats = read(write(tmp_path / "d.jsonl", jsonl_bytes(records)), config)
    assert [r["text"] for r in rows] == ["first text", "second text", "third text"]
    assert [r["id"] for r in rows] == ["wiki:17", "wiki:b-2", generated_id(str(tmp_path / "d.jsonl"), 3)]
    assert [r["url"] for r in rows] == ["https://a.org/x", "https://flat.org/", None]
    assert [r["warc_date"] for r in rows] == [datetime(2021, 2, 3, tzinfo=UTC), datetime(2021, 2, 4, tzinfo=UTC), None]
    # the parent of a dotted path is carried whole; the mapped top-level keys are not
    assert json.loads(rows[0]["metadata"]) == {"metadata": {"url": "https://a.org/x", "tags": ["a"]}, "n": 1}
    assert stats.counters["id_generated"] == 1


def test_parquet_nested_struct_fields(tmp_path):
    table = pa.table(
        {
            "body": ["one", "two"],
            "meta": pa.array([{"url": "https://x.org/1", "id": 5}, {"url": None, "id": 6}]),
            "extra": [1.5, None],
        }
    )
    pq.write_table(table, tmp_path / "n.parquet")
    config = DocumentsConfig(text="body", id="meta.id", url="meta.url", carry=["extra", "meta.url"])
    rows, stats = read(tmp_path / "n.parquet", config)
    assert [(r["id"], r["url"], r["text"]) for r in rows] == [("5", "https://x.org/1", "one"), ("6", None, "two")]
    assert [json.loads(r["metadata"]) for r in rows] == [
        {"extra": 1.5, "meta.url": "https://x.org/1"},
        {"extra": None, "meta.url": None},
    ]
    assert stats.documents == 2


def test_carry_all_none_or_a_list(tmp_path):
    path = write(tmp_path / "d.jsonl", jsonl_bytes([{"text": "t", "a": 1, "b": {"c": 2}}]))
    assert json.loads(read(path)[0][0]["metadata"]) == {"a": 1, "b": {"c": 2}}
    assert json.loads(read(path, DocumentsConfig(carry=["b.c", "zz"]))[0][0]["metadata"]) == {"b.c": 2}
    rows, _ = read(path, DocumentsConfig(carry="none"))
    assert "metadata" not in rows[0]
    assert "metadata" not in DocumentsSource(DocumentsConfig(carry="none")).provides


def test_parquet_carries_typed_values_as_json(tmp_path):
    when = datetime(2020, 5, 6, 7, 8, 9, tzinfo=UTC)
    pq.write_table(
        pa.table(
            {
                "text": ["t"],
                "at": pa.array([when], pa.timestamp("ms", tz="UTC")),
                "raw": [b"\x00\x01"],
                "tags": [["x", "y"]],
            }
        ),
        tmp_path / "t.parquet",
    )
    rows, _ = read(tmp_path / "t.parquet")
    assert json.loads(rows[0]["metadata"]) == {"at": "2020-05-06T07:08:09+00:00", "raw": "AAE=", "tags": ["x", "y"]}


def test_carried_metadata_is_bounded_dropping_the_largest_fields(tmp_path):
    big, mid = "x" * 80_000, "y" * 40_000
    records = [
        {"text": "t", "id": "a", "lang": "en", "blob": big, "notes": mid},  # 120 kB: blob goes, notes stays
        {"text": "t", "id": "b", "lang": "en", "blob": big, "more": big},  # both go
        {"text": "t", "id": "c", "lang": "en"},
    ]
    rows, stats = read(write(tmp_path / "m.jsonl", jsonl_bytes(records)))
    assert [r["reason"] for r in rows] == [None, None, None]  # the documents are kept
    assert [json.loads(r["metadata"]) for r in rows] == [{"lang": "en", "notes": mid}, {"lang": "en"}, {"lang": "en"}]
    assert stats.counters["metadata_fields_dropped"] == 3
    assert "line 1: carried field(s) 'blob' (80,011 bytes) dropped" in stats.errors[0]
    rows, _ = read(tmp_path / "m.jsonl", DocumentsConfig(max_metadata_bytes=1 << 20))
    assert json.loads(rows[1]["metadata"])["more"] == big  # a larger bound keeps them


def test_a_big_binary_parquet_column_is_dropped_before_it_becomes_base64(tmp_path):
    blob = bytes(range(256)) * (8 << 10)  # 2 MiB: 2.7 MiB of base64
    pq.write_table(
        pa.table(
            {
                "text": ["one", "two", "three"],
                "image": [blob, b"\x00\x01", None],
                "page": [1, 2, 3],
                "caption": ["c" * 70_000, "short", None],
            }
        ),
        tmp_path / "b.parquet",
    )
    tracemalloc.start()
    try:
        rows, stats = read(tmp_path / "b.parquet")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [r["text"] for r in kept(rows)] == ["one", "two", "three"]
    assert [json.loads(r["metadata"]) for r in rows] == [
        {"page": 1},
        {"image": "AAE=", "page": 2, "caption": "short"},
        {"image": None, "page": 3, "caption": None},
    ]
    assert stats.counters["metadata_fields_dropped"] == 2 and "'image' (2,796,204 bytes)" in stats.errors[0]
    assert peak < 3 * len(blob)  # the column as read; never its Python bytes and base64 besides


def test_dates_in_json_lines(tmp_path):
    values = [
        "2024-03-04T05:06:07Z",
        "2024-03-04T07:06:07+02:00",
        "2024-03-04",
        1709528767,
        1709528767.9,
        "yesterday",
        None,
        "99999-01-01",
    ]
    rows, stats = read(write(tmp_path / "d.jsonl", jsonl_bytes([{"text": "t", "date": v} for v in values])))
    at = datetime(2024, 3, 4, 5, 6, 7, tzinfo=UTC)
    assert [r["warc_date"] for r in rows] == [at, at, datetime(2024, 3, 4, tzinfo=UTC), at, at, None, None, None]
    assert stats.counters["date_unparsed"] == 2 and stats.documents == len(
        values
    )  # an unparsed date is not a rejection


def test_dates_in_parquet_of_every_type(tmp_path):
    at = datetime(2024, 3, 4, 5, 6, 7, tzinfo=UTC)
    columns = {
        "ts": pa.array([at.replace(tzinfo=None)], pa.timestamp("us")),  # naive: UTC
        "tz": pa.array([at], pa.timestamp("ns", tz="Europe/Paris")),
        "day": pa.array([at.date()], pa.date32()),
        "iso": ["2024-03-04T05:06:07Z"],
        "epoch": [1709528767],
        "big": [10**15],  # beyond year 9999: unparsed
    }
    pq.write_table(pa.table({"text": ["t"], **columns}), tmp_path / "d.parquet")
    got = {}
    for name in columns:
        rows, stats = read(tmp_path / "d.parquet", DocumentsConfig(date=name, carry="none"))
        got[name] = rows[0]["warc_date"]
    assert got == {"ts": at, "tz": at, "day": datetime(2024, 3, 4, tzinfo=UTC), "iso": at, "epoch": at, "big": None}


def test_missing_ids_are_made_stable_and_distinct(tmp_path):
    path = write(
        tmp_path / "d.jsonl",
        jsonl_bytes([{"text": "a"}, {"text": "b", "id": None}, {"text": "c", "id": ""}, {"text": "d", "id": 7}]),
    )
    first, stats = read(path)
    again, _ = read(path)
    ids = [r["id"] for r in first]
    assert ids == [r["id"] for r in again]
    assert len(set(ids)) == 4 and ids[3] == "7" and ids[0] == generated_id(str(path), 1)
    assert stats.counters["id_generated"] == 3
    no_ids, _ = read(path, DocumentsConfig(id=None))
    assert no_ids[3]["id"] == generated_id(str(path), 4)


# ---------------------------------------------------------------------------- rejections


BAD_LINES = [
    (b'{"text": "good one"}', None),
    (b'{"text": "unclosed', "malformed_line"),
    (b"[1, 2, 3]", "not_object"),
    (b'"just a string"', "not_object"),
    (b'{"id": "x"}', "no_text"),
    (b'{"text": null}', "no_text"),
    (b'{"text": ""}', "no_text"),
    (b'{"text": " \\n\\t "}', "no_text"),
    (b'{"text": 42}', "wrong_type"),
    (b'{"text": ["a"]}', "wrong_type"),
    (b'{"text": "t", "url": 5}', "wrong_type"),
    (b'{"text": "t", "id": {"a": 1}}', "wrong_type"),
    (b'{"text": "t", "id": true}', "wrong_type"),
    (b'{"text": "t", "date": [2024]}', "wrong_type"),
    (b'{"text": "caf\xe9"}', "bad_encoding"),  # Latin-1 bytes
    (b'{"text": "lone \\ud800 surrogate"}', "bad_encoding"),
    (b'{"text": "t", "keep": "\\udfff"}', "bad_encoding"),  # in a carried field too
    (b'{"text": "' + b"x" * 5000 + b'"}', "too_large"),
    (b"[" * 3000, "malformed_line"),  # nested past the recursion limit
    (b'{"text": "good two", "id": "g2"}', None),
]


def bad_lines(tmp_path):
    data = b"\xef\xbb\xbf" + b"\n".join(line for line, _ in BAD_LINES) + b"\n\n   \n"
    return write(tmp_path / "bad.jsonl", data), DocumentsConfig(max_record_bytes=4096)


def test_every_bad_line_is_a_counted_rejection_naming_its_line(tmp_path):
    rows, stats = read(*bad_lines(tmp_path))
    assert [r["reason"] for r in rows] == [want for _, want in BAD_LINES]
    for number, row in enumerate(rows, 1):
        if row["reason"] is not None:
            assert row["details"].startswith(f"line {number}") and row["text"] is None and row["id"]
    details = {r["details"] for r in rows if r["reason"] == "wrong_type"}
    assert {
        "line 11: 'url' is a JSON number, not a string",
        "line 14: 'date' is a JSON array, not a date string or number",
    } <= details
    assert rows[11]["id"] == generated_id(str(tmp_path / "bad.jsonl"), 12)  # an id of the wrong type is not used
    assert [r["text"] for r in kept(rows)] == ["good one", "good two"]
    assert stats.counters["blank_lines"] == 2
    assert_adds_up(stats, len(BAD_LINES))
    assert set(stats.rejected) <= set(REASONS)


def test_a_rejected_record_keeps_its_own_id_and_url(tmp_path):
    rows, _ = read(write(tmp_path / "d.jsonl", jsonl_bytes([{"id": "keep-me", "text": None, "url": "https://a/"}])))
    assert rows[0]["id"] == "keep-me" and rows[0]["reason"] == "no_text"


def test_parquet_text_of_the_wrong_type_rejects_its_rows_not_the_file(tmp_path):
    pq.write_table(pa.table({"text": [1, 2, 3], "id": ["a", "b", "c"]}), tmp_path / "w.parquet")
    rows, stats = read(tmp_path / "w.parquet")
    assert reasons(rows) == ["wrong_type"] * 3 and rows[0]["details"] == "'text' is int64, not a string"
    assert [r["id"] for r in rows] == ["a", "b", "c"]
    assert_adds_up(stats, 3)


def test_parquet_rejections_null_empty_missing_and_binary(tmp_path):
    table = pa.table(
        {
            "text": pa.array([b"fine", None, b"", b"  ", b"\xff\xfe", b"x" * 2000], pa.binary()),
            "url": ["u1", "u2", "u3", "u4", "u5", "u6"],
        }
    )
    pq.write_table(table, tmp_path / "r.parquet")
    rows, stats = read(tmp_path / "r.parquet", DocumentsConfig(max_record_bytes=1024))
    assert [r["reason"] for r in rows] == [None, "no_text", "no_text", "no_text", "bad_encoding", "too_large"]
    assert rows[0]["text"] == "fine" and all(r["text"] is None for r in rows[1:])
    assert_adds_up(stats, 6)
    missing, stats = read(tmp_path / "r.parquet", DocumentsConfig(text="body"))
    assert (
        reasons(missing) == ["no_text"] * 6
        and "no 'body' column in the file (it has: text, url)" in missing[0]["details"]
    )
    pq.write_table(pa.table({"text": ["a"], "url": [3]}), tmp_path / "u.parquet")
    assert read(tmp_path / "u.parquet")[0][0]["details"] == "'url' is int64, not a string"


def corrupt_parquet(tmp_path):
    """300 documents in 3 row groups, the second one's text page header overwritten."""
    path = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(docs(300)), path, row_group_size=100, compression="none")
    meta = pq.ParquetFile(path).metadata
    chunk = meta.row_group(1).column(meta.schema.to_arrow_schema().get_field_index("text"))
    data = bytearray(path.read_bytes())
    data[chunk.data_page_offset : chunk.data_page_offset + 16] = b"\xff" * 16  # the page header
    path.write_bytes(bytes(data))
    return path


def test_a_parquet_row_group_that_cannot_be_decoded_costs_its_own_rows(tmp_path):
    path = corrupt_parquet(tmp_path)
    rows, stats = read(path)
    assert [r["reason"] for r in rows] == [None] * 100 + ["read_error"] * 100 + [None] * 100
    assert rows[150]["id"] == generated_id(str(path), 150) and rows[150]["details"].startswith("row group 1:")
    assert [r["text"] for r in rows[200:]] == [d["text"] for d in docs(300)[200:]]
    assert stats.errors and "row group 1" in stats.errors[0]
    assert_adds_up(stats, 300)


def test_a_file_that_is_not_a_document_dump_is_an_error_naming_it(tmp_path):
    for name, data in (
        ("x.jsonl", b"\x89PNG\r\n\x1a\n" + bytes(100)),
        ("y.jsonl", b""),
        ("z.parquet", b"PAR1 truncated"),
    ):
        with pytest.raises(SourceError, match=f"input .*{name} is not JSON lines or Parquet"):
            read(write(tmp_path / name, data))


# ---------------------------------------------------------------------------- damaged and huge inputs


def truncated_gzip(tmp_path, records):
    data = gzip.compress(jsonl_bytes(records))
    return write(tmp_path / "t.jsonl.gz", data[: len(data) * 6 // 10])


def test_a_truncated_gzip_keeps_every_whole_line_and_rejects_the_cut_one(tmp_path):
    records = docs(2000)
    rows, stats = read(truncated_gzip(tmp_path, records))
    good = kept(rows)
    assert 1000 < len(good) < 2000 and [r["text"] for r in good] == [d["text"] for d in records[: len(good)]]
    assert reasons(rows) == ["truncated"]
    assert rows[-1]["details"].startswith(f"line {len(good) + 1}: gzip data ends damaged")
    assert stats.counters["damaged_compression"] == 1 and "truncated" in stats.errors[0]
    assert_adds_up(stats, len(good) + 1)


def test_a_truncated_zstd_keeps_every_whole_line_too(tmp_path):
    records = docs(2000)
    cut = zstandard.ZstdCompressor().compress(jsonl_bytes(records))[:30_000]
    decodable = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(cut)).read()  # stops at the cut, silently
    rows, stats = read(write(tmp_path / "t.jsonl.zst", cut))
    assert len(kept(rows)) == decodable.count(b"\n") > 0  # none lost, though Arrow's decoder drops its last read
    assert [r["text"] for r in kept(rows)] == [d["text"] for d in records[: len(kept(rows))]]
    assert reasons(rows) == ["truncated"] and "zstd data ends damaged" in rows[-1]["details"]
    assert stats.counters["damaged_compression"] == 1


def test_zstd_frames_one_after_another_are_one_stream(tmp_path):
    frames = b"".join(zstandard.ZstdCompressor().compress(jsonl_bytes(docs(100, seed=s))) for s in range(3))
    rows, stats = read(write(tmp_path / "f.jsonl.zst", frames))
    assert [r["text"] for r in rows] == [d["text"] for s in range(3) for d in docs(100, seed=s)]


def test_damaged_gzip_member_resumes_at_the_next(tmp_path):
    members = [gzip.compress(jsonl_bytes(docs(50, seed=s))) for s in range(3)]
    broken = bytearray(members[1])
    broken[40:200] = bytes(160)  # inside the deflate data
    rows, stats = read(write(tmp_path / "m.jsonl.gz", members[0] + bytes(broken) + members[2]))
    texts = [r["text"] for r in kept(rows)]
    assert texts[:50] == [d["text"] for d in docs(50, seed=0)] and texts[-50:] == [d["text"] for d in docs(50, seed=2)]
    assert stats.counters["damaged_compression"] >= 1
    assert_adds_up(stats, stats.records)


class Endless(io.RawIOBase):
    """A seekable file holding a line of ``size`` bytes, then a good line; never more than one read in memory."""

    def __init__(self, size: int):
        self.head = b'{"text": "'
        self.tail = b'"}\n{"text": "after the huge line"}\n'
        self.size = len(self.head) + size + len(self.tail)
        self.pos = 0
        self.block = b"x" * READ_AHEAD

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=0):
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def tell(self):
        return self.pos

    def read(self, n=-1):
        n = min(n, len(self.block)) if n >= 0 else len(self.block)
        start, end = self.pos, min(self.pos + n, self.size)
        body_end = self.size - len(self.tail)
        if start >= len(self.head) and end <= body_end:  # inside the line: no copy
            self.pos = end
            return self.block if end - start == len(self.block) else self.block[: end - start]
        out = bytearray()
        if start < len(self.head):
            out += self.head[start:end]
        if end > len(self.head) and start < body_end:
            out += self.block[: min(end, body_end) - max(start, len(self.head))]
        if end > body_end:
            out += self.tail[max(start - body_end, 0) : end - body_end]
        self.pos = end
        return bytes(out)


def test_a_2_gb_line_is_skipped_in_bounded_memory():
    size, bound = (2 << 30) + 7, 4 << 20
    stats, source, stream = DocumentStats(), DocumentsSource(DocumentsConfig(max_record_bytes=bound)), Endless(size)
    tracemalloc.start()
    try:
        tables = list(source.read(stream, "huge.jsonl", stats))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rows = pa.concat_tables(tables).to_pylist()
    assert [r["reason"] for r in rows] == ["too_large", None]
    assert rows[0]["details"] == f"line 1: {size + 12} bytes > max_record_bytes {bound}"
    assert rows[1]["text"] == "after the huge line"
    assert peak < bound + 3 * READ_AHEAD, f"peak {peak >> 20} MiB"  # a line held whole would be 2 GiB


# ---------------------------------------------------------------------------- bombs and blank runs (issue 42.5)


def test_blank_runs_are_skipped_without_a_step_per_line():
    data = b"\n" * 3_000_000 + b" \r\n\t\n" * 1000 + jsonl_bytes(docs(2)) + b"\n" * (3 * CHUNK + 5) + b"  \n"
    blanks = []
    lines = list(iter_lines(io.BytesIO(data).read, 1 << 20, lambda e: None, blanks.append))
    assert [line.number for line in lines] == [3_002_001, 3_002_002]  # numbers count the blank lines
    assert [json.loads(line.data)["id"] for line in lines] == ["doc-0", "doc-1"]
    assert sum(blanks) == 3_002_000 + 3 * CHUNK + 6 and len(blanks) <= 8  # a few runs, never one call per line


def test_lines_split_anywhere_across_chunks_read_as_one(tmp_path):
    records = docs(300)
    data = b"".join(b"  \n" * (i % 3) + json.dumps(r).encode() + b"\n" for i, r in enumerate(records))
    for step in (1, 7, 4096):  # reads of every size: lines, blank runs and leading spaces cut everywhere
        stream = io.BytesIO(data)
        blanks = []
        lines = list(iter_lines(lambda n, s=stream, k=step: s.read(k), 1 << 20, lambda e: None, blanks.append))
        assert [json.loads(line.data)["id"] for line in lines] == [r["id"] for r in records]
        assert [line.number for line in lines] == [sum(i % 3 + 1 for i in range(k + 1)) for k in range(300)]
        assert sum(blanks) == sum(i % 3 for i in range(300))


@pytest.mark.parametrize("ext", ["jsonl.gz", "jsonl.zst"])
@pytest.mark.parametrize("bomb", ["blank lines", "empty objects"])
def test_a_compressed_bomb_is_cut_and_named_not_read_into_millions_of_rows(tmp_path, ext, bomb):
    body = b"\n" * (64 << 20) if bomb == "blank lines" else b"{}\n" * (16 << 20)
    path = write(tmp_path / f"bomb.{ext}", WRITERS[ext](jsonl_bytes(docs(3)) + body + jsonl_bytes(docs(2, seed=1))))
    assert path.stat().st_size < 300_000  # 48-64 MiB of data in a few kB
    rows, stats = read(path)
    # The bound is met in the first MiB (which held the first documents too): one row names the file, where
    # reading it whole gave 16M no_text rows; nothing after the bomb is read.
    assert [r["reason"] for r in rows] == ["decompression_bomb"]
    assert "max_decoded_ratio" in rows[0]["details"] and rows[0]["source"] == str(path)
    assert stats.counters["decompression_bomb"] == 1 and str(path) in stats.errors[-1]
    assert_adds_up(stats, len(rows))


def test_the_bound_is_on_the_file_so_far_a_bomb_after_real_documents_keeps_them(tmp_path):
    rng = random.Random(5)
    real = [{"id": f"r{i}", "text": " ".join(str(rng.randrange(10**9)) for _ in range(150))} for i in range(800)]
    data = WRITERS["jsonl.zst"](jsonl_bytes(real) + b"{}\n" * (64 << 20))
    path = write(tmp_path / "tail.jsonl.zst", data)
    rows, stats = read(path, DocumentsConfig(max_decoded_ratio=6))  # the real lines inflate ~3.5x
    assert [r["id"] for r in kept(rows)] == [r["id"] for r in real]
    assert reasons(rows)[-1] == "decompression_bomb" and rows[-1]["details"].startswith(f"line {len(rows)} on: ")
    # what the bomb gave before the bound: at most 6x the compressed bytes read in all, 3 bytes a row
    assert len(rows) - len(real) - 1 < 6 * len(data) / 3


def test_a_file_that_merely_compresses_well_is_read_whole(tmp_path):
    records = [{"id": f"d{i}", "text": "the same sentence again. " * 40} for i in range(3000)]  # ~100x in gzip
    path = write(tmp_path / "repetitive.jsonl.gz", gzip.compress(jsonl_bytes(records)))
    rows, stats = read(path)
    assert len(kept(rows)) == 3000 and stats.counters["decompression_bomb"] == 0
    rows, _ = read(path, DocumentsConfig(max_decoded_ratio=20))  # a tighter bound cuts it
    assert reasons(rows) == ["decompression_bomb"]


# ---------------------------------------------------------------------------- I/O errors are not damage


class Failing(io.BytesIO):
    """A file whose reads fail (as S3 does when it gives up) once ``after`` bytes have been read."""

    def __init__(self, data: bytes, after: int):
        super().__init__(data)
        self.after = after

    def read(self, n=-1):
        if self.tell() >= self.after:
            raise OSError("simulated: the connection was reset")
        return super().read(n if n >= 0 else self.after - self.tell())


@pytest.mark.parametrize("kind", ["jsonl.zst", "jsonl.gz", "parquet"])
def test_a_failed_read_of_the_file_fails_the_unit_instead_of_rejecting_rows(kind):
    records = docs(3000)
    if kind == "parquet":
        buf = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(records), buf, row_group_size=500)
        data = buf.getvalue()
    else:
        data = WRITERS[kind](jsonl_bytes(records))
    with pytest.raises(OSError, match="simulated"):
        list(DocumentsSource().read(Failing(data, len(data) // 2), kind, DocumentStats()))


# ---------------------------------------------------------------------------- S3


@pytest.mark.s3
def test_reads_json_lines_and_parquet_from_s3(tmp_path, s3_server):
    from core.storage import S3Options, open_input

    fs = pafs.S3FileSystem(
        endpoint_override=s3_server.removeprefix("http://"),
        scheme="http",
        region="us-east-1",
        access_key="testing",
        secret_key="testing",
        allow_bucket_creation=True,
        force_virtual_addressing=False,
    )
    fs.create_dir("docs-bucket")
    records = docs(400)
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "d.parquet", row_group_size=100)
    files = {"d.jsonl.gz": gzip.compress(jsonl_bytes(records)), "d.parquet": (tmp_path / "d.parquet").read_bytes()}
    for name, data in files.items():
        with fs.open_output_stream(f"docs-bucket/in/{name}", compression=None) as f:  # not gzipped again by its name
            f.write(data)
        uri = f"s3://docs-bucket/in/{name}"
        stats = DocumentStats()
        with open_input(uri, S3Options(endpoint_url=s3_server)) as raw:
            rows = pa.concat_tables(DocumentsSource().read(raw, uri, stats)).to_pylist()
        assert [r["text"] for r in rows] == [d["text"] for d in records]
        assert rows[0]["source"] == uri
        assert_adds_up(stats, 400)


# ---------------------------------------------------------------------------- stats


def test_stats_merge_and_add_up_across_files(tmp_path):
    a = read(write(tmp_path / "a.jsonl", b'{"text": "x"}\nnot json\n'))[1]
    b = read(write(tmp_path / "b.jsonl", b'{"text": 1}\n{"text": "y"}\n{"text": "z"}\n'))[1]
    total = DocumentStats().merge(a).merge(b)
    assert (total.records, total.documents, dict(total.rejected)) == (5, 3, {"malformed_line": 1, "wrong_type": 1})
    assert total.to_dict()["rejected_by_reason"] == {"malformed_line": 1, "wrong_type": 1}
    assert total.bytes == a.bytes + b.bytes


def test_every_declared_reason_is_given_and_no_other(tmp_path):
    given = Counter()
    bomb = write(tmp_path / "bomb.jsonl.gz", gzip.compress(b"{}\n" * (4 << 20)))
    for path, config in (
        bad_lines(tmp_path),
        (truncated_gzip(tmp_path, docs(500)), None),
        (corrupt_parquet(tmp_path), None),
        (bomb, None),
    ):
        given.update(read(path, config)[1].rejected)
    assert sorted(given) == sorted(REASONS)


def test_the_warc_source_declares_what_the_warc_reader_gives():
    found = set()
    for module in ("warc.py", "http_decode.py"):
        code = (REPO / "stages" / module).read_text()
        for pattern in (r'return "(\w+)", ', r'REASON: "(\w+)"', r'PayloadRejected\(\s*"(\w+)"'):
            found.update(re.findall(pattern, code))
    assert found and sorted(found) == sorted(WARC_REASONS)
    assert WarcSource.provides == (
        "id",
        "url",
        "warc_date",
        "source",
        "content_type",
        "http_status",
        "http_charset",
        "payload",
    )


def test_the_source_describes_itself():
    source = DocumentsSource()
    assert source.name == "documents" and source.label
    assert source.provides == ("id", "url", "warc_date", "source", "content_type", "text", "metadata")
    assert len(set(REASONS)) == len(REASONS) == len(source.reasons)


# ---------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"text": "a..b"}, "'a..b' is not a field name or dotted path"),
        ({"text": ""}, "is not a field name"),
        ({"url": "text"}, "documents.url and documents.text both name the field 'text'"),
        ({"date_format": "YYYY-MM-DD"}, "has no strptime directive"),
        ({"carry": "some"}, "carry"),
        ({"txt": "body"}, "txt"),
    ],
)
def test_config_errors_name_the_field_and_the_fix(fields, message):
    with pytest.raises(ValidationError, match=message):
        DocumentsConfig(**fields)


# ---------------------------------------------------------------------------- sniff


def tar_bytes() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        info = tarfile.TarInfo("a.jsonl")
        info.size = 14
        t.addfile(info, io.BytesIO(b'{"text": "x"}\n'))
    return buf.getvalue()


def parquet_bytes() -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"text": ["a"]}), buf)
    return buf.getvalue()


def readable(found) -> str | None:
    """The format of a file some source reads, else None."""
    return found.format if found.kind is not None else None


def test_sniff_tells_each_kind_by_content(warc_factory):
    plain_warc = warc_factory("p.warc", [Page("https://a/", html("t", "p").encode())], gzip=False).read_bytes()
    line = jsonl_bytes(docs(3))
    cases = {
        "warc (gzip)": (next(SAMPLES.glob("*.warc.gz")).read_bytes()[:HEAD_BYTES], "x.warc.gz", "warc"),
        "warc (plain)": (plain_warc, "x.warc", "warc"),
        "jsonl": (line, "whatever.bin", "jsonl"),
        "jsonl.gz": (gzip.compress(line), "x.jsonl.gz", "jsonl"),
        "jsonl.zst": (zstandard.ZstdCompressor().compress(line), "x.jsonl.zst", "jsonl"),
        "jsonl, a BOM and blank lines first": (b"\xef\xbb\xbf\n\n" + line, "x", "jsonl"),
        "parquet": (parquet_bytes(), "x.parquet", "parquet"),
        "warc in zstd (the WARC reader does not read it)": (
            zstandard.ZstdCompressor().compress(plain_warc),
            "x.warc.zst",
            None,
        ),
        "png": (b"\x89PNG\r\n\x1a\n" + bytes(64), "x.jsonl", None),
        "tar": (tar_bytes(), "x.jsonl", None),
        "random": (random.Random(1).randbytes(4096), "x.jsonl.gz", None),
        "empty": (b"", "x.jsonl", None),
        "gzip of nothing": (gzip.compress(b""), "x.jsonl.gz", None),
        "damaged gzip": (b"\x1f\x8b\x08\x00" + bytes(60), "x.jsonl.gz", None),
        "pretty-printed JSON": (b'{\n  "text": "a"\n}\n', "x.json", None),
        "a JSON array": (b'[{"text": "a"}]', "x.json", None),
        "a zstd bomb": (zstandard.ZstdCompressor().compress(bytes(1 << 28)), "x.jsonl.zst", None),
    }
    got = {name: readable(sniff(head[:HEAD_BYTES], fname)) for name, (head, fname, _) in cases.items()}
    assert got == {name: want for name, (_, _, want) in cases.items()}


def test_sniff_breaks_a_tie_by_name_when_the_first_line_outruns_the_head():
    head = b'{"text": "' + b"x" * HEAD_BYTES
    assert readable(sniff(head[:HEAD_BYTES], "wiki.jsonl")) == "jsonl"
    assert readable(sniff(head[:HEAD_BYTES], "wiki.json.gz")) == "jsonl"
    assert readable(sniff(head[:HEAD_BYTES], "wiki.txt")) is None


def test_sniff_stream_checks_parquet_at_both_ends_and_keeps_the_position():
    data = parquet_bytes()
    f = io.BytesIO(b"ignored" + data)
    f.seek(7)
    assert readable(sniff_stream(f, "x.parquet")) == "parquet" and f.tell() == 7
    assert readable(sniff_stream(io.BytesIO(data[:-1]), "x.parquet")) is None  # no closing PAR1: cut short
    assert readable(sniff_stream(io.BytesIO(b"PAR1"), "x.parquet")) is None
    assert readable(sniff_stream(io.BytesIO(jsonl_bytes(docs(2))), "x.jsonl")) == "jsonl"
