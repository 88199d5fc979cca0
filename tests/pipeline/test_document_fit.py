"""Document inputs whose records cannot fit the `documents` settings are refused at plan time, one line naming the
file and the field (stages/sources/documents_fit.py, pipeline/preflight.check_document_fields): before, `validate`
said "config ok", and the run rejected every record (0 documents, exit 0) or, in a mix, failed at the shards."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.config import ConfigError, parse_config
from pipeline.preflight import MAX_REMOTE_FIT_CHECKS, check_document_fields, preflight
from tests.conftest import REPO, Page, html


def _jsonl(records: list[dict]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _parquet(path, records: list[dict]):
    pq.write_table(pa.Table.from_pylist(records), path)
    return path


def _problems(tmp_path, files: list, **sections) -> list[str]:
    config = parse_config({"inputs": [str(f) for f in files], "output": str(tmp_path / "out"), **sections})
    return check_document_fields(config, [str(f) for f in files])


WIKI = [{"id": i, "content": f"article {i} about a subject", "url": f"https://w.example/{i}"} for i in range(5)]


def test_a_parquet_file_without_the_text_column_is_named_with_the_field(tmp_path):
    path = _parquet(tmp_path / "wiki.parquet", WIKI)
    assert _problems(tmp_path, [path]) == [
        f"config error: documents.text: input {path} has no column 'text' (its columns: id, content, url): "
        "set documents.text to the field that holds the text"
    ]
    assert _problems(tmp_path, [path], documents={"text": "content"}) == []


def test_json_lines_whose_first_records_lack_the_field_are_named(tmp_path):
    plain, zipped = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"
    plain.write_bytes(_jsonl(WIKI))
    zipped.write_bytes(
        gzip.compress(b"\n" + _jsonl(WIKI[:2]) + b'{"cut": \n' + _jsonl(WIKI[2:]))
    )  # a bad line: skipped
    problems = _problems(tmp_path, [plain, zipped])
    assert problems == [
        f"config error: documents.text: input {p} has no 'text' field in its first 5 records (their fields: "
        "content, id, url): set documents.text to the field that holds the text"
        for p in (plain, zipped)
    ]
    numbers = tmp_path / "n.jsonl"
    numbers.write_bytes(_jsonl([{"text": 3}, {"text": [1]}]))
    assert _problems(tmp_path, [numbers])[0].endswith(
        f"input {numbers} holds no string in its 'text' field in its first 2 records (a JSON array or number): "
        "set documents.text to the field that holds the text"
    )


def test_records_that_mostly_fit_pass_and_each_bad_one_stays_a_rejection(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(_jsonl([{"title": "no text here"}, {"text": "a text"}, {"text": None}]))
    assert _problems(tmp_path, [path]) == []
    nested = _parquet(tmp_path / "nested.parquet", [{"doc": {"body": "b", "meta": {"u": "x"}}}])
    assert _problems(tmp_path, [nested], documents={"text": "doc.body", "url": "doc.meta.u"}) == []
    assert _problems(tmp_path, [nested], documents={"text": "doc.body", "url": "doc.meta.link"}) == [
        f"config error: documents.url: input {nested} has no column 'doc.meta.link' (its columns: doc): "
        "set documents.url to the field that holds it, or null"
    ]
    assert _problems(tmp_path, [REPO / "samples" / "CC-MAIN-20260112000513-20260112001755-00000.warc.gz"]) == []


def test_a_column_of_the_wrong_type_and_a_missing_id_field_the_config_names(tmp_path):
    path = _parquet(tmp_path / "t.parquet", [{"text": 1, "doc_id": 2.5}])
    assert _problems(tmp_path, [path])[0].startswith(
        f"config error: documents.text: input {path} has a column 'text' of type int64, not a string: "
    )
    good = _parquet(tmp_path / "g.parquet", [{"text": "a", "doc_id": 2.5}])
    assert _problems(tmp_path, [good]) == []  # the default id field may be absent
    assert _problems(tmp_path, [good], documents={"id": "key"})[0].startswith(
        f"config error: documents.id: input {good} has no column 'key' (its columns: text, doc_id)"
    )
    assert _problems(tmp_path, [good], documents={"id": "doc_id"})[0].startswith(
        f"config error: documents.id: input {good} has a column 'doc_id' of type double, not a string or an integer"
    )


def test_in_a_mix_each_file_is_checked_with_its_own_source_settings(tmp_path):
    web = tmp_path / "web"
    web.mkdir()
    (web / "web.jsonl").write_bytes(_jsonl([{"text": "a web page"}]))
    code = tmp_path / "code"
    code.mkdir()
    path = _parquet(code / "code.parquet", [{"content": "print(1)", "repo": "r"}])
    data = {
        "sources": [
            {"name": "web", "inputs": [str(web)]},
            {"name": "code", "inputs": [str(code)], "documents": {"text": "body"}},
        ],
        "mix": {"weights": {"web": 0.5, "code": 0.5}},
        "output": str(tmp_path / "out"),
    }
    config = parse_config(data)
    with pytest.raises(ConfigError) as e:
        preflight(config, [str(web / "web.jsonl"), str(path)])
    assert str(e.value).splitlines() == [
        f"config error: sources[1] (code): documents.text: input {path} has no column 'body' (its columns: content, "
        "repo): set documents.text to the field that holds the text"
    ]
    data["sources"][1]["documents"] = {"text": "content"}
    preflight(parse_config(data), [str(web / "web.jsonl"), str(path)])


def test_validate_refuses_the_file_in_one_line_before_any_work(tmp_path):
    path = _parquet(tmp_path / "wiki.parquet", WIKI)
    out = tmp_path / "out"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"inputs": [str(path)], "output": str(out)}))
    for args in (["validate"], ["run"]):
        r = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", *args, str(cfg)], capture_output=True, text=True, cwd=REPO
        )
        assert r.returncode == 2, r.stderr[-2000:]
        assert r.stderr.strip().splitlines() == [
            f"config error: documents.text: input {path} has no column 'text' (its columns: id, content, url): "
            "set documents.text to the field that holds the text"
        ]
        assert not out.exists()


def test_the_plan_opens_a_warc_once_and_a_document_file_again_for_its_fields(tmp_path, monkeypatch, warc_factory):
    import stages.sources

    sniffed, sniff = [], stages.sources.sniff_stream
    monkeypatch.setattr(stages.sources, "sniff_stream", lambda f, name: sniffed.append(name) or sniff(f, name))
    page = [Page("https://a.example/", html("A", "text").encode())]
    warcs = [warc_factory(f"w{i}.warc.gz", page) for i in range(3)]
    wiki = _parquet(tmp_path / "wiki.parquet", WIKI)
    files = [str(f) for f in (*warcs, wiki)]
    config = parse_config({"inputs": files, "output": str(tmp_path / "out"), "documents": {"text": "content"}})
    preflight(config, files)
    assert sorted(sniffed) == sorted([*files, str(wiki)])  # a snapshot's 90,000 WARCs were each read twice
    with pytest.raises(ConfigError, match="documents.text: input .*wiki.parquet has no column 'body'"):
        preflight(config.model_copy(update={"documents": config.documents.model_copy(update={"text": "body"})}), files)


@pytest.mark.s3
def test_s3_document_inputs_are_checked_by_their_footer_and_first_records(tmp_path, s3_server):
    fs = pafs.S3FileSystem(
        endpoint_override=s3_server.removeprefix("http://"),
        scheme="http",
        region="us-east-1",
        access_key="testing",
        secret_key="testing",
        allow_bucket_creation=True,
        force_virtual_addressing=False,
    )
    fs.create_dir("fit-bucket")
    _parquet(tmp_path / "w.parquet", WIKI)
    files = {
        "w.parquet": (tmp_path / "w.parquet").read_bytes(),
        "w.jsonl.gz": gzip.compress(_jsonl(WIKI)),
        "x.warc.gz": b"never opened at plan time",
    }
    for name, data in files.items():
        with fs.open_output_stream(f"fit-bucket/in/{name}", compression=None) as f:
            f.write(data)
    uris = [f"s3://fit-bucket/in/{name}" for name in files]
    config = parse_config({"inputs": uris, "output": str(tmp_path / "out"), "storage": {"endpoint_url": s3_server}})
    assert [p.split(": ")[1:3] for p in check_document_fields(config, uris)] == [
        ["documents.text", "input s3://fit-bucket/in/w.parquet has no column 'text' (its columns"],
        [
            "documents.text",
            "input s3://fit-bucket/in/w.jsonl.gz has no 'text' field in its first 5 records (their fields",
        ],
    ]
    assert MAX_REMOTE_FIT_CHECKS == 64
