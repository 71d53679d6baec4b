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
    """Compile a helper called as a function (compiled and cached once, shared)."""
    return numba.njit(**_COMMON)(func)
