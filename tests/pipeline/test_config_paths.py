"""Relative paths in a config are read from the working directory, and made absolute when the config file is
loaded, before anything ships to a worker (pipeline/paths.py;
the cluster itself: tests/integration/test_ray_cluster.py)."""

from __future__ import annotations

import os

import pytest
import yaml

from pipeline.config import ConfigError, RunConfig, load_config
from pipeline.paths import marker, public_path, public_text
from tests.conftest import REPO

#: Every config field that names files, folders or earlier runs (a path field added to a section is added here).
PATH_FIELDS = {
    "output.root",
    "langid.model",
    "langid.fineweb2_configs",
    "filters.url.block_domains_files",
    "filters.url.block_urls_files",
    "filters.by_language_dir",
    "filters.fineweb2_configs",
    "classifiers.model",
    "quality.model",
    "dedup.against",
    "pii.ner_models",
    "shards.tokenize.tokenizer",
    "decontam.eval_sets.path",
}


def _marked(model=RunConfig, prefix="") -> set[str]:
    from pipeline.paths import _model_in

    out = set()
    for name, field in model.model_fields.items():
        sub, _ = _model_in(field.annotation)
        if sub is not None:
            out |= _marked(sub, f"{prefix}{name}.")
        elif marker(model, name) is not None:
            out.add(prefix + name)
    return out


def test_the_path_fields_are_marked():
    assert _marked() == PATH_FIELDS


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A working directory holding the sample models and files; the config lives in another folder."""
    work = tmp_path / "work"
    (work / "lists").mkdir(parents=True)
    (work / "samples").symlink_to(REPO / "samples")
    (work / "lists" / "domains.txt").write_text("bad.example\n")
    (work / "evals").mkdir()
    (work / "evals" / "qa.jsonl").write_text('{"text": "what is the answer to the question about the sample"}\n')
    (work / "ner").mkdir()
    (work / "ner" / "config.cfg").write_text("[nlp]\n")
    (work / "models" / "fr").mkdir(parents=True)
    (work / "by_lang").mkdir()
    (work / "by_lang" / "de.yml").write_text("c4: {enabled: false}\n")
    (tmp_path / "configs").mkdir()
    monkeypatch.chdir(work)
    return work


def test_every_path_is_read_from_the_working_directory_and_made_absolute(work, tmp_path):
    """Before, the relative paths went to the workers as written, and a worker of a cluster (another working
    directory) found none of them."""
    config = tmp_path / "configs" / "job.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "inputs": ["samples/*.warc.gz"],
                "output": "out/run",
                "langid": {"model": "samples/../samples/quality/model.ftz"},
                "filters": {
                    "url": {"block_domains_files": ["lists/domains.txt"], "block_urls_files": ["s3://lists/urls.txt"]},
                    "by_language_dir": "by_lang",
                },
                "classifiers": [{"name": "edu", "model": "samples/classifiers/edu.ftz", "label": "edu"}],
                "dedup": {"against": ["earlier/run", "s3://bucket/run0"]},
                "pii": {
                    "ner_models": {"en": "spacy", "de": "ner", "fr": "./models/fr"}
                },  # spacy: an installed package
                "decontam": {"eval_sets": ["evals/qa.jsonl", {"path": "s3://evals/mmlu.parquet", "name": "mmlu"}]},
            }
        )
    )
    c = load_config(config)
    w = str(work)
    assert c.inputs == ["samples/*.warc.gz"]  # inputs keep their names; each unit is given its absolute path
    assert c.output.root == f"{w}/out/run"
    assert c.langid.model == f"{w}/samples/quality/model.ftz"
    assert c.filters.url.block_domains_files == [f"{w}/lists/domains.txt"]
    assert c.filters.url.block_urls_files == ["s3://lists/urls.txt"]
    assert (
        c.filters.by_language_sources == ["by_language_dir: by_lang"] and "de" in c.filters.by_language
    )  # read at load
    assert c.classifiers[0].model == f"{w}/samples/classifiers/edu.ftz"
    assert c.dedup.against == [f"{w}/earlier/run", "s3://bucket/run0"]
    assert c.pii.ner_models == {"en": "spacy", "de": f"{w}/ner", "fr": f"{w}/models/fr"}  # a package stays a name
    assert [s.path for s in c.decontam.eval_sets] == [f"{w}/evals/qa.jsonl", "s3://evals/mmlu.parquet"]
    assert c.shards.tokenize.tokenizer == f"{w}/samples/tokenizer/tokenizer.json"  # a default is a path too
    shipped = RunConfig.model_validate(c.model_dump(mode="json"))  # what a worker rebuilds: the same absolute paths
    assert shipped.classifiers[0].model == c.classifiers[0].model and shipped.output.root == c.output.root


def test_named_sources_overrides_are_resolved_too(work, tmp_path):
    config = tmp_path / "configs" / "job.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "sources": [
                    {
                        "name": "web",
                        "inputs": ["samples/*.warc.gz"],
                        "classifiers": {"quality": {"model": "samples/classifiers/edu.ftz", "label": "edu"}},
                        "filters": {"url": {"block_domains_files": ["lists/domains.txt"]}},
                    }
                ],
                "output": "out",
                "classifiers": [{"name": "quality", "model": "samples/quality/model.ftz", "label": "hq"}],
            }
        )
    )
    c = load_config(config)
    web = c.for_source("web")
    assert web.classifiers[0].model == f"{work}/samples/classifiers/edu.ftz"
    assert web.filters.url.block_domains_files == [f"{work}/lists/domains.txt"]
    assert c.sources[0].classifiers == {"quality": {"model": f"{work}/samples/classifiers/edu.ftz", "label": "edu"}}


def test_a_relative_path_that_is_missing_says_where_it_was_looked_for(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "job.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "inputs": ["x.warc.gz"],
                "output": "out",
                "classifiers": [{"name": "quality", "model": "samples/quality/model.ftz", "label": "hq"}],
            }
        )
    )
    with pytest.raises(ConfigError) as e:
        load_config(config)
    assert str(e.value) == (
        "config error: classifiers.0.model: no fastText model file at 'samples/quality/model.ftz' "
        f"(a relative path is read from the working directory, {tmp_path}) "
        "(got 'samples/quality/model.ftz')"
    )


def test_published_paths_are_relative_to_the_working_directory_or_a_name():
    assert public_path("/home/me/curate/samples/quality/model.ftz", "/home/me/curate") == "samples/quality/model.ftz"
    assert public_path("/data/models/dclm.bin", "/home/me/curate") == "dclm.bin"
    assert public_path("/home/me/curate", "/home/me/curate") == "."
    assert public_path("/scratch/out/run1/", None) == "run1"
    assert public_path("s3://bucket/run1", "/home/me") == "s3://bucket/run1"
    assert public_path("samples/x.warc.gz", "/home/me") == "samples/x.warc.gz"
    assert (
        public_text("cannot read /home/me/curate/out/part-1.parquet", "/home/me/curate")
        == "cannot read out/part-1.parquet"
    )
    assert os.sep == "/"  # the paths above are POSIX
