"""The backward operator: validate, plan, run the gradient kernels.

``grid_sample_backward`` returns ``dL/dx`` and ``dL/dgrid`` for
``y = grid_sample(x, grid, ...)`` given ``dL/dy`` (docs/semantics.md §7).
Validation reuses the forward's (:func:`gridsample._plan.plan_forward`) and
adds what the backward needs; the kernels are in
:mod:`gridsample._grad_kernels`.

Precision: gradients are computed in float64 when x or the grid is
float64, else in float32 (float16 and bfloat16 inputs are widened to
float32 first, and the gradients rounded back to their types at the end).
Positions are the forward's: unnormalized, padded and split into taps in
the grid's precision (float32 at least, ``plan.coord_dtype``), so that with
float64 ``x`` and a float32 grid the input gradient is the exact adjoint of
the forward that rounded them to float32 (docs/semantics.md §7.4).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from . import _grad_kernels as gk
from ._claims import claims_of_range
from ._dtypes import dtype_name, is_string
from ._engine import (
    PLANAR_MAX_CHANNELS,
    block_size,
    contiguous_grid,
    coordinates,
    explicit_vectors_serve,
    flat_read,
    flat_strides,
    kernel_constants,
    kernel_family,
    one_pass_setting,
    split_channels,
)
from ._errors import GridSampleError, GridSampleTypeError, describe
from ._grad_taps import slope_constants
from ._grad_vector import ONE_PASS_GRAD_CHANNELS
from ._grad_vector_entries import (
    BOTH_GRADS_ENTRIES,
    GRID_GRAD_ENTRIES,
    GRID_GRAD_INTERLEAVED_ENTRIES,
    GRID_GRAD_ONE_PASS_ENTRIES,
    INPUT_GRAD_ENTRIES,
    INPUT_GRAD_INTERLEAVED_ENTRIES,
)
from ._jit import read_only
from ._options import MODE_NEAREST, is_integer
from ._plan import ForwardPlan, as_array, common_padding, plan_forward
from ._prepared import PreparedCache, signature
from ._registry import taps_per_point
from ._splines import coefficient_plan, input_gradient
from ._threads import call_work, run_claimed, run_jobs, run_shared, threads_for, threads_now
from ._vector import fits_int32

__all__ = ["grid_sample_backward", "GRAD_DTYPE_NAMES"]

#: Element types that have gradients (x, grid and grad_output).
GRAD_DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64")

# The planner keeps K * r slopes per point in scratch: cap a block's size so
# that (cubic at high rank) it stays near 1 MiB.
_MAX_SLOPES_PER_BLOCK = 1 << 17
# Point chunks per item (see work_split): shapes-only constants.
_MAX_CHUNKS = 2
# Runs of grid-gradient blocks per thread when both vector passes share the threads: small
# enough to even out the threads' ends, large enough that taking a job (Python) stays cheap.
_GRID_GRAD_JOBS_PER_THREAD = 8
# Channel-first channels of a single item up to which both passes share the threads, a
# channel a job (PreparedGradients.shared_jobs): 3 split 2 and 1 over two threads as channel
# groups; from 4 the groups are even, and each job taken from Python passes the GIL.
_SHARED_JOBS_CHANNELS = 3
_MIN_CHUNK_POINTS = 1 << 14
_MIN_BLOCK_POINTS = 1 << 10
_MAX_EXTRA_BUFFER_BYTES = 256 << 20
# An item of X up to this size takes both gradients of a single channel from one plan
# (PreparedGradients._both_entry).
_BOTH_GRADS_MAX_ITEM_BYTES = 2 << 20
# The prepared runs of recent calls (gridsample._prepared).
_prepared = PreparedCache()


def parse_output_mask(output_mask, wants=("grad_x", "grad_grid")) -> tuple:
    """``output_mask`` as a tuple of bools, one per result named in ``wants``."""
    text = describe(output_mask)
    count = {2: "pair", 3: "triple"}.get(len(wants), f"{len(wants)}-tuple")
    allowed = f"a {count} of bools (" + ", ".join(f"want {w}" for w in wants) + ")"
    if isinstance(output_mask, (str, bytes)) or not isinstance(output_mask, (Sequence, np.ndarray)):
        raise GridSampleTypeError(f"output_mask={text} must be {allowed}")
    mask = list(output_mask)
    # bools, or the integers 0 and 1 (ATen's masks arrive as either); not 1.0 or an array
    if len(mask) != len(wants) or not all(isinstance(m, (bool, np.bool_))
                                          or (is_integer(m) and m in (0, 1)) for m in mask):
        raise GridSampleError(f"output_mask={text} must be {allowed}")
    return tuple(bool(m) for m in mask)


def plan_backward(grad_output, x, grid, mode, padding_mode, align_corners, channel_last,
                  output_mask, **extras):
    """Validate the backward's arguments; return the forward plan, arrays and mask.

    ``extras`` are :func:`gridsample._plan.plan_forward`'s keyword options.
    """
    x = as_array("x", x)
    # Before the forward's checks, whose advice for strings (mode='nearest') has no gradient.
    if is_string(x.dtype) or dtype_name(x.dtype) not in GRAD_DTYPE_NAMES:
        raise GridSampleTypeError(
            f"x has dtype {x.dtype}; gradients are defined for {', '.join(GRAD_DTYPE_NAMES)}"
        )
    plan, x, grid = plan_forward(x, grid, mode, padding_mode, align_corners, channel_last,
                                 **extras)
    g = as_array("grad_output", grad_output)
    if dtype_name(g.dtype) not in GRAD_DTYPE_NAMES:
        raise GridSampleTypeError(
            f"grad_output has dtype {g.dtype}; allowed dtypes: {', '.join(GRAD_DTYPE_NAMES)}"
        )
    if g.shape != plan.out_shape:
        layout = "(N, D1, ..., Dr, C)" if plan.channel_last else "(N, C, D1, ..., Dr)"
        raise GridSampleError(
            f"grad_output has shape {g.shape}; it must have the forward output's shape "
            f"{plan.out_shape} {layout}"
        )
    return plan, g, x, grid, parse_output_mask(output_mask)


def _compute_dtype(x: np.ndarray, grid: np.ndarray) -> np.dtype:
    wide = np.float64 in (x.dtype, grid.dtype)
    return np.dtype(np.float64 if wide else np.float32)


def work_split(plan: ForwardPlan, buffer_bytes: int, threads: int) -> tuple:
    """``(G, Q)``: channel groups and point chunks per item (see gridsample._grad_kernels).

    Channel groups write disjoint channels, each element summed in point
    order however the channels are grouped, so ``G`` may follow the thread
    count: enough groups to give every thread work.  Point chunks scatter
    into private buffers summed afterwards, which changes the rounding, so
    ``Q`` is a function of the shapes only: used only when a single item
    with a single channel offers no other parallelism, or for a single
    channel-last item (2 chunks each); at least 16 Ki points per chunk,
    extra buffers (``buffer_bytes`` each) within 256 MiB.
    Measured on 1x3x1024² random grids: private buffers doubled the working
    set and the time, while channel groups cost only a re-plan.  Two chunks,
    not more: each chunk's buffer is X's size, zeroed, faulted in and summed
    again (measured on 1x1 256²-1024² linear and cubic, Intel Xeon: 2 chunks
    0.37-0.96x the time of 4 at one and at two threads; 1 chunk 0.88-1.32x
    the time of 2 at two threads).
    """
    if plan.channel_last:
        # Channels share cache lines there: threads splitting them would
        # scatter into the same lines.  A single item splits its points in
        # two instead (measured on 1x1024²x3: 47 -> 40 ms; 4 chunks: 71 ms).
        groups, chunks = 1, 2 if plan.batch == 1 else 1
    else:
        groups = max(1, min(plan.channels, -(-threads // max(plan.batch, 1))))
        if plan.batch * plan.channels > 1:
            return groups, 1
        chunks = _MAX_CHUNKS
    chunks = min(chunks, max(1, plan.out_points // _MIN_CHUNK_POINTS))
    chunks = min(chunks, 1 + _MAX_EXTRA_BUFFER_BYTES // max(buffer_bytes, 1))
    return groups, max(1, chunks)


def run_backward(plan: ForwardPlan, gout, x, grid, want_x: bool, want_grid: bool):
    """Compute the requested gradients for a validated plan, in their arguments' dtypes."""
    if plan.prefilter:  # through the B-spline coefficients (gridsample._splines)
        # The input gradient never reads the coefficients: filter x only for the grid's.
        c, cplan = coefficient_plan(plan, x, values=want_grid)
        grad_c, grad_grid = run_backward(cplan, gout, c, grid, want_x, want_grid)
        grad_x = None if grad_c is None else input_gradient(plan, cplan, grad_c)
        return _finish(grad_x, x.dtype), grad_grid
    grad_x, grad_grid = _gradients(plan, gout, x, grid, want_x, want_grid)
    if grad_grid is not None and plan.fill is not None and plan.mode != MODE_NEAREST:
        grad_grid -= _fill_mass_gradient(plan, gout, x, grid, grad_grid.dtype)
    return _finish(grad_x, x.dtype), _finish(grad_grid, grid.dtype)


def _fill_mass_gradient(plan: ForwardPlan, gout, x, grid, dt):
    """``-d(fill term)/dgrid``: the grid gradient of sampling ones, weighted by ``G . fill``.

    Under ``"constant"`` a point is ``sum_in w x + fill (1 - m)`` with ``m``
    the weight of its taps inside (the weights of all taps sum to 1), so the
    fill term's grid gradient is ``-(sum_c G[c] fill[c]) dm/dgrid``; ``m`` is
    what sampling an array of ones gives with the constant axes padded by
    zeros.  Its gradient comes from the same kernels, on one channel.
    """
    axis = plan.rank + 1 if plan.channel_last else 1
    per_channel = [1] * (plan.rank + 2)
    per_channel[axis] = plan.channels
    fill = plan.fill.astype(dt).reshape(per_channel)
    h = np.sum(gout.astype(dt, copy=False) * fill, axis=axis, keepdims=True)
    one_channel = list(x.shape)
    one_channel[axis] = 1
    ones = np.broadcast_to(np.ones((), dt), one_channel)  # every tap reads the one value
    pads = plan.linear_paddings
    sub = dataclasses.replace(plan, channels=1, fill=None, paddings=pads,
                              padding=common_padding(pads))
    return _gradients(sub, h, ones, grid, False, True)[1]


def _gradients(plan: ForwardPlan, gout, x, grid, want_x: bool, want_grid: bool):
    """The kernels' gradients in the compute dtype (no fill term, no final cast)."""
    return PreparedGradients.prepare(plan, gout, x, grid, want_x, want_grid)[1]


class PreparedGradients:
    """Everything :func:`_gradients` derives from a plan, the arrays' shapes, strides and
    dtypes and the settings in force: the kernels, their constants, blocks and thread
    count.  Made from a call's arrays (as the kernels read them: ``xw``, ``g3``, None when
    no kernel runs) but holding none of them, so the public function keeps it for the next
    call with the same signature (:mod:`gridsample._prepared`).  ``threads``: at most this
    many (default: Numba's setting)."""

    def __init__(self, plan: ForwardPlan, dt, xw, g3, want_x: bool, want_grid: bool,
                 threads: int | None = None):
        self.plan, self.dt, self.want_x, self.want_grid = plan, dt, want_x, want_grid
        self._alone = None  # the twin a call runs while the workers sleep (_run)
        r = plan.rank
        self.grid_in_kernel = _grid_in_kernel(plan, want_grid)
        self.empty = xw is None
        if self.empty:
            return
        K = self.K = taps_per_point(plan.kernel_mode, r)
        self.xs_n, self.xs_c, xs_sp = split_channels(flat_strides(xw.shape, xw.strides,
                                                                  xw.itemsize),
                                                     plan.channel_last)
        self.x_size = xw.size
        strides = self.strides = np.array(xs_sp[::-1], np.int64)
        self.gs_n, self.gs_c, (self.gs_p,) = split_channels(
            flat_strides(g3.shape, g3.strides, g3.itemsize), plan.channel_last)
        sizes = self.sizes = np.array(plan.in_spatial[::-1], np.int64)
        # Positions in the forward's coordinate dtype, weights, slopes and sums in dt.
        self.axc, self.kc = kernel_constants(plan, plan.coord_dtype, dt)
        self.dk = np.array(slope_constants(tuple(self.kc)), dt)
        # Per tap a backward reads X (and its slopes) and adds into dL/dx: ~3x a forward's
        # work.
        self.work = call_work(plan.batch * plan.out_points, plan.channels * K, r, cost=3)
        threads = self.threads = threads_for(plan.batch * plan.out_points, plan.channels * K,
                                             r, cost=3, threads=threads)
        self.interleaved = _interleaved(plan)
        # The general entry: the rank and mode's own, or the N-D one alone (use_kernels("nd"))
        self.general = (gk.backward_nd if kernel_family() == "nd"
                        else gk.BACKWARD_ENTRIES.get((r, plan.kernel_mode), gk.backward_nd))
        # One fused pass (plan once, gather and scatter) for a single channel;
        # otherwise two: the grid gradient split over points only (each point
        # is independent, so any split gives the same bits), then the input
        # gradient split by work_split.  Measured with several channels: the
        # fused pass's working set (x and dL/dx together) made random grids
        # 1.5-2x slower (1x3x1024², 2x4x64³) and saved nothing on 8x32x128²
        # maps, while re-planning costs little.
        self.G, self.Q = work_split(plan, xw.nbytes, threads) if want_x else (1, 1)
        # The vector-planned passes where they apply: two of them beat the fused
        # general pass (measured on a single channel: 1x1x128³ 70 -> 39 ms,
        # 1x1x1024² random 47 -> 17 ms).  Otherwise a single channel with both
        # gradients takes one fused general pass.
        # Channel-last channels read as contiguous runs (the interleaved entries) need
        # stride 1 in x (and so in dL/dx, laid out like x) and in dL/dy.
        runs = self.xs_c == 1 and self.gs_c == 1
        # The branch-free grid-gradient planners form weights and slopes in the coordinate
        # dtype: positions narrower than the sums (float64 x, float32 grid) take the general
        # kernels, which form them in dt from the exact fraction, as the forward does.
        vector = (_grid_grad_entry(plan, sizes, strides, runs)
                  if self.grid_in_kernel and plan.coord_dtype == dt else None)
        if vector is not None and _grid_grad_in_one_pass(plan, dt, self.gs_p, self.axc):
            vector = GRID_GRAD_ONE_PASS_ENTRIES[(r, plan.kernel_mode, plan.kernel_padding)]
        scatter = _input_grad_entry(plan, sizes, strides, runs) if want_x else None
        self.fused = (want_x and self.grid_in_kernel and plan.channels == 1
                      and (vector is None or scatter is None))
        if self.fused:
            vector = scatter = None
        self.vector, self.scatter = vector, scatter
        self.both = self._both_entry(xw, threads)
        self.wconst = np.array([0.0, 1.0, np.nan], dt)
        # A single item of one channel, or of a few channel-first ones: its input gradient
        # has few tasks (Q chunks of one channel; a channel group each), which leave a
        # thread idle in turns (3 channels: groups of 2 and 1).  Both vector passes then
        # become one list of jobs the threads take in turn, a channel a job.  (With more
        # tasks, jobs taken from Python pass the GIL between threads at each: the 64x1x28²
        # batch 1.9x.)
        self.shared_jobs = (self.both is None and vector is not None and scatter is not None
                            and threads > 1
                            and plan.batch == 1
                            and (plan.channels == 1 or (not plan.channel_last and plan.channels
                                                        <= _SHARED_JOBS_CHANNELS)))
        if self.shared_jobs:
            self.G = plan.channels  # any grouping adds in the same order (work_split)
        # Channel groups split channel-first planes only: the vector scatter's tasks zero
        # their group's planes (run_scatter_blocks), channel-last items whole.
        assert not (plan.channel_last and self.G > 1), "channel-last items are not grouped"
        # What each call's arguments need besides its arrays.
        points = plan.out_points
        self.grid_shape = (plan.grid_batch, points, r)
        self.ggrid_shape = (plan.batch, points, r) if self.grid_in_kernel else (1, 1, r)
        self.grid_block = block_size(points, plan.batch, K, threads)
        self.grid_tasks = plan.batch * -(-points // self.grid_block)
        self.scatter_block = block_size(-(-points // self.Q), plan.batch, K, threads)

    def _both_entry(self, xw, threads: int):
        """The entry of both gradients of a single channel from one plan per block
        (:data:`BOTH_GRADS_ENTRIES`, 2-D cubic: the plan is a third of such a warp's time),
        or None (the two vector passes run).  Only where both passes would be vector ones
        (so positions and sums share a dtype), an item of X small enough to share the
        caches with its gradient (random warps of a large X read both at random: measured
        on Zen 4, one thread, against the two passes: 0.88-0.90 up to 512², 0.94-0.99 at
        1024², 1.13 at 2048²) and tasks (items times point chunks) that even out over the
        threads; the same bits as the two passes either way."""
        plan = self.plan
        if not (self.want_x and plan.channels == 1 and self.vector is not None
                and self.scatter is not None):
            return None
        entry = BOTH_GRADS_ENTRIES.get((plan.rank, plan.kernel_mode, plan.kernel_padding))
        tasks = plan.batch * self.Q
        even = threads == 1 or tasks % threads == 0 or tasks >= 4 * threads
        if entry is None or xw.nbytes // plan.batch > _BOTH_GRADS_MAX_ITEM_BYTES or not even:
            return None
        return entry

    @classmethod
    def prepare(cls, plan: ForwardPlan, gout, x, grid, want_x: bool, want_grid: bool):
        """``(prepared, gradients)``: a prepared run for these arrays and its result on
        them, each array converted for the kernels once."""
        dt = _compute_dtype(x, grid)
        xw = g3 = None
        if not plan.is_empty and (want_x or _grid_in_kernel(plan, want_grid)):
            xw, g3 = _kernel_x(x, dt, want_x), _kernel_gout(gout, plan, dt)
        prepared = cls(plan, dt, xw, g3, want_x, want_grid)
        return prepared, prepared._run(xw, g3, x, grid)

    def run(self, gout, x, grid):
        """``(grad_x, grad_grid)`` in the compute dtype (None where not wanted)."""
        if self.empty:
            return self._run(None, None, x, grid)
        return self._run(_kernel_x(x, self.dt, self.want_x),
                         _kernel_gout(gout, self.plan, self.dt), x, grid)

    def _run(self, xw, g3, x, grid):
        """:meth:`run` on ``x`` and ``grad_output`` as the kernels read them (``xw``,
        ``g3``)."""
        plan, dt, r = self.plan, self.dt, self.plan.rank
        want_x, want_grid, grid_in_kernel = self.want_x, self.want_grid, self.grid_in_kernel
        if self.empty:
            grad_x = np.zeros(x.shape, dt) if want_x else None
            grad_grid = np.zeros(grid.shape, dt) if want_grid else None
            return grad_x, grad_grid
        K, G, Q, threads = self.K, self.G, self.Q, self.threads
        if threads > 1 and threads_now(threads, self.work) == 1:
            # The workers sleep and the work is small (the forward's rule): the tasks cut
            # for one thread (those cut for more, run on one, took 1.2-1.6x their time:
            # docs/kernels.md, "The backward after a pause").  Any cut gives the same bits.
            alone = self._alone
            if alone is None:
                alone = self._alone = PreparedGradients(plan, dt, xw, g3, want_x, want_grid,
                                                        threads=1)
            return alone._run(xw, g3, x, grid)
        xflat, gflat = flat_read(xw), flat_read(g3)
        grid3 = grid.reshape(self.grid_shape)
        cdt = plan.coord_dtype
        grid3 = read_only(coordinates(plan, grid3, 0, cdt) if plan.displacement
                          else contiguous_grid(grid3, cdt))
        # The vector grid-gradient entries write every row (each task its blocks' rows whole).
        ggrid = (np.empty if self.vector is not None else np.zeros)(self.ggrid_shape, dt)
        grad_x = None

        def launch(G, Q, gxbuf, rows, with_x, with_grid):
            sizes, strides, axc, kc, dk = self.sizes, self.strides, self.axc, self.kc, self.dk
            xs_n, xs_c, gs_n, gs_c, gs_p = self.xs_n, self.xs_c, self.gs_n, self.gs_c, self.gs_p
            block = block_size(-(-plan.out_points // Q), plan.batch, K, threads)
            block = max(1, min(block, _MAX_SLOPES_PER_BLOCK // (K * r)))
            args = (G, Q, xflat, xs_n, xs_c, sizes, strides, axc, kc, dk, grid3, gflat, gs_n,
                    gs_c, gs_p, gxbuf, self.x_size, rows, plan.channels, K, plan.kernel_mode,
                    plan.padding, block, self.interleaved, with_x, with_grid)
            run_shared(self.general, plan.batch * G * Q, (args,), threads)

        # The vector scatter zeroes its own parts of the buffers (run_scatter_blocks).
        gxbuf = None if not want_x else (np.empty if self.scatter is not None else np.zeros)(
            Q * self.x_size, dt)
        # The input gradient's tasks first (the largest jobs), then the grid gradient's
        # blocks in runs (self.shared_jobs).
        shared = self.shared_jobs
        if self.both is not None:  # one plan per block for both gradients
            run_claimed(self.both, plan.batch * Q, self._both_args(xflat, gxbuf, grid3, gflat,
                                                                   ggrid), threads)
        elif shared:
            scatter_args = self._scatter_args(gxbuf, grid3, gflat)
            jobs = [(self.scatter, (0, claims_of_range(t, t + 1), *scatter_args))
                    for t in range(plan.batch * G * Q)]
            tasks, grid_args = self.grid_tasks, self._grid_grad_args(xflat, grid3, gflat, ggrid)
            run = max(1, tasks // (_GRID_GRAD_JOBS_PER_THREAD * threads))
            jobs += [(self.vector, (0, claims_of_range(t, min(t + run, tasks)), *grid_args))
                     for t in range(0, tasks, run)]
            run_jobs(jobs, threads)
        elif self.vector is not None:
            # The branch-free grid-gradient kernels: blocks of points, one task each, claimed
            # by the threads as they go.
            run_claimed(self.vector, self.grid_tasks,
                        self._grid_grad_args(xflat, grid3, gflat, ggrid), threads)
        elif grid_in_kernel and not self.fused:
            chunks = max(1, min(-(-4 * threads // plan.batch),
                                plan.out_points // _MIN_BLOCK_POINTS))
            launch(1, chunks, np.zeros(1, dt), ggrid, False, True)
        if want_x and not shared and self.both is None:
            if self.scatter is not None:
                run_claimed(self.scatter, plan.batch * G * Q,
                            self._scatter_args(gxbuf, grid3, gflat), threads)
            else:
                launch(G, Q, gxbuf, ggrid if self.fused else np.zeros((1, 1, r), dt), True,
                       self.fused)
        if want_x:
            if Q == 1:
                grad_x = gxbuf.reshape(x.shape)
            else:
                grad_x = np.empty(x.shape, dt)
                chunk = 1 << 16
                run_shared(gk.task_sum_buffers, -(-self.x_size // chunk),
                           (gxbuf, Q, self.x_size, chunk, grad_x.reshape(-1)), threads)
        grad_grid = None
        if grid_in_kernel:
            if plan.grid_batch == 1 and plan.batch > 1:
                ggrid = ggrid.sum(axis=0, keepdims=True)  # items' rows added in batch order
            grad_grid = ggrid.reshape(grid.shape)
        elif want_grid:
            grad_grid = np.zeros(grid.shape, dt)
        return grad_x, grad_grid

    def _grid_grad_args(self, xflat, grid3, gflat, ggrid):
        """The grid-gradient entry's arguments after ``share, claims``: its
        ``self.grid_tasks`` tasks are blocks of points."""
        return (xflat, self.xs_n, self.xs_c, self.sizes, self.strides, self.axc, self.kc,
                self.dk, grid3, gflat, self.gs_n, self.gs_c, self.gs_p, ggrid,
                self.plan.channels, self.grid_block)

    def _both_args(self, xflat, gxbuf, grid3, gflat, ggrid):
        """The entry of both gradients' arguments after ``share, claims``: its ``N x Q``
        tasks plan blocks of points once for both."""
        return (gxbuf, self.x_size // self.plan.batch, self.Q, xflat, self.xs_n, self.xs_c,
                self.sizes, self.strides, self.axc, self.kc, self.dk, grid3, gflat, self.gs_n,
                self.gs_c, self.gs_p, self.x_size, ggrid, self.plan.channels, self.grid_block)

    def _scatter_args(self, gxbuf, grid3, gflat):
        """The input-gradient entry's arguments after ``share, claims``: its ``N x G x Q``
        tasks scatter into ``gxbuf`` (``Q`` buffers of X's size)."""
        plan = self.plan
        return (gxbuf, self.G, self.Q, self.x_size // plan.batch, self.xs_c, self.sizes,
                self.strides, self.axc, self.kc, grid3, gflat, self.gs_n, self.gs_c, self.gs_p,
                self.x_size, plan.channels, self.scatter_block, self.wconst)


def _grid_in_kernel(plan: ForwardPlan, want_grid: bool) -> bool:
    """Whether the kernels compute the grid gradient: nearest is piecewise constant, its
    grid gradient 0 (also at NaN points, as in PyTorch), so the kernels skip it."""
    return want_grid and plan.mode != MODE_NEAREST


def _kernel_x(x, dt, want_x: bool):
    """``x`` as the backward kernels read it: contiguous in its own layout, so that x and
    its gradient share the tap offsets (a copy only for strided x).  The grid gradient alone
    reads x through any non-negative strides (the fill term's ones are one broadcast
    value)."""
    return np.ascontiguousarray(x, dt) if want_x else x.astype(dt, copy=False)


def _kernel_gout(gout, plan: ForwardPlan, dt):
    """grad_output as (N, C, P) or (N, P, C) in its own layout (a view when possible)."""
    shape3 = ((plan.batch, plan.out_points, plan.channels) if plan.channel_last
              else (plan.batch, plan.channels, plan.out_points))
    return gout.astype(dt, copy=False).reshape(shape3)


def _interleaved(plan: ForwardPlan) -> bool:
    """Whether the backward sweeps channels innermost (channel-last, more than
    ``PLANAR_MAX_CHANNELS`` channels), a point at a time.  With fewer, channel-last memory
    is swept channel by channel (planar), as the forward does: each channel's taps are
    gathered like a plane's.  Either way every kernel adds in the same order (the grid
    gradient's slope sums channel by channel, dL/dx's terms point by point)."""
    return plan.channel_last and plan.channels > PLANAR_MAX_CHANNELS


def _vector_entry(tables: tuple, plan: ForwardPlan, sizes, strides, runs: bool):
    """The vector-planned entry of ``tables`` (planar, interleaved) for this plan, or None
    (the general kernels run).

    Planar sweeps for channel-first memory and channel-last memory of at most
    ``PLANAR_MAX_CHANNELS`` channels; beyond, the interleaved sweeps where the channels
    are contiguous runs (``runs``).  Int32 offsets (:func:`gridsample._vector.fits_int32`),
    and not where :func:`gridsample._engine.use_kernels` asks for the general kernels.
    """
    if kernel_family() not in ("auto", "vector"):
        return None
    interleaved = _interleaved(plan)
    if interleaved and not runs:
        return None
    entry = tables[interleaved].get((plan.rank, plan.kernel_mode, plan.kernel_padding))
    if entry is None or not fits_int32(sizes, strides):
        return None
    return entry


def _grid_grad_entry(plan: ForwardPlan, sizes, strides, runs: bool):
    """The branch-free grid-gradient entry (:mod:`gridsample._grad_vector`,
    :mod:`gridsample._grad_interleaved`), or None."""
    return _vector_entry((GRID_GRAD_ENTRIES, GRID_GRAD_INTERLEAVED_ENTRIES), plan, sizes,
                         strides, runs)


def _grid_grad_in_one_pass(plan: ForwardPlan, dt, gs_p: int, axc: np.ndarray) -> bool:
    """Whether the grid gradient plans and sums its points in one pass
    (:data:`GRID_GRAD_ONE_PASS_ENTRIES`: 2-D linear under zeros, constant or border), rather
    than through a plan table: where its explicit vectors serve
    (:func:`gridsample._engine.explicit_vectors_serve`: float32, x86 with fast gathers, the
    axes), dL/dy's points are contiguous and there are at most
    :data:`~gridsample._grad_vector.ONE_PASS_GRAD_CHANNELS` channels; ``GRIDSAMPLE_ONE_PASS
    =off`` never (the same bits either way, but for a NaN's sign).  What it gains:
    docs/kernels.md, "The grid gradient in one pass"."""
    key = (plan.rank, plan.kernel_mode, plan.kernel_padding)
    return (key in GRID_GRAD_ONE_PASS_ENTRIES and dt == np.float32 and gs_p == 1
            and plan.channels <= ONE_PASS_GRAD_CHANNELS
            and explicit_vectors_serve(plan, plan.kernel_padding, axc)
            and one_pass_setting() != "off")


def _input_grad_entry(plan: ForwardPlan, sizes, strides, runs: bool):
    """The vector-planned input-gradient entry (:mod:`gridsample._grad_vector`,
    :mod:`gridsample._grad_interleaved`), or None."""
    return _vector_entry((INPUT_GRAD_ENTRIES, INPUT_GRAD_INTERLEAVED_ENTRIES), plan, sizes,
                         strides, runs)


def _finish(grad, dtype):
    """Round a gradient to its argument's dtype (float16/bfloat16: nearest even)."""
    if grad is None or grad.dtype == dtype:
        return grad
    return grad.astype(dtype)


def grid_sample_backward(grad_output, x, grid, mode="linear", padding_mode="zeros",
                         align_corners=False, *, channel_last=False, output_mask=(True, True),
                         fill_value=0, cubic_a=-0.75, grid_units="normalized",
                         displacement=False, prefilter=True):
    """Gradients of :func:`gridsample.grid_sample` w.r.t. ``x`` and ``grid``.

    Parameters
    ----------
    grad_output : array_like, shape (N, C, D1, ..., Dr), or (N, D1, ..., Dr, C) with
    ``channel_last``
        ``dL/dy`` for ``y = grid_sample(x, grid, ...)``; float16, bfloat16,
        float32 or float64, any strides.
    x : array_like, shape (N, C, d1, ..., dr), or (N, d1, ..., dr, C) with ``channel_last``
        The forward's input; float16, bfloat16, float32 or float64.
    grid : array_like, shape (N, D1, ..., Dr, r) or (1, D1, ..., Dr, r)
        The forward's grid; a batch of 1 was broadcast, so its gradient is
        summed over the batch.
    mode, padding_mode, align_corners, channel_last
        As in :func:`gridsample.grid_sample`.
    output_mask : pair of bool, default (True, True)
        Which gradients to compute; a skipped one is returned as ``None``
        and costs nothing.
    fill_value, cubic_a, grid_units, displacement
        As in :func:`gridsample.grid_sample`.  The grid gradient follows the
        units (pixels: ``dx/dg = 1``) and includes the fill's term under
        ``"constant"``; ``grad_x`` never depends on the fill.  With
        ``displacement`` the gradient is w.r.t. the displacements (the same
        as w.r.t. the absolute positions).
    prefilter : bool, default True
        B-spline modes: as in :func:`gridsample.grid_sample`; with it, ``grad_x`` is taken
        through the prefilter (w.r.t. the samples ``x``, not their coefficients).

    Returns
    -------
    grad_x : ndarray, shape and dtype of ``x`` (C-contiguous), or None
        The adjoint of the forward: every output point's ``grad_output``
        scattered to its taps with the forward's weights.
    grad_grid : ndarray, shape and dtype of ``grid``, or None
        ``dL/dgrid`` through unnormalization and padding: 0 where border or
        reflection clips the coordinate (the edges count as clipped), the
        sign of each reflection; cubic differentiates the weights only (its
        tap indices are padded, not its coordinate); nearest is 0.

    Raises
    ------
    GridSampleError, GridSampleTypeError
        As the forward; also for an integer, bool, complex or string ``x``,
        a ``grad_output`` of another shape than the forward's output, or a
        bad ``output_mask``.

    Notes
    -----
    Same results as PyTorch's ``grid_sample`` backward on 4-D and 5-D
    inputs, for every rank here.  Non-finite points (docs/semantics.md §7.3): a point with a NaN
    coordinate adds nothing to ``grad_x`` and gets a NaN grid gradient
    (linear, cubic; nearest gives 0); a point infinitely far out gets a grid
    gradient of 0.  Deterministic: each gradient element is summed by one
    thread in a fixed order, so the result is bit-identical at any thread
    count.  Gradients are computed in float64 when ``x`` or ``grid`` is
    float64, in float32 otherwise; positions in the grid's precision (float32 at
    least), as the forward forms them (docs/semantics.md §7.4).

    Examples
    --------
    >>> import numpy as np, gridsample
    >>> x = np.arange(4.0).reshape(1, 1, 2, 2)
    >>> grid = np.zeros((1, 1, 1, 2))                       # the centre
    >>> gx, gg = gridsample.grid_sample_backward(np.ones((1, 1, 1, 1)), x, grid,
    ...                                          align_corners=True)
    >>> gx            # each of the 4 taps had weight 1/4
    array([[[[0.25, 0.25],
             [0.25, 0.25]]]])
    >>> gg            # slopes 1 (along W) and 2 (along H) per pixel, times dx/dg = 1/2
    array([[[[0.5, 1. ]]]])
    """
    key = signature((grad_output, x, grid),
                    (mode, padding_mode, align_corners, channel_last, output_mask, fill_value,
                     cubic_a, grid_units, displacement, prefilter))
    prepared = _prepared.get(key)
    if prepared is None:
        plan, gout, x, grid, (want_x, want_grid) = plan_backward(
            grad_output, x, grid, mode, padding_mode, align_corners, channel_last,
            output_mask, fill_value=fill_value, cubic_a=cubic_a, grid_units=grid_units,
            displacement=displacement, prefilter=prefilter)
        if plan.prefilter or (plan.fill is not None and plan.mode != MODE_NEAREST):
            return run_backward(plan, gout, x, grid, want_x, want_grid)
        prepared, (grad_x, grad_grid) = PreparedGradients.prepare(plan, gout, x, grid, want_x,
                                                                 want_grid)
        _prepared.put(key, prepared)
    else:
        grad_x, grad_grid = prepared.run(grad_output, x, grid)
    return _finish(grad_x, x.dtype), _finish(grad_grid, grid.dtype)
