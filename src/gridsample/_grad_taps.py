"""Per-axis taps with their derivatives: the scalar math of the backward.

The forward reads, on each axis, taps ``i_k`` with weights ``w_k(x)`` of the
unnormalized coordinate ``x = u(g)`` (:mod:`gridsample._taps`).  The backward
also needs ``dw_k/dx`` and the chain factor ``dx/dg`` of the axis:

* unnormalize is affine, ``x = ((g + 1) a - b) c``, so ``dx/dg = a c``:
  ``(S - 1) / 2`` with align_corners, ``S / 2`` without;
* linear and nearest pad the continuous coordinate first, ``x' = pad(x)``,
  so the chain factor is ``a c * dpad/dx``.  Border clipping has slope 1
  strictly inside ``(0, S-1)`` and 0 at or past an edge (the edges count as
  clipped, as in PyTorch); reflection has slope ``±1`` (the sign flips with
  each fold and with the side of ``low`` the point lies on), times the
  slope of the clip that follows it;
* linear: ``w_0 = 1 - d``, ``w_1 = d`` with ``d = x' - floor(x')``, so
  ``dw/dx' = (-1, +1)``; nearest: piecewise constant, ``dw/dx = 0``;
* cubic keeps the coordinate unpadded (docs/semantics.md §4; padding acts on the integer
  tap indices, which do not move with ``x``), so the chain factor is just
  ``a c``.  With ``t = x - floor(x)`` the weights are Keys' kernel ``k`` at
  distances ``t + 1, t, 1 - t, 2 - t``; differentiating each distance
  w.r.t. ``x`` gives ``(k'(t+1), k'(t), -k'(1-t), -k'(2-t))`` with::

      k'(s) = (3(A+2) s - 2(A+3)) s        for 0 <= s <= 1
      k'(s) = (3A s - 10A) s + 8A          for 1 <  s <  2

A point infinitely far out has a locally constant value: chain factor 0.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import helper, skeleton
from ._options import MODE_CUBIC, MODE_LINEAR, MODE_NEAREST, PAD_BORDER, PAD_REFLECTION
from ._taps import (
    AXIS_HIGH,
    AXIS_MUL,
    AXIS_REFLECT_LOW,
    AXIS_REFLECT_SPAN,
    AXIS_SCALE,
    cubic_axis,
    linear_axis,
    nearest_axis,
    reflect_clip,
    unnormalize,
)

__all__ = ["grad_axis_taps", "grad_linear_taps", "grad_nearest_taps", "grad_cubic_taps",
           "pad_slope", "slope_constants", "SLOPE_FIELDS"]

#: Layout of the derivative constants of cubic's piecewise cubic (Keys: 3(A+2), 2(A+3), 3A,
#: 10A, 8A).
SLOPE_FIELDS = 5


def slope_constants(kc: tuple) -> tuple:
    """The derivative's constants of the piecewise cubic ``kc`` (``_taps.CUBIC_FIELDS``).

    ``3 c2, 2 c1, 3 c3, 2 c4, c5``: for Keys' kernel ``3(A+2), 2(A+3), 3A,
    10A, 8A`` (doubling is exact, so these equal the textbook products).
    """
    return (3.0 * kc[2], 2.0 * kc[3], 3.0 * kc[1], 2.0 * kc[4], kc[5])


@helper
def _slope_near(s, dk):
    return (dk[0] * s - dk[1]) * s


@helper
def _slope_far(s, dk):
    return (dk[2] * s - dk[3]) * s + dk[4]


@skeleton
def pad_slope(x, pad, ax):
    """``d pad(x) / dx`` for linear and nearest (1, 0 or -1; NaN maps to 1).

    Border: 0 at or outside the edges ``[0, S-1]``.  Reflection: fold
    ``|x - low|`` with period ``2 span`` (as :func:`reflect_clip` does);
    the slope is the sign of ``x - low``, negated when the fold lands in the
    mirrored half; then 0 where the reflected value is clipped (at or
    outside ``[0, S-1]``), and 0 on an axis that reflects to a point
    (``span == 0``).
    """
    high = ax[AXIS_HIGH]
    zero = high - high
    one = zero + 1
    if pad == PAD_BORDER:
        if x <= zero or x >= high:
            return zero
        return one
    if pad == PAD_REFLECTION:
        if math.isinf(x):
            return one  # a NaN point; the caller reports it
        low = ax[AXIS_REFLECT_LOW]
        span = ax[AXIS_REFLECT_SPAN]
        if span <= zero:
            return zero
        d = x - low
        sign = one if d >= zero else -one
        m = np.fmod(abs(d), span + span)
        if m > span:
            sign = -sign
        y = reflect_clip(x, low, span, high)
        if y <= zero or y >= high:
            return zero
        return sign
    return one


@skeleton
def grad_cubic_taps(g, pad, ax, kc, dk, size):
    """Cubic: :func:`grad_axis_taps` for ``mode = MODE_CUBIC``."""
    one = kc[0]
    zero = one - one
    scale = ax[AXIS_MUL] * ax[AXIS_SCALE]
    flat = scale - scale
    (i0, i1, i2, i3, w0, w1, w2, w3, ok0, ok1, ok2, ok3,
     nan) = cubic_axis(g, pad, ax, kc, size)
    x = unnormalize(g, ax)
    if nan or math.isinf(x):
        return (nan, flat, (i0, i1, i2, i3), (w0, w1, w2, w3), (zero, zero, zero, zero),
                (ok0, ok1, ok2, ok3))
    t = x - np.floor(x)
    u = one - t
    dws = (_slope_far(t + one, dk), _slope_near(t, dk), -_slope_near(u, dk),
           -_slope_far(u + one, dk))
    return nan, scale, (i0, i1, i2, i3), (w0, w1, w2, w3), dws, (ok0, ok1, ok2, ok3)


@skeleton
def grad_linear_taps(g, pad, ax, kc, dk, size):
    """Linear: :func:`grad_axis_taps` for ``mode = MODE_LINEAR``."""
    one = kc[0]
    zero = one - one
    scale = ax[AXIS_MUL] * ax[AXIS_SCALE]
    x = unnormalize(g, ax)
    i0, i1, w0, w1, ok0, ok1, nan = linear_axis(g, pad, ax, one, size)
    chain = scale - scale if math.isinf(x) else scale * pad_slope(x, pad, ax)
    return (nan, chain, (i0, i1, 0, 0), (w0, w1, zero, zero), (-one, one, zero, zero),
            (ok0, ok1, False, False))


@skeleton
def grad_nearest_taps(g, pad, ax, kc, dk, size):
    """Nearest: :func:`grad_axis_taps` for ``mode = MODE_NEAREST`` (no slope)."""
    one = kc[0]
    zero = one - one
    scale = ax[AXIS_MUL] * ax[AXIS_SCALE]
    i, ok, nan = nearest_axis(g, pad, ax, size)
    return (nan, scale - scale, (i, 0, 0, 0), (one, zero, zero, zero), (zero, zero, zero, zero),
            (ok, False, False, False))


@helper
def grad_axis_taps(g, mode, pad, ax, kc, dk, size):
    """One axis's taps, weights and weight slopes for grid value ``g``.

    Parameters
    ----------
    g : float
        Normalized coordinate (coordinate dtype).
    mode, pad : int
        Interpolation and padding codes.
    ax : tuple of AXIS_FIELDS floats
        The axis's constants (:func:`gridsample._taps.axis_constants`).
    kc : tuple of CUBIC_FIELDS floats; dk : tuple of SLOPE_FIELDS floats
        Keys' constants and those of its derivative, in the weight dtype.
    size : int
        Axis length.

    Returns
    -------
    nan : bool
        A NaN point (docs/semantics.md §5); the rest is then meaningless.
    chain : float
        ``dx/dg`` including the padding's slope (0 for nearest and for
        infinite coordinates).
    idx, w, dw, ok : 4-tuples
        Tap indices (inside ``[0, S-1]`` where ``ok``), weights and ``dw/dx``;
        linear uses the first 2 entries, nearest the first.  A tap that is
        not ``ok`` lies outside ``X`` under zeros padding: it is dropped, as
        in the forward.

    Everything is returned as scalars and tuples, never through arrays: an
    array handed to a helper costs two atomic reference-count updates per
    call in Numba (measured: 8x slower planners).  The rank-specialised
    planners call the mode's own function (``grad_*_taps``), so a call
    compiles only its mode's math.
    """
    if mode == MODE_CUBIC:
        return grad_cubic_taps(g, pad, ax, kc, dk, size)
    if mode == MODE_LINEAR:
        return grad_linear_taps(g, pad, ax, kc, dk, size)
    nan, chain, idx, w, dw, ok = grad_nearest_taps(g, pad, ax, kc, dk, size)
    # not a registered mode (validation refuses it): a NaN point, never a read
    return nan or mode != MODE_NEAREST, chain, idx, w, dw, ok
