"""One run at a time per output root.

Two runs writing one output would interleave its parts, markers and run.json.  ``curate run`` takes the
output's lock before any work and gives it back at the end; a second run refuses, naming who holds it
(run, host, pid, start, last heartbeat) and how to break a lock left by a dead run (``curate unlock ROOT``).

- local: ``_lock/holder.json``, created with O_EXCL (atomic), its mtime refreshed every ``HEARTBEAT_S``;
- S3, where pyarrow.fs has no conditional put: every run writes its own lease ``_lock/<key>.lease``
  (written once: its server time orders the leases), waits ``SETTLE_S``, lists the leases, and the
  earliest live one wins; the others delete theirs and refuse.  The winner rewrites
  ``_lock/<key>.alive`` every ``HEARTBEAT_S``.  A lease written after the winner listed has a later
  server time than the winner's (the wait is longer than S3's one-second timestamps), so every run
  agrees on the winner; only the server's clock is used.

A lock is stale, ignored and removed by the next run, when its heartbeat is older than ``STALE_S``, or
its holder is a process of this host that has ended (a killed driver), or an earlier run of this very
process that could not remove it (the output's storage failed).

``curate unlock`` (:func:`unlock`) removes only the locks of holders it can tell are dead: on this host, a
process that no longer runs; on another host (whose processes it cannot see), a heartbeat older than
``STALE_S`` by the storage's own clock.  A live holder's lock is refused (:class:`LockInUse`) unless
``force`` is given: two live runs on one output mix their outputs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import asdict, dataclass

import pyarrow.fs as pafs

from core.storage import OutputError, Storage

log = logging.getLogger(__name__)

LOCK_DIR = "_lock"
HOLDER = "holder.json"
HEARTBEAT_S = 30.0
STALE_S = 300.0
SETTLE_S = 1.5
#: Ids of the locks this process holds now (a lock of this pid not in it was left by an earlier run).
_HELD: set[str] = set()


@dataclass(frozen=True)
class Holder:
    """Who holds (or asks for) an output's lock."""

    id: str
    run: str
    host: str
    pid: int
    started: str
    command: list[str] | None = None

    @classmethod
    def me(cls, run: str, command: list[str] | None = None) -> Holder:
        return cls(
            uuid.uuid4().hex,
            run,
            socket.gethostname(),
            os.getpid(),
            dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            command,
        )

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Holder | None:
        try:
            return cls(**json.loads(data))
        except (ValueError, TypeError):  # being written, or not ours
            return None

    def ended_here(self) -> bool:
        """A process of this host that no longer runs, or an earlier run of this process."""
        if self.host != socket.gethostname():
            return False
        return not _alive(self.pid) or (self.pid == os.getpid() and self.id not in _HELD)

    def describe(self, age_s: float | None = None) -> str:
        seen = f", last heartbeat {age_s:.0f} s ago" if age_s is not None else ""
        return f"run {self.run!r} on host {self.host} (pid {self.pid}, started {self.started}{seen})"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class OutputLocked(OutputError):
    """Another live run holds the output's lock."""

    def __init__(self, root: str, holder: Holder | None, age_s: float | None):
        who = holder.describe(age_s) if holder is not None else "a run that is starting"
        super().__init__(
            f"output error: {root} is in use by {who}: wait for it to end; if that run is dead, "
            f"break its lock with: curate unlock {root}"
        )


class LockInUse(OutputError):
    """``curate unlock`` found a holder that may still run: nothing was removed."""

    def __init__(self, root: str, who: str, why: str):
        super().__init__(
            f"output error: {root} is locked by {who}, which may still be running ({why}): "
            f"nothing was removed; if that run is dead, remove its lock anyway with: curate unlock --force {root}"
        )


def live_because(holder: Holder, age_s: float | None, stale_s: float = STALE_S) -> str | None:
    """Why ``holder`` may still be running (None: it is dead): on this host, its process runs; on another, its
    heartbeat (``age_s`` seconds old by the storage's clock) is younger than ``stale_s``."""
    if holder.host == socket.gethostname():
        if holder.ended_here():
            return None
        return f"its process {holder.pid} is alive on this host"
    if age_s is None or age_s > stale_s:
        return None
    return f"its last heartbeat is {age_s:.0f} s old, and a lock is stale only after {stale_s:.0f} s"


class OutputLock:
    """The lock of ``storage``'s output root, held by ``holder`` between ``acquire`` and ``release``."""

    def __init__(
        self,
        storage: Storage,
        holder: Holder,
        heartbeat_s: float = HEARTBEAT_S,
        stale_s: float = STALE_S,
        settle_s: float = SETTLE_S,
    ):
        self.storage, self.holder = storage, holder
        self.heartbeat_s, self.stale_s, self.settle_s = heartbeat_s, stale_s, settle_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._key = f"{time.time_ns():020d}-{holder.id}"

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        (self._acquire_local if self.storage.local else self._acquire_s3)()
        _HELD.add(self.holder.id)
        self._thread = threading.Thread(target=self._heartbeats, name="output-lock-heartbeat", daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Give the lock back; a storage that fails now is logged (the next run finds the lock stale)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            if self.storage.local:
                path = self.storage.path(LOCK_DIR, HOLDER)
                held = _read_local(path)[0]
                if held is not None and held.id == self.holder.id:  # never another run's lock
                    os.remove(path)
                    with contextlib.suppress(OSError):  # leave no empty folder behind
                        os.rmdir(os.path.dirname(path))
            else:
                for name in (f"{self._key}.lease", f"{self._key}.alive"):
                    _delete(self.storage, name)
        except OSError as e:
            log.warning("could not release the output lock of %s: %s", self.storage.root_uri, e)
        finally:
            _HELD.discard(self.holder.id)

    # -- local ---------------------------------------------------------------------------------

    def _acquire_local(self) -> None:
        path = self.storage.path(LOCK_DIR, HOLDER)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        for _ in range(3):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                other, age = _read_local(path)
                if not self._stale(other, age):
                    raise OutputLocked(self.storage.root_uri, other, age) from None
                _break_local(path, other)
                continue
            with os.fdopen(fd, "wb") as f:
                f.write(self.holder.to_json())
            return
        other, age = _read_local(path)
        raise OutputLocked(self.storage.root_uri, other, age)

    def _stale(self, other: Holder | None, age_s: float | None) -> bool:
        if age_s is None:  # gone meanwhile: try again
            return True
        if other is None:  # being written now, or garbage: stale only once old
            return age_s > max(self.settle_s * 4, 10.0)
        if other.ended_here():
            log.warning("breaking the output lock of %s left by %s", self.storage.root_uri, other.describe(age_s))
            return True
        if age_s > self.stale_s:
            log.warning("breaking the stale output lock of %s: %s", self.storage.root_uri, other.describe(age_s))
            return True
        return False

    # -- S3 ------------------------------------------------------------------------------------

    def _acquire_s3(self) -> None:
        mine = f"{self._key}.lease"
        _write(self.storage, mine, self.holder.to_json())
        time.sleep(self.settle_s)
        infos = _listing(self.storage)
        leases = {n.removesuffix(".lease"): t for n, t in infos.items() if n.endswith(".lease")}
        beats = {n.removesuffix(".alive"): t for n, t in infos.items() if n.endswith(".alive")}
        if self._key not in leases:
            raise OutputError(
                f"output error: the output lock of {self.storage.root_uri} could not be written (check the bucket)"
            )
        now = max(infos.values())  # the server's clock: no client clock is compared
        live = []
        for key, created in leases.items():
            if key == self._key:
                continue
            other = _read(self.storage, f"{key}.lease")
            age = now - max(created, beats.get(key, created))
            if self._stale(other, age):
                for name in (f"{key}.lease", f"{key}.alive"):
                    _delete(self.storage, name)
                continue
            live.append((created, key, other, age))
        earlier = sorted(entry for entry in live if (entry[0], entry[1]) < (leases[self._key], self._key))
        if earlier:
            _delete(self.storage, mine)
            raise OutputLocked(self.storage.root_uri, earlier[0][2], earlier[0][3])
        _write(self.storage, f"{self._key}.alive", b"")

    def _heartbeats(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                if self.storage.local:
                    os.utime(self.storage.path(LOCK_DIR, HOLDER))
                else:
                    _write(self.storage, f"{self._key}.alive", b"")
            except OSError as e:  # the run's own writes will meet the same trouble and say so
                log.warning("output lock heartbeat failed: %s", e)


# -- storage helpers ------------------------------------------------------------------------------


def _read_local(path: str) -> tuple[Holder | None, float | None]:
    """The holder in a local lock file and its heartbeat age; (None, None) if there is no lock file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        age = time.time() - os.stat(path).st_mtime
    except FileNotFoundError:
        return None, None
    return Holder.from_json(data), age


def _break_local(path: str, seen: Holder | None) -> None:
    """Remove a stale lock file, if it is still the one judged stale.  Breakers take turns through an
    O_EXCL file, so that none removes a lock another one has just broken and taken."""
    breaker = f"{path}.break"
    try:
        fd = os.open(breaker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        if time.time() - os.stat(breaker).st_mtime > 60:  # a breaker that died in the middle
            os.remove(breaker)
        time.sleep(0.1)
        return
    try:
        os.close(fd)
        now, _ = _read_local(path)
        if now == seen:
            os.remove(path)
    finally:
        os.remove(breaker)


def _listing(storage: Storage) -> dict[str, float]:
    """Lock objects by name with their server modification times."""
    infos = storage.fs.get_file_info(pafs.FileSelector(storage.path(LOCK_DIR), allow_not_found=True))
    return {os.path.basename(i.path): i.mtime.timestamp() for i in infos if i.type == pafs.FileType.File}


def _write(storage: Storage, name: str, data: bytes) -> None:
    with storage.fs.open_output_stream(storage.path(LOCK_DIR, name)) as out:
        out.write(data)


def _read(storage: Storage, name: str) -> Holder | None:
    """The holder a lease names; None if it is gone or cannot be read now (another run deleting its lease as
    it loses): only the message needs it, the order of the leases does not."""
    for attempt in range(2):
        try:
            with storage.fs.open_input_stream(storage.path(LOCK_DIR, name)) as f:
                return Holder.from_json(f.read())
        except FileNotFoundError:
            return None
        except OSError as e:
            if attempt:
                log.warning("output lock: cannot read %s: %s", name, e)
    return None


def _delete(storage: Storage, name: str) -> None:
    try:
        storage.fs.delete_file(storage.path(LOCK_DIR, name))
    except FileNotFoundError:
        pass


def unlock(storage: Storage, force: bool = False, stale_s: float = STALE_S) -> list[Holder]:
    """Break the locks of the output root whose holders are dead (``curate unlock``); returns whom they named.

    A holder that may still run (:func:`live_because`) raises :class:`LockInUse` and nothing is removed,
    unless ``force``.  A lock file that names no holder (garbage, or one being written) counts as dead once
    it is older than ``stale_s``.
    """
    if storage.local:
        path = storage.path(LOCK_DIR, HOLDER)
        holder, age = _read_local(path)
        if age is None:
            return []
        if not force:
            _refuse_live(storage, holder, age, stale_s)
        os.remove(path)
        return [holder] if holder is not None else []
    names = _listing(storage)
    if not names:
        return []
    leases = {n.removesuffix(".lease"): _read(storage, n) for n in names if n.endswith(".lease")}
    if not force:
        now = _server_now(storage)
        for key, holder in leases.items():
            age = now - max(names[f"{key}.lease"], names.get(f"{key}.alive", 0.0))
            _refuse_live(storage, holder, age, stale_s)
    for name in names:
        _delete(storage, name)
    return [h for h in leases.values() if h is not None]


def _refuse_live(storage: Storage, holder: Holder | None, age_s: float, stale_s: float) -> None:
    if holder is None:
        if age_s <= stale_s:
            raise LockInUse(
                storage.root_uri, "a run that is starting", f"its lock names no holder yet and is {age_s:.0f} s old"
            )
        return
    why = live_because(holder, age_s, stale_s)
    if why is not None:
        raise LockInUse(storage.root_uri, holder.describe(age_s), why)


def _server_now(storage: Storage) -> float:
    """The storage's current time (an object written now, its modification time): lease ages are measured by
    the server's clock only, as the runs measure them."""
    probe = f"{uuid.uuid4().hex}.probe"
    _write(storage, probe, b"")
    try:
        info = storage.fs.get_file_info(storage.path(LOCK_DIR, probe))
        return info.mtime.timestamp()
    finally:
        _delete(storage, probe)
