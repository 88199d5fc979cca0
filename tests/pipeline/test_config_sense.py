"""Settings each field accepts that cannot be what was meant are config errors naming the field
(pipeline/config_checks.py): before, `shards.shuffle.groups: true` ran with one group, `min_doc_words` over
`max_doc_words` removed every document, `output: ""` wrote into the working directory, and
`by_language: {klingon: 0.2}` was never applied."""

from __future__ import annotations

import subprocess
import sys
import typing

import pytest
import yaml
from pydantic import BaseModel

from pipeline.config import ConfigError, RunConfig, parse_config
from tests.conftest import REPO

BASE = {"inputs": ["x.warc.gz"], "output": "out"}
MODEL = str(REPO / "samples" / "quality" / "model.ftz")


def _error(data: dict) -> str:
    base = {"output": BASE["output"]} if "sources" in data else BASE  # named sources give the inputs
    with pytest.raises(ConfigError) as e:
        parse_config({**base, **data})
    return str(e.value)


def _numeric(tp) -> bool:
    """Whether an annotation takes a number (and not a boolean)."""
    args = typing.get_args(tp)
    if args and typing.get_origin(tp) in (typing.Union, __import__("types").UnionType):
        return any(_numeric(a) for a in args) and bool not in args
    return tp in (int, float)


def _number_fields(model: type[BaseModel] = RunConfig, prefix: tuple[str, ...] = ()):
    """The path of every number field in the config's sections (sections inside sections too)."""
    for name, field in model.model_fields.items():
        tp = field.annotation
        optional = typing.get_origin(tp) in (typing.Union, __import__("types").UnionType)
        inner = [a for a in typing.get_args(tp) if a is not type(None)] if optional else [tp]
        if len(inner) == 1 and isinstance(inner[0], type) and issubclass(inner[0], BaseModel):
            yield from _number_fields(inner[0], (*prefix, name))
        elif _numeric(tp):
            yield (*prefix, name)


NUMBER_FIELDS = [".".join(p) for p in _number_fields() if p[0] not in ("quality",)]  # quality: read as a classifier


def test_there_are_number_fields_to_check():
    assert len(NUMBER_FIELDS) > 100 and "shards.shuffle.groups" in NUMBER_FIELDS


@pytest.mark.parametrize("field", NUMBER_FIELDS)
def test_a_boolean_is_never_read_as_a_number(field):
    """`true` (YAML's yes and on too) where a number belongs is refused, naming the field, whatever the field."""
    data: dict = {}
    node = data
    *parents, last = field.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = True
    message = _error(data)
    if field not in message:  # refused for another reason, which the number the boolean would be read as meets too
        node[last] = 1
        assert _error(data) == message, message


@pytest.mark.parametrize(
    "data, expected",
    [
        (
            {"shards": {"shuffle": {"groups": True}}},
            "config error: shards.shuffle.groups: true is not a number (YAML reads true/false, yes/no and on/off as "
            "booleans, which would count as 1): give a number",
        ),
        (
            {
                "mix": {"weights": {"web": True, "code": 0.5}},
                "sources": [{"name": "web", "inputs": ["a"]}, {"name": "code", "inputs": ["b"]}],
            },
            "config error: mix.weights.web: true is not a number",
        ),
        (
            {
                "mix": {"weights": {"web": 0.5, "code": 0.5}, "tokens": True},
                "sources": [{"name": "web", "inputs": ["a"]}, {"name": "code", "inputs": ["b"]}],
            },
            "config error: mix.tokens: true is not a number",
        ),
        (
            {"dedup": {"minhash": {"bands": True, "rows": 4}}},
            "config error: dedup.minhash.bands: true is not a number",
        ),
        ({"dedup": {"minhash": {"bands": 4, "rows": True}}}, "config error: dedup.minhash.rows: true is not a number"),
        (
            {
                "classifiers": [
                    {
                        "name": "q",
                        "model": MODEL,
                        "label": "hq",
                        "filter": {"threshold": 0.5, "by_language": {"en": True}},
                    }
                ]
            },
            "config error: classifiers.0.filter.by_language.en: true is not a number",
        ),
        (
            {"sources": [{"name": "web", "inputs": ["a"], "filters": {"c4": {"min_words_per_line": True}}}]},
            "config error: sources[0] (web): filters.c4.min_words_per_line: true is not a number",
        ),
        (
            {"filters": {"gopher_quality": {"min_doc_words": 200_000}}},
            "config error: filters.gopher_quality.min_doc_words: 200000 is more than "
            "filters.gopher_quality.max_doc_words (100000): no value is at least the one and at most the other (for a "
            "filter: every document is removed): lower min_doc_words or raise max_doc_words",
        ),
        (
            {"filters": {"gopher_quality": {"min_avg_word_length": 12}}},
            "config error: filters.gopher_quality.min_avg_word_length: 12.0 is more than "
            "filters.gopher_quality.max_avg_word_length (10)",
        ),
        (
            {"filters": {"by_language": {"ru": {"gopher_quality": {"max_doc_words": 20}}}}},
            "config error: filters.by_language.ru.gopher_quality.min_doc_words: 50 is more than "
            "filters.by_language.ru.gopher_quality.max_doc_words (20)",
        ),
        (
            {"extract": {"boilerplate": {"blocks": {"length_low": 80}}}},
            "config error: extract.boilerplate.blocks.length_low: 80 is more than "
            "extract.boilerplate.blocks.length_high (50)",
        ),
        (
            {"sources": [{"name": "code", "inputs": ["a"], "filters": {"gopher_quality": {"max_doc_words": 10}}}]},
            "config error: sources[0] (code): filters.gopher_quality.min_doc_words: 50 is more than "
            "filters.gopher_quality.max_doc_words (10)",
        ),
        ({"output": ""}, "config error: output.root: is empty: give a folder or s3://bucket/prefix"),
        ({"output": {"root": "  "}}, "config error: output.root: is empty"),
        (
            {"inputs": ["a.warc.gz", ""]},
            "config error: inputs: entry 1 is empty: give a file, glob, folder or s3:// URI",
        ),
        (
            {
                "classifiers": [
                    {
                        "name": "q",
                        "model": MODEL,
                        "label": "hq",
                        "filter": {"threshold": 0.5, "by_language": {"klingon": 0.2}},
                    }
                ]
            },
            "config error: classifiers.0.filter.by_language: 'klingon' is not a language label (documents are "
            "labelled with lid.176's codes (en, de, zh...) and FineWeb-2's names (rus_Cyrl...)): a setting for it "
            "would never apply; give the label language ID gives",
        ),
        ({"langid": {"keep": ["en", "english"]}}, "config error: langid.keep: 'english' is not a language label"),
        (
            {"langid": {"min_score_by_language": {"EN": 0.5}}},
            "config error: langid.min_score_by_language: 'EN' is not a language label",
        ),
        (
            {"filters": {"by_language": {"jp": {"c4": {"enabled": False}}}}},
            "config error: filters.by_language: 'jp' is not a language label",
        ),
        (
            {"sources": [{"name": "web", "inputs": ["a"], "langid": {"keep": ["xx"]}}]},
            "config error: sources[0] (web): langid.keep: 'xx' is not a language label",
        ),
    ],
    ids=[
        "groups-true",
        "mix-weight-true",
        "mix-tokens-true",
        "bands-true",
        "rows-true",
        "by-language-true",
        "source-override-true",
        "min-doc-words",
        "word-length",
        "by-language-bounds",
        "jusText-lengths",
        "source-bounds",
        "output-empty",
        "output-blank",
        "input-empty",
        "klingon",
        "keep-english",
        "score-EN",
        "by-language-jp",
        "source-keep",
    ],
)
def test_accepted_but_cannot_be_right(data, expected):
    message = _error(data)
    assert len(message.splitlines()) == 1 and message.startswith(expected), message


def test_what_is_right_still_passes():
    parse_config(
        {
            **BASE,
            "langid": {"keep": ["en", "rus_Cyrl", "srp_Latn"], "min_score_by_language": {"ru": 0.5, "unknown": 0}},
            "filters": {
                "gopher_quality": {"min_doc_words": 100_000},
                "by_language": {"zh": {"gopher_quality": {"min_doc_words": 10}}},
            },
            "classifiers": [
                {"name": "q", "model": MODEL, "label": "hq", "filter": {"threshold": 0.5, "by_language": {"en": 0.2}}}
            ],
            "shards": {"shuffle": {"groups": 1}, "tokenize": {"eos": None}, "megatron": {"enabled": True}},
        }
    )


def test_a_custom_language_id_model_gives_its_own_labels(tmp_path):
    """With langid.model, its labels are the known ones too (read from the model's dictionary)."""
    lid = str(REPO / "samples" / "classifiers" / "toxicity.ftz")  # labels toxic, non_toxic: a stand-in LID model
    parse_config({**BASE, "langid": {"model": lid, "keep": ["toxic"]}})
    assert "the labels of " in _error({"langid": {"model": lid, "keep": ["klingon"]}})


def test_validate_says_it_in_one_line_with_exit_2(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**BASE, "output": str(tmp_path / "out"), "shards": {"shuffle": {"groups": True}}}))
    r = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "validate", str(cfg)], capture_output=True, text=True, cwd=REPO
    )
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("config error: shards.shuffle.groups: true is not a number")
