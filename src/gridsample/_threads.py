"""Run a compiled entry on several threads, each on its own contiguous range of blocks.

The entries release the GIL (``nogil``), so plain Python threads run them
in parallel.  The caller's thread takes the first share itself and a
shared pool runs the others; pool threads only ever run entries, never wait
on other tasks, so concurrent calls from several Python threads (Dask's
threaded scheduler) just queue behind each other and cannot deadlock.

The thread count is Numba's setting: ``NUMBA_NUM_THREADS`` or
``numba.set_num_threads`` (per calling thread), so one knob controls every
parallel part of gridsample.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

__all__ = ["num_threads", "run_shared"]

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def num_threads() -> int:
    """Threads a call may use (Numba's current setting for this thread)."""
    return numba.get_num_threads()


def _get_pool(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < workers:
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gridsample")
            _pool_size = workers
        return _pool


def _forget_pool() -> None:
    # A forked child has none of the parent's threads: start a new pool there.
    global _pool, _pool_size
    _pool, _pool_size = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def run_shared(entry, tasks: int, args: tuple, threads: int, scratch: tuple = ()) -> None:
    """Split ``range(tasks)`` into ``min(threads, tasks)`` contiguous shares, run in parallel.

    Share ``w`` is ``entry(first, stop, *args, *buffers)``, ``buffers`` a new
    ``np.empty(shape, dtype)`` for each ``(shape, dtype)`` of ``scratch``: the
    vector entries' plan tables, one set per share, passed in (not allocated
    inside) so that the compiled entry sees them as arguments that alias
    nothing.  Contiguous shares keep neighbouring blocks -- which read
    neighbouring input on smooth grids -- in one core's cache (measured:
    striding blocks across threads was 1.3-1.6x slower).
    """
    shares = max(1, min(threads, tasks))
    bounds = [tasks * w // shares for w in range(shares + 1)]

    def share(first, stop):
        entry(first, stop, *args, *(np.empty(shape, dtype) for shape, dtype in scratch))

    if shares == 1:
        share(0, tasks)
        return
    pool = _get_pool(shares - 1)
    futures = [pool.submit(share, bounds[w], bounds[w + 1]) for w in range(1, shares)]
    try:
        share(bounds[0], bounds[1])
    finally:
        for f in futures:
            f.result()
