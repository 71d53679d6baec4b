"""Software prefetch in compiled code: ask for the cache lines of a later point's taps.

A sweep over channel-last memory (:func:`gridsample._vector.sweep_linear_2d_il` and its
kin) reads each tap's ``C`` channels with contiguous loads, a point at a time.  Its reads
miss the caches on a large input: a rotated warp walks the input diagonally, a band of
rows whose ``C`` channels together outgrow L2, and no hardware prefetcher follows that
walk.  The loads of one point are too few to keep many misses in flight (a gathering
sweep over channel-first planes keeps 16 in flight per instruction).  Asking, before a run
of ``PREFETCH_POINTS`` points, for the lines of the run after it (each point ``PREFETCH_POINTS``
to ``2 PREFETCH_POINTS - 1`` ahead) overlaps their misses with this run's work
(docs/kernels.md, "Channel-last with many channels").

A request is not free: where the lines are already near (X within L2 or L3, or a smooth warp
whose walk the hardware prefetchers follow) the sweeps ran up to 2x slower with them
(docs/kernels.md, "Prefetch only far"). So the sweeps ask only where X is large
(:func:`worth_prefetching`) and only for a point that jumps away from the point before it
(:func:`jumps`).

``llvm.prefetch`` is a hint: it never faults and changes no value, so the results are the
same bits with or without it; a target without prefetch drops it.
"""

from __future__ import annotations

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.numpy_support import as_dtype

from ._jit import skeleton

__all__ = ["prefetch_run", "worth_prefetching", "jumps", "item_bytes", "PREFETCH_POINTS",
           "PREFETCH_MIN_BYTES", "PREFETCH_JUMP_BYTES", "LINE_BYTES"]

#: The points of a run the sweeps prefetch at once, and how far ahead (one run: each point
#: this to twice this many points before it is summed): far enough that a miss to memory
#: ends before the point is summed, near enough that its lines are still in L1 (at least 1:
#: the sweeps compare a point with the one before it).
PREFETCH_POINTS = 32
#: The size of X from which the sweeps prefetch: about half the L3 of the CPUs measured
#: (32 MiB), where a random point's taps come from memory.
PREFETCH_MIN_BYTES = 16 << 20
#: How far (bytes) a point's first tap must lie from the previous point's for the point to
#: be prefetched: a page, far beyond a smooth warp's step even at many channels.
PREFETCH_JUMP_BYTES = 4096
#: The cache line size of x86-64 and most 64-bit CPUs (a longer line only makes some of
#: the requests redundant).
LINE_BYTES = 64

_I8P = ir.IntType(8).as_pointer()
_I32 = ir.IntType(32)


def _item_size(array_type) -> int:
    """The bytes of one element of arrays of ``array_type`` (a Numba array type)."""
    return as_dtype(array_type.dtype).itemsize


@intrinsic
def _prefetch_run(typingctx, array, first, count):
    """Ask for the lines of ``array[first : first + count]`` (``first >= 0``, all inside
    ``array``; a read, kept in every level): one request a line from ``array[first]`` on,
    and one for the last element (which may start a line of its own).

    An intrinsic, not a skeleton: an inlined skeleton that receives an array takes and
    drops a reference to it (two atomic updates), which in a loop LLVM does not remove,
    and ``array.itemsize`` is read at run time (a division by it stayed in the loop); the
    two made a 2-D linear channel-last sweep take 5x its time."""
    if not (isinstance(array, types.Array) and isinstance(first, types.Integer)
            and isinstance(count, types.Integer)):
        return None
    sig = types.void(array, first, count)
    item = _item_size(array)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        at = context.cast(builder, args[1], signature.args[1], types.intp)
        n = context.cast(builder, args[2], signature.args[2], types.intp)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [_I8P, _I32, _I32, _I32]),
            "llvm.prefetch.p0i8")

        def ask(pointer):
            # (address, read = 0, locality 3 = keep in every level, data cache = 1)
            builder.call(fn, [pointer, ir.Constant(_I32, 0), ir.Constant(_I32, 3),
                              ir.Constant(_I32, 1)])

        start = builder.bitcast(cgutils.get_item_pointer(context, builder, aryty, ary, [at],
                                                         wraparound=False), _I8P)
        nbytes = builder.mul(n, ir.Constant(n.type, item))
        with cgutils.for_range_slice(builder, ir.Constant(n.type, 0), nbytes,
                                     ir.Constant(n.type, LINE_BYTES), n.type) as (offset, _):
            ask(builder.gep(start, [offset]))
        ask(builder.gep(start, [builder.sub(nbytes, ir.Constant(n.type, item))]))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _item_bytes(typingctx, array):
    """The bytes of one element of ``array``, a constant of its type (``array.itemsize`` is
    read from the array at run time)."""
    if not isinstance(array, types.Array):
        return None
    size = _item_size(array)

    def codegen(context, builder, signature, args):
        return context.get_constant(types.intp, size)

    return types.intp(array), codegen


def _no_prefetch_run(array, first, count) -> None:
    """Interpreted (``NUMBA_DISABLE_JIT=1``): nothing to ask for."""


prefetch_run = _no_prefetch_run if numba.config.DISABLE_JIT else _prefetch_run
item_bytes = (lambda array: array.itemsize) if numba.config.DISABLE_JIT else _item_bytes


@skeleton
def worth_prefetching(x):
    """Whether a sweep over ``x`` prefetches: ``x`` of at least ``PREFETCH_MIN_BYTES``.  The
    sweeps pass their view from the batch item on (and the scatters from their buffer on):
    for a single item, X (or dL/dx) itself; later items of a batch see less."""
    return x.size * item_bytes(x) >= PREFETCH_MIN_BYTES


@skeleton
def jumps(q, before, itemsize):
    """Whether a point whose first tap is at offset ``q`` jumps away from the point before
    it (first tap at ``before``; ``-1``: outside, which counts as a jump)."""
    return (q < 0) | (before < 0) | (abs(q - before) * itemsize >= PREFETCH_JUMP_BYTES)
