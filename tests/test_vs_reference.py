"""The fast engine against its slow twin, :mod:`gridsample.reference`.

The reference is itself checked against PyTorch where they overlap, then
used for everything PyTorch and onnxruntime lack: r = 1 and r >= 4, 3-D
cubic, channel-last, broadcasting, mixed dtypes, strides, non-finite grids.
"""

from __future__ import annotations

import itertools

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gridsample
from conftest import ALIGNS, MODES, PADDINGS, TORCH_MODE, random_case, tolerance
from gridsample import reference

ALL_OPTIONS = list(itertools.product(MODES, PADDINGS, ALIGNS))


def assert_twins(x, grid, mode, padding, align, *, channel_last=False, dtype=np.float64):
    got = gridsample.grid_sample(x, grid, mode, padding, align, channel_last=channel_last)
    want = reference.grid_sample(x, grid, mode, padding, align, channel_last=channel_last)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, **tolerance(dtype))
    return got


@pytest.mark.parametrize("mode,padding,align", ALL_OPTIONS)
def test_reference_matches_torch_2d_and_3d(rng, mode, padding, align):
    torch = pytest.importorskip("torch")
    cases = [((2, 2, 6, 7), (4, 5))]
    if mode != "cubic":
        cases.append(((1, 2, 4, 5, 3), (3, 2, 4)))
    for shape, out in cases:
        x, grid = random_case(rng, shape, out, spread=3.0)
        want = torch.nn.functional.grid_sample(
            torch.from_numpy(x), torch.from_numpy(grid), TORCH_MODE[mode], padding, align).numpy()
        np.testing.assert_allclose(reference.grid_sample(x, grid, mode, padding, align), want,
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("rank,x_spatial,out_spatial", [
    (1, (9,), (11,)),
    (3, (4, 5, 6), (3, 4, 2)),   # 3-D cubic is only covered here
    (4, (3, 4, 3, 5), (2, 3, 2, 2)),
    (5, (3, 2, 3, 2, 4), (2, 2, 1, 2, 3)),
])
@pytest.mark.parametrize("mode,padding,align", ALL_OPTIONS)
def test_any_rank_matches_reference(rng, rank, x_spatial, out_spatial, mode, padding, align):
    x, grid = random_case(rng, (2, 2, *x_spatial), out_spatial, spread=2.5)
    assert_twins(x, grid, mode, padding, align)


@pytest.mark.parametrize("mode,padding,align", ALL_OPTIONS)
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_channel_last_is_bit_identical_to_channel_first(rng, rank, mode, padding, align):
    """Both layouts add the same taps in the same order: results are identical."""
    x, grid = random_case(rng, (2, 5, *(6, 5, 4)[:rank]), (4, 3, 2)[:rank], x_dtype=np.float32,
                          grid_dtype=np.float32)
    first = gridsample.grid_sample(x, grid, mode, padding, align)
    x_last = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    last = assert_twins(x_last, grid, mode, padding, align, channel_last=True, dtype=np.float32)
    np.testing.assert_array_equal(np.moveaxis(last, -1, 1), first)


@pytest.mark.parametrize("x_dtype,grid_dtype", list(itertools.product([np.float32, np.float64],
                                                                      repeat=2)))
@pytest.mark.parametrize("mode", MODES)
def test_mixed_dtypes(rng, x_dtype, grid_dtype, mode):
    x, grid = random_case(rng, (2, 3, 7, 6), (5, 4), x_dtype=x_dtype, grid_dtype=grid_dtype)
    # Rule 5: weights and sums follow x's precision, whatever the grid's.
    precision = x_dtype
    out = assert_twins(x, grid, mode, "reflection", False, dtype=precision)
    assert out.dtype == x_dtype


@pytest.mark.parametrize("mode", MODES)
def test_grid_batch_of_one_broadcasts(rng, mode):
    x, grid = random_case(rng, (3, 2, 6, 7), (4, 5), grid_batch=1)
    out = assert_twins(x, grid, mode, "border", True)
    for n in range(3):  # each item equals its own call with the shared grid
        np.testing.assert_array_equal(
            out[n:n + 1], gridsample.grid_sample(x[n:n + 1], grid, mode, "border", True))


def test_any_strides_are_accepted(rng):
    x, grid = random_case(rng, (2, 3, 10, 12), (6, 8))
    want = reference.grid_sample(x, grid, "cubic", "zeros", False)
    views = {
        "sliced": (np.repeat(x, 2, axis=3)[..., ::2], grid),
        "negative": (np.ascontiguousarray(x[:, :, ::-1])[:, :, ::-1], grid),
        "fortran": (np.asfortranarray(x), np.asfortranarray(grid)),
        "grid sliced": (x, np.repeat(grid, 3, axis=-1)[..., ::3]),
        "reversed grid": (x, np.ascontiguousarray(grid[:, ::-1])[:, ::-1]),
    }
    for name, (xv, gv) in views.items():
        got = gridsample.grid_sample(xv, gv, "cubic", "zeros", False)
        np.testing.assert_allclose(got, want, err_msg=name, **tolerance(np.float64))


def test_inputs_are_not_modified(rng):
    x, grid = random_case(rng, (1, 2, 5, 5), (4, 4), spread=1e30)
    grid[0, 0, 0, 0] = np.nan
    x0, g0 = x.copy(), grid.copy()
    for mode, padding, align in ALL_OPTIONS:
        gridsample.grid_sample(x, grid, mode, padding, align)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(grid, g0)


@pytest.mark.parametrize("mode,padding,align", ALL_OPTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_non_finite_and_huge_grids_match_reference(rng, mode, padding, align, dtype):
    x = rng.standard_normal((1, 2, 5, 6)).astype(dtype)
    specials = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e38, 1e7, -1.0, 1.0, 0.0])
    gx, gy = np.meshgrid(specials, specials)
    grid = np.stack([gx, gy], -1)[None].astype(dtype)
    got = assert_twins(x, grid, mode, padding, align, dtype=dtype)
    assert np.isnan(got[0, :, 0, :]).all()  # a NaN coordinate always gives NaN


class TestNonFiniteRulesByHand:
    """DESIGN §3 rule 7, with values worked out by hand on a 1-D ramp x = [10, 20, 30]."""

    x = np.array([[[10.0, 20.0, 30.0]]])

    def run(self, g, mode, padding, fn=gridsample.grid_sample):
        return fn(self.x, np.array([[[g]]]), mode, padding, True)[0, 0, 0]

    @pytest.mark.parametrize("fn", [gridsample.grid_sample, reference.grid_sample])
    @pytest.mark.parametrize("mode", MODES)
    def test_rules(self, fn, mode):
        # zeros: +-inf is infinitely far outside -> reads nothing -> 0.
        assert self.run(np.inf, mode, "zeros", fn) == 0.0
        assert self.run(-np.inf, mode, "zeros", fn) == 0.0
        # border: +inf clips to the last element (30), -inf to the first (10).
        assert self.run(np.inf, mode, "border", fn) == 30.0
        assert self.run(-np.inf, mode, "border", fn) == 10.0
        # reflection of an infinite point has no image: the NaN rule.
        assert np.isnan(self.run(np.inf, mode, "reflection", fn))
        # NaN is NaN under every padding.
        for padding in PADDINGS:
            assert np.isnan(self.run(np.nan, mode, padding, fn))
        # 1e30 with border is the last element, exactly.
        assert self.run(1e30, mode, "border", fn) == 30.0

    @pytest.mark.parametrize("fn", [gridsample.grid_sample, reference.grid_sample])
    @pytest.mark.parametrize("mode", MODES)
    def test_size_one_axis_with_align_corners(self, fn, mode):
        # S = 1, align_corners: every finite g maps to 0, but +-inf is still
        # infinitely far out (0 * inf must not turn it into NaN).
        x = np.array([[[5.0]]])
        g = np.array([[[np.inf], [-np.inf], [0.7], [np.nan]]])
        np.testing.assert_array_equal(fn(x, g, mode, "zeros", True)[0, 0], [0, 0, 5, np.nan])
        np.testing.assert_array_equal(fn(x, g, mode, "border", True)[0, 0], [5, 5, 5, np.nan])
        out = fn(x, g, mode, "reflection", True)[0, 0]
        assert np.isnan(out[[0, 1, 3]]).all() and out[2] == 5

    @pytest.mark.parametrize("fn", [gridsample.grid_sample, reference.grid_sample])
    def test_huge_reflection_is_exact(self, fn):
        # align_corners: x = (g + 1) / 2 * 2 = g + 1, reflected with period 4
        # over [0, 2].  g = 2**60 + 1 is not representable; use g = 2**60:
        # x = 2**60 + 1 -> rounds to 2**60 in float64, 2**60 mod 4 = 0 -> x = 0.
        assert self.run(2.0**60, "linear", "reflection", fn) == 10.0
        # g = 2.5 -> x = 3.5 -> mod 4 = 3.5 > 2 -> 4 - 3.5 = 0.5 -> 15.
        assert self.run(2.5, "linear", "reflection", fn) == 15.0


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    rank=st.integers(1, 4),
    data=st.data(),
    mode=st.sampled_from(MODES),
    padding=st.sampled_from(PADDINGS),
    align=st.booleans(),
    channel_last=st.booleans(),
    spread=st.sampled_from([0.5, 1.0, 1.5, 4.0]),
)
def test_property_random_shapes(rank, data, mode, padding, align, channel_last, spread):
    sizes = st.integers(1, 5)
    x_spatial = tuple(data.draw(sizes) for _ in range(rank))
    out_spatial = tuple(data.draw(st.integers(1, 4)) for _ in range(rank))
    n = data.draw(st.integers(1, 3))
    c = data.draw(st.integers(1, 3))
    seed = data.draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    grid_batch = data.draw(st.sampled_from([1, n]))
    x, grid = random_case(rng, (n, c, *x_spatial), out_spatial, spread=spread,
                          grid_batch=grid_batch)
    if channel_last:
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    assert_twins(x, grid, mode, padding, align, channel_last=channel_last)


@pytest.mark.parametrize("shape,out_spatial", [
    ((0, 2, 4, 4), (3, 3)),
    ((2, 0, 4, 4), (3, 3)),
    ((2, 2, 4, 4), (0, 3)),
    ((2, 2, 0, 4), (0, 3)),  # empty input and empty output: fine
])
@pytest.mark.parametrize("channel_last", [False, True])
def test_empty_shapes(shape, out_spatial, channel_last):
    x = np.zeros(shape)
    if channel_last:
        x = np.moveaxis(x, 1, -1)
    grid = np.zeros((shape[0], *out_spatial, 2))
    out = gridsample.grid_sample(x, grid, channel_last=channel_last)
    n, c = shape[:2]
    expect = (n, *out_spatial, c) if channel_last else (n, c, *out_spatial)
    assert out.shape == expect and out.size == 0


def test_results_do_not_depend_on_thread_count(rng):
    x, grid = random_case(rng, (1, 3, 40, 50), (60, 70), x_dtype=np.float32,
                          grid_dtype=np.float32)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = gridsample.grid_sample(x, grid, "cubic", "reflection", False)
        numba.set_num_threads(before)
        many = gridsample.grid_sample(x, grid, "cubic", "reflection", False)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one, many)


def test_concurrent_calls_from_python_threads(rng):
    """Parallel kernels called from several threads at once (as Dask's threaded
    scheduler does) give the same results as serial calls, and do not abort."""
    from concurrent.futures import ThreadPoolExecutor

    x, grid = random_case(rng, (2, 3, 30, 40), (25, 35), x_dtype=np.float32,
                          grid_dtype=np.float32)
    want = gridsample.grid_sample(x, grid, "linear", "border", False)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: gridsample.grid_sample(x, grid, "linear", "border",
                                                                 False), range(40)))
    for got in results:
        np.testing.assert_array_equal(got, want)


def test_zero_stride_and_read_only_inputs(rng):
    """Broadcast views (stride 0) and read-only arrays are read in place."""
    row = rng.standard_normal((1, 1, 1, 9))
    x = np.broadcast_to(row, (2, 3, 7, 9))  # read-only, strides 0 on three axes
    grid = np.broadcast_to(rng.uniform(-1.2, 1.2, (1, 5, 4, 2)), (2, 5, 4, 2))
    for mode in MODES:
        assert_twins(x, grid, mode, "reflection", True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding", ["border", "reflection"])
def test_float32_axis_longer_than_2_to_24_stays_inside(mode, padding):
    """S - 1 = 16777219 has no float32; clipping must not reach index S (one past the end).

    The last two elements are 1 and a sentinel 777 sits just past the end of x:
    the edge read must give 1, never 777.
    """
    size = 2**24 + 4
    base = np.zeros(size + 8, np.float32)
    base[size - 2:size] = 1.0
    base[size:] = 777.0
    x = base[:size].reshape(1, 1, size)
    grid = np.array([[[1.0], [np.inf], [1e30]]], np.float32)
    out = gridsample.grid_sample(x, grid, mode, padding, True)
    if padding == "border":
        np.testing.assert_array_equal(out[0, 0], [1.0, 1.0, 1.0])
    else:
        assert out[0, 0, 0] == 1.0 and np.isnan(out[0, 0, 1])
    assert not (out == 777.0).any()


@pytest.mark.parametrize("mode,rank", [("cubic", 9), ("linear", 17)])
def test_too_many_taps_per_point_is_an_error(mode, rank):
    x = np.zeros((1, 1) + (1,) * rank)
    grid = np.zeros((1,) + (1,) * rank + (rank,))
    with pytest.raises(gridsample.GridSampleError, match=f"{rank} spatial axes"):
        gridsample.grid_sample(x, grid, mode)


def test_nearest_at_high_rank(rng):
    x, grid = random_case(rng, (1, 2) + (2,) * 12, (1,) * 11 + (3,), spread=1.5)
    assert_twins(x, grid, "nearest", "border", False)


@pytest.mark.parametrize("rank,mode,padding,fill", [
    (2, "linear", "zeros", 0), (2, "linear", "constant", 2.87), (2, "cubic", "reflection", 0),
    (2, "bspline3", "mirror", 0), (3, "linear", "border", 0), (3, "linear", "constant", -1.5)])
@pytest.mark.parametrize("x_dtype,grid_dtype", [
    (np.float32, np.float64), (np.float64, np.float32), (np.complex64, np.float64)])
def test_mixed_dtypes_give_the_same_bits_in_every_kernel_family(rng, rank, mode, padding, fill,
                                                                x_dtype, grid_dtype):
    # A float64 grid's weights are formed in float64 and rounded to float32 once for float32
    # x, by every planner (the general N-D one rounded each axis's weight first: 1 ulp off).
    from gridsample import _engine

    x_shape = (2, 3, 6, 7) if rank == 2 else (1, 2, 4, 5, 6)
    out_spatial = (9, 10) if rank == 2 else (5, 6, 7)
    x, grid = random_case(rng, x_shape, out_spatial, spread=1.6, x_dtype=np.float64,
                          grid_dtype=grid_dtype)
    x = (x + 1j * x[::-1] if np.dtype(x_dtype).kind == "c" else x).astype(x_dtype)
    grid.reshape(-1)[::11] = np.array([np.nan, np.inf, -1e30, 1.0])[
        np.arange(grid.size)[::11] % 4]
    results = {}
    for family in ("vector", "general", "nd"):
        with _engine.use_kernels(family):
            results[family] = gridsample.grid_sample(x, grid, mode, padding, True,
                                                     fill_value=fill)
    np.testing.assert_array_equal(results["general"], results["nd"])
    np.testing.assert_array_equal(results["vector"], results["nd"])


@pytest.mark.parametrize("rank,mode", [(2, "linear"), (2, "nearest"), (2, "cubic"),
                                       (3, "linear"), (3, "nearest")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_specialised_kernels_equal_the_general_kernel(monkeypatch, rng, rank, mode, dtype):
    # Each fast planner must list the same taps, in the same order, with the
    # same weights as the general planner: inside points, edge points under
    # zeros padding, far, infinite and NaN points.
    from gridsample import _engine

    x_shape = (2, 3, 6, 7) if rank == 2 else (1, 2, 4, 5, 6)
    out_spatial = (9, 10) if rank == 2 else (5, 6, 7)
    x, grid = random_case(rng, x_shape, out_spatial, spread=1.6, x_dtype=dtype, grid_dtype=dtype)
    grid.reshape(-1)[::7] = np.array([np.nan, np.inf, -np.inf, 1e30, 1.0, -1.0, 0.0])[
        np.arange(grid.size)[::7] % 7]
    for padding, align in itertools.product(PADDINGS, ALIGNS):
        fast = gridsample.grid_sample(x, grid, mode, padding, align)
        with _engine.use_kernels("nd"):
            general = gridsample.grid_sample(x, grid, mode, padding, align)
        np.testing.assert_array_equal(fast, general)


@pytest.mark.parametrize("padding", ["wrap", "symmetric", "mirror"])
def test_index_paddings_past_float32s_integers_follow_the_float32_rule(padding):
    # An axis longer than 2**24 with a float32 grid: the period is rounded to float32 (§2,
    # §6.2) and every index clipped into X.  The reference computes the same (it read past
    # the end under wrap, an IndexError), and the general kernel agrees with it (rank 1:
    # "general" and "nd" run the same N-D kernel; no 2-D or 3-D planner runs here).
    from gridsample import _engine

    size = 2**24 + 7
    x = (np.arange(size, dtype=np.float32) % 9973)[None, None]
    pos = np.concatenate([np.arange(-8, 8), np.arange(size - 8, size + 8),
                          np.arange(2 * size - 8, 2 * size + 8), np.arange(-size - 8, -size + 8)])
    pos = np.concatenate([pos, pos + 0.5, [1e30, -1e30, 3e38]]).astype(np.float32)
    grid = pos[None, :, None]
    for mode in ("nearest", "linear", "cubic"):
        want = reference.grid_sample(x, grid, mode, padding, grid_units="pixels")
        for family in ("general", "nd"):
            with _engine.use_kernels(family):
                got = gridsample.grid_sample(x, grid, mode, padding, grid_units="pixels")
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-3)
