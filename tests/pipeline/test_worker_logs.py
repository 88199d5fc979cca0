"""The workers' log lines on a local run's console, read from Ray's log folder by the driver."""

from __future__ import annotations

import io
import json
import logging

from pipeline.worker_logs import WorkerLogs, logging_as_the_driver


def test_lines_are_shown_once_each_whole_and_named_by_task_and_pid(tmp_path):
    out = io.StringIO()
    logs = WorkerLogs(str(tmp_path), out=out)
    worker = tmp_path / "worker-abc-01000000-4242.err"
    worker.write_bytes(b":job_id:01000000\n:task_name:_unit_task\nWARNING pii: a URL could not be split\nhalf a li")
    (tmp_path / "raylet.err").write_bytes(b"raylet: something failed\n")
    (tmp_path / "raylet.out").write_bytes(b"not an error file: not shown\n")
    logs.poll()
    assert out.getvalue().splitlines() == [
        "(_unit_task pid=4242) WARNING pii: a URL could not be split",
        "(raylet.err) raylet: something failed",
    ]
    with open(worker, "ab") as f:
        f.write(b"ne, ended\n:task_name:other\n\xff bad bytes\n")
    logs.poll()
    logs.poll()  # nothing new: nothing shown twice
    assert out.getvalue().splitlines()[2:] == [
        "(_unit_task pid=4242) half a line, ended",
        "(other pid=4242) \ufffd bad bytes",
    ]


def test_a_truncated_file_is_read_again_from_its_start(tmp_path):
    out = io.StringIO()
    logs = WorkerLogs(str(tmp_path), out=out)
    path = tmp_path / "worker-x-01000000-7.out"
    path.write_text("first line\nsecond line\n")
    logs.poll()
    path.write_text("new\n")
    logs.poll()
    assert out.getvalue().splitlines() == [
        "(worker pid=7) first line",
        "(worker pid=7) second line",
        "(worker pid=7) new",
    ]


def test_the_thread_shows_the_last_lines_when_stopped(tmp_path):
    out = io.StringIO()
    logs = WorkerLogs(str(tmp_path), out=out, interval_s=3600).start()
    (tmp_path / "worker-y-01000000-9.err").write_text("printed just before the end\n")
    logs.stop()
    assert out.getvalue() == "(worker pid=9) printed just before the end\n"


def test_the_driver_shows_what_was_written_now_while_the_thread_polls(tmp_path, monkeypatch):
    """A phase's task's last lines, shown before the driver's next ones (distribute.show_worker_lines), while the
    thread polls too: each line once."""
    from pipeline import distribute

    out = io.StringIO()
    logs = WorkerLogs(str(tmp_path), out=out, interval_s=0.001).start()
    monkeypatch.setattr(distribute, "_WORKER_LOGS", logs)
    path = tmp_path / "worker-z-01000000-5.err"
    try:
        for i in range(200):
            with open(path, "a") as f:
                f.write(f"line {i}\n")
            distribute.show_worker_lines()
            assert out.getvalue().splitlines()[-1] == f"(worker pid=5) line {i}"  # shown by the time it returns
    finally:
        logs.stop()
    assert out.getvalue().splitlines() == [f"(worker pid=5) line {i}" for i in range(200)]


def test_a_tasks_bars_are_drawn_and_its_lines_shown_above_them(tmp_path, monkeypatch):
    from ray.experimental import tqdm_ray

    manager, drawn = tqdm_ray.instance(), []
    monkeypatch.setattr(manager, "process_state_update", drawn.append)
    monkeypatch.setattr(manager, "hide_bars", lambda: drawn.append("hidden"))
    monkeypatch.setattr(manager, "unhide_bars", lambda: drawn.append("shown"))
    state = {"__magic_token__": tqdm_ray.RAY_TQDM_MAGIC, "x": 2, "total": 5, "desc": "deduped: content"}
    out = io.StringIO()
    (tmp_path / "worker-z-01000000-5.out").write_text(
        f"{json.dumps(state)}\na line\n{tqdm_ray.RAY_TQDM_MAGIC} cut sho\n"
    )
    WorkerLogs(str(tmp_path), out=out).poll()
    assert out.getvalue() == "(worker pid=5) a line\n"  # a bar's state is drawn, never printed
    assert drawn == [state, "hidden", "shown"]


def test_a_task_logs_its_lines_as_the_driver_would_while_it_runs(capsys):
    """The card runs in a Ray task, whose process logs warnings only: its progress lines at the driver's level,
    in the driver's format, once each, and the process's logging as it was after."""
    own = logging.getLogger("pipeline.card.collect")
    before = logging.getLogger("pipeline").level, logging.getLogger("pipeline").propagate
    with logging_as_the_driver(logging.INFO):
        own.info("card: aggregating %d parts", 6)
        own.debug("not at the driver's level")
    own.info("after the task")
    err = capsys.readouterr().err.splitlines()
    assert [line.split(" ", 1)[1] for line in err] == ["INFO pipeline.card.collect: card: aggregating 6 parts"]
    assert (logging.getLogger("pipeline").level, logging.getLogger("pipeline").propagate) == before
