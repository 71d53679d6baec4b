"""Input footprints: which index range of each input axis a block of output points reads.

Everything here is NumPy on small arrays (one grid block, or the corners of
an affine block); nothing imports Dask.

The footprint of a set of points on one spatial axis of size ``S`` is the
integer range ``[lo, hi]`` of the tap indices the kernels read for those
points, after padding (``None`` when no point reads anything on that axis --
then no point reads anything at all, because a point reads the product of its
per-axis taps).  It is derived from docs/semantics.md §2-§4 exactly as the kernels in
``gridsample._taps`` compute taps:

* unnormalize in the coordinate dtype, grouped as the kernels group it::

      u = ((g + 1) * a - b) * c         (g = +-inf stays +-inf)

  with ``a, b, c`` from :func:`gridsample._taps.axis_constants` -- NumPy does
  the same IEEE float32/float64 operations in the same order, so ``u`` is
  bit-identical to the kernel's;
* linear / nearest pad the continuous coordinate ``p = pad(u)`` (border:
  clip to ``[0, S-1]``; reflection: fold into ``[low, low + span]`` with the
  exact ``fmod``, then clip; ``+-inf`` reflects to NaN), then read
  ``floor(p), floor(p) + 1`` (linear) or ``rint(p)`` (nearest).  A point
  with ``p`` outside ``(-2, S+1)`` (linear) or ``(-1, S)`` (nearest) reads
  nothing under zeros padding, so it is left out before the min / max::

      linear:   [lo, hi] = [floor(min p), floor(max p) + 1]  ∩ [0, S-1]
      nearest:  [lo, hi] = [rint(min p),  rint(max p)]       ∩ [0, S-1]

  (floor and rint are monotone, so the extreme points give the extreme taps);
* cubic does not pad the coordinate: it reads ``t_k = floor(u) + k`` for
  ``k = -1 … 2`` and pads each tap index.  zeros keeps the taps inside
  ``[0, S-1]`` (points with ``u`` outside ``(-3, S+2)`` read nothing);
  border clips each (monotone: the range is the clipped ``[floor(min u) - 1,
  floor(max u) + 2]``; ``+-inf`` reads the edge); reflection folds each tap,
  which is not monotone, so every point's four folded taps are evaluated and
  the min / max taken.

* the index paddings (mirror, symmetric, wrap; docs/semantics.md §3.3) keep
  the coordinate for every mode and pad each tap ``t_k = anchor(u) + k``
  (not monotone: every point's padded taps are evaluated, as for cubic's
  reflection); ``+-inf`` and NaN read nothing.  Wrap near one edge reads
  the far edge too, so such a footprint spans the axis.  ``"constant"``
  reads what ``"zeros"`` reads.

Each axis has its own padding (``pad`` may be one code per grid component).

For an *interval* of coordinates (the affine path, where only the corners of a
block are known when the graph is built) :func:`interval_window` gives a
superset of the same range: border is monotone, and the image of an interval
under reflection is the image of its two ends plus every fold point inside it
(each fold lands on ``low`` or ``low + span``), or the whole axis once the
interval is a full period ``2 span`` long; an index padding maps the
interval's integer taps one by one (or gives the whole axis once they span
a period).
"""

from __future__ import annotations

import math

import numpy as np

from .._axis_numpy import pad_indices, round_half_up
from .._registry import PAD_BORDER, PAD_CONSTANT, PAD_REFLECTION, PAD_ZEROS, mode_of, padding_of
from .._taps import (
    AXIS_HIGH,
    AXIS_MUL,
    AXIS_OFFSET,
    AXIS_ONE,
    AXIS_REFLECT_LOW,
    AXIS_REFLECT_SPAN,
    AXIS_SCALE,
    AXIS_SHIFT,
    AXIS_SUB,
    axis_constants,
)

__all__ = ["points_window", "interval_window", "unnormalize", "reflect_clip"]


def _index_padding(pad: int) -> bool:
    """Mirror, symmetric or wrap: every mode pads its tap indices (constant reads as zeros)."""
    return padding_of(pad).index and pad != PAD_CONSTANT


#: The longest axis whose index paddings float32 computes exactly (every tap index and every
#: period, up to symmetric's 2S, an integer below 2**24).
_FLOAT32_EXACT_SIZE = 2**23


def _period(pad: int, size: int) -> int:
    """The period of an index padding's pattern (mirror 2(S-1), symmetric 2S, wrap S)."""
    name = padding_of(pad).name
    return {"mirror": max(2 * (size - 1), 1), "symmetric": 2 * size}.get(name, size)


def unnormalize(g: np.ndarray, ax: np.ndarray) -> np.ndarray:
    """``((g + shift) * a - b) * c + offset`` in ``ax``'s dtype; ``+-inf`` stays put (as
    ``_taps.unnormalize``)."""
    with np.errstate(all="ignore"):
        u = ((g + ax[AXIS_SHIFT]) * ax[AXIS_MUL] - ax[AXIS_SUB]) * ax[AXIS_SCALE] + ax[AXIS_OFFSET]
    return np.where(np.isinf(g), g, u)


def reflect_clip(x: np.ndarray, ax: np.ndarray) -> np.ndarray:
    """``_taps.reflect_clip`` vectorized (finite ``x``; NaN passes through)."""
    low, span, high = ax[AXIS_REFLECT_LOW], ax[AXIS_REFLECT_SPAN], ax[AXIS_HIGH]
    zero = high - high
    if span <= zero:
        return np.where(np.isnan(x), x, zero)
    period = span + span
    with np.errstate(all="ignore"):
        m = np.fmod(np.abs(x - low), period)
        m = np.where(m > span, period - m, m)
        return np.clip(m + low, zero, high)


def _clip_range(lo: float, hi: float, size: int):
    lo, hi = max(lo, 0.0), min(hi, size - 1.0)
    if not lo <= hi:
        return None
    return int(lo), int(hi)


def _anchor(m, v: float) -> float:
    """The index a mode's taps are counted from (``floor``, ``rint`` or ``floor(v + 1/2)``)."""
    return float(_anchors(m, np.asarray(v)))


def _anchors(m, v: np.ndarray) -> np.ndarray:
    """:func:`_anchor` of an array, in its dtype (as the kernels form it)."""
    if m.anchor == "floor":
        return np.floor(v)
    if m.anchor == "round":  # the even-degree B-splines
        return round_half_up(v)
    return np.rint(v)


def _axis_points(g: np.ndarray, size: int, mode: int, pad: int, align: bool, ct,
                 pixels: bool = False, offset: int = 0):
    """Exact footprint ``(lo, hi)`` or ``None`` of one axis for the grid values ``g``.

    ``offset``: the array read is the axis padded by ``offset`` elements on each side
    (B-spline coefficients of a constant or border axis; ``size`` is the padded size), as
    :func:`gridsample._taps.axis_constants` describes it to the kernels.
    """
    m = mode_of(mode)
    k0, k1 = m.reach
    ax = axis_constants(size - 2 * offset, align, ct, pixels=pixels, offset=offset)
    u = unnormalize(g.astype(ct, copy=False), ax)
    high = float(ax[AXIS_HIGH])
    pad = PAD_ZEROS if pad == PAD_CONSTANT else pad
    with np.errstate(all="ignore"):
        if _index_padding(pad):
            finite = u[np.isfinite(u)]
            if finite.size == 0:
                return None
            f = _anchors(m, finite)
            taps = [pad_indices(f + ax[AXIS_ONE] * k, size, pad) for k in range(k0, k1 + 1)]
            return _clip_range(min(float(t.min()) for t in taps),
                               max(float(t.max()) for t in taps), size)
        if m.pads == "coordinate":
            if pad == PAD_BORDER:
                p = np.clip(u, ax[AXIS_HIGH] - ax[AXIS_HIGH], ax[AXIS_HIGH])
            elif pad == PAD_REFLECTION:
                p = reflect_clip(np.where(np.isinf(u), np.nan, u), ax)
            else:
                p = u
            # Outside (-(k1 + 1), S - 1 + k1 + 1) no tap is inside (zeros padding).
            out = k1 + 1.0
            p = p[(p > -out) & (p < high + out)]  # drops NaN too
            if p.size == 0:
                return None
            return _clip_range(_anchor(m, float(p.min())) + k0,
                               _anchor(m, float(p.max())) + k1, size)
        # pads == "taps": anchor the coordinate, pad each tap index.
        finite = u[np.isfinite(u)]
        if pad == PAD_ZEROS:
            finite = finite[(finite > k0 - 2.0) & (finite < high - k0 + 2.0)]
            if finite.size == 0:
                return None
            return _clip_range(_anchor(m, float(finite.min())) + k0,
                               _anchor(m, float(finite.max())) + k1, size)
        if pad == PAD_BORDER:
            lo, hi = math.inf, -math.inf
            if finite.size:
                lo = min(max(_anchor(m, float(finite.min())) + k0, 0.0), high)
                hi = min(max(_anchor(m, float(finite.max())) + k1, 0.0), high)
            if np.any(u == np.inf):
                lo, hi = min(lo, size - 1.0), max(hi, size - 1.0)
            if np.any(u == -np.inf):
                lo, hi = min(lo, 0.0), max(hi, 0.0)
            return _clip_range(lo, hi, size) if lo <= hi else None
        # reflection: +-inf and NaN are NaN points (read nothing).
        if finite.size == 0:
            return None
        f = _anchors(m, finite)
        one = ax[AXIS_ONE]
        lo, hi = math.inf, -math.inf
        for k in range(k0, k1 + 1):
            t = f + one * k  # as the kernel forms each tap (k * 1 is exact)
            t = reflect_clip(t, ax)
            lo, hi = min(lo, float(t.min())), max(hi, float(t.max()))
        return _clip_range(lo, hi, size)


def points_window(grid: np.ndarray, in_spatial: tuple, mode: int, pad, align: bool, ct,
                  pixels: bool = False, offsets: tuple = ()):
    """Exact per-axis footprint of a grid block (any leading shape, last axis ``r``).

    ``pad`` is one padding code, or one per grid component; ``offsets`` (per
    grid component, default 0) the margins of padded B-spline coefficients,
    ``in_spatial`` then their shape.  Returns a tuple over the *spatial axes of
    x* (d1 … dr order) of ``(lo, hi)`` inclusive, or ``None`` when no point of
    the block reads anything.
    """
    r = len(in_spatial)
    pads = tuple(pad) if isinstance(pad, (tuple, list)) else (pad,) * r
    offsets = tuple(offsets) or (0,) * r
    out = [None] * r
    for a in range(r):
        axis = r - 1 - a  # grid[..., a] indexes spatial axis r-1-a
        rng = _axis_points(grid[..., a], int(in_spatial[axis]), mode, pads[a], align, ct,
                           pixels, offsets[a])
        if rng is None:
            return None
        out[axis] = rng
    return tuple(out)


# --------------------------------------------------------------------------
# Interval version (affine blocks known by their corners only).

def _reflect_interval(a: float, b: float, size: int, align: bool):
    """Image of the real interval ``[a, b]`` under reflect-then-clip (float64)."""
    low, span = (0.0, size - 1.0) if align else (-0.5, float(size))
    high = size - 1.0
    if span <= 0:
        return 0.0, 0.0
    period = 2.0 * span
    if b - a >= period:
        return 0.0, high

    def refl(v):
        m = math.fmod(abs(v - low), period)
        if m > span:
            m = period - m
        return min(max(m + low, 0.0), high)

    vals = [refl(a), refl(b)]
    k0, k1 = math.ceil((a - low) / span), math.floor((b - low) / span)
    for k in range(k0, min(k1, k0 + 3) + 1):  # at most ~2 folds inside (b - a < period)
        vals.append(refl(low + k * span))
    return min(vals), max(vals)


def interval_window(u_lo: float, u_hi: float, size: int, mode: int, pad: int, align: bool):
    """Footprint ``(lo, hi)`` or ``None`` covering every finite ``u`` in ``[u_lo, u_hi]``.

    ``u`` is the unnormalized coordinate (before padding).  A superset of what
    :func:`points_window` gives for any points in the interval (float64 math on
    a slightly widened interval; the task checks the exact footprint).
    """
    m = mode_of(mode)
    k0, k1 = m.reach
    high = size - 1.0
    pad = PAD_ZEROS if pad == PAD_CONSTANT else pad
    if _index_padding(pad):
        if not (math.isfinite(u_lo) and math.isfinite(u_hi)):
            return 0, size - 1  # an unbounded interval covers every period
        if size > _FLOAT32_EXACT_SIZE:
            # float32 coordinates fold by float32's rounded period past 2**24 (semantics.md
            # §2), which float64 here does not reproduce: any element may be read.
            return 0, size - 1
        top = math.floor(u_hi) if m.anchor == "floor" else math.ceil(u_hi)  # rint's ties too
        t_lo, t_hi = math.floor(u_lo) + k0, top + k1
        if t_hi - t_lo + 1 >= _period(pad, size):
            return 0, size - 1
        taps = pad_indices(np.arange(t_lo, t_hi + 1, dtype=np.float64), size, pad)
        return _clip_range(float(taps.min()), float(taps.max()), size)
    if m.pads == "coordinate":
        if pad == PAD_BORDER:
            p_lo, p_hi = min(max(u_lo, 0.0), high), min(max(u_hi, 0.0), high)
        elif pad == PAD_REFLECTION:
            p_lo, p_hi = _reflect_interval(u_lo, u_hi, size, align)
        else:
            p_lo, p_hi = u_lo, u_hi
            out = k1 + 1.0
            if p_hi <= -out or p_lo >= high + out:
                return None
            p_lo, p_hi = max(p_lo, -out - 1.0), min(p_hi, high + out + 1.0)  # floor() finite
        # floor of the low end; the high end rounded up covers rint's ties too
        return _clip_range(math.floor(p_lo) + k0, math.ceil(p_hi) + k1 if m.anchor == "rint"
                           else math.floor(p_hi) + k1, size)
    if pad == PAD_ZEROS and (u_hi <= k0 - 2.0 or u_lo >= high - k0 + 2.0):
        return None
    if pad != PAD_REFLECTION:  # far taps are dropped (zeros) or clip to an edge (border)
        u_lo, u_hi = max(u_lo, -4.0 * (size + 2)), min(u_hi, 4.0 * (size + 2))
    elif u_hi - u_lo >= 2.0 * size + 4:  # a whole period of taps
        return 0, size - 1
    top = math.floor(u_hi) if m.anchor == "floor" else math.ceil(u_hi)  # rint's ties too
    t_lo, t_hi = math.floor(u_lo) + k0, top + k1
    if pad == PAD_REFLECTION:
        t_lo, t_hi = _reflect_interval(t_lo, t_hi, size, align)
    elif pad == PAD_BORDER:
        t_lo, t_hi = min(max(t_lo, 0.0), high), min(max(t_hi, 0.0), high)
    return _clip_range(t_lo, t_hi, size)
