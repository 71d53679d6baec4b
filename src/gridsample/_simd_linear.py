"""2-D kernels written with explicit vectors: linear's single-channel one pass, the planner of
a block's plan table and the gathering sweeps over it (channel-first, and three channel-last
channels interleaved), and nearest's one pass over every channel of a point.

:mod:`gridsample._vector` writes these as scalar loops that LLVM vectorizes.  Here they do the
same operations on :data:`~gridsample._simd.LANES` points at once with
:mod:`gridsample._simd`'s vectors, for float32 and the paddings whose taps a masked gather can
read (zeros, constant, border): each tap is one gather whose mask is the tap's "inside" test,
where the LLVM-vectorized loops clamp the offset, gather and select the outside value
(docs/kernels.md, "Explicit vectors").  The steps and their order are those of
:func:`~gridsample._vector.linear_2d_taps`, :func:`~gridsample._vector._linear_2d_weights`,
:func:`~gridsample._vector._store_linear_2d` and :func:`~gridsample._vector._linear_point_sum`,
so the numbers are the same bits (nearest's: those of
:func:`~gridsample._vector._nearest_point` and :func:`~gridsample._vector.sweep_nearest_2d`).
Each function does the whole groups of lanes of a block and returns how many points it did;
the scalar loop it precedes does the rest (everything, where the vectors do not serve: other
dtypes, other CPUs, interpreted code).
"""

from __future__ import annotations

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._jit import skeleton
from ._registry import PAD_BORDER, PAD_ZEROS
from ._simd import AVAILABLE, LANES, Lanes, element_pointer
from ._taps import (
    AXIS_HIGH,
    AXIS_MUL,
    AXIS_OFFSET,
    AXIS_ONE,
    AXIS_SCALE,
    AXIS_SHIFT,
    AXIS_SIZE,
    AXIS_SUB,
)
from ._target import fast_gathers

__all__ = ["whole_groups", "count_whole_groups", "sum_linear_2d_groups",
           "plan_linear_2d_groups", "plan_grad_linear_2d_groups", "sweep_linear_2d_groups",
           "sweep_linear_2d_cl_groups", "sum_nearest_2d_groups", "sum_grad_linear_2d_groups"]

#: The vectors serve axes shorter than this: their sizes and tap indices exact in float32
#: (``S = 2**24 + 1`` is stored as ``2**24``, so the bound is strict).
_EXACT = 2 ** 24


def count_whole_groups(nb, ax0, ax1, pad):
    """How many of a block's ``nb`` points the vectors do (whole groups of ``LANES``), or 0
    where they do not serve: paddings other than zeros (constant) and border, and axes
    where the unnormalization's dropped steps matter (see :func:`_emit_taps`): size 1 with
    align_corners (``c = 0``) and B-spline coefficients (an offset); and axes of 2**24
    elements or more, whose sizes float32 may not hold."""
    zero = ax0[AXIS_HIGH] - ax0[AXIS_HIGH]
    if ((pad == PAD_ZEROS or pad == PAD_BORDER)
            and ax0[AXIS_MUL] * ax0[AXIS_SCALE] != zero
            and ax1[AXIS_MUL] * ax1[AXIS_SCALE] != zero
            and ax0[AXIS_OFFSET] == zero and ax1[AXIS_OFFSET] == zero
            and ax0[AXIS_SIZE] < _EXACT and ax1[AXIS_SIZE] < _EXACT):
        return nb - nb % LANES
    return 0


#: :func:`count_whole_groups` for the kernels; the engine asks the plain function whether the
#: vectors serve a call (one rule for both).
whole_groups = skeleton(count_whole_groups)


# The kernels, each a loop emitted into its caller by an intrinsic (no function of its own
# to compile), computing what these say, and returning how many points it did.
#
# sum_linear_2d_groups(points, done, xc, oc, ax0, ax1, st0, st1, zero, pad): plan and sum
#     the first ``done`` points (whole_groups) of a single 2-D linear channel: coordinates
#     ``points[2j], points[2j+1]``, taps read from ``xc``, sums into ``oc[j]``, a tap
#     outside reading ``zero`` (float32 X, output and points).
# plan_linear_2d_groups(points, done, off, wts, ax0, ax1, st0, st1, pad):
#     gridsample._vector.plan_linear_2d for the first ``done`` points: their offsets (-1
#     outside) and weights into the plan table ``off``, ``wts`` (float32 points and weights).
# plan_grad_linear_2d_groups(points, done, off, dws, chain, ax0, ax1, st0, st1, pad):
#     gridsample._grad_vector.plan_grad_linear_2d for the first ``done`` points: the
#     offsets (``-1`` outside), the eight weight slopes and the two chain factors of a 2-D
#     linear grid-gradient plan (float32).
# sweep_linear_2d_groups(xa, xb, off, wts, nb, oa, ob, za, zb, two):
#     gridsample._vector.sweep_linear_2d for the first ``nb - nb mod LANES`` points of a
#     planned block: channel ``xa`` into ``oa[j]`` (contiguous), a tap outside reading
#     ``za``, and with ``two`` (a constant) 1 channel ``xb`` into ``ob`` in the same pass
#     (each group's offsets, masks and weights loaded once for both, their gathers
#     overlapping) (float32).
# sweep_linear_2d_cl_groups(xn, xs_c, C, off, wts, nb, on, os_c, os_p, azero):
#     gridsample._vector.sweep_linear_2d_cl for the first ``nb - nb mod LANES`` points of a
#     planned block whose ``C == 3`` channel-last channels (``os_p == C``, ``os_c == 1``)
#     are summed together and stored interleaved, contiguously (float32; fast gathers).
# sum_nearest_2d_groups(points, done, xn, xs_c, C, on, os_c, ax0, ax1, st0, st1, azero, one,
#     nanw, pad): plan the first ``done`` points of a 2-D nearest block under zeros or
#     border (constant: zeros with ``azero`` the fills) and read each of its ``C`` channels'
#     tap, weighted ``one`` (``nanw`` for a NaN point), into ``on[c os_c + j]`` (float32).
#
# Where the vectors do not serve (other dtypes, other CPUs) each does no point and returns 0;
# interpreted, so does its plain-Python stand-in.


def _float32(*arrays) -> bool:
    """Whether the vectors serve these arrays: float32, where the vectors exist."""
    return AVAILABLE and all(isinstance(a, types.Array) and a.dtype == types.float32
                             for a in arrays)


def _table(table, dtype) -> bool:
    """Whether ``table`` is a plan table of ``dtype`` (2-D, rows contiguous)."""
    return (isinstance(table, types.Array) and table.ndim == 2 and table.layout == "C"
            and table.dtype == dtype)


def _axis(builder, row):
    """The per-axis constants (``_taps.axis_constants``, a tuple of floats) as LLVM values."""
    return [builder.extract_value(row, i) for i in range(AXIS_OFFSET + 1)]


def _emit_unnormalized(v, g, ax):
    """The unnormalized coordinate ``((g + shift) a - b) c`` of ``g`` (``_taps``)."""
    u = v.mul(v.add(g, v.splat(ax[AXIS_SHIFT])), v.splat(ax[AXIS_MUL]))
    return v.mul(v.sub(u, v.splat(ax[AXIS_SUB])), v.splat(ax[AXIS_SCALE]))


def _emit_coordinate(v, g, ax, border):
    """:func:`_emit_unnormalized`, clipped to ``[0, S-1]`` under border (``border`` an i1;
    NaN stays NaN, as ``_clip``)."""
    u = _emit_unnormalized(v, g, ax)
    nought = v.sub(v.splat(ax[AXIS_ONE]), v.splat(ax[AXIS_ONE]))
    high = v.splat(ax[AXIS_HIGH])
    clipped = v.select(v.less(u, nought), nought, u)
    return v.select(border, v.select(v.less(high, clipped), high, clipped), u)


def _emit_taps(v, g0, g1, ax0, ax1, size0, size1, s0, s1, border):
    """:func:`gridsample._vector.linear_2d_taps` and ``_linear_2d_weights`` of ``LANES``
    points (zeros or border, ``border`` an i1): the int32 offsets of the four taps (vectors),
    whether each lies inside (masks), and their weights (in the coordinates' dtype:
    ``one * d == d``)."""
    taps, masks, dx, dy = _emit_corners(v, g0, g1, ax0, ax1, size0, size1, s0, s1, border)
    one = v.splat(ax0[AXIS_ONE])
    wx0, wy0 = v.sub(one, dx), v.sub(one, dy)
    return taps, masks, (v.mul(wx0, wy0), v.mul(dx, wy0), v.mul(wx0, dy), v.mul(dx, dy))


def _emit_corners(v, g0, g1, ax0, ax1, size0, size1, s0, s1, border):
    """The taps and masks of :func:`_emit_taps` and the fractions ``dx, dy`` its weights are
    made of.  The constants are made here; LLVM hoists them out of the loop.

    The unnormalization ``((g + shift) a - b) c`` (``_taps``) drops its offset, 0 where the
    vectors serve (``u + 0`` differs from ``u`` only at ``u = -0``, which gives the same taps
    and weights), and ``_unnormalize``'s select that keeps ``±inf`` (the formula keeps it
    where ``a c > 0``).  Two more changes keep every number: a coordinate outside
    ``(-2, S+1)`` is clamped to the interval's ends (``maxps``, ``minps``) where the scalar
    loop moves it to -3 -- both are integers whose taps lie outside, so the weights are the
    same ``1, 0`` and every tap reads the outside value; a NaN coordinate stays NaN: its
    fraction, so its weights and sum, are NaN, every inside test is false and
    :meth:`~gridsample._simd.Lanes.truncate` makes its offsets ``-2**31``, never read (the
    scalar loop moves it to 0 and blends NaN into the fractions: the NaN's sign may differ).
    """
    one = v.splat(ax0[AXIS_ONE])
    nought = v.sub(one, one)
    two = v.add(one, one)
    lo = v.sub(nought, two)
    high0, high1 = v.splat(ax0[AXIS_HIGH]), v.splat(ax1[AXIS_HIGH])
    u0, u1 = _emit_coordinate(v, g0, ax0, border), _emit_coordinate(v, g1, ax1, border)
    top0, top1 = v.add(high0, two), v.add(high1, two)
    x = v.select(v.less(u0, lo), lo, u0)
    x = v.select(v.less(top0, x), top0, x)
    y = v.select(v.less(u1, lo), lo, u1)
    y = v.select(v.less(top1, y), top1, y)
    fx, fy = v.floor(x), v.floor(y)
    ix, iy = v.truncate(fx), v.truncate(fy)
    # Which taps lie inside: 0 <= i < S (S < 2**24: whole_groups), as unsigned compares
    # (a NaN point's -2**31 is outside) -- the scalar loop's 0 <= floor(x) <= S - 1 on floats.
    unit = v.splat(ir.Constant(ir.IntType(32), 1))
    n0, n1 = v.splat(size0), v.splat(size1)
    x0, x1 = v.below(ix, n0), v.below(v.add(ix, unit), n0)
    y0, y1 = v.below(iy, n1), v.below(v.add(iy, unit), n1)
    b = v.mul(iy, s1)
    b = v.add(b, ix if s0 is None else v.mul(ix, s0))
    b1 = v.add(b, s1)
    s0 = unit if s0 is None else s0
    return ((b, v.add(b, s0), b1, v.add(b1, s0)),
            (v.both(x0, y0), v.both(x1, y0), v.both(x0, y1), v.both(x1, y1)),
            v.sub(x, fx), v.sub(y, fy))


def _emit_sum(v, base, taps, masks, weights, outside):
    """``w0 v0 + w1 v1 + w2 v2 + w3 v3`` left to right (``_linear_point_sum``), each tap one
    masked gather from ``base``."""
    acc = None
    for q, m, w in zip(taps, masks, weights):
        term = v.mul(w, v.gather(base, q, m, outside))
        acc = term if acc is None else v.add(acc, term)
    return acc


class _Kernel:
    """What the codegen of a group loop needs: the arguments by name, pointers into them."""

    def __init__(self, context, builder, signature, args, names):
        self.context, self.builder = context, builder
        self.types = dict(zip(names, signature.args))
        self.values = dict(zip(names, args))
        self.v = Lanes(builder)
        self.unit_stride = False  # X's innermost stride known to be 1 (point_groups)

    def __getitem__(self, name):
        return self.values[name]

    def int32(self, name):
        return self.context.cast(self.builder, self.values[name], self.types[name], types.int32)

    def float32(self, name):
        return self.context.cast(self.builder, self.values[name], self.types[name],
                                 types.float32)

    def at(self, name, *indices):
        """A pointer to ``name[indices]`` (LLVM intp values)."""
        return element_pointer(self.context, self.builder, self.types[name], self.values[name],
                               [(i, types.intp) for i in indices])

    def intp(self, value: int):
        return ir.Constant(self.context.get_value_type(types.intp), value)

    def groups(self, count, body) -> None:
        """``body(j)`` for ``j = 0, LANES, …`` below ``count`` (an LLVM intp)."""
        with cgutils.for_range_slice(self.builder, self.intp(0), count, self.intp(LANES),
                                     count.type) as (j, _):
            body(j)

    def point_groups(self, count, body) -> None:
        """:meth:`groups` of a loop that plans points (:meth:`taps`), emitted twice: for X's
        innermost stride 1, the common case, whose offsets need one multiplication less,
        and for any stride."""
        unit = self.builder.icmp_signed("==", self.int32("st0"), ir.Constant(ir.IntType(32), 1))
        with self.builder.if_else(unit) as (contiguous, strided):
            with contiguous:
                self.unit_stride = True
                self.groups(count, body)
            with strided:
                self.unit_stride = False
                self.groups(count, body)

    def planned(self, j):
        """The four taps (-1 outside), their inside masks and their weights of the planned
        points from ``j`` on, loaded from the plan table ``off``, ``wts``."""
        v = self.v
        minus_one = v.splat(ir.Constant(ir.IntType(32), -1))
        rows = [self.intp(row) for row in range(4)]
        taps = [v.load(self.at("off", r, j), v.i32) for r in rows]
        weights = [v.load(self.at("wts", r, j), v.f32) for r in rows]
        return taps, [v.less(minus_one, q) for q in taps], weights

    def points(self, j):
        """What a planning loop reads for the points from ``j`` on: their two coordinates, the
        two axes' constants and int32 sizes, X's strides (the innermost None where it is 1)
        and whether the padding is border (an i1)."""
        b, v = self.builder, self.v
        g0, g1 = v.load_pairs(self.at("points", b.mul(j, self.intp(2))))
        border = b.icmp_signed("==", self.int32("pad"), ir.Constant(ir.IntType(32), PAD_BORDER))
        ax0, ax1 = _axis(b, self["ax0"]), _axis(b, self["ax1"])
        i32 = ir.IntType(32)
        sizes = [b.fptosi(ax[AXIS_SIZE], i32) for ax in (ax0, ax1)]
        s0 = None if self.unit_stride else v.splat(self.int32("st0"))
        return g0, g1, ax0, ax1, *sizes, s0, v.splat(self.int32("st1")), border

    def taps(self, j):
        """The taps, masks and weights of the points from ``j`` on."""
        return _emit_taps(self.v, *self.points(j))

    def index(self, name):
        """An integer argument as an LLVM intp."""
        return self.context.cast(self.builder, self.values[name], self.types[name], types.intp)

    def whole(self, nb):
        """``nb - nb mod LANES`` (LLVM intp values): the points in whole groups."""
        return self.builder.sub(nb, self.builder.srem(nb, self.intp(LANES)))


def _count(context, builder, signature, args, serves):
    """The points done: ``done`` (argument 1) where the vectors serve, else 0."""
    if not serves:
        return context.get_constant(types.intp, 0)
    return context.cast(builder, args[1], signature.args[1], types.intp)


_SUM = ("points", "done", "xc", "oc", "ax0", "ax1", "st0", "st1", "zero", "pad")


@intrinsic
def _sum_linear_2d_groups(typingctx, points, done, xc, oc, ax0, ax1, st0, st1, zero, pad):
    serves = _float32(points, xc, oc)

    def codegen(context, builder, signature, args):
        count = _count(context, builder, signature, args, serves)
        if serves:
            k = _Kernel(context, builder, signature, args, _SUM)
            outside = k.v.splat(k.float32("zero"))
            base = k.at("xc", k.intp(0))

            def group(j):
                taps, masks, weights = k.taps(j)
                k.v.store(k.at("oc", j), _emit_sum(k.v, base, taps, masks, weights, outside))

            k.point_groups(count, group)
        return count

    return types.intp(points, done, xc, oc, ax0, ax1, st0, st1, zero, pad), codegen


_PLAN = ("points", "done", "off", "wts", "ax0", "ax1", "st0", "st1", "pad")


@intrinsic
def _plan_linear_2d_groups(typingctx, points, done, off, wts, ax0, ax1, st0, st1, pad):
    serves = _float32(points) and _table(off, types.int32) and _table(wts, types.float32)

    def codegen(context, builder, signature, args):
        count = _count(context, builder, signature, args, serves)
        if serves:
            k = _Kernel(context, builder, signature, args, _PLAN)
            none = k.v.splat(ir.Constant(ir.IntType(32), -1))

            def group(j):
                taps, masks, weights = k.taps(j)
                for row, (q, m, w) in enumerate(zip(taps, masks, weights)):
                    k.v.store(k.at("off", k.intp(row), j), k.v.select(m, q, none))
                    k.v.store(k.at("wts", k.intp(row), j), w)

            k.point_groups(count, group)
        return count

    return types.intp(points, done, off, wts, ax0, ax1, st0, st1, pad), codegen


def _emit_chain(v, builder, g, ax, border):
    """:func:`gridsample._grad_vector._chain` of zeros or border (``border`` an i1): the
    scale ``a c`` of the unnormalization, times border's slope (1 strictly inside
    ``(0, S-1)``, else 0), and 0 where the unnormalized coordinate is not finite
    (``u - u`` is NaN exactly there).  The scalar rule's ``+ offset`` and its select that
    keeps ``±inf`` change neither test where the vectors serve (:func:`_emit_taps`)."""
    u = _emit_unnormalized(v, g, ax)
    one = v.splat(ax[AXIS_ONE])
    nought = v.sub(one, one)
    inside = v.both(v.less(nought, u), v.less(u, v.splat(ax[AXIS_HIGH])))
    slope = v.select(border, v.select(inside, one, nought), one)
    scale = v.splat(builder.fmul(ax[AXIS_MUL], ax[AXIS_SCALE]))
    return v.select(v.is_nan(v.sub(u, u)), nought, v.mul(scale, slope))


_GRAD_PLAN = ("points", "done", "off", "dws", "chain", "ax0", "ax1", "st0", "st1", "pad")


@intrinsic
def _plan_grad_linear_2d_groups(typingctx, points, done, off, dws, chain, ax0, ax1, st0, st1,
                                pad):
    serves = (_float32(points) and _table(off, types.int32) and _table(dws, types.float32)
              and _table(chain, types.float32))

    def codegen(context, builder, signature, args):
        count = _count(context, builder, signature, args, serves)
        if serves:
            k = _Kernel(context, builder, signature, args, _GRAD_PLAN)
            v = k.v
            none = v.splat(ir.Constant(ir.IntType(32), -1))

            def group(j):
                taps, masks, rows, chains = _emit_grad_plan(v, builder, k.points(j))
                for row, (q, m) in enumerate(zip(taps, masks)):
                    v.store(k.at("off", k.intp(row), j), v.select(m, q, none))
                for row, d in enumerate(rows):
                    v.store(k.at("dws", k.intp(row), j), d)
                for row, c in enumerate(chains):
                    v.store(k.at("chain", k.intp(row), j), c)

            k.point_groups(count, group)
        return count

    return types.intp(points, done, off, dws, chain, ax0, ax1, st0, st1, pad), codegen


def _emit_grad_plan(v, builder, points):
    """What :func:`gridsample._grad_vector.plan_grad_linear_2d` plans for ``LANES`` points
    (``points``: :meth:`_Kernel.points`): the four taps' offsets and inside masks, the
    eight weight slopes ``D_{k,a}`` (rows ``4a + k``) and the two chain factors."""
    g0, g1, ax0, ax1, *_, border = points
    taps, masks, dx, dy = _emit_corners(v, *points)
    # A NaN point: both fractions NaN, as the scalar loop's (each slope row has the other
    # axis's factor only).
    either = v.add(dx, dy)
    nan = v.is_nan(either)
    dx, dy = v.select(nan, either, dx), v.select(nan, either, dy)
    one = v.splat(ax0[AXIS_ONE])
    minus = v.sub(v.sub(one, one), one)  # -w as (-1) w: the same bits
    wx0, wy0 = v.sub(one, dx), v.sub(one, dy)
    rows = (v.mul(minus, wy0), wy0, v.mul(minus, dy), dy,
            v.mul(minus, wx0), v.mul(minus, dx), wx0, dx)
    chains = [_emit_chain(v, builder, g, ax, border) for g, ax in ((g0, ax0), (g1, ax1))]
    return taps, masks, rows, chains


_GRAD_SUM = ("points", "done", "xn", "xs_c", "C", "gn", "gs_c", "rows", "ax0", "ax1", "st0",
             "st1", "pad")


@intrinsic
def _sum_grad_linear_2d_groups(typingctx, points, done, xn, xs_c, C, gn, gs_c, rows, ax0, ax1,
                               st0, st1, pad):
    serves = _float32(points, xn, gn, rows)

    def codegen(context, builder, signature, args):
        count = _count(context, builder, signature, args, serves)
        if serves:
            k = _Kernel(context, builder, signature, args, _GRAD_SUM)
            v = k.v
            channels, xs_c, gs_c = k.index("C"), k.index("xs_c"), k.index("gs_c")
            zero = ir.Constant(v.f32, None)  # +0.0 in every lane
            sums = [cgutils.alloca_once(builder, v.f32) for _ in range(2)]
            low = ir.Constant(v.i32, [p // 2 + (p % 2) * LANES for p in range(LANES)])
            high = ir.Constant(v.i32, [LANES // 2 + p // 2 + (p % 2) * LANES
                                       for p in range(LANES)])

            def group(j):
                taps, masks, slopes, chains = _emit_grad_plan(v, builder, k.points(j))
                for acc in sums:
                    builder.store(zero, acc)
                with cgutils.for_range(builder, channels) as loop:
                    c = loop.index
                    base = k.at("xn", builder.mul(c, xs_c))
                    values = [v.gather(base, q, m, zero) for q, m in zip(taps, masks)]
                    g = v.load(k.at("gn", builder.add(builder.mul(c, gs_c), j)), v.f32)
                    for a, acc in enumerate(sums):
                        # 0 + D_{0,a} v_0 + ... + D_{3,a} v_3, left to right (_slope_sum)
                        total = zero
                        for d, value in zip(slopes[4 * a:4 * a + 4], values):
                            total = v.add(total, v.mul(d, value))
                        builder.store(v.add(builder.load(acc), v.mul(g, total)), acc)
                out = [v.mul(builder.load(acc), chain) for acc, chain in zip(sums, chains)]
                # rows[2 p + a] = out[a][p]: the two vectors interleaved.
                at = builder.mul(j, k.intp(2))
                v.store(k.at("rows", at), builder.shuffle_vector(out[0], out[1], low))
                v.store(k.at("rows", builder.add(at, k.intp(LANES))),
                        builder.shuffle_vector(out[0], out[1], high))

            k.groups(count, group)  # one copy (any stride): a first backward compiles less
        return count

    return (types.intp(points, done, xn, xs_c, C, gn, gs_c, rows, ax0, ax1, st0, st1, pad),
            codegen)


_SWEEP = ("xa", "xb", "off", "wts", "nb", "oa", "ob", "za", "zb", "two")


@intrinsic(prefer_literal=True)
def _sweep_linear_2d_groups(typingctx, xa, xb, off, wts, nb, oa, ob, za, zb, two):
    serves = (_float32(xa, xb, oa, ob) and _table(off, types.int32)
              and _table(wts, types.float32) and isinstance(two, types.IntegerLiteral))

    def codegen(context, builder, signature, args):
        if not serves:
            return context.get_constant(types.intp, 0)
        k = _Kernel(context, builder, signature, args, _SWEEP)
        count = k.whole(k.index("nb"))
        channels = [("xa", "oa", "za")] + ([("xb", "ob", "zb")] if two.literal_value else [])
        bases = [(k.at(x, k.intp(0)), o, k.v.splat(k.float32(z))) for x, o, z in channels]

        def group(j):
            taps, masks, weights = k.planned(j)
            for base, o, outside in bases:
                k.v.store(k.at(o, j), _emit_sum(k.v, base, taps, masks, weights, outside))

        k.groups(count, group)
        return count

    return types.intp(xa, xb, off, wts, nb, oa, ob, za, zb, two), codegen


_SWEEP_CL = ("xn", "xs_c", "C", "off", "wts", "nb", "on", "os_c", "os_p", "azero")

#: The channel counts whose channel-last sweep interleaves its sums in registers.
_INTERLEAVED = (3,)


@intrinsic
def _sweep_linear_2d_cl_groups(typingctx, xn, xs_c, C, off, wts, nb, on, os_c, os_p, azero):
    # Where gathers are fast only: LLVM's strided loop may read taps without gathers on
    # Zen 1-3, and these loops were not measured there.
    serves = (fast_gathers() and _float32(xn, on, azero) and _table(off, types.int32)
              and _table(wts, types.float32))

    def codegen(context, builder, signature, args):
        if not serves:
            return context.get_constant(types.intp, 0)
        k = _Kernel(context, builder, signature, args, _SWEEP_CL)
        v = k.v
        channels, os_c, os_p, xs_c = (k.index(name) for name in ("C", "os_c", "os_p", "xs_c"))
        count = k.whole(k.index("nb"))
        done = cgutils.alloca_once_value(builder, k.intp(0))
        # Channel-last output whose points are the channels apart (os_p == C, os_c == 1).
        packed = builder.and_(builder.icmp_signed("==", os_p, channels),
                              builder.icmp_signed("==", os_c, k.intp(1)))
        for C in _INTERLEAVED:
            wanted = builder.and_(packed, builder.icmp_signed("==", channels, k.intp(C)))
            with builder.if_then(wanted):
                bases = [(k.at("xn", builder.mul(k.intp(c), xs_c)),
                          v.splat(builder.load(k.at("azero", k.intp(c))))) for c in range(C)]

                def group(j, C=C, bases=bases):
                    taps, masks, weights = k.planned(j)
                    sums = [_emit_sum(v, base, taps, masks, weights, outside)
                            for base, outside in bases]
                    first = builder.mul(j, k.intp(C))
                    for i, vector in enumerate(v.interleave(sums)):
                        v.store(k.at("on", builder.add(first, k.intp(i * LANES))), vector)

                k.groups(count, group)
                builder.store(count, done)
        return builder.load(done)

    return types.intp(xn, xs_c, C, off, wts, nb, on, os_c, os_p, azero), codegen


_NEAREST = ("points", "done", "xn", "xs_c", "C", "on", "os_c", "ax0", "ax1", "st0", "st1",
            "azero", "one", "nanw", "pad")


def _emit_nearest(v, g0, g1, ax0, ax1, size0, size1, s0, s1, border):
    """:func:`gridsample._vector._nearest_point` of ``LANES`` points (zeros or border,
    ``border`` an i1): the int32 offset of each point's tap, whether it lies inside (a
    mask), and whether the point is NaN (a mask).

    The unnormalization is :func:`_emit_taps`'s.  A coordinate outside ``(-1, S)`` is
    clamped to ``[-2, S]`` (``maxps``, ``minps``) where the scalar steps move it to -3: it
    rounds to -2, -1 or S all the same, outside.  A NaN coordinate stays NaN where the
    scalar steps make it 0 first: its comparisons are false, its index ``-2**31``, so its
    tap lies outside (never read), where the scalar steps read element 0; either way the
    point's weight is NaN and so is its value (the NaN's sign may differ)."""
    one = v.splat(ax0[AXIS_ONE])
    nought = v.sub(one, one)
    lo = v.sub(nought, v.add(one, one))

    def axis(g, ax, size):
        u = _emit_coordinate(v, g, ax, border)
        top = v.add(v.splat(ax[AXIS_HIGH]), one)
        x = v.select(v.less(u, lo), lo, u)
        i = v.truncate(v.rint(v.select(v.less(top, x), top, x)))
        # 0 <= i <= S - 1 (i integral, S < 2**24) as one unsigned compare.
        return i, v.below(i, v.splat(size)), v.is_nan(u)

    ix, okx, nanx = axis(g0, ax0, size0)
    iy, oky, nany = axis(g1, ax1, size1)
    o = v.mul(iy, s1)
    o = v.add(o, ix if s0 is None else v.mul(ix, s0))
    return o, v.both(okx, oky), v.either(nanx, nany)


@intrinsic
def _sum_nearest_2d_groups(typingctx, points, done, xn, xs_c, C, on, os_c, ax0, ax1, st0, st1,
                           azero, one, nanw, pad):
    serves = (_float32(points, xn, on, azero) and one == types.float32
              and nanw == types.float32)

    def codegen(context, builder, signature, args):
        count = _count(context, builder, signature, args, serves)
        if serves:
            k = _Kernel(context, builder, signature, args, _NEAREST)
            v = k.v
            channels, xs_c, os_c = k.index("C"), k.index("xs_c"), k.index("os_c")
            one, nanw = v.splat(k.float32("one")), v.splat(k.float32("nanw"))

            def group(j):
                o, inside, nan = _emit_nearest(v, *k.points(j))
                w = v.select(nan, nanw, one)
                with cgutils.for_range(builder, channels) as loop:
                    c = loop.index
                    outside = v.splat(builder.load(k.at("azero", c)))
                    value = v.gather(k.at("xn", builder.mul(c, xs_c)), o, inside, outside)
                    v.store(k.at("on", builder.add(builder.mul(c, os_c), j)), v.mul(w, value))

            k.point_groups(count, group)
        return count

    return (types.intp(points, done, xn, xs_c, C, on, os_c, ax0, ax1, st0, st1, azero, one,
                       nanw, pad), codegen)


def _nothing(*args) -> int:
    """Interpreted (``NUMBA_DISABLE_JIT=1``): the vectors do no point."""
    return 0


if numba.config.DISABLE_JIT:
    sum_linear_2d_groups = plan_linear_2d_groups = sweep_linear_2d_groups = _nothing
    plan_grad_linear_2d_groups = _nothing
    sum_nearest_2d_groups = sweep_linear_2d_cl_groups = sum_grad_linear_2d_groups = _nothing
else:
    sum_grad_linear_2d_groups = _sum_grad_linear_2d_groups
    sum_linear_2d_groups = _sum_linear_2d_groups
    plan_linear_2d_groups = _plan_linear_2d_groups
    plan_grad_linear_2d_groups = _plan_grad_linear_2d_groups
    sweep_linear_2d_groups = _sweep_linear_2d_groups
    sum_nearest_2d_groups = _sum_nearest_2d_groups
    sweep_linear_2d_cl_groups = _sweep_linear_2d_cl_groups
