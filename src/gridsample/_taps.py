"""Per-axis sampling taps: the scalar math every kernel shares.

For one output point and one spatial axis of size ``S``, a *tap* is an input
index along that axis and its interpolation weight.  The functions here turn
one normalized grid value ``g`` into the axis's taps, already padded:

* unnormalize (docs/semantics.md §2) in the coordinate dtype, grouped exactly
  as the spec writes it (halving is a multiply by 0.5, which is exact)::

      align_corners=1: x = (g + 1) / 2 * (S - 1) = ((g + 1) * 0.5 - 0) * (S - 1)
      align_corners=0: x = ((g + 1) * S - 1) / 2 = ((g + 1) * S   - 1) * 0.5

  i.e. ``((g + 1) * a - b) * c`` with per-axis constants: bit-identical to
  the spec's formula, also for huge ``g`` (where another grouping rounds or
  overflows differently and reflects to another place).  A coordinate that
  overflows its dtype (float32 past 3.4e38) is ``±inf``, and ``g = ±inf``
  stays ``±inf`` even on an axis of size 1 with align_corners (``c = 0``);
  In pixel units (docs/semantics.md §2.2) the constants are ``a = c = 1``,
  ``b = 0`` and the shift 0 instead of 1, so ``x = g`` exactly;
* under the ONNX paddings, linear / nearest pad the *continuous*
  coordinate, then take 2 or 1 taps; cubic keeps the coordinate, takes 4
  taps ``floor(x)-1 … floor(x)+2`` and pads each integer tap index on its
  own (docs/semantics.md §4);
* under the index paddings (mirror, symmetric, wrap) every mode keeps the
  coordinate and pads each tap index (docs/semantics.md §3.3); constant
  reads like zeros, except that the N-D planner keeps its taps outside
  (offset :data:`OUTSIDE`) for the fill sweep to read the fill there.

Each axis carries its own padding code (``AXIS_PAD``), so a call may pad
every axis differently.

Taps that fall outside ``[0, S-1]`` under zeros padding are *dropped*, not
given weight 0: a dropped tap reads nothing, so an ``inf`` stored in ``X`` at
another index cannot turn ``0 * inf`` into NaN.  Every float is range-checked
before it is converted to an integer, because converting a huge or non-finite
float to an integer is undefined behaviour in LLVM.

A function returns the number of taps it wrote (0 … 4), or ``-1`` when the
point is a NaN point (docs/semantics.md §5: NaN coordinate, or reflection of an infinite
one).  Offsets are written already multiplied by the axis's element stride.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import function, helper, skeleton
from ._registry import (
    CUBIC_A,
    MODE_BSPLINE,
    MODE_LINEAR,
    MODE_NEAREST,
    MODE_SPLINE_FIRST,
    MODE_SPLINE_LAST,
    PAD_BORDER,
    PAD_CONSTANT,
    PAD_MIRROR,
    PAD_REFLECTION,
    PAD_SYMMETRIC,
    PAD_WRAP,
    PAD_ZEROS,
)

__all__ = ["axis_row", "cubic_row", "axis_taps", "reflect_clip", "unnormalize", "pad_continuous",
           "pad_index", "axis_pad", "linear_axis",
           "nearest_axis", "cubic_axis", "AXIS_MUL", "AXIS_SUB", "AXIS_SCALE", "AXIS_HIGH",
           "AXIS_ONE", "AXIS_SHIFT", "AXIS_PAD", "AXIS_SIZE",
           "AXIS_REFLECT_LOW", "AXIS_REFLECT_SPAN", "AXIS_FIELDS", "CUBIC_FIELDS",
           "axis_constants", "cubic_constants", "bspline3_constants", "weight_constants",
           "spline_taps", "AXIS_OFFSET", "CUBIC_A", "OUTSIDE"]

#: Offset of a tap outside under constant padding (N-D planner, fill kernel): any sum of it
#: with the offsets of up to 2**16 taps inside an array stays negative.
OUTSIDE = -(1 << 56)


# Layout of the per-axis constant row (in the coordinate dtype).
(AXIS_MUL, AXIS_SUB, AXIS_SCALE, AXIS_HIGH, AXIS_REFLECT_LOW, AXIS_REFLECT_SPAN,
 AXIS_ONE, AXIS_SHIFT, AXIS_PAD, AXIS_SIZE, AXIS_OFFSET) = range(11)
AXIS_FIELDS = 11
# Layout of the weight constant row (in the weight dtype) of the piecewise cubic of
# support 4 that cubic's kernels evaluate: 1, c3, c2, c1, -c2', -c1', -c0', c0 for
#   |t| <= 1:     c2 |t|^3 - c1 |t|^2 + c0         (Keys: A+2, A+3, 1)
#   1 < |t| < 2:  ((c3 |t| - c4) |t| + c5) |t| - c6 (Keys: A, 5A, 8A, 4A)
# with the fields in the order 1, c3, c2, c1, c4, c5, c6, c0.
CUBIC_FIELDS = 8


def axis_constants(size: int, align_corners: bool, dtype, pad: int = PAD_ZEROS,
                   pixels: bool = False, offset: int = 0) -> np.ndarray:
    """Per-axis constants in the coordinate ``dtype`` (layout ``AXIS_*``).

    ``a, b, c`` and the shift of the unnormalization ``((g + shift) a - b) c``,
    ``S - 1``, the reflection interval, 1, the padding code ``pad`` (as a
    float: the kernels read it once per block), ``S`` and the offset added
    to the coordinate.  ``offset`` > 0 describes an array padded by
    ``offset`` elements on each side of an axis of size ``S``: the
    coordinate of a position is its unnormalized value plus ``offset``, and
    ``S - 1`` and ``S`` are those of the padded axis (the B-spline
    coefficients of a constant or border axis, :mod:`gridsample._prefilter`).
    Reflection folds
    the coordinate back into ``[low, low + span]``: ``[0, S-1]`` with
    align_corners (the corner pixel centres) and ``[-0.5, S-0.5]`` without
    (the pixel edges).  ``pixels``: the grid holds element coordinates, so
    the unnormalization is the identity (``a = c = 1``, ``b = shift = 0``);
    align_corners then still picks reflection's interval.

    ``S - 1`` is rounded *down* to the dtype: in float32 an axis longer than
    2**24 has no exact ``S - 1``, and rounding up would clip to index ``S``,
    one past the end.
    """
    dtype = np.dtype(dtype)
    a, b, c = (0.5, 0.0, size - 1.0) if align_corners else (float(size), 1.0, 0.5)
    shift = 1.0
    if pixels:
        a, b, c, shift = 1.0, 0.0, 1.0, 0.0
    low, span = (0.0, float(size - 1)) if align_corners else (-0.5, float(size))
    extent = size + 2 * offset
    high = dtype.type(extent - 1)
    if float(high) > extent - 1:
        high = np.nextafter(high, dtype.type(0))
    row = np.array([a, b, c, 0.0, low, span, 1.0, shift, float(pad), float(extent),
                    float(offset)], dtype)
    row[AXIS_HIGH] = high
    return row


def cubic_constants(a: float = CUBIC_A) -> tuple:
    """Keys' kernel with coefficient ``a``: ``1, A, A+2, A+3, 5A, 8A, 4A, 1`` (``CUBIC_FIELDS``)."""
    return (1.0, a, a + 2.0, a + 3.0, 5.0 * a, 8.0 * a, 4.0 * a, 1.0)


def weight_constants(mode: int, cubic_a: float = CUBIC_A) -> tuple:
    """The ``CUBIC_FIELDS`` constants a call's kernels take: Keys' kernel, or the cubic B-spline."""
    return bspline3_constants() if mode == MODE_BSPLINE[3] else cubic_constants(cubic_a)


def bspline3_constants() -> tuple:
    """The cubic B-spline as cubic's kernels evaluate it (``CUBIC_FIELDS``).

    ``|t| <= 1``: ``t^3/2 - t^2 + 2/3``; ``1 < |t| < 2``: ``(2 - |t|)^3 / 6
    = ((-|t|/6 + 1) |t| - 2) |t| + 4/3``.
    """
    return (1.0, -1.0 / 6.0, 0.5, 1.0, -1.0, -2.0, -4.0 / 3.0, 2.0 / 3.0)


@function
def reflect_clip(x, low, span, high):
    """Reflect finite ``x`` into ``[low, low + span]``, then clip to ``[0, high]``.

    The line is periodic with period ``2 * span`` under repeated reflection:
    with ``d = |x - low|`` and ``m = d mod 2*span`` (``fmod`` is exact in IEEE
    arithmetic, so far points reflect exactly), the image is ``low + m`` when
    ``m <= span`` and ``low + 2*span - m`` otherwise.  ``span == 0`` (an axis
    of size 1 with align_corners) maps everything to 0.
    """
    zero = x - x
    if span <= zero:
        return zero
    period = span + span
    m = np.fmod(abs(x - low), period)
    if m > span:
        m = period - m
    y = m + low
    if y < zero:
        y = zero
    if y > high:
        y = high
    return y


@helper
def _cubic_near(t, kc):
    # |t| <= 1: (c2 |t| - c1) t^2 + c0 (Keys: ((A + 2)|t| - (A + 3)) t^2 + 1)
    return (kc[2] * t - kc[3]) * t * t + kc[7]


@helper
def _cubic_far(t, kc):
    # 1 < |t| < 2: ((c3 |t| - c4)|t| + c5)|t| - c6 (Keys: ((A|t| - 5A)|t| + 8A)|t| - 4A)
    return ((kc[1] * t - kc[4]) * t + kc[5]) * t - kc[6]


@skeleton
def axis_row(axc, a):
    """Row ``a`` of a per-axis constants array as a tuple.

    Helpers take the row as a tuple of scalars, not as an array view: in a
    plain compiled function (outside a ``prange`` body) every array view
    made or handed to an inlined helper per point costs two atomic
    reference-count updates (measured: per-point planners 4-8x slower).
    """
    return (axc[a, 0], axc[a, 1], axc[a, 2], axc[a, 3], axc[a, 4], axc[a, 5], axc[a, 6],
            axc[a, 7], axc[a, 8], axc[a, 9], axc[a, 10])


@skeleton
def axis_pad(ax):
    """The padding code of an axis's constants (read once per block, not per point)."""
    return int(ax[AXIS_PAD])


@skeleton
def cubic_row(kc):
    """The cubic constants as a tuple (see :func:`axis_row`)."""
    return (kc[0], kc[1], kc[2], kc[3], kc[4], kc[5], kc[6], kc[7])


@helper
def unnormalize(g, ax):
    """docs/semantics.md §2 in the coordinate dtype (see the module notes for the grouping)."""
    if math.isinf(g):
        return g
    return ((g + ax[AXIS_SHIFT]) * ax[AXIS_MUL] - ax[AXIS_SUB]) * ax[AXIS_SCALE] + ax[AXIS_OFFSET]


@helper
def pad_continuous(x, pad, ax):
    """Padding of linear and nearest, on the continuous coordinate.

    Border clips to ``[0, S-1]`` (``±inf`` clips to the edges); reflection
    reflects, then clips (``±inf`` has no image: NaN).  Zeros leaves ``x``.
    """
    high = ax[AXIS_HIGH]
    if pad == PAD_BORDER:
        zero = high - high
        return min(max(x, zero), high)
    if pad == PAD_REFLECTION:
        if math.isinf(x):
            return x - x  # NaN
        return reflect_clip(x, ax[AXIS_REFLECT_LOW], ax[AXIS_REFLECT_SPAN], high)
    return x


@helper
def pad_index(t, pad, ax):
    """Pad a finite integer-valued tap index ``t`` (coordinate dtype) into ``[0, S-1]``.

    border clips; reflection reflects over the align_corners interval, then
    clips (the ONNX rule cubic uses); mirror reflects over ``[0, S-1]``
    (whole-sample symmetric: ``d c b | a b c d | c b a``, period
    ``2(S-1)``); symmetric repeats with period ``2S``, mirrored in its second
    half (half-sample: ``c b a | a b c | c b a``); wrap takes ``t mod S``
    (``fmod`` is exact, so far indices pad exactly).  Zeros (and constant) leave ``t``: the
    caller drops it when it lies outside.
    """
    high = ax[AXIS_HIGH]
    zero = high - high
    if pad == PAD_BORDER:
        return min(max(t, zero), high)
    if pad == PAD_REFLECTION:
        return reflect_clip(t, ax[AXIS_REFLECT_LOW], ax[AXIS_REFLECT_SPAN], high)
    if pad == PAD_MIRROR:
        return reflect_clip(t, zero, high, high)
    if pad == PAD_SYMMETRIC:
        # Period 2S, folded at S: i -> 2S - 1 - i.  Formed on the integer
        # index itself (reflecting about -0.5 would round the half away for
        # huge indices).
        size = ax[AXIS_SIZE]
        period = size + size
        m = np.fmod(t, period)
        if m < zero:
            m += period
        if m >= size:
            m = period - ax[AXIS_ONE] - m
        return min(max(m, zero), high)
    if pad == PAD_WRAP:
        size = ax[AXIS_SIZE]
        m = np.fmod(t, size)
        if m < zero:
            m += size
        return min(max(m, zero), high)
    return t


@helper
def _index(t, size):
    """A padded float index as an integer (``min`` guards the cast all the same)."""
    return min(int(t), size - 1)


@skeleton
def _index_linear(g, pad, ax, one, size):
    """:func:`linear_axis` under an index padding (mirror, symmetric, wrap)."""
    x = unnormalize(g, ax)
    if x != x or math.isinf(x):  # no image of an infinite coordinate: the NaN rule
        return 0, 0, one, one, False, False, True
    f = np.floor(x)
    d = x - f
    i0 = _index(pad_index(f, pad, ax), size)
    i1 = _index(pad_index(f + ax[AXIS_ONE], pad, ax), size)
    return i0, i1, one - d, one * d, True, True, False


@skeleton
def linear_axis(g, pad, ax, one, size):
    """The two linear taps of one axis.

    Returns ``(i0, i1, w0, w1, ok0, ok1, nan)``: taps ``i0`` and ``i1``
    (``i0 + 1`` but under wrap) with weights ``1 - d`` and ``d``
    (``d = x - floor(x)``, exact in the coordinate dtype; ``one`` is 1 in
    the weight dtype, so ``1 - d`` is formed in the weight precision,
    docs/semantics.md §6.2); ``ok`` is False for a tap outside ``[0, S-1]``;
    ``nan`` marks a NaN point.
    """
    if pad >= PAD_MIRROR:  # mirror, symmetric, wrap (registry codes 4-6): index paddings
        return _index_linear(g, pad, ax, one, size)
    x = pad_continuous(unnormalize(g, ax), pad, ax)
    if x != x:
        return 0, 0, one, one, False, False, True
    # Outside (-2, S+1) both taps are outside: skip the cast (x may be huge).  Their
    # weights are those of a far point at -3, (1, 0), for the taps constant keeps.
    if not (x > -2 and x < ax[AXIS_HIGH] + 2):
        return 0, 0, one, one - one, False, False, False
    f = np.floor(x)
    d = x - f
    i0 = int(f)
    # one * d: the weight dtype also when the kernels run as plain Python (NUMBA_DISABLE_JIT),
    # where the tuple is not unified to one type as it is in compiled code.
    return (i0, i0 + 1, one - d, one * d, i0 >= 0 and i0 < size, i0 >= -1 and i0 + 1 < size,
            False)


@skeleton
def nearest_axis(g, pad, ax, size):
    """The nearest tap of one axis, rounding half to even (as ``nearbyint``).

    Returns ``(i, ok, nan)``.  Under an index padding the rounded index is
    padded (the coordinate is not).
    """
    if pad >= PAD_MIRROR:
        x = unnormalize(g, ax)
        if x != x or math.isinf(x):
            return 0, False, True
        return _index(pad_index(np.rint(x), pad, ax), size), True, False
    x = pad_continuous(unnormalize(g, ax), pad, ax)
    if x != x:
        return 0, False, True
    if not (x > -1 and x < ax[AXIS_HIGH] + 1):
        return 0, False, False
    i = int(np.rint(x))
    return i, i >= 0 and i < size, False


@skeleton
def cubic_axis(g, pad, ax, kc, size):
    """The four cubic taps ``floor(x)-1 … floor(x)+2`` of one axis, each padded.

    Returns ``(i0, i1, i2, i3, w0, w1, w2, w3, ok0, ok1, ok2, ok3, nan)``.
    The coordinate itself is not padded (docs/semantics.md §4); each tap index is: zeros
    drops it, border clips it, reflection reflects then clips it, all in
    floating point so that the cast to an integer is always defined.  Tap
    indices are formed in the coordinate dtype, weights in the weight dtype
    (``kc``, docs/semantics.md §6.2).
    """
    one = kc[0]
    x = unnormalize(g, ax)
    high = ax[AXIS_HIGH]
    zero = high - high
    drops = pad == PAD_ZEROS or pad == PAD_CONSTANT  # taps outside read nothing (or the fill)
    if x != x or (math.isinf(x) and not drops and pad != PAD_BORDER):
        return 0, 0, 0, 0, one, one, one, one, False, False, False, False, True
    if math.isinf(x) and pad == PAD_BORDER:
        # Infinitely far out: border reads the edge (all taps clip to it, weights (0, 1, 0, 0)).
        edge = size - 1 if x > zero else 0
        return edge, edge, edge, edge, zero, one, zero, zero, False, True, False, False, False
    cone = ax[AXIS_ONE]
    if drops and not (x > -3 and x < high + 3):
        # No tap inside (also +-inf): the weights of a far point at -5, which constant's
        # taps read the fill with (as the vector planners do).
        x = zero - (cone + cone + cone + cone + cone)
    f = np.floor(x)
    t = x - f
    u = one - t
    w0 = _cubic_far(t + one, kc)
    w1 = _cubic_near(t, kc)
    w2 = _cubic_near(u, kc)
    w3 = _cubic_far(u + one, kc)
    if drops:
        i0 = int(f) - 1
        return (i0, i0 + 1, i0 + 2, i0 + 3, w0, w1, w2, w3, i0 >= 0 and i0 < size,
                i0 >= -1 and i0 + 1 < size, i0 >= -2 and i0 + 2 < size,
                i0 >= -3 and i0 + 3 < size, False)
    # f + (k - 1), each formed from f directly: past 2**24 (float32) f +- 1
    # rounds, and a running sum would round differently.
    t0, t1, t2, t3 = f - cone, f, f + cone, f + (cone + cone)
    if pad == PAD_BORDER:
        t0 = min(max(t0, zero), high)
        t1 = min(max(t1, zero), high)
        t2 = min(max(t2, zero), high)
        t3 = min(max(t3, zero), high)
    elif pad == PAD_REFLECTION:
        lo = ax[AXIS_REFLECT_LOW]
        span = ax[AXIS_REFLECT_SPAN]
        t0 = reflect_clip(t0, lo, span, high)
        t1 = reflect_clip(t1, lo, span, high)
        t2 = reflect_clip(t2, lo, span, high)
        t3 = reflect_clip(t3, lo, span, high)
    else:
        t0 = pad_index(t0, pad, ax)
        t1 = pad_index(t1, pad, ax)
        t2 = pad_index(t2, pad, ax)
        t3 = pad_index(t3, pad, ax)
    # The padded values lie in [0, S-1]; _index guards the cast all the same.
    return (_index(t0, size), _index(t1, size), _index(t2, size), _index(t3, size),
            w0, w1, w2, w3, True, True, True, True, False)


@function
def spline_taps(g, n, pad, ax, one, size, stride, off, wts, dws, base, keep, slopes):
    """The ``n + 1`` taps of a B-spline of degree ``n`` on one axis, each padded.

    The taps are ``s … s + n`` with ``s = floor(x) - (n - 1)/2`` for odd ``n``
    and ``s = floor(x + 1/2) - n/2`` for even ``n`` (SciPy's choice; at a tie
    the extreme taps have weight 0, so either side gives the same value).
    Tap ``s + k`` has weight ``B_n(x - s - k)``: with ``u`` the position of
    ``x`` in its knot interval (``x - floor(x)``, or ``x + 1/2 - floor(x + 1/2)``
    for even ``n``), the Cox-de Boor recursion for uniform knots raises
    the weights ``w^(d-1)`` of degree ``d - 1`` to degree ``d`` in place::

        w^(d)_k = ((u + d - k) w^(d-1)_{k-1} + (k + 1 - u) w^(d-1)_k) / d,   k = 0 … d

    (``w^(0) = (1)``, entries outside ``0 … d-1`` are 0): sums of positive
    terms, so every weight is accurate to a few ulps in the weight dtype.
    Their slopes are ``dw^(n)_k/dx = w^(n-1)_{k-1} - w^(n-1)_k`` (written to
    ``dws`` when ``slopes``).  Padding acts on each tap index as for cubic
    (docs/semantics.md §4.2): zeros drops a tap outside (``keep``: writes it
    at :data:`OUTSIDE` for the fill), the others pad it.  Returns the number
    of taps written, or -1 for a NaN point.  A point infinitely far out
    under border reads the edge alone (weight 1, slope 0).
    """
    x = unnormalize(g, ax)
    high = ax[AXIS_HIGH]
    zero = high - high
    cone = ax[AXIS_ONE]
    wzero = one - one
    drops = pad == PAD_ZEROS or pad == PAD_CONSTANT
    if x != x or (math.isinf(x) and not drops and pad != PAD_BORDER):
        return -1
    if math.isinf(x) and not drops:  # border: the edge, infinitely far out
        off[base] = (size - 1 if x > zero else 0) * stride
        wts[base] = one
        if slopes:
            dws[base] = wzero
        return 1
    if drops and not (x > -(n + 2) and x < high + (n + 2)):
        # No tap inside (also +-inf): the weights of a far point at -(n + 3), whose taps
        # constant reads the fill with.
        far = zero
        for _ in range(n + 3):
            far -= cone
        x = far
    h = n // 2
    if n % 2:
        f = np.floor(x)
        uw = one * (x - f)
    else:
        # f = floor(x + 1/2) exactly (_axis_numpy.round_half_up: x + 1/2 may round across
        # an integer, x - floor(x) does not), then u = x + 1/2 - f in [0, 1): x - f is
        # exact in the coordinate dtype, the half is added in the weight dtype (in float32
        # coordinates it would round away low bits of a float64 weight's fraction).
        half = cone / (cone + cone)
        f = np.floor(x)
        f = f + cone if x - f >= half else f
        uw = one * (x - f) + one * half
    # Cox-de Boor, degree 1 … n, in wts[base … base + n]; the slopes need degree n - 1.
    wts[base] = one
    dd = wzero
    for d in range(1, n + 1):
        dd += one
        if slopes and d == n:
            prev = wzero
            for k in range(n):
                cur = wts[base + k]
                dws[base + k] = prev - cur
                prev = cur
            dws[base + n] = prev
        prev = wzero
        kk = wzero
        for k in range(d + 1):
            cur = wts[base + k] if k < d else wzero
            wts[base + k] = ((uw + (dd - kk)) * prev + ((kk + one) - uw) * cur) / dd
            prev = cur
            kk += one
    # Pad each tap (formed from f directly, as cubic's) and keep those that read something.
    m = 0
    for k in range(n + 1):
        t = f + cone * np.float32(k - h)
        w = wts[base + k]
        dw = dws[base + k] if slopes else wzero
        if drops:
            i = int(t)
            ok = i >= 0 and i < size
            if not (ok or keep):
                continue
            off[base + m] = i * stride if ok else OUTSIDE
        else:
            off[base + m] = _index(pad_index(t, pad, ax), size) * stride
        wts[base + m] = w
        if slopes:
            dws[base + m] = dw
        m += 1
    return m


@function
def axis_taps(g, mode, pad, ax, kc, size, stride, off, wts, base):
    """Write the padded taps of one axis for grid value ``g`` (N-D kernels).

    Parameters
    ----------
    g : float
        Normalized coordinate (coordinate dtype).
    mode, pad : int
        Interpolation and padding codes.
    ax : ndarray, shape (AXIS_FIELDS,)
        This axis's constants (:func:`axis_constants`), coordinate dtype.
    kc : ndarray, shape (CUBIC_FIELDS,)
        Cubic constants (:func:`cubic_constants`), coordinate dtype.
    size, stride : int
        Axis length ``S`` and its element stride in the flat input.
    off : ndarray of int64, wts : ndarray
        Output buffers; the taps inside ``X`` are written at ``base``,
        ``base + 1``, ... (taps outside are dropped).

    Returns
    -------
    int
        Number of taps written, or -1 for a NaN point.
    """
    one = kc[0]
    keep = pad == PAD_CONSTANT  # taps outside stay, at OUTSIDE, to read the fill
    if mode == MODE_LINEAR:
        i0, i1, w0, w1, ok0, ok1, nan = linear_axis(g, pad, ax, one, size)
        if nan:
            return -1
        n = 0
        if ok0 or keep:
            off[base] = i0 * stride if ok0 else OUTSIDE
            wts[base] = w0
            n = 1
        if ok1 or keep:
            off[base + n] = i1 * stride if ok1 else OUTSIDE
            wts[base + n] = w1
            n += 1
        return n
    if mode == MODE_NEAREST:
        i, ok, nan = nearest_axis(g, pad, ax, size)
        if nan:
            return -1
        if ok or keep:
            off[base] = i * stride if ok else OUTSIDE
            wts[base] = one
            return 1
        return 0
    if mode >= MODE_SPLINE_FIRST:  # the B-splines the cubic kernels do not run
        if mode > MODE_SPLINE_LAST:
            return -1  # not a registered mode (validation refuses it): a NaN point, never a read
        return spline_taps(g, mode - 1, pad, ax, one, size, stride, off, wts, wts, base, keep,
                           False)
    i0, i1, i2, i3, w0, w1, w2, w3, ok0, ok1, ok2, ok3, nan = cubic_axis(g, pad, ax, kc, size)
    if nan:
        return -1
    idx = (i0, i1, i2, i3)
    wk = (w0, w1, w2, w3)
    ok = (ok0, ok1, ok2, ok3)
    n = 0
    for k in range(4):
        if ok[k] or keep:
            off[base + n] = idx[k] * stride if ok[k] else OUTSIDE
            wts[base + n] = wk[k]
            n += 1
    return n
