"""Tasks claimed as the shares go (gridsample._claims, _threads.run_claimed): every task runs
once whatever the interleaving, a share takes its own range from the front and the others'
from the back, the caller's join waits for started workers only, and the forward's results
do not depend on how many shares there were or which ran which task."""

from __future__ import annotations

import threading
import time

import numba
import numpy as np
import pytest

from gridsample import _claims, _engine, _jit, _spin, _threads
from gridsample._engine import PreparedForward, use_kernels
from gridsample._plan import plan_forward

needs_jit = pytest.mark.skipif(numba.config.DISABLE_JIT,
                               reason="spins and atomics exist in compiled code only")


def _ranges(claims, shares):
    words = [int(claims[w * _claims.CLAIM_STRIDE]) for w in range(shares)]
    return [(v & 0xFFFFFFFF, v >> 32) for v in words]


@pytest.mark.parametrize("tasks,shares", [(0, 1), (1, 1), (9, 1), (7, 2), (10, 3), (5, 4)])
def test_claims_for_splits_tasks_into_contiguous_ranges(tasks, shares):
    claims = _claims.claims_for(tasks, shares, 123)
    ranges = _ranges(claims, shares)
    assert ranges[0][0] == 0 and ranges[-1][1] == tasks
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert all(hi - lo in (tasks // shares, -(-tasks // shares)) for lo, hi in ranges)
    # No share has started or is done; the caller's bound is kept where the join reads it.
    assert not claims[_claims.started_slot(shares, 0):].any()
    if shares > 1:
        assert claims[1] == 123


@numba.njit(nogil=True)
def _drain(claims, share, order):
    """Claim until none is left, recording the order; returns how many."""
    n = 0
    task = _claims.claim_task(claims, share)
    while task >= 0:
        order[n] = task
        n += 1
        task = _claims.claim_task(claims, share)
    return n


@pytest.mark.parametrize("first,stop", [(0, 0), (0, 1), (5, 6), (3, 11)])
def test_claims_of_range_runs_that_range_alone(first, stop):
    """A job's claims (the backward's jobs: gridsample._threads.run_jobs): its one share
    takes exactly ``first … stop - 1``, in order."""
    claims = _claims.claims_of_range(first, stop)
    order = np.full(16, -1, np.int64)
    n = _drain(claims, 0, order)
    assert order[:n].tolist() == list(range(first, stop))


@pytest.mark.parametrize("first,stop", [(-1, 2), (4, 3), (0, 1 << 31)])
def test_claims_of_range_refuses_what_a_word_cannot_hold(first, stop):
    with pytest.raises(ValueError, match="first <= stop"):
        _claims.claims_of_range(first, stop)


def test_a_share_takes_its_range_then_the_others_from_the_back():
    claims = _claims.claims_for(12, 3)  # ranges 0-3, 4-7, 8-11
    order = np.full(12, -1, np.int64)
    assert _drain(claims, 1, order) == 12
    assert order.tolist() == [4, 5, 6, 7, 11, 10, 9, 8, 3, 2, 1, 0]
    assert all(lo >= hi for lo, hi in _ranges(claims, 3))  # nothing left anywhere
    assert _drain(claims, 0, order) == 0


@_jit.function  # as the entries are compiled: noalias arrays, the claims among them
def _count_tasks(share, claims, counts, owners, spin):
    task = _claims.claim_task(claims, share)
    while task >= 0:
        counts[task] += 1  # each task is claimed once: no two shares write one element
        owners[task] = share
        acc = 0.0
        for i in range(spin):  # tasks of unequal length
            acc += i * (task % 7)
        owners[task] += 0 if acc >= 0 else 1
        task = _claims.claim_task(claims, share)
    _claims.join_shares(claims, share)


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_concurrent_shares_run_every_task_once(threads):
    tasks = 5000
    for spin in (0, 200):
        for _ in range(10):
            counts = np.zeros(tasks, np.int64)
            owners = np.full(tasks, -1, np.int64)
            _threads.run_claimed(_count_tasks, tasks, (counts, owners, spin), threads)
            assert (counts == 1).all()
            assert owners.min() >= 0 and owners.max() < threads


@numba.njit(nogil=True)
def _join(claims):
    _claims.join_shares(claims, 0)


@needs_jit
def test_the_callers_join_waits_for_a_started_share_until_it_is_done():
    claims = _claims.claims_for(4, 2, _spin.iterations(5.0))
    _join(claims)  # compile
    t0 = time.perf_counter()
    _join(claims)  # the worker has not started: no wait
    assert time.perf_counter() - t0 < 0.5
    claims[_claims.started_slot(2, 1)] = 1
    timer = threading.Timer(0.05, claims.__setitem__, (_claims.done_slot(2, 1), 1))
    t0 = time.perf_counter()
    timer.start()
    _join(claims)
    took = time.perf_counter() - t0
    timer.join()
    assert 0.04 <= took < 4.0
    # A worker that never reports: the join gives up after its bound.
    claims = _claims.claims_for(4, 2, _spin.iterations(0.02))
    claims[_claims.started_slot(2, 1)] = 1
    t0 = time.perf_counter()
    _join(claims)
    assert time.perf_counter() - t0 < 1.0


def test_claims_for_refuses_more_tasks_than_a_word_holds():
    with pytest.raises(ValueError, match="tasks"):
        _claims.claims_for(1 << 31, 2)


@pytest.mark.parametrize("mode,padding", [("linear", "zeros"), ("nearest", "reflection"),
                                          ("cubic", "border"), ("linear", "wrap")])
def test_forward_results_do_not_depend_on_the_shares(rng, monkeypatch, mode, padding):
    """The vector entries with more shares than this machine has cores (the pool starts the
    workers), each taking tasks from the others: the same bits as one share."""
    x = rng.standard_normal((2, 3, 37, 41)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, (2, 45, 47, 2)).astype(np.float32)
    grid[0, 0, :4] = [[np.nan, 0], [np.inf, 0], [0, -np.inf], [1e30, 0]]
    runs = []
    claimed = _engine.run_claimed

    def spy(entry, tasks, args, threads, scratch=()):
        runs.append((tasks, threads))
        return claimed(entry, tasks, args, threads, scratch)

    monkeypatch.setattr(_engine, "run_claimed", spy)
    plan, xv, gv = plan_forward(x, grid, mode, padding, False, False)
    outs = []
    with use_kernels("vector"):
        for threads in (1, 2, 3, 5):
            prepared = PreparedForward(plan, xv.shape, xv.strides, xv.itemsize)
            assert prepared.vector is not None
            prepared.threads = threads
            outs.append(prepared.run(xv, gv))
    assert [t for _, t in runs] == [1, 2, 3, 5]
    assert all(tasks > 2 * threads for tasks, threads in runs)  # tasks left to take
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])
