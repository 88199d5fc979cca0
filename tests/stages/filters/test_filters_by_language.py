"""Filter settings by language: the split stage, the config, and what they change on the samples."""

from __future__ import annotations

import json
import pickle
from collections import Counter

import pyarrow as pa
import pytest

from pipeline.config import ConfigError, parse_config
from stages.base import ChainStats, run_chain
from stages.filters import FiltersConfig, batch_cache, build_filters, text_filter_specs, words as words_module
from stages.filters.by_language import C4ByLanguage, GopherQualityByLanguage, LanguageSplit
from stages.filters.c4 import C4Filter
from stages.filters.gopher_quality import GopherQualityFilter
from tests.conftest import SAMPLES
from tests.filters_helpers import table

FIXTURE = SAMPLES.parent / "tests" / "fixtures" / "fineweb2"
PROSE = "\n".join(
    [
        "The river rose two metres overnight and the town was flooded by the morning.",
        "Residents of the valley were moved to the school, where volunteers served hot meals.",
        "The mayor said the dam was safe and that engineers had checked it twice this week.",
        "Engineers will inspect it again on Monday with a team from the regional water board.",
        "Rain is expected to ease by Friday, and the river should fall back within its banks.",
    ]
)
SHORT_DE = "Der Fluss stieg über Nacht um zwei Meter, und die Stadt war am Morgen überflutet."


def filters(data: dict) -> FiltersConfig:
    return parse_config({"inputs": ["x"], "output": "o", "filters": data}).filters


def stage_of(config: FiltersConfig, name: str):
    return next(s for s in build_filters(config) if s.name == name)


# ----------------------------------------------------------------------------- which stages run


def test_without_overrides_the_filters_are_the_plain_ones():
    assert [cls for cls, _ in text_filter_specs(FiltersConfig())] == [
        cls for cls, _ in text_filter_specs(filters({"by_language": {}}))
    ]
    specs = text_filter_specs(filters({"by_language": {"ja": {"c4": {"enabled": False}}}}))
    assert [cls.__name__ for cls, _ in specs] == [
        "GopherQualityFilter",
        "GopherRepetitionFilter",
        "C4ByLanguage",
        "FineWebQualityFilter",
    ]
    # An override equal to the base settings changes nothing.
    same = filters({"by_language": {"de": {"c4": {"min_num_sentences": 5}}}})
    assert all(not issubclass(cls, LanguageSplit) for cls, _ in text_filter_specs(same))


def test_split_stage_describes_itself_like_its_filter():
    assert (C4ByLanguage.name, C4ByLanguage.label, C4ByLanguage.reasons, C4ByLanguage.adds) == (
        C4Filter.name,
        C4Filter.label,
        C4Filter.reasons,
        C4Filter.adds,
    )
    assert "language" in C4ByLanguage.needs and "text" in C4ByLanguage.needs


def test_a_filter_off_by_default_runs_for_the_languages_that_turn_it_on():
    cfg = filters({"c4": {"enabled": False}, "by_language": {"de": {"c4": {"enabled": True}}}})
    c4 = stage_of(cfg, "c4")
    assert isinstance(c4, C4ByLanguage)
    texts = ["The code reads { return x; } in the end.\n" + PROSE] * 2
    out = c4(table(texts, ["en", "de"]))
    assert out.column("reason").to_pylist() == [None, "c4:curly_bracket"]
    assert out.column("c4_lines_removed").to_pylist()[0] is None  # not judged: nothing measured


# ----------------------------------------------------------------------------- the split stage


def test_rows_get_their_languages_settings_and_keep_their_order():
    cfg = filters({"by_language": {"de": {"gopher_quality": {"min_doc_words": 10, "min_stop_words": 1}}}})
    stage = stage_of(cfg, "gopher_quality")
    assert isinstance(stage, GopherQualityByLanguage)
    langs = ["en", "de", "en", None, "de", "fr"]
    texts = [SHORT_DE, SHORT_DE, PROSE, SHORT_DE, "Kurz.", SHORT_DE]
    batch = table(texts, langs)
    out = stage(batch)
    assert out.column("id").to_pylist() == batch.column("id").to_pylist()
    assert out.column("text").to_pylist() == texts
    reasons = out.column("reason").to_pylist()
    details = out.column("details").to_pylist()
    # German rows are judged with min_doc_words 10, the others with 50: the threshold is in details.
    assert reasons[1] is None
    assert (reasons[4], details[4]) == ("gopher_quality:min_doc_words", "1 < 10")
    for i in (0, 3, 5):
        assert reasons[i] == "gopher_quality:min_doc_words" and details[i].endswith("< 50")
    assert reasons[2] is None
    # Same verdicts as the plain filters with each language's settings.
    plain_de = GopherQualityFilter(cfg.language_settings("gopher_quality").by_language["de"])
    assert (
        stage(table([SHORT_DE], ["de"])).column("reason").to_pylist()
        == plain_de(table([SHORT_DE], ["de"])).column("reason").to_pylist()
    )


def test_a_language_with_the_filter_off_passes_untouched_with_the_same_columns():
    cfg = filters({"by_language": {"ja": {"c4": {"enabled": False}}}})
    stage, plain = stage_of(cfg, "c4"), C4Filter(cfg.c4)
    texts = ["Menu\n" + PROSE, "Menu\n" + PROSE, "{x}"]
    out = stage(table(texts, ["en", "ja", "ja"]))
    assert out.schema == plain(table(texts)).schema
    assert out.column("text").to_pylist() == [PROSE, texts[1], texts[2]]
    assert out.column("reason").to_pylist() == [None, None, None]
    assert out.column("c4_lines_removed").to_pylist() == [1, None, None]
    only_ja = stage(table(texts[1:], ["ja", "ja"]))  # no row judged: still the filter's columns
    assert only_ja.schema == out.schema and only_ja.column("text").to_pylist() == texts[1:]
    empty = stage(table(texts).slice(0, 0))
    assert empty.schema.names == plain(table(texts).slice(0, 0)).schema.names


def test_labels_of_both_models_match_one_setting():
    """lid.176 says ru, GlotLID rus_Cyrl: one key serves both; srp_Latn (GlotLID only) is its own."""
    cfg = filters(
        {
            "by_language": {
                "rus_Cyrl": {"gopher_quality": {"min_doc_words": 1000}},
                "srp_Latn": {"gopher_quality": {"min_doc_words": 2000}},
            }
        }
    )
    assert set(cfg.by_language) == {"ru", "srp_Latn"}
    out = stage_of(cfg, "gopher_quality")(table([PROSE] * 4, ["ru", "rus_Cyrl", "srp_Latn", "sr"]))
    assert [d.split(" < ")[1] if d else None for d in out.column("details").to_pylist()] == [
        "1000",
        "1000",
        "2000",
        None,
    ]


def test_the_words_of_a_batch_are_split_once_whatever_the_languages(monkeypatch):
    calls = []
    real = words_module.word_lists
    monkeypatch.setattr(words_module, "word_lists", lambda texts: calls.append(len(texts)) or real(texts))
    batch_cache.clear()
    cfg = filters(
        {"by_language": {"de": {"gopher_quality": {"min_stop_words": 1}, "gopher_repetition": {"dup_line_frac": 0.5}}}}
    )
    texts = [PROSE, PROSE + " Extra.", SHORT_DE, "short", PROSE + " More."]
    run_chain(build_filters(cfg), table(texts, ["en", "de", "de", "en", "fr"]), ChainStats())
    assert calls == [5]


# ----------------------------------------------------------------------------- the config


@pytest.mark.parametrize(
    "data, message",
    [
        (
            {"by_language": {"de": {"gopher_quality": {"min_stop_word": 1}}}},
            "filters.by_language.de.gopher_quality.min_stop_word: unknown field",
        ),
        (
            {"by_language": {"ja": {"fineweb": {"short_line_thr": 2}}}},
            "filters.by_language.ja.fineweb.short_line_thr: Input should be less than or equal to 1",
        ),
        (
            {"by_language": {"ru": {"gopher_repetition": {"top_n_grams": {7: 0.1}}}}},
            "filters.by_language.ru.gopher_repetition.top_n_grams: n = [7] not allowed",
        ),
        ({"by_language": {"de": {"gopher": {}}}}, "filters.by_language.de.gopher: unknown field"),
        (
            {"by_language": {"de": {"url": {"enabled": False}}}},
            "filters.by_language.de: url: the URL filter runs before language ID",
        ),
        ({"by_language_dir": "/no/such/folder"}, "filters: by_language_dir: '/no/such/folder' is not a folder"),
    ],
)
def test_bad_settings_are_refused_naming_the_language_and_field(data, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")) as e:
        filters(data)
    assert len(str(e.value).splitlines()) == 1


def test_a_folder_of_files_by_language(tmp_path):
    (tmp_path / "de.yml").write_text("gopher_quality: {min_stop_words: 1}\nc4: {enabled: false}\n")
    (tmp_path / "rus_Cyrl.yml").write_text("fineweb: {line_punct_thr: 0.2}\n")
    (tmp_path / "notes.txt").write_text("not read")
    cfg = filters({"by_language_dir": str(tmp_path), "by_language": {"de": {"c4": {"enabled": True}}}})
    assert set(cfg.by_language) == {"de", "ru"}
    # by_language wins field by field over the folder; the folder's other fields stay.
    assert cfg.by_language["de"].model_dump() == {"gopher_quality": {"min_stop_words": 1}, "c4": {"enabled": True}}
    # The folder is read once: the config written to run.json (and given to workers) holds its settings.
    assert cfg.by_language_dir is None and cfg.by_language_sources == [f"by_language_dir: {tmp_path}"]
    dumped = json.loads(json.dumps(cfg.model_dump(mode="json")))
    assert FiltersConfig.model_validate(dumped) == cfg
    assert pickle.loads(pickle.dumps(cfg)) == cfg


@pytest.mark.parametrize(
    "files, message",
    [
        ({"de.yml": "gopher_quality: {min_stop_word: 1}\n"}, "de.yml: gopher_quality.min_stop_word: unknown field"),
        ({"de.yml": "c4: [1, 2\n"}, "de.yml is not valid YAML"),
        ({"de.yml": "- 1\n"}, "de.yml: the top level must be a mapping"),
        ({"de.yml": "{}", "deu_Latn.yml": "{}"}, "de.yml and deu_Latn.yml both set 'de': keep one"),
        ({}, "no .yml files in"),
    ],
)
def test_bad_files_are_refused_naming_them(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match=message) as e:
        filters({"by_language_dir": str(tmp_path)})
    assert len(str(e.value).splitlines()) == 1


# ----------------------------------------------------------------------------- the samples, language by language


@pytest.fixture(scope="module")
def sample_docs() -> pa.Table:
    """German, Russian, Japanese, French and some English pages of samples/, as phase 1 gives them to the filters."""
    from stages.charset import DecodeStage
    from stages.extract import ExtractConfig, ExtractStage
    from stages.langid import LangIdConfig, LangIdStage
    from stages.warc import ReadStats, WarcReader

    truth = [json.loads(line) for line in (SAMPLES / "ground_truth.jsonl").read_text().splitlines()]
    english = [t["id"] for t in truth if t.get("language") == "en"][:60]
    wanted = {t["id"] for t in truth if t.get("language") in ("de", "ru", "ja", "fr")} | set(english)
    stages = [DecodeStage(), ExtractStage(ExtractConfig()), LangIdStage(LangIdConfig(min_score=0.0))]
    parts = []
    for path in sorted(SAMPLES.glob("*.warc.gz")):
        with open(path, "rb") as f:
            for batch in WarcReader().iter_batches(f, str(path), ReadStats()):
                batch = batch.filter(pa.array([i in wanted for i in batch.column("id").to_pylist()]))
                kept, _ = run_chain(stages, batch, ChainStats())
                parts.append(kept.select(["id", "url", "text", "language", "language_score"]))
    docs = pa.concat_tables(parts)
    assert {"de", "ru", "ja", "fr", "en"} <= set(docs.column("language").to_pylist())
    return docs


def verdicts(config: FiltersConfig, docs: pa.Table) -> dict[str, tuple[str, str | None, str | None]]:
    """id -> (language, reason or None if kept, details), through the whole filter chain in batches of 64."""
    stages, out = build_filters(config), {}
    langs = dict(zip(docs.column("id").to_pylist(), docs.column("language").to_pylist(), strict=False))
    for i in range(0, len(docs), 64):
        kept, rejected = run_chain(stages, docs.slice(i, 64), ChainStats())
        out.update({d: (langs[d], None, None) for d in kept.column("id").to_pylist()})
        for r in rejected:
            out.update(
                {
                    d: (langs[d], reason, det)
                    for d, reason, det in zip(
                        r.column("id").to_pylist(),
                        r.column("reason").to_pylist(),
                        r.column("details").to_pylist(),
                        strict=False,
                    )
                }
            )
    return out


def changed(base: dict, other: dict) -> dict[str, tuple]:
    return {d: (base[d], other[d]) for d in base if base[d] != other[d]}


def kept(v: dict, lang: str) -> int:
    return sum(1 for language, reason, _ in v.values() if language == lang and reason is None)


def test_de_without_c4_keeps_the_german_pages_c4_removed(sample_docs):
    base = verdicts(FiltersConfig(), sample_docs)
    de = verdicts(filters({"by_language": {"de": {"c4": {"enabled": False}}}}), sample_docs)
    diff = changed(base, de)
    assert diff and all(b[0] == "de" for b, _ in diff.values())  # only German documents change
    # Pages C4 removed are kept or meet a later rule; FineWeb now judges the text C4 no longer cleans.
    for b, n in diff.values():
        assert (b[1] or "c4:").startswith("c4:") and (n[1] or "fineweb:").startswith("fineweb:"), (b, n)
    assert not any(v[0] == "de" and (v[1] or "").startswith("c4:") for v in de.values())
    assert kept(de, "de") > kept(base, "de")


def test_ru_with_a_higher_word_minimum_removes_more_russian_pages(sample_docs):
    base = verdicts(FiltersConfig(), sample_docs)
    ru = verdicts(filters({"by_language": {"ru": {"gopher_quality": {"min_doc_words": 300}}}}), sample_docs)
    diff = changed(base, ru)
    assert diff and all(b[0] == "ru" for b, _ in diff.values())
    assert kept(ru, "ru") < kept(base, "ru")
    # The rejections carry the Russian threshold; other languages' carry the base one.
    assert all(n[1] == "gopher_quality:min_doc_words" and n[2].endswith("< 300") for _, n in diff.values())
    assert any(v[0] != "ru" and v[1] == "gopher_quality:min_doc_words" and v[2].endswith("< 50") for v in ru.values())


def test_ja_with_fineweb2s_file_keeps_pages_the_base_repetition_limits_remove(sample_docs):
    base = verdicts(FiltersConfig(), sample_docs)
    ja = verdicts(filters({"fineweb2_configs": str(FIXTURE), "fineweb2_languages": ["ja"]}), sample_docs)
    diff = changed(base, ja)
    assert diff and all(b[0] == "ja" for b, _ in diff.values())
    # FineWeb-2's Japanese n-gram limits are higher (top 4-grams 0.172 against Gopher's 0.16).
    newly_kept = [b for b, n in diff.values() if n[1] is None]
    assert newly_kept and all(b[1].startswith("gopher_repetition:") for b in newly_kept)
    assert kept(ja, "ja") > kept(base, "ja")


def test_three_languages_at_once_change_only_their_own_pages(sample_docs):
    """de, ru and ja settings together give each language's verdicts of its own run, and leave en and fr alone."""
    settings = {"de": {"c4": {"enabled": False}}, "ru": {"gopher_quality": {"min_doc_words": 300}}}
    together = verdicts(
        filters({"by_language": settings, "fineweb2_configs": str(FIXTURE), "fineweb2_languages": ["ja"]}), sample_docs
    )
    alone = {
        "de": verdicts(filters({"by_language": {"de": settings["de"]}}), sample_docs),
        "ru": verdicts(filters({"by_language": {"ru": settings["ru"]}}), sample_docs),
        "ja": verdicts(filters({"fineweb2_configs": str(FIXTURE), "fineweb2_languages": ["ja"]}), sample_docs),
    }
    base = verdicts(FiltersConfig(), sample_docs)
    for doc, v in together.items():
        assert v == alone.get(v[0], base)[doc], doc
    counts = Counter(v[0] for v in together.values())
    assert counts["en"] and counts["fr"]
