"""core/threads.py: results in order, a window ahead of the caller, the allocator trimmed as items go by."""

from __future__ import annotations

import threading

import core.threads as threads


def test_every_result_in_order_with_a_bounded_window_and_a_trim_every_few_thousand_items(monkeypatch):
    trims, started, in_flight, most = [], [], [0], [0]
    lock = threading.Lock()
    monkeypatch.setattr(threads, "trim", lambda: trims.append(len(started)))

    def work(i: int) -> int:
        with lock:
            started.append(i)
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        with lock:
            in_flight[0] -= 1
        return i * i

    taken = []

    def items():
        for i in range(10_000):
            taken.append(len(out))  # results read by the caller when item i is taken
            yield i

    out: list[int] = []
    out.extend(threads.map_bounded(work, items(), threads=4, window=256))
    assert out == [i * i for i in range(10_000)]
    assert most[0] <= 4
    assert all(i - read <= 256 for i, read in enumerate(taken))  # a window ahead of the caller at most
    assert trims == [4096, 8192]  # after the windows that cross each TRIM_EVERY, never per item
