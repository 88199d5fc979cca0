"""Expanding the config's inputs: paths, globs, folders, warc.paths listings."""

from __future__ import annotations

import gzip

import pytest

from pipeline.inputs import InputError, expand_inputs, unit_name


@pytest.fixture
def tree(tmp_path, monkeypatch):
    for name in ("a/1.warc.gz", "a/2.warc.gz", "a/sub/3.warc.gz", "b/x.warc", "b/notes.txt"):
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_globs_stay_in_one_level_and_keep_relative_paths(tree):
    assert expand_inputs(["a/*.warc.gz"]) == ["a/1.warc.gz", "a/2.warc.gz"]
    assert expand_inputs(["a/**/*.warc.gz"]) == ["a/1.warc.gz", "a/2.warc.gz", "a/sub/3.warc.gz"]


def test_folder_file_and_dedup(tree):
    got = expand_inputs(["b", "b/x.warc", str(tree / "a" / "1.warc.gz")])
    assert got == sorted([str(tree / "a" / "1.warc.gz"), "b/notes.txt", "b/x.warc"])


def test_common_crawl_listing_is_joined_to_the_base(tree):
    (tree / "warc.paths.gz").write_bytes(
        gzip.compress(b"crawl-data/CC-MAIN-2024-10/segments/1/warc/f1.warc.gz\ncrawl-data/x/f2.warc.gz\n")
    )
    got = expand_inputs(["warc.paths.gz"], base="s3://commoncrawl/")
    assert got == [
        "s3://commoncrawl/crawl-data/CC-MAIN-2024-10/segments/1/warc/f1.warc.gz",
        "s3://commoncrawl/crawl-data/x/f2.warc.gz",
    ]


def test_nothing_matching_is_an_error_naming_the_entry(tree):
    with pytest.raises(InputError, match=r"input not found: a/\*\.arc"):
        expand_inputs(["a/*.warc.gz", "a/*.arc"])


def test_unit_names_are_stable_and_distinct():
    a, b = unit_name("s3://x/CC-MAIN-1-00000.warc.gz"), unit_name("s3://y/CC-MAIN-1-00000.warc.gz")
    assert a.startswith("CC-MAIN-1-00000-") and a != b and a == unit_name("s3://x/CC-MAIN-1-00000.warc.gz")


def test_a_single_star_never_crosses_a_folder_even_beside_a_double_star(tmp_path, monkeypatch):
    for name in ("root/a/x/y/z.gz", "root/a/x/z.gz", "root/x/w.gz", "root/a/b/x/v.gz"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    assert expand_inputs(["root/**/x/*.gz"]) == ["root/a/b/x/v.gz", "root/a/x/z.gz", "root/x/w.gz"]
    assert expand_inputs(["root/*/x/*.gz"]) == ["root/a/x/z.gz"]
    assert expand_inputs(["root/a/x/?.gz"]) == ["root/a/x/z.gz"]


def test_an_output_root_inside_an_input_folder_is_not_read_back(tmp_path, monkeypatch):
    from pipeline.inputs import without_output

    for name in ("crawl/1.warc.gz", "crawl/out/documents/extracted/part-1.parquet", "crawl/out/run.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    found = expand_inputs(["crawl"])
    assert len(found) == 3
    assert without_output(found, "crawl/out") == ["crawl/1.warc.gz"]
    assert without_output(found, str(tmp_path / "crawl" / "out")) == ["crawl/1.warc.gz"]
    assert without_output(found, "crawl/outside") == found  # a sibling with a common prefix is not inside
    with pytest.raises(InputError, match="inside the output root"):
        without_output(["crawl/out/run.json"], "crawl/out")
