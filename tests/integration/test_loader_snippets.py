"""docs/shards.md's loader snippets, run as written on a fresh run's shards (MDS, WebDataset and
Megatron pairs): only the settings on a snippet's first lines (above its imports) are replaced.

Each snippet runs in a process of its own, as a trainer would; the harness only wraps the loader's
``__iter__`` (or ``IndexedDataset.__getitem__``) to record what the snippet's loop receives.
streaming runs on two ranks (the environment torchrun gives), stopped after ``STEPS`` steps and
resumed from the checkpoint the snippet saves: every sample exactly once in the epoch, none read
again after the resume; WebDataset over two loader workers; megatron-core's ``IndexedDataset`` gives
every document's tokens as the MDS shards hold them. Counts are checked against the manifest."""

from __future__ import annotations

import json
import os
import random
import re
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO, Page, html, write_warc

pytestmark = pytest.mark.ray

DOCS = REPO / "docs" / "shards.md"
README = REPO / "README.md"
WORDS = "harbor castle meadow violin rocket winter forest candle island bridge garden planet silver orange".split()
BATCH, STEPS, RANKS = 8, 2, 2  # the snippet's batch size; steps before the stop; ranks

# What runs in each snippet's process: record what the loop gets, then exec the snippet as written.
HARNESS = r"""
import json, sys
kind, path, out = sys.argv[1:4]
seen = []
if kind in ("streaming", "webdataset"):
    if kind == "streaming":
        from streaming import StreamingDataLoader as Loader
    else:
        from webdataset import WebLoader as Loader
    iterate = Loader.__iter__

    def recording(self):
        for batch in iterate(self):
            t = batch["tokens"]
            seen.append({"ids": list(batch["id"]),
                          "type": type(t).__module__ + "." + type(t).__name__, "dtype": str(t.dtype),
                         "tokens": [row[:int(n)].tolist() for row, n in zip(t, batch["num_tokens"])],
                         "padding": [row[int(n):].tolist() for row, n in zip(t, batch["num_tokens"])]})
            yield batch

    Loader.__iter__ = recording
else:
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    get = IndexedDataset.__getitem__

    def getitem(self, i):
        doc = get(self, i)
        seen.append({"prefix": self.path_prefix, "i": int(i), "dtype": str(doc.dtype), "tokens": doc.tolist()})
        return doc

    IndexedDataset.__getitem__ = getitem
ns = {"__name__": "__main__"}
exec(compile(open(path).read(), "docs/shards.md: " + kind, "exec"), ns)
loader = ns.get("loader")
workers = (getattr(loader, "num_workers", None) if kind == "streaming"
           else getattr(getattr(loader, "pipeline", [None])[0], "num_workers", None))
last = {"type": type(ns["tokens"]).__module__ + "." + type(ns["tokens"]).__name__, "dtype": str(ns["tokens"].dtype)}
json.dump({"seen": seen, "workers": workers, "last": last}, open(out, "w"))
"""


def snippets(text: str) -> dict[str, str]:
    """The python blocks whose first line is ``# snippet: <name>``."""
    return {
        m.group(1): m.group(0)[len("```python\n") :]
        for m in re.finditer(r"```python\n# snippet: (\w+)[^\n]*\n.*?(?=```)", text, re.S)
    }


def with_settings(code: str, **settings) -> str:
    """``code`` with the values of some of its settings (``name = value`` lines above the first import) replaced."""
    head, sep, body = code.partition("\nimport ")
    assert sep, "a snippet starts with its settings, then its imports"
    for name, value in settings.items():
        head, n = re.subn(
            rf"^{name} = .*?(  #.*)?$",
            lambda m, name=name, value=value: f"{name} = {value!r}{m.group(1) or ''}",
            head,
            count=1,
            flags=re.M,
        )
        assert n == 1, f"the snippet has no setting {name} above its imports"
    return head + sep + body


def run_snippet(kind: str, code: str, tmp: Path, tag: str, env: dict | None = None) -> subprocess.Popen:
    path = tmp / f"snippet-{tag}.py"  # not importable: a megatron.py in the cwd would shadow megatron
    path.write_text(code)
    full = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    full.update(env or {})
    return subprocess.Popen(
        [sys.executable, "-c", HARNESS, kind, str(path), str(tmp / f"{tag}.json")],
        cwd=tmp,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(procs: dict[str, subprocess.Popen], tmp: Path) -> dict[str, dict]:
    out = {}
    for tag, p in procs.items():
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, f"{tag} exited {p.returncode}:\n{err[-3000:]}"
        out[tag] = json.loads((tmp / f"{tag}.json").read_text())
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def blocks():
    found = snippets(DOCS.read_text())
    assert set(found) == {"streaming", "webdataset", "megatron"}, sorted(found)
    return found


@pytest.fixture(scope="module")
def shards(tmp_path_factory, ray_local):
    """A small run (80 documents, 4 groups: several MDS shards and 8 tars, Megatron pairs); its shards
    folder, manifest and the ids of documents/final."""
    from pipeline.config import parse_config
    from pipeline.runner import run

    root = tmp_path_factory.mktemp("loader-snippets")
    (root / "warcs").mkdir()
    rng = random.Random(5)
    for f in range(4):
        pages = [
            Page(
                f"https://s{f}.example/{i}",
                html(
                    f"Page {f} {i}",
                    *(
                        " ".join(
                            " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 12))).capitalize() + "."
                            for _ in range(rng.randint(2, 9))
                        )
                        for _ in range(3)
                    ),
                ).encode(),
            )
            for i in range(20)
        ]
        write_warc(root / "warcs" / f"f{f}.warc.gz", pages)
    config = parse_config(
        {
            "inputs": [str(root / "warcs" / "*.warc.gz")],
            "output": str(root / "out"),
            "langid": {"min_score": 0.0},
            "filters": {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")},
            "shards": {
                "shuffle": {"groups": 4},
                "mds": {"size_limit": 4096},
                "webdataset": {"min_tars": 8},
                "megatron": {"enabled": True},
            },
            "card": {"enabled": False},
        }
    )
    assert run(config, progress=False)["status"] == "ok"
    manifest = json.loads((root / "out" / "shards" / "manifest.json").read_text())
    ids = pq.read_table(root / "out" / "documents" / "final", columns=["id"]).column("id").to_pylist()
    assert len(ids) == manifest["documents"] > 4 * BATCH * RANKS  # enough for a stop well inside the epoch
    return {"path": root / "out" / "shards", "manifest": manifest, "ids": ids}


@pytest.fixture(scope="module")
def streaming_epoch(blocks, shards, tmp_path_factory):
    """The streaming snippet on two ranks: a job stopped after STEPS steps, then one resumed from its checkpoint."""
    tmp = tmp_path_factory.mktemp("streaming")
    state = tmp / "loader-state.json"
    jobs = {}
    for job, max_steps in (("stopped", STEPS), ("resumed", None)):
        code = with_settings(
            blocks["streaming"],
            shards=str(shards["path"]),
            local=str(tmp / f"cache-{job}"),
            checkpoint=str(state),
            max_steps=max_steps,
            pad_id=shards["manifest"]["tokenizer"]["pad"]["id"],
        )
        port = str(free_port())
        procs = {
            f"{job}-{r}": run_snippet(
                "streaming",
                code,
                tmp,
                f"{job}-{r}",
                {
                    "RANK": str(r),
                    "LOCAL_RANK": str(r),
                    "WORLD_SIZE": str(RANKS),
                    "LOCAL_WORLD_SIZE": str(RANKS),
                    "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": port,
                },
            )
            for r in range(RANKS)
        }
        jobs.update(finish(procs, tmp))
        if job == "stopped":
            checkpoint = json.loads(state.read_text())
    return {"jobs": jobs, "checkpoint": checkpoint}


def _samples(records: list[dict]) -> list[tuple[str, list[int]]]:
    return [(i, t) for b in records for i, t in zip(b["ids"], b["tokens"], strict=False)]


def test_streaming_two_ranks_resume_mid_epoch_reads_every_sample_once(streaming_epoch, shards):
    jobs, checkpoint = streaming_epoch["jobs"], streaming_epoch["checkpoint"]
    mds = shards["manifest"]["formats"]["mds"]
    stopped = [s for r in range(RANKS) for s in _samples(jobs[f"stopped-{r}"]["seen"])]
    resumed = [s for r in range(RANKS) for s in _samples(jobs[f"resumed-{r}"]["seen"])]
    for r in range(RANKS):
        assert len(jobs[f"stopped-{r}"]["seen"]) == STEPS and jobs[f"stopped-{r}"]["workers"] == 2
    # the checkpoint is where the stopped job was: what its ranks read
    assert checkpoint["epoch"] == 0 and checkpoint["sample_in_epoch"] == len(stopped) == STEPS * BATCH * RANKS
    assert 0 < checkpoint["sample_in_epoch"] < mds["samples"] // 2
    ids = [i for i, _ in stopped + resumed]
    again = set(i for i, _ in stopped) & set(i for i, _ in resumed)
    assert not again, f"{len(again)} samples read again after the resume at {checkpoint['sample_in_epoch']}"
    assert len(ids) == len(set(ids)) == mds["samples"]
    assert sorted(ids) == sorted(shards["ids"])
    assert sum(len(t) for _, t in stopped + resumed) == mds["tokens"]
    for job in jobs.values():
        for b in job["seen"]:
            assert b["type"] == "torch.Tensor" and b["dtype"] == "torch.int64" and len(b["ids"]) <= BATCH
            assert all(set(p) <= {shards["manifest"]["tokenizer"]["pad"]["id"]} for p in b["padding"])
        assert job["last"] == {"type": "torch.Tensor", "dtype": "torch.int64"}


def test_webdataset_two_workers_read_every_sample_once(blocks, shards, streaming_epoch, tmp_path):
    code = with_settings(
        blocks["webdataset"], shards=str(shards["path"]), pad_id=shards["manifest"]["tokenizer"]["pad"]["id"]
    )
    got = finish({"wds": run_snippet("webdataset", code, tmp_path, "wds")}, tmp_path)["wds"]
    wds = shards["manifest"]["formats"]["webdataset"]
    assert got["workers"] == 2 and len(wds["shards"]) == 8
    samples = _samples(got["seen"])
    assert len(samples) == len({i for i, _ in samples}) == wds["samples"]
    mds = dict(s for job in streaming_epoch["jobs"].values() for s in _samples(job["seen"]))
    assert dict(samples) == mds  # the same tokens under the same ids as the MDS shards
    assert all(b["type"] == "torch.Tensor" and b["dtype"] == "torch.int64" for b in got["seen"])


def test_megatron_indexed_dataset_reads_every_document(blocks, shards, streaming_epoch, tmp_path):
    import importlib.util

    if importlib.util.find_spec("megatron") is None or importlib.util.find_spec("megatron.core") is None:
        pytest.skip("megatron-core is not installed (it is in the test extra: pip install -e '.[test]')")
    code = with_settings(blocks["megatron"], shards=str(shards["path"]))
    got = finish({"megatron": run_snippet("megatron", code, tmp_path, "megatron")}, tmp_path)["megatron"]
    meg = shards["manifest"]["formats"]["megatron"]
    assert len(got["seen"]) == meg["documents"] == shards["manifest"]["documents"]
    assert {r["dtype"] for r in got["seen"]} == {meg["dtype"]} and got["last"] == {
        "type": "torch.Tensor",
        "dtype": "torch.int64",
    }
    assert sum(len(r["tokens"]) for r in got["seen"]) == meg["tokens"]
    mds = [t for job in streaming_epoch["jobs"].values() for _, t in _samples(job["seen"])]
    assert Counter(map(tuple, (r["tokens"] for r in got["seen"]))) == Counter(map(tuple, mds))


def test_readme_shows_the_docs_snippets():
    """The README's excerpts are lines of the docs' snippets (which the tests above run)."""
    docs = snippets(DOCS.read_text())
    readme = re.findall(r"```python\n# snippet: (\w+) \(excerpt[^\n]*\n(.*?)```", README.read_text(), re.S)
    assert {name for name, _ in readme} == set(docs)
    for name, excerpt in readme:
        lines = {line.strip() for line in docs[name].splitlines()}
        for line in excerpt.splitlines():
            if line.strip() and not line.strip().startswith("#"):
                assert line.strip() in lines, f"README's {name} excerpt: {line.strip()!r} is not in docs/shards.md"
