"""The filters' config, the order they run in, and the accounting of a whole chain."""

import pyarrow as pa
import pytest
from pydantic import BaseModel

from pipeline.config import ConfigError, parse_config
from stages.base import ChainStats, run_chain
from stages.filters import FiltersConfig, build_filters, url_filter_specs
from tests.filters_helpers import table


def build_url_filters(config: FiltersConfig) -> list:
    """The URL filter stages, built from their specs as the phases build them."""
    return [cls(cfg) for cls, cfg in url_filter_specs(config)]


SOURCES = ("Gopher", "C4", "FineWeb", "RefinedWeb", "DataTrove")


def fields(model: type[BaseModel], prefix=""):
    for name, f in model.model_fields.items():
        if isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel):
            yield from fields(f.annotation, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", f


def test_every_field_is_described():
    for name, f in fields(FiltersConfig):
        assert f.description, name
    thresholds = [(n, f) for n, f in fields(FiltersConfig) if not n.endswith(("stop_words", "_files", "bullets"))]
    for name, f in thresholds:
        assert any(s in f.description for s in SOURCES), f"{name}: no source cited"


def test_published_defaults():
    c = FiltersConfig()
    g, r, c4, fw = c.gopher_quality, c.gopher_repetition, c.c4, c.fineweb
    assert (g.min_doc_words, g.max_doc_words, g.min_avg_word_length, g.max_avg_word_length) == (50, 100_000, 3, 10)
    assert (g.max_symbol_word_ratio, g.max_bullet_lines_ratio, g.max_ellipsis_lines_ratio) == (0.1, 0.9, 0.3)
    assert (g.min_alpha_words_ratio, g.min_stop_words) == (0.8, 2)
    assert (r.dup_line_frac, r.dup_para_frac, r.dup_line_char_frac, r.dup_para_char_frac) == (0.3, 0.3, 0.2, 0.2)
    assert r.top_n_grams == {2: 0.2, 3: 0.18, 4: 0.16}
    assert r.dup_n_grams == {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}
    assert (c4.min_words_per_line, c4.min_num_sentences, c4.max_word_length) == (3, 5, 1000)
    assert (fw.line_punct_thr, fw.short_line_thr, fw.short_line_length) == (0.12, 0.67, 30)
    assert (fw.char_duplicates_ratio, fw.new_line_ratio) == (0.01, 0.3)
    assert c.url.soft_word_threshold == 2


def test_order_and_switches():
    assert [s.name for s in build_url_filters(FiltersConfig())] == ["url_filter"]
    assert [s.name for s in build_filters(FiltersConfig())] == ["gopher_quality", "gopher_repetition", "c4", "fineweb"]
    cfg = parse_config(
        {"inputs": ["x"], "output": "o", "filters": {"c4": {"enabled": False}, "url": {"enabled": False}}}
    )
    assert [s.name for s in build_filters(cfg.filters)] == ["gopher_quality", "gopher_repetition", "fineweb"]
    assert build_url_filters(cfg.filters) == []


@pytest.mark.parametrize(
    "filters, message",
    [
        ({"gopher": {}}, "filters.gopher: unknown field"),
        ({"c4": {"min_sentences": 3}}, "filters.c4.min_sentences: unknown field"),
        (
            {"fineweb": {"short_line_thr": 2}},
            "filters.fineweb.short_line_thr: Input should be less than or equal to 1",
        ),
    ],
)
def test_bad_filter_config_names_the_field(filters, message):
    with pytest.raises(ConfigError, match=message):
        parse_config({"inputs": ["x"], "output": "o", "filters": filters})


def test_chain_accounts_for_every_document():
    good = "\n".join(
        [
            "The river rose two metres overnight and the town was flooded by the morning.",
            "Residents of the valley were moved to the school, where volunteers served hot meals.",
            "The mayor said the dam was safe and that engineers had checked it twice this week.",
            "Engineers will inspect it again on Monday with a team from the regional water board.",
            "Rain is expected to ease by Friday, and the river should fall back within its banks.",
        ]
    )
    texts = [good, "", "hello", "• a\n• b\n• c", good.replace("Monday", "Tuesday")]
    batch = table(texts, urls=[f"https://news.example/{i}" for i in range(4)] + ["https://x.example/porn"])
    stages = build_url_filters(FiltersConfig()) + build_filters(FiltersConfig())
    stats = ChainStats()
    kept, rejected = run_chain(stages, batch, stats)
    rejected = pa.concat_tables(rejected)
    assert kept.column("id").to_pylist() == ["doc-0"]
    assert len(kept) + len(rejected) == len(batch)
    assert dict(zip(rejected.column("id").to_pylist(), rejected.column("reason").to_pylist(), strict=False)) == {
        "doc-4": "url_filter:banned_word",
        "doc-1": "gopher_quality:empty_text",
        "doc-2": "gopher_quality:min_doc_words",
        "doc-3": "gopher_quality:min_doc_words",
    }
    # The kept row carries the C4 accounting columns and the (empty) skip record.
    row = kept.to_pylist()[0]
    assert (row["c4_lines_removed"], row["c4_chars_removed"], row["filter_skipped"]) == (0, 0, None)


def test_empty_batch_keeps_the_full_schema():
    stages = build_url_filters(FiltersConfig()) + build_filters(FiltersConfig())
    kept, rejected = run_chain(stages, table(["x"]).slice(0, 0), ChainStats())
    assert len(kept) == 0 and rejected == []
    for column in ("filter_skipped", "c4_lines_removed", "c4_chars_removed", "c4_lines_removed_by"):
        assert column in kept.column_names
