"""The README and docs/card.md stay true to a run of the README's own command (issue 42.12).

One run of ``curate run jobs/sample.yaml`` from the repository's root, as the Quick start says (its output
elsewhere): the card excerpt the README quotes is that card's (pipeline/card/excerpt.py), and docs/card.md's
upload command, run through the Hub CLI's own upload code (its arguments and file filter; the Hub replaced by a
folder), gives a repository whose README.md is the card, whose every config names files it holds, and that
``datasets.load_dataset`` reads.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import yaml
from huggingface_hub import HfApi
from huggingface_hub.cli.upload import UploadCommand
from huggingface_hub.utils import filter_repo_objects

from pipeline.card.excerpt import readme_with_excerpt
from pipeline.cli import main as curate
from tests.conftest import REPO

pytestmark = pytest.mark.ray

#: Where docs/card.md's commands read the output (the README's command writes out/sample).
OUTPUT_ROOTS = ("out/sample", "out")


@pytest.fixture(scope="module")
def sample_out(ray_local, tmp_path_factory, monkeypatch_module) -> Path:
    out = tmp_path_factory.mktemp("sample")
    monkeypatch_module.chdir(REPO)  # the command as the README gives it: from the repository's root
    monkeypatch_module.setenv("HF_HUB_OFFLINE", "1")  # datasets reads the local folder: never the network
    monkeypatch_module.setenv("HF_DATASETS_OFFLINE", "1")
    assert curate(["run", "jobs/sample.yaml", "--output", str(out), "--no-progress"]) == 0
    return out


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_the_readme_quotes_the_card_its_own_command_gives(sample_out):
    readme = (REPO / "README.md").read_text()
    card = (sample_out / "README.md").read_text()
    assert readme_with_excerpt(readme, card) == readme, (
        "the README's card excerpt is not what `curate run jobs/sample.yaml` gives: run it, then "
        "`python -m pipeline.card.excerpt out/sample/README.md`"
    )


class FolderHub(HfApi):
    """HfApi whose repository is a local folder: the CLI's upload logic (what to upload, where) runs as it is."""

    def __init__(self, folder: Path):
        super().__init__(token=False)
        self.folder = folder

    def create_repo(self, repo_id: str, **kwargs):
        return argparse.Namespace(repo_id=repo_id)

    def _validate_yaml(self, content: str, *args, **kwargs) -> None:  # the Hub checks the card's metadata: parse it
        yaml.safe_load(content.split("---\n")[1])

    def upload_file(self, *, path_or_fileobj, path_in_repo: str, **kwargs):
        self._put(Path(path_or_fileobj), path_in_repo)

    def upload_folder(
        self,
        *,
        folder_path,
        path_in_repo: str | None = None,
        allow_patterns=None,
        ignore_patterns=None,
        repo_type=None,
        **kwargs,
    ):
        for op in self._prepare_upload_folder_additions(
            folder_path,
            path_in_repo or "",
            allow_patterns=allow_patterns,
            ignore_patterns=ignore_patterns,
            repo_type=repo_type,
        ):
            self._put(Path(op.path_or_fileobj), op.path_in_repo)

    def _put(self, source: Path, path_in_repo: str) -> None:
        target = self.folder / path_in_repo.lstrip("./")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def upload_commands(doc: str) -> list[list[str]]:
    """The ``hf upload`` (or ``huggingface-cli upload``) commands of the doc's bash blocks, as argument lists
    (continuation lines joined)."""
    blocks = re.findall(r"```bash\n(.*?)```", doc, re.S)
    lines = [line for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    return [shlex.split(line) for line in lines if line.startswith(("hf upload ", "huggingface-cli upload "))]


def _local(arg: str, root: Path) -> str:
    """A path of the doc's output root in this run's output."""
    return next((str(root) + arg[len(r) :] for r in OUTPUT_ROOTS if arg == r or arg.startswith(r + "/")), arg)


def test_the_documented_upload_gives_a_repo_with_its_card_and_only_configs_that_exist(sample_out, tmp_path):
    repo = tmp_path / "repo"
    commands = upload_commands((REPO / "docs" / "card.md").read_text())
    assert commands
    for argv in commands:
        parser = argparse.ArgumentParser()
        UploadCommand.register_subcommand(parser.add_subparsers())
        args = parser.parse_args([_local(a, sample_out) for a in argv[1:]])
        command = UploadCommand(args)
        command.api = FolderHub(repo)
        command._upload()
    card = (sample_out / "README.md").read_text()
    assert (repo / "README.md").read_text() == card
    configs = yaml.safe_load(card.split("---\n")[1])["configs"]
    for config in configs:
        for files in config["data_files"]:
            assert list(repo.glob(files["path"])), f"config {config['config_name']}: no files at {files['path']}"
    rows = pq.read_table(sample_out / "documents" / "final").num_rows
    assert len(datasets.load_dataset(str(repo), split="train", cache_dir=str(tmp_path / "cache"))) == rows
    # exactly what the card's own Publishing section selects
    uploaded = sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file())
    publish = yaml.safe_load((sample_out / "card" / "stats.json").read_text())["publish"]
    every = sorted(str(p.relative_to(sample_out)) for p in sample_out.rglob("*") if p.is_file())
    assert uploaded == sorted(
        filter_repo_objects(
            every, allow_patterns=publish["allow_patterns"], ignore_patterns=publish["ignore_patterns"]
        )
    )
    private = ("rejected/", "documents/extracted", "documents/deduped", "dedup", "_done", "run.json")
    assert not any(f.startswith(private) for f in uploaded)
