"""The README stays true: its two commands, .ci/run, and the config reference."""

from __future__ import annotations

import re

from pipeline.reference import dedup_doc_with_reference, readme_with_reference
from tests.conftest import REPO

README = (REPO / "README.md").read_text()


def test_config_reference_is_current():
    assert readme_with_reference(README) == README, "run `python -m pipeline.reference` to refresh README.md"


def test_dedup_settings_table_is_current():
    doc = (REPO / "docs" / "dedup.md").read_text()
    assert dedup_doc_with_reference(doc) == doc, "run `python -m pipeline.reference` to refresh docs/dedup.md"


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```bash\n(python3\.11 -m venv .+?)\n```", README)
    assert len(commands) >= 2
    run_cmd, test_cmd = commands[0], commands[1]
    assert "curate run jobs/sample.yaml" in run_cmd
    assert test_cmd in (REPO / ".ci" / "run").read_text()
