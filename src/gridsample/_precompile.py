"""Compile kernels ahead of use (``gridsample compile``).

Each requested combination is compiled by running the operator itself on a
tiny input of that combination: the very entries a real call of those dtypes,
rank, mode, padding and layout will run are compiled and written to the disk
cache (:func:`gridsample._jit.cache_dir`), and nothing can drift from what
the engine picks.  A combination already in the cache just loads.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

from ._api import grid_sample
from ._backward import grid_sample_backward
from ._errors import GridSampleError
from ._registry import DEFAULT_PADDINGS, MODES

__all__ = ["Combination", "combinations", "compile_combination", "compile_many", "share", "Workers",
           "finish", "resolve_dtype", "DEFAULT_DTYPES", "DEFAULT_RANKS", "DEFAULT_PADDINGS",
           "DEFAULT_MODES"]

#: What ``gridsample compile`` compiles when not told: float32 images and
#: volumes, the ONNX modes and every padding with code of its own, forward only
#: (B-spline modes on request: ``--mode bspline3``).
DEFAULT_DTYPES = ("float32",)
DEFAULT_MODES = tuple(m.name for m in MODES if m.onnx)
DEFAULT_RANKS = (2, 3)

#: The rank of the examples of every higher rank: from rank 4 on, every kernel (the general
#: N-D kernels, the B-spline prefilter's lines) takes the rank as data, so rank 4's example
#: compiles what rank 16's calls run, and a B-spline's pre-padded coefficients (12 samples
#: more on each side of every axis) stay small.
_EXAMPLE_MAX_RANK = 4

#: Channels of the channel-last example: more than the planar sweep takes,
#: so the channel-innermost kernels are compiled.
_INTERLEAVED_CHANNELS = 5


def resolve_dtype(name: str) -> np.dtype:
    """The NumPy dtype called ``name`` (``"bfloat16"`` needs ``ml_dtypes``)."""
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise GridSampleError("dtype 'bfloat16' needs the ml_dtypes package") from None
        return np.dtype(ml_dtypes.bfloat16)
    try:
        return np.dtype(name)
    except TypeError:
        raise GridSampleError(f"dtype={name!r} is not a NumPy dtype name "
                              "(e.g. float32, float64, float16, bfloat16, uint8, int16)") from None


@dataclass(frozen=True)
class Combination:
    """One thing to compile: dtypes, rank, mode, padding, layout, direction."""

    x_dtype: str
    grid_dtype: str
    rank: int
    mode: str
    padding: str
    channel_last: bool = False
    backward: bool = False
    channels: int | None = None  # None: 1, or more than the planar sweep takes (channel-last)
    # the grid a flow field (N, r, D1, ..., Dr) with its component axis moved last
    flow_field: bool = False

    def __str__(self) -> str:
        layout = ", channel-last" if self.channel_last else ""
        grid = ", a flow field's view" if self.flow_field else ""
        what = "backward" if self.backward else "forward"
        return (f"{what} {self.rank}-D {self.mode} {self.padding}, x {self.x_dtype}, "
                f"grid {self.grid_dtype}{grid}{layout}")


def combinations(x_dtypes=DEFAULT_DTYPES, grid_dtypes=("float32",), ranks=DEFAULT_RANKS,
                 modes=None, paddings=None, channel_last=False, backward=False,
                 flow_fields=False) -> list:
    """Every :class:`Combination` of the choices (``None``: the defaults, ``DEFAULT_*``).

    3-D and higher cubic, and ranks other than 2 and 3, run the general N-D
    kernels; they are listed like the others.  Backward combinations are
    added for floating ``x`` only (the gradients' domain); ``flow_fields``: each forward
    and backward combination of rank 2 or 3 also with a flow field's view as the grid (the
    forward's planar entries, the backward's interleaving).
    """
    modes = tuple(modes or DEFAULT_MODES)
    paddings = tuple(paddings or DEFAULT_PADDINGS)
    layouts = (False, True) if channel_last else (False,)
    out = []
    for xd, gd, r, m, p, cl in itertools.product(x_dtypes, grid_dtypes, ranks, modes, paddings,
                                                   layouts):
        grids = (False, True) if flow_fields and r in (2, 3) else (False,)
        for flow in grids:
            out.append(Combination(xd, gd, r, m, p, cl, flow_field=flow))
            if backward and np.dtype(resolve_dtype(xd)).kind == "f":
                out.append(Combination(xd, gd, r, m, p, cl, backward=True, flow_field=flow))
    return out


def _example(c: Combination, channels: int | None = None):
    """A tiny ``x``, grid and output gradient of combination ``c`` (``channels``: default
    1, or :data:`_INTERLEAVED_CHANNELS` channel-last)."""
    xd, gd = resolve_dtype(c.x_dtype), resolve_dtype(c.grid_dtype)
    # 2**(rank-1) * 4 elements: any rank the kernels take stays small, and the innermost axis
    # is a row of cubic taps wide, so that the row-load entries run where real input takes them.
    rank = min(c.rank, _EXAMPLE_MAX_RANK)
    spatial = (2,) * (rank - 1) + (4,)
    channels = channels or c.channels or (_INTERLEAVED_CHANNELS if c.channel_last else 1)
    shape = (1, *spatial, channels) if c.channel_last else (1, channels, *spatial)
    x = np.zeros(shape, xd)
    # (a flow field's view needs two points: with one, its strides are those of a C grid)
    out_spatial = (1,) * (rank - 1) + ((2,) if c.flow_field else (1,))
    grid = np.zeros((1, *out_spatial, rank), gd)
    if c.flow_field:
        grid = np.moveaxis(np.zeros((1, rank, *out_spatial), gd), 1, -1)
    out_shape = (1, *out_spatial, channels) if c.channel_last else (1, channels, *out_spatial)
    return x, grid, np.zeros(out_shape, xd)


def compile_combination(c: Combination) -> float:
    """Compile (or load from the cache) the kernels of ``c``; return the seconds it took."""
    x, grid, grad_out = _example(c)
    # A fill of 0 would run as zeros: constant's own kernel needs another fill.
    fill = 1 if c.padding == "constant" and x.dtype.kind not in "USO" else 0
    start = time.perf_counter()
    # Four channels as well: a few channels may run an entry of their own (the forward's 2-D
    # linear one pass takes one, nearest's and the 2-D linear grid gradient's up to three),
    # more the planned sweep.
    more = not (c.channel_last or c.channels)
    if c.backward:
        grid_sample_backward(grad_out, x, grid, c.mode, c.padding, channel_last=c.channel_last,
                             fill_value=fill)
        if more:
            x2, _, grad_out2 = _example(c, channels=4)
            grid_sample_backward(grad_out2, x2, grid, c.mode, c.padding, fill_value=fill)
    else:
        grid_sample(x, grid, c.mode, c.padding, channel_last=c.channel_last, fill_value=fill)
        if more:
            grid_sample(_example(c, channels=4)[0], grid, c.mode, c.padding, fill_value=fill)
    return time.perf_counter() - start


def share(todo, jobs: int) -> tuple:
    """``(mine, theirs)``: the combinations this process compiles and those left to ``jobs -
    1`` workers.  This process takes the larger share (``ceil(n / jobs)``): it starts at
    once, while a spawned worker first imports NumPy, Numba and gridsample (~1 s)."""
    todo = list(todo)
    mine = -(-len(todo) // max(1, jobs))
    return todo[:mine], todo[mine:]


class Workers:
    """Combinations compiled in ``workers`` spawned processes while this one goes on.

    Numba compiles in one thread per process, so several processes compile
    several kernels at a time; they share the disk cache (its writes are
    atomic), and this process's later calls load what they wrote.  Workers
    are spawned, not forked (forking a process that ran kernels is unsafe).
    """

    def __init__(self, todo, workers: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        todo = list(todo)
        context = multiprocessing.get_context("spawn")
        self._pool = ProcessPoolExecutor(max_workers=max(1, min(workers, len(todo))),
                                         mp_context=context)
        self._futures = [self._pool.submit(compile_combination, c) for c in todo]

    def wait(self, done=None) -> None:
        """Wait for every combination (re-raising a worker's error); ``done()`` after each."""
        from concurrent.futures import as_completed

        try:
            for future in as_completed(self._futures):
                future.result()
                if done:
                    done()
        finally:
            self._pool.shutdown(cancel_futures=True)

    def cancel(self) -> None:
        """Drop the combinations no worker has started, without waiting (after an error here:
        that error, not a worker's, is the one to report)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def finish(mine, workers, done=None) -> None:
    """Compile ``mine`` in this process while ``workers`` (:class:`Workers`, or None) compile
    theirs, then wait for them; ``done()`` after each combination.  After an error here the
    workers are cancelled, not awaited: that error is the one to report."""
    try:
        for combo in mine:
            compile_combination(combo)
            if done:
                done()
    except BaseException:
        if workers is not None:
            workers.cancel()
        raise
    if workers is not None:
        workers.wait(done)


def compile_many(todo, jobs: int = 1, done=None) -> None:
    """Compile every combination of ``todo``, in ``jobs`` processes at once (this one and
    ``jobs - 1`` :class:`Workers`; see :func:`share`).  ``done()`` is called after each
    combination."""
    from ._threads import compile_pool

    compile_pool()  # the thread pool's own compiled functions, used by every call that splits
    mine, theirs = share(todo, jobs)
    finish(mine, Workers(theirs, jobs - 1) if theirs else None, done)
