"""The vector sweeps' two ways of reading taps (gridsample._row_loads; 2-D cubic and
linear, 3-D linear): row loads and gathers give the same bits, and the engine picks rows
only where they apply.

Both strategies compute the same float32 operations in the same order, so the
results are compared as bits (``view(np.uint32)``: the sign of a zero included;
a NaN as any NaN, since LLVM may swap the operands of an add and x86 returns the
first of two NaN operands), and each against the general kernels
(``assert_array_equal``: those may differ in the sign of a zero sum, see
test_vector_kernels.py).
"""

from __future__ import annotations

import itertools

import numba
import numpy as np
import pytest

import gridsample
from conftest import ALIGNS
from gridsample import _engine, _row_loads
from gridsample._errors import GridSampleError
from gridsample._options import MODE_CUBIC, MODE_LINEAR, MODE_NEAREST
from test_vector_kernels import PADDINGS, nasty_grid


def _kernel(mode, rank):
    # Beside that kernel's vector tests (conftest): each variant compiles once a run.
    return pytest.param(mode, rank, id=f"{mode}-{rank}d",
                        marks=pytest.mark.xdist_group(f"vector-{mode}-{rank}d"))


KERNELS = [_kernel("cubic", 2), _kernel("linear", 2), _kernel("linear", 3)]
#: Plan table rows of each kernel's gathering sweep.
PLAN_ROWS = {("cubic", 2): 8, ("linear", 2): 4, ("linear", 3): 6}
#: Those of every gathering sweep (nearest 1, 3-D cubic 12 too).
GATHER_ROWS = {1, 4, 6, 8, 12}
MODE_CODES = {"cubic": MODE_CUBIC, "linear": MODE_LINEAR}


@pytest.fixture(autouse=True)
def _user_kernels(monkeypatch):
    monkeypatch.setenv("GRIDSAMPLE_KERNELS", "auto")


def sample(monkeypatch, loads, *args, **kwargs):
    """``grid_sample`` with the sweeps' loads forced to ``loads``."""
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", loads)
    return gridsample.grid_sample(*args, **kwargs)


def general(*args, **kwargs):
    with _engine.use_kernels("general"):
        return gridsample.grid_sample(*args, **kwargs)


def assert_same_bits(a, b):
    assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    numbers = ~np.isnan(a)
    np.testing.assert_array_equal(a[numbers].view(np.uint32), b[numbers].view(np.uint32))


def table_rows(monkeypatch) -> list:
    """The plan tables' row counts of the vector launches that follow, checking that the
    row-load entries run exactly when the table has the row loads' rows."""
    from gridsample._affine_entries import AFFINE_ROW_LOAD_ENTRIES

    rows = []
    launch = _engine.run_shared
    by_rows = {*_engine.ROW_LOAD_ENTRIES.values(), *AFFINE_ROW_LOAD_ENTRIES.values()}

    def spy(entry, tasks, args, threads, scratch=()):
        if scratch:
            rows.append(scratch[0][0][0])
            assert (rows[-1] not in GATHER_ROWS) == (entry in by_rows)
        return launch(entry, tasks, args, threads, scratch)

    monkeypatch.setattr(_engine, "run_shared", spy)
    return rows


def with_rows(mode, rank):
    """The plan table's row count of ``(mode, rank)`` with the row loads' rows."""
    return PLAN_ROWS[(mode, rank)] + _row_loads.ROW_LOAD_ROWS[(rank, MODE_CODES[mode])]


def inputs(rng, shape, out_spatial, batch_grid=None):
    """X with ±inf and NaN among its values (a tap must never make 0 * inf), and a grid
    mostly inside -- whole groups of points that qualify -- with nasty points (edges, NaN,
    ±inf, huge values) in its last three quarters."""
    rank = len(out_spatial)
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[::97] = np.inf
    x.reshape(-1)[5::89] = -np.inf
    x.reshape(-1)[11::101] = np.nan
    gshape = (batch_grid or shape[0],) + out_spatial + (rank,)
    grid = rng.uniform(-0.8, 0.8, gshape).astype(np.float32)
    tail = grid.reshape(gshape[0], -1, rank)[:, grid[0].size // (4 * rank):]
    tail[...] = nasty_grid(rng, tail.shape, np.float32)
    return x, grid


SPATIAL = {2: ((9, 12), (13, 11)), 3: ((5, 6, 7), (4, 5, 7))}


@pytest.mark.parametrize("mode, rank", KERNELS)
@pytest.mark.parametrize("pad", PADDINGS)
def test_rows_equal_gathers_and_the_general_kernels(rng, monkeypatch, mode, rank, pad):
    # 1, 2 and 3 channels: the single sweep, a pair, a pair and one; 143 or 140 points:
    # whole groups and a tail of either lane count.
    in_spatial, out_spatial = SPATIAL[rank]
    for channels, align in itertools.product((1, 2, 3), ALIGNS):
        x, grid = inputs(rng, (2, channels) + in_spatial, out_spatial)
        rows = table_rows(monkeypatch)
        got = sample(monkeypatch, "rows", x, grid, mode, pad, align)
        assert rows and set(rows) == {with_rows(mode, rank)}
        assert_same_bits(got, sample(monkeypatch, "gather", x, grid, mode, pad, align))
        np.testing.assert_array_equal(got, general(x, grid, mode, pad, align))


@pytest.mark.parametrize("mode, rank", KERNELS)
def test_rows_with_fill_values_per_axis_paddings_and_strided_views(rng, monkeypatch, mode,
                                                                    rank):
    in_spatial, out_spatial = SPATIAL[rank]
    x, grid = inputs(rng, (2, 3) + in_spatial, out_spatial)
    for fill, a in ((2.5, -0.5), ([1.0, -3.0, 7.5], -0.75)):
        kw = dict(fill_value=fill, cubic_a=a) if mode == "cubic" else dict(fill_value=fill)
        got = sample(monkeypatch, "rows", x, grid, mode, "constant", **kw)
        assert_same_bits(got, sample(monkeypatch, "gather", x, grid, mode, "constant", **kw))
        np.testing.assert_array_equal(got, general(x, grid, mode, "constant", **kw))
    # per-axis paddings, a grid of batch 1 broadcast over 3 items
    x, grid = inputs(rng, (3, 2) + in_spatial, out_spatial, batch_grid=1)
    pads = ("wrap", "border", "zeros")[:rank]
    assert_same_bits(sample(monkeypatch, "rows", x, grid, mode, pads),
                     sample(monkeypatch, "gather", x, grid, mode, pads))
    # channels and outer axes of X strided, its rows contiguous: rows apply
    big = rng.standard_normal((2, 6, 2 * in_spatial[0]) + in_spatial[1:]).astype(np.float32)
    xs = big[:, ::3, ::-2]
    rows = table_rows(monkeypatch)
    got = sample(monkeypatch, "rows", xs, grid, mode, "zeros", True)
    assert set(rows) == {with_rows(mode, rank)}
    assert_same_bits(got, sample(monkeypatch, "gather", xs, grid, mode, "zeros", True))
    # channel-last with one channel: its rows are contiguous, and so are the output points
    xl = np.ascontiguousarray(np.moveaxis(x[:, :1], 1, -1))
    rows.clear()
    got = sample(monkeypatch, "rows", xl, grid, mode, "border", channel_last=True)
    assert set(rows) == {with_rows(mode, rank)}
    assert_same_bits(got, sample(monkeypatch, "gather", xl, grid, mode, "border",
                                 channel_last=True))
    np.testing.assert_array_equal(got, general(xl, grid, mode, "border", channel_last=True))


@pytest.mark.parametrize("mode, rank", KERNELS)
def test_rows_through_affine_warp(rng, monkeypatch, mode, rank):
    shape = (2, 3) + ((16, 20), (9, 8, 10))[rank - 2]
    theta = rng.uniform(-0.3, 0.3, (2, rank, rank + 1)) + np.eye(rank, rank + 1)
    theta = theta.astype(np.float32)
    x = rng.standard_normal(shape).astype(np.float32)
    out = ((21, 17), (7, 9, 11))[rank - 2]
    for loads in ("rows", "gather"):
        monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", loads)
        rows = table_rows(monkeypatch)
        got = gridsample.affine_warp(x, theta, out, mode, "border")
        want = {with_rows(mode, rank)} if loads == "rows" else {PLAN_ROWS[(mode, rank)]}
        assert rows and set(rows) == want
        grid = gridsample.affine_grid(theta, shape[:2] + out)
        assert_same_bits(got, gridsample.grid_sample(x, grid, mode, "border"))


@pytest.mark.parametrize("case", ["narrow", "strided-rows", "channel-last", "float64",
                                  "float16", "nearest"])
def test_rows_only_where_they_apply(rng, monkeypatch, case):
    """X's rows must be contiguous and at least a row of taps wide, the output
    channel-first float32, the kernel one with row loads: elsewhere the plan has no
    row-load rows (and the results are the general kernels')."""
    x = rng.standard_normal((1, 2, 6, 9)).astype(np.float32)
    mode, kw = "cubic", {}
    if case == "narrow":
        x = x[..., :3]
    elif case == "strided-rows":
        x = rng.standard_normal((1, 2, 6, 18)).astype(np.float32)[..., ::2]
    elif case == "channel-last":
        x, kw = np.ascontiguousarray(np.moveaxis(x, 1, -1)), {"channel_last": True}
    elif case == "float64":
        x = x.astype(np.float64)
    elif case == "float16":
        x = x.astype(np.float16)
    else:
        mode = "nearest"
    grid = nasty_grid(rng, (1, 5, 7, 2), np.float32)
    rows = table_rows(monkeypatch)
    got = sample(monkeypatch, "rows", x, grid, mode, "border", **kw)
    assert rows and set(rows) <= GATHER_ROWS
    np.testing.assert_array_equal(got, general(x, grid, mode, "border", **kw))
    # linear reads rows of 2: a width of 1 is too narrow for it
    x1 = rng.standard_normal((1, 2, 6, 1)).astype(np.float32)
    rows.clear()
    got = sample(monkeypatch, "rows", x1, grid, "linear", "border")
    assert rows == [4]
    np.testing.assert_array_equal(got, general(x1, grid, "linear", "border"))


def test_the_default_and_a_bad_setting(monkeypatch):
    monkeypatch.delenv("GRIDSAMPLE_ROW_LOADS", raising=False)
    for key in ((2, MODE_CUBIC), (2, MODE_LINEAR), (3, MODE_LINEAR)):
        assert _row_loads.row_loads(*key) in ("rows", "gather")
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", " Gather ")
    assert _row_loads.row_loads(2, MODE_CUBIC) == "gather"
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", "fast")
    x, grid = np.ones((1, 1, 5, 5), np.float32), np.zeros((1, 2, 2, 2), np.float32)
    with pytest.raises(GridSampleError, match="GRIDSAMPLE_ROW_LOADS='fast'.*auto, rows, gather"):
        gridsample.grid_sample(x, grid, "cubic")
    assert MODE_NEAREST not in {mode for _, mode in _row_loads.ROW_LOAD_ROWS}


def test_lowest_bit():
    compiled = numba.njit(lambda bits: _row_loads.lowest_bit(bits))
    for bits in (1, 2, 12, 0x8000, 0xFFFF, 0x10100):
        want = (bits & -bits).bit_length() - 1
        assert compiled(np.int32(bits)) == _row_loads._lowest_bit(bits) == want
