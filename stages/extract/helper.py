"""Extraction in a helper process that can be killed: the time limit for the parse too.

The stage's watchdog (:mod:`stages.extract.timelimit`) interrupts Python code,
but a parse runs inside lexbor or libxml2, where nothing can interrupt it: a
hostile page of ``<div></b>`` repeated keeps lexbor busy for minutes.  Pages
large enough to be that slow (more tags than ``extract.isolate_tags``; below
it the worst parse measured is ~0.3 s) are extracted by a helper process
instead, which is killed when the page overruns its limit.  One helper per
worker (~25 MB: it imports the extractor, not Arrow), started on the first
page that needs it (~0.3-0.5 s, not counted in that page's limit) and again,
in the background, right after a kill; requests go over a pair of pipes (the
helper's stdout stays free for whatever a library prints).

    python -m stages.extract.helper READ_FD WRITE_FD    # the helper side
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import select
import struct
import subprocess
import sys
import time
from collections import Counter

log = logging.getLogger(__name__)

_LEN = struct.Struct("<Q")


def _write_msg(fd: int, data: bytes) -> None:
    view = memoryview(_LEN.pack(len(data)) + data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: float | None = None) -> bytes:
    parts, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the pipe")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _read_msg(fd: int, deadline: float | None = None) -> bytes:
    (n,) = _LEN.unpack(_read_exact(fd, _LEN.size, deadline))
    return _read_exact(fd, n, deadline)


class KillableExtractor:
    """``extract(html) -> (text, reason, details)`` in a helper process, killed past ``hard_limit_s``."""

    def __init__(self, config_json: str, hard_limit_s: float, start_limit_s: float = 60.0):
        self.config_json = config_json  # the ExtractConfig, as the helper builds its own stage from it
        self.hard_limit_s = hard_limit_s
        self.start_limit_s = start_limit_s
        self.counters: Counter = Counter()  # the helper's extractor counters, and kills/starts
        self._proc: subprocess.Popen | None = None
        self._r = self._w = -1
        self._ready = False
        atexit.register(self.close)

    def start(self) -> None:
        """Start the helper if it is not running; returns at once (it says ready on first use)."""
        if self._proc is not None and self._proc.poll() is None:
            return
        self.close()
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "stages.extract.helper", str(to_child_r), str(from_child_w)],
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL,
            stdout=sys.stderr.fileno() if _has_fileno(sys.stderr) else subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._r, self._w = from_child_r, to_child_w
        self.counters["helper_starts"] += 1
        self._ready = False
        _write_msg(self._w, self.config_json.encode())

    def _wait_ready(self) -> None:
        try:
            if _read_msg(self._r, time.monotonic() + self.start_limit_s) != b"ready":
                raise RuntimeError("the extraction helper did not start")
        except BaseException:
            self.close()
            raise
        self._ready = True

    def ready(self) -> None:
        """Start the helper if needed and wait until it can take a page."""
        if self._proc is None or self._proc.poll() is not None:
            self.start()
        if not self._ready:
            self._wait_ready()

    def extract(self, html: str | bytes, url: str | None = None) -> tuple[str | None, str | None, str | None]:
        self.ready()
        try:
            _write_msg(self._w, html if isinstance(html, bytes) else html.encode("utf-8", "surrogatepass"))
            _write_msg(self._w, (url or "").encode("utf-8", "surrogatepass"))
            reply = _read_msg(self._r, time.monotonic() + self.hard_limit_s)
        except TimeoutError:
            self.close()  # the only way to stop a parse inside C code
            self.counters["helper_kills"] += 1
            self.start()  # warm for the next page
            return None, "extract_timeout", f"> {self.hard_limit_s:g}s (helper process killed)"
        except (EOFError, OSError) as e:  # the helper died on this page (a crash in C code)
            code = self._proc.poll() if self._proc is not None else None
            self.close()
            self.counters["helper_crashes"] += 1
            self.start()
            return None, "extract_error", f"extraction helper died ({type(e).__name__}, exit {code})"
        text, reason, details, counters = pickle.loads(reply)
        self.counters.update(counters)
        return text, reason, details

    def close(self) -> None:
        proc, self._proc = self._proc, None
        self._ready = False
        for fd in (self._r, self._w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._r = self._w = -1
        if proc is not None and proc.poll() is None:
            proc.kill()
        if proc is not None:
            proc.wait()


def _has_fileno(stream) -> bool:
    try:
        stream.fileno()
        return True
    except (AttributeError, OSError, ValueError):
        return False


def serve(read_fd: int, write_fd: int) -> None:
    """The helper's loop: build the stage once, then answer one page per request."""
    from stages.extract import ExtractConfig, ExtractStage

    config = ExtractConfig.model_validate_json(_read_msg(read_fd)).model_copy(update={"isolate_tags": None})
    stage = ExtractStage(config)
    _write_msg(write_fd, b"ready")
    while True:
        try:
            html = _read_msg(read_fd)
            if not stage.takes_bytes:
                html = html.decode("utf-8", "surrogatepass")
            url = _read_msg(read_fd).decode("utf-8", "surrogatepass") or None
        except EOFError:  # the worker is gone
            return
        text, reason, details = stage.one(html, url)
        _write_msg(
            write_fd, pickle.dumps((text, reason, details, stage.drain_counters()), protocol=pickle.HIGHEST_PROTOCOL)
        )


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s (extraction helper): %(message)s")
    serve(int(sys.argv[1]), int(sys.argv[2]))
