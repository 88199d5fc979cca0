"""FineWeb-2's per-language config files read and mapped; per-language language-ID cutoffs."""

from __future__ import annotations

import logging
import os
import re

import pyarrow as pa
import pytest
import yaml

from pipeline.config import ConfigError, parse_config
from stages.filters import FiltersConfig
from stages.filters.fineweb2 import PIPELINE_SETTINGS, read_fineweb2_configs
from stages.filters.gopher_quality import GopherQualityFilter
from stages.langid import LangIdConfig, LangIdStage
from tests.conftest import REPO
from tests.filters_helpers import table

FIXTURE = REPO / "tests" / "fixtures" / "fineweb2"
LABELS = {"deu_Latn": "de", "rus_Cyrl": "ru", "jpn_Jpan": "ja", "fra_Latn": "fr", "cmn_Hani": "zh"}


def original(stem: str) -> dict:
    return yaml.safe_load((FIXTURE / f"{stem}.yml").read_text(encoding="utf-8"))


def config(data: dict):
    return parse_config({"inputs": ["x"], "output": "o", **data})


def write(folder, name: str, data: dict) -> None:
    (folder / name).write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


# ----------------------------------------------------------------------------- the real files


def test_the_fixture_files_map_onto_our_fields():
    got = read_fineweb2_configs(str(FIXTURE))
    assert sorted(got.files) == sorted(f"{s}.yml" for s in LABELS)
    assert set(got.filters) == set(LABELS.values())
    for stem, lang in LABELS.items():
        src, mapped = original(stem), got.filters[lang]
        assert got.min_scores[lang] == src["language_score"]
        rep, fw, gq = mapped["gopher_repetition"], mapped["fineweb"], mapped["gopher_quality"]
        assert rep["dup_line_frac"] == src["dup_line_frac"]
        assert rep["top_n_grams"] == dict(src["top_n_grams"]) and rep["dup_n_grams"] == dict(src["dup_n_grams"])
        assert (fw["line_punct_thr"], fw["new_line_ratio"]) == (src["line_punct_thr"], src["new_line_ratio"])
        assert gq["min_alpha_words_ratio"] == src["max_non_alpha_words_ratio"]  # DataTrove's name for the minimum
        assert set(gq["stop_words"][lang]) <= set(src["stopwords"])
        if lang in ("de", "ru", "fr"):
            assert (gq["min_avg_word_length"], gq["max_avg_word_length"]) == (
                src["min_avg_word_length"],
                src["max_avg_word_length"],
            )


def test_what_does_not_carry_over_is_listed():
    got = {(u.file, u.key): u for u in read_fineweb2_configs(str(FIXTURE)).unmapped}
    # Words without spaces: our word-length rule is skipped for ja and zh, so their bounds cannot apply.
    for file in ("jpn_Jpan.yml", "cmn_Hani.yml"):
        for key in ("min_avg_word_length", "max_avg_word_length"):
            assert "skipped" in got[(file, key)].why
    # FineWeb-2's lists hold punctuation marks that are not words here.
    assert got[("jpn_Jpan.yml", "stopwords")].value == "['・']"
    assert got[("cmn_Hani.yml", "stopwords")].value == "['·']"
    assert not any(file in ("deu_Latn.yml", "rus_Cyrl.yml", "fra_Latn.yml") for file, _ in got)


def test_the_config_reads_the_folder_once_and_logs_what_it_could_not_map(caplog, tmp_path):
    with caplog.at_level(logging.WARNING, logger="stages.filters.fineweb2"):
        cfg = config({"filters": {"fineweb2_configs": str(FIXTURE)}, "langid": {"fineweb2_configs": str(FIXTURE)}})
    assert "6 values of 5 files" in caplog.text
    # The list is in the config (run.json, the card): file, key, value and why.
    assert len(cfg.filters.fineweb2_unmapped) == 6
    assert (
        "jpn_Jpan.yml: stopwords = ['・']: not words here (punctuation): never matched"
        in cfg.filters.fineweb2_unmapped
    )
    assert set(cfg.filters.by_language) == set(LABELS.values())
    assert cfg.langid.min_score_by_language == {
        lang: original(stem)["language_score"] for stem, lang in LABELS.items()
    }
    # Written into the config: a worker without the folder validates the same config.
    dumped = cfg.model_dump(mode="json")
    assert dumped["filters"]["fineweb2_configs"] is None and dumped["langid"]["fineweb2_configs"] is None
    os.chdir(tmp_path)
    try:
        assert parse_config(dumped) == cfg
    finally:
        os.chdir(REPO)


def test_pipeline_settings_and_language_selection():
    got = read_fineweb2_configs(str(FIXTURE), languages=["ru", "jpn_Jpan"], pipeline=True)
    assert set(got.filters) == {"ru", "ja"}
    ru = got.filters["ru"]
    assert ru["c4"] == {"enabled": False}
    assert ru["fineweb"]["char_duplicates_ratio"] == 0.1 and ru["fineweb"]["short_line_thr"] is None
    assert ru["gopher_repetition"]["dup_para_frac"] is None
    assert ru["gopher_repetition"]["dup_line_frac"] == original("rus_Cyrl")["dup_line_frac"]  # the file wins
    assert set(PIPELINE_SETTINGS) <= set(ru)


def test_a_language_ids_the_file_serves_with_its_stop_words():
    """FineWeb-2's Russian stop words, given to ru documents: "не" and "что" count, as in FineWeb-2."""
    cfg = FiltersConfig.model_validate({"fineweb2_configs": str(FIXTURE), "fineweb2_languages": ["ru"]})
    ru = cfg.language_settings("gopher_quality").by_language["ru"]
    assert {"не", "что"} <= set(ru.stop_words["ru"])
    text = " ".join(["слово"] * 60) + " не что"
    assert GopherQualityFilter(ru)(table([text], ["ru"])).column("reason").to_pylist() == [None]


# ----------------------------------------------------------------------------- values DataTrove reads differently


def test_limits_are_converted_where_datatrove_reads_them_differently(tmp_path):
    write(
        tmp_path,
        "deu_Latn.yml",
        {
            "language_score": 0.8,
            "dup_line_frac": 0,
            "line_punct_thr": -1,
            "max_avg_word_length": 3141,
            "min_avg_word_length": 0,
            "top_n_grams": [[2, 3.9], [3, 0.2], [4, 101]],
            "dup_n_grams": [[5, 0], [6, 1.07], [11, 0.1]],
            "new_line_ratio": 0.2,
            "stopwords": ["der"],
            "max_non_alpha_words_ratio": 0.7,
            "future_knob": 3,
        },
    )
    got = read_fineweb2_configs(str(tmp_path))
    de = got.filters["de"]
    assert de["gopher_repetition"]["dup_line_frac"] is None  # DataTrove skips a 0 limit
    assert de["fineweb"]["line_punct_thr"] is None  # a negative share never removes
    assert de["gopher_quality"]["max_avg_word_length"] is None  # above any mean word length here
    assert de["gopher_quality"]["min_avg_word_length"] == 0  # never removes, as in DataTrove
    assert de["gopher_repetition"]["top_n_grams"] == {2: 3.9, 3: 0.2}  # overlapping repeats can exceed 1
    assert de["gopher_repetition"]["dup_n_grams"] == {5: 0}  # DataTrove compares a 0 n-gram limit
    keys = {u.key for u in got.unmapped}
    assert {
        "dup_line_frac",
        "line_punct_thr",
        "max_avg_word_length",
        "top_n_grams[4]",
        "dup_n_grams[6]",
        "dup_n_grams[11]",
        "future_knob",
    } == keys
    FiltersConfig.model_validate({"by_language": got.filters})  # all of it is a valid config


def test_files_lid176_cannot_label_are_listed(tmp_path):
    base = original("deu_Latn")
    write(tmp_path, "srp_Latn.yml", base)
    write(tmp_path, "aai_Latn.yml", base)
    got = read_fineweb2_configs(str(tmp_path))
    assert set(got.filters) == {"srp_Latn", "aai_Latn"}
    why = {u.file: u.why for u in got.unmapped if u.key == "(file)"}
    assert "labels this language 'sr' in any script" in why["srp_Latn.yml"]
    assert "lid.176 has no label" in why["aai_Latn.yml"]


@pytest.mark.parametrize(
    "name, data, message",
    [
        ("deu_Latn.yml", {"language_score": "high"}, "deu_Latn.yml: language_score: expected a number (got 'high')"),
        ("deu_Latn.yml", {"language_score": 1.5}, "deu_Latn.yml: language_score: expected a number from 0 to 1"),
        ("deu_Latn.yml", {"top_n_grams": {2: 0.2}}, "deu_Latn.yml: top_n_grams: expected a list of [n, limit] pairs"),
        ("deu_Latn.yml", {"stopwords": "der die das"}, "deu_Latn.yml: stopwords: expected a list of words"),
        ("deu_Latn.yml", {"dup_line_frac": -0.1}, "deu_Latn.yml: dup_line_frac: expected a number from 0"),
        ("deu_Latn.yml", ["a list"], "deu_Latn.yml: the top level must be a mapping"),
        ("german.yml", {}, "no {lang}_{script}.yml files"),
    ],
)
def test_bad_files_are_refused_naming_file_and_key(tmp_path, name, data, message):
    write(tmp_path, name, data)
    with pytest.raises(ConfigError, match="config error: filters: fineweb2_configs: .*" + re.escape(message)) as e:
        config({"filters": {"fineweb2_configs": str(tmp_path)}})
    assert len(str(e.value).splitlines()) == 1


def test_a_missing_folder_or_language_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="fineweb2_configs: '/no/such' is not a folder"):
        config({"filters": {"fineweb2_configs": "/no/such"}})
    with pytest.raises(ConfigError, match=r"no file for \['ko'\]"):
        config({"filters": {"fineweb2_configs": str(FIXTURE), "fineweb2_languages": ["ko"]}})
    (tmp_path / "deu_Latn.yml").write_bytes(b"\xff\xfe language_score")
    with pytest.raises(ConfigError, match="deu_Latn.yml is not UTF-8 text"):
        config({"langid": {"fineweb2_configs": str(tmp_path)}})


# ----------------------------------------------------------------------------- language-ID cutoffs by language

GERMAN = "Der Fluss stieg über Nacht um zwei Meter, und die Stadt war am Morgen überflutet. " * 3
ENGLISH = "The river rose two metres overnight and the town was flooded by the morning. " * 3


def test_langid_cutoff_by_language():
    base = LangIdStage(LangIdConfig())
    scores = base(table([GERMAN, ENGLISH], ["", ""])).column("language_score").to_pylist()
    assert base(table([GERMAN, ENGLISH])).column("reason").to_pylist() == [None, None]
    strict_de = LangIdStage(LangIdConfig(min_score_by_language={"deu_Latn": 0.99999}))
    out = strict_de(table([GERMAN, ENGLISH]))
    assert out.column("reason").to_pylist() == ["language_score", None]
    assert out.column("details").to_pylist()[0] == f"de:{scores[0]:.2f} < 0.99999"


def test_langid_keep_takes_fineweb2_names_as_the_cutoffs_do():
    """Before, keep: [deu_Latn] was lowercased to deu_latn, which no model gives: every document was rejected."""
    out = LangIdStage(LangIdConfig(keep=["deu_Latn"]))(table([GERMAN, ENGLISH]))
    assert out.column("reason").to_pylist() == [None, "language"]
    assert LangIdConfig(keep=[" EN ", "rus_Cyrl"]).keep == ["en", "rus_Cyrl"]


def test_langid_cutoffs_from_fineweb2_and_inline():
    cfg = LangIdConfig(fineweb2_configs=str(FIXTURE), min_score_by_language={"ru": 0.5})
    assert cfg.min_score_by_language["ru"] == 0.5  # inline wins
    assert cfg.min_score_by_language["ja"] == original("jpn_Jpan")["language_score"]
    assert cfg.thresholds(pa.array(["ja", "rus_Cyrl", "en", None])).tolist() == [0.886, 0.5, 0.65, 0.65]
    assert cfg.min_score_sources == [f"fineweb2_configs: {FIXTURE}"]
    with pytest.raises(ConfigError, match="langid.min_score_by_language: each score is from 0 to 1"):
        config({"langid": {"min_score_by_language": {"ru": 1.5}}})
