"""Short native spin-waits for the thread pool (:mod:`gridsample._threads`).

A thread that sleeps (a lock, a queue, the GIL) leaves its core idle, and
waking an idle core takes tens of microseconds on a virtual machine (measured
on the project's 2-core VMs: a handover through a queue and back 80-130 µs,
the time the second core of a 1x3x256² linear warp computes in).  The pool's
threads therefore wait a little while *spinning* first, in compiled code
that has released the GIL, before they fall back to sleeping:

* a worker, after its job, watches the count of posted jobs for about
  :data:`IDLE_SECONDS` (the next part of the same call -- another channel
  group, the backward's second pass -- finds it awake; kept short, since a
  spinning worker takes a core from whatever the program runs next);
* the calling thread, after its own share, watches its workers' done flags
  for up to :data:`WAIT_SECONDS`.

The counters and flags are int64 arrays: the job counters written by Python
under the GIL, a worker's done flag by its next spin (a release store, made
once the worker no longer needs the GIL), all read here with atomic acquire
loads (a plain load could be hoisted out of the loop).  They are hints only: the queue and locks of
:mod:`gridsample._threads` carry the jobs and the memory ordering, so a
missed or stale hint costs a sleep, never a wrong result.

Spins are bounded by iteration counts, made from seconds by timing a spin
once per process (:func:`iterations`), so no clock is read in the loop.
They are compiled as helpers, not ``noalias`` functions: other threads write
their arrays while they run.
"""

from __future__ import annotations

import platform
import time

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._jit import helper

__all__ = ["spin_until_greater", "spin_until_set", "iterations", "IDLE_SECONDS",
           "WAIT_SECONDS", "GRACE_SECONDS"]

#: How long a worker stays awake for the next job after one.
IDLE_SECONDS = 50e-6
#: How long the calling thread spins for its workers before it sleeps on their locks.
WAIT_SECONDS = 500e-6
#: A worker that sees a job spins this much longer before it takes the GIL: the caller
#: holds the GIL until it enters its own share (a few µs), and a thread that finds the
#: GIL taken sleeps (and then needs waking).
GRACE_SECONDS = 5e-6

_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")


def _int64_array(array) -> bool:
    # The intrinsics' loads and stores are 8-byte atomics: aligned int64 elements only.
    return isinstance(array, types.Array) and array.dtype == types.int64 and array.aligned


@intrinsic
def _load_acquire(typingctx, array, index):
    """``array[index]`` (int64) as an atomic acquire load: read anew on every call."""
    if not _int64_array(array):
        return None
    sig = types.int64(array, index)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        return builder.load_atomic(ptr, "acquire", 8)

    return sig, codegen


@intrinsic
def _store_release(typingctx, array, index, value):
    """``array[index] = value`` (int64) as an atomic release store."""
    if not _int64_array(array):
        return None
    sig = types.none(array, index, value)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        val = context.cast(builder, args[2], signature.args[2], types.int64)
        builder.store_atomic(val, ptr, "release", 8)
        return context.get_dummy_value()

    return sig, codegen


def _emit_pause(builder) -> None:
    """The CPU's spin-loop hint (x86 ``pause``), emitted by ``builder``; nothing elsewhere."""
    if _X86:
        pause = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause")
        builder.call(pause, [])


@intrinsic
def _relax(typingctx):
    """The CPU's spin-loop hint (x86 ``pause``); nothing elsewhere."""
    sig = types.none()

    def codegen(context, builder, signature, args):
        _emit_pause(builder)
        return context.get_dummy_value()

    return sig, codegen


@helper
def spin_until_greater(counts, a, b, limit, grace, done, slot):
    """Set ``done[slot]`` to 1, then spin until ``counts[a] > counts[b]`` and ``grace``
    rounds more (True), or for ``limit`` rounds (False).

    Both ends happen here, with the GIL released.  The flag: the thread waiting
    for it can take the GIL at once (set from Python, the waiter could find the
    GIL still held and sleep).  The grace: the thread that posted the job holds
    the GIL until it starts its own share, and returning to Python sooner would
    put this thread to sleep on the GIL.
    """
    _store_release(done, slot, 1)
    for _ in range(limit):
        if _load_acquire(counts, a) > _load_acquire(counts, b):
            _rounds(counts, grace)
            return True
        _relax()
    return False


@helper
def spin_until_set(flags, first, limit):
    """Spin until ``flags[first:]`` are all non-zero (True) or for ``limit`` rounds (False)."""
    i = first
    n = flags.shape[0]
    for _ in range(limit):
        while i < n and _load_acquire(flags, i) != 0:
            i += 1
        if i == n:
            return True
        _relax()
    return False


@helper
def _rounds(counts, limit):
    """``limit`` rounds of a spin, each as long as one of :func:`spin_until_greater`'s."""
    n = 0
    for _ in range(limit):
        n += _load_acquire(counts, 0) == _load_acquire(counts, 1)
        _relax()
    return n


if numba.config.DISABLE_JIT:  # interpreted kernels (the tests' twins): look once, never spin
    def spin_until_greater(counts, a, b, limit, grace, done, slot):  # noqa: F811
        done[slot] = 1
        return limit > 0 and bool(counts[a] > counts[b])

    def spin_until_set(flags, first, limit):  # noqa: F811
        return limit > 0 and bool(np.all(flags[first:] != 0))

    def _rounds(counts, limit):  # noqa: F811
        return 0


_seconds_per_round: float | None = None


def iterations(seconds: float) -> int:
    """Spin rounds lasting about ``seconds`` on this CPU (one timed spin per process:
    rounds doubled until a spin lasts 1 ms, so a coarse clock cannot make it read 0)."""
    global _seconds_per_round
    if _seconds_per_round is None:
        probe = np.zeros(2, np.int64)
        _rounds(probe, 1)  # compile or load before timing
        rounds, took = 1 << 12, 0.0
        while rounds < 1 << 26:
            took = float("inf")
            for _ in range(3):  # the fastest of three: a preempted spin reads long
                t0 = time.perf_counter()
                _rounds(probe, rounds)
                took = min(took, time.perf_counter() - t0)
            if took >= 1e-3:
                break
            rounds *= 2
        # Interpreted (no spin) or a clock that never moved: about a ns a round.
        _seconds_per_round = max(took / rounds, 1e-9)
    return max(1, int(seconds / _seconds_per_round))
