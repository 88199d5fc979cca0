"""What an embedded local Ray runs in place of its dashboard agent when ``ray.metrics`` is off.

Ray's raylet starts a dashboard agent and will not register its node until the
agent has written its ports to the session folder.  Without the dashboard and
without metrics (a local run's default), the agent has nothing left to serve:
its minimal mode writes -1 for every port ("not in use") and then reports node
statistics that nothing reads: 2.6 CPU-s in a 90-s one-core run of the e2e
corpus, mostly imports (measured per thread, on a slow host).  This stand-in
writes the same -1s and waits for the raylet to end, like the agent.

Run by the raylet as ``python -S ray_agent_stand_in.py --stand-in-ports=A,B,C
.../dashboard/agent.py --node-id=... --session-dir=... [the agent's other
arguments]`` (see :func:`pipeline.distribute._local_start`); it imports
nothing but the standard library.
"""

from __future__ import annotations

import os
import sys
import time


def _arguments(argv: list[str]) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)


def write_ports(session_dir: str, node_id: str, names: list[str]) -> None:
    """Each port file as the agent's minimal mode writes it (``persist_port``: "-1", not in use),
    atomically, since the raylet polls for it."""
    for name in names:
        path = os.path.join(session_dir, f"{name}_{node_id}")
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write("-1")
        os.replace(tmp, path)


def wait_for_parent(poll_s: float = 1.0) -> None:
    """Return when the raylet that started this process is gone (as the agent does: it is fate-shared)."""
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(poll_s)


def main(argv: list[str]) -> None:
    args = _arguments(argv)
    write_ports(args["session-dir"], args["node-id"], args["stand-in-ports"].split(","))
    wait_for_parent()


if __name__ == "__main__":
    main(sys.argv[1:])
