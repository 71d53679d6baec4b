"""Cold and warm start: how long a new process waits for its first result.

Run:  python -m benchmarks.bench_startup [--repeats 3] [--markdown FILE]

Each figure is the median over ``repeats`` fresh processes, each with an
empty cache folder of its own (``GRIDSAMPLE_CACHE_DIR``), so every kernel it
needs is compiled:

* first ``grid_sample`` (import + compile + run; 2-D linear, zeros, float32);
* first ``grid_sample_backward`` (the same case, both gradients);
* ``gridsample demo`` (the README's main job: 9 mode x padding panels of a
  uint8 RGB chart, drawing and PNG writing included);
* warm start: the first ``grid_sample`` again, in a new process whose cache
  the cold run filled.

The Python snippets report the time from their first line to the result
(interpreter start-up, ~0.05 s, and exit excluded); the demo is timed as a
whole command.

Numba's first dispatch in a process imports SciPy's BLAS bindings when SciPy
is installed (+0.3-0.4 s measured); the header says whether it is.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.timing import machine_line

_FORWARD = ("import time; t0 = time.perf_counter(); import numpy as np, gridsample; "
            "x = np.ones((1, 3, 64, 64), np.float32); g = np.zeros((1, 32, 32, 2), np.float32); "
            "gridsample.grid_sample(x, g); print(time.perf_counter() - t0)")
_BACKWARD = ("import time; t0 = time.perf_counter(); import numpy as np, gridsample; "
             "x = np.ones((1, 3, 64, 64), np.float32); g = np.zeros((1, 32, 32, 2), np.float32); "
             "gridsample.grid_sample_backward(np.ones((1, 3, 32, 32), np.float32), x, g); "
             "print(time.perf_counter() - t0)")


def _seconds(argv, cache: str) -> float:
    """Seconds one child process waits for its result, with ``cache`` as its kernel cache.

    A child that prints a number (the Python snippets: from their first
    line to the result, interpreter start-up and exit excluded) is taken at
    its word; otherwise (the demo command) the whole process is timed.
    """
    env = dict(os.environ, GRIDSAMPLE_CACHE_DIR=cache)
    start = time.perf_counter()
    out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    try:
        return float(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return wall


def measure(repeats: int) -> dict:
    """Median seconds of each figure (see the module docstring)."""
    py = sys.executable
    demo = [py, "-m", "gridsample.cli", "demo", "-q", "--output"]
    samples = {"first grid_sample, cold": [], "first grid_sample_backward, cold": [],
               "gridsample demo (9 panels), cold": [], "first grid_sample, warm": [],
               "python -c 'import numpy, numba' (floor)": []}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            for label, argv in (("first grid_sample, cold", [py, "-c", _FORWARD]),
                                ("first grid_sample_backward, cold", [py, "-c", _BACKWARD]),
                                ("gridsample demo (9 panels), cold",
                                 demo + [os.path.join(tmp, "demo.png")])):
                cache = tempfile.mkdtemp(dir=tmp)
                samples[label].append(_seconds(argv, cache))
                if label.startswith("first grid_sample,"):
                    samples["first grid_sample, warm"].append(
                        _seconds([py, "-c", _FORWARD], cache))
            samples["python -c 'import numpy, numba' (floor)"].append(_seconds(
                [py, "-c", "import time; t0 = time.perf_counter(); import numpy, numba; "
                 "print(time.perf_counter() - t0)"], tmp))
    return {label: statistics.median(s) for label, s in samples.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", default=None, help="also write the table to this file")
    args = parser.parse_args(argv)
    scipy = "installed" if importlib.util.find_spec("scipy") else "not installed"
    header = [machine_line(), f"SciPy {scipy}; medians of {args.repeats} fresh processes"]
    print("\n".join(header), flush=True)
    rows = measure(args.repeats)
    lines = ["| start | seconds |", "|---|---|"]
    lines += [f"| {label} | {sec:.2f} |" for label, sec in rows.items()]
    table = "\n".join(header + [""] + lines)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(table + "\n")


if __name__ == "__main__":
    main()
