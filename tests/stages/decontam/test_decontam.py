"""Decontamination on real prose: the samples' texts (decoded and extracted by the project's stages)
with eval passages planted verbatim in some pages and only short phrases of them in others.

The eval sets are cut from held-out sample pages and written as JSON lines,
MMLU-style Parquet (question + choices) and text; every planted page must be
removed, none of the others, and the stage must agree on every page with a
plain-Python reference (its own normalization from ``unicodedata``, n-gram
sets), for both index kinds.
"""

from __future__ import annotations

import json
import pickle
import random
import re
import unicodedata
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks.documents_read import sample_texts
from stages.base import ChainStats, run_chain
from stages.decontam import DecontamConfig, DecontamStage, EvalItems, build_index, index_items, summarize
from stages.decontam.normalize import normalize, words_of

N = 13


# ---------------------------------------------------------------- the reference


def ref_words(text: str | None) -> list[str]:
    """Normalized words, written from the docstring of stages/decontam/normalize.py with unicodedata."""
    out = []
    for ch in unicodedata.normalize("NFKC", text or ""):
        ch = ch.lower()[:1]  # the simple case mapping, one code point to one: "İ" -> "i" (Python's lower() gives "i̇")
        if ch in "\xad\u200c\u200d\u2060\ufeff":
            continue
        cat = unicodedata.category(ch)
        out.append(" " if cat[0] in "PSZ" or cat == "Cc" or ch == "\u200b" else ch)
    return "".join(out).split()


def ref_grams(words: list[str], lengths: tuple[int, ...]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for n in lengths for i in range(len(words) - n + 1)}


def ref_index(items: list[tuple[str, str]], min_words: int = 8) -> dict[tuple[str, ...], set[str]]:
    """n-gram -> labels of the items holding it (whole items of min_words..N-1 words)."""
    index: dict[tuple[str, ...], set[str]] = {}
    for label, text in items:
        w = ref_words(text)
        grams = ref_grams(w, (N,)) if len(w) >= N else ({tuple(w)} if len(w) >= min_words else set())
        for g in grams:
            index.setdefault(g, set()).add(label)
    return index


def ref_matches(text: str, index: dict) -> set[str]:
    lengths = tuple(sorted({len(g) for g in index}))
    return set().union(*(index.get(g, set()) for g in ref_grams(ref_words(text), lengths)))


# ---------------------------------------------------------------- the corpus


@dataclass
class Corpus:
    pages: list[str]  # the pages the stage reads, planted ones included
    ids: list[str]
    planted: dict[str, set[str]]  # page id -> labels of the eval items planted in it
    phrases: set[str]  # ids of pages holding only short phrases of eval items
    items: dict[str, list[tuple[str, str]]]  # eval set -> (id, text)
    mmlu: list[dict]  # the MMLU-style records


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.?!])\s+", text) if len(s.split()) >= 16 and "\n" not in s.strip()]


def _passage(text: str, rng: random.Random) -> str | None:
    """40-100 consecutive words of a text, cut at whitespace, its own line breaks kept (verbatim)."""
    spans = [m.span() for m in re.finditer(r"\S+", text)]
    if len(spans) < 60:
        return None
    n = rng.randint(40, min(100, len(spans)))
    start = rng.randint(0, len(spans) - n)
    return text[spans[start][0] : spans[start + n - 1][1]]


def _insert(page: str, piece: str, rng: random.Random) -> str:
    """``piece`` as a paragraph of its own at a random paragraph boundary of ``page``."""
    lines = page.split("\n")
    at = rng.randint(0, len(lines))
    return "\n".join(lines[:at] + [piece] + lines[at:])


def _phrase(text: str, rng: random.Random) -> str:
    """5 to 10 words of ``text`` as it is written (fewer than 13 once normalized: "a-b" is two words)."""
    w = text.split()
    while True:
        n = rng.randint(2, 10)
        start = rng.randint(0, len(w) - n)
        phrase = " ".join(w[start : start + n])
        if 5 <= len(ref_words(phrase)) <= 10:
            return phrase + "."


def _styled(text: str) -> str:
    """The same words as a page might print them: upper case, typographic quotes and dashes, a ligature."""
    return (
        text.upper().replace("'", "\u2019").replace(", ", " \u2014 ").replace("FI", "\ufb01").replace(" ", "  \n ", 3)
    )


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    texts = list(dict.fromkeys(sample_texts()))  # the samples repeat some pages
    rng = random.Random(22)
    held_out, pool = texts[::8], [t for i, t in enumerate(texts) if i % 8]
    pool_index = ref_index([(str(i), t) for i, t in enumerate(pool)])  # every pool n-gram

    def absent(text: str) -> bool:  # no n-gram of it occurs in the pool: a plant is the only way in
        w = ref_words(text)
        return len(w) >= N and not any(g in pool_index for g in ref_grams(w, (N,)))

    passages, questions = [], []
    for text in held_out:  # a text gives a passage or a question, so that no two items share words
        p = _passage(text, rng) if len(passages) < 24 else None
        if p and absent(p):
            passages.append(p)
        else:
            questions += [s for s in _sentences(text) if absent(s)][:1]
    assert len(passages) >= 24 and len(questions) >= 12, "the samples no longer give enough eval text"
    mmlu = [
        {"question": q, "choices": [f"choice {k} of {i}" for k in "abcd"], "answer": i % 4}
        for i, q in enumerate(questions[:12])
    ]
    items = {
        "passages": [(f"p-{i}", p) for i, p in enumerate(passages[:16])],
        "lines": [(str(i), " ".join(p.split())) for i, p in enumerate(passages[16:24])],
        "mmlu": [(str(i), r["question"] + " " + " ".join(r["choices"])) for i, r in enumerate(mmlu)],
    }

    pages, ids = list(pool), [f"page-{i}" for i in range(len(pool))]
    order = rng.sample(range(len(pages)), len(pages))
    planted: dict[str, set[str]] = {}
    verbatim = [(s, i, p) for s in ("passages", "lines") for i, p in items[s]]
    for (name, item, text), page in zip(verbatim, order, strict=False):
        styled = len(planted) % 5 == 4  # every fifth plant as a page would print it
        pages[page] = _insert(pages[page], _styled(text) if styled else text, rng)
        planted[ids[page]] = {f"{name}:{item}"}
    for i, (record, page) in enumerate(zip(mmlu, order[len(verbatim) :], strict=False)):
        labels = "ABCD"
        block = (
            "Question: "
            + record["question"]
            + "\n"
            + "\n".join(f"{labels[k]}) {c}" for k, c in enumerate(record["choices"]))
        )
        pages[page] = _insert(pages[page], block, rng)
        planted[ids[page]] = {f"mmlu:{i}"}
    both = order[len(verbatim) + len(mmlu)]  # one page with two items of two sets
    pages[both] = _insert(_insert(pages[both], passages[0], rng), mmlu[1]["question"], rng)
    planted[ids[both]] = {"passages:p-0", "mmlu:1"}

    phrases = set()
    for page in order[len(verbatim) + len(mmlu) + 1 :][:60]:
        for _ in range(3):  # three short runs of an item's words, each a paragraph of its own
            pages[page] = _insert(pages[page], _phrase(rng.choice(verbatim)[2], rng), rng)
        phrases.add(ids[page])
    return Corpus(pages, ids, planted, phrases, items, mmlu)


@pytest.fixture(scope="module")
def eval_files(corpus, tmp_path_factory) -> list[dict]:
    folder = tmp_path_factory.mktemp("evals")
    jsonl = folder / "passages.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"id": i, "text": t, "source": "samples"}) + "\n" for i, t in corpus.items["passages"])
    )
    text = folder / "lines.txt"
    text.write_text("\n".join(t for _, t in corpus.items["lines"]) + "\n")
    parquet = folder / "mmlu.parquet"
    pq.write_table(pa.Table.from_pylist(corpus.mmlu), parquet)
    return [
        {"path": str(jsonl), "id_field": "id"},
        str(text),
        {"path": str(parquet), "fields": ["question", "choices"]},
    ]


def _run(corpus: Corpus, config: DecontamConfig, index=None):
    index = index or build_index(config)
    stage = DecontamStage(config, index)
    stats, kept, rejected = ChainStats(), [], []
    table = pa.table({"id": corpus.ids, "text": pa.array(corpus.pages, pa.large_string())})
    for batch in table.to_batches(64):
        k, r = run_chain([stage], pa.Table.from_batches([batch]), stats)
        kept.append(k)
        rejected += r
    return index, stats, pa.concat_tables(kept), (pa.concat_tables(rejected) if rejected else None)


# ---------------------------------------------------------------- the tests


def test_reference_normalization_agrees_on_the_samples(corpus):
    got = normalize(pa.array(corpus.pages, pa.large_string())).to_pylist()
    assert got == [" ".join(ref_words(p)) for p in corpus.pages]


def test_the_reference_finds_exactly_the_planted_pages(corpus):
    reference = ref_index([(f"{s}:{i}", t) for s, its in corpus.items.items() for i, t in its])
    found = {p: ref_matches(t, reference) for p, t in zip(corpus.ids, corpus.pages, strict=False)}
    assert {p: labels for p, labels in found.items() if labels} == corpus.planted


@pytest.mark.parametrize("kind", ["exact", "bloom"])
def test_planted_pages_removed_and_no_other(corpus, eval_files, kind):
    config = DecontamConfig(eval_sets=eval_files, index=kind)
    index, stats, kept, rejected = _run(corpus, config)
    assert index.set_names == ("passages", "lines", "mmlu")

    removed = dict(zip(rejected.column("id").to_pylist(), rejected.column("details").to_pylist(), strict=False))
    assert set(removed) == set(corpus.planted)  # every planted page, and no other
    assert not corpus.phrases & set(removed)  # short phrases never trigger
    assert len(kept) + len(rejected) == len(corpus.pages)
    for page, labels in corpus.planted.items():
        assert set(removed[page].split(", ")) == labels
    assert set(rejected.column("reason").to_pylist()) == {"contaminated"}

    rows = {r.name: r for r in summarize(stats.counters, index.set_names, prefix="decontam.")}
    assert (rows["passages"].items_found, rows["passages"].documents) == (16, 17)  # p-0 planted twice
    assert (rows["lines"].items_found, rows["lines"].documents) == (8, 8)
    assert (rows["mmlu"].items_found, rows["mmlu"].documents) == (12, 13)  # mmlu:1 planted twice
    assert stats.counters["decontam.documents"] == len(corpus.planted)
    assert stats.rejected["contaminated"] == len(corpus.planted)


def test_tag_action_keeps_every_page_and_lists_the_items(corpus, eval_files):
    config = DecontamConfig(eval_sets=eval_files, action="tag")
    _, stats, kept, rejected = _run(corpus, config)
    assert rejected is None and len(kept) == len(corpus.pages)
    tags = dict(zip(kept.column("id").to_pylist(), kept.column("contaminated").to_pylist(), strict=False))
    assert {p: set(t) for p, t in tags.items() if t is not None} == corpus.planted
    assert kept.schema.field("contaminated").type == pa.list_(pa.string())


def test_bloom_false_positives_are_resolved_by_the_exact_check(corpus, eval_files):
    loose = DecontamConfig(eval_sets=eval_files, index="bloom", bloom_fpr=0.01)
    index, stats, _, rejected = _run(corpus, loose)
    assert index.bloom.fpr == pytest.approx(0.01, rel=0.05)
    false_hits = stats.counters["decontam.false_hits"]
    ngrams = stats.counters["decontam.ngrams"]
    assert false_hits > 100 and false_hits < 0.03 * ngrams  # about fpr x n-grams looked up
    assert set(rejected.column("id").to_pylist()) == set(corpus.planted)


def test_exact_index_rejects_a_hash_hit_no_item_holds(corpus, eval_files):
    """A 64-bit collision, forced: a page n-gram's hash is put in the index for an item that does not hold it."""
    config = DecontamConfig(eval_sets=eval_files)
    index = build_index(config)
    clean = next(
        i
        for i, p in zip(corpus.ids, corpus.pages, strict=False)
        if i not in corpus.planted and i not in corpus.phrases
    )
    page = corpus.pages[corpus.ids.index(clean)]
    from stages.decontam.normalize import ngrams

    forged = ngrams(words_of(pa.array([page], pa.large_string())), (N,)).hashes[:5]
    keys = np.concatenate([index.keys, forged])
    order = np.argsort(keys, kind="stable")
    index.keys, index.key_items = keys[order], np.concatenate([index.key_items, np.zeros(5, np.int32)])[order]
    stage = DecontamStage(config, index)
    out = stage(pa.table({"text": pa.array([page], pa.large_string())}))
    assert "reason" not in out.column_names or out.column("reason").null_count == 1
    assert stage.drain_counters()["false_hits"] >= 5


def test_the_index_ships_to_workers(corpus, eval_files):
    config = DecontamConfig(eval_sets=eval_files, index="bloom")
    index = build_index(config)
    copy = pickle.loads(pickle.dumps(index))
    batch = pa.table({"text": pa.array(corpus.pages[:200], pa.large_string())})
    a, b = DecontamStage(config, index)(batch), DecontamStage(config, copy)(batch)
    assert a.equals(b)
    assert index.stats.nbytes < 50_000  # 36 items: their text, ids and a small filter


# ---------------------------------------------------------------- short items and the details


def _items(*texts: str, name: str = "ev") -> list[EvalItems]:
    return [EvalItems(name, "mem", [str(i) for i in range(len(texts))], list(texts))]


def test_short_items_match_whole_and_tiny_ones_are_skipped():
    ten = "the quick brown fox jumps over the lazy sleeping dog"  # 10 words: matched whole
    five = "to be or not to"  # 5 words: a common phrase, not indexed
    config = DecontamConfig(eval_sets=["x.jsonl"])
    index = index_items(config, _items(ten, five))
    assert index.lengths == (13, 10)
    assert (index.stats.eval_sets[0].items_whole, index.stats.eval_sets[0].items_skipped) == (1, 1)
    stage = DecontamStage(config, index)
    out = stage(
        pa.table(
            {
                "text": [
                    "Yesterday THE QUICK brown fox jumps over the lazy, sleeping dog!",  # the whole item: caught
                    "the quick brown fox jumps over the lazy dog",  # nine of its words: not
                    "to be or not to be, that is the question",
                    None,
                    "",
                ]
            }
        )
    )
    assert out.column("reason").to_pylist() == ["contaminated", None, None, None, None]


def test_details_name_at_most_max_details_items():
    items = [
        f"item number {i} says that the answer to this question is plainly {i} and nothing else" for i in range(4)
    ]
    config = DecontamConfig(eval_sets=["x.jsonl"], max_details_items=2)
    stage = DecontamStage(config, index_items(config, _items(*items)))
    out = stage(pa.table({"text": ["\n".join(items)]}))
    assert out.column("details").to_pylist() == ["ev:0, ev:1 (+2 more)"]
    counters = stage.drain_counters()
    assert {k: v for k, v in counters.items() if k.startswith("items.")} == {f"items.ev.{i}": 1 for i in range(4)}
    assert counters["documents.ev"] == 1


def test_empty_batch_keeps_the_schema():
    config = DecontamConfig(eval_sets=["x.jsonl"], action="tag")
    stage = DecontamStage(config, index_items(config, _items("a b c d e f g h i j k l m n o")))
    out = stage(pa.table({"text": pa.array([], pa.large_string())}))
    assert out.column_names == ["text", "contaminated"] and len(out) == 0
    assert DecontamStage(config, stage.index).adds == ("contaminated",)
    remove = DecontamConfig(eval_sets=["x.jsonl"])
    assert DecontamStage(remove, stage.index).adds == () and DecontamStage(remove, stage.index).reasons == (
        "contaminated",
    )
