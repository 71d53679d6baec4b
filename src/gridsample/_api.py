"""The public forward operator."""

from __future__ import annotations

import numpy as np

from ._dtypes import is_string
from ._engine import PreparedForward, run_forward
from ._plan import plan_forward
from ._prepared import PreparedCache, signature
from ._splines import cast_result, coefficient_plan

__all__ = ["grid_sample"]

# The prepared runs of recent calls (gridsample._prepared).
_prepared = PreparedCache()


def grid_sample(x, grid, mode="linear", padding_mode="zeros", align_corners=False, *,
                channel_last=False, fill_value=0, cubic_a=-0.75, grid_units="normalized",
                displacement=False, prefilter=True) -> np.ndarray:
    """Sample ``x`` at the normalized positions held in ``grid``.

    Parameters
    ----------
    x : array_like, shape (N, C, d1, ..., dr), or (N, d1, ..., dr, C) with ``channel_last``
        Input with ``r >= 1`` spatial axes, any strides.  Any ONNX tensor type:
        float16, bfloat16 (``ml_dtypes``), float32, float64, int8-int64,
        uint8-uint64, bool, complex64, complex128, and strings (str, bytes or
        object arrays; nearest only).
    grid : array_like, shape (N, D1, ..., Dr, r) or (1, D1, ..., Dr, r)
        Normalized sampling positions, mostly in ``[-1, 1]``; float16,
        bfloat16, float32 or float64 (independent of ``x``).  ``grid[..., 0]`` indexes the
        innermost spatial axis of ``x``
        (its width), ``grid[..., 1]`` the next one, and so on.  A batch of 1
        is broadcast over ``x``'s batch.
    mode : {"linear", "nearest", "cubic", "bspline2" ... "bspline7"} or 0 ... 8, default "linear"
        Interpolation.  ``"bilinear"``/``"trilinear"`` and
        ``"bicubic"``/``"tricubic"`` are aliases.  Cubic is Keys' cubic
        convolution (A = -0.75) over 4 taps per axis, for every rank;
        ``"bsplineN"`` a B-spline of degree N over N + 1 taps per axis
        (docs/semantics.md §4.2).
    padding_mode : str or int, or a tuple of them (one per grid component), default "zeros"
        What positions outside ``x`` read.  The ONNX three: ``"zeros"`` (0),
        ``"border"`` (the nearest edge value), ``"reflection"`` (the
        position reflected back into ``x``), codes 0, 1, 2.  Beyond ONNX,
        padding each tap index for every mode (docs/semantics.md §3.3):
        ``"constant"`` (3; taps outside read ``fill_value``), ``"mirror"``
        (4; whole-sample symmetric ``d c b | a b c d | c b a``),
        ``"symmetric"`` (5; half-sample ``c b a | a b c | c b a``),
        ``"wrap"`` (6; periodic, alias ``"periodic"``/``"circular"``).  A
        tuple pads each grid component's axis its own way, ``grid[..., 0]``'s
        (the width) first.
    align_corners : bool or {0, 1}, default False
        ``True``: -1 and 1 are the centres of the corner elements.
        ``False``: -1 and 1 are the outer edges of the corner elements.
    channel_last : bool, default False
        ``x`` is ``(N, d1, ..., dr, C)`` and the output ``(N, D1, ..., Dr, C)``
        (CANN's NHWC / NDHWC), computed in that layout without a transpose.
    fill_value : scalar or sequence of C, default 0
        What taps outside read under ``"constant"`` padding, cast to ``x``'s
        dtype as results are (a string for string ``x``).
    cubic_a : float, default -0.75
        Keys' coefficient of ``mode="cubic"`` (-0.75: PyTorch, OpenCV,
        onnxruntime; -0.5: Pillow, TensorFlow, Keys' own choice), at most 1000 in
        magnitude.
    grid_units : {"normalized", "pixels"}, default "normalized"
        ``"pixels"``: ``grid[..., k]`` is an element coordinate along spatial
        axis ``r-1-k``, element ``i`` centred at ``i`` (no unnormalization;
        ``align_corners`` then only picks ``"reflection"``'s interval).
    displacement : bool, default False
        ``grid`` holds displacements: point ``p`` reads at ``identity(p) +
        grid(p)``, the identity being ``affine_grid``'s for the output shape
        (normalized units, with ``align_corners``) or ``p``'s own index (pixels).
    prefilter : bool, default True
        B-spline modes: ``x`` holds samples, and the spline through them is
        sampled (its coefficients computed first, by each axis's padding
        rule); ``False``: ``x`` holds the coefficients
        (:func:`gridsample.spline_coefficients`).  Other modes ignore it.

    Returns
    -------
    ndarray, shape (N, C, D1, ..., Dr), or (N, D1, ..., Dr, C) with ``channel_last``
        Same dtype as ``x``.  Integer and bool results are the float64
        interpolation rounded half to even and saturated; float16/bfloat16
        results the float32 computation rounded to nearest even.

    Raises
    ------
    GridSampleError
        A bad value: unknown mode, wrong shapes, batch mismatch, an empty
        input with a non-empty output.  :class:`GridSampleTypeError` (also a
        ``TypeError``) for arguments of the wrong type or dtype.

    Notes
    -----
    Unnormalization of ``g`` on an axis of size ``S``: ``(g + 1) / 2 * (S - 1)``
    with ``align_corners``, ``((g + 1) * S - 1) / 2`` without.  Linear and
    nearest pad the continuous coordinate (border clips to ``[0, S-1]``,
    reflection reflects then clips); cubic pads each of its 4 tap indices.
    A NaN coordinate gives NaN; ``±inf`` is infinitely far out (0 with zeros,
    the edge with border, NaN with reflection).  See ``docs/semantics.md`` §2-§5.

    Examples
    --------
    >>> import numpy as np, gridsample
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> grid = np.zeros((1, 1, 1, 2), np.float32)          # the centre
    >>> gridsample.grid_sample(x, grid, align_corners=True)
    array([[[[7.5]]]], dtype=float32)
    """
    key = signature((x, grid), (mode, padding_mode, align_corners, channel_last, fill_value,
                                cubic_a, grid_units, displacement, prefilter))
    prepared = _prepared.get(key)
    if prepared is not None:
        return prepared.run(x, grid)
    plan, x, grid = plan_forward(x, grid, mode, padding_mode, align_corners, channel_last,
                                 fill_value=fill_value, cubic_a=cubic_a, grid_units=grid_units,
                                 displacement=displacement, prefilter=prefilter)
    if plan.prefilter:
        c, cplan = coefficient_plan(plan, x)
        return cast_result(run_forward(cplan, c, grid), plan.out_dtype)
    if is_string(plan.out_dtype):
        return run_forward(plan, x, grid)
    prepared = PreparedForward(plan, x.shape, x.strides, x.itemsize)
    _prepared.put(key, prepared)
    return prepared.run(x, grid)
