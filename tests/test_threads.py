"""The thread pool (gridsample._threads) and its spin-waits (gridsample._spin).

Results across thread counts are tested where the kernels are
(test_vs_reference.py, test_backward.py); here: how work is split, that every
share runs once, errors reach the caller, sleeping workers still take jobs,
concurrent callers, the work threshold, and the spin primitives' contracts.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import pytest

import gridsample
from gridsample import _engine, _spin, _threads


def _recorder():
    calls = []
    lock = threading.Lock()

    def entry(first, stop, tag, *buffers):
        with lock:
            calls.append((first, stop, tag, threading.get_ident(),
                          tuple((b.shape, b.dtype) for b in buffers)))

    return entry, calls


@pytest.mark.parametrize("tasks,threads", [(1, 2), (2, 2), (7, 2), (10, 3), (5, 8)])
def test_shares_are_contiguous_and_cover_every_task_once(tasks, threads):
    entry, calls = _recorder()
    _threads.run_shared(entry, tasks, ("t",), threads, scratch=(((2, 3), np.int32),))
    ranges = sorted((first, stop) for first, stop, *_ in calls)
    assert len(ranges) == min(tasks, threads)
    assert ranges[0][0] == 0 and ranges[-1][1] == tasks
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert all(stop > first for first, stop in ranges)
    # Each share gets its own scratch of the asked shape and type.
    assert all(c[4] == (((2, 3), np.dtype(np.int32)),) for c in calls)
    # The caller runs the first share itself.
    first_share = [c for c in calls if c[0] == 0][0]
    assert first_share[3] == threading.get_ident()


@pytest.mark.parametrize("jobs,threads", [(0, 2), (1, 2), (2, 2), (9, 2), (9, 3), (3, 8)])
def test_run_jobs_runs_every_job_once(jobs, threads):
    entry, calls = _recorder()
    _threads.run_jobs([(entry, (j, j + 1, "job")) for j in range(jobs)], threads)
    assert sorted(c[0] for c in calls) == list(range(jobs))
    # A job that raises reaches the caller; the pool works afterwards.

    def failing(first, stop):
        raise ZeroDivisionError("a job")

    if jobs:
        with pytest.raises(ZeroDivisionError, match="a job"):
            _threads.run_jobs([(entry, (0, 1, "x")), (failing, (1, 2))] * jobs, threads)
        entry2, calls2 = _recorder()
        _threads.run_jobs([(entry2, (j, j + 1, "after")) for j in range(jobs)], threads)
        assert len(calls2) == jobs


def test_a_worker_error_reaches_the_caller_after_every_share_ended():
    ended = []

    def entry(first, stop):
        if first > 0:
            raise ZeroDivisionError(f"share {first}")
        time.sleep(0.01)
        ended.append(first)

    with pytest.raises(ZeroDivisionError, match="share"):
        _threads.run_shared(entry, 4, (), 4)
    assert ended == [0]
    # The pool still works afterwards.
    entry2, calls = _recorder()
    _threads.run_shared(entry2, 4, ("after",), 4)
    assert len(calls) == 4


@pytest.mark.parametrize("fail", [False, True])
def test_the_caller_runs_a_share_no_worker_has_started(fail):
    """With every worker busy, a call does not wait for one: its caller runs the share (an
    error there reaches the caller like a worker's)."""
    pool = _threads._pool
    pool.ensure(2)
    workers = pool.workers
    blocked, release = [], threading.Event()

    def hold(first, stop):
        if threading.current_thread().name.startswith("gridsample-"):
            blocked.append(first)
            release.wait(10)
        else:  # the background caller's own share: long enough for the workers to take theirs
            time.sleep(0.2)

    background = threading.Thread(target=_threads.run_shared,
                                  args=(hold, workers + 1, (), workers + 1))
    background.start()
    try:
        deadline = time.monotonic() + 5
        while len(blocked) < workers and time.monotonic() < deadline:
            time.sleep(0.001)
        if len(blocked) < workers:
            pytest.skip("the workers did not all take the blocking shares")
        entry, calls = _recorder()

        def maybe_failing(first, stop, tag):
            entry(first, stop, tag)
            if fail and first > 0:
                raise ZeroDivisionError("stolen share")

        if fail:
            with pytest.raises(ZeroDivisionError, match="stolen share"):
                _threads.run_shared(maybe_failing, 4, ("mine",), 2)
        else:
            _threads.run_shared(maybe_failing, 4, ("mine",), 2)
        assert len(blocked) == workers  # returned while every worker was still busy
        assert sorted(c[:2] for c in calls) == [(0, 2), (2, 4)]
        assert {c[3] for c in calls} == {threading.get_ident()}
    finally:
        release.set()
        background.join()


def test_workers_that_went_to_sleep_still_take_jobs():
    names = []

    def entry(first, stop):
        names.append((first, threading.current_thread().name))
        if first == 0:
            time.sleep(0.02)  # the caller's share: time for a sleeping worker to wake

    for _ in range(3):
        _threads.run_shared(entry, 2, (), 2)
        time.sleep(20 * _spin.IDLE_SECONDS)  # past the spin: the workers block on the queue
    assert sorted(first for first, _ in names) == [0, 0, 0, 1, 1, 1]
    assert all(name.startswith("gridsample-") for first, name in names if first == 1)


def test_an_interrupted_post_counts_the_jobs_it_put():
    """An exception between two puts (a KeyboardInterrupt, a MemoryError) must leave the
    posted count equal to the jobs in the queue: counted short, the taken count would stay
    above it for good and the spinning workers would never see a job again."""

    class Flaky:
        def __init__(self):
            self.items = []

        def put(self, job):
            if len(self.items) == 1:
                raise MemoryError("second put")
            self.items.append(job)

    pool = _threads._Pool()  # no workers started
    pool.jobs = Flaky()
    with pytest.raises(MemoryError, match="second put"):
        pool.post(["first", "second", "third"])
    assert pool.jobs.items == ["first"]
    assert list(pool.counts) == [1, 0]


def test_a_worker_takes_shares_their_callers_ran_without_spinning_between(monkeypatch):
    """Jobs whose share the caller already ran (a call shorter than the worker's wake-up)
    are taken one after another, not one per spin (each spin gives up the GIL: a loop of
    tiny split calls queued them faster than a worker took them)."""
    spins = []
    spin = _spin.spin_until_greater

    def counting(*args):
        spins.append(1)
        return spin(*args)

    monkeypatch.setattr(_spin, "spin_until_greater", counting)
    pool = _threads._Pool()
    stale = []
    for _ in range(200):
        share = _threads._Share(lambda: None, ())
        assert share.claim() is not None  # run by its caller
        stale.append((share, np.zeros(1, np.int64), 0, threading.Lock(), []))
    ran, done = [], threading.Lock()
    done.acquire()
    real = (_threads._Share(lambda: ran.append(1), ()), np.zeros(1, np.int64), 0, done, [])
    for job in stale + [real]:
        pool.jobs.put(job)
    with pool.lock:
        pool.counts[0] += len(stale) + 1
    pool.ensure(1)
    assert done.acquire(timeout=10)
    assert ran == [1]
    assert len(spins) <= 3  # before the first job, (maybe) after it, after the real one
    assert pool.jobs.empty()


def test_a_share_the_caller_ran_leaves_no_references_in_the_queue():
    """A job the caller took over stays queued until a worker pops it; it must not keep the
    call's arrays alive meanwhile."""
    import weakref

    class Big:
        pass

    held = Big()
    ref = weakref.ref(held)
    share = _threads._Share(lambda *a: None, (held,))
    del held
    assert share.claim() is not None and share.claim() is None
    assert ref() is None


def test_concurrent_callers_each_get_all_their_shares():
    def one_call(i):
        entry, calls = _recorder()
        _threads.run_shared(entry, 6, (i,), 3)
        return sorted((c[0], c[1], c[2]) for c in calls)

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(one_call, range(60)))
    for i, got in enumerate(results):
        assert got == [(0, 2, i), (2, 4, i), (4, 6, i)]


@pytest.mark.parametrize("claimed", [False, True])
def test_no_two_running_shares_hold_the_same_scratch(claimed):
    """Scratch sets of ended shares are handed to later calls; concurrent calls, and the
    shares of one call, each run with sets no other running share holds.  Shares after the
    first outlast it, so a set given back before a call's last share ended would be taken
    by another call while still held."""
    scratch = (((3, 5), np.int32), ((7,), np.float32))
    holders, lock, clashes = {}, threading.Lock(), []

    def entry(share, _, *buffers):
        keys = [b.ctypes.data for b in buffers]
        with lock:
            clashes.extend(k for k in keys if k in holders)
            holders.update(dict.fromkeys(keys, share))
        buffers[0][...] = share  # written while held, as the plan tables are
        time.sleep(0.0003 if share == 0 else 0.003)
        assert (buffers[0] == share).all()  # nobody else wrote it meanwhile
        with lock:
            for k in keys:
                del holders[k]

    run = _threads.run_claimed if claimed else _threads.run_shared

    def calls(_):
        for _ in range(15):
            run(entry, 4, (), 2, scratch)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(calls, range(4)))
    assert clashes == []


def test_share_zero_takes_its_own_set_again(monkeypatch):
    """The next call's calling thread gets the set its share 0 had; no more than
    _SPARE_SETS sets are kept, the first shares' ones."""
    monkeypatch.setattr(_threads, "_spare", {})
    scratch = (((2, 8), np.int32),)
    seen = []
    shares = _threads._SPARE_SETS + 2

    def entry(first, stop, buffer):
        seen.append((first, buffer.ctypes.data))

    for _ in range(3):
        _threads.run_shared(entry, shares, (), shares, scratch)
    first_call, later = seen[:shares], seen[shares:]
    share0 = [address for first, address in first_call if first == 0]
    assert [address for first, address in later if first == 0] == share0 * 2
    assert len(_threads._spare[scratch]) == _threads._SPARE_SETS


def test_ended_shares_give_small_scratch_back_and_large_not(monkeypatch):
    monkeypatch.setattr(_threads, "_spare", {})
    small = (((4, 16), np.int32),)
    large = (((_threads._SPARE_MAX_BYTES // 4 + 1,), np.float32),)
    seen = {}

    def entry(first, stop, buffer):
        seen.setdefault(buffer.nbytes, []).append(buffer.ctypes.data)

    for scratch in (small, large):
        _threads.run_shared(entry, 1, (), 1, scratch)
        _threads.run_shared(entry, 1, (), 1, scratch)
    small_addresses = seen[4 * 16 * 4]
    assert small_addresses[0] == small_addresses[1]  # the same set again
    assert _threads._spare.get(large) is False  # never kept


def test_threads_for_leaves_small_work_on_one_thread(monkeypatch):
    monkeypatch.delenv("GRIDSAMPLE_THREAD_MIN_WORK")  # the default
    assert _threads.min_work() == _threads.MIN_TAPS_PER_THREAD
    # 1x3x32² linear: 1024 points x (3 channels x 4 taps + planning) -- far below.
    assert _threads.threads_for(1024, 12, 2, threads=8) == 1
    # 1x3x1024² linear: every thread has plenty.
    assert _threads.threads_for(1 << 20, 12, 2, threads=8) == 8
    # In between: as many threads as have the minimum each.
    points = 3 * _threads.MIN_TAPS_PER_THREAD // (12 + 2 * _threads.PLAN_TAPS_PER_AXIS)
    assert _threads.threads_for(points, 12, 2, threads=8) == 2
    # A backward tap costs more: it splits sooner.
    assert _threads.threads_for(points, 12, 2, cost=3, threads=8) == 8
    assert _threads.threads_for(0, 12, 2, threads=8) == 1


def test_small_work_stays_on_one_thread_while_the_workers_sleep(monkeypatch):
    """threads_now: below ASLEEP_WORK_FACTOR x min_work, a call splits only while a worker
    spins (or a call ended within the spin); larger work always splits."""
    monkeypatch.delenv("GRIDSAMPLE_THREAD_MIN_WORK")  # the default
    mark_awake = _threads._mark_awake
    # A worker of an earlier test's call that wakes late marks the pool awake: not here.
    monkeypatch.setattr(_threads, "_mark_awake", lambda: None)
    small = 4 * _threads.min_work()
    large = _threads.ASLEEP_WORK_FACTOR * _threads.min_work()
    monkeypatch.setattr(_threads._pool, "awake_until", 0.0)  # asleep long since
    assert _threads.threads_now(2, small) == 1
    assert _threads.threads_now(2, large) == 2
    assert _threads.threads_now(1, large) == 1
    mark_awake()  # a call just ended
    assert _threads.threads_now(2, small) == 2
    # A forced threshold (the tests' GRIDSAMPLE_THREAD_MIN_WORK=1) scales the rule with it.
    monkeypatch.setenv("GRIDSAMPLE_THREAD_MIN_WORK", "1")
    monkeypatch.setattr(_threads._pool, "awake_until", 0.0)
    assert _threads.threads_now(2, 20) == 2


def test_grid_sample_splits_only_work_worth_a_thread(monkeypatch, rng):
    """With the default threshold a small call stays on the calling thread; a large one
    uses the threads Numba allows."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs 2 Numba threads")
    monkeypatch.delenv("GRIDSAMPLE_THREAD_MIN_WORK")
    seen = []
    real = _engine.run_shared

    def spy(entry, tasks, args, threads, scratch=()):
        seen.append(threads)
        real(entry, tasks, args, threads, scratch)

    monkeypatch.setattr(_engine, "run_shared", spy)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(2)
        x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
        gridsample.grid_sample(x, rng.uniform(-1, 1, (1, 16, 16, 2)).astype(np.float32))
        gridsample.grid_sample(x, rng.uniform(-1, 1, (1, 512, 512, 2)).astype(np.float32))
    finally:
        numba.set_num_threads(before)
    assert seen == [1, 2]


@pytest.mark.parametrize("value", ["0", "-5", "many", "1.5"])
def test_a_bad_thread_min_work_names_the_variable(monkeypatch, value):
    monkeypatch.setenv("GRIDSAMPLE_THREAD_MIN_WORK", value)
    with pytest.raises(gridsample.GridSampleError, match="GRIDSAMPLE_THREAD_MIN_WORK=.*positive"):
        gridsample.grid_sample(np.zeros((1, 1, 4, 4)), np.zeros((1, 2, 2, 2)))


needs_jit = pytest.mark.skipif(numba.config.DISABLE_JIT,
                               reason="interpreted: the spin functions look once, never spin")


@needs_jit
def test_spin_until_greater_reports_done_then_waits_for_a_job():
    counts = np.zeros(2, np.int64)
    done = np.zeros(3, np.int64)
    assert not _spin.spin_until_greater(counts, 0, 1, 1000, 10, done, 2)
    assert done.tolist() == [0, 0, 1]  # the flag is set before the wait, even a fruitless one
    counts[0] = 1
    assert _spin.spin_until_greater(counts, 0, 1, 1000, 10, done, 0)
    assert _spin.spin_until_greater(counts, 0, 1, 0, 0, done, 1) is False  # no rounds: no look
    assert done.tolist() == [1, 1, 1]
    # A worker may count a job taken before its caller counts it posted: no job for others.
    assert not _spin.spin_until_greater(np.array([3, 4], np.int64), 0, 1, 1000, 10, done, 0)


@needs_jit
def test_spin_until_set_sees_a_flag_set_by_another_thread():
    flags = np.zeros(3, np.int64)
    flags[0] = 0  # slot 0 (the caller's own share) is never waited for
    assert not _spin.spin_until_set(flags, 1, 1000)
    flags[1] = 1
    assert not _spin.spin_until_set(flags, 1, 1000)

    def later():
        time.sleep(0.002)
        flags[2] = 1

    t = threading.Thread(target=later)
    t.start()
    # Up to ~1 s of spinning: ends as soon as the other thread's store is seen.
    assert _spin.spin_until_set(flags, 1, _spin.iterations(1.0))
    t.join()


@needs_jit
def test_iterations_scale_with_seconds():
    short, long = _spin.iterations(1e-6), _spin.iterations(1e-3)
    assert 1 <= short < long
    t0 = time.perf_counter()
    _spin.spin_until_greater(np.zeros(2, np.int64), 0, 1, _spin.iterations(0.01), 0,
                           np.zeros(1, np.int64), 0)
    took = time.perf_counter() - t0
    assert 0.002 < took < 1.0  # ~10 ms; loose: a shared machine may preempt the spin


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two Numba threads")
def test_the_thread_count_is_numbas_setting_of_the_calling_thread():
    """num_threads reads Numba's per-thread setting (after the first call without
    numba.get_num_threads' launch check): each change is seen at once, and a thread's
    setting is its own."""
    before = numba.get_num_threads()
    seen = {}

    def other():
        numba.set_num_threads(1)
        seen["other"] = _threads.num_threads()

    try:
        for count in (1, 2, 1):
            numba.set_num_threads(count)
            assert _threads.num_threads() == count == numba.get_num_threads()
        numba.set_num_threads(2)
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        assert seen["other"] == 1
        assert _threads.num_threads() == 2
    finally:
        numba.set_num_threads(before)
