"""Eval sets: JSON lines (plain, gzip, zstd), Parquet and text files, local and on S3, read into items;
bad files refused with one line naming the set, the file and where; the config's bounds and errors."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from pydantic import ValidationError

from stages.decontam import DecontamConfig, EvalSetConfig, EvalSetError, build_index, read_eval_set
from stages.named_files import NamedFileError

MMLU = [
    {
        "id": "anatomy-0",
        "question": "Which of the following is the body cavity that contains the pituitary gland?",
        "choices": ["Abdominal", "Cranial", "Pleural", "Spinal"],
        "answer": 1,
    },
    {
        "id": "anatomy-1",
        "question": "What is the embryological origin of the hyoid bone?",
        "choices": ["The first pharyngeal arch", "The second and third pharyngeal arches", "The third", "The fourth"],
        "answer": 2,
    },
]
MMLU_TEXTS = [r["question"] + " " + " ".join(r["choices"]) for r in MMLU]


def _jsonl(records: list[dict]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _read(path, **kw):
    return read_eval_set(EvalSetConfig(path=str(path), **kw))


# ---------------------------------------------------------------- formats


def test_mmlu_style_jsonl_plain_gzip_and_zstd(tmp_path):
    data = _jsonl(MMLU)
    plain, gz, zst = tmp_path / "mmlu.jsonl", tmp_path / "mmlu.jsonl.gz", tmp_path / "mmlu.jsonl.zst"
    plain.write_bytes(b"\n" + data + b"\n\n")  # blank lines are not items
    gz.write_bytes(gzip.compress(data[:200]) + gzip.compress(data[200:]))  # two gzip members
    zst.write_bytes(zstandard.ZstdCompressor().compress(data))
    for path in (plain, gz, zst):
        items = _read(path, fields=["question", "choices"], id_field="id")
        assert (items.name, items.ids, items.texts) == ("mmlu", ["anatomy-0", "anatomy-1"], MMLU_TEXTS)


def test_nested_fields_numbers_and_positions(tmp_path):
    path = tmp_path / "gsm.jsonl"
    path.write_bytes(
        _jsonl([{"doc": {"question": "Natalia sold clips.", "answer": 72}}, {"doc": {"question": "Weng earns."}}])
    )
    items = _read(path, fields=["doc.question", "doc.answer"])
    assert items.ids == ["0", "1"] and items.texts == ["Natalia sold clips. 72", "Weng earns."]


def test_parquet_with_a_list_column(tmp_path):
    path = tmp_path / "mmlu.parquet"
    pq.write_table(pa.Table.from_pylist(MMLU), path)
    items = _read(path, fields=["question", "choices"], id_field="id")
    assert items.texts == MMLU_TEXTS and items.ids == ["anatomy-0", "anatomy-1"]
    assert _read(path, fields=["question"], format="parquet").ids == ["0", "1"]


def test_text_one_item_per_line(tmp_path):
    path = tmp_path / "passages.txt"
    path.write_bytes("\ufeffFirst passage, with a comma.\n\n  \nSecond passage — café.\n".encode())
    items = _read(path)
    assert (items.name, items.ids, items.texts) == (
        "passages",
        ["0", "1"],
        ["First passage, with a comma.", "Second passage — café."],
    )
    path.with_suffix(".gz").write_bytes(gzip.compress(path.read_bytes()))
    assert _read(path.with_suffix(".gz"), format="text").texts == items.texts


def test_read_from_s3(s3_server, tmp_path):
    """Through the opener a run gives (its endpoint and credentials): the eval sets of a run may live on S3."""
    import boto3
    from pyarrow import fs

    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.create_bucket(Bucket="evals")
    s3.put_object(Bucket="evals", Key="mmlu/test.jsonl.gz", Body=gzip.compress(_jsonl(MMLU)))
    filesystem = fs.S3FileSystem(
        endpoint_override=s3_server.removeprefix("http://"), scheme="http", region="us-east-1"
    )

    def open_file(uri: str):
        return filesystem.open_input_file(uri.removeprefix("s3://"))

    config = DecontamConfig(
        eval_sets=[{"path": "s3://evals/mmlu/test.jsonl.gz", "fields": ["question", "choices"], "id_field": "id"}]
    )
    assert read_eval_set(config.eval_sets[0], open_file).texts == MMLU_TEXTS
    index = build_index(config, open_file)
    assert index.stats.eval_sets[0].items_ngrams == 2
    for named in config.named_files():
        named.check(named.path, open_file)
    with pytest.raises(NamedFileError, match="no dataset at 's3://evals/nope.jsonl'"):
        named.check("s3://evals/nope.jsonl", open_file)


# ---------------------------------------------------------------- bad files: one line each


def _bad(tmp_path, name: str, content: bytes | None, **kw) -> str:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(EvalSetError) as e:
        _read(path, name="ev", **kw)
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"eval set 'ev' ({path}): ")
    return message


@pytest.mark.parametrize("name, content, kw, expected", [
    ("missing.jsonl", None, {}, "no such file"),
    ("array.json", b'[{"text": "a"}]', {}, "is JSON but not JSON lines"),
    ("pretty.jsonl", b'{\n  "text": "a"\n}\n', {}, "is JSON but not JSON lines"),
    ("broken.jsonl", b'{"text": "a"}\n{"text": \n', {}, "line 2 is not JSON"),
    ("list.jsonl", b'{"text": "a"}\n[1, 2]\n', {}, "line 2 is not a JSON object"),
    ("nofield.jsonl", b'{"question": "a"}\n', {}, "line 1 has no text in text"),
    ("empty_text.jsonl", b'{"text": "a"}\n{"text": "  "}\n', {}, "line 2 has no text in text"),
    ("object.jsonl", b'{"text": {"en": "a"}}\n', {}, "field 'text' holds an object"),
    ("dup.jsonl", b'{"id": 1, "text": "a"}\n{"id": 1, "text": "b"}\n',
     {"id_field": "id"}, "line 2: id '1' is also the id of line 1"),
    ("noid.jsonl", b'{"id": 1, "text": "a"}\n{"text": "b"}\n', {"id_field": "id"}, "line 2: id field 'id' is missing"),
    ("empty.jsonl", b"", {}, "no items in the file"),
    ("blank.txt", b"\n \n", {}, "no items in the file"),
    ("crawl.warc", b"WARC/1.0\r\nWARC-Type: warcinfo\r\n\r\n", {}, "is a WARC file"),
    ("random.bin", bytes(range(256)) * 4, {}, "not JSON lines, Parquet nor UTF-8 text"),
    ("cut.jsonl.gz", gzip.compress(b'{"text": "a"}\n' * 100)[:-12], {}, "truncated gzip data"),
    ("damaged.jsonl.gz", gzip.compress(b'{"text": "a"}\n')[:10] + b"\xff" * 30, {}, "damaged gzip data"),
    ("latin1.txt", "caf\xe9 au lait\n".encode("latin-1") * 3, {"format": "text"}, "line 1 is not UTF-8 text"),
    ("fake.parquet", b"PAR1" + b"\0" * 64 + b"PAR1", {}, "is not a readable Parquet file"),
    ("text.jsonl", b"just text\n", {"format": "parquet"}, "format is parquet but the file is not a Parquet file"),
])  # fmt: skip
def test_bad_files_are_refused_with_one_line(tmp_path, name, content, kw, expected):
    assert expected in _bad(tmp_path, name, content, **kw)


def test_folder_missing_parquet_column_and_size_bounds(tmp_path):
    (tmp_path / "dir").mkdir()
    assert "is a folder" in _bad(tmp_path, "dir", None)
    pq.write_table(pa.Table.from_pylist(MMLU), tmp_path / "m.parquet")
    assert "has no column 'prompt' (it has answer, choices, id, question)" in _bad(
        tmp_path, "m.parquet", None, fields=["prompt"]
    )
    big = tmp_path / "big.jsonl"
    big.write_bytes(b'{"text": "a"}\n' * 100)
    with pytest.raises(EvalSetError, match="larger than decontam.max_file_bytes"):
        read_eval_set(EvalSetConfig(path=str(big)), max_bytes=1000)
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(b'{"text": "a"}\n' * 10_000))
    with pytest.raises(EvalSetError, match="decompresses to more than decontam.max_file_bytes"):
        read_eval_set(EvalSetConfig(path=str(bomb)), max_bytes=10_000)


def test_an_index_over_its_bound_is_refused_before_it_is_finished(tmp_path):
    path = tmp_path / "a.txt"
    words = "has words one two three four five six seven eight nine ten"
    path.write_text("".join(f"item {i} {words}\n" for i in range(5000)))
    config = DecontamConfig(eval_sets=[str(path)])
    whole = build_index(config).stats.nbytes
    with pytest.raises(
        EvalSetError,
        match=r"^eval sets: the index of the first 2,048 items takes [\d,]+ bytes, more "
        r"than the 100,000 it may take of the cluster's object store",
    ):
        build_index(config, max_index_bytes=100_000)
    assert build_index(config, max_index_bytes=2 * whole).stats.nbytes == whole


def test_too_many_items_over_all_sets(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("one two three four five six seven eight nine\n" * 6)
    config = DecontamConfig(eval_sets=[str(path), {"path": str(path), "name": "again"}], max_items=10)
    with pytest.raises(EvalSetError, match=r"12 items, more than decontam.max_items \(10\)"):
        build_index(config)


# ---------------------------------------------------------------- plan-time checks


def test_named_files_check_every_record_at_plan_time(tmp_path):
    good = tmp_path / "mmlu.jsonl"
    good.write_bytes(_jsonl([{**r, "id": f"{r['id']}-{i}"} for i in range(3000) for r in MMLU]))  # more than a head
    pq.write_table(pa.Table.from_pylist(MMLU), tmp_path / "mmlu.parquet")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"prompt": "a"}\n')
    config = DecontamConfig(eval_sets=[
        {"path": str(good), "fields": ["question", "choices"], "id_field": "id"},
        {"path": str(tmp_path / "mmlu.parquet"), "name": "mmlu_pq", "fields": ["question", "subject"]},
        {"path": str(bad)},
        {"path": str(tmp_path / "absent.txt")},
        {"path": str(tmp_path / "fake.parquet")},
    ])  # fmt: skip
    (tmp_path / "fake.parquet").write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    problems = {}
    for named in config.named_files():
        try:
            named.check(named.path, lambda p: open(p, "rb"))
        except NamedFileError as e:
            problems[named.field] = str(e)
    assert set(problems) == {"eval_sets[1].path", "eval_sets[2].path", "eval_sets[3].path", "eval_sets[4].path"}
    assert all("\n" not in p for p in problems.values())
    assert "is not a readable Parquet file" in problems["eval_sets[4].path"]
    assert "has no column 'subject'" in problems["eval_sets[1].path"]
    assert "line 1 has no text in text" in problems["eval_sets[2].path"]
    assert problems["eval_sets[3].path"].startswith("no dataset at")


def _check(path, **kw) -> str | None:
    config = DecontamConfig(eval_sets=[{"path": str(path), **kw}])
    (named,) = config.named_files()
    try:
        named.check(named.path, lambda p: open(p, "rb"))
    except NamedFileError as e:
        return str(e)
    return None


@pytest.mark.parametrize(
    "name, data, expected",
    [
        ("empty.jsonl", b"", "has no items (give a file with at least one record)"),
        ("blank.jsonl.gz", gzip.compress(b"\n\n  \n"), "has no items"),
        (
            "deep-utf8.txt",
            b"a question of eight words or so here\n" * 15_000 + b"caf\xe9 latin-1 line\n",
            "line 15001 is not UTF-8 text",
        ),
        ("deep-json.jsonl", b'{"text": "a question"}\n' * 19_000 + b'{"text": "cut\n', "line 19001 is not JSON"),
        (
            "deep-json.jsonl.zst",
            zstandard.ZstdCompressor().compress(b'{"text": "q"}\n' * 19_000 + b"[1, 2]\n"),
            "line 19001 is not a JSON object",
        ),
        (
            "deep-field.jsonl.gz",
            gzip.compress(b'{"text": "q"}\n' * 19_000 + b'{"question": "q"}\n'),
            "line 19001 has no text in text",
        ),
        ("cut.jsonl.gz", gzip.compress(b'{"text": "q"}\n' * 19_000)[:-20], "gzip data is truncated or damaged"),
    ],
    ids=[
        "empty",
        "blank-lines",
        "utf8-at-15001",
        "json-at-19001",
        "zstd-array-at-19001",
        "no-field-at-19001",
        "cut-gzip",
    ],
)
def test_a_bad_eval_file_is_refused_at_plan_time_wherever_the_fault_is(tmp_path, name, data, expected):
    """Before, only the file's first 64 KB were read at plan time: an empty file, a non-UTF-8 line at 15,001 or a
    bad JSON line at 19,001 passed `validate`, and the run failed after phases 1 and 2."""
    (tmp_path / name).write_bytes(data)
    problem = _check(tmp_path / name)
    assert problem is not None and expected in problem, problem
    assert problem.startswith(f"'{tmp_path / name}' ") and "\n" not in problem


def test_duplicate_ids_and_too_many_items_are_refused_at_plan_time(tmp_path):
    path = tmp_path / "ids.jsonl"
    path.write_bytes(_jsonl([{"id": i % 20_000, "text": "q"} for i in range(20_001)]))
    assert "line 20001: id '0' is also the id of line 1" in _check(path, id_field="id")
    config = DecontamConfig(eval_sets=[str(path)], max_items=20_000)
    with pytest.raises(NamedFileError, match=r"holds more than decontam.max_items \(20,000\) items"):
        config.named_files()[0].check(str(path), lambda p: open(p, "rb"))
    assert _check(path) is None  # positions as ids: fine


# ---------------------------------------------------------------- the config


def test_config_shorthands_and_defaults():
    c = DecontamConfig(
        eval_sets=["data/evals/gsm8k_test.jsonl.gz", {"path": "s3://b/mmlu/test.parquet", "name": "mmlu"}]
    )
    assert c.enabled and c.ngram == 13 and c.action == "remove" and c.index == "exact"
    assert [s.name for s in c.eval_sets] == ["gsm8k_test", "mmlu"]
    assert c.eval_sets[0].fields == ["text"] and c.eval_sets[0].format == "auto"
    assert not DecontamConfig().enabled
    assert not DecontamConfig(enabled=False, eval_sets=["a.jsonl"]).enabled


@pytest.mark.parametrize("data, expected", [
    ({"enabled": True}, "enabled with no eval_sets"),
    ({"eval_sets": ["a.jsonl"], "ngram": 5}, "greater than or equal to 8"),
    ({"eval_sets": ["a.jsonl"], "ngram": 10, "min_item_words": 12}, "min_item_words (12) is more than ngram (10)"),
    ({"eval_sets": ["x/a.jsonl", "y/a.txt"]}, "eval_sets[1] and eval_sets[0] are both named 'a'"),
    ({"eval_sets": [{"path": "a.txt", "format": "text", "fields": ["q"]}]}, "a text eval set has one item per line"),
    ({"eval_sets": [{"path": "a.jsonl", "fields": ["q..a"]}]}, "'q..a' is not a field name"),
    ({"eval_sets": [{"path": "a.jsonl", "name": "my set"}]}, "name 'my set' may hold only"),
    ({"eval_sets": [{"path": "a.jsonl", "fields": []}]}, "at least 1 item"),
    ({"eval_sets": ["a.jsonl"], "bloom_fpr": 0.5}, "less than or equal to 0.01"),
    ({"eval_sets": ["a.jsonl"], "action": "drop"}, "'remove' or 'tag'"),
    ({"eval_sets": ["a.jsonl"], "treshold": 3}, "Extra inputs are not permitted"),
])  # fmt: skip
def test_config_errors_name_the_field_and_the_fix(data, expected):
    with pytest.raises(ValidationError) as e:
        DecontamConfig(**data)
    assert expected in str(e.value)
