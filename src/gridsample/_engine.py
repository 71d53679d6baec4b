"""Run a validated plan: lay out the arrays for the kernel and call it.

Two kernel families (see the README's "How it works"):

* the *vector* kernels (:mod:`gridsample._vector`, entries in
  :mod:`gridsample._vector_entries`): branch-free planners and gather sweeps
  for 2-D linear/nearest/cubic and 3-D linear/nearest, for float32, float64,
  float16, bfloat16, uint8 and uint16, planar sweeps and int32 offsets;
* the *general* kernels (:mod:`gridsample._kernels`): every rank, mode,
  element type and layout, chosen from :data:`GENERAL_KERNELS` by
  ``(rank, mode)``, with an N-D fallback.

Every entry runs a contiguous range of ``N x blocks`` tasks and is run on
the thread pool (:mod:`gridsample._threads`).  :func:`use_kernels` (or the
``GRIDSAMPLE_KERNELS`` environment variable) restricts the choice to one
family, for tests and benchmarks.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import math
from collections.abc import Callable

import numpy as np

from . import _kernels as kern
from ._affine import base_coordinates
from ._convert import KIND_BF16, KIND_F16, KIND_INT
from ._dtypes import dtype_name, is_half, is_string, x_conversion
from ._environ import getenv
from ._errors import GridSampleError
from ._jit import read_only
from ._options import MODE_CUBIC, MODE_LINEAR, MODE_NEAREST
from ._plan import ForwardPlan, common_padding
from ._registry import MODES, PAD_CONSTANT, PAD_ZEROS, kernel_name, padding_of, taps_per_point
from ._row_loads import (
    CL_ROW_CHANNELS,
    LITTLE_ENDIAN,
    ROW_LOAD_ROWS,
    ROW_LOADS_VARIABLE,
    ROW_TAPS,
    row_loads,
    table_width,
)
from ._simd import AVAILABLE as SIMD_AVAILABLE
from ._simd import LANES as SIMD_LANES
from ._simd_linear import count_whole_groups
from ._taps import axis_constants, weight_constants
from ._target import (
    fast_gathers,
    nearest_pass_channels,
    scattered_item_bytes,
    vector_width,
    wide_gathers_beat_row_loads,
)
from ._threads import (
    THREAD_MIN_WORK_VARIABLE,
    alone_runner,
    call_work,
    num_threads,
    run_claimed,
    run_shared,
    threads_for,
    threads_now,
)
from ._vector import fits_int32, interleave_grid
from ._vector_entries import (
    CHANNEL_LAST_ENTRIES,
    INTERLEAVED_ENTRIES,
    ONE_PASS_ENTRIES,
    PLAN_ROWS,
    ROW_LOAD_ENTRIES,
)
from ._vector_entries import ENTRIES as VECTOR_ENTRIES

__all__ = ["run_forward", "PreparedForward", "settings_key", "flat_view", "flat_read",
           "flat_strides",
           "c_strides", "GENERAL_KERNELS", "KERNEL_FAMILIES", "use_kernels", "kernel_family",
           "vector_entry", "kernel_constants", "coordinates", "identity_axis",
           "one_pass_applies", "one_pass_setting", "explicit_vectors_serve",
           "ONE_PASS_VARIABLE", "ONE_PASS_SETTINGS"]

#: General entry of each (rank, mode code) the registry specialises (named
#: ``task_<mode>_<rank>d``); anything else uses ``kern.task_nd``.
GENERAL_KERNELS = {(r, m.code): getattr(kern, f"task_{kernel_name(m.code, r)}")
                   for m in MODES for r in m.specialised_ranks}

#: X dtypes the vector kernels serve.
VECTOR_DTYPES = ("float32", "float64", "float16", "bfloat16", "uint8", "uint16")

#: Values of :func:`use_kernels` and ``GRIDSAMPLE_KERNELS``: ``"auto"`` picks
#: the vector kernels wherever they apply (``"vector"`` is the same: the
#: general kernels serve what they do not cover); ``"general"`` never uses
#: them; ``"nd"`` runs every call through the general N-D entry (the
#: rank-specialised planners' twin).
KERNEL_FAMILIES = ("auto", "vector", "general", "nd")

_family: contextvars.ContextVar = contextvars.ContextVar("gridsample_kernels", default=None)


def _check_family(family: str, name: str) -> str:
    if family not in KERNEL_FAMILIES:
        raise GridSampleError(f"{name}={family!r} is not a kernel family; allowed: "
                              + ", ".join(repr(f) for f in KERNEL_FAMILIES))
    return family


def kernel_family() -> str:
    """The kernel family in force: :func:`use_kernels`, else ``GRIDSAMPLE_KERNELS``, else auto."""
    family = _family.get()
    if family is not None:
        return family
    return _check_family(getenv("GRIDSAMPLE_KERNELS", "auto"), "GRIDSAMPLE_KERNELS")


@contextlib.contextmanager
def use_kernels(family: str):
    """Run the calls inside the ``with`` block with one kernel family.

    ``"general"`` makes every call use the general kernels (the vector
    kernels' slower twin, bit-identical up to the sign of a zero sum),
    ``"nd"`` the general N-D entry alone; ``"auto"`` and ``"vector"`` pick
    the vector kernels wherever they apply.
    Local to the calling thread (and asyncio task).
    """
    token = _family.set(_check_family(family, "family"))
    try:
        yield
    finally:
        _family.reset(token)


def vector_entry(rank, mode, pad, coord_dtype, weight_dtype, sizes, strides, kind, tables=None,
                 strided=False, rows=False, one=False, interleaved=False):
    """The vector entry for these arguments from ``tables`` (default: :data:`VECTOR_ENTRIES`,
    :data:`CHANNEL_LAST_ENTRIES`, :data:`ROW_LOAD_ENTRIES`, :data:`ONE_PASS_ENTRIES` and
    :data:`INTERLEAVED_ENTRIES`; affine warps and planar grids pass their own five, in
    that order), or None where the general kernels must run.

    ``strided``: the output's points are not contiguous (channel-last): the second table
    serves (each sweep has a form per layout, gridsample._vector.sweep_linear_2d).
    ``rows``: contiguous points from float32 rows of taps (:func:`row_loads_apply`): the
    third.  ``one``: the points planned and summed in one pass (:func:`one_pass_applies`):
    the fourth.  ``interleaved``: channel-last memory of many contiguous channels (X's and
    the output's channel stride 1), a point at a time: the fifth.

    Cubic and 3-D linear keep per-axis weights in the weight dtype and
    multiply them in the sweep, which matches the general kernels' rounding
    only when coordinates are not wider than weights (a float64 grid with
    float32 ``x`` forms the products in float64 and rounds once: the general
    kernels run).
    """
    # Integer results (uint8, uint16) have entries of their own whose kind is a constant:
    # with it a run-time argument, every uint16 load and store chose at run time between
    # plain integers and float16/bfloat16 bits, which share uint16 storage.
    family = {KIND_F16: "f16", KIND_BF16: "bf16", KIND_INT: "int"}.get(kind, "native")
    first, other, by_rows, one_pass, points = (
        (VECTOR_ENTRIES, CHANNEL_LAST_ENTRIES, ROW_LOAD_ENTRIES, ONE_PASS_ENTRIES,
         INTERLEAVED_ENTRIES) if tables is None else tables)
    key = (rank, mode, pad, family)
    # (strided rows: channel-last X of 2-4 channels, whose channel-last sweeps read the rows
    # themselves)
    table = (points if interleaved else one_pass if one else other if strided
             else by_rows if rows else first)
    entry = table.get(key)
    if entry is None or not fits_int32(sizes, strides):
        return None
    if padding_of(pad).index and max(sizes) > _MAX_INDEX_PAD_SIZE:
        return None  # the vector folds of the index paddings are exact below this size
    per_axis_weights = mode == MODE_CUBIC or (rank == 3 and mode == MODE_LINEAR)
    if per_axis_weights and np.dtype(coord_dtype).itemsize > np.dtype(weight_dtype).itemsize:
        return None
    return entry


# The vector kernels fold tap indices of the index paddings in floating point
# (gridsample._vector._fold): exact for periods below 2**22 (float32).
_MAX_INDEX_PAD_SIZE = 1 << 20
# Target number of (offset, weight) pairs planned per block: ~4096 pairs (48-64 KiB of
# scratch) stays in L2 while the channels are swept (the general kernels' tap lists and
# the gradients' plans).
PAIRS_PER_BLOCK = 4096
# The forward vector kernels' blocks are sized by their plan tables (``rows x block``
# entries of an int32 offset and a weight): 2048 entries, 16 KiB, half of L1, leave room
# for the lines of input and output each channel's sweep brings in.  Measured against
# 4096 pairs (Zen 4, one and two threads): 2-D linear maps 8x32x128² 0.6-0.7x the time;
# 2-D cubic (8 rows, 16 taps: the same block either way) and the 3-D cases within noise;
# 2-D cubic at 2048 pairs (half the block) was 1.07-1.13x.
PLAN_ENTRIES_PER_BLOCK = 2048
# Channel-first 2-D linear and nearest sweeps run every channel of a group over a block
# before the next block, whose taps read mostly the same input lines.  From 12 to 32
# channels a group's blocks hold at most SWEPT_ENTRIES_PER_BLOCK // C points (112-272 once
# rounded, against the tables' 496 for linear, 2032 for nearest), so that the lines one block
# brought in for its channels are still near when the next block reads them.  Measured
# (Zen 5, one thread, smooth warps, capped / uncapped time, 21 interleaved rounds): linear
# by gathers 8x32x128² 0.65-0.68, 8x16x128² 0.77-0.79, 8x12x128² 0.81, 8x32x96² 0.71, by
# rows 8x32x128² 0.67, 8x16x128² 0.95, with AVX2 code 0.83 and 1.02; nearest
# 8x32x128² 0.71-0.82, 8x12x128² 0.89, 8x16x128² 0.86; random warps and larger planes
# 0.99-1.02.  Left uncapped where the cap lost: 10 channels or fewer (8x10x128² linear 1.05,
# 1x6x1024² nearest swept 4 at a time 1.11), more than 32 (4x64x128² linear 1.03-1.12 at
# 16-240 points a block), cubic (8x32x128² 1.06), 3-D (4x32x16x32² linear 1.26).  Measured
# on Zen 5 only (48 KiB of L1d, as Zen 4 and recent Intel cores have), and for channel-first
# output only: channel-last output (strided points) keeps the tables' block.
SWEPT_ENTRIES_PER_BLOCK = 3584
SWEPT_CHANNELS = range(12, 33)
_MIN_BLOCK = 16
# Up to this many channels the general kernels' planar sweep wins even on channel-last
# memory (a few passes over cache lines the first pass brought in; no accumulator array).
PLANAR_MAX_CHANNELS = 4
# The vector kernels on channel-last memory whose channels are contiguous: from this many
# channels on, a point at a time, each tap's channels read by contiguous loads
# (INTERLEAVED_ENTRIES); below, and for a kernel not listed, a channel at a time
# (CHANNEL_LAST_ENTRIES), each tap gathered: the counts from which the first measured faster
# with AVX-512 and with AVX2 code, on smooth and random warps, or even (2-D nearest's 4
# channels with AVX-512 code: 0.88 / 1.02; docs/kernels.md, "Channel-last: the point loop's
# hidden costs").
INTERLEAVED_MIN_CHANNELS = {(2, MODE_LINEAR): 4, (2, MODE_NEAREST): 4, (2, MODE_CUBIC): 8,
                            (3, MODE_LINEAR): 4, (3, MODE_NEAREST): 5}
# Points per chunk when a float16/bfloat16 grid is converted to float32 on the
# way in: 64 Ki points x 3 axes x 4 bytes = 768 KiB of float32 coordinates.
_HALF_GRID_CHUNK_POINTS = 1 << 16


def flat_strides(shape: tuple, strides: tuple, itemsize: int) -> tuple:
    """The element strides :func:`flat_view` gives an array of ``shape`` and byte
    ``strides``: its own, or where :func:`_copied` says it is copied those of a
    C-contiguous array."""
    if _copied(strides, itemsize):
        return c_strides(shape)
    return tuple(s // itemsize for s in strides)


def _copied(strides: tuple, itemsize: int) -> bool:
    """Whether :func:`flat_view` copies an array with these byte strides first: a stride is
    negative or not a multiple of the item size."""
    return any(s < 0 or s % itemsize for s in strides)


def c_strides(shape: tuple) -> tuple:
    """Element strides of a C-contiguous array of ``shape`` (as NumPy makes them: an empty
    axis counts as length 1)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def flat_view(a: np.ndarray, writeable: bool = False):
    """A 1-D view of the memory ``a`` spans, and ``a``'s element strides.

    Element ``idx`` of ``a`` is ``flat[sum(idx * strides)]``.  Arrays with
    negative strides or strides that are not a multiple of the item size are
    copied once (to C order) first.
    """
    item = a.itemsize
    if _copied(a.strides, item):
        a = np.ascontiguousarray(a)
    strides = tuple(s // item for s in a.strides)
    if a.flags.c_contiguous:  # the common case, without as_strided's cost (~5 us a call)
        flat = a.reshape(-1)
        if not writeable:
            flat.setflags(write=False)
        return flat, strides
    span = 1 + sum((n - 1) * s for n, s in zip(a.shape, strides))
    flat = np.lib.stride_tricks.as_strided(a, shape=(span,), strides=(item,),
                                           writeable=writeable)
    return flat, strides


def contiguous_grid(grid3: np.ndarray, dtype=None) -> np.ndarray:
    """``np.ascontiguousarray(grid3, dtype)`` for a grid seen as ``(Ng, P, r)``; a grid of
    ``dtype`` whose points are contiguous within each coordinate's plane (a flow field's
    view, also one sliced from a wider array) is interleaved by compiled code
    (:func:`gridsample._vector.interleave_grid`), where NumPy's transposing copy takes
    ~2.5 ns a point."""
    dtype = grid3.dtype if dtype is None else np.dtype(dtype)
    if (grid3.flags.c_contiguous or grid3.dtype != dtype or grid3.shape[2] not in (2, 3)
            or grid3.strides[1] != grid3.itemsize):
        return np.ascontiguousarray(grid3, dtype)
    out = np.empty(grid3.shape, dtype)
    interleave_grid(read_only(grid3.transpose(0, 2, 1)), out)
    return out


def flat_read(a: np.ndarray) -> np.ndarray:
    """``flat_view(a)[0]``, read-only: the C-contiguous case (a small call's common one)
    without :func:`flat_view`'s stride checks."""
    if not a.flags.c_contiguous:
        return flat_view(a)[0]
    flat = a.reshape(-1)
    flat.setflags(write=False)
    return flat


def block_size(points: int, batch: int, per_point: int, threads: int,
               budget: int = PAIRS_PER_BLOCK, most: int = 1 << 62) -> int:
    """Points per block: about ``budget`` entries of ``per_point`` each (tap pairs, or plan
    table rows) and at most ``most`` (but at least 16), at least four blocks per thread, and
    a row length that spreads the plan tables' rows over the L1 sets."""
    block = max(_MIN_BLOCK, min(budget // per_point, most))
    # Enough blocks for every thread (x4 for balance) even when N is small.
    wanted = 4 * threads
    per_item = -(-wanted // max(batch, 1))
    block = min(block, -(-points // per_item))
    # The plan tables are (K, block) C arrays, their rows `block` elements apart.  A row
    # length of a power of two (4 KiB for 1024 float32) puts every row's current cache line
    # in the same L1 set, more streams than the set has ways: the sweep re-fetched its plan
    # from L2 (measured 1.4x the sweep's time, Zen 4).  An odd number of 16-element groups
    # (64-byte lines for 4-byte items) puts row k at k times an odd number of lines: all
    # distinct modulo the set count.
    return _MIN_BLOCK * ((max(block, _MIN_BLOCK) // _MIN_BLOCK - 1) | 1)


# Channels swept per pass over the output when a batch item's channels are many and large.
# Sweeping every channel of a block before the next block keeps 2 C streams of input and
# output lines open at once; past the few the L2 prefetchers follow, each line is a miss
# to L3 or memory (one thread, Zen 4: 1x64x256² linear 8.5 ns per point and channel, 2.5 ns
# when the item fits in L2).  Sweeping groups of 4-8 channels over the whole output, each
# group planning the points again, brought 1x64x256² linear to 0.3-0.55x its time and
# 1x16x512² to 0.33-0.44x (one and two threads); items of ~4 MiB or less were slower
# grouped (the plan repeated for nothing), so they are swept whole.
_GROUP_MIN_ITEM_BYTES = 8 << 20
_GROUP_MIN_CHANNEL_BYTES = 256 << 10
_GROUP_BYTES = 4 << 20


# A scattered warp (neighbouring output points far apart in the input, as on random
# grids) reads each channel's whole input plane in every block, so the planes a group sweeps
# must fit in cache together: swept a channel at a time, 1x3x1024² (4 MiB planes) took
# 0.40-0.41x the time on a random cubic warp and 0.44-0.59x on a random linear one, 2x4x768²
# linear 0.37x (one and two threads, Zen 4), where on smooth warps the repeated plan made it
# 1.04-1.6x; items of 8 MiB or less of planes gained nothing (1x8x512² cubic 1.07, 1x3x512²
# 1.13).  On Zen 5 the scattered groups lost until the planes outgrew the L3
# (gridsample._target.SCATTERED_L3_CPUS).  The median step between a sample of consecutive
# points tells the warps apart.
_SCATTERED_ITEM_BYTES = scattered_item_bytes(8 << 20)
_SCATTERED_GROUP_BYTES = 4 << 20
_SCATTERED_STEP_PIXELS = 16.0
_STEP_SAMPLE_POINTS = 256


def swept_block_cap(rank: int, mode: int, channels: int) -> int:
    """The most points a channel-first vector block swept over a group of ``channels``
    holds (:data:`SWEPT_ENTRIES_PER_BLOCK`), or no bound (``2**62``)."""
    if rank == 2 and mode in (MODE_LINEAR, MODE_NEAREST) and channels in SWEPT_CHANNELS:
        return SWEPT_ENTRIES_PER_BLOCK // channels
    return 1 << 62


def channel_groups(channels: int, channel_bytes: int, plane_bytes: int = 0,
                   scattered: bool = False) -> list:
    """``(first channel, count)`` of each group of channels swept over the whole output in
    one pass (the points planned again for each group).

    ``channel_bytes``: one channel's input and output bytes in a batch item;
    ``plane_bytes``: its input bytes; ``scattered``: whether the warp is (see
    :func:`is_scattered`).
    """
    if scattered and _planes_exceed_cache(channels, plane_bytes):
        group = max(1, _SCATTERED_GROUP_BYTES // plane_bytes)
    elif (channels * channel_bytes < _GROUP_MIN_ITEM_BYTES
            or channel_bytes < _GROUP_MIN_CHANNEL_BYTES):
        return [(0, channels)]
    else:
        group = max(4, min(8, _GROUP_BYTES // channel_bytes))
    return [(c0, min(group, channels - c0)) for c0 in range(0, channels, group)]


def _planes_exceed_cache(channels: int, plane_bytes: int) -> bool:
    """Whether a batch item's input planes are too many for a scattered warp to sweep
    together (where :func:`is_scattered` is worth asking)."""
    return channels * plane_bytes > _SCATTERED_ITEM_BYTES


def is_scattered(plan: ForwardPlan, grid3: np.ndarray) -> bool:
    """Whether consecutive output points of ``grid3`` (Ng, P, r) lie far apart in the input:
    the median of the largest per-axis step, in pixels, over the first points of item 0
    (non-finite steps left out), reaches ``_SCATTERED_STEP_PIXELS``."""
    sample = grid3[0, :_STEP_SAMPLE_POINTS + 1].astype(np.float64)
    scale = 1.0 if plan.pixels else np.array(plan.in_spatial[::-1], np.float64) / 2
    with np.errstate(invalid="ignore", over="ignore"):
        steps = (np.abs(np.diff(sample, axis=0)) * scale).max(axis=1, initial=0.0)
    steps = steps[np.isfinite(steps)]
    return steps.size > 0 and float(np.median(steps)) >= _SCATTERED_STEP_PIXELS


def split_channels(strides, channel_last):
    """(batch, channel, spatial...) element strides of an array in its layout."""
    if channel_last:
        return strides[0], strides[-1], strides[1:-1]
    return strides[0], strides[1], strides[2:]


def kernel_constants(plan: ForwardPlan, coord_dtype, weight_dtype) -> tuple:
    """The per-axis constants ``axc`` (grid order) and the weight constants ``kc`` of a plan.

    ``kc``: Keys' kernel, or the cubic B-spline's (both run on cubic's
    kernels).  An axis of B-spline coefficients padded by ``P`` elements on
    each side (``plan.spline_pad``) is described by its unpadded size and
    the offset ``P`` (:func:`gridsample._taps.axis_constants`).
    """
    return _constants(tuple(plan.in_spatial[::-1]), bool(plan.align_corners),
                      tuple(plan.axis_paddings), tuple(plan.spline_pad or (0,) * plan.rank),
                      bool(plan.pixels), np.dtype(coord_dtype), np.dtype(weight_dtype),
                      plan.mode, plan.cubic_a)


@functools.lru_cache(maxsize=256)
def _constants(sizes, align_corners, paddings, offsets, pixels, coord_dtype, weight_dtype,
               mode, cubic_a) -> tuple:
    """:func:`kernel_constants` from hashable parts, kept for the next call with the same
    (the kernels only read them; a small call spent ~10 us making them)."""
    axc = np.stack([axis_constants(int(s) - 2 * o, align_corners, coord_dtype, pad=p,
                                   pixels=pixels, offset=o)
                    for s, p, o in zip(sizes, paddings, offsets)])
    return axc, np.array(weight_constants(mode, cubic_a), weight_dtype)


def coordinates(plan: ForwardPlan, grid3: np.ndarray, p0: int, dtype) -> np.ndarray:
    """Points ``p0 …`` of ``grid3`` (shape ``(Ng, P, r)``) as absolute coordinates in ``dtype``.

    A C-contiguous copy in ``dtype`` (whatever ``grid3``'s strides: a flow field's view
    too); with ``displacement`` the identity of each point is
    added (docs/semantics.md §2.3): its normalized position as
    :func:`gridsample.affine_grid` makes it for the output shape
    (``align_corners`` applying), or its own index in pixel units.  The sum
    is formed in ``dtype``, as ``grid + identity`` would be.
    """
    out = grid3.astype(dtype, order="C")  # (order "K" would keep a planar grid planar)
    if not plan.displacement:
        return out
    r = plan.rank
    index = np.unravel_index(np.arange(p0, p0 + grid3.shape[1]), plan.out_spatial)
    for k in range(r):
        axis = r - 1 - k  # grid[..., k] addresses spatial axis r-1-k
        base = identity_axis(plan.out_spatial[axis], plan.align_corners, plan.pixels, dtype)
        out[..., k] += base[index[axis]]
    return out


def identity_axis(length: int, align_corners: bool, pixels: bool, dtype) -> np.ndarray:
    """The identity's coordinate at each index of an output axis, in ``dtype``.

    Pixel units: the index itself; normalized: :func:`gridsample.affine_grid`'s
    base coordinate (rounded once from float64).
    """
    if pixels:
        return np.arange(length).astype(dtype)
    return base_coordinates(length, align_corners).astype(dtype)


def row_loads_apply(plan: ForwardPlan, sizes: np.ndarray, strides: np.ndarray, os_p: int) -> bool:
    """Whether the vector sweep reads each row of taps with one load
    (:mod:`gridsample._row_loads`: 2-D cubic and linear, 3-D linear): float32 X whose rows
    are contiguous and at least a row of taps wide, into contiguous output points, where
    :func:`~gridsample._row_loads.row_loads` says so.  ``sizes``, ``strides``: X's spatial
    axes, innermost first."""
    taps = ROW_TAPS.get((plan.rank, plan.kernel_mode))
    return (taps is not None and LITTLE_ENDIAN and plan.out_dtype == np.float32 and os_p == 1
            and strides[0] == 1 and sizes[0] >= taps
            and row_loads(plan.rank, plan.kernel_mode) == "rows")


def cl_rows_apply(plan: ForwardPlan, sizes: np.ndarray, strides: np.ndarray, xs_c: int,
                  os_c: int, os_p: int) -> bool:
    """Whether the channel-last sweep reads each row of taps as one run of X's elements
    (:func:`gridsample._row_loads.sweep_linear_2d_cl_rows` and its 2-D cubic and 3-D linear
    twins): float32 channel-last X of :data:`~gridsample._row_loads.CL_ROW_CHANNELS` channels
    (2 to 4), X's and the output's channels contiguous and a pixel apart
    (``xs_c == os_c == 1``, the innermost spatial stride and ``os_p`` the channel count),
    rows at least a row of taps wide, where :func:`~gridsample._row_loads.row_loads` says
    rows for the kernel."""
    key = (plan.rank, plan.kernel_mode)
    C = plan.channels
    return (C in CL_ROW_CHANNELS.get(key, ()) and LITTLE_ENDIAN
            and plan.out_dtype == np.float32 and xs_c == 1 and os_c == 1 and os_p == C
            and strides[0] == C and sizes[0] >= ROW_TAPS[key]
            and row_loads(plan.rank, plan.kernel_mode) == "rows")


#: The environment variable that forces the one-pass entries on or off
#: (:func:`one_pass_applies`), and what it may say.
ONE_PASS_VARIABLE = "GRIDSAMPLE_ONE_PASS"
ONE_PASS_SETTINGS = ("auto", "on", "off")
#: The most channels a 2-D nearest one pass samples (each point's every channel at once: a
#: store stream per channel).
ONE_PASS_NEAREST_CHANNELS = 3


def one_pass_applies(plan: ForwardPlan, os_p: int, by_rows: bool, pad: int,
                     axc: np.ndarray) -> bool:
    """Whether points are planned and summed in one loop, without a plan table, into
    contiguous output points, under the vector padding ``pad``, axes ``axc``: 2-D linear
    with a single channel and weights in the coordinates' dtype (the one pass keeps them in
    registers unrounded; :func:`gridsample._vector.sum_linear_2d_one`), 2-D nearest with up
    to :data:`ONE_PASS_NEAREST_CHANNELS` channels (:func:`gridsample._vector.sum_nearest_2d_one`).

    ``GRIDSAMPLE_ONE_PASS``: ``auto`` (the default) takes it where its explicit vectors
    serve the call (:func:`explicit_vectors_serve`: float32 under zeros, constant or border
    on x86 with AVX2 or AVX-512 and fast gathers), for linear ahead of the row loads
    (0.6-0.7x their time with AVX2 code on Intel) but where the CPU's 512-bit gathers lose
    to them (:func:`gridsample._target.wide_gathers_beat_row_loads`: on Zen 4 the rows took
    0.85-1.01x the one pass's time on smooth warps, 0.81-0.90 on a batch of small ones,
    0.91-1.27 on a random 1024² one; on Zen 5 0.77-1.04), nearest for as many channels as
    :func:`gridsample._target.nearest_pass_channels` says (a single one on Zen 5, where the
    planned sweep is faster for more); linear also elsewhere with 512-bit
    vectors where the row loads do not run (LLVM's vectors: 0.85x the planned entry's time;
    with AVX2 code 0.96-1.05x, so AVX2 keeps the plan table there).  ``on`` takes it also
    where the row loads do not run (nearest: wherever it applies, its scalar loop included),
    ``off`` never (tests, benchmarks); either way the same bits (docs/kernels.md, "Explicit
    vectors")."""
    if plan.rank != 2 or os_p != 1:
        return False
    nearest = plan.kernel_mode == MODE_NEAREST and plan.channels <= ONE_PASS_NEAREST_CHANNELS
    linear = (plan.kernel_mode == MODE_LINEAR and plan.channels == 1
              and plan.coord_dtype == plan.weight_dtype)
    if not (nearest or linear):
        return False
    value = one_pass_setting()
    if value == "off":
        return False
    if explicit_vectors_serve(plan, pad, axc):
        if value == "on":
            return True
        if nearest:
            return plan.channels <= nearest_pass_channels(ONE_PASS_NEAREST_CHANNELS)
        return not by_rows or wide_gathers_beat_row_loads()
    if nearest:
        return value == "on"
    return not by_rows and (value == "on" or vector_width() == 512)


def one_pass_setting() -> str:
    """``GRIDSAMPLE_ONE_PASS`` as it is set: ``auto`` (also when unset or empty), ``on`` or
    ``off`` (anything else raises)."""
    raw = getenv(ONE_PASS_VARIABLE, "")
    value = raw.strip().lower() or "auto"
    if value not in ONE_PASS_SETTINGS:
        raise GridSampleError(f"{ONE_PASS_VARIABLE}={raw!r} is not allowed: use one of "
                              f"{', '.join(ONE_PASS_SETTINGS)}")
    return value


def explicit_vectors_serve(plan: ForwardPlan, pad: int, axc: np.ndarray) -> bool:
    """Whether a 2-D call's one pass runs with explicit vectors (linear's ahead of the row
    loads; :func:`~gridsample._simd_linear.sum_linear_2d_groups`,
    :func:`~gridsample._simd_linear.sum_nearest_2d_groups`): float32 where the vectors exist,
    the CPU's gathers are fast (:func:`gridsample._target.fast_gathers`; on Zen 1-3 the row
    loads keep a single channel) and the kernels' own rule takes the axes ``axc`` under the
    vector padding ``pad`` (:func:`~gridsample._simd_linear.count_whole_groups`; the rest of
    the conditions: :func:`one_pass_applies`)."""
    return (SIMD_AVAILABLE and fast_gathers() and plan.out_dtype == np.float32
            and plan.coord_dtype == np.float32
            and count_whole_groups(SIMD_LANES, axc[0], axc[1], pad) > 0)


def run_forward(plan: ForwardPlan, x: np.ndarray, grid: np.ndarray, chunks=None,
                affine=None) -> np.ndarray:
    """Compute the forward operator for a validated plan.

    ``chunks``: where the coordinates come from when they are made a chunk of points at a
    time instead of read from ``grid`` (never a copy of the whole grid): a :class:`Chunks`
    whose chunk ``i`` is ``(n, p0, coords)``, ``coords`` of shape ``(Ng, P, r)`` holding
    points ``p0 … p0 + P - 1`` of batch item ``n`` (``Ng = 1``), or of every item (``n is
    None``, ``Ng`` the grid's batch).  Default: ``grid`` itself, or its chunks converted
    (:func:`grid_chunks`) when it is float16/bfloat16 or a displacement.  Each thread makes
    and samples a contiguous share of the chunks, one at a time: no chunk waits for a
    dispatch, and each is sampled while it is in that core's cache (with fewer chunks than
    twice the threads, the chunks are made one at a time and each is sampled by every
    thread).

    ``affine``: ``(theta, bases, bsizes)`` when the coordinates are those of affine maps
    (:func:`gridsample._affine.affine_points`); where a vector kernel serves the plan, its
    affine entry makes each block's points itself and ``chunks`` is not used.
    """
    if is_string(plan.out_dtype):
        return _run_strings(plan, x, grid, chunks)
    return PreparedForward(plan, x.shape, x.strides, x.itemsize).run(x, grid, chunks, affine)


def settings_key() -> tuple:
    """What :class:`PreparedForward` reads besides the plan and X's layout, as a hashable
    key: the kernel family, the row-load and thread settings and the thread count in force
    (a bad kernel family raises here; the other settings raise where a call reads them)."""
    return (kernel_family(), getenv(ROW_LOADS_VARIABLE), getenv(ONE_PASS_VARIABLE),
            getenv(THREAD_MIN_WORK_VARIABLE),
            num_threads())


class PreparedForward:
    """Everything :func:`run_forward` derives from a plan, X's strides and the settings in
    force (:func:`settings_key`): the strides and constants the kernels read, the entry,
    the thread count.  It holds no array of a call, so the public functions keep it for
    the next call with the same arguments' shapes, strides, dtypes and options (a small
    call spent ~25 µs making it).

    ``x_shape``, ``x_strides`` (bytes) and ``itemsize``: X's, as the caller's array has
    them.
    """

    def __init__(self, plan: ForwardPlan, x_shape: tuple, x_strides: tuple, itemsize: int):
        self.plan = plan
        conv = self.conv = x_conversion(plan.out_dtype)
        # The storage dtype as a dtype (compared with an array's ~2x faster than a type).
        self.storage = np.dtype(conv.storage)
        self.out_is_storage = np.dtype(plan.out_dtype) == self.storage
        r = plan.rank
        # Kernels see storage views (uint16 bits for float16/bfloat16, uint8 for bool) of
        # the same item size.
        xs = flat_strides(x_shape, x_strides, itemsize)
        self.xs_n, self.xs_c, xs_spatial = split_channels(xs, plan.channel_last)
        os = c_strides(plan.out_shape)
        self.os_n, self.os_c, os_spatial = split_channels(os, plan.channel_last)
        os_p = self.os_p = os_spatial[-1]  # the output is C-contiguous: points evenly spaced
        # Kernels list axes in grid order: entry 0 is the innermost spatial axis.
        sizes = self.sizes = np.array(plan.in_spatial[::-1], np.int64)
        strides = self.strides = np.array(xs_spatial[::-1], np.int64)
        self.axc, self.kc = kernel_constants(plan, plan.coord_dtype, plan.weight_dtype)
        self.wconst = np.array([0.0, 1.0, np.nan], plan.weight_dtype)
        self.azero = np.zeros(1, conv.accumulator)
        self.fillv = None if plan.fill is None else plan.fill.astype(conv.accumulator)
        # Sweep channels innermost when they are many and the closest in memory (the general
        # kernels; the vector kernels where their channels are contiguous runs).
        self.interleaved = plan.channels > PLANAR_MAX_CHANNELS and self.xs_c <= min(strides)
        # Channels innermost in memory (below every spatial axis that has a stride of use:
        # a size-1 axis's stride is never read).
        self.channels_innermost = self.xs_c < min(
            [s for s, n in zip(strides, sizes) if n > 1], default=self.xs_c + 1)
        self.vector_interleaved = (
            self.xs_c == 1 and self.os_c == 1 and self.channels_innermost
            and plan.channels >= INTERLEAVED_MIN_CHANNELS.get((r, plan.kernel_mode), 1 << 62))
        self.K = taps_per_point(plan.kernel_mode, r)
        self.work = call_work(plan.batch * plan.out_points, plan.channels * self.K, r)
        self.threads = threads_for(plan.batch * plan.out_points, plan.channels * self.K, r)
        family = kernel_family()
        # The vector planners of zeros serve constant: their sweeps read ``outside[c]`` (the
        # fill of channel c, or 0) for a tap outside.
        self.vector_pad = PAD_ZEROS if plan.padding == PAD_CONSTANT else plan.kernel_padding
        self.outside = (np.zeros(plan.channels, conv.accumulator) if self.fillv is None
                        else self.fillv)
        vector_ok = (dtype_name(plan.out_dtype) in VECTOR_DTYPES
                     and self.vector_pad >= 0 and padding_of(self.vector_pad).vector)
        self.vector = None
        self.by_rows = self.one_pass = False
        if not (vector_ok and family in ("auto", "vector")):
            self.vector_interleaved = False
        else:
            entry = functools.partial(vector_entry, r, plan.kernel_mode, self.vector_pad,
                                      plan.coord_dtype, plan.weight_dtype, sizes, strides,
                                      conv.kind)
            # (runs of a few channels beat a point at a time: docs/kernels.md, "Channel-last
            # rows")
            cl_rows = cl_rows_apply(plan, sizes, strides, self.xs_c, self.os_c, os_p)
            self.vector_interleaved = self.vector_interleaved and not cl_rows
            if self.vector_interleaved:
                self.vector = entry(interleaved=True)
                self.vector_interleaved = self.vector is not None
            self.by_rows = self.vector is None and (
                cl_rows or row_loads_apply(plan, sizes, strides, os_p))
            if (self.vector is None
                    and one_pass_applies(plan, os_p, self.by_rows, self.vector_pad, self.axc)):
                self.vector = entry(one=True)  # None for the other element families
                self.one_pass = self.vector is not None
                self.by_rows = self.by_rows and not self.one_pass
            if self.vector is None:
                self.vector = entry(strided=os_p != 1, rows=self.by_rows)
        self.general = (kern.task_nd if family == "nd"
                        else GENERAL_KERNELS.get((r, plan.kernel_mode), kern.task_nd))
        # Bytes of one channel of one batch item: its input plane, and with its output what
        # a sweep streams.
        self.plane_bytes = itemsize * math.prod(plan.in_spatial)
        self.channel_bytes = self.plane_bytes + itemsize * plan.out_points
        # Whether the warp's scatter is worth asking (it reads the grid: at each call): where
        # each channel is a plane of its own.  Channels innermost in memory (channel-last)
        # share their cache lines, so sweeping them apart would read each line once per
        # channel (1x1024²x3 random linear, one thread: 2.3x PyTorch's time that way).
        self.planes_exceed_cache = (self.vector is not None and self.xs_c > min(strides)
                                    and _planes_exceed_cache(plan.channels, self.plane_bytes))
        self.out_shape, self.empty = plan.out_shape, plan.is_empty
        self.grid_shape = (plan.grid_batch, plan.out_points, r)
        # Blocks of the call's own points (chunks have their own).
        self._sizings = {}  # _blocks by its arguments
        self._scratches = {}  # scratch by its sizing (_scratch)
        # Calls that read a C-contiguous grid of X's own storage type in one channel group on
        # one share: by thread count, ``(coordinate dtype, runner, head, tail)`` (_run_vector),
        # run by :meth:`run` without the general path's lookups (~4 µs of a small call's ~10).
        self._direct = {}
        self._planar = None  # _planar_entry
        self._affine = None  # _affine_entry
        self._direct_ok = (self.vector is not None and self.out_is_storage
                           and not plan.displacement and not self.planes_exceed_cache)

    def run(self, x: np.ndarray, grid: np.ndarray, chunks=None, affine=None) -> np.ndarray:
        """The output for ``x`` and ``grid`` of the plan's layout (:func:`run_forward`)."""
        plan = self.plan
        out = np.empty(self.out_shape, plan.out_dtype)
        if self.empty:
            return out
        threads = threads_now(self.threads, self.work)
        direct = self._direct.get(threads) if chunks is None and affine is None else None
        if direct is not None and grid.dtype == direct[0] and grid.flags.c_contiguous:
            # What the general path below does for such a call, without its lookups.
            grid3 = grid.reshape(self.grid_shape)
            grid3.setflags(write=False)  # (read-only views: the entries' compiled types)
            direct[1](self._flat_x(x), *direct[2], grid3, out.reshape(-1), *direct[3])
            return out
        xflat = self._flat_x(x)
        outflat = (out if self.out_is_storage else out.view(self.storage)).reshape(-1)
        if affine is not None and self.vector is not None:
            direct = self._direct.get((threads, "affine")) if chunks is None else None
            if direct is not None and affine[0].dtype == direct[0]:  # (as the grid's above)
                direct[1](xflat, *direct[2], *affine, outflat, *direct[3])
                return out
            self._run_vector(self._affine_entry(), affine, xflat, outflat, plan.out_points,
                             plan.batch, threads, one_pass=self.one_pass, makes_points=True)
            return out
        if chunks is None:
            grid3 = grid.reshape(self.grid_shape)
            if not (plan.displacement or is_half(grid.dtype)):
                scattered = self.planes_exceed_cache and is_scattered(plan, grid3)
                planar = (None if grid3.flags.c_contiguous or self.vector is None
                          else grid3.transpose(0, 2, 1))
                if planar is not None and planar.flags.c_contiguous:
                    # A flow field (N, r, D1, ..., Dr) seen as the grid: each block
                    # interleaves its own points (a whole copy cost as much as the sampling).
                    self._run_vector(self._planar_entry(), (read_only(planar),), xflat,
                                     outflat, plan.out_points, plan.batch, threads, scattered,
                                     one_pass=self.one_pass, makes_points=True)
                    return out
                self._launch(contiguous_grid(grid3), xflat, outflat, plan.batch, threads,
                             scattered)
                return out
            chunks = grid_chunks(plan, grid3)
        self._run_chunks(chunks, xflat, outflat, threads)
        return out

    def _planar_entry(self):
        """The entry for a grid held planar (:func:`gridsample._vector.run_planar_blocks`),
        of the grid entry's form; found once."""
        if self._planar is None:
            from ._planar_entries import PLANAR_TABLES

            self._planar = self._twin_entry(PLANAR_TABLES)
        return self._planar

    def _affine_entry(self):
        """The entry that makes each block's points from affine maps
        (:func:`gridsample._vector.run_affine_blocks`), of the grid entry's form; found once."""
        if self._affine is None:
            from ._affine_entries import AFFINE_TABLES  # affine_warp's

            self._affine = self._twin_entry(AFFINE_TABLES)
        return self._affine

    def _twin_entry(self, tables: tuple):
        """The entry of the form the grid's entry (``self.vector``) has, from another kind's
        ``tables`` (:func:`vector_entry`'s five: affine maps, planar grids)."""
        plan = self.plan
        return vector_entry(plan.rank, plan.kernel_mode, self.vector_pad, plan.coord_dtype,
                            plan.weight_dtype, self.sizes, self.strides, self.conv.kind, tables,
                            strided=self.os_p != 1, rows=self.by_rows, one=self.one_pass,
                            interleaved=self.vector_interleaved)

    def _flat_x(self, x: np.ndarray) -> np.ndarray:
        """X's storage as :func:`flat_view` gives it, read-only."""
        return flat_read(x if x.dtype == self.storage else x.view(self.storage))

    def _run_chunks(self, chunks, xflat, outflat, threads) -> None:
        # Enough chunks: each thread makes and samples its share; few: one at a time, each
        # sampled by every thread.
        plan = self.plan
        per_chunk = 1 if chunks.count >= 2 * threads else threads

        def run_chunks(first, stop):
            for i in range(first, stop):
                n, p0, coords = chunks.make(i)
                if n is None:
                    self._launch(coords, xflat, outflat[p0 * self.os_p:], plan.batch, per_chunk)
                else:
                    self._launch(coords, xflat[n * self.xs_n:],
                                 outflat[n * self.os_n + p0 * self.os_p:], 1, per_chunk)
                del coords  # before the next chunk is made

        run_shared(run_chunks, chunks.count, (), threads // per_chunk)

    def _run_vector(self, entry, source, xflat, outflat, points, batch, threads,
                    scattered=False, one_pass=None, makes_points=False) -> None:
        """A vector entry over ``batch`` items of ``points`` points whose coordinates come
        from ``source`` (the grid, a grid held planar, or affine maps), a group of channels
        at a time;
        ``one_pass``: whether ``entry`` plans and sums in one pass (default: whether it is
        the grid's one-pass entry); ``makes_points``: whether it makes each block's points
        in scratch of its own (affine maps, a planar grid)."""
        if one_pass is None:
            one_pass = entry is self.vector and self.one_pass
        key = (points, batch, threads, one_pass, scattered)
        sizing = self._sizings.get(key)
        if sizing is None:
            if len(self._sizings) >= 16:  # chunked calls: a few sizes; never many
                self._sizings.clear()
            sizing = self._sizings[key] = self._blocks(*key)
        tasks, block, groups = sizing[1], sizing[2], sizing[4]
        scratch = self._scratch(sizing, source[0].dtype, makes_points)
        xs_c, os_c = self.xs_c, self.os_c
        # (the grid's entry, keyed by the thread count, or the affine maps', by the count
        # and "affine")
        direct_key = threads if entry is self.vector else (threads, "affine")
        if (self._direct_ok and (entry is self.vector and len(source) == 1
                                 or entry is self._affine)
                and len(groups) == 1 and min(threads, tasks) == 1
                and points == self.plan.out_points and batch == self.plan.batch
                and direct_key not in self._direct):
            self._direct[direct_key] = (
                source[0].dtype, alone_runner(entry, tasks, scratch),
                (self.xs_n, xs_c, self.sizes, self.strides, self.axc, self.kc),
                (self.os_n, os_c, self.os_p, self.plan.channels, block, self.wconst,
                 self.conv.kind, self.outside))
        for c0, count in groups:
            if c0:
                xs, outs, outside = xflat[c0 * xs_c:], outflat[c0 * os_c:], self.outside[c0:]
            else:
                xs, outs, outside = xflat, outflat, self.outside
            args = (xs, self.xs_n, xs_c, self.sizes, self.strides, self.axc, self.kc, *source,
                    outs, self.os_n, os_c, self.os_p, count, block, self.wconst,
                    self.conv.kind, outside)
            run_claimed(entry, tasks, args, threads, scratch)

    def _scratch(self, sizing: tuple, coord_dtype, makes_points: bool) -> tuple:
        """The ``(shape, dtype)`` of each share's buffers in a vector run sized by ``sizing``
        (:meth:`_blocks`) whose coordinates are of ``coord_dtype`` (``makes_points``: made
        into scratch block by block); kept for the prepared run's calls (the same objects
        each call, so that the pool finds the buffers ended shares gave back by their
        description at once)."""
        key = (sizing[0], coord_dtype, makes_points)
        scratch = self._scratches.get(key)
        if scratch is None:
            block, tables = sizing[2], sizing[3]
            # The planners' copy of a block's coordinates, and the block's points where the
            # entry makes them.
            scratch = tables + (((self.plan.rank * block,), coord_dtype),) * (1 + makes_points)
            if len(self._scratches) >= 16:  # chunked calls: a few sizes; never many
                self._scratches.clear()
            self._scratches[key] = scratch
        return scratch

    def _blocks(self, points: int, batch: int, threads: int, one_pass: bool,
                scattered: bool) -> tuple:
        """``(key, tasks, block, tables, groups)`` of a vector entry's run over ``batch``
        items of ``points`` points (``key`` its arguments): ``tables`` the ``(shape,
        dtype)`` of its plan tables (offsets, the row loads' rows after the plan's;
        weights; a one-pass entry's go unused), ``groups`` the ``(first channel, count)``
        of each group of channels swept together (:func:`channel_groups`; ``scattered``:
        whether the warp is) and ``block`` sized for the largest (:func:`swept_block_cap`)."""
        plan = self.plan
        args = (points, batch, threads, one_pass, scattered)
        # Channels innermost in memory in one group: each tap's line holds them all.
        if self.channels_innermost:
            groups = [(0, plan.channels)]
        else:
            groups = channel_groups(plan.channels, self.channel_bytes, self.plane_bytes,
                                    scattered)
        cap = (1 << 62 if self.channels_innermost or self.os_p != 1 else
               swept_block_cap(plan.rank, plan.kernel_mode,
                               max((n for _, n in groups), default=0)))
        key = (plan.rank, plan.kernel_mode)
        rows = PLAN_ROWS.get(key)
        if rows is None:  # no vector kernel: the general kernels size their own blocks
            return args, 0, 0, (), groups
        block = block_size(points, batch, rows, threads, PLAN_ENTRIES_PER_BLOCK, cap)
        extra = ROW_LOAD_ROWS[key] if self.by_rows else 0
        if one_pass:  # no plan table: the entry's table arguments go unused
            rows, block_rows = 1, 1
        else:  # a row-load sweep reads whole groups of lanes
            block_rows = table_width(block) if self.by_rows else block
        tables = (((rows + extra, block_rows), np.int32),
                  ((rows, block_rows), self.plan.weight_dtype))
        return args, batch * -(-points // block), block, tables, groups

    def _launch(self, grid3, xflat, outflat, batch, threads, scattered=False) -> None:
        plan = self.plan
        grid3 = read_only(grid3)
        points = grid3.shape[1]
        if self.vector is not None:
            self._run_vector(self.vector, (grid3,), xflat, outflat, points, batch, threads,
                             scattered)
            return
        block = block_size(points, batch, self.K, threads)
        tasks = batch * (-(-points // block))
        args = (xflat, self.xs_n, self.xs_c, self.sizes, self.strides, self.axc, self.kc,
                grid3, outflat, self.os_n, self.os_c, self.os_p, batch, plan.channels, self.K,
                plan.kernel_mode, plan.padding, block, self.interleaved, self.wconst,
                self.conv.kind, self.azero)
        if self.fillv is None:
            run_shared(self.general, tasks, (args,), threads)
        else:
            run_shared(kern.task_fill, tasks, (args, self.fillv), threads)


@dataclasses.dataclass(frozen=True)
class Chunks:
    """``count`` chunks of coordinates, chunk ``i`` made on demand by ``make(i)`` (in the
    calling thread, single-threaded) as ``(n, p0, coords)`` (:func:`run_forward`)."""

    count: int
    make: Callable


def grid_chunks(plan: ForwardPlan, grid3: np.ndarray) -> Chunks:
    """A float16/bfloat16 or displacement grid as coordinates (in float32 for half grids),
    a chunk of points at a time.  A chunk of a broadcast grid serves every batch item;
    otherwise item by item."""
    step = _HALF_GRID_CHUNK_POINTS
    per_item = -(-plan.out_points // step)
    items = 1 if plan.grid_batch == 1 else plan.batch

    def make(i):
        n, k = divmod(i, per_item)
        p0, p1 = k * step, min(plan.out_points, (k + 1) * step)
        if plan.grid_batch == 1:
            return None, p0, coordinates(plan, grid3[:, p0:p1], p0, plan.coord_dtype)
        return n, p0, coordinates(plan, grid3[n:n + 1, p0:p1], p0, plan.coord_dtype)
    return Chunks(items * per_item, make)


def _run_strings(plan: ForwardPlan, x: np.ndarray, grid: np.ndarray, chunks) -> np.ndarray:
    """Nearest sampling of str/bytes/object X (docs/semantics.md §6.1).

    An index image holding ``1 + flat spatial index`` is sampled with nearest
    (an exact int64 result: weight 1, values < 2**53), where 0 marks a point
    that reads nothing (outside under zeros or constant padding, or NaN); then
    each channel is gathered by those indices and the empty points get ``""``
    (or the fill of their channel).
    """
    empty = b"" if plan.out_dtype.kind == "S" else ""
    fill = np.full(plan.channels, empty, plan.out_dtype) if plan.fill is None else plan.fill
    out = np.empty(plan.out_shape, plan.out_dtype)
    out[...] = fill if plan.channel_last else fill.reshape((-1,) + (1,) * plan.rank)
    if plan.is_empty:
        return out
    spatial = math.prod(plan.in_spatial)
    index = np.arange(1, spatial + 1, dtype=np.int64).reshape(1, 1, *plan.in_spatial)
    index = np.broadcast_to(index, (plan.grid_batch, 1, *plan.in_spatial))
    sub = ForwardPlan(**{**plan.__dict__, "batch": plan.grid_batch, "channels": 1,
                         "channel_last": False, "out_dtype": np.dtype(np.int64),
                         "weight_dtype": np.dtype(np.float64), "fill": None,
                         "paddings": plan.linear_paddings,
                         "padding": common_padding(plan.linear_paddings)})
    picked = run_forward(sub, index, grid, chunks).reshape(plan.grid_batch, 1, -1)  # (Ng, 1, P)
    picked = np.broadcast_to(picked, (plan.batch, 1, picked.shape[-1]))
    xc = np.moveaxis(x, -1, 1) if plan.channel_last else x
    values = xc.reshape(plan.batch, plan.channels, spatial)
    gathered = np.take_along_axis(values, np.maximum(picked - 1, 0), axis=2)
    result = np.where(picked > 0, gathered, fill.reshape(1, -1, 1))
    result = result.reshape(plan.batch, plan.channels, *plan.out_spatial)
    out[...] = np.moveaxis(result, 1, -1) if plan.channel_last else result
    return out
