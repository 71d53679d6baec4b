"""Tasks that the threads of one call claim as they go, and the caller's join in compiled code.

A call split into fixed equal shares lasts as long as its slowest share, and the shares are
rarely equal: the halves of a warp differ in how many points fall outside, a worker thread
starts its share microseconds after the caller, and on a shared virtual machine one vCPU
can run slower than the other for a while (measured on the 2-core Zen 4 VM, 2026-12-04: the
two halves of 1x3x1024² warps ended 0.2-0.6 ms apart, median, on 2-4 ms shares).  So each
share starts with its contiguous range of tasks (neighbouring blocks read neighbouring
input: a range keeps it in one core's cache) and takes them from the front; a share whose
range is done takes the other ranges' last tasks, from the back, until none is left.  The
tasks are the same and each writes its own output, so the result does not depend on which
thread ran which.

Shares that end together meet at the GIL: the thread that leaves its entry second finds the
GIL held by the other's few µs of Python after its own entry, and sleeps on it (20-30 µs to
wake on a VM; docs/kernels.md, "Tasks claimed at run time").  So the caller's share (share
0) does not leave its entry while a worker that has started is still in its share: it
waits, GIL released, until that worker has left its entry and is back in compiled code (its
pool thread's spin sets the share's done flag: :func:`gridsample._threads.run_shared`).
Workers leave their entries while the caller waits in compiled code, so none meets another.

The claims array holds, for ``S`` shares: share ``w``'s range at ``w CLAIM_STRIDE``, one int64
word ``hi << 32 | lo`` (tasks ``lo … hi - 1`` left), changed only by atomic
compare-and-exchange (the owner takes ``lo``, another share ``hi - 1``), the words 64 bytes
apart so that a share taking its own tasks does not pull another's cache line; the caller's
bound on its wait (spin rounds) at word 1; then the shares' started flags (set by a worker
before it runs its share) and their done flags.
"""

from __future__ import annotations

import threading

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._spin import _emit_pause

__all__ = ["CLAIM_STRIDE", "claims_for", "claims_of_range", "claim_task", "join_shares",
           "started_slot", "done_slot"]

#: int64 elements between two shares' range words: 64 bytes, a cache line (or two) apart.
CLAIM_STRIDE = 8
#: Words of the claims array per share: its range's line, its started and done flags.
_PER_SHARE = CLAIM_STRIDE + 2
# Words of share 0's line after its range, read by the caller's join: its bound (spin
# rounds) and where the started and done flags begin.
_WAIT, _STARTED, _DONE = 1, 2, 3
_LOW = (1 << 32) - 1
_MAX_TASKS = 1 << 31


def started_slot(shares: int, w: int) -> int:
    """The index of share ``w``'s started flag in a claims array of ``shares`` shares."""
    return shares * CLAIM_STRIDE + w


def done_slot(shares: int, w: int) -> int:
    """The index of share ``w``'s done flag (the done flags are the array's last words)."""
    return shares * (CLAIM_STRIDE + 1) + w


# Fresh claims arrays are copies of these (a copy costs a small call ~0.3 µs, making one
# ~0.9), by (tasks, shares, wait_rounds); emptied when full.
_TEMPLATES: dict = {}
_TEMPLATES_KEPT = 64


def claims_for(tasks: int, shares: int, wait_rounds: int = 0) -> np.ndarray:
    """The claims array of ``shares`` shares of ``range(tasks)``: share ``w`` starts with
    tasks ``tasks w // shares … tasks (w + 1) // shares - 1``; the caller waits for its
    workers at most ``wait_rounds`` spin rounds.  A new array at each call (the shares
    change it)."""
    key = (tasks, shares, wait_rounds)
    template = _TEMPLATES.get(key)
    if template is None:
        template = _make_claims(tasks, shares, wait_rounds)
        if len(_TEMPLATES) >= _TEMPLATES_KEPT:
            _TEMPLATES.clear()
        _TEMPLATES[key] = template
    return template.copy()


def claims_of_range(first: int, stop: int) -> np.ndarray:
    """The claims array of one share that runs tasks ``first … stop - 1`` alone (a job of
    :func:`gridsample._threads.run_jobs`: no other share, no join)."""
    if not 0 <= first <= stop < _MAX_TASKS:
        raise ValueError(f"tasks {first} … {stop - 1}: 0 <= first <= stop < {_MAX_TASKS}")
    claims = np.zeros(_PER_SHARE, np.int64)
    claims[0] = stop << 32 | first
    return claims


def _make_claims(tasks: int, shares: int, wait_rounds: int) -> np.ndarray:
    if tasks >= _MAX_TASKS:  # ~10**11 output points at the smallest block: never in memory
        raise ValueError(f"{tasks} tasks: at most {_MAX_TASKS - 1} can be claimed")
    if shares == 1:  # a small call's: no loop, no join
        return claims_of_range(0, tasks)
    claims = np.zeros(shares * _PER_SHARE, np.int64)
    for w in range(shares):
        claims[w * CLAIM_STRIDE] = (tasks * (w + 1) // shares) << 32 | tasks * w // shares
    claims[_WAIT] = wait_rounds
    claims[_STARTED], claims[_DONE] = started_slot(shares, 0), done_slot(shares, 0)
    return claims


def _claims_array(claims) -> bool:
    # 8-byte atomics on the words, read in place: contiguous, aligned, writable int64.
    return (isinstance(claims, types.Array) and claims.dtype == types.int64
            and claims.layout == "C" and claims.aligned and claims.mutable)


def _operands(context, builder, signature, args):
    """An intrinsic's ``(claims, share)`` as LLVM values: the claims' data as an ``i64*``,
    their share count and the share's index (i64)."""
    i64 = ir.IntType(64)
    array = context.make_array(signature.args[0])(context, builder, args[0])
    data = builder.bitcast(array.data, i64.as_pointer())
    shares = builder.sdiv(builder.extract_value(array.shape, 0), i64(_PER_SHARE))
    return data, shares, context.cast(builder, args[1], signature.args[1], types.int64)


def _emit_load(builder, data, index):
    """Word ``index`` (an LLVM i64) of the claims, an atomic acquire load (read anew each
    time: another thread writes it)."""
    return builder.load_atomic(builder.gep(data, [index]), "acquire", 8)


# The entries declare their array arguments ``noalias`` (``_jit.function``), the claims
# among them, while other threads change the claims' words: every access to them here is
# therefore atomic (acquire loads, compare-and-exchange), which LLVM neither removes nor
# moves, whatever it assumes of the pointer (``tests/test_claims.py`` claims from such an
# entry).  No plain load or store of the claims may be added to compiled code.
#
# The two operations are intrinsics that emit their loops into the entry: as compiled
# functions or inlined Python they cost a first call 0.2-0.4 s more of compiling (Numba
# types and lowers every statement of an inlined function in each entry; 2026-12-04).


@intrinsic
def claim_task(typingctx, claims, share):
    """The next task for share ``share`` (-1: none is left): the front of its own range, or
    else the back of another's, the next shares' first.  A range word ``v = hi << 32 | lo``
    becomes ``v + 1`` (the owner takes ``lo``) or ``v - (1 << 32)`` (another takes
    ``hi - 1``) by an atomic compare-and-exchange, retried while another share changed it."""
    if not _claims_array(claims):
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        data, shares, me = _operands(context, builder, signature, args)
        result = cgutils.alloca_once_value(builder, i64(-1))
        k_slot = cgutils.alloca_once_value(builder, i64(0))
        fn = builder.function
        loop_k, body_k, retry, take, got, next_k, done = (
            fn.append_basic_block(name) for name in
            ("claim.k", "claim.body", "claim.retry", "claim.take", "claim.got", "claim.next",
             "claim.done"))
        builder.branch(loop_k)
        builder.position_at_end(loop_k)
        k = builder.load(k_slot)
        builder.cbranch(builder.icmp_signed("<", k, shares), body_k, done)
        builder.position_at_end(body_k)
        word = builder.mul(builder.srem(builder.add(me, k), shares), i64(CLAIM_STRIDE))
        pointer = builder.gep(data, [word])
        own = builder.icmp_signed("==", k, i64(0))
        builder.branch(retry)
        builder.position_at_end(retry)
        v = builder.load_atomic(pointer, "acquire", 8)
        lo, hi = builder.and_(v, i64(_LOW)), builder.ashr(v, i64(32))
        builder.cbranch(builder.icmp_signed(">=", lo, hi), next_k, take)
        builder.position_at_end(take)
        new = builder.select(own, builder.add(v, i64(1)), builder.sub(v, i64(1 << 32)))
        swapped = builder.extract_value(
            builder.cmpxchg(pointer, v, new, "acq_rel", "acquire"), 1)
        builder.cbranch(swapped, got, retry)
        builder.position_at_end(got)
        builder.store(builder.select(own, lo, builder.sub(hi, i64(1))), result)
        builder.branch(done)
        builder.position_at_end(next_k)
        builder.store(builder.add(k, i64(1)), k_slot)
        builder.branch(loop_k)
        builder.position_at_end(done)
        return builder.load(result)

    return types.int64(claims, share), codegen


@intrinsic
def join_shares(typingctx, claims, share):
    """For the caller's share (0): wait, spinning, until every worker that has started its
    share is done with it and back in compiled code (or for the bound at word 1)."""
    if not _claims_array(claims):
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        data, shares, me = _operands(context, builder, signature, args)
        with builder.if_then(builder.icmp_signed("==", me, i64(0))):
            rounds = cgutils.alloca_once_value(builder, _emit_load(builder, data, i64(_WAIT)))
            started = _emit_load(builder, data, i64(_STARTED))
            finished = _emit_load(builder, data, i64(_DONE))
            with cgutils.for_range_slice(builder, i64(1), shares, i64(1), i64) as (w, _):
                fn = builder.function
                test, check, wait, out = (fn.append_basic_block(n) for n in
                                          ("join.test", "join.check", "join.wait",
                                           "join.out"))
                builder.branch(test)
                builder.position_at_end(test)
                left = builder.load(rounds)
                began = builder.icmp_signed(
                    "!=", _emit_load(builder, data, builder.add(started, w)), i64(0))
                builder.cbranch(builder.and_(builder.icmp_signed(">", left, i64(0)), began),
                                check, out)
                builder.position_at_end(check)
                ended = builder.icmp_signed(
                    "!=", _emit_load(builder, data, builder.add(finished, w)), i64(0))
                builder.cbranch(ended, out, wait)
                builder.position_at_end(wait)
                _emit_pause(builder)
                builder.store(builder.sub(left, i64(1)), rounds)
                builder.branch(test)
                builder.position_at_end(out)
        return context.get_dummy_value()

    return types.none(claims, share), codegen


if numba.config.DISABLE_JIT:  # interpreted kernels (the tests' twins): the same, under a lock
    _claim_lock = threading.Lock()

    def claim_task(claims, share):  # noqa: F811
        shares = claims.shape[0] // _PER_SHARE
        with _claim_lock:
            for k in range(shares):
                word = ((share + k) % shares) * CLAIM_STRIDE
                v = int(claims[word])
                lo, hi = v & _LOW, v >> 32
                if lo < hi:
                    claims[word] = v + 1 if k == 0 else v - (1 << 32)
                    return lo if k == 0 else hi - 1
        return -1

    def join_shares(claims, share):  # noqa: F811
        return  # interpreted workers hold the GIL through their shares anyway
