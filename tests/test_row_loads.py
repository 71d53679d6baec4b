"""The 2-D cubic sweep's two ways of reading taps (gridsample._row_loads): row loads and
gathers give the same bits, and the engine picks rows only where they apply.

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
from test_vector_kernels import PADDINGS, nasty_grid

# Beside the 2-D cubic vector tests (conftest): each cubic variant compiles once a run.
pytestmark = pytest.mark.xdist_group("vector-cubic-2d")


@pytest.fixture(autouse=True)
def _user_kernels(monkeypatch):
    monkeypatch.setenv("GRIDSAMPLE_KERNELS", "auto")


def sample(monkeypatch, loads, *args, **kwargs):
    """``grid_sample`` with the 2-D cubic sweep's loads forced to ``loads``."""
    monkeypatch.setenv("GRIDSAMPLE_CUBIC_LOADS", loads)
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
    """The plan tables' row counts of the vector launches that follow (13 with row loads),
    checking that those are the row-load entries."""
    rows = []
    launch = _engine.run_shared
    from gridsample._affine_entries import AFFINE_ROW_LOAD_ENTRIES

    by_rows = {*_engine.ROW_LOAD_ENTRIES.values(), *AFFINE_ROW_LOAD_ENTRIES.values()}

    def spy(entry, tasks, args, threads, scratch=()):
        if scratch:
            rows.append(scratch[0][0][0])
            assert (rows[-1] == 8 + _row_loads.ROW_LOAD_ROWS) == (entry in by_rows)
        return launch(entry, tasks, args, threads, scratch)

    monkeypatch.setattr(_engine, "run_shared", spy)
    return rows


def inputs(rng, shape, out_spatial, batch_grid=None):
    """X with ±inf and NaN among its values (a tap must never make 0 * inf), and a grid
    mostly inside -- whole groups of points that qualify -- with nasty points (edges, NaN,
    ±inf, huge values) in its second half."""
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[::97] = np.inf
    x.reshape(-1)[5::89] = -np.inf
    x.reshape(-1)[11::101] = np.nan
    gshape = (batch_grid or shape[0],) + out_spatial + (2,)
    grid = rng.uniform(-0.8, 0.8, gshape).astype(np.float32)
    tail = grid.reshape(gshape[0], -1, 2)[:, grid[0].size // 4:]
    tail[...] = nasty_grid(rng, tail.shape, np.float32)
    return x, grid


@pytest.mark.parametrize("pad", PADDINGS)
def test_rows_equal_gathers_and_the_general_kernels(rng, monkeypatch, pad):
    # 1, 2 and 3 channels: the single sweep, a pair, a pair and one; 13 x 11 points: whole
    # groups and a tail of either lane count.
    for channels, align in itertools.product((1, 2, 3), ALIGNS):
        x, grid = inputs(rng, (2, channels, 9, 12), (13, 11))
        rows = table_rows(monkeypatch)
        got = sample(monkeypatch, "rows", x, grid, "cubic", pad, align)
        assert rows and set(rows) == {8 + _row_loads.ROW_LOAD_ROWS}
        assert_same_bits(got, sample(monkeypatch, "gather", x, grid, "cubic", pad, align))
        np.testing.assert_array_equal(got, general(x, grid, "cubic", pad, align))


def test_rows_with_fill_values_and_the_keys_coefficient(rng, monkeypatch):
    x, grid = inputs(rng, (2, 3, 8, 10), (9, 14))
    for fill, a in ((2.5, -0.5), ([1.0, -3.0, 7.5], -0.75)):
        kw = dict(fill_value=fill, cubic_a=a)
        got = sample(monkeypatch, "rows", x, grid, "cubic", "constant", **kw)
        assert_same_bits(got, sample(monkeypatch, "gather", x, grid, "cubic", "constant", **kw))
        np.testing.assert_array_equal(got, general(x, grid, "cubic", "constant", **kw))


def test_rows_with_per_axis_paddings_a_broadcast_grid_and_strided_views(rng, monkeypatch):
    x, grid = inputs(rng, (3, 2, 11, 9), (7, 10), batch_grid=1)
    pads = ("wrap", "border")
    assert_same_bits(sample(monkeypatch, "rows", x, grid, "cubic", pads),
                     sample(monkeypatch, "gather", x, grid, "cubic", pads))
    # channels and rows of X strided, its rows contiguous: rows apply
    big = rng.standard_normal((2, 6, 20, 9)).astype(np.float32)
    xs = big[:, ::3, ::-2, :]
    rows = table_rows(monkeypatch)
    got = sample(monkeypatch, "rows", xs, grid, "cubic", "zeros", True)
    assert set(rows) == {13}
    assert_same_bits(got, sample(monkeypatch, "gather", xs, grid, "cubic", "zeros", True))


def test_rows_through_affine_warp(rng, monkeypatch):
    x = rng.standard_normal((2, 3, 16, 20)).astype(np.float32)
    theta = np.array([[[0.9, 0.2, 0.05], [-0.15, 1.1, -0.1]],
                      [[1.2, 0.0, 0.3], [0.1, 0.8, 0.0]]], np.float32)
    for loads in ("rows", "gather"):
        monkeypatch.setenv("GRIDSAMPLE_CUBIC_LOADS", loads)
        rows = table_rows(monkeypatch)
        got = gridsample.affine_warp(x, theta, (21, 17), "cubic", "border")
        assert rows and set(rows) == ({13} if loads == "rows" else {8})
        grid = gridsample.affine_grid(theta, (2, 3, 21, 17))
        assert_same_bits(got, gridsample.grid_sample(x, grid, "cubic", "border"))


@pytest.mark.parametrize("case", ["narrow", "strided-rows", "channel-last", "float64",
                                  "float16", "linear"])
def test_rows_only_where_they_apply(rng, monkeypatch, case):
    """X's rows must be contiguous and at least 4 wide, the output channel-first float32,
    the mode 2-D cubic: elsewhere the plan has no row-load rows (and the results are the
    general kernels')."""
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
        mode = "linear"
    grid = nasty_grid(rng, (1, 5, 7, 2), np.float32)
    rows = table_rows(monkeypatch)
    got = sample(monkeypatch, "rows", x, grid, mode, "border", **kw)
    assert rows and 13 not in rows
    np.testing.assert_array_equal(got, general(x, grid, mode, "border", **kw))


def test_the_default_and_a_bad_setting(monkeypatch):
    monkeypatch.delenv("GRIDSAMPLE_CUBIC_LOADS", raising=False)
    assert _row_loads.cubic_loads() in ("rows", "gather")
    monkeypatch.setenv("GRIDSAMPLE_CUBIC_LOADS", " Gather ")
    assert _row_loads.cubic_loads() == "gather"
    monkeypatch.setenv("GRIDSAMPLE_CUBIC_LOADS", "fast")
    x, grid = np.ones((1, 1, 5, 5), np.float32), np.zeros((1, 2, 2, 2), np.float32)
    with pytest.raises(GridSampleError, match="GRIDSAMPLE_CUBIC_LOADS='fast'.*auto, rows, gather"):
        gridsample.grid_sample(x, grid, "cubic")


def test_lowest_bit():
    compiled = numba.njit(lambda bits: _row_loads.lowest_bit(bits))
    for bits in (1, 2, 12, 0x8000, 0xFFFF, 0x10100):
        want = (bits & -bits).bit_length() - 1
        assert _row_loads.lowest_bit(bits) == compiled(np.int32(bits)) == want
