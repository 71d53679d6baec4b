"""The 2-D cubic sweep's taps read a row at a time: one 4-element load per point and row.

A 2-D cubic point reads 16 values of X, 4 rows of 4 neighbours.  The vector
sweep (:func:`gridsample._vector.sweep_cubic_2d`) computes a group of ``L``
points per vector (``L`` = 16 float32 lanes at 512 bits, 8 at 256) and gathers
each of the 16 taps: 16 gathers of ``L`` elements, every element a load.  Where a
point's 4 taps of a row are 4 contiguous elements of X, one 128-bit load reads
them all; here, for each row, ``L`` such loads are assembled into 4 vectors and
transposed in registers (the 4x4 transpose of ``unpcklps``/``unpckhps`` and
``unpcklpd``/``unpckhpd`` within each 128-bit lane) so that vector ``t`` holds
tap ``t`` of the ``L`` points, in point order -- the vectors the gathers would
have made.  Per group and row that is ``L`` loads and about ``L`` shuffles
instead of ``4 L`` gathered loads.  The sums are the same operations in the same
order as the gathering sweep's (``(w_x w_y) v`` added tap after tap, ``y``
outer, ``x`` inner; no ``fastmath``), so the results are bit-identical
(measured: 0.72-0.77x the gathering sweep's time on an Intel Xeon with
AVX-512, docs/kernels.md, "Row loads").

A point qualifies when its 4 x taps are the contiguous elements ``ox0 ...
ox0 + 3`` (x stride 1, no padding applied) and its 4 y taps are inside.  The
others -- near an edge, NaN coordinates moved outside, a padded tap -- are
summed again afterwards, one by one, by the gathering sweep's per-point sum,
which gives them the bits it always did; their group's loads read element 0 of
the plane meanwhile (in bounds: X's width is at least 4 where this sweep runs).
They are found from a bit mask per group, not by testing every point: a loop
over the points with a test was if-converted by LLVM into a masked gathering
sweep of every point (measured: 1.4x the gathering sweep alone).

Layout of the extra plan rows (``ROW_LOAD_ROWS`` int32 rows after the 8 of the
2-D cubic plan): rows 8-11 the flat offset of each row's first tap,
``oy_k + ox0`` (0 for a point that does not qualify); row 12, at the first
point of each group, the mask of the group's points that do not (bit ``p`` for
point ``j0 + p``).
"""

from __future__ import annotations

import os
import platform

from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from ._errors import GridSampleError
from ._target import vector_width

__all__ = ["ROW_LOAD_ROWS", "ROW_MISSES", "LANES", "CUBIC_LOADS",
           "cubic_loads", "row_plan", "row_group", "row_group_pair", "lowest_bit"]

#: What ``GRIDSAMPLE_CUBIC_LOADS`` may say.
CUBIC_LOADS = ("auto", "rows", "gather")

#: Rows of the 2-D cubic plan itself: x offsets, y offsets (weights alike).
_TAP_ROWS = 8
#: int32 rows this sweep adds to the plan table: 4 row starts and the groups' masks.
ROW_LOAD_ROWS = 5
_BASE = _TAP_ROWS
#: The plan row holding, at each group's first point, its mask of points that do not
#: qualify (module docstring).
ROW_MISSES = _TAP_ROWS + 4

#: Points per group: float32 lanes of the vector width gridsample compiles for.
LANES = 16 if vector_width() == 512 else 8

_auto: str | None = None


def cubic_loads() -> str:
    """How the 2-D cubic vector sweep reads float32 taps: ``"rows"`` (this module) or
    ``"gather"`` (a gather per tap).

    ``GRIDSAMPLE_CUBIC_LOADS`` forces one (``rows``, ``gather``; read at each call, for
    tests and benchmarks); ``auto`` (the default, also when unset or empty) gives rows on
    x86-64, where 128-bit loads and in-lane shuffles are cheap and a gather costs a load
    per element (measured faster with AVX-512 and with AVX2 code, docs/kernels.md, "Row
    loads"), else gathers (not measured elsewhere).  Either gives the same bits.
    """
    global _auto
    raw = os.environ.get("GRIDSAMPLE_CUBIC_LOADS", "")
    value = raw.strip().lower() or "auto"
    if value not in CUBIC_LOADS:
        raise GridSampleError(f"GRIDSAMPLE_CUBIC_LOADS={raw!r} is not allowed: use one of "
                              f"{', '.join(CUBIC_LOADS)}")
    if value != "auto":
        return value
    if _auto is None:
        _auto = "rows" if platform.machine().lower() in ("x86_64", "amd64") else "gather"
    return _auto


def _lane_masks(lanes: int):
    """Shuffle masks of the in-lane 4x4 transpose over ``lanes`` float32 lanes."""
    groups = range(lanes // 4)
    lo_ps = [i for g in groups for i in (4 * g, lanes + 4 * g, 4 * g + 1, lanes + 4 * g + 1)]
    hi_ps = [i for g in groups for i in (4 * g + 2, lanes + 4 * g + 2, 4 * g + 3,
                                         lanes + 4 * g + 3)]
    lo_pd = [i for g in groups for i in (4 * g, 4 * g + 1, lanes + 4 * g, lanes + 4 * g + 1)]
    hi_pd = [i for g in groups for i in (4 * g + 2, 4 * g + 3, lanes + 4 * g + 2,
                                         lanes + 4 * g + 3)]
    return lo_ps, hi_ps, lo_pd, hi_pd


def _flat(ty, dtype) -> bool:
    # The sweeps' flat views (layout "A" once sliced) are unit-stride by construction.
    return isinstance(ty, types.Array) and ty.ndim == 1 and ty.dtype == dtype


def _contiguous_2d(ty, dtype) -> bool:
    return (isinstance(ty, types.Array) and ty.ndim == 2 and ty.layout == "C"
            and ty.dtype == dtype)


def _emit_row_group(context, builder, oa, wa, first, planes, outs):
    """The code of :func:`_sum_row_group` for one or more channels: ``planes`` and ``outs``
    the channels' input and output arrays (LLVM structs), ``oa``/``wa`` the plan and
    weights, ``first`` the group's first point (i64).  The row starts, weights and their
    products are formed once for every channel."""
    i32, i64, fl = ir.IntType(32), ir.IntType(64), ir.FloatType()
    lanes = LANES
    row_length = builder.extract_value(oa.shape, 1)  # off and wts: (rows, block)

    def row(ary, k):  # pointer to ary[k, first]
        index = builder.add(builder.mul(ir.Constant(i64, k), row_length), first)
        return builder.gep(ary.data, [index])

    def load_vector(ptr, count):
        vec = builder.bitcast(ptr, ir.PointerType(ir.VectorType(fl, count)))
        value = builder.load(vec)
        value.align = 4
        return value

    def shuffle(a, b, mask):
        return builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(i32, len(mask)), mask))

    def concat(a, b):
        n = a.type.count
        return shuffle(a, b, list(range(2 * n)))

    def taps_of(chunks):
        # Vector k holds, in 128-bit lane g, the 4 taps of point 4 g + k; the in-lane
        # transpose then gives vector t = tap t of points 0 ... lanes - 1 in order.
        z = []
        for k in range(4):
            parts = [chunks[4 * g + k] for g in range(lanes // 4)]
            while len(parts) > 1:
                parts = [concat(parts[i], parts[i + 1]) for i in range(0, len(parts), 2)]
            z.append(parts[0])
        t0, t1 = shuffle(z[0], z[1], lo_ps), shuffle(z[2], z[3], lo_ps)
        t2, t3 = shuffle(z[0], z[1], hi_ps), shuffle(z[2], z[3], hi_ps)
        return (shuffle(t0, t1, lo_pd), shuffle(t0, t1, hi_pd),
                shuffle(t2, t3, lo_pd), shuffle(t2, t3, hi_pd))

    lo_ps, hi_ps, lo_pd, hi_pd = _lane_masks(lanes)
    wx = [load_vector(row(wa, k), lanes) for k in range(4)]
    sums = [None] * len(planes)
    for ky in range(4):
        wy = load_vector(row(wa, 4 + ky), lanes)
        starts = row(oa, _BASE + ky)
        starts = [builder.sext(builder.load(builder.gep(starts, [ir.Constant(i64, p)])), i64)
                  for p in range(lanes)]
        weights = [builder.fmul(wx[kx], wy) for kx in range(4)]
        for c, plane in enumerate(planes):
            taps = taps_of([load_vector(builder.gep(plane.data, [start]), 4) for start in starts])
            for kx in range(4):
                term = builder.fmul(weights[kx], taps[kx])
                sums[c] = term if sums[c] is None else builder.fadd(sums[c], term)
    for total, out in zip(sums, outs):
        ptr = builder.bitcast(builder.gep(out.data, [first]),
                              ir.PointerType(ir.VectorType(fl, lanes)))
        builder.store(total, ptr).align = 4


def _row_group_types(planes, outs, off, wts, j0) -> bool:
    f32 = types.float32
    return (all(_flat(a, f32) for a in planes + outs) and _contiguous_2d(off, types.int32)
            and _contiguous_2d(wts, f32) and isinstance(j0, types.Integer))


@intrinsic
def _sum_row_group(typingctx, xc, off, wts, j0, oc):
    """``oc[j0 : j0 + LANES]`` = the 2-D cubic sums of those points, read a row at a time
    (every point must qualify, or have row starts 0 and be summed again after).

    ``xc``: one channel's plane (float32, unit stride from its first element), ``off``
    the plan with its row-load rows, ``wts`` its weights (float32), ``oc`` that channel's
    output points.
    """
    if not _row_group_types((xc,), (oc,), off, wts, j0):
        return None
    sig = types.none(xc, off, wts, j0, oc)

    def codegen(context, builder, signature, args):
        (xt, offt, wt, jt, ot), arrays = signature.args, context.make_array
        _emit_row_group(context, builder, arrays(offt)(context, builder, args[1]),
                        arrays(wt)(context, builder, args[2]),
                        context.cast(builder, args[3], jt, types.int64),
                        [arrays(xt)(context, builder, args[0])],
                        [arrays(ot)(context, builder, args[4])])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _sum_row_group_pair(typingctx, xa, xb, off, wts, j0, oa, ob):
    """:func:`_sum_row_group` of two channels at once (planes ``xa``, ``xb``; outputs
    ``oa``, ``ob``)."""
    if not _row_group_types((xa, xb), (oa, ob), off, wts, j0):
        return None
    sig = types.none(xa, xb, off, wts, j0, oa, ob)

    def codegen(context, builder, signature, args):
        (at, bt, offt, wt, jt, oat, obt), arrays = signature.args, context.make_array
        _emit_row_group(context, builder, arrays(offt)(context, builder, args[2]),
                        arrays(wt)(context, builder, args[3]),
                        context.cast(builder, args[4], jt, types.int64),
                        [arrays(at)(context, builder, args[0]),
                         arrays(bt)(context, builder, args[1])],
                        [arrays(oat)(context, builder, args[5]),
                         arrays(obt)(context, builder, args[6])])
        return context.get_dummy_value()

    return sig, codegen


def _sum_row_group_interpreted(xc, off, wts, j0, oc):
    """:func:`_sum_row_group` as plain Python (``NUMBA_DISABLE_JIT=1``): the same float32
    operations in the same order."""
    for p in range(j0, j0 + LANES):
        acc = None
        for ky in range(4):
            start = int(off[_BASE + ky, p])
            for kx in range(4):
                term = (wts[kx, p] * wts[4 + ky, p]) * xc[start + kx]
                acc = term if acc is None else acc + term
        oc[p] = acc


def row_group(xc, off, wts, j0, oc):
    """``oc[j0 : j0 + LANES]``: the 2-D cubic sums of those points read a row at a time
    (float32 planes)."""
    _sum_row_group_interpreted(xc, off, wts, j0, oc)


def row_group_pair(xa, xb, off, wts, j0, oa, ob):
    """:func:`row_group` of two channels."""
    _sum_row_group_interpreted(xa, off, wts, j0, oa)
    _sum_row_group_interpreted(xb, off, wts, j0, ob)


@overload(row_group, inline="always")
def _row_group_compiled(xc, off, wts, j0, oc):
    def group(xc, off, wts, j0, oc):
        _sum_row_group(xc, off, wts, j0, oc)
    return group


@overload(row_group_pair, inline="always")
def _row_group_pair_compiled(xa, xb, off, wts, j0, oa, ob):
    def pair(xa, xb, off, wts, j0, oa, ob):
        _sum_row_group_pair(xa, xb, off, wts, j0, oa, ob)
    return pair


@intrinsic
def _plan_row_group(typingctx, off, j0):
    """Rows 8-11 of points ``j0 … j0 + LANES - 1`` of a planned 2-D cubic block (module
    docstring), in vectors; returns the mask of those that do not qualify.

    Vectors made by hand: as a loop, the stores into rows 8-11 of the table whose rows
    0-7 it reads kept LLVM from vectorizing (it cannot tell the rows apart), 2.4 ns a
    point against 0.23.
    """
    if not (_contiguous_2d(off, types.int32) and isinstance(j0, types.Integer)):
        return None
    sig = types.int64(off, j0)
    lanes = LANES

    def codegen(context, builder, signature, args):
        offt, jt = signature.args
        oa = context.make_array(offt)(context, builder, args[0])
        first = context.cast(builder, args[1], jt, types.int64)
        i32, i64 = ir.IntType(32), ir.IntType(64)
        vec = ir.VectorType(i32, lanes)
        row_length = builder.extract_value(oa.shape, 1)

        def row(k):  # pointer to off[k, first] as a vector of lanes
            index = builder.add(builder.mul(ir.Constant(i64, k), row_length), first)
            return builder.bitcast(builder.gep(oa.data, [index]), ir.PointerType(vec))

        def splat(value):
            return ir.Constant(vec, [value] * lanes)

        o = []
        for k in range(8):
            value = builder.load(row(k))
            value.align = 4
            o.append(value)
        ox0 = o[0]
        clean = builder.icmp_signed(">=", ox0, splat(0))
        for k in (1, 2, 3):  # x taps ox0 + k: contiguous, unpadded
            clean = builder.and_(clean, builder.icmp_signed("==", o[k], builder.add(ox0, splat(k))))
        rows = builder.or_(builder.or_(o[4], o[5]), builder.or_(o[6], o[7]))
        clean = builder.and_(clean, builder.icmp_signed(">=", rows, splat(0)))
        for k in range(4):
            start = builder.select(clean, builder.add(o[4 + k], ox0), splat(0))
            builder.store(start, row(_BASE + k)).align = 4
        ones = ir.Constant(ir.VectorType(ir.IntType(1), lanes), [1] * lanes)
        misses = builder.bitcast(builder.xor(clean, ones), ir.IntType(lanes))
        return builder.zext(misses, i64)

    return sig, codegen


def _plan_row_group_interpreted(off, j0):
    """:func:`_plan_row_group` as plain Python (``NUMBA_DISABLE_JIT=1``)."""
    misses = 0
    for p in range(LANES):
        j = j0 + p
        ox0 = int(off[0, j])
        clean = (ox0 >= 0 and all(int(off[k, j]) == ox0 + k for k in (1, 2, 3))
                 and (int(off[4, j]) | int(off[5, j]) | int(off[6, j]) | int(off[7, j])) >= 0)
        for k in range(4):
            off[_BASE + k, j] = int(off[4 + k, j]) + ox0 if clean else 0
        misses |= 0 if clean else 1 << p
    return misses


def row_plan(off, j0):
    """Rows 8-11 of points ``j0 … j0 + LANES - 1`` of a planned 2-D cubic block (module
    docstring); returns the mask of those that do not qualify (bit ``p``: point
    ``j0 + p``)."""
    return _plan_row_group_interpreted(off, j0)


@overload(row_plan, inline="always")
def _row_plan_compiled(off, j0):
    def plan(off, j0):
        return _plan_row_group(off, j0)
    return plan


@intrinsic
def _count_trailing_zeros(typingctx, bits):
    if not isinstance(bits, types.Integer):
        return None
    sig = types.int64(bits)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        value = context.cast(builder, args[0], signature.args[0], types.int64)
        cttz = builder.module.declare_intrinsic(
            "llvm.cttz", [i64], ir.FunctionType(i64, [i64, ir.IntType(1)]))
        return builder.call(cttz, [value, ir.Constant(ir.IntType(1), 0)])

    return sig, codegen


def lowest_bit(bits):
    """The index of the lowest set bit of ``bits`` (> 0)."""
    return (int(bits) & -int(bits)).bit_length() - 1


@overload(lowest_bit, inline="always")
def _lowest_bit_compiled(bits):
    def lowest(bits):
        return _count_trailing_zeros(bits)
    return lowest
