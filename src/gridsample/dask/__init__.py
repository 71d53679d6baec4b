"""gridsample on Dask arrays: lazy, out-of-core, chunk by chunk.

``import gridsample.dask`` imports Dask (``pip install gridsample[dask]``);
``import gridsample`` never does.

* :func:`grid_sample` -- any grid, any mode and padding; the output is chunked
  like the grid, and each output block reads only the input region its points
  need (its *footprint*); fully lazy when ``x`` is read from a store (zarr,
  HDF5, NumPy; see its Notes).
* :func:`affine_warp` -- an affine map without ever materializing the grid: each
  output block makes its own grid from its index ranges, and its footprint
  comes from the block's corners when the graph is built (fully lazy).

Results equal :func:`gridsample.grid_sample` on the whole arrays bit for bit
(see :mod:`gridsample.dask._block` for how a window of ``x`` is sampled with
the full-size coordinates).  Kernels run with one Numba thread per task by
default (``kernel_threads=1``): Dask supplies the parallelism across blocks,
and more threads per task would oversubscribe the cores of a worker.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

try:
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "gridsample.dask needs Dask: pip install 'gridsample[dask]' "
        "(dask[array] and distributed)") from exc

from .._affine import _compute_dtype, base_coordinates
from .._affine_warp import warp_arguments
from .._dtypes import is_string
from .._errors import GridSampleError, GridSampleTypeError, describe
from .._options import parse_align_corners, parse_flag, parse_mode
from .._plan import as_array, check_grid_dtype, plan_forward, stand_in
from .._taps import AXIS_MUL, AXIS_SCALE, AXIS_SUB, axis_constants
from ._block import (
    AffineSpec,
    BlockSpec,
    Layout,
    RegionSpec,
    absolute_block,
    affine_block,
    decode_window,
    footprint_block,
    input_box,
    region_block,
    sample_block,
    widen,
)
from ._footprint import interval_window
from ._spline import chunked_coefficients

__all__ = ["grid_sample", "affine_warp"]


def _as_dask(a, name, chunks="auto"):
    """``a`` (the argument ``name``) as a Dask array; an array-like that is not NumPy
    (zarr, h5py) is not read."""
    if isinstance(a, da.Array):
        return a
    dtype = _store_dtype(a)
    if dtype is None:
        a = as_array(name, a)
        _check_numeric(a.dtype)  # (before Dask, which cannot chunk object arrays)
        return da.from_array(a, chunks=chunks)
    own = getattr(a, "chunks", None)
    if isinstance(own, tuple) and len(own) == len(a.shape) and \
            all(isinstance(c, (int, np.integer)) for c in own):
        chunks = own
    return da.from_array(a, chunks=chunks, inline_array=False,
                         meta=np.empty((0,) * len(a.shape), dtype))


def _store_dtype(a):
    """The NumPy dtype of an array-like that Dask may wrap without reading it (zarr, h5py:
    a shape, a NumPy dtype, slicing); None for NumPy arrays and anything else, which NumPy
    reads first (lists, and tensors, whose dtype is not NumPy's)."""
    if isinstance(a, np.ndarray) or not all(hasattr(a, n) for n in ("shape", "dtype",
                                                                      "__getitem__")):
        return None
    try:
        return np.dtype(a.dtype)
    except TypeError:
        return None


def _region_source(x, xd):
    """Where region tasks can read ``x`` from: ``(key, layers)``, or None.

    A source is an array-like that a tuple of slices reads a box of: what
    ``da.from_zarr`` / ``da.from_array(..., inline_array=False)`` wrap (kept
    in the graph under ``"original-" + name``; Dask copies a NumPy array into
    chunks instead), or ``x`` itself when it is not a Dask array.  A Dask
    array made by any other computation has no source: its values exist only
    as the chunks its graph computes.
    """
    key = "original-" + xd.name
    layers = xd.dask.layers
    if set(layers) == {key, xd.name}:
        obj = layers[key].get(key)
        ok = (hasattr(obj, "__getitem__") and tuple(getattr(obj, "shape", ())) == xd.shape
              and np.dtype(getattr(obj, "dtype", object)) == xd.dtype)
        return (key, {}) if ok else None
    if isinstance(x, np.ndarray):  # da.from_array copied it into chunks; keep it whole
        key = f"gridsample-source-{tokenize(x)}"
        return key, {key: {key: x}}
    return None


def _bounds(chunks):
    return np.concatenate([[0], np.cumsum(chunks)]).astype(np.int64)


def _pieces(x, ranges):
    """Input chunks intersecting the box ``ranges`` (per x axis, ``[start, stop)``).

    Returns the chunk keys and, for each, ``(src, dst)`` slices: the part of the
    chunk inside the box, and where it goes in the box.
    """
    per_axis = []
    for chunks, (start, stop) in zip(x.chunks, ranges):
        if stop <= start:  # an empty block (an empty chunk of x's batch or channels)
            return [], ()
        b = _bounds(chunks)
        first = int(np.searchsorted(b, start, side="right")) - 1
        last = int(np.searchsorted(b, stop, side="left")) - 1
        axis = []
        for i in range(max(first, 0), max(last, first) + 1):
            lo, hi = max(start, b[i]), min(stop, b[i + 1])
            if hi > lo:
                axis.append((i, slice(int(lo - b[i]), int(hi - b[i])),
                             slice(int(lo - start), int(hi - start))))
        per_axis.append(axis)
    keys, specs = [], []
    for combo in itertools.product(*per_axis):
        keys.append((x.name, *(c[0] for c in combo)))
        specs.append((tuple(c[1] for c in combo), tuple(c[2] for c in combo)))
    return keys, tuple(specs)


def _chunk_starts(chunks):
    return _bounds(chunks)


def _validate_common(x, mode, align_corners, channel_last):
    mode_code = parse_mode(mode)
    align = parse_align_corners(align_corners)
    chan_last = parse_flag("channel_last", channel_last)
    _check_numeric(x.dtype)
    return mode_code, align, chan_last


def _check_numeric(dtype) -> None:
    if is_string(np.dtype(dtype)):
        raise GridSampleTypeError(
            f"x has dtype {dtype}; gridsample.dask samples numeric and bool arrays only "
            f"(string arrays: use gridsample.grid_sample on NumPy arrays)")


def _sample_options(plan, threads):
    """The :class:`SampleOptions` fields of every task of one call, as keywords."""
    return dict(mode=plan.mode, pad=plan.axis_paddings, align=plan.align_corners,
                channel_last=plan.channel_last, in_spatial=plan.in_spatial,
                coord_dtype=plan.coord_dtype, dtype=plan.out_dtype, threads=threads,
                fill=() if plan.fill is None else tuple(plan.fill.tolist()),
                cubic_a=plan.cubic_a, pixels=plan.pixels)


def _channel_options(options, start, stop):
    """``options`` for the tasks of channels ``start .. stop - 1`` (their part of the fill)."""
    fill = options["fill"]
    return dict(options, fill=fill[start:stop]) if fill else options


def _prefiltered(xd, plan, options, threads):
    """A B-spline plan with ``prefilter``: the chunked coefficients to sample and the task
    options that sample them (:mod:`gridsample.dask._spline`); otherwise ``xd`` and
    ``options`` as they are."""
    if not plan.prefilter:
        return xd, options
    cd, pads = chunked_coefficients(xd, plan, threads)
    spatial = cd.shape[1:-1] if plan.channel_last else cd.shape[2:]
    return cd, dict(options, in_spatial=tuple(spatial), dtype=cd.dtype,
                    result_dtype=plan.out_dtype, spline_pad=pads)


def _threads_arg(kernel_threads):
    if kernel_threads is None:
        return None
    allowed = "a positive integer or None (None: Numba's own setting)"
    if isinstance(kernel_threads, bool) or not isinstance(kernel_threads, (int, np.integer)):
        raise GridSampleTypeError(f"kernel_threads={kernel_threads!r}; it must be {allowed}")
    if kernel_threads < 1:
        raise GridSampleError(f"kernel_threads={kernel_threads!r}; it must be {allowed}")
    return int(kernel_threads)


def grid_sample(x, grid, mode="linear", padding_mode="zeros", align_corners=False, *,
                channel_last=False, fill_value=0, cubic_a=-0.75, grid_units="normalized",
                displacement=False, prefilter=True, chunks=None, kernel_threads=1):
    """:func:`gridsample.grid_sample` for Dask arrays, lazily and out of core.

    Parameters
    ----------
    x : dask.array.Array or array_like, shape (N, C, d1, ..., dr), or (N, d1, ..., dr, C)
        The input (a NumPy array is wrapped with automatic chunks).  Numeric and
        bool dtypes.
    grid : dask.array.Array or array_like, shape (N or 1, D1, ..., Dr, r)
        Normalized sampling positions, as for :func:`gridsample.grid_sample`.
        Its last axis is made one chunk.
    mode, padding_mode, align_corners, channel_last, fill_value, cubic_a, grid_units, displacement
        As :func:`gridsample.grid_sample` (per-axis paddings included; wrap's
        footprint near an edge spans its axis, since it reads the far side).
    prefilter : bool, default True
        B-spline modes: ``x`` holds samples, and the spline coefficients are
        computed chunk by chunk, each chunk with halos of its neighbours wide
        enough that the result equals the in-memory one to float64 round-off
        (:mod:`gridsample.dask._spline`); ``False``: ``x`` holds coefficients.
    chunks : optional
        Spatial chunks ``(D1 chunks, ..., Dr chunks)`` for the grid (and the
        output): a NumPy grid is wrapped with them, a Dask grid rechunked to them.
        Default: the Dask grid's chunks, or ``"auto"``.
    kernel_threads : int or None, default 1
        Numba threads per task.  ``None`` leaves Numba's setting (all cores),
        which oversubscribes when Dask already runs several tasks at once.

    Returns
    -------
    dask.array.Array, shape (N, C, D1, ..., Dr), or (N, D1, ..., Dr, C)
        Lazy; dtype of ``x``.  Spatial chunks are the grid's, channel chunks
        ``x``'s, batch chunks the grid's (``x``'s for a broadcast grid of
        batch 1).

    Notes
    -----
    Each output block reads only its *footprint*: the box of input indices
    its points read after padding (tap ranges derived in
    :mod:`gridsample.dask._footprint`), widened by ``MARGIN = 1`` element.
    Footprints depend on grid values; which step computes them depends on
    where ``x`` lives:

    * ``x`` has a *source* -- a zarr / HDF5 / NumPy array, or a Dask array
      made directly from a zarr or HDF5 array by ``da.from_zarr`` or
      ``da.from_array(..., inline_array=False)`` (Dask splits a NumPy array
      into chunks of its graph: pass the NumPy array itself): each task
      computes its own footprint from its grid block and reads exactly that
      box from the source.  Building the
      graph computes and reads nothing; the grid is computed once, by the
      tasks.  The source is read concurrently without ``from_array``'s
      ``lock``: for a store that is not thread-safe, use processes or
      ``scheduler="sync"``.  A NumPy ``x`` travels whole in the graph (to
      every worker of a cluster); give a cluster a zarr array instead.
    * ``x`` is any other Dask array (the result of a computation) and the
      grid is a Dask array: an output block's input chunks must be named when
      the graph is built, so the footprints are computed then -- the grid is
      computed block by block to a few integers per block (``x`` is not
      read), and again by the tasks.  A grid that is not deterministic must be
      persisted first (a task whose grid reads outside its planned window
      raises ``RuntimeError``).  Write such an ``x`` to zarr, or use
      :func:`affine_warp`, to avoid this step.
    * A NumPy grid: footprints come from its values when the graph is built
      (no Dask computation).
    """
    xd = _as_dask(x, "x")
    mode_code, align, chan_last = _validate_common(xd, mode, align_corners, channel_last)
    threads = _threads_arg(kernel_threads)
    _known_shape("x", xd)
    if isinstance(grid, da.Array):
        gd = grid
        _known_shape("grid", gd)
        check_grid_dtype(gd.dtype)  # (before Dask's chunking, which refuses some dtypes)
        if chunks is not None:
            gd = gd.rechunk((gd.chunks[0], *_spatial_chunks(chunks, gd.shape[1:-1], gd.dtype),
                             -1))
    else:
        g = as_array("grid", grid)
        check_grid_dtype(g.dtype)
        spatial = _spatial_chunks(chunks if chunks is not None else "auto", g.shape[1:-1],
                                  g.dtype) if g.ndim >= 2 else ()
        gd = da.from_array(g, chunks=(1, *spatial, -1) if g.ndim >= 2 else -1)
    plan, _, _ = plan_forward(stand_in(xd.shape, xd.dtype), stand_in(gd.shape, gd.dtype),
                              mode_code, padding_mode, align, chan_last, fill_value=fill_value,
                              cubic_a=cubic_a, grid_units=grid_units, displacement=displacement,
                              prefilter=prefilter)
    if len(gd.chunks[-1]) > 1:
        gd = gd.rechunk({gd.ndim - 1: -1})
    if plan.is_empty:
        return da.zeros(plan.out_shape, dtype=plan.out_dtype)

    layout = Layout(plan.rank, chan_last)
    r = plan.rank
    ct = plan.coord_dtype
    if plan.displacement:  # absolute positions, block by block, as the in-memory operator
        gd = gd.map_blocks(absolute_block, plan.out_spatial, align, plan.pixels, ct, dtype=ct)
    options = _sample_options(plan, threads)
    xd, options = _prefiltered(xd, plan, options, threads)
    pad_code = plan.axis_paddings
    broadcast = plan.grid_batch != plan.batch
    batch_chunks = xd.chunks[0] if broadcast else gd.chunks[0]
    channel_chunks = xd.chunks[layout.channel_axis]
    spatial_chunks = gd.chunks[1:-1]
    out_chunks = layout.arrange(batch_chunks, channel_chunks, spatial_chunks)
    bb, cb = _chunk_starts(batch_chunks), _chunk_starts(channel_chunks)
    meta = np.empty((0,) * len(out_chunks), plan.out_dtype)
    # Coefficients exist only as the chunks their graph computes: no source to read from.
    source = (_region_source(x, xd) if isinstance(grid, da.Array) and not plan.prefilter
              else None)
    if source is not None:
        # Fully lazy: each task reads the window its own grid block needs.
        src_key, src_layers = source
        token = tokenize(src_key, xd.chunks, gd, options)
        name = f"gridsample-grid-sample-{token}"
        dsk = {}
        for ib in range(len(batch_chunks)):
            gb = 0 if broadcast else ib
            for ic in range(len(channel_chunks)):
                c0, c1 = int(cb[ic]), int(cb[ic + 1])
                spec = RegionSpec(**_channel_options(options, c0, c1),
                                  batch_range=(int(bb[ib]), int(bb[ib + 1])),
                                  channel_range=(c0, c1))
                for isp in itertools.product(*(range(len(c)) for c in spatial_chunks)):
                    dsk[(name, *layout.arrange(ib, ic, isp))] = (
                        region_block, src_key, (gd.name, gb, *isp, 0), spec)
        deps = [gd] if src_layers else [xd, gd]
        graph = HighLevelGraph.from_collections(name, dsk, dependencies=deps)
        if src_layers:
            graph = HighLevelGraph({**graph.layers, **src_layers},
                                   {**graph.dependencies, **{k: set() for k in src_layers},
                                    name: graph.dependencies[name] | set(src_layers)})
        return da.Array(graph, name, out_chunks, meta=meta)

    # The one eager step: per grid block, its exact footprint (a few integers).
    fp_chunks = tuple((1,) * len(c) for c in gd.chunks[:-1]) + ((1 + 2 * r,),)
    fp = gd.map_blocks(footprint_block, options["in_spatial"], mode_code, pad_code, align, ct,
                       plan.pixels, options.get("spline_pad", ()), chunks=fp_chunks,
                       dtype=np.int64)
    fp = fp.compute(scheduler="sync") if not isinstance(grid, da.Array) else fp.compute()

    token = tokenize(xd, gd, options)
    name = f"gridsample-grid-sample-{token}"
    dsk = {}
    for ib in range(len(batch_chunks)):
        gb = 0 if broadcast else ib
        for ic in range(len(channel_chunks)):
            for isp in itertools.product(*(range(len(c)) for c in spatial_chunks)):
                window = widen(decode_window(fp[(gb, *isp)]), options["in_spatial"])
                ranges, shape = input_box(layout, window, (int(bb[ib]), int(bb[ib + 1])),
                                           (int(cb[ic]), int(cb[ic + 1])))
                keys, pieces = _pieces(xd, ranges) if window is not None else ([], ())
                spec = BlockSpec(**_channel_options(options, int(cb[ic]), int(cb[ic + 1])),
                                 window=window, window_shape=shape, pieces=pieces)
                out_key = (name, *layout.arrange(ib, ic, isp))
                dsk[out_key] = (sample_block, (gd.name, gb, *isp, 0), keys, spec)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[xd, gd])
    return da.Array(graph, name, out_chunks, meta=meta)


def _spatial_chunks(chunks, spatial, dtype):
    """``chunks`` (one entry per output spatial axis, or one for all) normalized by Dask for
    the output's spatial shape; a bad one raises GridSampleError naming it."""
    spatial = tuple(int(s) for s in spatial)
    given = chunks
    if chunks is None:
        chunks = "auto"
    if isinstance(chunks, (int, np.integer, str)):
        chunks = (chunks,) * len(spatial)
    allowed = (f"one entry per output spatial axis ({len(spatial)}: the grid's "
               f"{spatial}), or one for all, as dask.array takes chunks")
    try:
        if isinstance(chunks, dict):  # (Dask's {axis: ...} form: which axes would be unclear)
            raise TypeError
        chunks = tuple(chunks)
        entries = [v for c in chunks for v in (c if isinstance(c, (tuple, list)) else (c,))]
        if any(isinstance(v, (bool, np.bool_)) for v in entries):  # (Dask reads True as 1)
            raise TypeError
    except TypeError:
        raise GridSampleTypeError(f"chunks={describe(given)} must be {allowed}") from None
    if len(chunks) != len(spatial):
        raise GridSampleError(f"chunks={describe(given)} has {len(chunks)} entries; it must "
                              f"have {allowed}")
    try:
        normal = da.core.normalize_chunks(chunks, shape=spatial, dtype=dtype)
    except (ValueError, TypeError, ArithmeticError) as exc:  # (0: a division by zero)
        raise GridSampleError(f"chunks={describe(given)} does not fit the output's spatial "
                              f"shape {spatial}: {exc}") from None
    if any(c < 0 for axis in normal for c in axis):  # (Dask lets a negative size through)
        raise GridSampleError(f"chunks={describe(given)} holds a negative chunk size; it must "
                              f"have {allowed}")
    return normal


def _known_shape(name: str, a) -> None:
    """A Dask array whose chunk sizes are known (not NaN: the output of boolean indexing,
    say), which footprints and blocks need."""
    if any(isinstance(s, float) and math.isnan(s) for s in a.shape):
        raise GridSampleError(f"{name} has unknown chunk sizes (shape {a.shape}); call "
                              f"{name}.compute_chunk_sizes() first")


def _affine_corner_interval(theta, start, stop, out_spatial, align, k):
    """Bounds of grid component ``k`` over a block, from its ``2^r`` corners (float64).

    An affine map takes its extremes over a box at the box's corners.  The
    kernel's value of a point differs from the float64 value at most by a few
    roundings of the compute dtype: widened by ``(r + 2) eps`` times the sum of
    the magnitudes of the terms, plus the rounding to theta's dtype.
    """
    r = len(out_spatial)
    ct = _compute_dtype(theta.dtype)
    t = theta.astype(ct).astype(np.float64)  # (n, r, r + 1)
    base_ends = []
    for j in range(r):  # j = 0 is W, the innermost axis
        axis = r - 1 - j
        b = base_coordinates(int(out_spatial[axis]), align).astype(ct).astype(np.float64)
        base_ends.append((b[start[axis]], b[stop[axis] - 1]))
    lo, hi = math.inf, -math.inf
    eps = float(np.finfo(ct).eps) * (r + 2) + float(np.finfo(theta.dtype).eps)
    # A non-finite theta makes non-finite bounds (the caller reads the whole axis then),
    # not a warning.
    with np.errstate(invalid="ignore", over="ignore"):
        for corner in itertools.product(*base_ends):
            terms = t[:, k, :r] * np.array(corner)  # (n, r)
            g = t[:, k, r] + terms.sum(axis=1)
            mag = np.abs(t[:, k, r]) + np.abs(terms).sum(axis=1)
            lo = min(lo, float(np.min(g - eps * mag)))
            hi = max(hi, float(np.max(g + eps * mag)))
    return lo, hi


def _affine_window(theta, start, stop, out_spatial, in_spatial, mode, pads, align, ct,
                   offsets=()):
    """Footprint of one affine block (per x spatial axis), built from its corners.

    ``pads`` has one padding code per grid component; ``offsets`` the margins of
    padded B-spline coefficients (``in_spatial`` then their shape), as for
    :func:`gridsample.dask._footprint.points_window`.
    """
    r = len(in_spatial)
    offsets = tuple(offsets) or (0,) * r
    window = [None] * r
    for k in range(r):
        axis = r - 1 - k  # grid component k indexes x's spatial axis r-1-k
        size, offset = int(in_spatial[axis]), offsets[k]
        g_lo, g_hi = _affine_corner_interval(theta, start, stop, out_spatial, align, k)
        if not (math.isfinite(g_lo) and math.isfinite(g_hi)):
            window[axis] = (0, size - 1)
            continue
        # Unnormalize both ends (an increasing map; c = 0 only for S = 1), then
        # widen by a few ulps of the coordinate dtype for its three roundings.
        ax = axis_constants(size - 2 * offset, align, ct).astype(np.float64)
        u = [((g + 1.0) * ax[AXIS_MUL] - ax[AXIS_SUB]) * ax[AXIS_SCALE] + offset
             for g in (g_lo, g_hi)]
        slack = 4.0 * float(np.finfo(ct).eps) * (max(abs(u[0]), abs(u[1])) + size + 1.0)
        rng = interval_window(u[0] - slack, u[1] + slack, size, mode, pads[k], align)
        if rng is None:
            return None
        window[axis] = rng
    return tuple(window)


def affine_warp(x, theta, out_shape=None, mode="linear", padding_mode="zeros",
                align_corners=False, *, channel_last=False, fill_value=0, cubic_a=-0.75,
                prefilter=True, chunks=None, kernel_threads=1):
    """Warp ``x`` by affine maps without materializing the sampling grid.

    Equal, bit for bit, to ``gridsample.grid_sample(x, gridsample.affine_grid(theta,
    (N, C, *out_shape), align_corners), mode, padding_mode, align_corners)``.

    Parameters
    ----------
    x : dask.array.Array or array_like, shape (N, C, d1, ..., dr) or (N, d1, ..., dr, C)
        r = 2 or 3 spatial axes.
    theta : array_like, shape (N or 1, r, r + 1) or (r, r + 1)
        ``affine_grid``'s matrices (output normalized position -> input
        normalized position); a batch of 1 applies to every item.  Its dtype
        is the grid's dtype (as in ``affine_grid``).
    out_shape : sequence of int, optional
        Output spatial shape ``(D1, ..., Dr)``; default: ``x``'s.
    prefilter : bool, default True
        As in :func:`grid_sample` (chunked coefficients with halos).
    chunks : optional
        Output spatial chunks; default ``x``'s spatial chunks when
        ``out_shape`` equals ``x``'s spatial shape, else ``"auto"``.
    mode, padding_mode, align_corners, channel_last, fill_value, cubic_a, kernel_threads
        As :func:`grid_sample` (the grid of an affine map is normalized and absolute).

    Returns
    -------
    dask.array.Array, shape (N, C, D1, ..., Dr) or (N, D1, ..., Dr, C)

    Notes
    -----
    Building the graph computes nothing.  Each block's footprint is the
    footprint of the box spanned by the block's ``2^r`` corners mapped by
    ``theta`` (an affine map's extremes over a box are at its corners), widened
    for rounding; each task builds its own grid with ``affine_grid``'s kernel
    and checks that its exact footprint lies inside the planned one.
    """
    xd = _as_dask(x, "x")
    mode_code, align, chan_last = _validate_common(xd, mode, align_corners, channel_last)
    threads = _threads_arg(kernel_threads)
    _known_shape("x", xd)
    theta, out_spatial, align = warp_arguments(xd.shape, theta, out_shape, align, chan_last)
    r = len(out_spatial)
    grid_shape = (theta.shape[0], *out_spatial, r)
    plan, _, _ = plan_forward(stand_in(xd.shape, xd.dtype), stand_in(grid_shape, theta.dtype),
                              mode_code, padding_mode, align, chan_last, fill_value=fill_value,
                              cubic_a=cubic_a, prefilter=prefilter)
    pad_code = plan.axis_paddings
    if plan.is_empty:
        return da.zeros(plan.out_shape, dtype=plan.out_dtype)
    layout = Layout(r, chan_last)
    if chunks is None:
        x_spatial_chunks = tuple(xd.chunks[a] for a in layout.spatial_axes)
        chunks = x_spatial_chunks if out_spatial == plan.in_spatial else "auto"
    spatial_chunks = _spatial_chunks(chunks, out_spatial, xd.dtype)
    ct = plan.coord_dtype
    options = _sample_options(plan, threads)
    xd, options = _prefiltered(xd, plan, options, threads)
    in_spatial, offsets = options["in_spatial"], options.get("spline_pad", ())
    theta_c = np.ascontiguousarray(theta, dtype=_compute_dtype(theta.dtype))
    broadcast = theta.shape[0] != plan.batch
    batch_chunks = xd.chunks[0]
    channel_chunks = xd.chunks[layout.channel_axis]
    out_chunks = layout.arrange(batch_chunks, channel_chunks, spatial_chunks)
    token = tokenize(xd, theta, out_spatial, spatial_chunks, options)
    name = f"gridsample-affine-warp-{token}"
    bb, cb = _chunk_starts(batch_chunks), _chunk_starts(channel_chunks)
    sb = [_chunk_starts(c) for c in spatial_chunks]
    dsk = {}
    for ib in range(len(batch_chunks)):
        items = slice(0, 1) if broadcast else slice(int(bb[ib]), int(bb[ib + 1]))
        theta_b = theta[items]
        for isp in itertools.product(*(range(len(c)) for c in spatial_chunks)):
            start = tuple(int(sb[a][i]) for a, i in enumerate(isp))
            stop = tuple(int(sb[a][i + 1]) for a, i in enumerate(isp))
            window = None if any(a >= b for a, b in zip(start, stop)) else widen(
                _affine_window(theta_b, start, stop, out_spatial, in_spatial, mode_code,
                               pad_code, align, ct, offsets), in_spatial)  # (None: no reads)
            aspec = AffineSpec(theta_c[items], theta.dtype, out_spatial, start, stop, align)
            for ic in range(len(channel_chunks)):
                ranges, shape = input_box(layout, window, (int(bb[ib]), int(bb[ib + 1])),
                                           (int(cb[ic]), int(cb[ic + 1])))
                keys, pieces = _pieces(xd, ranges) if window is not None else ([], ())
                spec = BlockSpec(**_channel_options(options, int(cb[ic]), int(cb[ic + 1])),
                                 window=window, window_shape=shape, pieces=pieces)
                dsk[(name, *layout.arrange(ib, ic, isp))] = (affine_block, keys, spec, aspec)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[xd])
    meta = np.empty((0,) * len(out_chunks), plan.out_dtype)
    return da.Array(graph, name, out_chunks, meta=meta)
