"""``gridsample bench``: run the forward benchmark, ``benchmarks/bench_forward.py``.

The benchmark lives in the source repository's top-level ``benchmarks``
package, which is not installed with gridsample.  An editable install
(``pip install -e ".[bench]"``) finds it two levels above the package
(``<repo>/src/gridsample``); otherwise it must be importable (run from the
repository root).  Arguments pass through unchanged (``--quick``,
``--case SUBSTRING``, ``--peers torch,scipy``, ``--markdown FILE``, ...).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import gridsample

from ._errors import FAILURE, USAGE, CLIError

__all__ = ["run_bench", "find_benchmark"]


def find_benchmark():
    """Import ``benchmarks.bench_forward`` from the repository this package sits in.

    Raises
    ------
    CLIError
        Not a source checkout and no importable ``benchmarks`` package.
    """
    root = Path(gridsample.__file__).resolve().parents[2]
    if (root / "benchmarks" / "bench_forward.py").is_file() and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        return importlib.import_module("benchmarks.bench_forward")
    except ImportError as exc:
        if exc.name is not None and not exc.name.startswith("benchmarks"):
            raise CLIError(f"the benchmark needs {exc.name}: pip install -e \".[bench]\"",
                           FAILURE) from None
        raise CLIError(
            "gridsample bench runs benchmarks/bench_forward.py from the source repository, and "
            "this installation has none; in a checkout of gridsample run: "
            "pip install -e \".[bench]\" && gridsample bench --quick", FAILURE) from None


def _bad_option(message: str):
    """A bad benchmark option, as the command's other mistakes read: one line, exit 2."""
    raise CLIError(f"bench: {message}", USAGE)


def run_bench(argv) -> int:
    """Run the benchmark's ``main`` with ``argv``; returns 0.

    Raises
    ------
    CLIError
        A bad option (exit 2), before anything is timed.
    """
    module = find_benchmark()
    saved = sys.argv[0]
    sys.argv[0] = "gridsample bench"  # its argparse names the program from argv[0]
    try:
        module.main(list(argv), fail=_bad_option)
    finally:
        sys.argv[0] = saved
    return 0
