"""Map units of work over Ray and collect their stats; start or join Ray.

Every phase that works unit by unit goes through :func:`map_units`: one Ray
task per unit, at most ``workers`` at a time, on Ray's reused worker
processes (a worker that loads models is built once per process and kept).
A unit's failure is its own: the worker catches it, logs its traceback and
returns ``{"unit": ..., "failed": "Type: message"}``, so one bad unit never
ends the phase as a Ray error.

Local runs start an embedded Ray (no server); ``address`` / ``RAY_ADDRESS``
joins a cluster.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import sys
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import NoReturn, Protocol

from tqdm import tqdm

from core.faults import output_fault, quiet_collected_writer_faults
from core.memory import return_free_memory
from pipeline.phase import Unit
from pipeline.result import UnitResult

log = logging.getLogger(__name__)


class Worker(Protocol):
    def process(self, unit: Unit) -> dict: ...


#: Builds a worker from the run config; a class or a module-level function (pickled by reference).
OpenWorker = Callable[..., Worker]


#: What ``ray.init`` starts on its own for an embedded Ray that a local run never uses (Ray's public API has no
#: switch for them; ``ray start --no-monitor`` has one for the first): the autoscaler's monitor (one machine:
#: nothing to scale) and the dashboard's API server (no dashboard, no job submitted into an embedded Ray).
#: Together ~120 MB PSS and ~2 CPU-s of start-up on the run's cores (benchmarks/startup.py).  What stays is what
#: the raylet needs: the GCS, the raylet, its two agents (it refuses to start without them: an empty agent
#: command is fatal; the dashboard agent gets a stand-in unless ``ray.metrics``, see _local_start, but the
#: runtime-env agent cannot: the raylet exits when it asks a stand-in for Ray Data's workers) and the workers.
#: Nor Ray's log monitor: a thread of the driver shows the workers' lines instead (pipeline/worker_logs.py).
LOCAL_SKIPS = ("start_monitor", "start_api_server", "start_log_monitor")
#: Nor a worker process started ahead for the driver: on one core it starts no sooner for it, as the driver
#: plans the run meanwhile (e2e corpus, phase 1 in that worker: 26.5 and 27.9 s with it, 26.0 and 26.0 without).
LOCAL_SYSTEM_CONFIG = {"prestart_worker_first_driver": False}
#: Ray's public setting of its authentication mode (https://docs.ray.io/en/latest/ray-security/token-auth.html).
AUTH_MODE_VAR = "RAY_AUTH_MODE"
#: The env var that gives a phase's units worker processes of their own (map_units ``pool``).
WORKER_POOL_VAR = "CURATE_WORKER_POOL"


def _agent_stand_in() -> tuple[str, list[str]] | None:
    """(the agent's process type, the command the raylet runs in its place), or None if this Ray's agent ports
    are not the files :mod:`pipeline.ray_agent_stand_in` writes (then the agent runs, minimal)."""
    try:
        from ray._private import ray_constants
        from ray._raylet import (
            DASHBOARD_AGENT_LISTEN_PORT_NAME,
            METRICS_AGENT_PORT_NAME,
            METRICS_EXPORT_PORT_NAME,
            get_port_filename,
        )
    except ImportError as e:
        log.debug("Ray's dashboard agent not replaced: %s", e)
        return None
    ports = (METRICS_AGENT_PORT_NAME, METRICS_EXPORT_PORT_NAME, DASHBOARD_AGENT_LISTEN_PORT_NAME)
    node = "f" * 56
    if any(get_port_filename(node, p) != f"{p}_{node}" for p in ports):
        log.debug("Ray's dashboard agent not replaced: its port files are named otherwise")
        return None
    from pipeline import ray_agent_stand_in

    # -S: the stand-in needs only the standard library, not site-packages' start-up hooks
    return ray_constants.PROCESS_TYPE_DASHBOARD_AGENT, [
        sys.executable,
        "-S",
        ray_agent_stand_in.__file__,
        "--stand-in-ports=" + ",".join(ports),
    ]


#: How often a local start asks the GCS whether its raylet has registered (see _prompt_get_node).
NODE_POLL_S = 0.02


def _prompt_get_node(get_node: Callable) -> Callable:
    """Ray's ``services.get_node``, for a node that is starting: asked before the raylet has registered (it waits
    for its agents' ports, ~1-3 s on one core), Ray's own call sleeps a whole second between two tries
    (GlobalStateAccessor::GetNode), which left the run's core idle ~0.8 s at every start (measured).  Here the
    GCS is asked every NODE_POLL_S until the node is there, then Ray's call finds it on its first try."""

    def get_node_when_registered(gcs_address: str, node_id: str, *args, **kwargs):
        try:
            from ray._raylet import GcsClient

            client = GcsClient(address=gcs_address)
            deadline = time.monotonic() + 60
            while (
                node_id not in {n.hex() for n in client.get_all_node_info(timeout=10)} and time.monotonic() < deadline
            ):
                time.sleep(NODE_POLL_S)
        except Exception as e:  # noqa: BLE001 - Ray's own wait below still works, only slower
            log.debug("could not poll the GCS for the starting node: %s", e)
        return get_node(gcs_address, node_id, *args, **kwargs)

    return get_node_when_registered


@contextmanager
def _local_start(metrics: bool = False):
    """``ray.init`` of an embedded Ray without LOCAL_SKIPS and, unless ``metrics``, without Ray's dashboard agent:
    the raylet runs :mod:`pipeline.ray_agent_stand_in` in its place, which writes the ports the agent's minimal
    mode writes (none in use) and waits.  Ray decides that mode by trying to import the dashboard's optional
    dependencies, in the driver (~0.5 s, measured); here it is told the answer instead, so that the agent runs
    minimal wherever the stand-in cannot.  Ray's own start-up if its internals differ."""
    try:
        import ray._private.services as ray_services
        import ray._private.utils as ray_utils
        from ray._private.node import Node

        originals = {name: getattr(Node, name) for name in LOCAL_SKIPS}
        deps_check = ray_utils.get_dashboard_dependency_error
        python_command = ray_services._build_python_executable_command_memory_profileable
        get_node = ray_services.get_node
    except (ImportError, AttributeError) as e:  # another Ray: nothing skipped, nothing broken
        log.debug("ray start-up not trimmed: %s", e)
        yield
        return
    for name in LOCAL_SKIPS:
        setattr(Node, name, lambda self, *a, **k: None)
    ray_services.get_node = _prompt_get_node(get_node)
    stand_in = None if metrics else _agent_stand_in()
    if stand_in is not None:
        agent, stand_in_command = stand_in

        def command(component, *args, **kwargs):  # the python command line of each of Ray's processes
            return list(stand_in_command) if component == agent else python_command(component, *args, **kwargs)

        ray_services._build_python_executable_command_memory_profileable = command
    if not metrics:
        ray_utils.get_dashboard_dependency_error = lambda: ImportError("ray.metrics is off: Ray's agent runs minimal")
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(Node, name, fn)
        ray_utils.get_dashboard_dependency_error = deps_check
        ray_services._build_python_executable_command_memory_profileable = python_command
        ray_services.get_node = get_node


def init_ray(
    num_cpus: int | None = None, address: str | None = None, shuffle: str = "auto", metrics: bool = False
) -> None:
    """Join ``address`` (or RAY_ADDRESS), else start an embedded local Ray (once per process, without what
    a local run does not use: LOCAL_SKIPS, and Ray's metrics unless ``metrics``).  Ray Data is set up when a
    phase first uses it (:func:`ray_data`)."""
    if not (address or os.environ.get("RAY_ADDRESS")) and "ray" not in sys.modules:
        # A new local Ray turns token authentication on when RAY_AUTH_MODE is unset, and warns that it did, on every
        # run ("Token authentication is enabled for this Ray cluster..."); the mode it would choose, set through its
        # public setting, keeps the same security without the warning.  Only before Ray is imported: Ray reads the
        # setting once, at import (set later, its processes would be told token and the driver not).  A mode the
        # user set stays theirs.
        os.environ.setdefault(AUTH_MODE_VAR, "token")
    import ray

    use_shuffle(shuffle)
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS")
        quiet = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": True}
        if address:
            ray.init(address=address, **quiet)
        else:
            with _local_start(metrics):
                ray.init(num_cpus=num_cpus, _system_config=LOCAL_SYSTEM_CONFIG, **quiet)
            _Metrics.enabled = metrics  # no metrics agent to send the gauges to: not even their import (~0.4 s)
            global _STARTED_HERE, _WORKER_LOGS
            _STARTED_HERE = True
            _WORKER_LOGS = _show_worker_logs()


def _show_worker_logs():
    """The workers' lines on the console (pipeline/worker_logs.py), or, if this Ray's log folder cannot be
    found, Ray's own log monitor after all (when _local_start skipped it)."""
    from pipeline.worker_logs import WorkerLogs

    try:
        node = ray_node()
        return WorkerLogs(node.get_logs_dir_path()).start()
    except Exception as e:  # noqa: BLE001 - another Ray's internals: its own monitor then
        log.debug("worker logs not tailed here (%s): Ray's log monitor starts", e)
        try:
            from ray._private.node import Node

            Node.start_log_monitor(ray_node())
        except Exception as e2:  # noqa: BLE001
            log.warning("the workers' log lines will not reach the console: %s", e2)
        return None


def show_worker_lines() -> None:
    """The lines the workers of a local run wrote so far, shown now (a cluster's come as Ray's log monitor sends
    them): a phase's task's last lines before the driver's next ones."""
    if _WORKER_LOGS is not None:
        _WORKER_LOGS.poll()


def ray_node():
    """The local Ray node this process started or joined."""
    import ray._private.worker

    return ray._private.worker._global_node


#: Whether init_ray started an embedded Ray in this process (see shutdown_local_ray).
_STARTED_HERE = False
#: The thread showing its workers' log lines, if it did.
_WORKER_LOGS = None


def shutdown_local_ray() -> None:
    """End the embedded Ray that init_ray started, if any, now: left to Ray's exit hook, its shutdown first
    sleeps 0.5 s so that the workers' last log lines print (the core idle; a run's tasks ended long before).
    A Ray this process joined or was given (a cluster, a test's) is left as it is."""
    global _STARTED_HERE, _WORKER_LOGS
    ray = sys.modules.get("ray")
    if _STARTED_HERE and ray is not None and ray.is_initialized():
        ray.shutdown()
    _STARTED_HERE = False
    if _WORKER_LOGS is not None:
        _WORKER_LOGS.stop()  # after the workers ended: their last lines too
        _WORKER_LOGS = None


def end_process(code: int) -> NoReturn:
    """End this process with exit status ``code``, at once if it started an embedded Ray.

    ``ray.shutdown()`` then tears down the driver's Ray client before it stops Ray's processes, and
    that waits 0.25 s for gRPC's polling thread (a fixed deadline in Ray's ClientCallManager); the
    interpreter's own teardown of Ray's, Arrow's and the stages' modules takes ~0.2 s more, the core idle for
    most of it (a one-document run: 3.1 -> 2.8 s, benchmarks/results/startup.md).  Here Ray's processes
    are stopped as ``ray.shutdown`` stops them (SIGTERM, the raylet ending its workers; SIGKILL after 1 s),
    the workers' last lines are shown, the exit handlers run but Ray's (the teardown above), and the
    process ends with ``os._exit``.  Only for the ``curate`` command, once the run has written everything
    (its files are closed, its lock released): never for a caller that goes on, nor for a Ray it joined.
    """
    import atexit

    ray = sys.modules.get("ray")
    node = getattr(getattr(getattr(ray, "_private", None), "worker", None), "_global_node", None)
    if not (_STARTED_HERE and node is not None and ray.is_initialized()):
        shutdown_local_ray()
        sys.exit(code)
    atexit.unregister(ray._private.worker.shutdown)
    # Objects the driver still holds through garbage cycles (a Ray Data executor's): with Ray's processes gone, its
    # core worker tries to recover them and ends the process with status 1, before os._exit, in a run that succeeded.
    gc.collect()
    try:
        workers = _node_children(node)
        node.kill_all_processes(check_alive=False, allow_graceful=True, wait=True)
        _wait_ended(workers)  # the raylet does not wait for its workers: their exit is part of this run's time
    except Exception as e:  # the run is done and written: its exit status stands
        log.warning("stopping the embedded Ray: %s: %s", type(e).__name__, e)
    if _WORKER_LOGS is not None:
        _WORKER_LOGS.stop()  # after the workers ended: their last lines too
    atexit._run_exitfuncs()  # logging's flush, Arrow's S3 finalizer...
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said on it
            pass
    os._exit(code)


def _node_children(node) -> list:
    """The processes the raylet started (workers, agents): psutil handles, to wait for after it ends."""
    import psutil  # Ray's own copy (ray/thirdparty_files) when psutil is not installed: Ray is imported here

    try:
        raylet = node.all_processes["raylet"][0].process
        return psutil.Process(raylet.pid).children(recursive=True)
    except (KeyError, IndexError, psutil.Error):
        return []


def _wait_ended(procs: list, timeout_s: float = 5.0) -> None:
    """Wait until ``procs`` have exited (a zombie has: its parent is gone), killing those left at ``timeout_s``."""
    import psutil

    deadline, pause = time.monotonic() + timeout_s, 0.001
    while procs:
        procs = [p for p in procs if _running(p, psutil)]
        if not procs or time.monotonic() > deadline:
            break
        time.sleep(pause)
        pause = min(2 * pause, 0.02)
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass


def _running(proc, psutil) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:  # gone
        return False


#: The run's ``ray.shuffle`` (init_ray), applied to Ray Data when it is first used.
_SHUFFLE = "auto"


def ray_data():
    """``ray.data``, set up for the run: imported only when a phase uses it (big inputs' shuffles), as its
    import costs ~1 s and ~64 MB with the pandas it brings, which a small run never needs."""
    import ray.data
    from ray.data.context import ShuffleStrategy

    from core.shuffle import MODE_KEY

    ctx = ray.data.DataContext.get_current()
    ctx.shuffle_strategy = (
        ShuffleStrategy.HASH_SHUFFLE if _SHUFFLE == "hash" else ShuffleStrategy.SORT_SHUFFLE_PULL_BASED
    )
    ctx.set_config(MODE_KEY, _SHUFFLE)  # ``auto``: core.shuffle.grouped picks a shuffle's kind by its partitions
    ctx.enable_progress_bars = False  # each phase draws its own bar (or logs its progress)
    # A unit is a whole input file (a CC WARC: ~30,000 pages, over 30 min on a slow or shared core):
    # Ray Data's guard (no block out for 30 min -> the dataset fails) would kill a healthy phase 1.
    # A unit's own failures are caught per unit; progress is logged and exported as metrics.
    if hasattr(ctx, "execution_no_progress_timeout_s"):
        ctx.execution_no_progress_timeout_s = -1
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)  # per-dataset execution logs and hints: noise at our scale
    return ray.data


def use_shuffle(shuffle: str) -> None:
    """The shuffle ``ray_data`` sets up in this process (a task that plans datasets of its own: the card's)."""
    global _SHUFFLE
    _SHUFFLE = shuffle


def on_a_worker(fn: Callable, *args, cpus: float = 1, beside: bool = False, name: str | None = None):
    """``fn(*args)`` in one Ray task (Ray started), its result back: work whose memory grows with the run's parts
    or documents stays off the driver (issue 39).  ``beside``: on the driver's node (its files, its folders);
    ``name``: the task's (its log lines' prefix), else the function's."""
    import ray

    return _got(ray.remote(**_task_options(cpus, beside, name))(fn).remote(*args))


def stream_on_a_worker(
    fn: Callable, *args, cpus: float = 1, beside: bool = False, name: str | None = None
) -> Iterator:
    """What the generator ``fn(*args)`` yields, run in one Ray task (a streaming generator), as it yields it;
    closing this iterator early cancels the task."""
    import ray

    items = ray.remote(num_returns="streaming", **_task_options(cpus, beside, name))(fn).remote(*args)
    ended = False  # the task ended (or raised): nothing to cancel while it tidies up
    try:
        for ref in items:
            try:
                item = _got(ref)
            except KeyboardInterrupt:  # here, not in the task
                raise
            except BaseException:
                ended = True
                raise
            yield item
        ended = True
    finally:
        if not ended and not items.is_finished():
            ray.cancel(items)


def _got(ref):
    """What a task returned; an error it raised as that error (its one line, as the driver's own would read), the
    task's traceback chained to it."""
    import ray
    from ray.exceptions import RayTaskError

    try:
        return ray.get(ref)
    except RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, Exception):
            raise cause from e
        raise


def _task_options(cpus: float, beside: bool, name: str | None = None) -> dict:
    import ray

    options: dict = {"num_cpus": cpus, **({"name": name} if name else {})}
    if beside:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), False)
    return options


def cluster_cpus() -> int:
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def failure(unit: str, err: BaseException, output_path: str = "") -> UnitResult:
    """A failed unit's result; ``fatal`` (an errno) when the output cannot be written (full disk, read-only
    filesystem...): the runner then stops the run instead of failing every unit in turn."""
    fault = output_fault(err, output_path)
    result = UnitResult.failure(unit, f"{type(err).__name__}: {err}", fatal=fault)
    if fault is not None:  # not a bug: one line, the runner says what to do
        log.error("unit %s failed: %s", unit, result.failed)
    else:
        log.error("unit %s failed: %s", unit, "".join(traceback.format_exception(err, limit=4)))
    return result


def _run(worker: Worker | BaseException, unit: Unit, output_path: str = "") -> UnitResult | dict:
    if isinstance(worker, BaseException):  # the worker could not be built: every unit fails with its error
        return failure(unit.name, worker, output_path)
    try:
        return worker.process(unit)
    except Exception as e:  # the unit fails alone; no marker, so a rerun retries it
        return failure(unit.name, e, output_path)


def _encode(result: UnitResult | dict) -> str:
    """A worker's answer as JSON: a unit's typed result, or a step's own dict (a failure of a step that
    returns dicts is the dict ``{"unit", "failed"[, "fatal"]}``)."""
    if isinstance(result, UnitResult):
        return json.dumps({"result": result.to_json()}, default=str)
    return json.dumps({"data": result}, default=str)


def _decode(text: str, typed: bool) -> UnitResult | dict:
    msg = json.loads(text)
    if "result" in msg:
        result = UnitResult.from_json(msg["result"])
        if typed or result.failed is None:
            return result
        return {
            k: v
            for k, v in (("unit", result.unit), ("failed", result.failed), ("fatal", result.fatal))
            if v is not None
        }
    return msg["data"]


def _open(open_worker: OpenWorker, config: dict, extra: dict) -> Worker | BaseException:
    from pipeline.config import RunConfig

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return open_worker(RunConfig.model_validate(config), **extra)
    except Exception as e:
        log.error("could not start a worker: %s", traceback.format_exc(limit=4))
        return e


#: This worker process's long-lived worker (key -> worker): the one of the last phase that asked for it.
_KEPT: dict[str, Worker | BaseException] = {}


def _release_kept(unless: str) -> None:
    """Close and drop the kept worker of another phase: a process holds one phase's models at most,
    and none once it works for a phase that keeps nothing."""
    for key in [k for k in _KEPT if k != unless]:
        close = getattr(_KEPT.pop(key), "close", None)
        if callable(close):
            close()


def _unit_task(job: dict, unit_json: str) -> str:
    """One unit on a Ray worker process; returns its stats as JSON.  A worker that holds models is
    built once per process and kept for the phase's later units that land here."""
    quiet_collected_writer_faults()  # a full disk is reported once, by the unit's failure
    unit = Unit.from_json(unit_json)
    _release_kept(unless=job["key"])
    if not job["keep_worker"]:
        worker = _open(job["open_worker"], job["config"], job["extra"])
    else:
        if job["key"] not in _KEPT:
            _KEPT[job["key"]] = _open(job["open_worker"], job["config"], job["extra"])
        worker = _KEPT[job["key"]]
    try:
        with first_interrupt_only():
            return _encode(_run(worker, unit, job.get("output_path", "")))
    finally:
        return_free_memory()


@contextmanager
def first_interrupt_only() -> Iterator[None]:
    """In the main thread: the first SIGINT (what ``ray.cancel`` sends a running task, as
    ``_thread.interrupt_main``) raises KeyboardInterrupt and every later one is ignored, until the block ends.

    Ray repeats a cancel while the task has not ended, and a second KeyboardInterrupt would cut short the
    clean-up of the unit it stopped (its temporary files, removed as it unwinds: a run stopped by a full
    disk would leave them behind)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def first(signum, frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


_REMOTE = None


def _remote_unit_task():
    """``_unit_task`` as a Ray task: one CPU; retried on a new worker if its process dies (a unit writes
    its outputs under temporary names and publishes them last, so a retry never doubles them)."""
    global _REMOTE
    if _REMOTE is None:
        import ray

        _REMOTE = ray.remote(num_cpus=1, max_retries=3, retry_exceptions=False)(_unit_task)
    return _REMOTE


#: How long a phase stopped early waits for its cancelled units to end (map_units).
CANCEL_WAIT_S = 30.0


def map_units(
    config,
    units: Sequence[Unit],
    open_worker: OpenWorker,
    *,
    workers: int,
    keep_worker: bool = False,
    extra: dict | None = None,
    progress: Progress | None = None,
    typed: bool = False,
    pool: str | None = None,
) -> Iterator[UnitResult | dict]:
    """Run ``open_worker(config, **extra).process(unit)`` for every unit on Ray; yields what each returns
    as units finish, with at most ``workers`` units running: a phase's units return a UnitResult
    (``typed``: a failure is one too), a step's tasks their own dict (a failure is ``{"unit", "failed"}``).

    ``keep_worker``: the worker holds models: build it once per Ray worker process and keep it for
    the phase's later units there; else build one per unit.  Plain Ray tasks, not Ray Data: Ray
    reuses its worker processes across tasks and phases, so each pays Python, Ray and model start-up
    once per run instead of once per phase (measured in benchmarks/e2e.py).  ``pool``: the units run in worker
    processes of their own instead (Ray keeps one set of workers per runtime environment; an env var names the
    pool), which Ray ends once idle: what they loaded does not stay in the processes later phases reuse.
    """
    if not units:
        return
    import ray

    if not ray.is_initialized():  # a caller that did not start Ray: as the run says, not with Ray's defaults
        init_ray(config.ray.num_cpus, config.ray.address, config.ray.shuffle, config.ray.metrics)
    # Each call builds its own workers (the key is new): a kept worker never outlives its phase's run.
    from core.storage import resolve

    job = ray.put(
        {
            "config": config.model_dump(mode="json"),
            "extra": extra or {},
            "open_worker": open_worker,
            "keep_worker": keep_worker,
            "key": uuid.uuid4().hex,
            "output_path": resolve(config.output.root)[1],
        }
    )
    task = _remote_unit_task()
    if pool is not None:
        task = task.options(runtime_env={"env_vars": {WORKER_POOL_VAR: pool}})
    todo, left = iter(units), len(units)  # read one at a time: a phase's units may be columns (UnitList)
    running: dict = {}
    size = max(1, min(workers, len(units)))
    try:
        while left or running:
            while left and len(running) < size:
                unit, left = next(todo), left - 1
                running[task.remote(job, unit.to_json())] = unit
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                unit = running.pop(ref)
                try:
                    stats = _decode(ray.get(ref), typed)
                except Exception as e:  # its worker died past the retries: the unit fails, the phase goes on
                    stats = _decode(_encode(failure(unit.name, e)), typed)
                if progress is not None:
                    progress.update(stats)
                yield stats
    finally:  # the caller stopped early (the output cannot be written): the units still running are cancelled
        for ref in running:
            ray.cancel(ref)
        if running:
            # ... and waited for: a cancelled unit removes its temporary files as it ends, which must happen
            # before the run ends Ray and its workers with it.  Bounded: a unit inside a long C call ends when
            # the call returns (its own time limits bound that).
            ray.wait(list(running), num_returns=len(running), timeout=CANCEL_WAIT_S)


class _Metrics:
    """The same progress as Ray metrics (Prometheus, the dashboard's Metrics tab), tagged by phase.

    Created lazily in the driver; a Ray without its metrics agent (or no Ray at
    all) just records nothing."""

    _gauges: dict | None = None
    #: False in a run whose embedded Ray was started without its metrics (``ray.metrics``).
    enabled = True

    @classmethod
    def set(cls, phase: str, values: dict[str, float]) -> None:
        # Not before Ray is up either: a phase counts its progress from 0 before its first unit starts Ray,
        # and only then is it known whether the run exports metrics at all.
        ray = sys.modules.get("ray")
        if not cls.enabled or ray is None or not ray.is_initialized():
            return
        try:
            if cls._gauges is None:
                from ray.util.metrics import Gauge

                described = {
                    "units_done": "units of the phase finished",
                    "units_total": "units of the phase",
                    "docs": "documents counted by the phase so far (tag: count)",
                    "units_per_min": "units finished per minute",
                    "eta_seconds": "estimated seconds left",
                }
                cls._gauges = {
                    k: Gauge(f"curate_phase_{k}", d, tag_keys=("phase", "count") if k == "docs" else ("phase",))
                    for k, d in described.items()
                }
            for k, v in values.items():
                if isinstance(v, dict):
                    for count, n in v.items():
                        cls._gauges[k].set(n, tags={"phase": phase, "count": count})
                else:
                    cls._gauges[k].set(v, tags={"phase": phase})
        except Exception as e:  # metrics are an aid, never a reason to fail a run
            log.debug("ray metrics unavailable: %s", e)


class Progress:
    """Units done of a phase, with document counts: a tqdm bar on a terminal, else a log line
    at a steady interval (cluster jobs have no terminal) with units/s and an ETA; and the same
    as Ray metrics (``curate_phase_*`` gauges) for the dashboard."""

    #: this process is a task beside a driver whose console is a terminal (pipeline/engine/beside.py): its bars are
    #: drawn there, where the run is watched, not here
    driver_terminal = False

    def __init__(
        self,
        phase: str,
        total: int,
        unit: str,
        enabled: bool = True,
        counts: Iterable[str] = ("kept",),
        interval_s: float = 30.0,
    ):
        self.phase, self.total, self.unit = phase, total, unit
        self.counts = tuple(counts)
        self.done = 0
        self.docs: Counter = Counter()
        self.t0 = self._last = time.monotonic()
        self.interval_s = interval_s
        self.bar = None
        self.enabled = enabled
        if enabled and sys.stderr.isatty():
            self.bar = tqdm(total=total, desc=phase, unit=unit, file=sys.stderr)
        elif enabled and Progress.driver_terminal:
            self.bar = _DriversBar.of(phase, total, unit)
        self._metrics()

    def update(self, stats: UnitResult | dict) -> None:
        self.done += 1
        if isinstance(stats, UnitResult):
            stats = {"in": stats.docs_in, "kept": stats.kept, "rejected": stats.rejected, **stats.totals}
        self.docs.update({k: stats.get(k, 0) for k in self.counts if isinstance(stats.get(k, 0), int)})
        if self.bar is not None:
            self.bar.set_postfix(**{k: self.docs[k] for k in self.counts}, refresh=False)
            self.bar.update(1)
        elif self.enabled and (time.monotonic() - self._last >= self.interval_s or self.done == self.total):
            self._last = time.monotonic()
            log.info("%s", self.line())
        self._metrics()

    def rate(self) -> float:
        """Units per second so far."""
        return self.done / max(time.monotonic() - self.t0, 1e-9)

    def _metrics(self) -> None:
        rate = self.rate()
        eta = (self.total - self.done) / rate if rate > 0 else -1.0
        _Metrics.set(
            self.phase,
            {
                "units_done": self.done,
                "units_total": self.total,
                "units_per_min": rate * 60,
                "eta_seconds": eta,
                "docs": {k: self.docs[k] for k in self.counts},
            },
        )

    def line(self) -> str:
        rate = self.rate()
        fields = [f"{self.done}/{self.total} {self.unit}s"]
        if self.counts:  # a phase without document counts (dedup's steps) shows none, not an empty field
            fields.append(" ".join(f"{k}={self.docs[k]}" for k in self.counts))
        if rate > 0 and self.done < self.total:
            fields.append(f"{rate * 60:.1f} {self.unit}s/min, ETA {(self.total - self.done) / rate:.0f}s")
        elif rate > 0:
            fields.append(f"{rate * 60:.1f} {self.unit}s/min")
        return f"{self.phase}: {', '.join(fields)}"

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class _DriversBar:
    """A task's bar drawn on the driver's console: Ray's ``tqdm_ray`` sends its state on the task's output, which
    Ray forwards to the driver, and the driver draws it (a line a second at most); the counts in its label."""

    def __init__(self, bar, phase: str):
        self._bar, self._phase = bar, phase

    @classmethod
    def of(cls, phase: str, total: int, unit: str) -> _DriversBar | None:
        try:
            from ray.experimental.tqdm_ray import tqdm as ray_tqdm
        except ImportError:  # an experimental module: without it, a log line at an interval, as on a cluster
            return None
        return cls(ray_tqdm(desc=phase, total=total, unit=unit), phase)

    def set_postfix(self, refresh: bool = True, **counts) -> None:
        self._bar.set_description(" ".join([self._phase, *(f"{k}={v}" for k, v in counts.items())]))

    def update(self, n: int = 1) -> None:
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()
