"""Grids held planar: a flow field (N, r, D1, ..., Dr) passed as the grid (N, D1, ..., Dr, r) by
moving its component axis last -- a view whose coordinates are not interleaved, as
``np.moveaxis(flow, 1, -1)`` or PyTorch's ``flow.permute(0, 2, 3, 1)`` give.  The vector
kernels read such a grid in place (gridsample._vector.run_planar_blocks: each block
interleaves its own points) instead of copying it whole; the results must be the bits the
same grid gives when C-contiguous, whichever form of entry runs, and the planar entries must
be the ones that ran.
"""

from __future__ import annotations

import ml_dtypes
import numba
import numpy as np
import pytest

import gridsample
from gridsample import _api, _engine, _planar_entries, reference
from test_one_pass import assert_same_bits, spy_runs
from test_vector_kernels import nasty_grid

PLANAR = {entry for table in _planar_entries.PLANAR_TABLES for entry in table.values()}


@pytest.fixture(autouse=True)
def _user_kernels(monkeypatch):
    """The kernels users get, and no prepared run kept from another test (each must find
    its entry under this test's settings and spies)."""
    monkeypatch.setenv("GRIDSAMPLE_KERNELS", "auto")
    monkeypatch.setattr(_api._prepared, "entries", {})


def _spy(monkeypatch) -> list:
    """Whether each vector entry that runs next is a planar one."""
    return spy_runs(monkeypatch, PLANAR)


def planar_view(grid: np.ndarray) -> np.ndarray:
    """``grid`` as a flow field's view: the same values, each coordinate a plane."""
    flow = np.ascontiguousarray(np.moveaxis(grid, -1, 1))
    view = np.moveaxis(flow, 1, -1)
    assert not view.flags.c_contiguous and np.array_equal(view, grid, equal_nan=True)
    return view


# (name, x shape channel-first, output spatial shape, mode, padding, settings): each form
# of entry -- gathering, rows of taps, one pass, channel-last a channel at a time and a
# point at a time -- for each vector kernel, 99 points an item (whole groups and a tail).
FORMS = [
    ("2-D linear gathers", (2, 3, 13, 17), (9, 11), "linear", "zeros",
     {"GRIDSAMPLE_ROW_LOADS": "gather", "GRIDSAMPLE_ONE_PASS": "off"}),
    ("2-D linear rows", (2, 3, 13, 17), (9, 11), "linear", "reflection",
     {"GRIDSAMPLE_ROW_LOADS": "rows", "GRIDSAMPLE_ONE_PASS": "off"}),
    ("2-D linear one pass", (2, 1, 13, 17), (9, 11), "linear", "border",
     {"GRIDSAMPLE_ROW_LOADS": "gather", "GRIDSAMPLE_ONE_PASS": "on"}),
    ("2-D nearest one pass", (2, 3, 13, 17), (9, 11), "nearest", "zeros",
     {"GRIDSAMPLE_ONE_PASS": "on"}),
    ("2-D nearest planned", (2, 5, 13, 17), (9, 11), "nearest", "wrap",
     {"GRIDSAMPLE_ONE_PASS": "off"}),
    ("2-D cubic gathers", (2, 3, 13, 17), (9, 11), "cubic", "zeros",
     {"GRIDSAMPLE_ROW_LOADS": "gather"}),
    ("2-D cubic rows", (2, 2, 13, 17), (9, 11), "cubic", "border",
     {"GRIDSAMPLE_ROW_LOADS": "rows"}),
    ("3-D linear gathers", (2, 2, 5, 6, 7), (3, 5, 7), "linear", "zeros",
     {"GRIDSAMPLE_ROW_LOADS": "gather"}),
    ("3-D linear rows", (2, 2, 5, 6, 7), (3, 5, 7), "linear", "zeros",
     {"GRIDSAMPLE_ROW_LOADS": "rows"}),
    ("3-D nearest", (2, 2, 5, 6, 7), (3, 5, 7), "nearest", "border", {}),
    ("3-D cubic", (2, 2, 5, 6, 7), (3, 5, 7), "cubic", "zeros", {}),
]


@pytest.mark.parametrize("grid_batch", ["N", 1])
@pytest.mark.parametrize("name,x_shape,out,mode,pad,settings", FORMS, ids=[f[0] for f in FORMS])
def test_a_planar_grid_gives_the_contiguous_grids_bits(rng, monkeypatch, name, x_shape, out,
                                                       mode, pad, settings, grid_batch):
    for variable, value in settings.items():
        monkeypatch.setenv(variable, value)
    x = rng.standard_normal(x_shape).astype(np.float32)
    x.reshape(-1)[[0, 5, 40]] = [np.inf, -np.inf, np.nan]
    grid = nasty_grid(rng, (x_shape[0] if grid_batch == "N" else 1, *out, len(out)),
                      np.float32)
    ran = _spy(monkeypatch)
    want = gridsample.grid_sample(x, grid, mode, pad)
    got = gridsample.grid_sample(x, planar_view(grid), mode, pad)
    assert ran == [False, True]
    assert_same_bits(got, want)
    # and the reference twin, an independent oracle (NaN where it is NaN; its sums may
    # round otherwise in the last place)
    np.testing.assert_allclose(got, reference.grid_sample(x, grid, mode, pad),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("channels", [2, 8])
def test_channel_last_planar_grids(rng, monkeypatch, channels):
    """Channel-last output: a channel at a time (2), a point at a time (8 contiguous)."""
    x = np.ascontiguousarray(np.moveaxis(
        rng.standard_normal((2, channels, 13, 17)).astype(np.float32), 1, -1))
    grid = nasty_grid(rng, (2, 9, 11, 2), np.float32)
    ran = _spy(monkeypatch)
    want = gridsample.grid_sample(x, grid, channel_last=True)
    got = gridsample.grid_sample(x, planar_view(grid), channel_last=True)
    assert ran == [False, True]
    assert_same_bits(got, want)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.uint8, np.float64])
def test_every_element_family(rng, monkeypatch, dtype):
    """float16, bfloat16 and integer X have entries of their own; float64 X with a float64
    grid."""
    x = (rng.uniform(0, 200, (2, 3, 13, 17))).astype(dtype)
    grid = nasty_grid(rng, (2, 9, 11, 2), np.float64 if dtype == np.float64 else np.float32)
    ran = _spy(monkeypatch)
    want = gridsample.grid_sample(x, grid, "linear", "border")
    got = gridsample.grid_sample(x, planar_view(grid), "linear", "border")
    assert ran == [False, True]
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_the_same_bits_on_one_and_two_threads(rng, monkeypatch):
    x = rng.standard_normal((3, 2, 40, 50)).astype(np.float32)
    grid = planar_view(nasty_grid(rng, (3, 60, 70, 2), np.float32))
    monkeypatch.setenv("GRIDSAMPLE_THREAD_MIN_WORK", "1")  # two threads even on this size
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = gridsample.grid_sample(x, grid, "cubic")
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = gridsample.grid_sample(x, grid, "cubic")
    finally:
        numba.set_num_threads(before)
    assert_same_bits(one, two)


@pytest.mark.parametrize("layout", ["batch innermost", "every other point", "reversed",
                                    "sliced flow", "components reversed"])
def test_other_strided_grids_are_read_as_their_values(rng, monkeypatch, layout):
    """Strides that hold no C-contiguous planar grid: the grid is made contiguous (by
    compiled code where each coordinate's points are contiguous: a flow field sliced from a
    wider array, its components in reverse order), then sampled."""
    x = rng.standard_normal((2, 3, 13, 17)).astype(np.float32)
    base = nasty_grid(rng, (2, 18, 22, 2), np.float32)
    wide = np.concatenate([np.moveaxis(base, -1, 1)] * 2, axis=1)  # (2, 4, 18, 22)
    grid = {"batch innermost": np.moveaxis(np.ascontiguousarray(np.moveaxis(base, 0, -1)),
                                           -1, 0),
            "every other point": base[:, ::2, ::2],
            "reversed": base[:, ::-1],
            "sliced flow": np.moveaxis(wide[:, 1:3], 1, -1),
            "components reversed": np.moveaxis(wide[:, 1::-1], 1, -1)}[layout]
    ran = _spy(monkeypatch)
    got = gridsample.grid_sample(x, grid)
    assert ran == [False]
    assert_same_bits(got, gridsample.grid_sample(x, np.ascontiguousarray(grid)))


def test_general_kernels_agree(rng):
    """The general kernels (which copy such a grid) and the vector kernels' planar read."""
    x = rng.standard_normal((2, 3, 13, 17)).astype(np.float32)
    grid = planar_view(nasty_grid(rng, (2, 9, 11, 2), np.float32))
    with _engine.use_kernels("general"):
        want = gridsample.grid_sample(x, grid, "cubic", "reflection", True)
    np.testing.assert_array_equal(gridsample.grid_sample(x, grid, "cubic", "reflection", True),
                                  want)


@pytest.mark.parametrize("shape", [(2, 9, 11, 2), (1, 4, 5, 6, 3), (3, 1, 7, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_contiguous_grid_interleaves_a_planar_grid(rng, shape, dtype):
    """The compiled interleaving that replaces NumPy's transposing copy (the general
    kernels' grids, the backward's): the same values, C-contiguous; other strides and a
    change of dtype go through NumPy."""
    grid = nasty_grid(rng, shape, dtype)
    view = planar_view(grid).reshape(shape[0], -1, shape[-1])
    out = _engine.contiguous_grid(view)
    assert out.flags.c_contiguous and out.dtype == dtype
    np.testing.assert_array_equal(out, grid.reshape(view.shape))
    wider = _engine.contiguous_grid(view, np.float64)
    np.testing.assert_array_equal(wider, grid.reshape(view.shape).astype(np.float64))
    odd = grid.reshape(view.shape)[:, ::-1]
    np.testing.assert_array_equal(_engine.contiguous_grid(odd), np.ascontiguousarray(odd))
    # planes of points from a wider flow field, in reverse order, every other item
    wide = np.concatenate([np.moveaxis(grid, -1, 1)] * 2, axis=1)[::-1]
    for flow in (wide[:, 1:1 + shape[-1]], wide[:, shape[-1] - 1::-1], wide[::2, :shape[-1]]):
        sliced = np.moveaxis(flow, 1, -1).reshape(flow.shape[0], -1, shape[-1])
        assert not sliced.flags.c_contiguous or flow.shape[0] == 1
        out = _engine.contiguous_grid(sliced)
        assert out.flags.c_contiguous
        np.testing.assert_array_equal(out, np.ascontiguousarray(sliced))


@pytest.mark.parametrize("family", ["auto", "general"])
@pytest.mark.parametrize("x_shape,out,mode", [((2, 3, 13, 17), (9, 11), "linear"),
                                              ((2, 2, 13, 17), (9, 11), "cubic"),
                                              ((2, 2, 5, 6, 7), (3, 5, 7), "linear")])
def test_the_backward_of_a_planar_grid(rng, monkeypatch, family, x_shape, out, mode):
    """Both gradients, the same bits as for the contiguous grid (dL/dgrid C-contiguous, of
    the grid's shape)."""
    monkeypatch.setenv("GRIDSAMPLE_KERNELS", family)
    x = rng.standard_normal(x_shape).astype(np.float32)
    grid = nasty_grid(rng, (x_shape[0], *out, len(out)), np.float32)
    gout = rng.standard_normal((x_shape[0], x_shape[1], *out)).astype(np.float32)
    want = gridsample.grid_sample_backward(gout, x, grid, mode, "border")
    got = gridsample.grid_sample_backward(gout, x, planar_view(grid), mode, "border")
    for g, w in zip(got, want):
        assert g.flags.c_contiguous
        assert_same_bits(g, w)


@pytest.mark.parametrize("grid_dtype,displacement", [(np.float32, True),
                                                     (np.float16, False),
                                                     (ml_dtypes.bfloat16, True)])
def test_displacements_and_half_grids_held_planar(rng, monkeypatch, grid_dtype, displacement):
    """The paths that make coordinates a chunk at a time (a displacement's identity added,
    a float16/bfloat16 grid widened) from a flow field's view, forward and backward, on the
    kernels users get: the contiguous grid's bits (the view's layout once reached kernels
    that read C order only)."""
    x = rng.standard_normal((2, 3, 13, 17)).astype(np.float32)
    grid = (nasty_grid(rng, (2, 9, 11, 2), np.float32) * 0.3).astype(grid_dtype)
    gout = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
    kwargs = dict(displacement=displacement)
    assert_same_bits(gridsample.grid_sample(x, planar_view(grid), **kwargs),
                     gridsample.grid_sample(x, grid, **kwargs))
    got = gridsample.grid_sample_backward(gout, x, planar_view(grid), **kwargs)
    want = gridsample.grid_sample_backward(gout, x, grid, **kwargs)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))
