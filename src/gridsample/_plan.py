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
    cast_values,
    coord_dtype,
    dtype_name,
    is_string,
    x_conversion,
)
from ._errors import GridSampleError, GridSampleTypeError, describe
from ._options import (
    MODE_NAMES,
    MODE_NEAREST,
    PADDING_NAMES,
    parse_align_corners,
    parse_cubic_a,
    parse_flag,
    parse_grid_units,
    parse_mode,
    parse_paddings,
)
from ._registry import (
    CUBIC_A,
    MAX_TAPS_PER_POINT,
    PAD_CONSTANT,
    PAD_MIRROR,
    PAD_ZEROS,
    mode_of,
    padding_of,
    taps_per_point,
)

__all__ = ["ForwardPlan", "plan_forward", "as_array", "check_grid_dtype", "PAD_MIXED",
           "common_padding"]

#: ``ForwardPlan.padding`` when the axes are padded differently.
PAD_MIXED = -1


def common_padding(paddings: tuple) -> int:
    """The padding code every axis shares, or :data:`PAD_MIXED`."""
    return paddings[0] if len(set(paddings)) == 1 else PAD_MIXED


@dataclass(frozen=True)
class ForwardPlan:
    """Everything the engine needs to know about one forward call.

    Shapes are logical (channel-first): ``x`` is ``(batch, channels,
    *in_spatial)`` and the output ``(batch, channels, *out_spatial)``; with
    ``channel_last`` the arrays themselves hold the channel axis last.

    ``paddings`` holds one code per grid component (grid order); ``padding``
    is their common code, or :data:`PAD_MIXED`.  ``"constant"`` with a fill
    of 0 is planned as ``"zeros"`` (the same result, bit for bit); ``fill``
    is then None, otherwise one value per channel in ``x``'s dtype.

    ``prefilter``: a B-spline mode whose ``x`` holds samples (the
    coefficients are computed first, :mod:`gridsample._splines`);
    ``spline_pad``: per grid component, the margin by which the array the
    kernels read (B-spline coefficients) extends each side of the axis.
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
    paddings: tuple = ()
    fill: np.ndarray | None = None
    cubic_a: float = CUBIC_A
    pixels: bool = False
    displacement: bool = False
    prefilter: bool = False
    spline_pad: tuple = ()

    @property
    def kernel_mode(self) -> int:
        """The mode code the kernels run (the cubic B-spline runs on cubic's kernels)."""
        return mode_of(self.mode).kernel_code

    @property
    def spline(self) -> int:
        """The B-spline degree of the mode (0: not a B-spline)."""
        return mode_of(self.mode).spline

    @property
    def axis_paddings(self) -> tuple:
        """One padding code per grid component (grid order)."""
        return self.paddings or (self.padding,) * self.rank

    @property
    def kernel_padding(self) -> int:
        """The padding code the vector kernels' tables are keyed by: the common code, or
        for a per-axis mix of index paddings (mirror, symmetric, wrap) one of them (their
        one vector variant reads each axis's code); :data:`PAD_MIXED` otherwise."""
        if self.padding != PAD_MIXED:
            return self.padding
        index = all(padding_of(p).index and padding_of(p).vector for p in self.axis_paddings)
        return PAD_MIRROR if index else PAD_MIXED

    @property
    def linear_paddings(self) -> tuple:
        """The paddings of the sampler's linear part (constant as zeros: no fill)."""
        return tuple(PAD_ZEROS if p == PAD_CONSTANT else p for p in self.axis_paddings)

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
        if arr.dtype.kind == "O" and arr.ndim == 0:  # None, a dict, any other lone object
            raise GridSampleTypeError(
                f"{name}={describe(value)} is not an array: pass a NumPy array (or a nested "
                f"list, a tensor, anything np.asarray reads as an array of numbers or "
                f"strings)")
    if arr.dtype.byteorder not in ("=", "|") and not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


_ALL_STRINGS = object()  # what _check_dtypes finds in an object array of strings only


def _check_dtypes(x: np.ndarray, grid: np.ndarray, mode_code: int) -> None:
    if dtype_name(x.dtype) not in X_DTYPE_NAMES and not is_string(x.dtype):
        raise GridSampleTypeError(
            f"x has dtype {x.dtype}; allowed dtypes: {', '.join(X_DTYPE_NAMES)}, "
            f"and str / bytes / object (strings, mode='nearest' only)"
        )
    if x.dtype.kind == "O":
        other = next((v for v in x.flat if not isinstance(v, (str, bytes))), _ALL_STRINGS)
        if isinstance(other, numbers.Number):
            raise GridSampleTypeError(
                f"x has dtype object and holds numbers (such as {other!r}, a "
                f"{type(other).__name__}); object arrays are sampled as strings, so convert "
                f"numbers to a numeric dtype first, e.g. np.asarray(x, dtype=np.float64)"
            )
        if other is not _ALL_STRINGS:
            raise GridSampleTypeError(
                f"x has dtype object and holds {describe(other)} (a {type(other).__name__}); "
                f"object arrays are sampled as strings: every element must be a str or bytes")
    if is_string(x.dtype) and mode_code != MODE_NEAREST:
        raise GridSampleError(
            f"mode={MODE_NAMES[mode_code]!r} is not defined for x of string dtype {x.dtype}: "
            f"strings cannot be interpolated; use mode='nearest'"
        )
    check_grid_dtype(grid.dtype)


def check_grid_dtype(dtype) -> None:
    """A :class:`GridSampleTypeError` unless ``dtype`` is a grid's (a float type)."""
    if dtype_name(dtype) not in GRID_DTYPE_NAMES:
        raise GridSampleTypeError(
            f"grid has dtype {dtype}; allowed dtypes: {', '.join(GRID_DTYPE_NAMES)}")


def _parse_fill(fill_value, paddings, x: np.ndarray, channels: int):
    """The fill per channel in ``x``'s dtype (cast as results are), or None for a fill of 0."""
    strings = is_string(x.dtype)
    if isinstance(fill_value, int) and fill_value == 0:  # the default: nothing to fill
        return None
    if strings:
        values = [fill_value] if isinstance(fill_value, (str, bytes)) else fill_value
    elif isinstance(fill_value, numbers.Number) and (
            not isinstance(fill_value, (bool, np.bool_)) or x.dtype == np.bool_):
        values = [fill_value]  # (a bool fills bool x only: elsewhere it is likely a slip)
    else:
        values = fill_value
    try:
        kind = object if strings else np.complex128 if np.iscomplexobj(values) else np.float64
        arr = np.asarray(values, dtype=kind)
    except (TypeError, ValueError):
        arr = None
    what = "a string" if strings else "a number"
    if arr is None or arr.ndim != 1 or (
            strings and not all(isinstance(v, (str, bytes)) for v in arr)):
        raise GridSampleTypeError(
            f"fill_value={describe(fill_value)} must be {what} or a sequence of {channels} "
            f"(one per channel of x)")
    if arr.size not in (1, channels):  # the right type, the wrong length: a bad value
        raise GridSampleError(
            f"fill_value={describe(fill_value)} has {arr.size} entries; it must be {what} or "
            f"a sequence of {channels} (one per channel of x)")
    if strings:
        fill = np.array(list(arr) * (channels // arr.size if arr.size == 1 else 1),
                        dtype=x.dtype)
        zero = all(v in ("", b"") for v in arr)
    else:
        if np.iscomplexobj(arr) and x.dtype.kind != "c":
            raise GridSampleTypeError(
                f"fill_value={describe(fill_value)} is complex; x has dtype {x.dtype}")
        fill = cast_values(np.broadcast_to(arr, (channels,)).copy(), x.dtype)
        zero = not np.any(np.asarray(fill, np.complex128 if x.dtype.kind == "c" else np.float64))
        zero = zero and not np.any(np.isnan(np.asarray(fill, np.complex128)))
    constant = [k for k, p in enumerate(paddings) if p == PAD_CONSTANT]
    if zero:
        return None
    if not constant:
        raise GridSampleError(
            f"fill_value={describe(fill_value)} has no effect: no axis has padding_mode "
            f"'constant' (paddings: {', '.join(PADDING_NAMES[p] for p in paddings)})")
    if PAD_ZEROS in paddings:
        raise GridSampleError(
            f"padding_mode mixes 'zeros' and 'constant' with fill_value={describe(fill_value)}: "
            f"a tap outside both kinds of axis would read two values; use 'constant' on each")
    return fill


def stand_in(shape: tuple, dtype) -> np.ndarray:
    """A zero-stride array of ``shape`` and ``dtype`` (no memory), for validating a call on
    arrays it does not have: a Dask array's, a grid that is never made, a file's."""
    return np.broadcast_to(np.zeros((), dtype), tuple(shape))


#: The most bytes one array may span here (NumPy's limit: its sizes are ``intp``).
_ADDRESSABLE = int(np.iinfo(np.intp).max)


def check_allocatable(shape: tuple, itemsize: int, what: str) -> None:
    """An array of ``shape`` can exist: its bytes fit the address space.  (NumPy's own errors
    for larger ones -- "array is too big", "Maximum allowed dimension exceeded" -- name no
    argument; ``what`` says which argument asked for it.)"""
    elements = math.prod(map(int, shape))  # (Python ints: NumPy's would wrap around)
    if elements * itemsize > _ADDRESSABLE:
        raise GridSampleError(f"{what} would hold {elements} elements {tuple(shape)} of "
                              f"{itemsize} bytes, more than this machine can address")


def check_rank(name: str, shape: tuple, channel_last: bool) -> int:
    """The number of spatial axes of an input ``name`` of ``shape`` (at least one)."""
    if len(shape) < 3:
        layout = "(N, d1, ..., dr, C)" if channel_last else "(N, C, d1, ..., dr)"
        raise GridSampleError(
            f"{name} has shape {tuple(shape)}; it must have at least 3 axes {layout} "
            "(one spatial axis or more)"
        )
    return len(shape) - 2


def _raise_unless(ok: bool, message) -> None:
    if not ok:
        raise GridSampleError(message())


#: How :func:`check_shapes` combines and enforces conditions on plain integer sizes:
#: ``(any_of, all_of, require)``; gridsample.torch passes symbolic ones for sizes that may
#: be symbolic or data-dependent (a condition there must not be turned into a bool).
PLAIN_LOGIC = (lambda *c: any(c), lambda *c: all(c), _raise_unless)


def check_shapes(x_shape: tuple, grid_shape: tuple, mode_code: int, channel_last: bool,
                 name: str = "x", logic: tuple = PLAIN_LOGIC, empty_input: bool = True) -> None:
    """The forward's rules between the input's shape (``name``) and the grid's: also for
    tensors without data (gridsample.torch's shape inference, with ``logic`` for its
    symbolic sizes: :data:`PLAIN_LOGIC`).  ``empty_input=False`` leaves out the rule for an
    empty input axis (grid_push has its own, on the result)."""
    any_of, all_of, require = logic
    rank = check_rank(name, x_shape, channel_last)
    x_shape, grid_shape = tuple(x_shape), tuple(grid_shape)
    if len(grid_shape) != len(x_shape):
        raise GridSampleError(
            f"grid has shape {grid_shape}; for {name} of rank {len(x_shape)} it must have rank "
            f"{len(x_shape)}: {_grid_layout(rank)}"
        )
    if grid_shape[-1] != rank:
        raise GridSampleError(
            f"grid has shape {grid_shape}; its last axis must have length {rank}, "
            f"the number of spatial axes of {name}"
        )
    taps = taps_per_point(mode_code, rank)
    if taps > MAX_TAPS_PER_POINT:
        raise GridSampleError(
            f"{name} has {rank} spatial axes: mode={MODE_NAMES[mode_code]!r} would read "
            f"{mode_of(mode_code).taps}**{rank} = {taps} taps per output point; at most "
            f"{MAX_TAPS_PER_POINT} are supported (linear up to 16 axes, cubic up to 8, "
            f"bspline7 up to 5, nearest any)"
        )
    batch = x_shape[0]
    require(any_of(grid_shape[0] == batch, grid_shape[0] == 1), lambda: (
        f"grid has batch size {grid_shape[0]} (shape {grid_shape}); it must equal "
        f"{name}'s batch size {batch} or be 1 to broadcast"))
    if not empty_input:
        return
    if channel_last:
        channels, in_spatial = x_shape[-1], x_shape[1:-1]
    else:
        channels, in_spatial = x_shape[1], x_shape[2:]
    out_spatial = grid_shape[1:-1]
    require(any_of(all_of(*[s != 0 for s in in_spatial]),
                   batch * channels * math.prod(out_spatial) == 0), lambda: (
        f"{name} has shape {x_shape} with an empty spatial axis, but the output "
        f"{(batch, channels, *out_spatial)} is not empty: there is nothing to sample from"))


def plan_forward(x, grid, mode, padding_mode, align_corners, channel_last, *, fill_value=0,
                 cubic_a=CUBIC_A, grid_units="normalized", displacement=False, prefilter=True,
                 x_name="x", shapes_checked=False):
    """Validate the forward arguments (``x_name``: what messages call ``x``;
    ``shapes_checked``: the caller ran :func:`check_shapes` on them already).

    Returns
    -------
    plan : ForwardPlan
    x : ndarray
    grid : ndarray
    """
    mode_code = parse_mode(mode)
    align = parse_align_corners(align_corners)
    chan_last = parse_flag("channel_last", channel_last)
    x = as_array("x", x)
    grid = as_array("grid", grid)
    _check_dtypes(x, grid, mode_code)

    rank = check_rank(x_name, x.shape, chan_last)
    paddings = parse_paddings(padding_mode, rank)
    if not shapes_checked:
        check_shapes(x.shape, grid.shape, mode_code, chan_last, x_name)
    batch = x.shape[0]
    if chan_last:
        channels, in_spatial = x.shape[-1], tuple(x.shape[1:-1])
    else:
        channels, in_spatial = x.shape[1], tuple(x.shape[2:])
    out_spatial = tuple(grid.shape[1:-1])
    check_allocatable((batch, channels, *out_spatial), x.dtype.itemsize,
                      f"{x_name} {x.shape} and grid {grid.shape} ask for an output that")

    # docs/semantics.md §6.2: coordinates in the grid's precision (float32 at least); weights
    # and sums by X's type (gridsample._dtypes has the table).
    weight_dtype = np.dtype(np.int64) if is_string(x.dtype) else x_conversion(x.dtype).weight
    fill = _parse_fill(fill_value, paddings, x, channels)
    if fill is None:  # "constant" with a fill of 0 is "zeros"
        paddings = tuple(PAD_ZEROS if p == PAD_CONSTANT else p for p in paddings)
    pad_code = common_padding(paddings)
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
        paddings=paddings,
        fill=fill,
        cubic_a=parse_cubic_a(cubic_a, mode_code),
        pixels=parse_grid_units(grid_units),
        displacement=parse_flag("displacement", displacement),
        prefilter=parse_flag("prefilter", prefilter) and mode_of(mode_code).spline > 0,
    )
    if plan.prefilter and fill is not None:
        check_prefiltered_fill(fill_value, fill, mode_code, align, chan_last)
    return plan, x, grid


def check_prefiltered_fill(fill_value, fill: np.ndarray, mode_code: int, align_corners: bool,
                           channel_last: bool) -> None:
    """Refuse a non-finite fill (``fill``: ``fill_value`` cast to X's dtype) that the
    prefilter of the B-spline mode ``mode_code`` would spread everywhere.

    With ``prefilter=True`` the fill is part of the line the recursive filter runs over
    (docs/semantics.md §4.2: 12 samples of it past each constant edge), and every coefficient
    is a sum over the whole line with nonzero weights: one NaN or infinite sample makes them
    all NaN, so every output would be NaN.
    """
    if fill.dtype.kind in "iubUSO":  # (integers saturate, NaN becomes 0: always finite)
        return
    if np.all(np.isfinite(np.asarray(fill, np.complex128 if fill.dtype.kind == "c"
                                     else np.float64))):
        return
    mode = mode_of(mode_code)
    layout = f"align_corners={align_corners}, channel_last={channel_last}"
    raise GridSampleError(
        f"fill_value={describe(fill_value)} is not finite in x's dtype {fill.dtype}; with "
        f"mode={mode.name!r} and prefilter=True the fill is filtered with the samples and "
        "would make every output NaN. Use a finite fill_value, or prefilter once and sample "
        f"the coefficients: grid_sample(spline_coefficients(x, {mode.spline}, padding_mode, "
        f"{layout}), grid, mode, padding_mode, {layout}, fill_value=..., prefilter=False), "
        "where a non-finite fill reaches only the points with a tap outside")
