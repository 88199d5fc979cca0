"""Config validation and the CLI's error contract: one line naming the field, exit != 0."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipeline.config import ConfigError, load_config, parse_config

REPO_SAMPLE = "jobs/sample.yaml"


def test_sample_config_is_valid():
    cfg = load_config(REPO_SAMPLE)  # paths are read from the working directory and made absolute (pipeline/paths.py)
    assert cfg.output.root == os.path.abspath("out/sample") and cfg.inputs == ["samples/*.warc.gz"]


def test_overrides_replace_inputs_and_output():
    cfg = load_config(REPO_SAMPLE, inputs=["a.warc.gz", "b/*.warc"], output="s3://bucket/run1")
    assert cfg.inputs == ["a.warc.gz", "b/*.warc"] and cfg.output.root == "s3://bucket/run1"


@pytest.mark.parametrize(
    "data, message",
    [
        ({"inputs": ["x"], "output": "o", "extract": {"extractor": "magic"}}, "extract.extractor: Input should be"),
        (
            {"inputs": ["x"], "output": "o", "langid": {"min_score": 1.5}},
            "langid.min_score: Input should be less than or equal to 1 (got 1.5)",
        ),
        ({"inputs": ["x"], "output": "o", "warc": {"batchsize": 10}}, "warc.batchsize: unknown field"),
        ({"output": "o"}, "inputs: required field is missing"),
        ({"inputs": [], "output": "o"}, "inputs: List should have at least 1 item"),
    ],
)
def test_bad_values_name_the_field(data, message):
    with pytest.raises(ConfigError) as e:
        parse_config(data)
    assert message in str(e.value)
    assert str(e.value).startswith("config error: ")


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("inputs: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def _curate(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=cwd)


def test_cli_bad_value_is_one_line_and_exit_2(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("inputs: [x.warc.gz]\noutput: out\nextract:\n  timeout_s: -1\n")
    r = _curate("run", str(cfg))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "config error: extract.timeout_s: Input should be greater than 0 (got -1)"
    ]


def test_cli_missing_input_names_it(tmp_path):
    r = _curate("run", REPO_SAMPLE, "--input", str(tmp_path / "missing-*.warc.gz"), "--output", str(tmp_path / "o"))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"input not found: {tmp_path / 'missing-*.warc.gz'} (no file matches this path or pattern)"
    ]


def test_cli_help_on_every_subcommand():
    for sub in ("run", "validate", "config-reference"):
        r = _curate(sub, "--help")
        assert r.returncode == 0 and "usage: curate" in r.stdout


def test_config_reference_lists_every_stage_section():
    r = _curate("config-reference")
    for field in (
        "`inputs`",
        "`output.root`",
        "`warc.max_payload_bytes`",
        "`extract.extractor`",
        "`langid.min_score`",
        "`charset.meta_scan_bytes`",
    ):
        assert field in r.stdout


def test_cli_binary_config_file_is_one_line(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_bytes(b"\x1f\x8b\x08\x00\xff\xfe\x00binary")
    r = _curate("run", str(cfg))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"config error: {cfg} is not a text file (expected UTF-8 YAML)"]
