"""Per-axis math in plain NumPy, vectorized over points: the reference's and the second order's.

For one spatial axis of size ``S`` and an array of grid values, these give
the unnormalized coordinate, its padding, the taps (indices, weights and
validity) and the weights' first and second derivatives w.r.t. the grid
value, written as docs/semantics.md states them.  :mod:`gridsample.reference`
builds the slow twin of the operator and its backward from them;
:mod:`gridsample._second_order` builds the backward's own derivative.
None of it shares arithmetic with the compiled kernels.
"""

from __future__ import annotations

import math

import numpy as np

from ._registry import (
    MODE_CUBIC,
    MODE_LINEAR,
    MODE_NEAREST,
    PAD_BORDER,
    PAD_CONSTANT,
    PAD_MIRROR,
    PAD_REFLECTION,
    PAD_SYMMETRIC,
    PAD_WRAP,
    PAD_ZEROS,
    mode_of,
    padding_of,
)

__all__ = ["A", "unnormalize", "reflect", "keys", "pad_indices", "identity_grid", "axis_taps",
           "bspline", "bspline_slope", "bspline_curvature", "round_half_up", "spline_distances",
           "unnormalize_slope",
           "pad_slope", "keys_slope", "axis_grad_taps", "keys_curvature",
           "axis_curvature"]

A = -0.75  # Keys' cubic convolution parameter


def unnormalize(g, size, align_corners, pixels=False):
    # The spec's formulas, as the spec writes them, in g's dtype (NumPy keeps
    # float32 arithmetic float32 when the other operands are Python ints).
    # +-inf is infinitely far out on every axis, also where S - 1 = 0.
    # Pixel units are element coordinates already.
    if pixels:
        return g
    if align_corners:
        x = (g + 1) / 2 * (size - 1)
    else:
        x = ((g + 1) * size - 1) / 2
    return np.where(np.isinf(g), g, x)


def reflect(x, size, align_corners):
    """Reflect over [0, S-1] (align_corners) or [-0.5, S-0.5], repeatedly; then clip.

    Repeated reflection folds the line with period 2 * span: the distance
    from ``lo`` modulo ``2 span`` (``fmod`` is exact, so far points such as
    1e30 land where exact arithmetic puts them), mirrored when past ``span``.
    """
    lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
    span = hi - lo
    if span <= 0:  # an axis of size 1 with align_corners: everything maps to 0
        return np.where(np.isnan(x), x, np.zeros_like(x))
    phase = np.fmod(np.abs(x - lo), 2 * span)
    y = np.where(phase > span, 2 * span - phase, phase) + lo
    return np.clip(y, 0, size - 1)


def keys(t, a=A):
    """Keys' cubic convolution kernel W(t) with coefficient ``a`` (default -0.75)."""
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def pad_indices(i, size, padding):
    """An index padding (docs/semantics.md §3.3) applied to float tap indices ``i``, in their
    dtype (the coordinate dtype, §6.2) as the kernels compute it.

    mirror (whole-sample symmetric, period ``2(S-1)``): ``m = |i| mod 2(S-1)``,
    then ``m`` or ``2(S-1) - m``; symmetric (half-sample, period ``2S``):
    ``m = i mod 2S``, then ``m`` or ``2S - 1 - m``; wrap: ``i mod S``.  ``S`` is rounded to
    the dtype (to nearest) and ``S - 1`` rounded down (§2): exact below ``2**24`` in float32;
    past it the period is float32's and the result is clipped into ``[0, S-1]``.
    Non-finite indices map to 0 (their points are NaN points).
    """
    i = np.where(np.isfinite(i), i, 0.0).astype(np.result_type(i, np.float32))
    t = i.dtype.type
    high = t(size - 1)
    if float(high) > size - 1:
        high = np.nextafter(high, t(0))
    if padding == PAD_MIRROR:
        if size == 1:
            return np.zeros_like(i)
        m = np.fmod(np.abs(i), high + high)
        m = np.where(m > high, (high + high) - m, m)
    elif padding == PAD_SYMMETRIC:
        period = t(size) + t(size)
        m = np.fmod(i, period)
        m = np.where(m < 0, m + period, m)
        m = np.where(m >= t(size), period - t(1) - m, m)
    elif padding == PAD_WRAP:
        m = np.fmod(i, t(size))
        m = np.where(m < 0, m + t(size), m)
    else:
        raise ValueError(f"padding code {padding} is not an index padding")
    return np.clip(m, t(0), high)


def _index_axis_taps(x, size, mode, padding, a):
    """:func:`axis_taps` for the index paddings: every tap index padded, the coordinate kept."""
    nan = ~np.isfinite(x)  # no image of an infinite coordinate
    xs = np.where(nan, 0.0, x).astype(x.dtype)
    if mode == MODE_NEAREST:
        idx = pad_indices(np.rint(xs), size, padding)
        return [(idx, np.ones(x.shape), np.ones(x.shape, bool))], nan
    f = np.floor(xs)
    frac = (xs - f).astype(np.float64)
    offsets = (0, 1) if mode == MODE_LINEAR else (-1, 0, 1, 2)
    taps = []
    for k in offsets:
        w = (1 - frac if k == 0 else frac) if mode == MODE_LINEAR else keys(frac - k, a)
        taps.append((pad_indices(f + k, size, padding), w, np.ones(x.shape, bool)))
    return taps, nan


def bspline(t, degree):
    """The centred B-spline ``B_n(t)`` of degree ``n`` (float64), from truncated powers.

    ``B_n(t) = 1/n! sum_{j=0}^{n+1} (-1)^j C(n+1, j) (t + (n+1)/2 - j)_+^n``
    (``(s)_+^0`` is 1 for ``s > 0``).  Cancellation costs a few ulps of
    ``((n+1)/2)^n / n!`` (below 1e-13 for ``n <= 7``): a reference, not a kernel.
    """
    t = np.asarray(t, np.float64)
    total = np.zeros(t.shape)
    for j in range(degree + 2):
        s = t + (degree + 1) / 2 - j
        power = np.where(s > 0, np.maximum(s, 0.0) ** degree, 0.0) if degree else (s > 0) * 1.0
        total += (-1) ** j * math.comb(degree + 1, j) * power
    return total / math.factorial(degree)


def bspline_slope(t, degree):
    """``B_n'(t) = B_{n-1}(t + 1/2) - B_{n-1}(t - 1/2)``."""
    return bspline(np.asarray(t) + 0.5, degree - 1) - bspline(np.asarray(t) - 0.5, degree - 1)


def bspline_curvature(t, degree):
    """``B_n''(t) = B_{n-2}(t + 1) - 2 B_{n-2}(t) + B_{n-2}(t - 1)``."""
    t = np.asarray(t)
    return bspline(t + 1, degree - 2) - 2 * bspline(t, degree - 2) + bspline(t - 1, degree - 2)


def round_half_up(v):
    """``floor(v + 1/2)`` exactly, in ``v``'s dtype: the even-degree B-splines' anchor.

    ``v + 1/2`` itself may round across an integer -- up to the next one for an odd float32
    ``v`` in ``[2**23, 2**24)`` (a tie, to even), or to 1 from just below 1/2 -- where
    ``v - floor(v)`` is exact: so the anchor is ``floor(v)``, plus one where that fraction
    is at least 1/2.  (The kernels' ``spline_taps`` takes it so.)
    """
    f = np.floor(v)
    return np.where(v - f >= 0.5, f + 1, f)


def spline_distances(x, degree):
    """Anchor and the distances ``x - tap`` of the ``n + 1`` taps of a B-spline of degree ``n``.

    The anchor is ``floor(x)`` (odd ``n``) or ``floor(x + 1/2)`` (even ``n``: exactly,
    :func:`round_half_up`); tap ``k`` is ``anchor + (k - n // 2)``, formed in ``x``'s dtype
    from the anchor directly, as the kernels form it.  Distances from the exact fraction, so
    huge coordinates keep exact weights.
    """
    h = degree // 2
    anchor = np.floor(x) if degree % 2 else round_half_up(x)
    frac = (x - anchor).astype(np.float64)
    return anchor, [frac + h - k for k in range(degree + 1)]


def _spline_axis_taps(x, size, degree, padding, align_corners):
    """:func:`axis_taps` of a B-spline mode: every tap index padded, the coordinate kept.

    zeros/constant drop (or fill) a tap outside; border clips it and, for a
    point infinitely far out, reads the edge alone; reflection reflects it
    (then clips); the index paddings fold it.  ``±inf`` under the others is a
    NaN point, as NaN is.
    """
    drops = padding in (PAD_ZEROS, PAD_CONSTANT)
    far = np.isinf(x) & (padding == PAD_BORDER)
    nan = np.isnan(x) | (np.isinf(x) & (not drops and padding != PAD_BORDER))
    x = np.where(np.isfinite(x), x, np.copysign(size + 8.0, np.where(np.isnan(x), 1.0, x)))
    x = x.astype(np.result_type(x.dtype, np.float32))
    anchor, dist = spline_distances(x, degree)
    taps = []
    for k, d in enumerate(dist):
        idx = anchor + (k - degree // 2)
        w = bspline(d, degree)
        if padding == PAD_BORDER:
            idx = np.clip(idx, 0, size - 1)
            w = np.where(far, 1.0 if k == degree // 2 else 0.0, w)
        elif padding == PAD_REFLECTION:
            idx = reflect(idx, size, align_corners)
        elif padding_of(padding).index and padding != PAD_CONSTANT:
            idx = pad_indices(idx, size, padding)
        valid = (idx >= 0) & (idx <= size - 1)
        if k != degree // 2:
            valid = valid & ~far
        taps.append((idx, w, valid))
    return taps, nan


def axis_taps(x, size, mode, padding, align_corners, a=A):
    """Taps of one axis: list of (float index, weight, valid) and the NaN mask.

    ``x`` is the unnormalized coordinate, in the coordinate dtype; padding and
    tap indices stay in that dtype (NumPy keeps float32 float32 when the
    other operands are Python scalars), weights are float64.  Indices stay float
    until the caller masks them, so huge and infinite values are harmless.
    ``"constant"`` is ``"zeros"`` here (the caller reads its fill where a
    tap is not valid); ``a`` is Keys' coefficient.
    """
    if mode_of(mode).spline:
        return _spline_axis_taps(x, size, mode_of(mode).spline, padding, align_corners)
    if padding_of(padding).index and padding != PAD_CONSTANT:
        return _index_axis_taps(x, size, mode, padding, a)
    if mode == MODE_CUBIC:
        nan = np.isnan(x) | (np.isinf(x) & (padding == PAD_REFLECTION))
        far = np.isinf(x) & (padding == PAD_BORDER)
        if padding == PAD_BORDER:
            # +-inf: every tap clips to the edge; a far finite stand-in with
            # a zero fraction gives the same taps and weights (0, 1, 0, 0).
            # Only the weight-1 tap is read (docs/semantics.md §5: the edge value, also
            # where the edge holds inf and 0 * inf would be NaN).
            x = np.where(np.isinf(x), np.copysign(size + 8.0, x), x)
        f = np.floor(x)
        frac = (x - f).astype(np.float64)  # exact; weights in float64 from here
        taps = []
        for k in (-1, 0, 1, 2):
            idx = f + k
            w = keys(frac - k, a)  # not x - idx: for huge x, f + k rounds back to f
            if padding == PAD_BORDER:
                idx = np.clip(idx, 0, size - 1)
            elif padding == PAD_REFLECTION:
                idx = reflect(np.where(np.isfinite(idx), idx, 0.0), size, align_corners)
            valid = (idx >= 0) & (idx <= size - 1)
            if k != 0:
                valid = valid & ~far
            taps.append((idx, w, valid))
        return taps, nan

    if padding == PAD_BORDER:
        x = np.clip(x, 0, size - 1)
    elif padding == PAD_REFLECTION:
        x = np.where(np.isinf(x), np.nan, x)
        x = reflect(x, size, align_corners)
    nan = np.isnan(x)
    if mode == MODE_NEAREST:
        idx = np.rint(x)  # round half to even
        return [(idx, np.ones_like(x), (idx >= 0) & (idx <= size - 1))], nan
    if mode != MODE_LINEAR:
        raise ValueError(f"mode code {mode} is not registered")  # no default branch
    f = np.floor(x)
    d = (x - f).astype(np.float64)  # exact; weights in float64 from here
    return [
        (f, 1 - d, (f >= 0) & (f <= size - 1)),
        (f + 1, d, (f + 1 >= 0) & (f + 1 <= size - 1)),
    ], nan


def unnormalize_slope(size, align_corners):
    """``dx/dg`` of the affine map of docs/semantics.md §2 (Python float).

    align_corners:  x = (g + 1) / 2 * (S - 1)   ->  dx/dg = (S - 1) / 2
    otherwise:      x = ((g + 1) * S - 1) / 2   ->  dx/dg = S / 2
    """
    return (size - 1) / 2 if align_corners else size / 2


def pad_slope(x, size, padding, align_corners):
    """``d pad(x) / dx`` for linear's and nearest's padding of the coordinate (float64).

    zeros: ``pad(x) = x``, slope 1.

    border: ``pad(x) = clip(x, 0, S-1)``, slope 1 strictly inside and 0 at or
    outside an edge (at the kink the edge counts as clipped, as in PyTorch).

    reflection: with ``d = x - lo`` and ``m = |d| mod 2 span`` the image is
    ``lo + m`` for ``m <= span`` and ``lo + 2 span - m`` past it (see
    :func:`reflect`), so ``d/dx = sign(d)`` (+1 at d = 0) times -1 in the
    mirrored half; then the clip to ``[0, S-1]`` multiplies by its own slope
    (0 where the reflected value is at or outside an edge).  An axis of span
    0 (S = 1 with align_corners) maps everything to 0: slope 0.
    """
    if padding == PAD_BORDER:
        y = np.clip(x, 0, size - 1)
        return np.where((y > 0) & (y < size - 1), 1.0, 0.0)
    if padding == PAD_REFLECTION:
        lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        span = hi - lo
        if span <= 0:
            return np.zeros(x.shape)
        d = x - lo
        phase = np.fmod(np.abs(d), 2 * span)  # as in reflect, in x's dtype
        sign = np.where(d >= 0, 1.0, -1.0) * np.where(phase > span, -1.0, 1.0)
        y = reflect(x, size, align_corners)  # reflected and clipped
        return np.where((y > 0) & (y < size - 1), sign, 0.0)
    return np.ones(x.shape)


def keys_slope(s, a=A):
    """``K'(s)`` of the even kernel ``K(s) = k(|s|)``: ``sign(s) * k'(|s|)``, A = -0.75.

    Differentiating :func:`keys`' two pieces in ``t = |s|``::

        k(t) = (A+2) t^3 - (A+3) t^2 + 1         ->  k'(t) = (3(A+2) t - 2(A+3)) t   (t <= 1)
        k(t) = A t^3 - 5A t^2 + 8A t - 4A        ->  k'(t) = (3A t - 10A) t + 8A     (1 < t < 2)

    and 0 for ``t >= 2``.  Both pieces give ``A`` at ``t = 1`` and the far one
    gives 0 at ``t = 2`` (and ``k'(0) = 0``): Keys' kernel is C^1, so which
    piece owns a knot does not matter.
    """
    A = a  # noqa: N806 (the formulas above)
    t = np.abs(s)
    near = (3 * (A + 2) * t - 2 * (A + 3)) * t
    far = (3 * A * t - 10 * A) * t + 8 * A
    return np.sign(s) * np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def axis_grad_taps(x, size, mode, padding, align_corners, a=A, pixels=False, unpadded=None):
    """:func:`axis_taps` plus each tap's weight slope ``dw/dg`` (float64).

    Returns ``[(index, w, dw/dg, valid), ...]`` and the NaN mask.  ``x`` is
    the unnormalized, unpadded coordinate.

    * linear: ``w_0 = 1 - d``, ``w_1 = d`` with ``d = x' - floor(x')`` and
      ``x' = pad(x)``, so ``dw/dx' = (-1, +1)`` and
      ``dw/dg = (-1, +1) * u'(g) * pad'(x)``.
    * nearest: the weight is 1 on a piecewise constant tap: ``dw/dg = 0``.
    * cubic: the coordinate is not padded, so ``dx/dg = u'(g)``.  Tap
      ``floor(x) + k`` (k = -1, 0, 1, 2) has weight ``K(t - k)`` with
      ``t = x - floor(x)`` (:func:`axis_taps` evaluates ``keys(t - k)``),
      hence ``dw_k/dx = K'(t - k)``: ``k'(t+1), k'(t), -k'(1-t), -k'(2-t)``
      for the taps at distances ``t+1, t, 1-t, 2-t``.

    A coordinate at ``±inf`` is infinitely far out: its value is locally
    constant, slope 0 (its weights are not differentiable there).  ``size``
    is the sampled array's axis; ``unpadded`` the axis the grid normalizes
    to where they differ (pre-padded B-spline coefficients).
    """
    taps, nan = axis_taps(x, size, mode, padding, align_corners, a)
    scale = 1.0 if pixels else unnormalize_slope(unpadded or size, align_corners)
    degree = mode_of(mode).spline
    if degree:  # the coordinate is not padded: dw_k/dx = B_n'(x - tap_k)
        finite = np.where(np.isfinite(x), x, 0.0).astype(x.dtype)
        slopes = [scale * bspline_slope(d, degree) for d in spline_distances(finite, degree)[1]]
    elif mode == MODE_NEAREST:
        slopes = [np.zeros(x.shape)]
    elif mode == MODE_CUBIC:
        t = (x - np.floor(x)).astype(np.float64)  # exact, as in axis_taps
        slopes = [scale * keys_slope(t - k, a) for k in (-1, 0, 1, 2)]
    else:
        chain = scale * pad_slope(x, size, padding, align_corners)
        slopes = [-chain, chain]
    far = np.isinf(x)
    return [(idx, w, np.where(far, 0.0, dw), ok)
            for (idx, w, ok), dw in zip(taps, slopes)], nan


def keys_curvature(s, a=A):
    """``K''(s)`` of Keys' kernel: ``k''(|s|)`` (the kernel is even, so is its second derivative).

    Differentiating :func:`keys_slope`'s pieces once more in ``t = |s|``::

        k'(t) = 3(A+2) t^2 - 2(A+3) t           ->  k''(t) = 6(A+2) t - 2(A+3)   (t <= 1)
        k'(t) = 3A t^2 - 10A t + 8A             ->  k''(t) = 6A t - 10A          (1 < t < 2)

    and 0 beyond.  Both pieces give ``3 + 4A`` at ``t = 1``; at ``t = 2`` the
    far piece gives ``2A`` and the outside 0: ``K''`` jumps there (Keys'
    kernel is C^1, not C^2).  A tap at distance exactly 2 is the last tap of
    the cell the point lies in (``t = x - floor(x) = 0``, tap ``floor + 2``),
    so the one-sided limit from inside that cell applies: ``2A``.  Then the
    four taps' ``K''`` sum to 0 and a constant has no curvature, at the
    knots as between them.
    """
    A = a  # noqa: N806 (the formulas above)
    t = np.abs(s)
    near = 6 * (A + 2) * t - 2 * (A + 3)
    far = 6 * A * t - 10 * A
    return np.where(t <= 1, near, np.where(t <= 2, far, 0.0))


def axis_curvature(x, size, mode, align_corners, a=A, pixels=False):
    """Each tap's ``d^2 w / dg^2`` for :func:`axis_grad_taps`' taps (float64 arrays).

    * linear: ``dw/dg = (-1, +1) u'(g) pad'(x)`` is piecewise constant
      (the padding's slope changes only at kinks, where it has no
      derivative; as PyTorch, the kinks count as flat): 0.
    * nearest: 0.
    * cubic: ``d^2 w_k / dg^2 = u'(g)^2 K''(t - k)``.

    A coordinate at ``±inf`` gets 0, as its slope does.  A B-spline of degree
    ``n``: ``u'(g)^2 B_n''(x - tap_k)``.
    """
    degree = mode_of(mode).spline
    if degree:
        scale = 1.0 if pixels else unnormalize_slope(size, align_corners)
        finite = np.where(np.isfinite(x), x, 0.0).astype(x.dtype)
        far = np.isinf(x)
        return [np.where(far, 0.0, scale * scale * bspline_curvature(d, degree))
                for d in spline_distances(finite, degree)[1]]
    if mode != MODE_CUBIC:
        zero = np.zeros(x.shape)
        return [zero] * (1 if mode == MODE_NEAREST else 2)
    scale = 1.0 if pixels else unnormalize_slope(size, align_corners)
    t = (x - np.floor(x)).astype(np.float64)
    far = np.isinf(x)
    return [np.where(far, 0.0, scale * scale * keys_curvature(t - k, a)) for k in (-1, 0, 1, 2)]


def identity_grid(out_spatial, align_corners, pixels, dtype):
    """The identity grid of the output shape, ``(*out_spatial, r)`` in ``dtype`` (displacements).

    Pixel units: each point's own indices.  Normalized: the centres of
    ``D`` equal cells of ``[-1, 1]`` (align_corners=False) or ``D`` evenly
    spaced points from -1 to 1 (True), 0 on an axis of one point -- the
    positions ``affine_grid`` gives for the identity.
    """
    axes = []
    for length in out_spatial:
        i = np.arange(length, dtype=np.float64)
        if pixels:
            axes.append(i)
        elif length == 1:
            axes.append(np.zeros(1))
        elif align_corners:
            axes.append(np.linspace(-1.0, 1.0, length))
        else:
            axes.append((2 * i + 1) / length - 1)
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack(mesh[::-1], axis=-1).astype(dtype)  # grid[..., 0] is the last axis
