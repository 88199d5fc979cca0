"""Dedup against earlier runs (``dedup.against``, issue 21.2): two snapshots of one crawl.

Run 1 deduplicates the originals and leaves its dedup index; run 2 holds light and medium
edits of some of them, exact copies, unrelated pages of a site whose long block every
page shares, and new pages.  Run 2 removes the copies (reason ``duplicate_earlier``,
details naming run 1 and the earlier id), keeps the rest, never touches run 1's files,
and gives the same bytes when run again.
"""

from __future__ import annotations

import hashlib
import json
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.storage import Storage
from pipeline.config import ConfigError, parse_config
from pipeline.dedup import index as dedup_index
from tests.conftest import SAMPLES, Page, html
from tests.dedup_standalone import corpus_unit, run_dedup
from tests.pipeline.dedup.test_dedup_steps import edit, prose

pytestmark = pytest.mark.ray

BLOCK_WORDS = 150  # the site's block: as long as a body, so two unrelated pages of the site agree on ~1/3 of the text


def _site_block(rng: random.Random) -> str:
    return "Legal notice. " + prose(rng, BLOCK_WORDS)


def snapshots():
    """(run 1 docs, run 2 docs, {run 2 copy id: original id}) with urls on a block site and on plain sites."""
    rng = random.Random(5)
    block = _site_block(rng)
    originals = []
    for i in range(60):
        on_site = i % 2 == 0
        body = prose(rng, 150 if on_site else 250)
        text = body + "\n\n" + block if on_site else body
        originals.append(
            {
                "id": f"r1-{i:03d}",
                "url": f"https://site.example/a/{i}" if on_site else f"https://plain{i}.example/p",
                "text": text,
                "body": body,
                "site": on_site,
            }
        )
    copies, truth = [], {}
    for j, o in enumerate(originals[:40]):
        kind = ("exact", "light", "medium", "medium")[j % 4]
        body = o["body"] if kind == "exact" else edit(rng, o["body"], 2 if kind == "light" else 8)
        if kind == "medium":
            body += " " + prose(rng, 10)
        text = body + "\n\n" + block if o["site"] else body
        cid = f"r2-copy-{j:03d}"
        copies.append(
            {"id": cid, "url": o["url"].replace("/a/", "/b/") if o["site"] else o["url"] + "2", "text": text}
        )
        truth[cid] = o["id"]
    # copies of copies: A lightly edited and extended, B = A without its first 60 words and with 60 new
    # ones: B is further from the original than from A, so it is often found only through A
    for j, o in enumerate(o for o in originals[40:] if not o["site"]):
        words = (edit(rng, o["body"], 2) + " " + prose(rng, 40)).split()
        chain = [" ".join(words), " ".join(words[60:]) + " " + prose(rng, 60)]
        for k, text in enumerate(chain):
            cid = f"r2-chain-{j:03d}-{'ab'[k]}"
            copies.append({"id": cid, "url": f"{o['url']}/copy-{k}", "text": text})
            truth[cid] = o["id"]
    unrelated = [
        {"id": f"r2-site-{k:03d}", "url": f"https://site.example/new/{k}", "text": prose(rng, 150) + "\n\n" + block}
        for k in range(40)
    ]
    fresh = [
        {"id": f"r2-new-{k:03d}", "url": f"https://fresh{k}.example/", "text": prose(rng, 250)} for k in range(20)
    ]
    run2 = copies + unrelated + fresh
    rng.shuffle(run2)
    return originals, run2, truth


def write_parts(root, docs, parts: int = 2) -> None:
    storage = Storage(str(root))
    for p in range(parts):
        chunk = docs[p::parts]
        table = pa.table(
            {
                "id": pa.array([d["id"] for d in chunk], pa.string()),
                "url": pa.array([d["url"] for d in chunk], pa.string()),
                "source": pa.array([f"in-{p}"] * len(chunk), pa.string()),
                "text": pa.array([d["text"] for d in chunk], pa.large_string()),
                "language": pa.array(["en"] * len(chunk), pa.string()),
            }
        )
        storage.write_parquet(table, "documents", "extracted", f"part-{p}.parquet")
        storage.write_json({"unit": str(p)}, "_done", "extracted", f"{p}.json")


def config(root, **dedup):
    return parse_config({"inputs": ["unused"], "output": str(root), "dedup": dedup})


def tree_bytes(root) -> dict:
    out = {}
    for folder, _, files in os.walk(root):
        for f in files:
            path = os.path.join(folder, f)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def rejected_rows(root) -> list[dict]:
    storage = Storage(str(root))
    return [
        r
        for n in storage.list("rejected", "deduped", suffix=".parquet")
        for r in pq.read_table(storage.path("rejected", "deduped", n)).to_pylist()
    ]


@pytest.fixture(scope="module")
def runs(ray_local, tmp_path_factory):
    base = tmp_path_factory.mktemp("against")
    run1, run2 = base / "run1", base / "run2"
    originals, docs2, truth = snapshots()
    write_parts(run1, originals)
    write_parts(run2, docs2)
    s1 = run_dedup(config(run1), Storage(str(run1)), workers=2, progress=False)
    before = tree_bytes(run1)
    s2 = run_dedup(config(run2, against=[str(run1)]), Storage(str(run2)), workers=2, progress=False)
    return {"run1": run1, "run2": run2, "truth": truth, "s1": s1, "s2": s2, "before": before, "docs2": docs2}


def test_run_1_leaves_an_index_of_what_it_kept(runs):
    storage = Storage(str(runs["run1"]))
    settings = storage.read_json(dedup_index.FOLDER, dedup_index.SETTINGS)
    assert settings["settings"]["num_perm"] == 128 and settings["documents"] == runs["s1"]["kept"] == 60
    index = pa.concat_tables(
        [storage.read_parquet(dedup_index.FOLDER, n) for n in storage.list(dedup_index.FOLDER, suffix=".parquet")]
    )
    assert sorted(index.column("id").to_pylist()) == [f"r1-{i:03d}" for i in range(60)]
    assert set(index.column_names) == {"id", "text_hash", "sig", "mask", "keys"}
    bands = settings["settings"]["bands"]
    assert min(len(k) for k in index.column("keys").to_pylist()) >= bands
    assert runs["s1"]["index_bytes"] > 0


def test_copies_of_earlier_documents_are_removed_with_run_1_and_the_earlier_id(runs):
    truth = runs["truth"]
    rows = rejected_rows(runs["run2"])
    earlier = {r["id"]: json.loads(r["details"]) for r in rows if r["reason"] == "duplicate_earlier"}
    found = set(earlier) & set(truth)
    recall = len(found) / len(truth)
    precision = len(found) / max(1, len(earlier))
    print(
        f"against: recall {recall:.3f} precision {precision:.3f} "
        f"({len(found)} of {len(truth)}, {len(earlier)} removed)"
    )
    assert recall >= 0.95 and precision >= 0.99
    for cid in found:
        assert earlier[cid]["earlier_run"] == str(runs["run1"]) and earlier[cid]["earlier_id"] == truth[cid]
    assert {earlier[c]["match"] for c in found if c.endswith(("copy-000", "copy-004"))} == {"exact"}  # matched by hash
    # copies of copies are found, some only through the copy in this run (checked against the earlier one);
    # B and A share an LSH bucket with probability ~0.93 at their Jaccard (~0.65), so not always
    chain = {c for c in truth if c.startswith("r2-chain-")}
    assert len(chain & found) >= 0.9 * len(chain)
    assert any(earlier[c]["match"] == "near_through_copy" for c in chain & found)
    assert runs["s2"]["duplicate_earlier_through_copy"] == sum(
        e["match"] == "near_through_copy" for e in earlier.values()
    )
    # the unrelated pages under the site's block and the new pages stay
    assert not any(r["id"].startswith(("r2-site-", "r2-new-")) for r in rows)
    assert runs["s2"]["rejected_by_reason"].get("duplicate_earlier") == len(earlier)


@pytest.mark.parametrize("partition_rows", [100, 2000])
def test_the_shuffled_join_gives_the_same_decisions(runs, tmp_path, partition_rows):
    # partition_rows below the keys' count: the joins of step 2d run as Ray Data shuffles; at 100 every
    # step shuffles, at 2000 the found documents' keys are broadcast and the few pairs checked here
    root = tmp_path / "run2-shuffled"
    write_parts(root, runs["docs2"])
    s = run_dedup(
        config(root, against=[str(runs["run1"])], partition_rows=partition_rows),
        Storage(str(root)),
        workers=2,
        progress=False,
    )
    assert s["earlier_partitions"] > 1 and runs["s2"]["earlier_partitions"] == 1
    local = pq.read_table(runs["run2"] / "dedup" / "earlier-duplicates" / "part-0.parquet")
    shuffled = pq.read_table(root / "dedup" / "earlier-duplicates" / "part-0.parquet")
    assert shuffled.equals(local)

    def counts(summary):
        return {
            k: v
            for k, v in summary.items()
            if k.startswith(("duplicate_earlier", "earlier_")) and k != "earlier_partitions"
        }

    assert counts(s) == counts(runs["s2"]) and s["duplicate_earlier_through_copy"] > 0


def test_run_1_is_never_written(runs):
    assert tree_bytes(runs["run1"]) == runs["before"]


def test_rerun_of_run_2_gives_the_same_bytes_and_is_skipped_when_current(runs):
    run2 = runs["run2"]
    cfg = config(run2, against=[str(runs["run1"])])
    first = {k: v for k, v in tree_bytes(run2).items() if not k.startswith("dedup/")}
    assert run_dedup(cfg, Storage(str(run2)), workers=2, progress=False).get("skipped")
    Storage(str(run2)).delete_dir("_done", "deduped")  # forget the marker: everything is redone
    run_dedup(cfg, Storage(str(run2)), workers=2, progress=False)
    again = {k: v for k, v in tree_bytes(run2).items() if not k.startswith("dedup/")}
    changing = {k for k in first if k.startswith("_done/")}  # markers hold timings
    assert {k: v for k, v in again.items() if k not in changing} == {
        k: v for k, v in first.items() if k not in changing
    }
    assert any(k.startswith("dedup_index/") for k in again)


def test_the_fingerprint_covers_the_earlier_index(runs, tmp_path):
    run1, run2 = runs["run1"], runs["run2"]
    parts = Storage(str(run2))  # every finished part of its extracted phase
    plain = corpus_unit(config(run2), parts).fingerprint
    against = corpus_unit(config(run2, against=[str(run1)]), parts).fingerprint
    assert plain != against
    # another earlier index (same root name, other contents): another fingerprint
    other = tmp_path / "other"
    _copy_index(run1, other).write_json(
        {**Storage(str(run1)).read_json(dedup_index.FOLDER, dedup_index.SETTINGS), "corpus_fingerprint": "changed"},
        dedup_index.FOLDER,
        dedup_index.SETTINGS,
    )
    assert corpus_unit(config(run2, against=[str(other)]), parts).fingerprint != against


def test_mismatched_settings_and_a_missing_index_are_config_errors(runs, tmp_path):
    run1, run2 = runs["run1"], runs["run2"]
    parts = Storage(str(run2))  # every finished part of its extracted phase
    with pytest.raises(ConfigError) as err:
        corpus_unit(config(run2, against=[str(run1)], minhash={"num_perm": 64}), parts)
    assert (
        "dedup.against[0]" in str(err.value)
        and "dedup.minhash.num_perm = 128" in str(err.value)
        and "has 64" in str(err.value)
    )
    missing = tmp_path / "nothing"
    with pytest.raises(ConfigError) as err:
        corpus_unit(config(run2, against=[str(run1), str(missing)]), parts)
    assert (
        len(str(err.value).splitlines()) == 1
        and "dedup.against[1]" in str(err.value)
        and "no dedup index" in str(err.value)
    )
    problems = dedup_index.problems(config(run2, against=[str(run2)]))
    assert problems and "own output root" in problems[0]


def test_the_plan_declares_the_reason(runs):
    from pipeline.phases import DEFAULT_PHASES
    from pipeline.plan import build_plan

    plan, _ = build_plan(config(runs["run2"], against=[str(runs["run1"])]), DEFAULT_PHASES)
    assert "duplicate_earlier" in {r for s in plan.phase("deduped").stages for r in s.reasons}


def _copy_index(run1, root) -> Storage:
    """``root`` holding a copy of run 1's dedup index (as a copy to another machine would)."""
    import shutil

    shutil.copytree(run1 / dedup_index.FOLDER, root / dedup_index.FOLDER)
    return Storage(str(root))


def test_an_incomplete_copy_of_an_index_is_a_one_line_error_naming_the_missing_file(runs, tmp_path):
    """Issue 38.12: a part file of the earlier index missing used to be read as an index without its documents
    (exit 0, their copies kept again, no warning)."""
    copy = _copy_index(runs["run1"], tmp_path / "copy")
    listed = copy.read_json(dedup_index.FOLDER, dedup_index.SETTINGS)["parts"]
    gone = f"part-{listed[-1]}.parquet"
    os.remove(copy.path(dedup_index.FOLDER, gone))
    cfg = config(runs["run2"], against=[str(tmp_path / "copy")])
    assert dedup_index.problems(cfg) == [
        f"config error: dedup.against[0] ({tmp_path / 'copy'}): "
        f"its index is incomplete: {dedup_index.FOLDER}/{gone} is "
        f"missing; copy the earlier run's {dedup_index.FOLDER}/ again, or rerun its dedup phase"
    ]
    parts = Storage(str(runs["run2"]))  # every finished part of its extracted phase
    with pytest.raises(ConfigError, match=f"{gone} is missing"):
        corpus_unit(cfg, parts)  # the dedup phase's plan


def test_index_files_are_the_ones_settings_json_lists(runs, tmp_path):
    """A stray part file is not read; a listed file holding other documents than listed is an error when read."""
    from pipeline.dedup.context import DedupContext
    from pipeline.dedup.earlier import _Earlier

    copy = _copy_index(runs["run1"], tmp_path / "copy")
    listed = sorted(f"part-{p}.parquet" for p in copy.read_json(dedup_index.FOLDER, dedup_index.SETTINGS)["parts"])
    first = copy.read_parquet(dedup_index.FOLDER, listed[0])
    copy.write_parquet(first, dedup_index.FOLDER, "part-stray.parquet")  # left by an earlier layout of the copy
    cfg = config(runs["run2"], against=[str(tmp_path / "copy")])
    ctx = DedupContext(cfg, Storage(str(runs["run2"])), ("0", "1"), 1, False, "extracted")
    earlier = _Earlier(ctx, 0, str(tmp_path / "copy"))
    assert earlier.files == listed and earlier.docs == 60
    copy.write_parquet(first.slice(0, 5), dedup_index.FOLDER, listed[0])  # a listed part with fewer documents
    assert dedup_index.problems(cfg) == []  # names only: the footers are read when the index is
    with pytest.raises(
        ConfigError,
        match=r"^config error: dedup.against\[0\] \(.*\): its part files hold 35 documents, "
        r"dedup_index/settings.json lists 60: the copy is incomplete or was changed",
    ):
        _Earlier(ctx, 0, str(tmp_path / "copy"))


@pytest.mark.parametrize(
    "content",
    [b'{"format": 1, "settings": {"num_perm": 12', b"\xff\xfe not json", b"[1, 2]", b'{"format": 1, "settings": {}}'],
)
def test_a_corrupt_settings_file_is_a_one_line_error_not_a_traceback(runs, tmp_path, content):
    import subprocess
    import sys

    import yaml

    from tests.conftest import REPO

    copy = _copy_index(runs["run1"], tmp_path / "copy")
    with open(copy.path(dedup_index.FOLDER, dedup_index.SETTINGS), "wb") as f:
        f.write(content)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "inputs": [str(REPO / "samples" / "*.warc.gz")],
                "output": str(tmp_path / "out"),
                "dedup": {"against": [str(tmp_path / "copy")]},
            }
        )
    )
    r = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "validate", str(cfg)], capture_output=True, text=True, cwd=REPO
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith(
        f"config error: dedup.against[0] ({tmp_path / 'copy'}): dedup_index/settings.json is not "
    )
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


@pytest.mark.parametrize("spelling", ["relative", "dot", "symlink", "trailing_slash"])
def test_the_own_root_by_another_spelling_is_a_config_error_before_anything_is_deleted(
    runs, tmp_path, monkeypatch, warc_factory, spelling
):
    """Issue 38.11: ``dedup.against`` naming the run's own root by another spelling passed ``validate``; the run then
    deleted the finished output (its dedup index included) before it said so.  Now: one line, at plan time and in
    ``curate validate``, and the output is untouched."""
    import shutil

    from pipeline.cli import main
    from pipeline.runner import run

    root = tmp_path / "out"
    shutil.copytree(runs["run2"], root)  # a finished output: parts, markers, its dedup index
    before = tree_bytes(root)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link").symlink_to(root)
    other = {"relative": "out", "dot": f"{root}/.", "symlink": str(tmp_path / "link"), "trailing_slash": f"{root}//"}
    warc = warc_factory("in.warc.gz", [Page("https://a.example/", html("A", "Some text here.").encode())])
    data = {
        "inputs": [str(warc)],
        "output": str(root),
        "dedup": {"against": [other[spelling]]},
        "shards": {"tokenize": {"tokenizer": str(SAMPLES / "tokenizer" / "tokenizer.json")}},
    }
    with pytest.raises(ConfigError) as err:
        run(parse_config(data), progress=False)
    assert "dedup.against[0]" in str(err.value) and "own output root" in str(err.value)
    (tmp_path / "run.yaml").write_text(json.dumps(data))
    assert main(["validate", str(tmp_path / "run.yaml")]) == 2
    assert tree_bytes(root) == before


@pytest.mark.parametrize("other", ["s3://bucket/runs/a/", "s3://bucket//runs/a", "s3://bucket/runs/./a"])
def test_the_own_s3_root_by_another_spelling_is_named(other):
    problems = dedup_index.problems(
        parse_config({"inputs": ["unused"], "output": "s3://bucket/runs/a", "dedup": {"against": [other]}})
    )
    assert problems and "own output root" in problems[0]
