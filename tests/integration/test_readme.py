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


def test_the_test_command_lints_before_the_tests():
    """CI runs the linter and the formatter check with pyproject.toml's settings before pytest (issue 40)."""
    test_cmd = re.findall(r"```bash\n(python3\.11 -m venv .+?)\n```", README)[1]
    steps = [step.strip() for step in test_cmd.split("&&")]
    assert steps[-3:] == [".venv/bin/ruff check", ".venv/bin/ruff format --check", ".venv/bin/pytest"], steps
    pyproject = (REPO / "pyproject.toml").read_text()
    assert "[tool.ruff]" in pyproject and re.search(r'"ruff>=[^"]+",', pyproject), (
        "ruff: configured, in the test extra"
    )


def test_the_test_command_says_what_it_costs():
    """The README says how large the test environment is and how long it takes, as measured (issue 42: it said
    neither, and a new user met a 7.6 GB venv and a 32-minute install)."""
    after = README.split(re.findall(r"```bash\n(python3\.11 -m venv .+?)\n```", README)[1], 1)[1].split("\n## ", 1)[0]
    measured = (REPO / "benchmarks" / "results" / "install.md").read_text()
    values = re.findall(r"^\| [^|]+ \| ([^|]+) \|$", measured.split("\n\n| site-packages")[0], re.M)
    assert values[:2] == ["value", "---:"] and len(values) == 7
    for value in values[2:]:  # 3 minutes, 32 minutes, 7.6 GB, 12–14 minutes, 859 s
        number = value.strip().split()[0]
        assert number in after, (number, after[:600])
    assert "benchmarks/results/install.md" in after and "torch" in after


def test_performance_is_one_table_of_current_results():
    """One table, each row with the command that reproduces it; the round-by-round account lives in
    benchmarks/HISTORY.md (issue 40: the section narrated each round)."""
    section = README.split("\n## Performance\n", 1)[1].split("\n## ", 1)[0]
    tables = re.findall(r"(?:^\|.*\|\n)+", section + "\n", re.M)
    assert len(tables) == 1, "one table"
    rows = tables[0].splitlines()
    assert rows[0] == "| what | ours | baseline | ratio | command |"
    for row in rows[2:]:
        script = re.search(r"`(benchmarks/\w+\.py)[^`]*` \|$", row)
        assert script and (REPO / script[1]).is_file(), row[:80]
    assert not re.search(r"\bround\b", section), "the per-round narrative goes to benchmarks/HISTORY.md"
    assert (REPO / "benchmarks" / "HISTORY.md").is_file() and "benchmarks/HISTORY.md" in section
