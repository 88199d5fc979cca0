"""The shards phase under settings a careless user or an attacker picks: far more shuffle groups than
documents (no marker file per empty group, resume still exact), packing that would drop everything (an
error naming the setting, the drop counted), and a document the tokenizer cannot encode (a counted
rejection, not the end of the run)."""

from __future__ import annotations

import json
import random
import shutil

import pyarrow.parquet as pq
import pytest

from pipeline.config import ConfigError, parse_config
from pipeline.runner import plan_context, run, status
from tests.conftest import Page, html, write_warc

pytestmark = pytest.mark.ray

WORDS = "harbor castle meadow violin rocket winter forest candle island bridge garden planet silver orange".split()
UNKNOWN = "zebra"  # a word the word-level tokenizer below does not know


@pytest.fixture(scope="module")
def finished(ray_local, tmp_path_factory):
    """Phases up to deduped (final is off: no PII, no quality filter), run once: the shards tests copy it."""
    src = tmp_path_factory.mktemp("warcs")
    rng = random.Random(5)
    pages = [
        Page(
            f"https://s.example/{i}",
            html(
                " ".join(rng.choice(WORDS) for _ in range(3)).capitalize(),
                *(
                    " ".join(rng.choice(WORDS) for _ in range(12)) + ("" if i != 3 else f" {UNKNOWN}") + "."
                    for _ in range(4)
                ),
            ).encode(),
        )
        for i in range(8)
    ]
    write_warc(src / "a.warc.gz", pages)
    out = tmp_path_factory.mktemp("base") / "out"
    assert run(_config(src, out), progress=False, phases=["extracted", "deduped"])["status"] == "ok"
    return src, out


def _config(src, out, **shards):
    return parse_config(
        {
            "inputs": [str(src / "*.warc.gz")],
            "output": str(out),
            "langid": {"min_score": 0.0},
            "pii": {"enabled": False},
            "filters": {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")},
            "card": {"enabled": False},
            "shards": shards,
        }
    )


def _copy(finished, tmp_path):
    src, base = finished
    out = tmp_path / "out"
    shutil.copytree(base, out)
    return src, out


def test_many_more_groups_than_documents_write_one_marker_for_the_empty_ones(finished, tmp_path):
    src, out = _copy(finished, tmp_path)
    cfg = _config(src, out, shuffle={"groups": 4096})
    first = run(cfg, progress=False, phases=["shards"])
    assert first["status"] == "ok"
    shards = first["phases"]["shards"]
    assert shards["groups"] == 4096 and shards["documents"] == 8
    markers = sorted(p.name for p in (out / "_done" / "shards").glob("*.json"))
    assert len(markers) <= 8 + 2 and "_empty_groups.json" in markers and "_manifest.json" in markers
    empty = json.loads((out / "_done" / "shards" / "_empty_groups.json").read_text())  # the groups step's empty units
    assert len(empty["units"]) == 4096 - (len(markers) - 2)
    manifest = json.loads((out / "shards" / "manifest.json").read_text())
    assert len(manifest["groups"]) == 4096 and manifest["documents"] == 8

    # resume is exact: everything is current, nothing to do
    ctx = plan_context(cfg)
    row = next(r for r in status(ctx, ctx.phases) if r["phase"] == "shards")
    assert (row["units"], row["done"], row["todo"]) == (4097, 4097, 0)
    before = {p.name: p.read_bytes() for p in (out / "shards").rglob("*") if p.is_file()}
    again = run(cfg, progress=False, phases=["shards"])
    assert again["phases"]["shards"]["units_skipped"] == 4097

    # a lost group marker redoes that group only, and the bytes are the same
    lost = next(m for m in markers if m.startswith("group-"))
    (out / "_done" / "shards" / lost).unlink()
    redo = run(cfg, progress=False, phases=["shards"])
    assert redo["phases"]["shards"]["units_skipped"] == 4097 - 1  # that group; the manifest is then rewritten
    assert (out / "_done" / "shards" / lost).exists() and redo["phases"]["shards"]["manifest"]
    assert {p.name: p.read_bytes() for p in (out / "shards").rglob("*") if p.is_file()} == before

    # another corpus (here: another seed) forgets the empty groups of the old one
    reseeded = run(_config(src, out, shuffle={"groups": 4096, "seed": 7}), progress=False, phases=["shards"])
    assert reseeded["phases"]["shards"]["units_skipped"] == 0
    reseeded_empty = json.loads((out / "_done" / "shards" / "_empty_groups.json").read_text())
    assert reseeded_empty["fingerprint"] != empty["fingerprint"]


def test_packing_that_drops_too_much_is_an_error_naming_the_setting(finished, tmp_path):
    src, out = _copy(finished, tmp_path)
    cfg = _config(src, out, layout={"kind": "packed", "seq_len": 4096, "remainder": "drop"}, shuffle={"groups": 2})
    with pytest.raises(ConfigError) as e:
        run(cfg, progress=False, phases=["shards"])
    message = str(e.value)
    assert (
        message.startswith("config error: shards.layout.max_dropped_share: packing dropped ") and "\n" not in message
    )
    assert "(100.0%, 8 whole documents)" in message and "set shards.layout.remainder to pad or keep" in message
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "error" and "shards.layout.max_dropped_share" in record["error"]
    assert not (out / "shards" / "manifest.json").exists()
    groups = [json.loads(p.read_text())["totals"] for p in (out / "_done" / "shards").glob("group-*.json")]
    assert sum(g["dropped_documents"] for g in groups) == 8 and sum(g["samples"] for g in groups) == 0

    # allowing it (a setting of the run, not of the bytes) only writes the manifest, with the drop in it
    allowed = _config(
        src,
        out,
        layout={"kind": "packed", "seq_len": 4096, "remainder": "drop", "max_dropped_share": 1.0},
        shuffle={"groups": 2},
    )
    record = run(allowed, progress=False, phases=["shards"])
    assert record["status"] == "ok" and record["phases"]["shards"]["units_skipped"] == 2
    assert record["phases"]["shards"]["dropped_documents"] == 8
    manifest = json.loads((out / "shards" / "manifest.json").read_text())
    assert (
        manifest["dropped"]["documents"] == 8
        and manifest["dropped"]["tokens"] == sum(g["dropped_tokens"] for g in groups) > 0
    )


def _word_level_tokenizer(path) -> str:
    """A word-level tokenizer without an unknown token: it refuses any text with a word it does not know."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(sorted({*WORDS, *(w.capitalize() for w in WORDS), ".", ",", "<|endoftext|>"}))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(path))
    return str(path)


def test_a_document_the_tokenizer_cannot_encode_is_a_counted_rejection(finished, tmp_path):
    src, out = _copy(finished, tmp_path)
    cfg = _config(
        src, out, tokenize={"tokenizer": _word_level_tokenizer(tmp_path / "words.json")}, shuffle={"groups": 2}
    )
    record = run(cfg, progress=False, phases=["shards"])
    assert record["status"] == "ok"
    shards = record["phases"]["shards"]
    assert shards["rejected_by_reason"] == {"tokenize_error": 1} and shards["documents"] == 7 and shards["in"] == 8
    rejected = pq.read_table(out / "rejected" / "shards").to_pylist()
    assert [(r["url"], r["reason"]) for r in rejected] == [("https://s.example/3", "tokenize_error")]
    assert "Missing [UNK] token" in rejected[0]["details"]
    assert json.loads((out / "shards" / "manifest.json").read_text())["documents"] == 7


def test_a_tokenizer_that_fails_on_every_text_fails_the_run(finished, tmp_path):
    """Issue 38.8: 8 of 8 documents rejected as ``tokenize_error`` ended exit 0, status ok, every check ok."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    from pipeline.cli import main

    src, out = _copy(finished, tmp_path)
    tok = Tokenizer(models.WordLevel(vocab={"<|endoftext|>": 0}, unk_token="[UNK]"))  # no [UNK]: refuses every word
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "none.json"))
    data = _config(src, out, tokenize={"tokenizer": str(tmp_path / "none.json")}, shuffle={"groups": 2}).model_dump(
        mode="json"
    )
    data["card"]["enabled"] = True
    (tmp_path / "run.yaml").write_text(json.dumps(data))
    assert main(["run", str(tmp_path / "run.yaml"), "--phases", "shards,card", "--no-progress"]) == 1
    record = json.loads((out / "run.json").read_text())
    shards = record["phases"]["shards"]
    assert shards["rejected_by_reason"] == {"tokenize_error": 8} and shards["failed_units"] == {}
    assert record["status"] == "failed" and "8 of 8 to errors (8 tokenize_error)" in shards["lost_to_errors"]
    checks = json.loads((out / "card" / "stats.json").read_text())["checks"]
    assert [c["check"] for c in checks if not c["ok"]] == [
        f"shards: some document survives its errors ({shards['lost_to_errors']})"
    ]


def test_a_phase_fails_only_when_errors_took_what_it_would_keep():
    from pipeline.result import lost_to_errors

    assert lost_to_errors({"in": 10, "kept": 0, "rejected_by_reason": {"tokenize_error": 10}})
    assert lost_to_errors({"in": 10, "kept": 0, "rejected_by_reason": {"c4:lorem_ipsum": 7, "extract_error": 3}})
    assert lost_to_errors({"in": 10, "kept": 1, "rejected_by_reason": {"stage_error": 9}}) is None  # it kept some
    assert lost_to_errors({"in": 10, "kept": 0, "rejected_by_reason": {"exact_duplicate": 10}}) is None  # decisions
    assert lost_to_errors({"in": 0, "kept": 0, "rejected_by_reason": {}}) is None  # nothing to keep


def test_markers_hold_only_while_their_files_exist(finished, tmp_path):
    """Issue 38.9: a rerun after ``shards/`` was deleted reported 2 MDS shards from the markers with no ``shards/``,
    and ``curate report`` said every check was ok.  Now the markers name what their units published; the card's checks
    fail while it is gone, a rerun redoes those units (and a deleted part's), and the card is sound again."""
    from pipeline.card.report import main as report

    src, out = _copy(finished, tmp_path)
    data = _config(src, out, shuffle={"groups": 2}).model_dump(mode="json")
    data["card"]["enabled"] = True
    cfg = parse_config(data)
    assert run(cfg, progress=False)["status"] == "ok"
    mds = sorted(p.relative_to(out) for p in (out / "shards" / "mds").rglob("*.mds*"))
    assert mds
    shutil.rmtree(out / "shards")
    assert report([str(out)]) == 1
    failed = [c["check"] for c in json.loads((out / "card" / "stats.json").read_text())["checks"] if not c["ok"]]
    assert len(failed) == 1
    assert failed[0].startswith("shards: the files its markers name exist (3 units' files are gone")

    again = run(cfg, progress=False)
    assert again["status"] == "ok" and again["phases"]["shards"]["units_skipped"] == 0
    assert sorted(p.relative_to(out) for p in (out / "shards" / "mds").rglob("*.mds*")) == mds
    assert (out / "shards" / "manifest.json").exists()
    assert all(c["ok"] for c in json.loads((out / "card" / "stats.json").read_text())["checks"])

    (part,) = (out / "documents" / "extracted").glob("*.parquet")  # a map phase's part
    part.unlink()
    third = run(cfg, progress=False)
    assert third["phases"]["extracted"]["units_skipped"] == 0 and part.exists()
    (part,) = (out / "documents" / "deduped").glob("*.parquet")  # a part a phase of steps published
    part.unlink()
    fourth = run(cfg, progress=False)
    assert fourth["phases"]["deduped"]["units_skipped"] == 0 and part.exists() and fourth["status"] == "ok"
