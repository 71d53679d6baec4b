"""Interleaved median timing shared by the benchmarks."""

from __future__ import annotations

import statistics
import time

#: A runner slower than this on its warm-up call is timed only twice more.
SLOW_SECONDS = 3.0
#: Pause before each timed call.  OpenMP runtimes (PyTorch's, onnxruntime's)
#: keep their worker threads spinning for a while after a parallel region; on
#: a 2-core machine the next implementation timed would otherwise start with
#: a core taken (measured: 8x32x128² backward 23 -> 30 ms right after torch).
SETTLE_SECONDS = 0.05


def interleaved_medians(runners: dict, repeats: int) -> dict:
    """Median seconds of each zero-argument callable in ``runners``.

    Every runner is called once to warm up (compile, allocate, page in), then
    the runners are called in turn ``repeats`` times, so drift on a shared
    machine hits all of them alike; each timed call starts after a short
    pause (``SETTLE_SECONDS``) so no runner inherits another's spinning
    threads.  Runners slower than ``SLOW_SECONDS`` on
    the warm-up get two timed calls only.
    """
    slow = set()
    for name, run in runners.items():
        t0 = time.perf_counter()
        run()
        if time.perf_counter() - t0 > SLOW_SECONDS:
            slow.add(name)
    samples = {name: [] for name in runners}
    for _ in range(repeats):
        for name, run in runners.items():
            if name in slow and len(samples[name]) >= 2:
                continue
            time.sleep(SETTLE_SECONDS)
            t0 = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - t0)
    return {name: statistics.median(s) for name, s in samples.items()}
