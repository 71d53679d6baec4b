"""Per-axis sampling taps: the scalar math every kernel shares.

For one output point and one spatial axis of size ``S``, a *tap* is an input
index along that axis and its interpolation weight.  The functions here turn
one normalized grid value ``g`` into the axis's taps, already padded:

* unnormalize (DESIGN §3 rule 2) in the coordinate dtype::

      align_corners=1: x = (g + 1) / 2 * (S - 1) = (g + 1) * (S-1)/2
      align_corners=0: x = ((g + 1) * S - 1) / 2 = (g + 1) * S/2 - 1/2

  so ``scale`` is ``(S-1)/2`` or ``S/2`` and ``shift`` is 0 or 1/2.  Halving
  commutes with rounding, so each right-hand side rounds exactly like the
  left-hand one: the result is bit-identical to the spec's formula, also for
  huge ``g``, where a different grouping would reflect to another place.
  A coordinate that overflows its dtype (float32 past 3.4e38) is ``±inf``;
* linear / nearest pad the *continuous* coordinate, then take 2 or 1 taps;
* cubic keeps the coordinate, takes 4 taps ``floor(x)-1 … floor(x)+2`` and
  pads each integer tap index on its own (rule 4).

Taps that fall outside ``[0, S-1]`` under zeros padding are *dropped*, not
given weight 0: a dropped tap reads nothing, so an ``inf`` stored in ``X`` at
another index cannot turn ``0 * inf`` into NaN.  Every float is range-checked
before it is converted to an integer, because converting a huge or non-finite
float to an integer is undefined behaviour in LLVM.

A function returns the number of taps it wrote (0 … 4), or ``-1`` when the
point is a NaN point (rule 7: NaN coordinate, or reflection of an infinite
one).  Offsets are written already multiplied by the axis's element stride.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import inline
from ._options import MODE_CUBIC, MODE_LINEAR, PAD_BORDER, PAD_REFLECTION, PAD_ZEROS

__all__ = ["axis_taps", "reflect_clip", "AXIS_SCALE", "AXIS_SHIFT", "AXIS_HIGH",
           "AXIS_REFLECT_LOW", "AXIS_REFLECT_SPAN", "AXIS_FIELDS", "CUBIC_FIELDS",
           "axis_constants", "cubic_constants", "CUBIC_A"]

#: Keys' cubic convolution parameter, as in PyTorch and onnxruntime.
CUBIC_A = -0.75

# Layout of the per-axis constant row (in the coordinate dtype).
AXIS_SCALE, AXIS_SHIFT, AXIS_HIGH, AXIS_REFLECT_LOW, AXIS_REFLECT_SPAN = range(5)
AXIS_FIELDS = 5
# Layout of the cubic constant row: 1, A, A+2, A+3, 5A, 8A, 4A.
CUBIC_FIELDS = 7


def axis_constants(size: int, align_corners: bool) -> tuple:
    """Per-axis constants: scale, shift, S-1, and the reflection interval.

    Reflection folds the coordinate back into ``[low, low + span]``:
    ``[0, S-1]`` with align_corners (the corner pixel centres) and
    ``[-0.5, S-0.5]`` without (the pixel edges).
    """
    scale = (size - 1) / 2 if align_corners else size / 2
    shift = 0.0 if align_corners else 0.5
    low, span = (0.0, float(size - 1)) if align_corners else (-0.5, float(size))
    return (scale, shift, float(size - 1), low, span)


def cubic_constants() -> tuple:
    a = CUBIC_A
    return (1.0, a, a + 2.0, a + 3.0, 5.0 * a, 8.0 * a, 4.0 * a)


@inline
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


@inline
def _cubic_near(t, kc):
    # Keys kernel for |t| <= 1: ((A + 2)|t| - (A + 3)) t^2 + 1
    return (kc[2] * t - kc[3]) * t * t + kc[0]


@inline
def _cubic_far(t, kc):
    # Keys kernel for 1 < |t| < 2: ((A|t| - 5A)|t| + 8A)|t| - 4A
    return ((kc[1] * t - kc[4]) * t + kc[5]) * t - kc[6]


@inline
def axis_taps(g, mode, pad, ax, kc, size, stride, off, wts, base):
    """Write the padded taps of one axis for grid value ``g``.

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
        Output buffers; taps are written at ``base``, ``base + 1``, ...

    Returns
    -------
    int
        Number of taps written, or -1 for a NaN point.
    """
    one = kc[0]
    x = (g + one) * ax[AXIS_SCALE] - ax[AXIS_SHIFT]
    if x != x:
        return -1
    high = ax[AXIS_HIGH]

    if mode == MODE_CUBIC:
        if math.isinf(x):
            # A point infinitely far out: zeros reads nothing, border reads the
            # edge (all four taps clip to it and the weights sum to 1),
            # reflection has no defined image.
            if pad == PAD_ZEROS:
                return 0
            if pad == PAD_REFLECTION:
                return -1
            off[base] = (size - 1) * stride if x > 0 else 0
            wts[base] = one
            return 1
        f = np.floor(x)
        t = x - f
        u = one - t
        w0 = _cubic_far(t + one, kc)
        w1 = _cubic_near(t, kc)
        w2 = _cubic_near(u, kc)
        w3 = _cubic_far(u + one, kc)
        if pad == PAD_ZEROS:
            if not (x > -3 and x < high + 3):
                return 0
            i0 = int(f) - 1
            n = 0
            for k in range(4):
                i = i0 + k
                if i >= 0 and i < size:
                    off[base + n] = i * stride
                    wk = w0 if k == 0 else (w1 if k == 1 else (w2 if k == 2 else w3))
                    wts[base + n] = wk
                    n += 1
            return n
        # border / reflection: pad each tap index in floating point, then cast
        # (a clipped value lies in [0, S-1], so the cast is defined).
        lo = ax[AXIS_REFLECT_LOW]
        span = ax[AXIS_REFLECT_SPAN]
        zero = high - high
        two = one + one
        for k in range(4):
            # f + (k - 1), each formed from f directly: past 2**24 (float32)
            # f +- 1 rounds, and a running sum would round differently.
            tap = f - one if k == 0 else (f if k == 1 else (f + one if k == 2 else f + two))
            if pad == PAD_BORDER:
                v = min(max(tap, zero), high)
            else:
                v = reflect_clip(tap, lo, span, high)
            off[base + k] = int(v) * stride
            wk = w0 if k == 0 else (w1 if k == 1 else (w2 if k == 2 else w3))
            wts[base + k] = wk
        return 4

    # linear and nearest: pad the continuous coordinate first.
    if pad == PAD_BORDER:
        zero = high - high
        x = min(max(x, zero), high)
    elif pad == PAD_REFLECTION:
        if math.isinf(x):
            return -1
        x = reflect_clip(x, ax[AXIS_REFLECT_LOW], ax[AXIS_REFLECT_SPAN], high)

    if mode == MODE_LINEAR:
        if not (x > -2 and x < high + 2):
            return 0
        f = np.floor(x)
        d = x - f
        i0 = int(f)
        n = 0
        if i0 >= 0 and i0 < size:
            off[base] = i0 * stride
            wts[base] = one - d
            n = 1
        if i0 + 1 >= 0 and i0 + 1 < size:
            off[base + n] = (i0 + 1) * stride
            wts[base + n] = d
            n += 1
        return n

    # nearest: round half to even (np.rint), as PyTorch's nearbyint.
    if not (x > -1 and x < high + 1):
        return 0
    i = int(np.rint(x))
    if i >= 0 and i < size:
        off[base] = i * stride
        wts[base] = one
        return 1
    return 0
