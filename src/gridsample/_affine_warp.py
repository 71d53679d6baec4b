"""affine_warp: sampling through affine maps without the sampling grid.

``affine_warp(x, theta, ...)`` equals ``grid_sample(x, affine_grid(theta, ...), ...)`` bit
for bit: the grid of an affine map is made a band of output rows at a time by
``affine_grid``'s own row kernel (``gridsample._affine._affine_rows``, fed the whole grid's
base coordinates, so each point gets the bits the whole grid would), and each band is
sampled while it is in cache.
The whole grid (``r`` coordinates per output point: as large as a float32 output with
``r`` channels) is never allocated, written or read back.
"""

from __future__ import annotations

import math

import numpy as np

from ._affine import _affine_rows, _compute_dtype, parse_affine_args, window_bases
from ._dtypes import is_half, is_string
from ._engine import Chunks, PreparedForward, run_forward
from ._errors import GridSampleError, GridSampleTypeError, describe
from ._jit import read_only
from ._options import is_integer, parse_flag
from ._plan import as_array, check_allocatable, plan_forward, stand_in
from ._prepared import PreparedCache, signature
from ._splines import cast_result, coefficient_plan
from ._threads import num_threads

__all__ = ["affine_warp", "warp_theta"]

# Output points per band (over the grid's batch): 128 Ki points x 2 axes x 4 bytes = 1 MiB
# of float32 coordinates per thread (measured on 2 threads, Zen 4: 32-256 Ki points were
# within noise of each other; fewer points per band pay more per-band dispatch).
_BAND_POINTS = 1 << 17

# The prepared warps of recent calls (_Warp).
_prepared = PreparedCache()


def warp_arguments(x_shape, theta, out_shape, align_corners, channel_last):
    """Validate an affine warp of an ``x`` of shape ``x_shape`` (in memory or a Dask
    array's): 2 or 3 spatial axes, ``theta`` and ``out_shape`` (default: ``x``'s spatial
    shape) of that rank, ``theta``'s batch ``x``'s or 1.  Returns :func:`warp_theta`'s
    ``theta``, output spatial shape and ``align_corners``."""
    x_shape = tuple(x_shape)
    rank = len(x_shape) - 2
    if rank not in (2, 3):
        raise GridSampleError(f"x has shape {x_shape}; affine_warp takes 2 or 3 spatial axes "
                              "(N, C, H, W) or (N, C, D, H, W) (or channel-last)")
    in_spatial = x_shape[1:-1] if parse_flag("channel_last", channel_last) else x_shape[2:]
    if out_shape is not None:
        out_shape = _parse_out_shape(out_shape)  # (once: it may be an iterator)
        if len(out_shape) != rank:
            raise GridSampleError(f"out_shape={out_shape} has {len(out_shape)} axes; x has "
                                  f"shape {x_shape} ({rank} spatial axes), so it must have "
                                  f"{rank}")
    theta, out_spatial, align = warp_theta(
        theta, in_spatial if out_shape is None else out_shape, align_corners,
        None if out_shape is not None else f"x of shape {x_shape}")
    if theta.shape[0] not in (1, x_shape[0]):
        raise GridSampleError(f"theta has batch size {theta.shape[0]} (shape {theta.shape}); "
                              f"it must equal x's batch size {x_shape[0]} or be 1 to broadcast")
    return theta, out_spatial, align


def warp_theta(theta, out_spatial, align_corners, shape_from=None):
    """Validate an affine warp's ``theta`` for the output spatial shape ``out_spatial``
    (the argument ``out_shape``).

    ``theta`` of shape ``(r, r + 1)`` is a batch of one.  Returns ``theta`` (N', r, r + 1),
    the output spatial shape as a tuple and ``align_corners`` as a bool.  ``shape_from``:
    what gave ``out_spatial`` where the caller did not pass it (``"x of shape ..."``), for
    the messages.
    """
    theta = as_array("theta", theta)
    given = theta.shape  # (named as passed in the message below)
    if theta.ndim == 2:
        theta = theta[None]
    spatial = _parse_out_shape(out_spatial)
    r = len(spatial)
    if theta.ndim != 3 or theta.shape[1:] != (r, r + 1):
        raise GridSampleError(
            f"theta has shape {given}; for {shape_from or f'out_shape={spatial}'} ({r} spatial "
            f"axes) it must be (N, {r}, {r + 1}) or ({r}, {r + 1})")
    # affine_grid's own checks (theta's dtype) for the grid the warp stands for
    theta, spatial, align = parse_affine_args(theta, (theta.shape[0], 1, *spatial),
                                              align_corners)
    return theta, spatial, align


def _parse_out_shape(out_shape) -> tuple:
    """``out_shape`` as a tuple of 2 or 3 non-negative ints (its own errors, by its name)."""
    allowed = "a sequence of 2 or 3 non-negative integers (D1, ..., Dr)"
    try:
        if isinstance(out_shape, (str, bytes)):
            raise TypeError
        values = list(out_shape)  # (a 0-d array or a number: TypeError)
    except TypeError:
        raise GridSampleTypeError(f"out_shape={describe(out_shape)} must be {allowed}") from None
    if not all(map(is_integer, values)):
        raise GridSampleTypeError(f"out_shape={describe(out_shape)} holds non-integers; it "
                                  f"must be {allowed}")
    if len(values) not in (2, 3) or any(int(v) < 0 for v in values):
        raise GridSampleError(f"out_shape={describe(out_shape)} must be {allowed}")
    return tuple(int(v) for v in values)


def affine_warp(x, theta, out_shape=None, mode="linear", padding_mode="zeros",
                align_corners=False, *, channel_last=False, fill_value=0, cubic_a=-0.75,
                prefilter=True) -> np.ndarray:
    """Warp ``x`` by affine maps without making the sampling grid.

    Equal, bit for bit, to ``grid_sample(x, affine_grid(theta, (N, C, *out_shape),
    align_corners), mode, padding_mode, align_corners, ...)``, in less time and with no
    memory beyond the output (and a B-spline's coefficients).

    Parameters
    ----------
    x : array_like, shape (N, C, d1, ..., dr), or (N, d1, ..., dr, C) with ``channel_last``
        r = 2 or 3 spatial axes; any element type :func:`grid_sample` takes.
    theta : array_like, shape (N or 1, r, r + 1) or (r, r + 1)
        :func:`affine_grid`'s matrices, mapping output normalized positions to input
        normalized positions; float16, bfloat16, float32 or float64 (the dtype of the
        grid ``affine_grid`` would make).  A batch of one applies to every item.
    out_shape : sequence of int, optional
        The output's spatial shape ``(D1, ..., Dr)``; default: ``x``'s.
    mode, padding_mode, align_corners, channel_last, fill_value, cubic_a, prefilter
        As in :func:`grid_sample` (an affine grid is normalized and absolute).

    Returns
    -------
    ndarray, shape (N, C, D1, ..., Dr), or (N, D1, ..., Dr, C) with ``channel_last``
        In ``x``'s dtype.

    Raises
    ------
    GridSampleError
        Bad shapes or values, naming the argument; :class:`GridSampleTypeError` for bad
        types.

    Examples
    --------
    >>> import numpy as np, gridsample
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> flip = np.array([[-1, 0, 0], [0, 1, 0]], np.float32)  # mirror left-right
    >>> gridsample.affine_warp(x, flip)[0, 0, 0]
    array([3., 2., 1., 0.], dtype=float32)
    """
    # out_shape in the key by value, with its items' types (a list as a tuple); any other
    # sequence (a generator, one hashed by identity) takes the full path every time
    shape = tuple(out_shape) if type(out_shape) is list else out_shape
    key = (signature((x, theta), (shape, mode, padding_mode, align_corners, channel_last,
                                  fill_value, cubic_a, prefilter))
           if shape is None or type(shape) is tuple else None)
    warp = _prepared.get(key)
    if warp is not None:
        return warp.sample(x, theta)
    x = as_array("x", x)
    theta, out_spatial, align = warp_arguments(x.shape, theta, out_shape, align_corners,
                                               channel_last)
    rank = len(out_spatial)
    # (the grid the warp stands for, whose stub below must be countable; plan_forward
    # checks the output)
    check_allocatable((theta.shape[0], *out_spatial, rank), theta.dtype.itemsize,
                      f"out_shape={out_spatial} with theta {theta.shape} asks for a grid that")
    grid_stub = stand_in((theta.shape[0], *out_spatial, rank), theta.dtype)
    plan, x, _ = plan_forward(x, grid_stub, mode, padding_mode, align, channel_last,
                              fill_value=fill_value, cubic_a=cubic_a, prefilter=prefilter)
    if plan.is_empty:  # (no item, channel or output point: nothing to band)
        return np.empty(plan.out_shape, plan.out_dtype)
    if plan.prefilter:
        c, cplan = coefficient_plan(plan, x)
        warp = _Warp(cplan, theta.dtype, out_spatial, align, None)
        return cast_result(warp.sample(c, theta), plan.out_dtype)
    if is_string(plan.out_dtype):
        return _Warp(plan, theta.dtype, out_spatial, align, None).sample(x, theta)
    warp = _Warp(plan, theta.dtype, out_spatial, align,
                 PreparedForward(plan, x.shape, x.strides, x.itemsize))
    _prepared.put(key, warp)
    return warp.sample(x, theta)


class _Warp:
    """An affine warp as planned for its arrays' shapes, strides and dtypes, its options and
    the settings in force: what does not depend on the values of ``x`` and ``theta``.

    ``prepared``: the plan's prepared run (:class:`gridsample._engine.PreparedForward`),
    kept per call signature (:mod:`gridsample._prepared`) so that repeated warps of small
    images (a spatial transformer's batches) skip validation and planning; None for the
    warps that are not kept (B-spline coefficients, strings)."""

    def __init__(self, plan, theta_dtype, out_spatial, align, prepared):
        self.plan, self.prepared = plan, prepared
        self.half = is_half(theta_dtype)
        self.dtype = _compute_dtype(theta_dtype)
        self.theta_dtype, self.out_spatial = theta_dtype, out_spatial
        zeros = (0,) * len(out_spatial)
        self.bases, self.sizes = window_bases(self.dtype, out_spatial, zeros, out_spatial, align)

    def sample(self, x, theta) -> np.ndarray:
        """The warp of ``x`` (the plan's input: for B-splines, their coefficients) by
        ``theta`` (shape (N or 1, r, r + 1) or (r, r + 1), of the planned dtype)."""
        plan, out_spatial = self.plan, self.out_spatial
        rank = len(out_spatial)
        theta_c = np.ascontiguousarray(theta[None] if theta.ndim == 2 else theta,
                                       dtype=self.dtype)
        bases, sizes = self.bases, self.sizes
        theta_ro = read_only(theta_c)
        prepared = self.prepared
        if not self.half and prepared is not None and prepared.vector is not None:
            # A vector kernel serves the plan: each of its blocks makes its own points from
            # theta, no band is made (a float16/bfloat16 theta's grid is rounded to its dtype
            # first, which only the bands below do).
            return prepared.run(x, None, None, (theta_ro, bases, sizes))
        # Bands of whole rows of the outermost output axis: each a contiguous range of
        # points, made by affine_grid's row kernel from the whole grid's base coordinates.
        # One matrix (theta of batch 1) serves every item with each band; a batch of
        # matrices is banded item by item, so that a thread's share of the bands is a run of
        # whole items, as grid_sample splits a batch.
        width = out_spatial[-1]
        lines = math.prod(out_spatial[1:-1])  # lines of `width` points per outermost index
        items = plan.grid_batch
        outer = max(1, _BAND_POINTS // max(1, lines * width * (1 if items > 1 else plan.batch)))
        per_item = -(-out_spatial[0] // outer)
        # At least two bands per thread where the outermost axis allows: every thread makes
        # and samples its own.
        wanted = -(-2 * num_threads() // items)
        if per_item < wanted:
            outer = max(1, out_spatial[0] // wanted)
            per_item = -(-out_spatial[0] // outer)

        def band(i):
            n, k = divmod(i, per_item)
            o0 = k * outer
            count = (min(out_spatial[0], o0 + outer) - o0) * lines
            grid = np.empty((count, width, rank), theta_c.dtype)
            _affine_rows(0, count, theta_ro, bases, sizes, (n * out_spatial[0] + o0) * lines,
                         grid)
            grid = grid.reshape(1, count * width, rank)
            if self.half:  # the grid affine_grid makes, read as grid_sample reads it
                grid = grid.astype(self.theta_dtype).astype(plan.coord_dtype)
            return (n if items > 1 else None), o0 * lines * width, grid

        bands = Chunks(items * per_item, band)
        affine = None if self.half else (theta_ro, bases, sizes)
        if prepared is not None:
            return prepared.run(x, None, bands, affine)
        return run_forward(plan, x, None, bands, affine)
