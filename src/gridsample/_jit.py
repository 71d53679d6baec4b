"""One place for Numba's flags and its threading layer.

Every compiled function of gridsample is made with :func:`kernel` (parallel
entry points), :func:`inline` (small helpers inlined into them) or
:func:`function` (shared helpers called as functions), so the flags are
chosen once:

* ``cache=True`` keeps compiled code on disk (next to the sources, or under
  ``NUMBA_CACHE_DIR`` for read-only installs), so a new process pays ~0.2 s
  instead of a full compile.
* ``error_model="numpy"``: division never raises inside a kernel (kernels must
  not raise; arguments are validated before they run).
* no ``fastmath``: NaN and infinity must follow the written rules, and
  reassociation would make results depend on vector width.

The threading layer is chosen deliberately: ``"threadsafe"`` (TBB if present,
else GNU OpenMP) allows parallel kernels to be called from several Python
threads at once, as Dask's threaded scheduler does.  Numba's fallback
``workqueue`` layer aborts the process in that situation.  A user's own
``NUMBA_THREADING_LAYER`` setting wins.
"""

from __future__ import annotations

import os

import numba

__all__ = ["kernel", "inline", "function", "prange"]

if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "threadsafe"

prange = numba.prange

_COMMON = dict(cache=True, nogil=True, error_model="numpy")


def _enable_noalias_option() -> bool:
    """Let ``njit`` accept ``noalias=True`` (Numba's own ``Flags.noalias``).

    Numba sets this flag on the functions it generates for ``prange`` loops
    but does not expose it to ``njit``; without it LLVM must assume that a
    store into one array argument may change any other, which blocks
    vectorization and keeps reloading constants (measured: the forward
    entries ran 1.3-2x slower than the same code inside a ``prange``).  The
    shim adds the option mapping to the CPU target; if a future Numba moves
    it, gridsample runs without the flag (correct, somewhat slower).
    """
    try:
        from numba.core import cpu, options

        if not hasattr(cpu.CPUTargetOptions, "noalias"):
            cpu.CPUTargetOptions.noalias = options._mapping("noalias")
        return True
    except Exception:  # pragma: no cover - depends on Numba internals
        return False


#: Whether compiled functions declare their array arguments ``noalias``.
NOALIAS = _enable_noalias_option()


def kernel(func):
    """Compile a parallel entry point (``prange`` loops run on all cores)."""
    return numba.njit(parallel=True, **_COMMON)(func)


def inline(func):
    """Compile a small helper that Numba inlines into its callers' IR.

    Used for the per-axis math, the fast planners and the sweeps, so that
    constants (tap counts, strides of 1) reach LLVM and it can unroll and
    keep everything in registers.  Inlining costs compile time, so the slow
    general path (:func:`function`) is not inlined.
    """
    return numba.njit(inline="always", **_COMMON)(func)


def function(func):
    """Compile a function called from Python or from other compiled code.

    Its array arguments are declared ``noalias``: every caller in gridsample
    passes distinct arrays (inputs, the output and fresh scratch; the output
    is always a new array), so no store through one is seen through another.
    """
    extra = {"noalias": True} if NOALIAS else {}
    return numba.njit(**_COMMON, **extra)(func)
