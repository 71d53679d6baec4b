"""Run a compiled entry on several threads, each on its own contiguous range of blocks.

The entries release the GIL (``nogil``), so plain Python threads run them
in parallel.  The caller's thread takes the first share itself and the
pool's worker threads the others; workers only ever run entries, never wait
on other tasks, so concurrent calls from several Python threads (Dask's
threaded scheduler) just queue behind each other and cannot deadlock.

Handing a share to a sleeping thread costs the wake-up of an idle core
(tens of µs on a VM, twice per call: the worker's start and the caller's
return), so both sides spin briefly in compiled code first
(:mod:`gridsample._spin`): measured on a 1x3x256² linear warp, 2 threads,
Intel Xeon VM, 285 -> 175 µs per call.  Work too small to pay even that
runs on the caller's thread alone (:func:`threads_for`), and so does work of up to
``ASLEEP_WORK_FACTOR`` times that while the workers sleep (:func:`threads_now`).

The vector entries (forward and backward) take their tasks as they go instead of a fixed
range (:func:`run_claimed`, :mod:`gridsample._claims`): a share whose range is done takes the
others' last tasks, and the caller's share waits, in compiled code, for the workers that
started theirs.

The thread count is Numba's setting: ``NUMBA_NUM_THREADS`` or
``numba.set_num_threads`` (per calling thread), so one knob controls every
parallel part of gridsample.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
import time

import numba
import numpy as np

from ._claims import claims_for, done_slot, started_slot
from ._environ import getenv
from ._errors import GridSampleError
from ._spin import IDLE_SECONDS, spin_until_set

__all__ = ["num_threads", "threads_for", "threads_now", "call_work", "min_work", "run_shared",
           "alone_runner",
           "run_claimed", "run_jobs", "compile_pool", "ASLEEP_WORK_FACTOR",
           "MIN_TAPS_PER_THREAD", "PLAN_TAPS_PER_AXIS", "THREAD_MIN_WORK_VARIABLE"]

#: Work below which a second thread does not pay for its hand-over, in tap reads (one
#: value of X read and weighted): a thread gets at least this much.  Planning a point
#: costs about ``PLAN_TAPS_PER_AXIS`` tap reads per axis.  Measured (docs/kernels.md,
#: "Threads"): 1 thread ~0.25 ns per tap read; two threads break even at ~170 µs of one
#: thread's work on an Intel Xeon VM, ~80-90 µs on an AMD EPYC Zen 4 VM.  A call splits
#: from ~125 µs (each thread ~60 µs), between the two.  ``GRIDSAMPLE_THREAD_MIN_WORK``
#: overrides it (the tests set 1: every call that can split does, as on large inputs).
MIN_TAPS_PER_THREAD = 250_000
PLAN_TAPS_PER_AXIS = 5
#: The environment variable that overrides :data:`MIN_TAPS_PER_THREAD`.
THREAD_MIN_WORK_VARIABLE = "GRIDSAMPLE_THREAD_MIN_WORK"
#: A call whose workers sleep (no gridsample call or share ended within the spin of
#: :data:`gridsample._spin.IDLE_SECONDS`) splits only from this many times
#: :func:`min_work` in all (2 M tap reads, ~0.5 ms of one thread's work): waking a
#: sleeping vCPU and meeting it again cost a split call ~90 µs on the Zen 4 VM, which
#: calls of that size gain back only where they scale well (docs/kernels.md, "Waking a
#: sleeping worker").
ASLEEP_WORK_FACTOR = 8


def min_work() -> int:
    """Tap reads each thread must get: ``GRIDSAMPLE_THREAD_MIN_WORK`` (a positive integer)
    if set, else :data:`MIN_TAPS_PER_THREAD`."""
    raw = getenv(THREAD_MIN_WORK_VARIABLE, "").strip()
    if not raw:
        return MIN_TAPS_PER_THREAD
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise GridSampleError(f"GRIDSAMPLE_THREAD_MIN_WORK={raw!r} is not allowed: use a "
                              f"positive integer (tap reads per thread; default "
                              f"{MIN_TAPS_PER_THREAD})")
    return value


def num_threads() -> int:
    """Threads a call may use (Numba's current setting for this thread)."""
    read = _thread_count_reader
    if read is not None:
        count = read()
        if count > 0:  # (not set: a forked child's new thread under workqueue)
            return count
    count = numba.get_num_threads()
    _bind_thread_count_reader()
    return count


#: Numba's own reader of the thread count, once its threads are running (below).
_thread_count_reader = None


def _bind_thread_count_reader() -> None:
    """Read the thread count without ``numba.get_num_threads``'s check that the threads are
    running (a lock, ~0.6 µs of a small call's ~10): once they are, its threading layer's
    ``get_num_threads`` (a C function, the per-thread setting) is what it reads.  Where
    Numba's internals differ, ``numba.get_num_threads`` it stays."""
    global _thread_count_reader
    from numba.np.ufunc import parallel

    reader = getattr(parallel, "_get_num_threads", None)
    if callable(reader) and reader() == numba.get_num_threads():
        _thread_count_reader = reader


def call_work(points: int, taps: int, rank: int, cost: int = 1) -> int:
    """The work of ``points`` output points of ``rank`` axes that read ``taps`` values each
    (channels x taps per channel), each read costing ``cost`` forward tap reads (a
    backward's: ~3, measured), in tap reads."""
    return cost * points * (taps + PLAN_TAPS_PER_AXIS * rank)


def threads_for(points: int, taps: int, rank: int, cost: int = 1,
                threads: int | None = None) -> int:
    """Threads worth using for the work :func:`call_work` counts: at most ``threads``
    (default :func:`num_threads`), each with :func:`min_work` of the work."""
    threads = num_threads() if threads is None else threads
    return max(1, min(threads, call_work(points, taps, rank, cost) // min_work()))


def threads_now(threads: int, work: int) -> int:
    """The threads a call of ``work`` tap reads that :func:`threads_for` gave ``threads``
    runs on now: 1 where its work is below ``ASLEEP_WORK_FACTOR`` times :func:`min_work`
    and the pool's workers sleep, else ``threads``.  (The results are the same bits on any
    number of threads, up to the sign of a NaN where a block's last points are planned by
    scalar code, as at any setting.)"""
    if (threads > 1 and time.perf_counter() > _pool.awake_until
            and work < ASLEEP_WORK_FACTOR * min_work()):
        return 1
    return threads


def _mark_awake() -> None:
    """A call or share just ended: the workers spin (or a next call soon follows) for
    :data:`gridsample._spin.IDLE_SECONDS`."""
    _pool.awake_until = time.perf_counter() + IDLE_SECONDS


class _Pool:
    """Worker threads fed by one queue; ``counts`` = (jobs posted, jobs taken), the
    spinning workers' hint that a job waits."""

    def __init__(self):
        self.jobs = queue.SimpleQueue()
        self.counts = np.zeros(2, np.int64)
        self.lock = threading.Lock()  # thread start-up and the two counters
        self.workers = 0
        self.idle = self.grace = self.wait = 0
        # Until when (time.perf_counter) a worker spins or a next call is likely soon:
        # threads_now.
        self.awake_until = 0.0

    def ensure(self, workers: int) -> None:
        if self.workers >= workers:
            return
        from . import _spin

        with self.lock:
            if not self.idle:
                self.idle = _spin.iterations(_spin.IDLE_SECONDS)
                self.grace = _spin.iterations(_spin.GRACE_SECONDS)
                self.wait = _spin.iterations(_spin.WAIT_SECONDS)
            while self.workers < workers:
                threading.Thread(target=self._work, name=f"gridsample-{self.workers}",
                                 daemon=True).start()
                self.workers += 1

    def post(self, jobs: list) -> None:
        put = 0
        try:
            for job in jobs:
                self.jobs.put(job)
                put += 1
        finally:
            # Counted last, just before the caller starts its own share: a worker that sees
            # the count and returns to Python then rarely finds the GIL held (measured:
            # counted first, the worker started 66 µs after the split instead of 14-18).  A
            # worker blocked in the queue may count a job taken first; the spinners wait for
            # posted to exceed taken, so that does not wake them.  Only the jobs put (an
            # exception between two puts, a KeyboardInterrupt or a MemoryError, must not
            # leave taken above posted for good: the spinners would never see a job).
            with self.lock:
                self.counts[0] += put

    def _work(self) -> None:
        from ._spin import spin_until_greater

        counts = self.counts
        flags, slot = np.zeros(1, np.int64), 0  # nothing to report before the first job
        while True:
            # Report the last job done (the caller may be spinning for it), then wait for
            # the next one, spinning a while before sleeping in the queue.
            _mark_awake()
            spin_until_greater(counts, 0, 1, self.idle, self.grace, flags, slot)
            job = self.jobs.get()
            while True:
                share, flags, slot, done, errors = job
                with self.lock:
                    counts[1] += 1
                work = share.claim()  # None: the caller ran it (or dropped it)
                if work is not None:
                    if share.started is not None:  # the caller's join waits for this share
                        share.started[0][share.started[1]] = 1
                    try:
                        work[0](*work[1])
                    except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                        errors.append(exc)
                    finally:
                        done.release()  # the caller's fence, before the flag it spins on
                    break
                # A share its caller ran: take the next job at once, without a spin (which
                # gives up the GIL), so that such jobs cannot pile up behind calls shorter
                # than a GIL hand-over (a loop of tiny calls split by
                # GRIDSAMPLE_THREAD_MIN_WORK=1 queued 237,000 of them in 10 s).
                if self.jobs.empty():  # (the common case, without an exception's cost)
                    break
                try:
                    job = self.jobs.get_nowait()
                except queue.Empty:  # another worker took it
                    break
            del job, share, done, errors, work


class _Share:
    """One share's entry and arguments, run by whoever claims it first (a worker, or the
    caller once its own share is done).  Claiming drops the references, so a job left in
    the queue after the caller ran it holds none of the call's data arrays (only its small
    flags or claims array)."""

    __slots__ = ("_lock", "_work", "started")

    def __init__(self, entry, args, started=None):
        self._lock = threading.Lock()
        self._work = (entry, args)
        self.started = started  # (array, index): the flag a worker sets before it runs it

    def claim(self):
        """``(entry, args)`` for the first caller, None for every later one."""
        if not self._lock.acquire(blocking=False):
            return None
        work, self._work = self._work, None
        return work


_pool = _Pool()


def _forget_pool() -> None:
    # A forked child has none of the parent's threads: start a new pool there.
    global _pool
    _pool = _Pool()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def compile_pool() -> None:
    """Compile (or load from the cache) the pool's spin functions, as the first call that
    splits over threads would (``gridsample compile`` calls it)."""
    from . import _spin

    _spin.spin_until_greater(np.zeros(2, np.int64), 0, 1, 1, 0, np.zeros(1, np.int64), 0)
    _spin.spin_until_set(np.ones(2, np.int64), 1, 1)
    _spin.iterations(1e-6)


def run_jobs(jobs: list, threads: int) -> None:
    """Run ``jobs`` (``(entry, args)`` pairs, each ``entry(*args)``) on up to ``threads``
    threads, each thread taking the next job not yet taken until none is left: jobs of
    unequal size (two passes of a backward, say) share the threads without a fixed split.
    Whatever job a thread takes, each job's own work and order are fixed, so the results do
    not depend on the thread count.  List the longest jobs first."""
    if threads <= 1 or len(jobs) <= 1:
        for entry, args in jobs:
            entry(*args)
        return
    claim = itertools.count()  # next() is atomic under the GIL

    def take_jobs(first, stop):
        for i in claim:
            if i >= len(jobs):
                return
            entry, args = jobs[i]
            entry(*args)

    shares = min(threads, len(jobs))
    run_shared(take_jobs, shares, (), shares)


def _buffers(scratch: tuple) -> list:
    """A share's own scratch: a new ``np.empty(shape, dtype)`` for each ``(shape, dtype)``."""
    return [np.empty(shape, dtype) for shape, dtype in scratch]


# Scratch sets of ended shares, by their ``scratch`` description, for the next call with the
# same one (a small call made 3-6 arrays for its shares: ~1 µs of its ~10 µs of Python).
# Only small sets are kept (a large call's are few against its work), at most
# _SPARE_SETS a description, and the whole is emptied past _SPARE_KINDS descriptions.
# ``list.pop`` and ``list.append`` are atomic under the GIL: concurrent calls never get
# the same set.
_spare: dict = {}
_SPARE_SETS = 8
_SPARE_KINDS = 32
_SPARE_MAX_BYTES = 64 << 10


def _take_buffers(scratch: tuple) -> list:
    """A scratch set for a share: one an ended share gave back, else a new one."""
    if not scratch:
        return []
    sets = _spare.get(scratch)
    if sets:
        try:
            return sets.pop()
        except IndexError:  # another thread took the last one
            pass
    return _buffers(scratch)


def _give_back(scratch: tuple, sets: list) -> None:
    """Keep the scratch ``sets`` of ended shares for later calls (small ones only)."""
    if not scratch:
        return
    kept = _spare.get(scratch)
    if kept is None:
        if len(_spare) >= _SPARE_KINDS:
            _spare.clear()
        small = sum(b.nbytes for b in sets[0]) <= _SPARE_MAX_BYTES
        kept = _spare.setdefault(scratch, [] if small else False)
    if kept is False:  # too large (or nothing) to keep
        return
    # The first shares' sets, share 0's last: the next call's share 0 (the calling
    # thread's) takes share 0's set again, whose lines are in that core's cache.
    room = max(0, _SPARE_SETS - len(kept))
    kept.extend(reversed(sets[:room]))


def run_claimed(entry, tasks: int, args: tuple, threads: int, scratch: tuple = ()) -> None:
    """:func:`run_shared` for an entry whose shares claim their tasks as they go
    (:mod:`gridsample._claims`): share ``w`` is ``entry(w, claims, *args, *buffers)``, and
    starts with ``range(tasks)``'s ``w``-th contiguous part; a share whose part is done takes
    the others' last tasks, so no thread waits while another has tasks left, and the
    caller's share (0) returns once the workers that started theirs are done."""
    shares = max(1, min(threads, tasks))
    if shares == 1:
        _run_alone(entry, (0, claims_for(tasks, 1), *args), scratch)
        return
    _pool.ensure(shares - 1)
    claims = claims_for(tasks, shares, _pool.wait)
    _split(entry, [(w, claims, *args) for w in range(shares)], scratch, claims)


def run_shared(entry, tasks: int, args: tuple, threads: int, scratch: tuple = ()) -> None:
    """Split ``range(tasks)`` into ``min(threads, tasks)`` contiguous shares, run in parallel.

    Share ``w`` is ``entry(first, stop, *args, *buffers)``, ``buffers`` an
    ``np.empty(shape, dtype)`` for each ``(shape, dtype)`` of ``scratch`` (its own: no
    other running share has it): the vector entries' plan tables, one set per share,
    passed in (not allocated inside) so that the compiled entry sees them as arguments
    that alias nothing.  Contiguous shares keep neighbouring blocks -- which read
    neighbouring input on smooth grids -- in one core's cache (measured: striding blocks
    across threads was 1.3-1.6x slower).
    """
    shares = max(1, min(threads, tasks))
    if shares == 1:
        _run_alone(entry, (0, tasks, *args), scratch)
        return
    bounds = [tasks * w // shares for w in range(shares + 1)]
    _split(entry, [(bounds[w], bounds[w + 1], *args) for w in range(shares)], scratch)


def _run_alone(entry, head: tuple, scratch: tuple) -> None:
    """``entry(*head, *buffers)`` on the calling thread alone: one share, no pool."""
    buffers = _take_buffers(scratch)
    entry(*head, *buffers)
    _give_back(scratch, [buffers])
    _mark_awake()


def alone_runner(entry, tasks: int, scratch: tuple = ()):
    """``run_claimed(entry, tasks, args, 1, scratch)`` made ready for many calls: a function of
    ``*args`` that runs ``entry(0, claims, *args, *buffers)`` on the calling thread, with a
    fresh copy of a one-share claims array made once and scratch buffers kept by the runner
    itself (a small call's ~2 µs of Python in :func:`run_claimed`: the claims' and the
    buffers' lookups by their descriptions)."""
    template = claims_for(tasks, 1)
    spare = []  # sets of ended calls (list.pop and list.append are atomic under the GIL)

    def run(*args) -> None:
        try:
            buffers = spare.pop()
        except IndexError:  # the first call, or another thread's call holds the set
            buffers = _buffers(scratch)
        entry(0, template.copy(), *args, *buffers)
        if len(spare) < 2:
            spare.append(buffers)
        _mark_awake()
    return run


def _split(entry, heads: list, scratch: tuple, sync=None) -> None:
    """Run share ``w`` = ``entry(*heads[w], *buffers)`` for every ``w``: share 0 on the
    calling thread, the others by the pool (or by the caller, once its own is done, where
    no worker has taken them yet).

    ``sync``: a claims array (:func:`gridsample._claims.claims_for` of ``len(heads)``
    shares) whose started and done flags the shares set, for the caller's join
    (:func:`gridsample._claims.join_shares`).
    """
    shares = len(heads)
    pool = _pool
    pool.ensure(shares - 1)
    # Share w > 0 goes to the pool; whoever claims it first runs it: a worker, or the
    # caller once its own share is done (a core idle for a while can take a millisecond
    # to wake on a VM: the caller then runs the share itself).
    if sync is None:
        flags, first_done = np.zeros(shares, np.int64), 0
    else:  # the done flags are the claims array's last words
        flags, first_done = sync, done_slot(shares, 0)
    sets = [_take_buffers(scratch) for _ in range(shares)]
    errors = []
    dones = [threading.Lock() for _ in range(shares)]
    for done in dones[1:]:
        done.acquire()
    jobs = [(_Share(entry, (*heads[w], *sets[w]),
                    None if sync is None else (sync, started_slot(shares, w))),
             flags, first_done + w, dones[w], errors)
            for w in range(1, shares)]
    mine = (*heads[0], *sets[0])
    failed = True
    try:
        pool.post(jobs)
        entry(*mine)
        failed = False
    finally:
        del mine
        for share, _, slot, done, _ in jobs:
            work = share.claim()  # not started: run it here (dropped once anything failed)
            if work is None:
                continue
            try:
                if not failed:
                    work[0](*work[1])
            except BaseException as exc:  # noqa: BLE001 - raised below, once all ended
                errors.append(exc)
                failed = True
            finally:
                del work
                flags[slot] = 1
                done.release()
        spin_until_set(flags, first_done + 1, pool.wait)
        for done in dones[1:]:
            done.acquire()
    if not errors:  # every share has ended: their buffers are free
        _give_back(scratch, sets)
        _mark_awake()
        return
    try:
        raise errors[0]
    finally:
        errors.clear()  # the exception's traceback holds this frame: no cycle
