"""Progress lines: logged at INFO (not WARNING), visible by default for this project's loggers only,
and without empty fields when a phase counts no documents (dedup's steps)."""

from __future__ import annotations

import logging
import subprocess
import sys

from pipeline.distribute import Progress


def test_a_step_without_document_counts_has_no_empty_field():
    p = Progress("deduped: signatures", 3, "part", enabled=False, counts=())
    p.update({})
    line = p.line()
    assert line.startswith("deduped: signatures: 1/3 parts, ") and ", ," not in line and "ETA" in line
    p.update({})
    p.update({})
    assert p.line().startswith("deduped: signatures: 3/3 parts, ") and "ETA" not in p.line()


def test_counts_are_shown_when_the_phase_has_them():
    p = Progress("extracted", 2, "file", enabled=False, counts=("responses", "kept"))
    p.update({"responses": 5, "kept": 3})
    assert p.line().startswith("extracted: 1/2 files, responses=5 kept=3, ")


def test_progress_is_logged_at_info(caplog, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)  # a log line, not a bar
    with caplog.at_level(logging.INFO, logger="pipeline.distribute"):
        p = Progress("extracted", 1, "file", enabled=True, counts=("kept",))
        p.update({"kept": 4})
    lines = [r for r in caplog.records if r.name == "pipeline.distribute"]
    assert [r.levelname for r in lines] == ["INFO"] and "extracted: 1/1 files, kept=4" in lines[0].getMessage()


def test_own_info_lines_show_by_default_and_other_libraries_info_does_not():
    code = (
        "import logging\n"
        "from pipeline.cli import setup_logging\n"
        "setup_logging(False)\n"
        "logging.getLogger('pipeline.distribute').info('OWN-PROGRESS')\n"
        "logging.getLogger('stages.dedup.components').info('OWN-STAGE')\n"
        "logging.getLogger('ray.data').info('RAY-NOISE')\n"
        "logging.getLogger('urllib3').info('LIB-NOISE')\n"
        "logging.getLogger('ray').warning('RAY-WARNING')\n"
    )
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    assert "INFO pipeline.distribute: OWN-PROGRESS" in err and "INFO stages.dedup.components: OWN-STAGE" in err
    assert "RAY-NOISE" not in err and "LIB-NOISE" not in err and "RAY-WARNING" in err
    verbose = subprocess.run(
        [sys.executable, "-c", code.replace("setup_logging(False)", "setup_logging(True)")],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    assert "LIB-NOISE" in verbose
