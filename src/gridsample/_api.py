"""The public forward operator."""

from __future__ import annotations

import numpy as np

from ._engine import run_forward
from ._plan import plan_forward

__all__ = ["grid_sample"]


def grid_sample(x, grid, mode="linear", padding_mode="zeros", align_corners=False, *,
                channel_last=False) -> np.ndarray:
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
    mode : {"linear", "nearest", "cubic"} or {0, 1, 2}, default "linear"
        Interpolation.  ``"bilinear"``/``"trilinear"`` and
        ``"bicubic"``/``"tricubic"`` are aliases.  Cubic is Keys' cubic
        convolution (A = -0.75) over 4 taps per axis, for every rank.
    padding_mode : {"zeros", "border", "reflection"} or {0, 1, 2}, default "zeros"
        What positions outside ``x`` read: 0, the nearest edge value, or the
        value at the position reflected back into ``x``.
    align_corners : bool or {0, 1}, default False
        ``True``: -1 and 1 are the centres of the corner elements.
        ``False``: -1 and 1 are the outer edges of the corner elements.
    channel_last : bool, default False
        ``x`` is ``(N, d1, ..., dr, C)`` and the output ``(N, D1, ..., Dr, C)``
        (CANN's NHWC / NDHWC), computed in that layout without a transpose.

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
    plan, x, grid = plan_forward(x, grid, mode, padding_mode, align_corners, channel_last)
    return run_forward(plan, x, grid)
