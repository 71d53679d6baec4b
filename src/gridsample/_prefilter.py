"""The B-spline prefilter: samples to spline coefficients, and its adjoint.

A B-spline of degree ``n`` through samples ``x`` has coefficients ``c``
with ``sum_k c[k] B_n(i - k) = x[i]`` for every sample ``i``, the signal
extended beyond its ends by a boundary rule.  The inverse of that
convolution factors into ``n // 2`` first-order recursions, one per pole
``z`` of the sampled B-spline (``|z| < 1``), times the gain
``prod (1 - z)(1 - 1/z)`` (Unser, Aldroubi and Eden, IEEE PAMI 13(3), 1991)::

    causal:      c+[i] = c[i] + z c+[i-1]
    anticausal:  c-[i] = z (c-[i+1] - c+[i])

Each recursion needs its first value from the extension of the line
(docs/semantics.md §4.2):

* ``BC_MIRROR`` (whole-sample symmetric, period ``2(S-1)``) and
  ``BC_HALF`` (half-sample symmetric, period ``2S``) and ``BC_WRAP``
  (period ``S``): the causal start is ``sum_{m >= 0} z^m x[-m]`` over the
  extended line, summed while ``|z|^m`` is above float64 round-off (so
  any length, 1 included, and any number of periods); the anticausal start
  is the closed form of the extension: mirror ``z/(z^2-1) (c+[S-1] + z
  c+[S-2])``, half-sample ``z/(z-1) c+[S-1]``, wrap ``-z sum_{m >= 0} z^m
  c+[(S-1+m) mod S]``.
* Constant (zeros) and border axes follow SciPy's ``map_coordinates``: the
  line is first padded by :data:`SPLINE_PAD` samples of the fill (or of
  the edge value) and then filtered with the mirror (or half-sample) rule;
  the sampler reads that padded array, so the spline is that of the line
  embedded in the constant (or edge) value, the truncation at 12 samples
  acting only past the padding.

The filter is linear; its adjoint (the input gradient and ``grid_push``
with ``prefilter=True``) is the same filter for the half-sample and wrap
rules, whose banded matrices are symmetric, and ``D F D^-1`` for the mirror
rule, ``D = diag(1/2, 1, ..., 1, 1/2)`` (the mirror matrix is a symmetric
one times ``D``), followed by the adjoint of the padding.

Lines run in parallel on the thread pool: an axis is viewed as
``(outer, S, inner)`` and a task filters up to :data:`_WIDTH` neighbouring
lines at once, the inner loop running over contiguous memory.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import numpy as np

from ._dtypes import dtype_name
from ._jit import function
from ._plan import check_allocatable
from ._registry import (
    PAD_BORDER,
    PAD_CONSTANT,
    PAD_MIRROR,
    PAD_REFLECTION,
    PAD_SYMMETRIC,
    PAD_WRAP,
    PAD_ZEROS,
)
from ._threads import run_shared, threads_for

__all__ = ["BC_MIRROR", "BC_HALF", "BC_WRAP", "SPLINE_PAD", "spline_poles", "bspline_samples",
           "boundary", "filter_axis", "filter_window", "coefficients", "coefficients_adjoint",
           "filter_dtype", "coefficient_dtype", "decay_length"]

BC_MIRROR, BC_HALF, BC_WRAP = 0, 1, 2
#: Samples of fill (constant, zeros) or edge (border) added on each side of such an axis
#: before filtering (SciPy's ``_prepad_for_spline_filter``).
SPLINE_PAD = 12
# Lines filtered together by one task: contiguous inner elements, or lines of their own.
_WIDTH = 64
_STRIDED_WIDTH = 8
# Work of one pole on one element of one axis (a causal and an anticausal step) in the tap
# reads the thread pool measures work in (gridsample._threads.threads_for): 2.5 ns a step
# pair at one thread, where a forward tap read is 0.25 ns; two threads broke even between
# 1x3x64² (89 µs at one thread, 1.47x at two) and 1x3x128² (0.81x), cubic B-spline,
# Intel Xeon VM.
_TAPS_PER_POLE = 20
# The causal sums stop once |z|^m is below this (float64 round-off of a unit sample).
_TAIL = 2.0 ** -60


def bspline_samples(degree: int) -> tuple:
    """``B_n(k)`` at the integers ``k = -n//2 … n//2``, exact (fractions).

    From the truncated powers: ``B_n(s) = 1/n! sum_j (-1)^j C(n+1, j)
    (s + (n+1)/2 - j)_+^n``.
    """
    n = degree
    half = Fraction(n + 1, 2)
    out = []
    for k in range(-(n // 2), n // 2 + 1):
        total = Fraction(0)
        for j in range(n + 2):
            t = k + half - j
            if t > 0:
                total += (-1) ** j * math.comb(n + 1, j) * t ** n
        out.append(total / math.factorial(n))
    return tuple(out)


@cache
def spline_poles(degree: int) -> tuple:
    """The poles ``|z| < 1`` of the sampled B-spline of ``degree`` (2 … 7), largest first.

    Roots of ``sum_k B_n(k) z^(k + n//2)``; they are real, negative and come
    in pairs ``z, 1/z``.  (Degree 3: ``sqrt(3) - 2``.)
    """
    coeffs = [float(v) for v in bspline_samples(degree)]
    roots = np.roots(coeffs[::-1])
    inside = sorted((float(r.real) for r in roots if abs(r) < 1), key=abs, reverse=True)
    return tuple(inside)


def _decay(z: float) -> int:
    """Steps after which a recursion on pole ``z`` has forgotten its input: ``|z|^m < 2**-60``."""
    return max(2, math.ceil(math.log(_TAIL) / math.log(abs(z))))


def decay_length(degree: int) -> int:
    """Samples after which the prefilter's recursions have forgotten a value to float64
    round-off (``|z|^m < 2**-60`` for the largest pole): 32 for degree 3, 50 for 5, 67 for 7.

    A chunk filtered with this many samples of its neighbours on each side gets the
    coefficients of the whole array (:mod:`gridsample.dask`), whatever rule starts the
    recursions at the chunk's cut ends.
    """
    return _decay(spline_poles(degree)[0])


def filter_dtype(dtype: np.dtype) -> np.dtype:
    """The real dtype the prefilter computes in: float64 for float64, integer and bool ``x``."""
    name = dtype_name(np.dtype(dtype))
    return np.dtype(np.float32 if name in ("float16", "bfloat16", "float32", "complex64")
                    else np.float64)


def coefficient_dtype(dtype: np.dtype) -> np.dtype:
    """The coefficients' dtype: :func:`filter_dtype`, complex for complex ``x``."""
    real = filter_dtype(dtype)
    return np.result_type(real, np.complex64) if np.dtype(dtype).kind == "c" else real


def boundary(pad: int, align_corners: bool) -> tuple:
    """``(rule, pre-padding, what the pre-padding holds)`` of a padding code.

    Reflection pads tap indices over ``[-1/2, S-1/2]`` (half-sample) or,
    with ``align_corners``, over ``[0, S-1]`` (whole-sample).
    """
    if pad in (PAD_ZEROS, PAD_CONSTANT):
        return BC_MIRROR, SPLINE_PAD, "fill"
    if pad == PAD_BORDER:
        return BC_HALF, SPLINE_PAD, "edge"
    if pad == PAD_MIRROR or (pad == PAD_REFLECTION and align_corners):
        return BC_MIRROR, 0, ""
    if pad in (PAD_SYMMETRIC, PAD_REFLECTION):
        return BC_HALF, 0, ""
    if pad == PAD_WRAP:
        return BC_WRAP, 0, ""
    raise ValueError(f"padding code {pad} is not registered")  # validation refuses it


@function
def _fold(i, n, bc):
    """Index ``i`` of the extended line, folded into ``0 … n-1`` (``n >= 2`` for mirror)."""
    if bc == BC_WRAP:
        m = i % n
        return m
    if bc == BC_HALF:
        m = i % (2 * n)
        return m if m < n else 2 * n - 1 - m
    m = i % (2 * n - 2)
    return m if m < n else 2 * n - 2 - m


@function
def _filter_lines(first, stop, c, nblk, poles, gain, bc, terms):
    """Filter lines ``c[o, :, j]`` of blocks ``first … stop-1`` in place.

    Task ``t`` is line group ``(o, b) = divmod(t, nblk)``: columns
    ``b * W … b * W + W - 1`` of ``c[o]``.  ``terms[p]`` is the length of
    pole ``p``'s causal sums.
    """
    n = c.shape[1]
    inner = c.shape[2]
    width = -(-inner // nblk)
    acc = np.empty(width, c.dtype)
    for task in range(first, stop):
        o = task // nblk
        j0 = (task - o * nblk) * width
        j1 = min(inner, j0 + width)
        if n == 1:
            continue  # a constant line (every rule): its coefficients are its samples
        line = c[o]
        for i in range(n):
            for j in range(j0, j1):
                line[i, j] *= gain
        for p in range(poles.size):
            z = poles[p]
            # causal start: sum_m z^m x[-m] over the extended line
            for j in range(j0, j1):
                acc[j - j0] = line[0, j]
            zm = z
            for m in range(1, terms[p]):
                src = _fold(-m, n, bc)
                for j in range(j0, j1):
                    acc[j - j0] += zm * line[src, j]
                zm *= z
            for j in range(j0, j1):
                line[0, j] = acc[j - j0]
            for i in range(1, n):
                for j in range(j0, j1):
                    line[i, j] += z * line[i - 1, j]
            # anticausal start
            if bc == BC_MIRROR:
                k = z / (z * z - 1)
                for j in range(j0, j1):
                    line[n - 1, j] = k * (line[n - 1, j] + z * line[n - 2, j])
            elif bc == BC_HALF:
                k = z / (z - 1)
                for j in range(j0, j1):
                    line[n - 1, j] *= k
            else:
                for j in range(j0, j1):
                    acc[j - j0] = line[n - 1, j]
                zm = z
                for m in range(1, terms[p]):
                    src = (n - 1 + m) % n
                    for j in range(j0, j1):
                        acc[j - j0] += zm * line[src, j]
                    zm *= z
                for j in range(j0, j1):
                    line[n - 1, j] = -z * acc[j - j0]
            for i in range(n - 2, -1, -1):
                for j in range(j0, j1):
                    line[i, j] = z * (line[i + 1, j] - line[i, j])


def filter_axis(c: np.ndarray, axis: int, degree: int, bc: int, adjoint: bool = False) -> None:
    """Filter the real, C-contiguous array ``c`` along ``axis`` in place (or apply the adjoint)."""
    n = c.shape[axis]
    if n == 0 or c.size == 0:
        return
    outer = math.prod(c.shape[:axis])
    inner = math.prod(c.shape[axis + 1:])
    c3 = c.reshape(outer, n, inner)
    if inner == 1:
        # Contiguous lines: a task filters up to _WIDTH lines side by side (as columns of the
        # transposed view), whose recursions are independent: a scalar recursion on one line
        # at a time waits on each step's latency (measured 4-5x slower).
        outer, inner = 1, outer
        c3 = c.reshape(inner, n).T[None]
    # Lines whose elements lie a power of two apart share cache sets: few at a time there.
    width = _WIDTH if c3.strides[2] == c.itemsize else _STRIDED_WIDTH
    scale_ends = adjoint and bc == BC_MIRROR and n > 1
    if scale_ends:  # D^-1: the mirror rule's adjoint is D F D^-1
        c3[:, 0] *= 2
        c3[:, n - 1] *= 2
    poles = spline_poles(degree)
    gain = 1.0
    for z in poles:
        gain *= (1 - z) * (1 - 1 / z)
    terms = np.array([_decay(z) for z in poles], np.int64)
    nblk = -(-inner // width)
    tasks = outer * nblk
    run_shared(_filter_lines, tasks, (c3, nblk, np.array(poles, c.dtype), c.dtype.type(gain),
                                      bc, terms),
               threads_for(c.size, _TAPS_PER_POLE * len(poles), 0))
    if scale_ends:
        c3[:, 0] *= 0.5
        c3[:, n - 1] *= 0.5


def _spatial_axes(ndim: int, channel_last: bool) -> list:
    """Array axes of the spatial dimensions, in grid order (innermost spatial axis first)."""
    axes = list(range(1, ndim - 1)) if channel_last else list(range(2, ndim))
    return axes[::-1]


def _along(ndim: int, axis: int, part: slice) -> tuple:
    """The index that takes ``part`` of ``axis`` and all of the others."""
    index = [slice(None)] * ndim
    index[axis] = part
    return tuple(index)


def _filter_all(c: np.ndarray, axes: list, bcs: list, degree: int, adjoint: bool) -> None:
    """Filter C-contiguous ``c`` along every spatial axis by its rule (complex: each part)."""
    if c.dtype.kind == "c":
        for part in ("real", "imag"):
            values = np.ascontiguousarray(getattr(c, part))
            _filter_all(values, axes, bcs, degree, adjoint)
            getattr(c, part)[...] = values
        return
    for ax, bc in zip(axes, bcs):
        filter_axis(c, ax, degree, bc, adjoint)


def coefficients(x: np.ndarray, degree: int, paddings: tuple, align_corners: bool,
                 channel_last: bool, fill, prepad: bool = True, values: bool = True) -> tuple:
    """The spline coefficients of ``x`` for sampling, and each axis's pre-padding.

    Returns ``(c, pads)``: ``c`` in :func:`filter_dtype` (complex for complex
    ``x``), C-contiguous in ``x``'s layout, larger by ``2 P`` on each axis
    pre-padded by ``P`` (``pads``, grid order).  ``paddings`` is one code
    per grid component; ``fill`` one value per channel, or None for 0.
    ``prepad=False``: no pre-padding (``spline_coefficients``, SciPy's
    ``spline_filter``).  ``values=False``: only the layout is wanted (an input
    gradient, a push, which never read the coefficients): zeros, unfiltered.
    """
    rules = [boundary(p, align_corners) for p in paddings]
    pads = tuple(rule[1] if prepad else 0 for rule in rules)
    if not values:
        axes = _spatial_axes(x.ndim, channel_last)
        shape = list(x.shape)
        for ax, p in zip(axes, pads):
            shape[ax] += 2 * p
        return np.zeros(shape, coefficient_dtype(x.dtype)), pads
    c = filter_window(x, degree, [rule[0] for rule in rules], [(p, p) for p in pads],
                      [rule[2] for rule in rules], channel_last, fill)
    return c, pads


def filter_window(x: np.ndarray, degree: int, bcs: list, margins: list, holds: list,
                  channel_last: bool, fill) -> np.ndarray:
    """``x`` pre-padded by ``margins`` and filtered by the rules ``bcs`` (both per grid
    component): a new C-contiguous array in :func:`coefficient_dtype`.

    ``margins[k]`` is ``(low, high)``: the samples added before and after
    the axis, holding the fill (``holds[k] == "fill"``: ``fill`` per channel,
    or 0) or the edge value (``"edge"``).  :func:`coefficients` pads both ends;
    a chunk of a larger array (:mod:`gridsample.dask`) pads only the ends it
    shares with the array, its other ends carrying a halo of neighbouring
    samples instead.
    """
    axes = _spatial_axes(x.ndim, channel_last)
    shape = list(x.shape)
    for ax, (low, high) in zip(axes, margins):
        shape[ax] += low + high
    dtype = coefficient_dtype(x.dtype)
    what = (f"x's B-spline coefficients (x pre-padded by {[sum(m) for m in margins]} samples "
            f"per grid component)")
    check_allocatable(shape, dtype.itemsize, what)
    try:
        c = np.empty(shape, dtype)
    except MemoryError:  # (the margins multiply a small x of many axes many times over)
        gib = math.prod(shape) * dtype.itemsize / 2**30
        raise MemoryError(f"{what} would take {gib:.1f} GiB {tuple(shape)}") from None
    inside = [slice(None)] * x.ndim
    for ax, (low, _) in zip(axes, margins):
        inside[ax] = slice(low, low + x.shape[ax])
    c[tuple(inside)] = x
    # The pre-padding, axis by axis (as numpy.pad: later axes pad the earlier ones' margins).
    for ax, (low, high), kind in zip(axes, margins, holds):
        end = shape[ax] - high
        if kind == "edge":
            if low:
                c[_along(c.ndim, ax, slice(0, low))] = c[_along(c.ndim, ax, slice(low, low + 1))]
            if high:
                c[_along(c.ndim, ax, slice(end, None))] = c[_along(c.ndim, ax,
                                                                   slice(end - 1, end))]
        elif low or high:
            value = 0 if fill is None else _channel_fill(fill, x.ndim, channel_last)
            c[_along(c.ndim, ax, slice(0, low))] = value
            c[_along(c.ndim, ax, slice(end, None))] = value
    _filter_all(c, axes, bcs, degree, False)
    return c


def coefficients_adjoint(gc: np.ndarray, degree: int, paddings: tuple, align_corners: bool,
                         channel_last: bool, pads: tuple) -> np.ndarray:
    """The adjoint of :func:`coefficients`' linear part: a gradient on ``c`` to one on ``x``.

    ``gc`` (C-contiguous, the padded shape) is overwritten.  The fill is a
    constant, not a linear term: it has no adjoint.  A border margin was a
    copy of its edge sample, so its gradient adds to that sample's.
    """
    axes = _spatial_axes(gc.ndim, channel_last)
    rules = [boundary(p, align_corners) for p in paddings]
    _filter_all(gc, axes, [rule[0] for rule in rules], degree, True)
    out = gc
    for ax, p, (_, _, holds) in zip(axes, pads, rules):
        if not p:
            continue
        size = out.shape[ax] - 2 * p
        core = out[_along(out.ndim, ax, slice(p, p + size))].copy()
        if holds == "edge":
            low = out[_along(out.ndim, ax, slice(0, p))].sum(axis=ax, keepdims=True)
            high = out[_along(out.ndim, ax, slice(p + size, None))].sum(axis=ax, keepdims=True)
            core[_along(out.ndim, ax, slice(0, 1))] += low
            core[_along(out.ndim, ax, slice(size - 1, size))] += high
        out = core
    return out


def _channel_fill(fill, ndim: int, channel_last: bool):
    """One value per channel, shaped to broadcast over a margin of an ``ndim`` array."""
    fill = np.asarray(fill)
    return fill if channel_last else fill.reshape((-1,) + (1,) * (ndim - 2))
