"""Validate the arguments of the forward operator and build its plan.

Validation happens once, here, before any kernel runs: kernels never raise.
The result is a small immutable :class:`ForwardPlan` plus the input arrays in
a form the engine accepts (native byte order); option names have become
integer codes (:mod:`gridsample._options`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ._dtypes import (
    GRID_DTYPE_NAMES,
    X_DTYPE_NAMES,
    coord_dtype,
    dtype_name,
    is_string,
    x_conversion,
)
from ._errors import GridSampleError, GridSampleTypeError, describe
from ._options import (
    MODE_NAMES,
    MODE_NEAREST,
    parse_align_corners,
    parse_flag,
    parse_mode,
    parse_padding,
)
from ._registry import MAX_TAPS_PER_POINT, mode_of, taps_per_point

__all__ = ["ForwardPlan", "plan_forward", "as_array"]


@dataclass(frozen=True)
class ForwardPlan:
    """Everything the engine needs to know about one forward call.

    Shapes are logical (channel-first): ``x`` is ``(batch, channels,
    *in_spatial)`` and the output ``(batch, channels, *out_spatial)``; with
    ``channel_last`` the arrays themselves hold the channel axis last.
    """

    rank: int
    mode: int
    padding: int
    align_corners: bool
    channel_last: bool
    batch: int
    channels: int
    in_spatial: tuple
    out_spatial: tuple
    grid_batch: int
    out_dtype: np.dtype
    coord_dtype: np.dtype
    weight_dtype: np.dtype

    @property
    def out_shape(self) -> tuple:
        """Shape of the output array in its memory layout."""
        if self.channel_last:
            return (self.batch, *self.out_spatial, self.channels)
        return (self.batch, self.channels, *self.out_spatial)

    @property
    def out_points(self) -> int:
        """Number of output points per batch item, ``prod(out_spatial)``."""
        return math.prod(self.out_spatial)

    @property
    def is_empty(self) -> bool:
        return self.batch == 0 or self.channels == 0 or self.out_points == 0


def _grid_layout(rank: int) -> str:
    """The grid's layout for ``rank`` spatial axes: ``(N, D1, D2, 2)``, ``(N, D1, ..., D5, 5)``."""
    axes = [f"D{k}" for k in range(1, rank + 1)]
    if rank > 3:
        axes = [axes[0], "...", axes[-1]]
    return f"(N, {', '.join(axes)}, {rank})"


def as_array(name: str, value: object) -> np.ndarray:
    """``np.asarray(value)`` with the package's error for non-array input.

    Arrays in non-native byte order are converted once (Numba reads native
    order only).
    """
    if isinstance(value, np.ndarray):
        arr = value
    else:
        try:
            arr = np.asarray(value)
        except Exception as exc:  # ragged lists and other non-arrays
            raise GridSampleTypeError(
                f"{name}={describe(value)} cannot be read as an array: {exc}"
            ) from None
    if arr.dtype.byteorder not in ("=", "|") and not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def _check_dtypes(x: np.ndarray, grid: np.ndarray, mode_code: int) -> None:
    if dtype_name(x.dtype) not in X_DTYPE_NAMES and not is_string(x.dtype):
        raise GridSampleTypeError(
            f"x has dtype {x.dtype}; allowed dtypes: {', '.join(X_DTYPE_NAMES)}, "
            f"and str / bytes / object (strings, mode='nearest' only)"
        )
    if x.dtype.kind == "O":
        number = next((v for v in x.flat if isinstance(v, numbers.Number)), None)
        if number is not None:
            raise GridSampleTypeError(
                f"x has dtype object and holds numbers (such as {number!r}, a "
                f"{type(number).__name__}); object arrays are sampled as strings, so convert "
                f"numbers to a numeric dtype first, e.g. np.asarray(x, dtype=np.float64)"
            )
    if is_string(x.dtype) and mode_code != MODE_NEAREST:
        raise GridSampleError(
            f"mode={MODE_NAMES[mode_code]!r} is not defined for x of string dtype {x.dtype}: "
            f"strings cannot be interpolated; use mode='nearest'"
        )
    if dtype_name(grid.dtype) not in GRID_DTYPE_NAMES:
        raise GridSampleTypeError(
            f"grid has dtype {grid.dtype}; allowed dtypes: {', '.join(GRID_DTYPE_NAMES)}"
        )


def plan_forward(x, grid, mode, padding_mode, align_corners, channel_last):
    """Validate the forward arguments.

    Returns
    -------
    plan : ForwardPlan
    x : ndarray
    grid : ndarray
    """
    mode_code = parse_mode(mode)
    pad_code = parse_padding(padding_mode)
    align = parse_align_corners(align_corners)
    chan_last = parse_flag("channel_last", channel_last)
    x = as_array("x", x)
    grid = as_array("grid", grid)
    _check_dtypes(x, grid, mode_code)

    layout = "(N, d1, ..., dr, C)" if chan_last else "(N, C, d1, ..., dr)"
    if x.ndim < 3:
        raise GridSampleError(
            f"x has shape {x.shape}; it must have at least 3 axes {layout} "
            "(one spatial axis or more)"
        )
    rank = x.ndim - 2
    if grid.ndim != x.ndim:
        raise GridSampleError(
            f"grid has shape {grid.shape}; for x of rank {x.ndim} it must have rank {x.ndim}: "
            f"{_grid_layout(rank)}"
        )
    if grid.shape[-1] != rank:
        raise GridSampleError(
            f"grid has shape {grid.shape}; its last axis must have length {rank}, "
            f"the number of spatial axes of x"
        )
    taps = taps_per_point(mode_code, rank)
    if taps > MAX_TAPS_PER_POINT:
        raise GridSampleError(
            f"x has {rank} spatial axes: mode={MODE_NAMES[mode_code]!r} would read "
            f"{mode_of(mode_code).taps}**{rank} = {taps} taps per output point; at most "
            f"{MAX_TAPS_PER_POINT} are supported (linear up to 16 axes, cubic up to 8, "
            f"nearest any)"
        )
    batch = x.shape[0]
    if grid.shape[0] not in (batch, 1):
        raise GridSampleError(
            f"grid has batch size {grid.shape[0]} (shape {grid.shape}); it must equal x's batch "
            f"size {batch} or be 1 to broadcast"
        )
    if chan_last:
        channels, in_spatial = x.shape[-1], tuple(x.shape[1:-1])
    else:
        channels, in_spatial = x.shape[1], tuple(x.shape[2:])
    out_spatial = tuple(grid.shape[1:-1])
    if 0 in in_spatial and batch * channels * math.prod(out_spatial) != 0:
        raise GridSampleError(
            f"x has shape {x.shape} with an empty spatial axis, but the output "
            f"{(batch, channels, *out_spatial)} is not empty: there is nothing to sample from"
        )

    # docs/semantics.md §6.2: coordinates in the grid's precision (float32 at least); weights
    # and sums by X's type (gridsample._dtypes has the table).
    weight_dtype = np.dtype(np.int64) if is_string(x.dtype) else x_conversion(x.dtype).weight
    plan = ForwardPlan(
        rank=rank,
        mode=mode_code,
        padding=pad_code,
        align_corners=align,
        channel_last=chan_last,
        batch=batch,
        channels=channels,
        in_spatial=in_spatial,
        out_spatial=out_spatial,
        grid_batch=grid.shape[0],
        out_dtype=x.dtype,
        coord_dtype=coord_dtype(grid.dtype),
        weight_dtype=weight_dtype,
    )
    return plan, x, grid
