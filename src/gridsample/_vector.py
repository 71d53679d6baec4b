"""Branch-free 2-D linear and nearest kernels that LLVM turns into SIMD code.

The general kernels (:mod:`gridsample._kernels`) plan a block of points as a
*list* of the taps inside ``X`` (a per-point count, taps dropped at the
edges), which needs branches per point; LLVM keeps such loops scalar.  Here a
block's plan is a fixed ``K x block`` table, structure of arrays:

``off[k, j]``
    int32 flat offset of tap ``k`` of point ``j`` (relative to the batch item
    and channel), or ``-1`` when the tap lies outside ``X``;
``wts[k, j]``
    its weight (NaN for a NaN point, so the point's sum is NaN).

Every point is planned with the same instructions (selects instead of
branches), so the planner loop vectorizes (measured 7.7 -> 1.0 ms for 1024²
points on one core), and the sweep reads every tap with a gather::

    v_k = x[max(off_k, 0)]            always a valid index
    v_k = v_k if off_k >= 0 else 0    a tap outside reads 0 (never 0 * inf)
    y   = w_0 v_0 + w_1 v_1 + w_2 v_2 + w_3 v_3      (left to right)

which is PyTorch's own formula for its vectorized CPU kernel (masked gathers
give 0 outside), so results agree with the general kernels except that a sum
of zeros may carry the other sign.  Planner and sweep are skeletons inlined
into one compiled entry per variant, and the plan tables are the entry's
arguments, like the input, grid and output: every array argument is
``noalias`` (:func:`gridsample._jit.function`).  Without that LLVM cannot
prove a store to the output (or to one plan table) leaves the others alone
and vectorizes nothing; tables allocated inside the entry would not be known
apart either.

Offsets are int32 so that a gather takes 16 of them (AVX-512); the engine uses
these kernels only when every offset of a batch item and channel, and every
intermediate ``iy*stride_y + ix*stride_x`` with ``ix, iy`` in ``[-3, S+2]``,
fits (:func:`fits_int32`).

The scalar math repeats :mod:`gridsample._taps` (``linear_axis``,
``nearest_axis``, ``pad_continuous``) with selects; the tests compare both
kernel families on NaN, ±inf, huge and edge coordinates under every padding.
"""

from __future__ import annotations

import math

import numpy as np

from ._affine import affine_points
from ._claims import claim_task, join_shares
from ._convert import load, store
from ._int32 import add32, mul32
from ._jit import function, helper, skeleton
from ._prefetch import PREFETCH_POINTS, item_bytes, jumps, prefetch_run, worth_prefetching
from ._registry import (
    PAD_BORDER,
    PAD_MIRROR,
    PAD_REFLECTION,
    PAD_SYMMETRIC,
    PAD_WRAP,
    PAD_ZEROS,
)
from ._row_loads import (
    LANES,
    group_cubic_2d,
    group_linear_2d,
    group_linear_3d,
    pair_cubic_2d,
    pair_linear_2d,
    pair_linear_3d,
    plan_rows_cubic_2d,
    plan_rows_linear_2d,
    plan_rows_linear_3d,
    sweep_cubic_2d_cl_rows,
    sweep_linear_2d_cl_rows,
    sweep_linear_3d_cl_rows,
)
from ._simd_linear import (
    plan_linear_2d_groups,
    sum_linear_2d_groups,
    sum_nearest_2d_groups,
    sweep_linear_2d_cl_groups,
    sweep_linear_2d_groups,
    whole_groups,
)
from ._taps import (
    AXIS_HIGH,
    AXIS_MUL,
    AXIS_OFFSET,
    AXIS_ONE,
    AXIS_PAD,
    AXIS_REFLECT_LOW,
    AXIS_REFLECT_SPAN,
    AXIS_SCALE,
    AXIS_SHIFT,
    AXIS_SIZE,
    AXIS_SUB,
    axis_row,
    cubic_row,
)

__all__ = ["fits_int32", "interleave_grid", "run_affine_blocks", "run_blocks",
           "run_planar_blocks"]

_INT32_MAX = 2 ** 31 - 1


def fits_int32(sizes, strides) -> bool:
    """Whether the vector planner's int32 offsets are exact for these axes.

    Tap indices are formed in ``[-6, S+2]`` (cubic's far taps, linear's
    ``[-3, S+1]``) before the range checks drop the outside ones, so the bound
    is taken over that range.
    """
    return sum((int(s) + 6) * abs(int(st)) for s, st in zip(sizes, strides)) <= _INT32_MAX


@helper
def _unnormalize(g, ax):
    """docs/semantics.md §2 as ``_taps.unnormalize``, with a select: ``±inf`` keeps its value."""
    u = ((g + ax[AXIS_SHIFT]) * ax[AXIS_MUL] - ax[AXIS_SUB]) * ax[AXIS_SCALE] + ax[AXIS_OFFSET]
    return g if math.isinf(g) else u


@skeleton
def reflect_residue(d, ax, exact):
    """A residue of ``d`` modulo the reflection period ``P = 2 span`` (an integer: ``2(S-1)``
    or ``2S``), exact, and whether ``d`` needs the exact pass.

    The exact pass takes ``fmod(d, P)`` (exact for every finite ``d``, in ``(-P, P)`` with
    the sign of ``d``; a libm call, which does not vectorize).  The vectorized pass takes
    the floor modulo ``m = d - P k``, ``k = floor(d (1/P))``, moved by one period when it
    falls outside ``[0, P)``.  It is exact for ``|d| < 2**21`` and ``P <= 2**21`` when
    ``d >= 0`` or ``d`` is a multiple of 1/2: the rounded quotient is off by at most one
    (its error is below ``|d| 2**-23 / P < 1``), ``P k`` is an integer below ``2**22``, and
    ``d - P k`` lies within one period of ``d``'s true residue: for ``d >= 0`` it is ``d``
    itself (``k = 0``), a Sterbenz difference (``k = 1``) or smaller than ``d``; for
    multiples of 1/2 below ``2**22`` every value here is representable.  The corrections
    then land on the true residue, which is representable.  For ``d >= 0`` both passes give
    the same number; otherwise the two are congruent modulo ``P``.  Points beyond
    (``far``) are planned again by the exact pass; until then their ``m`` is some finite
    number, which the fold and the clip keep inside the axis.
    """
    span = ax[AXIS_REFLECT_SPAN]
    period = span + span
    near = ax[AXIS_ONE] * _NEAR
    far = (abs(d) >= near) | (period > near)
    if exact:
        return np.fmod(d, period), far
    m = d - period * np.floor(d * (ax[AXIS_ONE] / period))
    m = m + period if m < span - span else m
    return (m - period if m >= period else m), far


@skeleton
def has_exact_pass(pad):
    """Whether planners under ``pad`` plan points far outside again, exactly: the index
    paddings and reflection, whose vectorized modulo holds below ``2**21``.

    Two returns, not ``a or b``: with a constant ``pad`` each return is then a constant
    that the entries' inliner folds (:mod:`gridsample._inline`), and the exact pass's
    code is never compiled into the variants that do not have one."""
    if pad >= PAD_MIRROR:
        return True
    return pad == PAD_REFLECTION


@skeleton
def needs_exact_pass(g, pad, ax, zero):
    """Whether the grid value ``g`` needs the exact pass under ``pad`` (a coordinate beyond
    ``±2**21``; for reflection also a period beyond ``2**21``)."""
    far = _distant(_index_coordinate(g, ax, zero)[0], ax)
    if pad == PAD_REFLECTION:
        span = ax[AXIS_REFLECT_SPAN]
        far = far | (span + span > ax[AXIS_ONE] * _NEAR)
    return far


@skeleton
def _reflect(u, ax, zero, exact):
    """``_taps.reflect_clip`` for a finite ``u``, with selects, and whether ``u`` needs
    the exact pass (:func:`reflect_residue`)."""
    m, far = reflect_residue(abs(u - ax[AXIS_REFLECT_LOW]), ax, exact)
    return unfold(m, ax, zero), far


@skeleton
def unfold(m, ax, zero):
    """The reflected coordinate of a point ``m = |u - low| mod 2 span`` along the fold,
    clipped to ``[0, S-1]`` (0 on an axis of size 1 with align_corners)."""
    low, span, high = ax[AXIS_REFLECT_LOW], ax[AXIS_REFLECT_SPAN], ax[AXIS_HIGH]
    m = span + span - m if m > span else m
    y = m + low
    y = zero if y < zero else y
    y = high if y > high else y
    return zero if span <= zero else y


@helper
def _reflect_near(t, low, d1, r, period, span, high, zero):
    """One tap of :func:`_reflect_taps`: fold ``r + (t - low - d1)`` (``< P + 4`` in size,
    ``P >= 2``: two exact subtractions reduce it below ``P``), mirror, clip."""
    m = abs(r + ((t - low) - d1))
    m = m - period if m >= period else m
    m = m - period if m >= period else m
    m = period - m if m > span else m
    y = m + low
    y = zero if y < zero else y
    return high if y > high else y


@skeleton
def _reflect_taps(t0, t1, t2, t3, ax, zero, exact):
    """:func:`_reflect` of the four cubic taps with one ``fmod`` instead of four.

    Reflection folds ``d = t - low`` with period ``P = 2 span``, and the fold
    depends on ``d`` only modulo ``P`` and up to its sign.  With ``d1 = t1 - low``
    and ``r`` a residue of ``d1`` modulo ``P`` (exact: :func:`reflect_residue`),
    each tap's ``d_k = t_k - low`` equals ``d1 + e_k`` with ``e_k = d_k - d1``
    exact (a small integer: -1 ... 2, or what float rounding made of ``f + k``
    for huge ``f``, at most 4 in size), so ``d_k`` folds like the small, exact
    ``r + e_k``: the same bits as :func:`_reflect` on each tap, for one residue.
    """
    low, span, high = ax[AXIS_REFLECT_LOW], ax[AXIS_REFLECT_SPAN], ax[AXIS_HIGH]
    period = span + span
    d1 = t1 - low
    # The fold is even and P-periodic: any residue of d1 serves (d1 is a multiple of 1/2).
    r = reflect_residue(d1, ax, exact)[0]  # NaN for span 0, replaced below
    y0 = _reflect_near(t0, low, d1, r, period, span, high, zero)
    y1 = _reflect_near(t1, low, d1, r, period, span, high, zero)
    y2 = _reflect_near(t2, low, d1, r, period, span, high, zero)
    y3 = _reflect_near(t3, low, d1, r, period, span, high, zero)
    if span <= zero:  # an axis of size 1 with align_corners: everything maps to 0
        return zero, zero, zero, zero
    return y0, y1, y2, y3


# --- The index paddings (mirror, symmetric, wrap; docs/semantics.md §3.3) ---------------
#
# Each tap index t is padded by its floor modulo q = t mod P (period P: S for wrap, 2(S-1)
# for mirror, 2S for symmetric), then folded (mirror: P - q past S - 1; symmetric:
# P - 1 - q).  For |t| <= 2**21 the modulo is q - P floor((q + 1/2) / P) with the
# quotient taken from the reciprocal: exact in float32 (see _modulo) and vectorized.  A
# point farther out (rare: far outside the input) is planned again in a second pass, where
# the taps t_k = f + k differ from f by e_k = t_k - f, small and exact (what float rounding
# made of k for huge f), so q_k = (fmod(f, P) + e_k) mod P: one exact fmod (a libm call,
# which does not vectorize) per axis and point.  Either way the result is _taps.pad_index's,
# bit for bit.  An axis of size 1 under mirror (P = 0) takes P = 1: every index maps to 0.


#: Coordinates below this magnitude take the vectorized modulo (see above).
_NEAR = np.float32(1 << 21)

@skeleton
def _period(ax):
    """The period of the axis's index padding (coordinate dtype): ``S`` for wrap, ``2S`` for
    symmetric, ``2(S-1)`` for mirror (1 for a mirror axis of size 1, whose residues are then
    all 0, its only index).

    The padding is the axis's own code (``AXIS_PAD``), read at run time: one compiled
    variant serves mirror, symmetric, wrap and per-axis mixes of them, and a loop-invariant
    select costs the vector loop nothing measurable.
    """
    code = ax[AXIS_PAD]
    size, high, one = ax[AXIS_SIZE], ax[AXIS_HIGH], ax[AXIS_ONE]
    mirror = high + high
    mirror = one if one > mirror else mirror
    return size if code == PAD_WRAP else (mirror if code == PAD_MIRROR else size + size)


@skeleton
def _modulo(q, ax, period):
    """``q mod P`` in ``[0, P)``, for an integer-valued float ``|q| <= 2**21`` (or a residue).

    The quotient is ``floor((q + 1/2) (1/P))`` with the reciprocal hoisted out of the loop:
    ``(q + 1/2) / P`` lies at least ``1/(2P)`` from an integer, and the two roundings (of
    ``1/P`` and of the product) move it by less than ``|q + 1/2| 2**-23 / P < 1/(2P)``, so
    the floor is exact, and so is ``q - P k`` (every product stays below ``2**24``).
    """
    half = ax[AXIS_ONE] / (ax[AXIS_ONE] + ax[AXIS_ONE])
    return q - period * np.floor((q + half) * (ax[AXIS_ONE] / period))


@skeleton
def _next(m, ax, period):
    """The residue of the next index, ``(m + 1) mod P``, from ``m`` in ``[0, P)`` (P >= 1)."""
    m = m + ax[AXIS_ONE]
    return m - period if m >= period else m


@skeleton
def _flip(m, ax):
    """The padded index of the residue ``m`` in ``[0, P)``: in ``[0, S-1]``.

    One formula folds all three: ``c - |c - m|`` is ``m`` up to the centre ``c`` and
    ``2c - m`` past it.  Mirror: ``c = S - 1`` (``P - m`` past ``S - 1``); symmetric:
    ``c = S - 1/2`` (``P - 1 - m`` past ``S - 1``; half-integers are exact for the sizes the
    vector kernels take); wrap: ``c = S``, past every residue, so ``m`` itself.
    """
    code, high, size, one = ax[AXIS_PAD], ax[AXIS_HIGH], ax[AXIS_SIZE], ax[AXIS_ONE]
    centre = high if code == PAD_MIRROR else (
        size - one / (one + one) if code == PAD_SYMMETRIC else size)
    return centre - abs(centre - m)


@skeleton
def _fold(q, ax, period):
    """Padded index of ``q`` (an integer-valued float, ``|q| < P + 5``), in ``[0, S-1]``."""
    return _flip(_modulo(q, ax, period), ax)


@skeleton
def _residue(t, ax, period, exact):
    """``t`` reduced for :func:`_modulo`: ``fmod(t, P)`` in the exact pass; in the vectorized
    one ``t`` clamped to ``±2**21``, which leaves every point that pass keeps as it is and
    keeps the residues of the others (planned again by the exact pass) inside ``[0, P)``, so
    every cast of a folded index is defined."""
    if exact:
        return np.fmod(t, period)
    near = ax[AXIS_ONE] * _NEAR
    t = -near if -near > t else t
    return near if t > near else t


@skeleton
def _distant(x, ax):
    """Whether the coordinate ``x`` needs the exact pass (``|x| >= 2**21``)."""
    return abs(x) >= ax[AXIS_ONE] * _NEAR


@skeleton
def _index_coordinate(g, ax, zero):
    """The unpadded coordinate of ``g`` (0 for a NaN point) and whether it is one: under an
    index padding a NaN or infinite coordinate is a NaN point (it has no image)."""
    u = _unnormalize(g, ax)
    nan = (u != u) | math.isinf(u)
    return (zero if nan else u), nan


@skeleton
def _index_pair(x, ax, exact):
    """Linear's two padded taps ``floor(x)``, ``floor(x) + 1`` (int32) and ``floor(x)``."""
    f = np.floor(x)
    period = _period(ax)
    m0 = _modulo(_residue(f, ax, period, exact), ax, period)
    # The second tap's residue: the next one (|f| <= 2**21: f + 1 is exact), or, in the exact
    # pass, from what float rounding made of f + 1.
    m1 = (_modulo(m0 + ((f + ax[AXIS_ONE]) - f), ax, period) if exact
          else _next(m0, ax, period))
    return (np.int32(_flip(m0, ax)), np.int32(_flip(m1, ax)), f)


@helper
def _clip(u, high, zero):
    """Clip to ``[0, high]``; NaN stays NaN (the comparisons are false)."""
    u = zero if zero > u else u
    return high if high < u else u


@skeleton
def _coordinate(g, pad, ax, exact):
    """Unnormalized, padded coordinate of ``g``, whether it is a NaN point, and whether
    reflection needs the exact pass for it (:func:`reflect_residue`).

    A NaN point (docs/semantics.md §5): a NaN coordinate, or ``±inf`` under reflection (no
    image).  Its coordinate is returned as 0, so that every later step sees a
    finite number.  Border clips (``±inf`` to the edges); reflection folds.
    """
    u = _unnormalize(g, ax)
    high = ax[AXIS_HIGH]
    zero = high - high
    nan = u != u
    far = False
    if pad == PAD_BORDER:
        u = _clip(u, high, zero)
    elif pad == PAD_REFLECTION:
        nan = nan | math.isinf(u)
        u, far = _reflect(zero if nan else u, ax, zero, exact)
    return (zero if nan else u), nan, far


@skeleton
def linear_2d_taps(g0, g1, pad, ax0, ax1, st0, st1, exact):
    """One point's 2-D linear taps: four int32 offsets (``-1`` outside), the fractions
    ``dx, dy`` (NaN for a NaN point), in the coordinate dtype, and whether an index padding
    or reflection needs the exact pass for this point (``exact``: this is that pass)."""
    # Constants in the coordinate dtype: a Python int literal would turn
    # float32 math into float64 (half the vector width).
    zero, c1 = ax0[AXIS_HIGH] - ax0[AXIS_HIGH], ax0[AXIS_ONE]
    c2 = c1 + c1
    lo, far = zero - c2, zero - c2 - c1  # far: a coordinate with no tap inside
    cnan = zero / zero  # NaN in the coordinate dtype (error_model="numpy")
    if pad >= PAD_MIRROR:  # an index padding: every tap inside, padded on its own
        x, nanx = _index_coordinate(g0, ax0, zero)
        y, nany = _index_coordinate(g1, ax1, zero)
        ix0, ix1, fx = _index_pair(x, ax0, exact)
        iy0, iy1, fy = _index_pair(y, ax1, exact)
        nan = nanx | nany
        y0, y1 = mul32(iy0, st1), mul32(iy1, st1)
        x0, x1 = mul32(ix0, st0), mul32(ix1, st0)
        return (add32(y0, x0), add32(y0, x1), add32(y1, x0), add32(y1, x1),
                cnan if nan else x - fx, cnan if nan else y - fy,
                _distant(x, ax0) | _distant(y, ax1))
    x, nanx, farx = _coordinate(g0, pad, ax0, exact)
    y, nany, fary = _coordinate(g1, pad, ax1, exact)
    # Outside (-2, S+1) both taps are outside: move such x (and NaN) to -3
    # before the cast, which is then always defined.
    x = x if (x > lo) & (x < ax0[AXIS_HIGH] + c2) else far
    y = y if (y > lo) & (y < ax1[AXIS_HIGH] + c2) else far
    fx, fy = np.floor(x), np.floor(y)
    nan = nanx | nany  # a NaN point: every weight NaN
    dx = cnan if nan else x - fx
    dy = cnan if nan else y - fy
    # Which taps lie inside, from the integer-valued floats (same lanes as the coordinates).
    x0 = (fx >= zero) & (fx <= ax0[AXIS_HIGH])
    x1 = (fx >= -c1) & (fx < ax0[AXIS_HIGH])
    y0 = (fy >= zero) & (fy <= ax1[AXIS_HIGH])
    y1 = (fy >= -c1) & (fy < ax1[AXIS_HIGH])
    # int32 arithmetic (the values fit: fits_int32); Numba's own would widen to int64.
    b = add32(mul32(np.int32(fy), st1), mul32(np.int32(fx), st0))
    b1 = add32(b, st1)
    out = np.int32(-1)
    return (b if x0 & y0 else out, add32(b, st0) if x1 & y0 else out,
            b1 if x0 & y1 else out, add32(b1, st0) if x1 & y1 else out, dx, dy, farx | fary)


@skeleton
def plan_linear_2d(grid, nb, pad, axc, kc, sizes, strides, one, nanw, off, wts, coords):
    """Plan ``nb`` points of a 2-D linear block.

    ``grid`` is the block's coordinates flat, shape (2 nb,): a 1-D array
    indexed ``2j``, ``2j+1`` vectorizes; ``grid[j, 0]`` on a 2-D view did not
    (measured 1.7 vs 7.5 ms for 1024² points).
    """
    ax0, ax1 = axis_row(axc, 0), axis_row(axc, 1)
    st0, st1 = np.int32(strides[0]), np.int32(strides[1])
    # Explicit vectors where they serve (float32, zeros or border), the rest one by one.
    first = 0
    if pad == PAD_ZEROS or pad == PAD_BORDER:
        first = plan_linear_2d_groups(grid, whole_groups(nb, ax0, ax1, pad), off, wts, ax0,
                                      ax1, st0, st1, pad)
    distant = False  # an or of bools: an int64 count narrowed the loop's vectors
    for j in range(first, nb):
        o0, o1, o2, o3, dx, dy, far = linear_2d_taps(grid[2 * j], grid[2 * j + 1], pad, ax0,
                                                     ax1, st0, st1, False)
        _store_linear_2d(off, wts, j, o0, o1, o2, o3, dx, dy, one)
        distant = distant | far
    if has_exact_pass(pad) and distant:  # the exact pass for points far outside
        for j in range(nb):
            o0, o1, o2, o3, dx, dy, far = linear_2d_taps(grid[2 * j], grid[2 * j + 1], pad,
                                                         ax0, ax1, st0, st1, True)
            if far:
                _store_linear_2d(off, wts, j, o0, o1, o2, o3, dx, dy, one)


@skeleton
def _store_linear_2d(off, wts, j, o0, o1, o2, o3, dx, dy, one):
    """Point ``j``'s row of a 2-D linear plan."""
    off[0, j] = o0
    off[1, j] = o1
    off[2, j] = o2
    off[3, j] = o3
    w0, w1, w2, w3 = _linear_2d_weights(dx, dy, one)
    wts[0, j] = w0
    wts[1, j] = w1
    wts[2, j] = w2
    wts[3, j] = w3


@skeleton
def _linear_2d_weights(dx, dy, one):
    """A 2-D linear point's four weights from its fractions, in the weight dtype
    (docs/semantics.md §6.2): ``one * d`` is exact and only widens ``d`` when weights are
    wider than coordinates."""
    wx1, wy1 = one * dx, one * dy
    wx0, wy0 = one - dx, one - dy
    return wx0 * wy0, wx1 * wy0, wx0 * wy1, wx1 * wy1


@skeleton
def sum_linear_2d_one(points, n, p0, nb, xflat, xs_n, xs_c, C, strides, axc, outflat, os_n, os_c,
                      os_p, wconst, kind, azero, pad):
    """Plan and sum the ``nb`` points of a single channel's 2-D linear block (item ``n``,
    points from ``p0``) in one loop, each point's taps and weights kept in registers:
    :func:`plan_linear_2d` and :func:`sweep_linear_2d` without the plan table between them,
    the same weights summed in the same order (the same bits; weights in the coordinates'
    dtype, so the engine runs it where that is the weights' dtype).  With one channel the
    table is written and read once per point for nothing (docs/kernels.md, "One pass for
    one channel").  Float32 under zeros, constant or border: whole groups of lanes with
    explicit vectors first (:func:`gridsample._simd_linear.sum_linear_2d_groups`).
    ``xs_c``, ``C``, ``os_c`` (the channels) are the one-pass entries' common arguments:
    here ``C == 1``."""
    ax0, ax1 = axis_row(axc, 0), axis_row(axc, 1)
    st0, st1 = np.int32(strides[0]), np.int32(strides[1])
    one, zero = wconst[1], azero[0]
    xc = xflat[n * xs_n:]
    oc = outflat[n * os_n + p0 * os_p:]
    # Explicit vectors where they serve (float32, zeros or border), the rest one by one.
    first = 0
    if pad == PAD_ZEROS or pad == PAD_BORDER:
        first = sum_linear_2d_groups(points, whole_groups(nb, ax0, ax1, pad), xc, oc, ax0,
                                     ax1, st0, st1, zero, pad)
    distant = False
    for j in range(first, nb):
        o0, o1, o2, o3, dx, dy, far = linear_2d_taps(points[2 * j], points[2 * j + 1], pad, ax0,
                                                     ax1, st0, st1, False)
        store(oc, j, _linear_weighted(
            _tap_inlined(xc, kind, o0, zero), _tap_inlined(xc, kind, o1, zero),
            _tap_inlined(xc, kind, o2, zero), _tap_inlined(xc, kind, o3, zero), dx, dy, one),
            kind)
        distant = distant | far
    if has_exact_pass(pad) and distant:  # the exact pass for points far outside
        for j in range(nb):
            o0, o1, o2, o3, dx, dy, far = linear_2d_taps(points[2 * j], points[2 * j + 1], pad,
                                                         ax0, ax1, st0, st1, True)
            if far:
                store(oc, j, _linear_weighted(
                    _tap_inlined(xc, kind, o0, zero), _tap_inlined(xc, kind, o1, zero),
                    _tap_inlined(xc, kind, o2, zero), _tap_inlined(xc, kind, o3, zero), dx,
                    dy, one), kind)


@skeleton
def _linear_weighted(v0, v1, v2, v3, dx, dy, one):
    """``w0 v0 + w1 v1 + w2 v2 + w3 v3`` left to right, the weights those of
    :func:`_linear_2d_weights` (:func:`_linear_point_sum`'s sum).  The tap values are
    arguments, not the array: an array handed down to a nested skeleton made the one-pass
    loop ~10% slower."""
    w0, w1, w2, w3 = _linear_2d_weights(dx, dy, one)
    acc = w0 * v0
    acc = acc + w1 * v1
    acc = acc + w2 * v2
    return acc + w3 * v3


@skeleton
def _nearest_offset(points, j, pad, ax0, ax1, st0, st1, lo, far, zero):
    """Point ``j``'s offset (``-1`` outside) and NaN flag under ``pad``, as the 2-D nearest
    planners make them (:func:`_nearest_index_plan`, :func:`_nearest_pass`), the exact pass
    taken at once for a point far outside."""
    g0, g1 = points[2 * j], points[2 * j + 1]
    if pad >= PAD_MIRROR:
        o, nan, distant = _nearest_index_point(g0, g1, zero, pad, 2, ax0, ax1, ax0, st0, st1,
                                               st0, zero, False)
        if distant:
            o = _nearest_index_point(g0, g1, zero, pad, 2, ax0, ax1, ax0, st0, st1, st0, zero,
                                     True)[0]
        return o, nan
    o, nan, distant = _nearest_point(g0, g1, zero, pad, 2, ax0, ax1, ax0, st0, st1, st0, lo,
                                     far, False)
    if pad == PAD_REFLECTION and distant:
        o = _nearest_point(g0, g1, zero, pad, 2, ax0, ax1, ax0, st0, st1, st0, lo, far,
                           True)[0]
    return o, nan


@skeleton
def sum_nearest_2d_one(points, n, p0, nb, xflat, xs_n, xs_c, C, strides, axc, outflat, os_n,
                       os_c, os_p, wconst, kind, azero, pad):
    """Plan and sample the ``nb`` points of a 2-D nearest block (item ``n``, points from
    ``p0``) in one loop, every channel of a point at once: :func:`plan_nearest_2d` and
    :func:`sweep_nearest_2d` without the plan table between them (the same offsets and
    weights, so the same bits), into contiguous output points.  While a point's taps are
    read (misses to memory on a scattered warp), the next points are planned.  Float32
    under zeros, constant or border: whole groups of lanes with explicit vectors
    (:func:`gridsample._simd_linear.sum_nearest_2d_groups`); the rest one point at a time
    (the engine takes this entry only where the vectors serve)."""
    ax0, ax1 = axis_row(axc, 0), axis_row(axc, 1)
    st0, st1 = np.int32(strides[0]), np.int32(strides[1])
    one, nanw = wconst[1], wconst[2]
    zero = ax0[AXIS_HIGH] - ax0[AXIS_HIGH]
    lo = zero - ax0[AXIS_ONE]
    far = lo - ax0[AXIS_ONE] - ax0[AXIS_ONE]
    xn = xflat[n * xs_n:]
    on = outflat[n * os_n + p0 * os_p:]
    first = 0
    if pad == PAD_ZEROS or pad == PAD_BORDER:
        first = sum_nearest_2d_groups(points, whole_groups(nb, ax0, ax1, pad), xn, xs_c, C, on,
                                      os_c, ax0, ax1, st0, st1, azero, one, nanw, pad)
    for j in range(first, nb):
        o, nan = _nearest_offset(points, j, pad, ax0, ax1, st0, st1, lo, far, zero)
        w = nanw if nan else one
        for c in range(C):
            v = load(xn, kind, c * xs_c + o) if o >= 0 else azero[c]
            store(on, c * os_c + j, w * v, kind)


@skeleton
def _index_nearest(g, pad, ax, zero, exact):
    """Nearest's padded index ``rint(x)`` (int32) under an index padding, the NaN flag and
    whether the point needs the exact pass."""
    x, nan = _index_coordinate(g, ax, zero)
    period = _period(ax)
    i = _fold(_residue(np.rint(x), ax, period, exact), ax, period)
    return np.int32(i), nan, _distant(x, ax)


@skeleton
def _nearest_index_point(g0, g1, g2, pad, rank, ax0, ax1, ax2, st0, st1, st2, zero, exact):
    """The offset of the point at ``(g0, g1, g2)`` under an index padding (2-D or 3-D:
    ``rank``; ``g2`` unused in 2-D), its NaN flag and whether it needs the exact pass.  The
    coordinates come as values: handed the grid, the planner's loop stayed scalar (2-D
    nearest wrap took 3.4x border's time on Zen 5)."""
    ix, nanx, farx = _index_nearest(g0, pad, ax0, zero, exact)
    iy, nany, fary = _index_nearest(g1, pad, ax1, zero, exact)
    o = add32(mul32(iy, st1), mul32(ix, st0))
    nan, far = nanx | nany, farx | fary
    if rank == 3:
        iz, nanz, farz = _index_nearest(g2, pad, ax2, zero, exact)
        o = add32(o, mul32(iz, st2))
        nan, far = nan | nanz, far | farz
    return o, nan, far


@skeleton
def _third(grid, j, rank, zero):
    """Point ``j``'s third coordinate in a flat block of ``rank`` per point (``zero`` in
    2-D, where there is none to read)."""
    if rank == 3:
        return grid[3 * j + 2]
    return zero


@skeleton
def _nearest_index_plan(grid, nb, pad, rank, axc, strides, one, nanw, off, wts):
    """A nearest block (2-D or 3-D) under an index padding: the rounded index of each axis
    padded, always inside; a second, exact pass for points far outside."""
    ax0, ax1 = axis_row(axc, 0), axis_row(axc, 1)
    ax2 = axis_row(axc, 2) if rank == 3 else ax0
    st0, st1 = np.int32(strides[0]), np.int32(strides[1])
    st2 = np.int32(strides[2]) if rank == 3 else st0
    zero = ax0[AXIS_HIGH] - ax0[AXIS_HIGH]
    distant = False
    for j in range(nb):
        o, nan, far = _nearest_index_point(grid[rank * j], grid[rank * j + 1],
                                           _third(grid, j, rank, zero), pad, rank, ax0, ax1,
                                           ax2, st0, st1, st2, zero, False)
        off[0, j] = o
        wts[0, j] = nanw if nan else one
        distant = distant | far
    if distant:
        for j in range(nb):
            o, nan, far = _nearest_index_point(grid[rank * j], grid[rank * j + 1],
                                               _third(grid, j, rank, zero), pad, rank, ax0,
                                               ax1, ax2, st0, st1, st2, zero, True)
            if far:
                off[0, j] = o


@skeleton
def _nearest_axis(g, pad, ax, lo, far, exact):
    """One axis of a nearest point under an ONNX padding: the rounded index (int32), whether
    it lies inside, the NaN flag and whether reflection needs the exact pass."""
    x, nan, distant = _coordinate(g, pad, ax, exact)
    x = x if (x > lo) & (x < ax[AXIS_HIGH] + ax[AXIS_ONE]) else far
    r = np.rint(x)  # half to even
    return np.int32(r), (r >= lo - lo) & (r <= ax[AXIS_HIGH]), nan, distant


@skeleton
def _nearest_point(g0, g1, g2, pad, rank, ax0, ax1, ax2, st0, st1, st2, lo, far, exact):
    """A nearest point's offset (``-1`` outside), NaN flag and exact-pass flag (2-D or 3-D;
    ``g2`` is unused in 2-D)."""
    ix, okx, nanx, farx = _nearest_axis(g0, pad, ax0, lo, far, exact)
    iy, oky, nany, fary = _nearest_axis(g1, pad, ax1, lo, far, exact)
    o = add32(mul32(iy, st1), mul32(ix, st0))
    ok, nan, distant = okx & oky, nanx | nany, farx | fary
    if rank == 3:
        iz, okz, nanz, farz = _nearest_axis(g2, pad, ax2, lo, far, exact)
        o = add32(o, mul32(iz, st2))
        ok, nan, distant = ok & okz, nan | nanz, distant | farz
    return (o if ok else np.int32(-1)), nan, distant


@skeleton
def _nearest_pass(grid, nb, pad, rank, axc, sizes, strides, one, nanw, off, wts):
    """Plan a nearest block (2-D or 3-D: ``rank``) with an ONNX padding: one tap, weight 1
    (NaN for a NaN point); reflection plans points far outside again, exactly."""
    ax0, ax1 = axis_row(axc, 0), axis_row(axc, 1)
    ax2 = axis_row(axc, 2) if rank == 3 else ax0
    st0, st1 = np.int32(strides[0]), np.int32(strides[1])
    st2 = np.int32(strides[2]) if rank == 3 else st0
    zero, c1 = ax0[AXIS_HIGH] - ax0[AXIS_HIGH], ax0[AXIS_ONE]
    lo, far = zero - c1, zero - c1 - c1 - c1
    distant = False
    for j in range(nb):
        g2 = grid[rank * j + 2] if rank == 3 else zero
        o, nan, f = _nearest_point(grid[rank * j], grid[rank * j + 1], g2, pad, rank, ax0,
                                   ax1, ax2, st0, st1, st2, lo, far, False)
        off[0, j] = o
        wts[0, j] = nanw if nan else one
        distant = distant | f
    if pad == PAD_REFLECTION and distant:  # the exact pass for points far outside
        for j in range(nb):
            g2 = grid[rank * j + 2] if rank == 3 else zero
            o, nan, f = _nearest_point(grid[rank * j], grid[rank * j + 1], g2, pad, rank,
                                       ax0, ax1, ax2, st0, st1, st2, lo, far, True)
            if f:
                off[0, j] = o


@skeleton
def plan_nearest_2d(grid, nb, pad, axc, kc, sizes, strides, one, nanw, off, wts, coords):
    """Plan ``nb`` points of a 2-D nearest block: one tap, weight 1 (NaN for a NaN point)."""
    if pad >= PAD_MIRROR:
        _nearest_index_plan(grid, nb, pad, 2, axc, strides, one, nanw, off, wts)
    else:
        _nearest_pass(grid, nb, pad, 2, axc, sizes, strides, one, nanw, off, wts)


@skeleton
def _cubic_taps(g, pad, ax, kt, size, zero, far, cnan, exact):
    """``_taps.cubic_axis`` with selects: four int32 tap indices, weights, inside flags.

    The coordinate is not padded (docs/semantics.md §4); each tap ``floor(x) - 1 + k`` is.
    zeros: a coordinate outside ``(-3, S+2)`` reads nothing and is moved to
    ``far`` before the cast.  border: ``±inf`` clips every tap to the edge,
    weights ``(0, 1, 0, 0)``.  reflection: ``±inf`` is a NaN point.  A NaN
    point gets NaN weights and in-range taps.
    """
    one = kt[0]
    high = ax[AXIS_HIGH]
    u = _unnormalize(g, ax)
    inf = math.isinf(u)
    nan = (u != u) | (inf & (pad != PAD_ZEROS) & (pad != PAD_BORDER))
    if pad == PAD_ZEROS:
        # 3 in the coordinates' type: with an int literal these compare in float64
        c3 = ax[AXIS_ONE] + ax[AXIS_ONE] + ax[AXIS_ONE]
        x = u if (u > zero - c3) & (u < high + c3) else far  # NaN and ±inf too
    else:
        x = zero if nan else u  # border keeps ±inf: its taps clip to the edge
    f = np.floor(x)
    t = x - f
    r = one - t
    w0 = ((kt[1] * (t + one) - kt[4]) * (t + one) + kt[5]) * (t + one) - kt[6]
    w1 = (kt[2] * t - kt[3]) * t * t + kt[7]
    w2 = (kt[2] * r - kt[3]) * r * r + kt[7]
    w3 = ((kt[1] * (r + one) - kt[4]) * (r + one) + kt[5]) * (r + one) - kt[6]
    edge = inf & (pad == PAD_BORDER)
    nanw = cnan * one
    zw = one - one
    w0 = nanw if nan else (zw if edge else w0)
    w1 = nanw if nan else (one if edge else w1)
    w2 = nanw if nan else (zw if edge else w2)
    w3 = nanw if nan else (zw if edge else w3)
    c1 = ax[AXIS_ONE]
    if pad == PAD_ZEROS:
        # tap k = f - 1 + k lies inside when 1 - k <= f <= S - k (in floats: the same lanes)
        i1 = np.int32(f)
        c2 = c1 + c1
        return (add32(i1, -1), i1, add32(i1, 1), add32(i1, 2), w0, w1, w2, w3,
                (f >= c1) & (f <= high + c1), (f >= zero) & (f <= high),
                (f >= -c1) & (f <= high - c1), (f >= -c2) & (f <= high - c2))
    # Each tap formed from f directly (past 2**24 in float32, f + 1 rounds).
    t0, t1, t2, t3 = f - c1, f, f + c1, f + (c1 + c1)
    if pad == PAD_BORDER:
        t0, t1 = _clip(t0, high, zero), _clip(t1, high, zero)
        t2, t3 = _clip(t2, high, zero), _clip(t3, high, zero)
    elif pad == PAD_REFLECTION:
        t0, t1, t2, t3 = _reflect_taps(t0, t1, t2, t3, ax, zero, exact)
    else:  # an index padding: each tap's residue, then its fold
        period = _period(ax)
        r = _residue(f, ax, period, exact)
        m0 = _modulo(r + (t0 - f), ax, period)
        if exact:  # each tap from its exact offset to f (f + 1 may round to f)
            m1 = _modulo(r, ax, period)
            m2 = _modulo(r + (t2 - f), ax, period)
            m3 = _modulo(r + (t3 - f), ax, period)
        else:  # |f| <= 2**21: the taps are consecutive integers
            m1 = _next(m0, ax, period)
            m2 = _next(m1, ax, period)
            m3 = _next(m2, ax, period)
        t0, t1 = _flip(m0, ax), _flip(m1, ax)
        t2, t3 = _flip(m2, ax), _flip(m3, ax)
    i0, i1, i2, i3 = np.int32(t0), np.int32(t1), np.int32(t2), np.int32(t3)
    if pad >= PAD_MIRROR:  # folded into [0, S-1] exactly
        return i0, i1, i2, i3, w0, w1, w2, w3, True, True, True, True
    last = np.int32(size - 1)
    # ±inf under border reads only its weight-1 tap (an inf at the edge stays
    # inf, not 0 * inf = NaN), as the general kernels drop the others.
    keep = not edge
    return (_at_most(i0, last), _at_most(i1, last), _at_most(i2, last), _at_most(i3, last),
            w0, w1, w2, w3, keep, True, keep, keep)


@skeleton
def _at_most(i, last):
    """``min(i, last)`` as a select: with Numba's integer ``min`` the border and reflection
    planners' loops stayed scalar under LLVM's Intel tuning for AVX2 (7-8x their time)."""
    return i if i < last else last


@skeleton
def _store_cubic_axis(off, wts, r, j, st, out, i0, i1, i2, i3, w0, w1, w2, w3, ok0, ok1, ok2,
                      ok3):
    """Point ``j``'s rows ``r … r + 3`` of a cubic plan."""
    off[r, j] = mul32(i0, st) if ok0 else out
    off[r + 1, j] = mul32(i1, st) if ok1 else out
    off[r + 2, j] = mul32(i2, st) if ok2 else out
    off[r + 3, j] = mul32(i3, st) if ok3 else out
    wts[r, j] = w0
    wts[r + 1, j] = w1
    wts[r + 2, j] = w2
    wts[r + 3, j] = w3


@skeleton
def _plan_cubic_axis(coords, nb, pad, axis, ax, kt, size, stride, off, wts):
    """One axis of a cubic block: rows ``4 axis … 4 axis + 3`` of ``off`` and ``wts``.

    ``coords`` holds the axis's coordinates, contiguous (a planar copy:
    :func:`planar_points`).

    A tap outside gets offset ``-2**31`` (int32's minimum); the sweep forms
    the ``4**rank`` taps as sums of one offset per axis and knows a tap is
    inside when no part is negative (``(oy | ox) >= 0``: the sign bit).
    """
    st = np.int32(stride)
    zero, c1 = ax[AXIS_HIGH] - ax[AXIS_HIGH], ax[AXIS_ONE]
    far = zero - (c1 + c1 + c1 + c1 + c1)  # taps -6 ... -3: all outside
    cnan = zero / zero
    out = np.int32(-2 ** 31)
    r = 4 * axis
    distant = False
    for j in range(nb):
        g = coords[j]
        (i0, i1, i2, i3, w0, w1, w2, w3, ok0, ok1, ok2,
         ok3) = _cubic_taps(g, pad, ax, kt, size, zero, far, cnan, False)
        _store_cubic_axis(off, wts, r, j, st, out, i0, i1, i2, i3, w0, w1, w2, w3, ok0, ok1,
                          ok2, ok3)
        if has_exact_pass(pad):
            distant = distant | needs_exact_pass(g, pad, ax, zero)
    if has_exact_pass(pad) and distant:  # the exact pass for points far outside
        for j in range(nb):
            g = coords[j]
            if needs_exact_pass(g, pad, ax, zero):
                (i0, i1, i2, i3, w0, w1, w2, w3, ok0, ok1, ok2,
                 ok3) = _cubic_taps(g, pad, ax, kt, size, zero, far, cnan, True)
                _store_cubic_axis(off, wts, r, j, st, out, i0, i1, i2, i3, w0, w1, w2, w3,
                                  ok0, ok1, ok2, ok3)


@skeleton
def plan_cubic_2d(grid, nb, pad, axc, kc, sizes, strides, one, nanw, off, wts, coords):
    """Plan ``nb`` points of a 2-D cubic block: each axis's 4 taps, one axis per loop.

    One loop per axis: a loop storing all 16 taps (32 store streams into
    two arrays) stayed scalar (30 ms per 1024² points) -- LLVM gives up on
    proving that many streams apart.  Each axis's loop reads its coordinates
    from a planar copy (:func:`planar_points`).
    """
    kt = cubic_row(kc)
    planar_points(grid, nb, 2, coords)
    for a in range(2):  # one copy of the loop body: half the code to compile
        _plan_cubic_axis(coords[a * nb:], nb, pad, a, axis_row(axc, a), kt, sizes[a],
                         strides[a], off, wts)


@skeleton
def plan_cubic_3d(grid, nb, pad, axc, kc, sizes, strides, one, nanw, off, wts, coords):
    """Plan ``nb`` points of a 3-D cubic block: each axis's 4 taps (rows ``4 a … 4 a + 3``),
    read from a planar copy of the coordinates."""
    kt = cubic_row(kc)
    planar_points(grid, nb, 3, coords)
    for a in range(3):
        _plan_cubic_axis(coords[a * nb:], nb, pad, a, axis_row(axc, a), kt, sizes[a],
                         strides[a], off, wts)


@skeleton
def _linear_axis_taps(g, pad, ax, st, lo, far, hi, cnan, out, exact):
    """One axis of a linear point under an ONNX padding: its two tap offsets (``-2**31``
    outside), the fraction ``d`` (NaN for a NaN point) and the exact-pass flag."""
    x, nan, distant = _coordinate(g, pad, ax, exact)
    x = x if (x > lo) & (x < hi) else far
    f = np.floor(x)
    d = cnan if nan else x - f
    zero, high = lo - lo, ax[AXIS_HIGH]
    ok0, ok1 = (f >= zero) & (f <= high), (f >= zero - ax[AXIS_ONE]) & (f < high)
    o = mul32(np.int32(f), st)
    return (o if ok0 else out), (add32(o, st) if ok1 else out), d, distant


@skeleton
def _linear_axis_pass(coords, nb, pad, axis, ax, one, size, stride, off, wts):
    """Plan one axis of a linear block with an ONNX padding (reflection: points far
    outside planned again, exactly); coordinates as in :func:`_plan_linear_axis`."""
    st = np.int32(stride)
    zero, c1 = ax[AXIS_HIGH] - ax[AXIS_HIGH], ax[AXIS_ONE]
    c2 = c1 + c1
    lo, far, hi = zero - c2, zero - c2 - c1, ax[AXIS_HIGH] + c2
    cnan = zero / zero
    out = np.int32(-2 ** 31)
    r = 2 * axis
    distant = False
    for j in range(nb):
        o0, o1, d, f = _linear_axis_taps(coords[j], pad, ax, st, lo, far, hi,
                                         cnan, out, False)
        off[r, j] = o0
        off[r + 1, j] = o1
        wts[r, j] = one - d
        wts[r + 1, j] = one * d
        distant = distant | f
    if pad == PAD_REFLECTION and distant:  # the exact pass for points far outside
        for j in range(nb):
            o0, o1, d, f = _linear_axis_taps(coords[j], pad, ax, st, lo, far,
                                             hi, cnan, out, True)
            if f:
                off[r, j] = o0
                off[r + 1, j] = o1
                wts[r, j] = one - d
                wts[r + 1, j] = one * d


@skeleton
def _plan_linear_axis(coords, nb, pad, axis, ax, one, size, stride, off, wts):
    """One axis of a linear block: its two taps in rows ``2 axis``, ``2 axis + 1``; its
    coordinates contiguous in ``coords`` (as in :func:`_plan_cubic_axis`).

    A tap outside gets offset ``-2**31``; the sweep adds the axes' offsets
    and knows a tap is inside when no part is negative (the sign bit of
    their bitwise or).  Weights ``1 - d`` and ``d`` in the weight dtype; a
    NaN point gets NaN weights (its products are NaN).
    """
    if pad >= PAD_MIRROR:  # an index padding: both taps inside, padded on their own
        st = np.int32(stride)
        zero = ax[AXIS_HIGH] - ax[AXIS_HIGH]
        cnan = zero / zero
        r = 2 * axis
        distant = False
        for j in range(nb):
            x, nan = _index_coordinate(coords[j], ax, zero)
            i0, i1, f = _index_pair(x, ax, False)
            d = cnan if nan else x - f
            off[r, j] = mul32(i0, st)
            off[r + 1, j] = mul32(i1, st)
            wts[r, j] = one - d
            wts[r + 1, j] = one * d
            distant = distant | _distant(x, ax)
        if distant:  # the exact pass for points far outside (their weights stand)
            for j in range(nb):
                x, nan = _index_coordinate(coords[j], ax, zero)
                if _distant(x, ax):
                    i0, i1, f = _index_pair(x, ax, True)
                    off[r, j] = mul32(i0, st)
                    off[r + 1, j] = mul32(i1, st)
        return
    _linear_axis_pass(coords, nb, pad, axis, ax, one, size, stride, off, wts)


@skeleton
def plan_linear_3d(grid, nb, pad, axc, kc, sizes, strides, one, nanw, off, wts, coords):
    """Plan a 3-D linear block, one loop per axis, from a planar copy of the coordinates
    (see :func:`plan_cubic_2d`)."""
    planar_points(grid, nb, 3, coords)
    for a in range(3):  # one copy of the loop body
        _plan_linear_axis(coords[a * nb:], nb, pad, a, axis_row(axc, a), one, sizes[a],
                          strides[a], off, wts)


@skeleton
def plan_nearest_3d(grid, nb, pad, axc, kc, sizes, strides, one, nanw, off, wts, coords):
    """Plan a 3-D nearest block: one tap, weight 1 (NaN for a NaN point)."""
    if pad >= PAD_MIRROR:
        _nearest_index_plan(grid, nb, pad, 3, axc, strides, one, nanw, off, wts)
    else:
        _nearest_pass(grid, nb, pad, 3, axc, sizes, strides, one, nanw, off, wts)


@helper
def _tap(xc, kind, q, zero):
    """``x[q]``, or ``zero`` for a tap outside (``q < 0``; the read itself stays in bounds)."""
    v = load(xc, kind, q if q > 0 else np.int32(0))  # int32: 16 lanes per gather
    return v if q >= 0 else zero


@skeleton
def _tap_inlined(xc, kind, q, zero):
    """:func:`_tap` inlined by Numba, for the sums whose loops LLVM must see whole.

    There the taps become gathers; a call per tap kept the 2-D cubic sweep at
    scalar loads (2x faster on smooth grids, 1.2-1.5x slower on random ones,
    Zen 3); gathers match the previous kernels on both.
    """
    v = load(xc, kind, q if q > 0 else np.int32(0))
    return v if q >= 0 else zero


@skeleton
def _tap_planar(xc, kind, q, c, zero):
    """:func:`_tap_inlined` as the point sums read a tap: ``xc`` starts at the channel
    (``c`` unused), the offset stays int32 (16 lanes per gather)."""
    return _tap_inlined(xc, kind, q, zero)


@skeleton
def _tap_interleaved(xn, kind, q, c, zero):
    """Channel ``c`` of the pixel at offset ``q`` (its first channel) in channel-last memory
    whose channels are contiguous (``xn`` starts at the batch item), or ``zero`` for a tap
    outside: consecutive ``c`` read consecutive elements, so a loop over the channels loads
    vectors."""
    v = load(xn, kind, (q if q > 0 else np.int32(0)) + c)
    return v if q >= 0 else zero


@skeleton
def _linear_point_sum(xc, kind, off, wts, j, zero, c, tap):
    """A 2-D linear point's sum: ``w0 v0 + w1 v1 + w2 v2 + w3 v3``, left to right, each tap
    read by ``tap`` (:func:`_tap_planar`, or :func:`_tap_interleaved` for channel ``c``)."""
    acc = zero
    for k in range(4):
        term = wts[k, j] * tap(xc, kind, off[k, j], c, zero)
        acc = term if k == 0 else acc + term
    return acc


@helper
def _linear_sum(xc, kind, off, wts, j, zero):
    """:func:`_linear_point_sum` compiled apart, for the gathering sweeps' loops (inlined
    by LLVM)."""
    return _linear_point_sum(xc, kind, off, wts, j, zero, 0, _tap_planar)


@skeleton
def sweep_linear_2d(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """All channels of a planned linear block into contiguous output points (channel-first,
    ``os_p == 1``): ``y = w0 v0 + w1 v1 + w2 v2 + w3 v3``, two channels per pass (they
    share the loads of offsets and weights), then the odd one.

    ``azero[c]`` is what a tap outside reads in channel ``c`` (0, or the fill of
    ``"constant"``); so in every sweep here.  Each sweep has a form for strided output
    points (channel-last), ``sweep_*_cl``, and each form an entry of its own
    (``_vector_entries``): a call compiles only the loops its layout runs.
    """
    for c0 in range(0, C - 1, 2):
        xa = xflat[c0 * xs_c:]
        xb = xflat[(c0 + 1) * xs_c:]
        oa = outflat[c0 * os_c:]
        ob = outflat[(c0 + 1) * os_c:]
        za, zb = azero[c0], azero[c0 + 1]
        # Explicit vectors where they serve (float32), the rest one by one.
        first = sweep_linear_2d_groups(xa, xb, off, wts, nb, oa, ob, za, zb, 1)
        for j in range(first, nb):
            store(oa, j, _linear_sum(xa, kind, off, wts, j, za), kind)
            store(ob, j, _linear_sum(xb, kind, off, wts, j, zb), kind)
    if C % 2:
        c = C - 1
        zero = azero[c]
        xc = xflat[c * xs_c:]
        oc = outflat[c * os_c:]
        first = sweep_linear_2d_groups(xc, xc, off, wts, nb, oc, oc, zero, zero, 0)
        for j in range(first, nb):
            store(oc, j, _linear_sum(xc, kind, off, wts, j, zero), kind)


@skeleton
def sweep_linear_2d_cl(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """:func:`sweep_linear_2d` into output points ``os_p`` elements apart, a channel at a
    time.  Float32 channel-last output of 3 channels, where gathers are fast (not Zen 1-3):
    whole groups of lanes with explicit vectors first, every channel of a group summed and
    interleaved in registers, then stored contiguously
    (:func:`gridsample._simd_linear.sweep_linear_2d_cl_groups`).  Where the engine gave the
    plan table the row loads' rows (float32, 2 to 4 channels:
    :func:`gridsample._engine.cl_rows_apply`), each point's rows of taps are read as runs
    of ``2 C`` elements instead (:func:`gridsample._row_loads.sweep_linear_2d_cl_rows`)."""
    # (0: not served, the plan table without the row loads' rows among them)
    if sweep_linear_2d_cl_rows(xflat, xs_c, C, off, wts, nb, outflat, os_c, os_p, azero) == 0:
        first = sweep_linear_2d_cl_groups(xflat, xs_c, C, off, wts, nb, outflat, os_c, os_p,
                                          azero)
        if first == 0:
            _sweep_cl_from(xflat, xs_c, off, wts, 0, nb, C, outflat, os_c, os_p, kind, azero)
        else:
            _sweep_cl_from(xflat, xs_c, off, wts, first, nb, C, outflat, os_c, os_p, kind,
                           azero)


@skeleton
def _sweep_cl_from(xflat, xs_c, off, wts, first, nb, C, outflat, os_c, os_p, kind, azero):
    """Points ``first … nb - 1`` of :func:`sweep_linear_2d_cl`'s strided loop.  Its caller
    passes a literal 0 where the vectors did nothing: a loop that starts at a run-time value
    compiled into code 1.3-1.6x slower (docs/kernels.md, "Channel-last")."""
    for c in range(C):
        zero = azero[c]
        xc = xflat[c * xs_c:]
        oc = outflat[c * os_c:]
        for j in range(first, nb):
            store(oc, j * os_p, _linear_sum(xc, kind, off, wts, j, zero), kind)





@skeleton
def _cubic_tap(off, wts, j, ky, kx):
    """Tap ``(ky, kx)`` of point ``j`` of a 2-D cubic plan: its offset ``oy + ox`` (int32;
    ``-1`` where either axis's tap lies outside) and its weight ``w_x w_y``."""
    oy, ox = off[4 + ky, j], off[kx, j]
    q = np.int32(oy + ox) if (oy | ox) >= 0 else np.int32(-1)  # Numba adds in int64
    return q, wts[kx, j] * wts[4 + ky, j]


@skeleton
def _joined(oz, oy, ox):
    """A 3-D tap's offset from its axes' (``-1`` where any of them is: the tap is
    outside)."""
    return np.int32(oz + oy + ox) if (oz | oy | ox) >= 0 else np.int32(-1)


@skeleton
def _tap_3d(off, wts, j, T, kz, ky, kx):
    """Tap ``(kz, ky, kx)`` of point ``j`` of a per-axis 3-D plan of ``T`` rows per axis:
    its offset ``oz + oy + ox`` (int32; ``-1`` where any axis's tap lies outside) and its
    weight ``(w_x w_y) w_z``."""
    q = _joined(off[2 * T + kz, j], off[T + ky, j], off[kx, j])
    return q, (wts[kx, j] * wts[T + ky, j]) * wts[2 * T + kz, j]


@skeleton
def _cubic_sum(xc, kind, off, wts, j, zero, c, tap):
    """``sum w_x w_y x[oy + ox]`` over the 16 taps, ``y`` outer, ``x`` inner (plan order),
    each tap read by ``tap`` (as :func:`_linear_point_sum`'s)."""
    acc = zero
    for ky in range(4):
        for kx in range(4):
            q, w = _cubic_tap(off, wts, j, ky, kx)
            term = w * tap(xc, kind, q, c, zero)
            if ky == 0 and kx == 0:
                acc = term
            else:
                acc += term
    return acc


@skeleton
def _cubic_sum_pair(xa, xb, kind, off, wts, j, za, zb):
    """:func:`_cubic_sum` of two channels at once: each tap's offset, inside test and
    weight ``w_x w_y`` are formed once for both (each sum keeps its own order)."""
    acc_a, acc_b = za, zb
    for ky in range(4):
        for kx in range(4):
            q, w = _cubic_tap(off, wts, j, ky, kx)
            term_a = w * _tap_inlined(xa, kind, q, za)
            term_b = w * _tap_inlined(xb, kind, q, zb)
            if ky == 0 and kx == 0:
                acc_a, acc_b = term_a, term_b
            else:
                acc_a += term_a
                acc_b += term_b
    return acc_a, acc_b


@skeleton
def sweep_cubic_2d(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """All channels of a planned cubic block into channel-first output (``os_p == 1``):
    the 16 taps summed in plan order, two channels per pass (:func:`_cubic_sum_pair`),
    each tap gathered (float32 X with contiguous rows has :func:`sweep_cubic_2d_rows`).

    Channel-last output has a sweep, and so an entry, of its own
    (:func:`sweep_cubic_2d_cl`): a call compiles only the loops its layout runs.
    """
    for c0 in range(0, C - 1, 2):
        xa = xflat[c0 * xs_c:]
        xb = xflat[(c0 + 1) * xs_c:]
        oa = outflat[c0 * os_c:]
        ob = outflat[(c0 + 1) * os_c:]
        za, zb = azero[c0], azero[c0 + 1]
        for j in range(nb):
            a, b = _cubic_sum_pair(xa, xb, kind, off, wts, j, za, zb)
            store(oa, j, a, kind)
            store(ob, j, b, kind)
    if C % 2:
        c = C - 1
        zero = azero[c]
        xc = xflat[c * xs_c:]
        oc = outflat[c * os_c:]
        for j in range(nb):
            store(oc, j, _cubic_sum(xc, kind, off, wts, j, zero, 0, _tap_planar), kind)


@skeleton
def sweep_cubic_2d_cl(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """:func:`sweep_cubic_2d` into output whose points are ``os_p`` elements apart
    (channel-last), a channel at a time; where the engine gave the plan table the row loads'
    rows (float32, 2 to 4 channels: :func:`gridsample._engine.cl_rows_apply`), each point's
    rows of taps read as runs of ``4 C`` elements (:func:`gridsample._row_loads.
    sweep_cubic_2d_cl_rows`)."""
    if sweep_cubic_2d_cl_rows(xflat, xs_c, C, off, wts, nb, outflat, os_c, os_p, azero) == 0:
        for c in range(C):
            zero = azero[c]
            xc = xflat[c * xs_c:]
            oc = outflat[c * os_c:]
            for j in range(nb):
                store(oc, j * os_p, _cubic_sum(xc, kind, off, wts, j, zero, 0, _tap_planar),
                      kind)





@skeleton
def _sum_3d(xc, kind, off, wts, j, zero, T, c, tap):
    """The ``T**3`` taps of a per-axis 3-D plan (``T`` rows per axis: 2 linear, 4 cubic),
    ``z`` outer, ``x`` inner, weights ``(w_x w_y) w_z`` (the general order), each tap read
    by ``tap`` (as :func:`_linear_point_sum`'s)."""
    acc = zero
    for kz in range(T):
        for ky in range(T):
            for kx in range(T):
                q, w = _tap_3d(off, wts, j, T, kz, ky, kx)
                term = w * tap(xc, kind, q, c, zero)
                if kz == 0 and ky == 0 and kx == 0:
                    acc = term
                else:
                    acc += term
    return acc


@skeleton
def _sweep_3d_cl(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero, T):
    """All channels of a planned 3-D block with ``T`` taps per axis into output points
    ``os_p`` elements apart (channel-last), a channel at a time."""
    for c in range(C):
        zero = azero[c]
        xc = xflat[c * xs_c:]
        oc = outflat[c * os_c:]
        for j in range(nb):
            store(oc, j * os_p, _sum_3d(xc, kind, off, wts, j, zero, T, 0, _tap_planar),
                  kind)


@skeleton
def sweep_linear_3d(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """All channels of a planned 3-D linear block (8 taps) into contiguous output points,
    a channel at a time (two at a time, as cubic does, took 1.12x the time on a random
    warp: its gathers miss L1)."""
    for c in range(C):
        zero = azero[c]
        xc = xflat[c * xs_c:]
        oc = outflat[c * os_c:]
        for j in range(nb):
            store(oc, j, _sum_3d(xc, kind, off, wts, j, zero, 2, 0, _tap_planar),
                  kind)


@skeleton
def sweep_linear_3d_cl(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """:func:`sweep_linear_3d` into output points ``os_p`` elements apart; where the engine
    gave the plan table the row loads' rows (float32, 2 to 4 channels:
    :func:`gridsample._engine.cl_rows_apply`), each point's rows of taps read as runs of
    ``2 C`` elements (:func:`gridsample._row_loads.sweep_linear_3d_cl_rows`)."""
    if sweep_linear_3d_cl_rows(xflat, xs_c, C, off, wts, nb, outflat, os_c, os_p, azero) == 0:
        _sweep_3d_cl(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero, 2)


@skeleton
def _sum_3d_pair(xa, xb, kind, off, wts, j, za, zb, T):
    """:func:`_sum_3d` of two channels at once, each tap's offset, inside test and weight
    formed once for both (each sum keeps its own order)."""
    acc_a, acc_b = za, zb
    for kz in range(T):
        for ky in range(T):
            for kx in range(T):
                q, w = _tap_3d(off, wts, j, T, kz, ky, kx)
                term_a = w * _tap_inlined(xa, kind, q, za)
                term_b = w * _tap_inlined(xb, kind, q, zb)
                if kz == 0 and ky == 0 and kx == 0:
                    acc_a, acc_b = term_a, term_b
                else:
                    acc_a += term_a
                    acc_b += term_b
    return acc_a, acc_b


@skeleton
def sweep_cubic_3d(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """All channels of a planned 3-D cubic block (64 taps) into contiguous output points,
    two channels per pass, as :func:`sweep_cubic_2d`."""
    for c0 in range(0, C - 1, 2):
        xa = xflat[c0 * xs_c:]
        xb = xflat[(c0 + 1) * xs_c:]
        oa = outflat[c0 * os_c:]
        ob = outflat[(c0 + 1) * os_c:]
        za, zb = azero[c0], azero[c0 + 1]
        for j in range(nb):
            a, b = _sum_3d_pair(xa, xb, kind, off, wts, j, za, zb, 4)
            store(oa, j, a, kind)
            store(ob, j, b, kind)
    if C % 2:
        c = C - 1
        zero = azero[c]
        xc = xflat[c * xs_c:]
        oc = outflat[c * os_c:]
        for j in range(nb):
            store(oc, j, _sum_3d(xc, kind, off, wts, j, zero, 4, 0, _tap_planar),
                  kind)


@skeleton
def sweep_cubic_3d_cl(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """:func:`sweep_cubic_3d` into output points ``os_p`` elements apart."""
    _sweep_3d_cl(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero, 4)


@skeleton
def sweep_nearest_2d(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """All channels of a planned nearest block into contiguous output points: ``y = w0 v0``."""
    for c in range(C):
        zero = azero[c]
        xc = xflat[c * xs_c:]
        oc = outflat[c * os_c:]
        for j in range(nb):
            store(oc, j, wts[0, j] * _tap(xc, kind, off[0, j], zero), kind)


@skeleton
def sweep_nearest_2d_cl(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """:func:`sweep_nearest_2d` into output points ``os_p`` elements apart."""
    for c in range(C):
        zero = azero[c]
        xc = xflat[c * xs_c:]
        oc = outflat[c * os_c:]
        for j in range(nb):
            store(oc, j * os_p, wts[0, j] * _tap(xc, kind, off[0, j], zero), kind)





# Channel-last memory of many channels (from ``_engine.INTERLEAVED_MIN_CHANNELS``, the
# channels contiguous: ``xs_c == os_c == 1``): a point at a time, each tap's ``C`` channels
# read by contiguous loads (a loop over the channels that LLVM vectorizes) and the point's
# ``C`` results stored together; each channel's sum is the planar sweeps' (the same terms in
# the same order: the same bits). The sweeps above would read every tap's cache line once
# per channel, and the general kernels' interleaved sweep made an array view per tap. Where
# X is large, each sweep asks, a run of ``PREFETCH_POINTS`` points at a time, for the lines
# of the taps of the run ``PREFETCH_POINTS`` ahead that jump away from their predecessors
# (gridsample._prefetch). The output index is unsigned (Numba wraps a signed index around,
# lane by lane: the stores became scatters).

@skeleton
def _prefetch_ahead(xn, off, first, nb, rows, C):
    """Ask for the lines of the taps (``rows`` fused offsets, ``-1`` outside) of the run of
    ``PREFETCH_POINTS`` points from ``first`` on that the block has and that jump away from
    the point before them (:func:`gridsample._prefetch.jumps`).  Called once for a run of
    points (``first`` the next run's), where the sweep prefetches
    (:func:`gridsample._prefetch.worth_prefetching`), so that the point loop itself holds no
    prefetch code: an inlined call that receives arrays takes and drops a reference to each,
    atomic updates that LLVM keeps in a loop with branches (docs/kernels.md, "Channel-last:
    the point loop's hidden costs")."""
    for jd in range(first, min(first + PREFETCH_POINTS, nb)):
        if jumps(off[0, jd], off[0, jd - 1], item_bytes(xn)):
            for k in range(rows):
                q = off[k, jd]
                if q >= 0:
                    prefetch_run(xn, q, C)


@skeleton
def _prefetch_ahead_3d(xn, off, first, nb, C):
    """:func:`_prefetch_ahead` for the 8 taps of points of a 3-D linear plan (per-axis
    offsets, each ``-1`` outside: a tap is outside where any of its three is)."""
    for jd in range(first, min(first + PREFETCH_POINTS, nb)):
        if jumps(_joined(off[4, jd], off[2, jd], off[0, jd]),
                 _joined(off[4, jd - 1], off[2, jd - 1], off[0, jd - 1]), item_bytes(xn)):
            for kz in range(2):
                for ky in range(2):
                    for kx in range(2):
                        q = _joined(off[4 + kz, jd], off[2 + ky, jd], off[kx, jd])
                        if q >= 0:
                            prefetch_run(xn, q, C)


@skeleton
def sweep_linear_2d_il(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """All channels of a planned 2-D linear block, channel-last with contiguous channels
    (``xs_c == os_c == 1``; points ``os_p`` apart): :func:`_linear_point_sum` of each
    channel, the channels innermost."""
    ask = worth_prefetching(xflat)
    for j0 in range(0, nb, PREFETCH_POINTS):
        if ask:
            _prefetch_ahead(xflat, off, j0 + PREFETCH_POINTS, nb, 4, C)
        for j in range(j0, min(j0 + PREFETCH_POINTS, nb)):
            for c in range(C):
                store(outflat, np.uint64(j * os_p + c),
                      _linear_point_sum(xflat, kind, off, wts, j, azero[c], c,
                                        _tap_interleaved), kind)


@skeleton
def sweep_cubic_2d_il(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """:func:`sweep_linear_2d_il` for a planned 2-D cubic block (:func:`_cubic_sum`: its
    taps ``y`` outer, ``x`` inner, weights ``w_x w_y``), without prefetch: 16 taps a point
    are work enough to hide the misses, and the requests cost more than they saved
    (docs/kernels.md, "Channel-last with many channels")."""
    for j in range(nb):
        for c in range(C):
            store(outflat, np.uint64(j * os_p + c),
                  _cubic_sum(xflat, kind, off, wts, j, azero[c], c, _tap_interleaved), kind)


@skeleton
def sweep_linear_3d_il(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """:func:`sweep_linear_2d_il` for a planned 3-D linear block (:func:`_sum_3d`).  3-D
    cubic has none (``tools/gen_vector_entries.py``, ``NO_INTERLEAVED_KERNELS``)."""
    ask = worth_prefetching(xflat)
    for j0 in range(0, nb, PREFETCH_POINTS):
        if ask:
            _prefetch_ahead_3d(xflat, off, j0 + PREFETCH_POINTS, nb, C)
        for j in range(j0, min(j0 + PREFETCH_POINTS, nb)):
            for c in range(C):
                store(outflat, np.uint64(j * os_p + c),
                      _sum_3d(xflat, kind, off, wts, j, azero[c], 2, c, _tap_interleaved),
                      kind)


@skeleton
def sweep_nearest_2d_il(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """:func:`sweep_linear_2d_il` for a planned nearest block (2-D or 3-D: one tap)."""
    ask = worth_prefetching(xflat)
    for j0 in range(0, nb, PREFETCH_POINTS):
        if ask:
            _prefetch_ahead(xflat, off, j0 + PREFETCH_POINTS, nb, 1, C)
        for j in range(j0, min(j0 + PREFETCH_POINTS, nb)):
            q, w = off[0, j], wts[0, j]
            for c in range(C):
                store(outflat, np.uint64(j * os_p + c),
                      w * _tap_interleaved(xflat, kind, q, c, azero[c]), kind)


#: 3-D nearest sweeps exactly as 2-D: one tap, its offset already formed.
sweep_nearest_3d = sweep_nearest_2d
sweep_nearest_3d_cl = sweep_nearest_2d_cl
sweep_nearest_3d_il = sweep_nearest_2d_il


@skeleton
def _block_of(task, nblk, block, P):
    """Task ``task`` of ``N x nblk`` blocks of ``block`` of ``P`` points: its batch item,
    first point and number of points."""
    n = task // nblk
    p0 = (task - n * nblk) * block
    return n, p0, min(block, P - p0)


# Sweeps that read each point's taps a row at a time (gridsample._row_loads), for float32 X
# whose rows are contiguous: entries of their own (``*_rows``), so that no other element
# type compiles them.  Each: the groups' row starts and misses, then the group sums, two
# channels per pass; a group's misses are gathered inside its sum (the same bits as the
# gathering sweep's), the last group ends with the block.

@skeleton
def sweep_cubic_2d_rows(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """:func:`sweep_cubic_2d` reading each row of 4 taps with one 128-bit load."""
    _sweep_rows(xflat, xs_c, off, wts, nb, C, outflat, os_c, azero, plan_rows_cubic_2d,
                group_cubic_2d, pair_cubic_2d)


@skeleton
def sweep_linear_2d_rows(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """:func:`sweep_linear_2d` reading each row of 2 taps with one 64-bit load."""
    _sweep_rows(xflat, xs_c, off, wts, nb, C, outflat, os_c, azero, plan_rows_linear_2d,
                group_linear_2d, pair_linear_2d)


@skeleton
def sweep_linear_3d_rows(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """:func:`sweep_linear_3d` reading each row of 2 taps with one 64-bit load."""
    _sweep_rows(xflat, xs_c, off, wts, nb, C, outflat, os_c, azero, plan_rows_linear_3d,
                group_linear_3d, pair_linear_3d)


@skeleton
def _sweep_rows(xflat, xs_c, off, wts, nb, C, outflat, os_c, azero, plan_rows, group, pair):
    """A row-load sweep from its kernel's functions (gridsample._row_loads): the groups'
    row starts and masks (``plan_rows``), then the group sums two channels per pass
    (``pair``, then ``group`` for an odd one).  ``off``'s rows are whole groups wide
    (:func:`gridsample._row_loads.table_width`)."""
    last = off.shape[0] - 1  # the groups' masks
    for j0 in range(0, nb, LANES):
        off[last, j0] = plan_rows(off, j0, nb)
    # The views made once per channel, not per group: each costs reference counts.
    for c0 in range(0, C - 1, 2):
        xa, xb = xflat[c0 * xs_c:], xflat[(c0 + 1) * xs_c:]
        oa, ob = outflat[c0 * os_c:], outflat[(c0 + 1) * os_c:]
        za, zb = azero[c0], azero[c0 + 1]
        for j0 in range(0, nb, LANES):
            pair(xa, xb, off, wts, j0, oa, ob, nb, za, zb)
    if C % 2:
        xc, oc, zero = xflat[(C - 1) * xs_c:], outflat[(C - 1) * os_c:], azero[C - 1]
        for j0 in range(0, nb, LANES):
            group(xc, off, wts, j0, oc, nb, zero)


@skeleton
def _sample_block(points, n, p0, nb, xflat, xs_n, xs_c, sizes, strides, axc, kc, outflat, os_n,
                  os_c, os_p, C, wconst, kind, azero, off, wts, coords, plan, pad, sweep,
                  one_pass):
    """Plan points ``p0 … p0 + nb - 1`` of batch item ``n`` (their coordinates flat in
    ``points``, ``rank`` per point) with the template ``plan`` under padding ``pad``, then
    sweep every channel with the template ``sweep``: the input view starts at the batch
    item, the output view at the block's first point.  ``coords`` is the planners'
    scratch for a planar copy of the points (:func:`planar_points`).

    ``one_pass`` (a constant: 1 or 0): ``sweep`` is a template that plans and sums the
    points itself (:func:`sum_linear_2d_one`, :func:`sum_nearest_2d_one`), into contiguous
    output points; ``plan`` is then not called."""
    if one_pass == 1:
        sweep(points, n, p0, nb, xflat, xs_n, xs_c, C, strides, axc, outflat, os_n, os_c, os_p,
              wconst, kind, azero, pad)
    else:
        plan(points, nb, pad, axc, kc, sizes, strides, wconst[1], wconst[2], off, wts, coords)
        sweep(xflat[n * xs_n:], xs_c, off, wts, nb, C, outflat[n * os_n + p0 * os_p:], os_c,
              os_p, kind, azero)


@skeleton
def planar_points(points, nb, rank, coords):
    """Copy ``nb`` points of ``rank`` coordinates each (``points[rank j + a]``) into
    ``coords`` planar: coordinate ``a`` of point ``j`` at ``coords[a nb + j]``.

    The planners that make one axis per loop (cubic, 3-D linear) read this copy: read in
    place, their loads (every ``rank``-th element) were gathers, a third of the 2-D
    cubic planner's time; the copy reads whole cache lines and shuffles.  The planners
    that read every axis of a point in one loop (2-D linear, nearest) read the points in
    place, which vectorizes as well (a copy cost them 3-20%).
    """
    for j in range(nb):
        for a in range(rank):
            coords[a * nb + j] = points[rank * j + a]


@skeleton
def interleave_points(gflat, start, P, nb, rank, points):
    """Copy ``nb`` points of a planar grid into ``points`` as a grid holds them: coordinate
    ``a`` of point ``j``, ``gflat[start + a P + j]``, to ``points[rank j + a]`` (the reverse
    of :func:`planar_points`).  The indices are unsigned: Numba adds no negative-index
    wraparound to them, and the loop vectorizes (contiguous loads, interleaving stores).
    Views of the planes (:func:`_interleave_planes`, which serves any strides) cost a
    reference count each per block: the planar entries ran 1.04-1.07x their time with them
    at one thread, the 8x32x128² maps 1.2x at two."""
    s = np.uint64(start)
    plane = np.uint64(P)
    for j in range(nb):
        i = s + np.uint64(j)
        points[rank * j] = gflat[i]
        points[rank * j + 1] = gflat[i + plane]
        if rank == 3:
            points[rank * j + 2] = gflat[i + plane + plane]


@function
def interleave_block(gflat, start, P, nb, rank, points):
    """:func:`interleave_points`, compiled on its own: the planar entries call it.  Inlined
    into them, it changed how LLVM compiled their sweeps: with 32 channels (blocks of 112
    points) they ran 1.33x their contiguous twins' time, called 1.05-1.09x."""
    interleave_points(gflat, start, P, nb, rank, points)


@function
def interleave_grid(planar, out):
    """The grid held planar in ``planar`` (Ng, r, P), r = 2 or 3, any strides, into ``out``
    (Ng, P, r), C-contiguous, of the same dtype: what ``np.ascontiguousarray`` of the grid
    view makes, at a fraction of its time (it transposes an element at a time, ~2.5 ns a
    point).  Each item's planes are views: where ``planar`` is C-contiguous (a flow field's
    view) Numba knows their unit stride and the loop vectorizes; other strides (a flow
    sliced from a wider array) are read element by element."""
    Ng, rank, P = planar.shape
    for n in range(Ng):
        dst = out[n].reshape(P * rank)
        if rank == 2:
            _interleave_planes(planar[n, 0], planar[n, 1], planar[n, 1], P, 2, dst)
        else:
            _interleave_planes(planar[n, 0], planar[n, 1], planar[n, 2], P, 3, dst)


@skeleton
def _interleave_planes(u, v, w, nb, rank, points):
    """:func:`interleave_points` from one view per coordinate (``w`` unread for rank 2), for
    planes of any strides; once per item and plane, where the views' reference counts do
    not matter."""
    for j in range(nb):
        points[rank * j] = u[j]
        points[rank * j + 1] = v[j]
        if rank == 3:
            points[rank * j + 2] = w[j]


@skeleton
def run_blocks(share, claims, xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n,
               os_c, os_p, C, block, wconst, kind, azero, off, wts, coords, rank, plan, pad,
               sweep, one_pass):
    """The blocks of ``N x blocks`` that share ``share`` claims (:mod:`gridsample._claims`:
    its own range from the front, then the others' from the back), each read from ``grid``
    (Ng, P, rank), planned and swept (:func:`_sample_block`; ``one_pass``: in one loop);
    the caller's share then waits for the workers' (``join_shares``).

    ``off``, ``wts``: the plan tables (``K`` rows of ``block`` points), and
    ``coords`` (``rank x block``), the planners' scratch: the caller's
    (arguments, so that LLVM knows that no store into one changes another or
    the output: the loops vectorize).
    """
    P = grid.shape[1]
    nblk = (P + block - 1) // block
    gflat = grid.reshape(grid.size)
    while True:
        task = claim_task(claims, share)
        if task < 0:
            break
        n, p0, nb = _block_of(task, nblk, block, P)
        gn = 0 if grid.shape[0] == 1 else n
        _sample_block(gflat[(gn * P + p0) * rank:], n, p0, nb, xflat, xs_n, xs_c, sizes, strides,
                      axc, kc, outflat, os_n, os_c, os_p, C, wconst, kind, azero, off, wts,
                      coords, plan, pad, sweep, one_pass)
    join_shares(claims, share)


@skeleton
def run_planar_blocks(share, claims, xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat,
                      os_n, os_c, os_p, C, block, wconst, kind, azero, off, wts, coords, points,
                      rank, plan, pad, sweep, one_pass):
    """:func:`run_blocks` for a grid held planar: ``grid`` (Ng, rank, P), coordinate ``a`` of
    point ``p`` at ``grid[n, a, p]`` -- a flow field ``(N, r, D1, ..., Dr)`` that the caller
    passed as the grid ``(N, D1, ..., Dr, r)`` by moving its component axis last (a view,
    not a copy).  Each block's points are copied into ``points`` (``rank x block``, scratch
    like the plan tables) as a C-contiguous grid holds them (:func:`interleave_block`),
    then planned and swept as :func:`run_blocks` does: the same bits, without the copy of
    the whole grid that reading it in place would need."""
    P = grid.shape[2]
    nblk = (P + block - 1) // block
    gflat = grid.reshape(grid.size)
    while True:
        task = claim_task(claims, share)
        if task < 0:
            break
        n, p0, nb = _block_of(task, nblk, block, P)
        start = (0 if grid.shape[0] == 1 else n) * rank * P + p0
        interleave_block(gflat, start, P, nb, rank, points)
        _sample_block(points, n, p0, nb, xflat, xs_n, xs_c, sizes, strides, axc, kc, outflat,
                      os_n, os_c, os_p, C, wconst, kind, azero, off, wts, coords, plan, pad,
                      sweep, one_pass)
    join_shares(claims, share)


@skeleton
def run_affine_blocks(share, claims, xflat, xs_n, xs_c, sizes, strides, axc, kc, theta, bases,
                      bsizes, outflat, os_n, os_c, os_p, C, block, wconst, kind, azero, off, wts,
                      coords, points, rank, plan, pad, sweep, one_pass):
    """:func:`run_blocks` for the grid of affine maps ``theta`` (Nt, rank, rank + 1), which
    is never made whole: each block's points are made into ``points`` (``rank x block``,
    scratch like the plan tables) by :func:`gridsample._affine.affine_points` from the
    output axes' base coordinates ``bases`` (sizes ``bsizes``, innermost first);
    ``one_pass`` as :func:`run_blocks` has it."""
    P = 1
    for a in range(rank):
        P *= bsizes[a]
    nblk = (P + block - 1) // block
    while True:
        task = claim_task(claims, share)
        if task < 0:
            break
        n, p0, nb = _block_of(task, nblk, block, P)
        affine_points(theta, 0 if theta.shape[0] == 1 else n, bases, bsizes, p0, nb, rank,
                      points)
        _sample_block(points, n, p0, nb, xflat, xs_n, xs_c, sizes, strides, axc, kc, outflat,
                      os_n, os_c, os_p, C, wconst, kind, azero, off, wts, coords, plan, pad,
                      sweep, one_pass)
    join_shares(claims, share)
