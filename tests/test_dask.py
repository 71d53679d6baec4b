"""gridsample.dask: equal to the in-memory operator bit for bit, lazy, footprint-only reads."""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import gridsample  # noqa: E402
import gridsample.dask as gdask  # noqa: E402
from conftest import ALIGNS, MODES, PADDINGS  # noqa: E402
from gridsample.dask import _block  # noqa: E402


def same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)  # NaN == NaN here; bit for bit otherwise


class Counting:
    """An array-like that records every non-empty read (for ``da.from_array``)."""

    def __init__(self, a):
        self.a = a
        self.shape, self.dtype, self.ndim = a.shape, a.dtype, a.ndim
        self.reads = []
        self._lock = threading.Lock()

    def __getitem__(self, idx):
        out = self.a[idx]
        if out.size:
            with self._lock:
                self.reads.append(idx)
        return out

    def chunks_read(self, chunks):
        """Chunk indices (tuples) the reads touched, for regular ``chunks``."""
        return {combo for idx in self.reads for combo in itertools.product(
            *(range(s.start // c, (s.stop - 1) // c + 1) for s, c in zip(idx, chunks)))}


def counted(a, chunks):
    c = Counting(a)
    arr = da.from_array(c, chunks=chunks, meta=np.empty((0,) * a.ndim, a.dtype))
    return c, arr


def rough_grid(rng, shape, spread=1.3, dtype=np.float32):
    return rng.uniform(-spread, spread, shape).astype(dtype)


# --------------------------------------------------------------------------
# Equality with the in-memory operator.

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
def test_rank2_all_modes(rng, mode, pad):
    x = rng.standard_normal((2, 3, 19, 23)).astype(np.float32)
    grid = rough_grid(rng, (2, 10, 13, 2), spread=2.5)  # far points: reflection folds
    xd = da.from_array(x, chunks=(1, 2, 6, 7))
    for align in ALIGNS:
        want = gridsample.grid_sample(x, grid, mode, pad, align)
        for chunks in [(4, 5), (10, 13), (3, 1)]:
            got = gdask.grid_sample(xd, grid, mode, pad, align, chunks=chunks).compute()
            same(got, want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
def test_rank3_dask_grid(rng, mode, pad):
    x = rng.standard_normal((1, 2, 9, 10, 11))
    grid = rough_grid(rng, (1, 6, 5, 7, 3), dtype=np.float64)
    xd = da.from_array(x, chunks=(1, 1, 4, 5, 3))
    gd = da.from_array(grid, chunks=(1, 3, 2, 4, 3))
    want = gridsample.grid_sample(x, grid, mode, pad, True)
    same(gdask.grid_sample(xd, gd, mode, pad, True).compute(), want)


@pytest.mark.parametrize("mode", MODES)
def test_channel_last_broadcast_grid_and_dtypes(rng, mode):
    x = (rng.uniform(0, 255, (3, 12, 14, 4))).astype(np.uint8)
    grid = rough_grid(rng, (1, 7, 9, 2), spread=1.1)  # batch 1: broadcast over x's 3 items
    xd = da.from_array(x, chunks=(2, 5, 6, 3))
    for pad in PADDINGS:
        want = gridsample.grid_sample(x, grid, mode, pad, False, channel_last=True)
        got = gdask.grid_sample(xd, grid, mode, pad, False, channel_last=True, chunks=(3, 4))
        same(got.compute(), want)
    # float64 x, float16 grid, NumPy x (wrapped)
    x64 = rng.standard_normal((2, 2, 8, 9))
    g16 = rough_grid(rng, (2, 5, 6, 2), dtype=np.float16)
    same(gdask.grid_sample(x64, g16, mode, "reflection", chunks=(2, 3)).compute(),
         gridsample.grid_sample(x64, g16, mode, "reflection"))


def test_non_finite_grid_values(rng):
    x = rng.standard_normal((1, 2, 10, 12)).astype(np.float32)
    grid = rough_grid(rng, (1, 6, 8, 2))
    grid[0, 0, 0, 0] = np.nan
    grid[0, 1, 2, 1] = np.inf
    grid[0, 3, 3, 0] = -np.inf
    grid[0, 4, 5, 1] = 1e30
    grid[0, 5, 7, :] = np.inf  # a whole block may read nothing but the edge
    xd = da.from_array(x, chunks=(1, 1, 4, 4))
    for mode, pad in itertools.product(MODES, PADDINGS):
        want = gridsample.grid_sample(x, grid, mode, pad)
        same(gdask.grid_sample(xd, grid, mode, pad, chunks=(3, 4)).compute(), want)


def test_blocks_that_read_nothing(rng):
    x = rng.standard_normal((1, 1, 16, 16)).astype(np.float32)
    grid = rough_grid(rng, (1, 8, 8, 2), spread=1.0)
    grid[0, :4, :4] += 10.0  # one output block entirely outside the input
    c, xd = counted(x, (1, 1, 8, 8))
    want = gridsample.grid_sample(x, grid, "linear", "zeros")
    same(gdask.grid_sample(xd, grid, "linear", "zeros", chunks=(4, 4)).compute(), want)


# --------------------------------------------------------------------------
# Region tasks: x read straight from its source (zarr, NumPy, from_zarr,
# from_array(..., inline_array=False)) when the grid is a Dask array.

def _sources(x, tmp_path):
    zarr = pytest.importorskip("zarr")
    chunks = (1,) + tuple(max(1, s // 2) for s in x.shape[1:])
    z = zarr.open_array(str(tmp_path / "x.zarr"), mode="w", shape=x.shape, dtype=x.dtype,
                        chunks=chunks)
    z[...] = x
    return {"numpy": x, "zarr": z, "from_zarr": da.from_zarr(z),
            "from_array": da.from_array(Counting(x), chunks=chunks,
                                        meta=np.empty((0,) * x.ndim, x.dtype))}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
def test_region_tasks_rank2(rng, tmp_path, mode, pad):
    x = rng.standard_normal((2, 3, 19, 23)).astype(np.float32)
    grid = rough_grid(rng, (2, 10, 13, 2), spread=2.5)
    grid[0, 0, 0] = [np.nan, 0.2]
    grid[1, 9, 12] = [np.inf, -1e30]
    gd = da.from_array(grid, chunks=(1, 4, 5, 2))
    for align in ALIGNS:
        want = gridsample.grid_sample(x, grid, mode, pad, align)
        for label, src in _sources(x, tmp_path).items():
            got = gdask.grid_sample(src, gd, mode, pad, align)
            assert got.chunks[2:] == gd.chunks[1:3], label
            same(got.compute(), want)


@pytest.mark.parametrize("mode", MODES)
def test_region_tasks_rank3_channel_last_broadcast(rng, tmp_path, mode):
    x = rng.standard_normal((2, 9, 10, 11, 3))
    grid = rough_grid(rng, (1, 6, 5, 7, 3), spread=1.6)  # batch 1 broadcasts
    gd = da.from_array(grid, chunks=(1, 3, 2, 4, 3))
    for pad in PADDINGS:
        want = gridsample.grid_sample(x, grid, mode, pad, True, channel_last=True)
        for src in _sources(x, tmp_path).values():
            same(gdask.grid_sample(src, gd, mode, pad, True, channel_last=True).compute(), want)


def looking_at_a_corner(rng):
    """A 64x64 image in counted 8x8 chunks, and a 6x6 grid that looks at x in
    [10, 21], y in [40, 50] (pixels, align_corners): linear reads columns
    10..22, rows 40..51; with MARGIN = 1, 9..23 and 39..52."""
    x = rng.standard_normal((1, 1, 64, 64)).astype(np.float32)
    c, xd = counted(x, (1, 1, 8, 8))
    px = rng.uniform(10, 21, (1, 6, 6))
    py = rng.uniform(40, 50, (1, 6, 6))
    return x, c, xd, np.stack([px / 63 * 2 - 1, py / 63 * 2 - 1], -1)


def test_region_reads_only_the_footprint(rng):
    x, c, xd, grid = looking_at_a_corner(rng)
    gd = da.from_array(grid, chunks=(1, 3, 3, 2))
    got = gdask.grid_sample(xd, gd, "linear", "zeros", True).compute()
    same(got, gridsample.grid_sample(x, grid, "linear", "zeros", True))
    assert len(c.reads) == 4  # one box per output block
    for _, _, rows, cols in c.reads:
        assert 39 <= rows.start and rows.stop <= 53 and 9 <= cols.start and cols.stop <= 24
    # a block whose points all fall outside reads nothing at all
    c.reads.clear()
    far = da.from_array(np.full((1, 4, 4, 2), 3.0), chunks=(1, 2, 2, 2))
    same(gdask.grid_sample(xd, far).compute(), np.zeros((1, 1, 4, 4), np.float32))
    assert c.reads == []


def test_stand_in_reads_stay_inside_the_window_buffer(rng):
    # The kernels read element (n, c, 0, ..., 0) for taps that read nothing;
    # in a block's full-size view that address must be inside memory the task holds.
    win = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    window = ((700, 704), (300, 305))
    spec = _block.RegionSpec(mode=0, pad=0, align=False, channel_last=False,
                             in_spatial=(1000, 800), coord_dtype=np.dtype(np.float32),
                             dtype=np.dtype(np.float32), threads=1, batch_range=(0, 1),
                             channel_range=(0, 2))
    anchored = _block._anchored(win, window, spec)
    view = _block._virtual(anchored, window, spec)
    np.testing.assert_array_equal(view[:, :, 700:705, 300:306], win)
    start = anchored.base.__array_interface__["data"][0]
    stop = start + anchored.base.nbytes
    for n, c in itertools.product(range(1), range(2)):
        addr = view[n, c, :1, :1].__array_interface__["data"][0]
        assert start <= addr < stop


_FRESH_COPIES = """
import os
if {general}:
    os.environ["GRIDSAMPLE_KERNELS"] = "general"
import numpy as np, dask.array as da, gridsample, gridsample.dask as gd
class Store:  # like zarr: every read returns a new array
    def __init__(self, a): self.a, self.shape, self.dtype = a, a.shape, a.dtype
    def __getitem__(self, idx): return np.array(self.a[idx])
x = np.ones((1, 1, 4096, 2048), np.float32)
gy = np.linspace(0.9, 0.95, 16)
gx = np.tile([-0.9, 0.99999], 8)  # the second reads a tap outside (zeros padding)
grid = np.stack([gx, gy], -1).reshape(1, 4, 4, 2).astype(np.float32)
grid[0, 0, 0, 0] = np.nan          # a NaN point
xd = da.from_array(Store(x), chunks=(1, 1, 1024, 1024), inline_array=False,
                   meta=np.empty((0,) * 4, np.float32))
for mode in ("linear", "nearest", "cubic"):
    got = gd.grid_sample(xd, da.from_array(grid, chunks=(1, 2, 2, 2)), mode).compute()
    np.testing.assert_array_equal(got, gridsample.grid_sample(x, grid, mode))
print("ok")
"""


@pytest.mark.parametrize("general", [False, True])
def test_far_windows_from_a_copying_store_do_not_crash(general):
    # Before the window buffer was anchored, these stand-in reads hit unmapped
    # memory (a segmentation fault): run in a child process so a crash is a failure.
    out = subprocess.run([sys.executable, "-c", _FRESH_COPIES.format(general=general)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


# --------------------------------------------------------------------------
# affine_warp.

def _theta(r, dtype=np.float32, n=1, scale=1.0):
    if r == 2:
        t = np.array([[0.9, 0.25, 0.05], [-0.2, 1.1, -0.1]])
    else:
        t = np.array([[0.9, 0.1, 0.05, 0.02], [-0.1, 1.05, 0.2, -0.1], [0.05, -0.15, 0.95, 0.1]])
    t = t.copy()
    t[:, :r] *= scale
    return np.repeat(t[None], n, 0).astype(dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
def test_affine_warp_rank2(rng, mode, pad):
    x = rng.standard_normal((2, 3, 17, 21)).astype(np.float32)
    xd = da.from_array(x, chunks=(1, 2, 6, 7))
    for align, scale, tdtype in [(False, 1.0, np.float32), (True, 2.7, np.float64),
                                 (False, 0.3, np.float16)]:
        theta = _theta(2, tdtype, n=2, scale=scale)
        theta[1, 0, 2] += 0.5  # the items differ
        grid = gridsample.affine_grid(theta, (2, 3, 11, 15), align)
        want = gridsample.grid_sample(x, grid, mode, pad, align)
        got = gdask.affine_warp(xd, theta, (11, 15), mode, pad, align, chunks=(4, 6))
        same(got.compute(), want)


@pytest.mark.parametrize("pad", PADDINGS)
def test_affine_warp_rank3_channel_last_broadcast(rng, pad):
    x = rng.standard_normal((2, 9, 10, 11, 2))
    xd = da.from_array(x, chunks=(1, 4, 5, 6, 1))
    theta = _theta(3, np.float64, n=1, scale=1.6)
    grid = gridsample.affine_grid(theta, (1, 2, 9, 10, 11), True)
    for mode in ("linear", "nearest", "cubic"):
        want = gridsample.grid_sample(x, grid, mode, pad, True, channel_last=True)
        got = gdask.affine_warp(xd, theta[0], None, mode, pad, True, channel_last=True)
        same(got.compute(), want)


def test_affine_block_grid_equals_affine_grid():
    theta = _theta(3, np.float32, n=2, scale=1.3)
    full = gridsample.affine_grid(theta, (2, 1, 7, 9, 11), False)
    spec = _block.AffineSpec(theta, theta.dtype, (7, 9, 11), (2, 3, 4), (6, 9, 10), False)
    same(_block.affine_grid_block(spec), full[:, 2:6, 3:9, 4:10])


# --------------------------------------------------------------------------
# Laziness and footprints.

def test_building_the_graph_reads_nothing(rng):
    x = rng.standard_normal((1, 2, 32, 32)).astype(np.float32)
    cx, xd = counted(x, (1, 1, 8, 8))
    grid = rough_grid(rng, (1, 16, 16, 2))
    cg, gd = counted(grid, (1, 8, 8, 2))
    out = gdask.grid_sample(xd, gd, "cubic", "reflection")  # x has a source: region tasks
    theta = _theta(2)
    warped = gdask.affine_warp(xd, theta, (40, 24), "linear", "border")
    assert cx.reads == [] and cg.reads == []
    assert isinstance(out, da.Array) and isinstance(warped, da.Array)
    assert warped.shape == (1, 2, 40, 24)
    same(out.compute(), gridsample.grid_sample(x, grid, "cubic", "reflection"))
    assert cx.reads
    assert len(cg.reads) == 4  # each grid block computed once, by its task
    warped.compute()


def test_computed_x_with_a_dask_grid_plans_footprints_from_the_grid(rng):
    # x made by a computation has no source to read regions from: the grid's
    # footprints are computed when the graph is built; x is still not read.
    x = rng.standard_normal((1, 2, 32, 32)).astype(np.float32)
    cx, xd = counted(x, (1, 1, 8, 8))
    grid = rough_grid(rng, (1, 16, 16, 2))
    cg, gd = counted(grid, (1, 8, 8, 2))
    out = gdask.grid_sample(xd * 2, gd, "linear", "zeros")
    assert cx.reads == [] and len(cg.reads) == 4
    same(out.compute(), gridsample.grid_sample(2 * x, grid, "linear", "zeros"))


def test_only_the_footprint_is_read(rng):
    x, c, xd, grid = looking_at_a_corner(rng)
    got = gdask.grid_sample(xd, grid, "linear", "zeros", True, chunks=(6, 6)).compute()
    same(got, gridsample.grid_sample(x, grid, "linear", "zeros", True))
    # footprint widened by MARGIN = 1: columns 9..23, rows 39..52 -> chunks 1..2, 4..6
    assert c.chunks_read((1, 1, 8, 8)) <= {(0, 0, i, j) for i in (4, 5, 6) for j in (1, 2)}
    assert {(0, 0, 5, 1), (0, 0, 5, 2)} <= c.chunks_read((1, 1, 8, 8))


def test_reflection_footprint_is_exact_not_the_whole_axis(rng):
    # Points beyond the right edge reflect back near it: only the last column of
    # chunks is read, never the left ones (an unreflected box would span nothing).
    x = rng.standard_normal((1, 1, 32, 64)).astype(np.float32)
    c, xd = counted(x, (1, 1, 32, 8))
    grid = np.stack([rng.uniform(1.02, 1.08, (1, 5, 5)), rng.uniform(-0.5, 0.5, (1, 5, 5))], -1)
    for mode in MODES:
        c.reads.clear()
        got = gdask.grid_sample(xd, grid, mode, "reflection").compute()
        same(got, gridsample.grid_sample(x, grid, mode, "reflection"))
        assert c.chunks_read((1, 1, 32, 8)) == {(0, 0, 0, 7)}


def test_affine_footprint(rng):
    # A zoom into the centre (scale 0.25): each output block reads a few chunks only.
    x = rng.standard_normal((1, 1, 64, 64)).astype(np.float32)
    c, xd = counted(x, (1, 1, 8, 8))
    theta = np.array([[[0.25, 0, 0], [0, 0.25, 0]]], np.float32)
    got = gdask.affine_warp(xd, theta, None, "cubic", "zeros", chunks=(32, 32)).compute()
    same(got, gridsample.grid_sample(x, gridsample.affine_grid(theta, x.shape), "cubic"))
    # the whole output reads input x, y in about [24, 40]: chunks 2..5 at most
    assert c.chunks_read((1, 1, 8, 8)) <= {(0, 0, i, j) for i in range(2, 6) for j in range(2, 6)}


def test_a_changed_grid_is_refused(rng):
    # A grid whose values change between planning and computing would read
    # outside the planned window: the task refuses instead.
    x = rng.standard_normal((1, 1, 32, 32)).astype(np.float32)
    xd = da.from_array(x, chunks=(1, 1, 8, 8))
    base = np.full((1, 4, 4, 2), -0.9, np.float32)
    calls = []

    def make(block):
        if block.size:
            calls.append(1)
        return block if len(calls) <= 1 else -block

    gd = da.from_array(base, chunks=(1, 4, 4, 2)).map_blocks(make, dtype=np.float32)
    out = gdask.grid_sample(xd, gd)
    with pytest.raises(RuntimeError, match="outside the window"):
        out.compute(scheduler="sync")


# --------------------------------------------------------------------------
# Schedulers and threads.

def test_threaded_scheduler_concurrent_parallel_kernels(rng):
    x = rng.standard_normal((1, 2, 40, 40)).astype(np.float32)
    grid = rough_grid(rng, (1, 32, 32, 2))
    xd = da.from_array(x, chunks=(1, 1, 10, 10))
    want = gridsample.grid_sample(x, grid, "cubic", "border")
    # kernel_threads=None: every task runs Numba's parallel kernel, several at once.
    got = gdask.grid_sample(xd, grid, "cubic", "border", chunks=(4, 8), kernel_threads=None)
    same(got.compute(scheduler="threads", num_workers=4), want)


def test_kernel_threads_default_is_one(rng, monkeypatch):
    import numba

    seen = []
    real = _block._grid_sample

    def spy(*args, **kwargs):
        seen.append(numba.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(_block, "_grid_sample", spy)
    x = rng.standard_normal((1, 1, 8, 8)).astype(np.float32)
    gdask.grid_sample(x, rough_grid(rng, (1, 4, 4, 2)), chunks=(2, 2)).compute(scheduler="threads")
    assert seen and set(seen) == {1}


def test_errors(rng):
    x = np.array(["a", "b"], object).reshape(1, 1, 2)
    with pytest.raises(TypeError, match="numeric"):
        gdask.grid_sample(x, np.zeros((1, 1, 1)))
    with pytest.raises(ValueError, match="mode"):
        gdask.grid_sample(np.zeros((1, 1, 4, 4)), np.zeros((1, 2, 2, 2)), mode="quadratic")
    with pytest.raises(ValueError, match="kernel_threads"):
        gdask.grid_sample(np.zeros((1, 1, 4, 4)), np.zeros((1, 2, 2, 2)), kernel_threads=0)
    with pytest.raises(ValueError, match="theta"):
        gdask.affine_warp(np.zeros((1, 1, 4, 4)), np.zeros((1, 3, 4)))


def test_bad_chunks_and_unknown_sizes_are_gridsample_errors():
    """Dask's own errors (a chunks tuple of the wrong length, NaN chunk sizes) come out as
    GridSampleError naming the argument."""
    x, grid = np.zeros((1, 3, 4, 5)), np.zeros((1, 4, 5, 2))
    with pytest.raises(gridsample.GridSampleError, match=r"chunks=\(1, 3, 4, 5\) has 4"):
        gdask.grid_sample(x, grid, chunks=(1, 3, 4, 5))
    with pytest.raises(gridsample.GridSampleError, match="chunks="):
        gdask.grid_sample(x, grid, chunks=((1, 1), (5,)))  # blocks that do not sum to 4
    with pytest.raises(gridsample.GridSampleError, match="chunks=0"):
        gdask.grid_sample(x, grid, chunks=0)
    with pytest.raises(gridsample.GridSampleTypeError, match="chunks="):
        gdask.grid_sample(x, grid, chunks={1: 3, 2: 2})  # Dask's dict form: refused
    with pytest.raises(gridsample.GridSampleError, match="chunks=.*has 1"):
        gdask.affine_warp(x, np.eye(2, 3), None, chunks=(2,))
    # Dask normalizes a negative size without a word (a graph of negative shapes)
    with pytest.raises(gridsample.GridSampleError, match=r"chunks=\(-3, 2\) holds a negative"):
        gdask.grid_sample(x, grid, chunks=(-3, 2))
    with pytest.raises(gridsample.GridSampleError, match=r"chunks=\(-3, 2\) holds a negative"):
        gdask.affine_warp(x, np.eye(2, 3), (4, 5), chunks=(-3, 2))
    # kernel_threads: a wrong type is a type error, a bad count a value error
    for bad in ("2", 1.5, [1], True):
        with pytest.raises(gridsample.GridSampleTypeError, match="kernel_threads="):
            gdask.grid_sample(x, grid, kernel_threads=bad)
    with pytest.raises(gridsample.GridSampleError, match="kernel_threads=0"):
        gdask.grid_sample(x, grid, kernel_threads=0)
    xd = da.from_array(x, chunks=(1, 1, 2, 5))
    unknown = xd[xd[:, 0, 0, 0] > -1]
    with pytest.raises(gridsample.GridSampleError, match="x has unknown chunk sizes"):
        gdask.grid_sample(unknown, grid)
    with pytest.raises(gridsample.GridSampleError, match="x has unknown chunk sizes"):
        gdask.affine_warp(unknown, np.eye(2, 3))
    gd = da.from_array(grid, chunks=(1, 2, 5, 2))
    with pytest.raises(gridsample.GridSampleError, match="grid has unknown chunk sizes"):
        gdask.grid_sample(x, gd[gd[:, 0, 0, 0] > -1])


def test_list_input_and_empty_chunks_as_in_memory(rng):
    """x as a nested list (array_like, as the in-memory API takes it); empty chunks of x's
    batch or channels, and an empty output chunk of affine_warp: the in-memory result."""
    x = rng.standard_normal((2, 1, 3, 4))
    grid, theta = rough_grid(rng, (1, 2, 3, 2)), _theta(2)[:1]
    np.testing.assert_array_equal(gdask.grid_sample(x.tolist(), grid).compute(),
                                  gridsample.grid_sample(x, grid))
    np.testing.assert_array_equal(gdask.affine_warp(x.tolist(), theta).compute(),
                                  gridsample.affine_warp(x, theta))
    for chunks in ((1, (1, 0), 3, 4), ((2, 0), 1, 3, 4), (1, 1, (0, 3), (4, 0))):
        xd = da.from_array(x, chunks=chunks)
        np.testing.assert_array_equal(gdask.grid_sample(xd, grid).compute(),
                                      gridsample.grid_sample(x, grid))
        np.testing.assert_array_equal(gdask.affine_warp(xd, theta).compute(),
                                      gridsample.affine_warp(x, theta))
    np.testing.assert_array_equal(gdask.affine_warp(x, theta, chunks=((3, 0), (4,))).compute(),
                                  gridsample.affine_warp(x, theta))


def test_a_tensor_x_is_read_as_the_in_memory_calls_read_it():
    """x with a shape and a dtype NumPy does not know (a torch tensor): read through NumPy,
    as ``gridsample.grid_sample`` reads it (Dask's own wrapping failed on its dtype)."""
    torch = pytest.importorskip("torch")
    x = torch.arange(30.0).reshape(1, 2, 3, 5)
    grid, theta = np.zeros((1, 2, 3, 2), np.float32), np.eye(2, 3, dtype=np.float32)
    np.testing.assert_array_equal(gdask.grid_sample(x, grid).compute(),
                                  gridsample.grid_sample(x.numpy(), grid))
    np.testing.assert_array_equal(gdask.affine_warp(x, theta).compute(),
                                  gridsample.affine_warp(x.numpy(), theta))


def test_affine_warp_errors_and_non_finite_theta_as_in_memory():
    """affine_warp's messages name x and theta as the in-memory call's do, and a non-finite
    theta warns no more than it does in memory."""
    for x, theta in [(np.zeros((1, 1, 4)), np.zeros((1, 1, 2))),
                     (np.zeros((1, 1, 3, 4)), np.zeros((3, 2, 3)))]:
        with pytest.raises(gridsample.GridSampleError) as lazy:
            gdask.affine_warp(x, theta)
        with pytest.raises(gridsample.GridSampleError) as eager:
            gridsample.affine_warp(x, theta)
        assert str(lazy.value) == str(eager.value)
    x, theta = np.ones((1, 1, 4, 4)), np.array([[[np.inf, 0, 0], [0, 1, 0]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = gdask.affine_warp(x, theta, chunks=2).compute()
    np.testing.assert_array_equal(got, gridsample.affine_warp(x, theta))


def test_bad_array_likes_and_bool_chunks():
    with pytest.raises(gridsample.GridSampleTypeError, match=r"x=\[\[1, 2\], \[3\]\] cannot"):
        gdask.grid_sample([[1, 2], [3]], np.zeros((1, 1, 1, 2)))
    with pytest.raises(gridsample.GridSampleTypeError, match="grid=.*cannot"):
        gdask.grid_sample(np.zeros((1, 1, 2, 2)), [[1, 2], [3]])
    with pytest.raises(gridsample.GridSampleTypeError, match="chunks=True"):
        gdask.grid_sample(np.zeros((1, 1, 2, 2)), np.zeros((1, 3, 3, 2)), chunks=True)
    with pytest.raises(gridsample.GridSampleTypeError, match="chunks="):
        gdask.grid_sample(np.zeros((1, 1, 2, 2)), np.zeros((1, 3, 3, 2)),
                          chunks=((True, True, True), 3))


@pytest.mark.parametrize("as_dask", [False, True])
def test_grid_of_another_dtype_is_refused_before_dask_chunks_it(as_dask):
    """An object grid: Dask's automatic chunking refuses its dtype with an error of its own;
    the grid's dtype is checked first, as in memory."""
    grid = np.zeros((1, 3, 3, 2), object)
    if as_dask:
        grid = da.from_array(grid, chunks=-1)
    with pytest.raises(gridsample.GridSampleTypeError, match="grid has dtype object"):
        gdask.grid_sample(np.zeros((1, 1, 4, 4)), grid)


def test_import_gridsample_does_not_import_dask():
    code = "import sys, gridsample; print('dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_local_cluster_two_worker_processes(rng, tmp_path):
    distributed = pytest.importorskip("distributed")
    x = rng.standard_normal((1, 2, 24, 24)).astype(np.float32)
    grid = rough_grid(rng, (1, 16, 16, 2))
    theta = _theta(2)
    xd = da.from_array(x, chunks=(1, 1, 8, 8))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as client:
        # Both workers registered before any task (on a loaded 2-core machine they can
        # start after the client connects; scheduler_info() is a snapshot taken then).
        client.wait_for_workers(2, timeout=300)
        got = gdask.grid_sample(xd, grid, "linear", "reflection", chunks=(8, 8))
        warped = gdask.affine_warp(xd, theta, None, "cubic", "border", chunks=(8, 12))
        # region tasks: the zarr array travels to the workers by path
        region = gdask.grid_sample(_sources(x, tmp_path)["zarr"],
                                   da.from_array(grid, chunks=(1, 8, 8, 2)), "cubic", "zeros")
        a, b, c = dask.compute(got, warped, region)
        assert len(client.nthreads()) == 2  # asked of the scheduler now
    same(c, gridsample.grid_sample(x, grid, "cubic", "zeros"))
    same(a, gridsample.grid_sample(x, grid, "linear", "reflection"))
    same(b, gridsample.grid_sample(x, gridsample.affine_grid(theta, x.shape), "cubic", "border"))
