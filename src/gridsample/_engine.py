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
import os
from collections.abc import Callable

import numpy as np

from . import _kernels as kern
from ._affine import base_coordinates
from ._convert import KIND_BF16, KIND_F16, KIND_INT
from ._dtypes import dtype_name, is_half, is_string, x_conversion
from ._errors import GridSampleError
from ._jit import read_only
from ._options import MODE_CUBIC, MODE_LINEAR
from ._plan import ForwardPlan, common_padding
from ._registry import MODES, PAD_CONSTANT, PAD_ZEROS, kernel_name, padding_of, taps_per_point
from ._row_loads import LITTLE_ENDIAN, ROW_LOAD_ROWS, ROW_TAPS, row_loads
from ._taps import axis_constants, weight_constants
from ._threads import run_shared, threads_for
from ._vector import fits_int32
from ._vector_entries import CHANNEL_LAST_ENTRIES, PLAN_ROWS, ROW_LOAD_ENTRIES
from ._vector_entries import ENTRIES as VECTOR_ENTRIES

__all__ = ["run_forward", "flat_view", "GENERAL_KERNELS", "KERNEL_FAMILIES", "use_kernels",
           "kernel_family", "vector_entry", "kernel_constants", "coordinates", "identity_axis"]

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
    return _check_family(os.environ.get("GRIDSAMPLE_KERNELS", "auto"), "GRIDSAMPLE_KERNELS")


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
                 strided=False, rows=False):
    """The vector entry for these arguments from ``tables`` (default: :data:`VECTOR_ENTRIES`,
    :data:`CHANNEL_LAST_ENTRIES` and :data:`ROW_LOAD_ENTRIES`), or None where the general
    kernels must run.

    ``strided``: the output's points are not contiguous (channel-last): the second table
    serves (each sweep has a form per layout, gridsample._vector.sweep_linear_2d).
    ``rows``: contiguous points from float32 rows of taps (:func:`row_loads_apply`): the
    third.

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
    first, other, by_rows = ((VECTOR_ENTRIES, CHANNEL_LAST_ENTRIES, ROW_LOAD_ENTRIES)
                             if tables is None else tables)
    key = (rank, mode, pad, family)
    entry = (by_rows if rows else other if strided else first).get(key)
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
_MIN_BLOCK = 16
# Up to this many channels the planar sweep wins even on channel-last memory
# (a few passes over cache lines the first pass brought in; no accumulator array).
PLANAR_MAX_CHANNELS = 4
# Points per chunk when a float16/bfloat16 grid is converted to float32 on the
# way in: 64 Ki points x 3 axes x 4 bytes = 768 KiB of float32 coordinates.
_HALF_GRID_CHUNK_POINTS = 1 << 16


def flat_view(a: np.ndarray, writeable: bool = False):
    """A 1-D view of the memory ``a`` spans, and ``a``'s element strides.

    Element ``idx`` of ``a`` is ``flat[sum(idx * strides)]``.  Arrays with
    negative strides or strides that are not a multiple of the item size are
    copied once (to C order) first.
    """
    item = a.itemsize
    if any(s < 0 or s % item for s in a.strides):
        a = np.ascontiguousarray(a)
    strides = tuple(s // item for s in a.strides)
    if a.flags.c_contiguous:  # the common case, without as_strided's cost (~5 us a call)
        flat = a.reshape(-1)
        if not writeable:
            flat.flags.writeable = False
        return flat, strides
    span = 1 + sum((n - 1) * s for n, s in zip(a.shape, strides))
    flat = np.lib.stride_tricks.as_strided(a, shape=(span,), strides=(item,),
                                           writeable=writeable)
    return flat, strides


def block_size(points: int, batch: int, per_point: int, threads: int,
               budget: int = PAIRS_PER_BLOCK) -> int:
    """Points per block: about ``budget`` entries of ``per_point`` each (tap pairs, or plan
    table rows), at least four blocks per thread, and a row length that spreads the plan
    tables' rows over the L1 sets."""
    block = max(_MIN_BLOCK, budget // per_point)
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
# 1.13).  The median step between a sample of consecutive points tells the warps apart.
_SCATTERED_ITEM_BYTES = 8 << 20
_SCATTERED_GROUP_BYTES = 4 << 20
_SCATTERED_STEP_PIXELS = 16.0
_STEP_SAMPLE_POINTS = 256


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

    A copy in ``dtype``; with ``displacement`` the identity of each point is
    added (docs/semantics.md §2.3): its normalized position as
    :func:`gridsample.affine_grid` makes it for the output shape
    (``align_corners`` applying), or its own index in pixel units.  The sum
    is formed in ``dtype``, as ``grid + identity`` would be.
    """
    out = grid3.astype(dtype)
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
    out = np.empty(plan.out_shape, plan.out_dtype)
    if plan.is_empty:
        return out
    conv = x_conversion(plan.out_dtype)
    r = plan.rank
    # Kernels see storage views: uint16 bits for float16/bfloat16, uint8 for bool.
    xflat, xs = flat_view(x.view(conv.storage))
    xs_n, xs_c, xs_spatial = split_channels(xs, plan.channel_last)
    outflat, os = flat_view(out.view(conv.storage), writeable=True)
    os_n, os_c, os_spatial = split_channels(os, plan.channel_last)
    os_p = os_spatial[-1]  # the output is C-contiguous: points are evenly spaced
    # Kernels list axes in grid order: entry 0 is the innermost spatial axis.
    sizes = np.array(plan.in_spatial[::-1], np.int64)
    strides = np.array(xs_spatial[::-1], np.int64)
    axc, kc = kernel_constants(plan, plan.coord_dtype, plan.weight_dtype)
    wconst = np.array([0.0, 1.0, np.nan], plan.weight_dtype)
    azero = np.zeros(1, conv.accumulator)
    fillv = None if plan.fill is None else plan.fill.astype(conv.accumulator)
    # Sweep channels innermost when they are many and the closest in memory.
    interleaved = plan.channels > PLANAR_MAX_CHANNELS and xs_c <= min(strides)
    K = taps_per_point(plan.kernel_mode, r)
    threads = threads_for(plan.batch * plan.out_points, plan.channels * K, r)
    family = kernel_family()
    vector = None
    # The vector planners of zeros serve constant: their sweeps read ``outside[c]`` (the
    # fill of channel c, or 0) for a tap outside.
    vector_pad = PAD_ZEROS if plan.padding == PAD_CONSTANT else plan.kernel_padding
    outside = np.zeros(plan.channels, conv.accumulator) if fillv is None else fillv
    vector_ok = (dtype_name(plan.out_dtype) in VECTOR_DTYPES and not interleaved
                 and vector_pad >= 0 and padding_of(vector_pad).vector)
    by_rows = False
    if vector_ok and family in ("auto", "vector"):
        by_rows = row_loads_apply(plan, sizes, strides, os_p)
        vector = vector_entry(r, plan.kernel_mode, vector_pad, plan.coord_dtype, plan.weight_dtype,
                              sizes, strides, conv.kind, strided=os_p != 1, rows=by_rows)
    general = kern.task_nd if family == "nd" else GENERAL_KERNELS.get((r, plan.kernel_mode),
                                                                    kern.task_nd)

    # Bytes of one channel of one batch item: its input plane, and with its output what a
    # sweep streams.
    plane_bytes = x.itemsize * math.prod(plan.in_spatial)
    channel_bytes = plane_bytes + out.itemsize * plan.out_points

    def run_vector(entry, source, xflat, outflat, points, batch, threads, scattered=False):
        """A vector entry over ``batch`` items of ``points`` points whose coordinates come
        from ``source`` (the grid, or affine maps), a group of channels at a time."""
        rows = PLAN_ROWS[(r, plan.kernel_mode)]
        block = block_size(points, batch, rows, threads, PLAN_ENTRIES_PER_BLOCK)
        # The plan tables and the planners' copy of a block's coordinates; affine maps make
        # each block's points as well.
        # The row-load sweeps' offset tables have rows of their own after the plan's.
        extra = ROW_LOAD_ROWS[(r, plan.kernel_mode)] if by_rows else 0
        scratch = (((rows + extra, block), np.int32), ((rows, block), plan.weight_dtype),
                   ((r * block,), source[0].dtype))
        if len(source) > 1:
            scratch += (((r * block,), source[0].dtype),)
        for c0, count in channel_groups(plan.channels, channel_bytes, plane_bytes, scattered):
            args = (xflat[c0 * xs_c:], xs_n, xs_c, sizes, strides, axc, kc, *source,
                    outflat[c0 * os_c:], os_n, os_c, os_p, count, block, wconst, conv.kind,
                    outside[c0:c0 + count])
            run_shared(entry, batch * -(-points // block), args, threads, scratch)

    def launch(grid3, xflat, outflat, batch, threads, scattered=False):
        grid3 = read_only(grid3)
        points = grid3.shape[1]
        if vector is not None:
            run_vector(vector, (grid3,), xflat, outflat, points, batch, threads, scattered)
        else:
            block = block_size(points, batch, K, threads)
            tasks = batch * (-(-points // block))
            args = (xflat, xs_n, xs_c, sizes, strides, axc, kc, grid3, outflat, os_n, os_c, os_p,
                    batch, plan.channels, K, plan.kernel_mode, plan.padding, block, interleaved,
                    wconst, conv.kind, azero)
            if fillv is None:
                run_shared(general, tasks, (args,), threads)
            else:
                run_shared(kern.task_fill, tasks, (args, fillv), threads)

    if affine is not None and vector is not None:
        from ._affine_entries import (  # affine_warp's
            AFFINE_CHANNEL_LAST_ENTRIES,
            AFFINE_ENTRIES,
            AFFINE_ROW_LOAD_ENTRIES,
        )

        entry = vector_entry(r, plan.kernel_mode, vector_pad, plan.coord_dtype,
                             plan.weight_dtype, sizes, strides, conv.kind,
                             (AFFINE_ENTRIES, AFFINE_CHANNEL_LAST_ENTRIES,
                              AFFINE_ROW_LOAD_ENTRIES), strided=os_p != 1, rows=by_rows)
        run_vector(entry, affine, xflat, outflat, plan.out_points, plan.batch, threads)
        return out

    if chunks is None:
        grid3 = grid.reshape(plan.grid_batch, plan.out_points, r)
        if not (is_half(grid.dtype) or plan.displacement):
            scattered = (vector is not None
                         and _planes_exceed_cache(plan.channels, plane_bytes)
                         and is_scattered(plan, grid3))
            launch(np.ascontiguousarray(grid3), xflat, outflat, plan.batch, threads, scattered)
            return out
        chunks = grid_chunks(plan, grid3)

    # Enough chunks: each thread makes and samples its share; few: one at a time, each
    # sampled by every thread.
    per_chunk = 1 if chunks.count >= 2 * threads else threads

    def run_chunks(first, stop):
        for i in range(first, stop):
            n, p0, coords = chunks.make(i)
            if n is None:
                launch(coords, xflat, outflat[p0 * os_p:], plan.batch, per_chunk)
            else:
                launch(coords, xflat[n * xs_n:], outflat[n * os_n + p0 * os_p:], 1, per_chunk)
            del coords  # before the next chunk is made

    run_shared(run_chunks, chunks.count, (), threads // per_chunk)
    return out


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
