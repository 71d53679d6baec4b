"""Every ONNX tensor type for X and every float type for the grid (DESIGN rules 5-7).

Oracles: the NumPy reference (float64 sums, one cast), PyTorch in float64,
hand-derived values for rounding and saturation, and exact identities with
gridsample's own float32/float64 kernels where the rules make them exact
(integer X computes exactly what float64 X computes, then rounds; float16 /
bfloat16 X computes exactly what float32 X computes, then rounds).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gridsample
from conftest import MODES, PADDINGS, TORCH_MODE, random_case, tolerance
from gridsample import GridSampleError, GridSampleTypeError, reference

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
INTS = [np.dtype(t) for t in ("int8", "int16", "int32", "int64",
                              "uint8", "uint16", "uint32", "uint64")]
NUMERIC = [F16, BF16, np.dtype(np.float32), np.dtype(np.float64), *INTS, np.dtype(bool),
           np.dtype(np.complex64), np.dtype(np.complex128)]
# Types run at every rank: one integer and one complex type (the task
# entries); the prange kernels of float16/bfloat16/uint8 are the float32
# kernels' code with other loads and stores, run at rank 3 below.  (Each
# (kernel, dtype) pair is a compile: the suite keeps their number modest.)
REPRESENTATIVES = [np.dtype(np.int64), np.dtype(np.complex64)]


def f32_case(rng, x_shape, out_spatial, spread=1.3):
    """A float32 grid: shares compiled kernels with the rest of the suite."""
    _, grid = random_case(rng, x_shape, out_spatial, spread=spread, grid_dtype=np.float32)
    return grid


def make_x(rng, shape, dtype):
    """Random X of ``dtype`` that exercises its range (and saturation for small ints)."""
    z = rng.standard_normal(shape)
    if dtype.kind == "b":
        return z > 0
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        if dtype.itemsize == 1:
            lo, hi = info.min, info.max  # values at the edges of the range: saturation
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    if dtype.kind == "c":
        return (z + 1j * rng.standard_normal(shape)).astype(dtype)
    return z.astype(dtype)


def eps(dtype):
    return float(np.finfo(dtype).eps) if dtype != BF16 else 2.0**-7


def assert_matches_reference(got, x, grid, mode, padding, align, **kw):
    want = reference.grid_sample(x, grid, mode, padding, align, **kw)
    assert got.dtype == x.dtype and got.shape == want.shape
    dt = x.dtype
    if dt.kind in "iub":
        if mode == "nearest":
            np.testing.assert_array_equal(got, want)
        else:
            # float64 sums in another order: a sum within ~1e-12 of a .5
            # boundary may round the other way -- at most one unit apart.
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            assert diff.max(initial=0) <= 1
            assert np.mean(diff > 0) < 0.01
    elif dt in (F16, BF16):
        # float32 sums rounded once to the type vs float64 sums rounded once:
        # one unit in the last place, plus float32 noise near zero.
        g, w = got.astype(np.float64), want.astype(np.float64)
        scale = np.abs(x.astype(np.float64)).max(initial=1.0)
        ok = (np.abs(g - w) <= eps(dt) * np.abs(w) + 1e-6 * scale) | (np.isnan(g) & np.isnan(w))
        assert ok.all()
    else:
        base = np.float32 if dt in (np.float32, np.complex64) else np.float64
        np.testing.assert_allclose(got, want, **tolerance(base))


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("mode,padding", list(itertools.product(MODES, PADDINGS)))
def test_every_type_mode_and_padding_matches_reference(rng, dtype, mode, padding):
    x = make_x(rng, (2, 3, 5, 6), dtype)
    grid = f32_case(rng, (2, 3, 5, 6), (4, 7), spread=1.4)
    grid[0, 0, 0] = np.nan  # rule 7: NaN for floats and complex, 0 for integers and bool
    align = padding != "border"
    got = gridsample.grid_sample(x, grid, mode, padding, align)
    assert_matches_reference(got, x, grid, mode, padding, align)
    first = got[0, :, 0, 0]
    if dtype.kind in "iub":
        assert (first == 0).all()
    elif dtype.kind == "c":
        assert np.isnan(first.real).all() and np.isnan(first.imag).all()
    else:
        assert np.isnan(first.astype(np.float32)).all()


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_every_type_channel_last_is_the_same_computation(rng, dtype):
    x = make_x(rng, (2, 3, 5, 6), dtype)
    grid = f32_case(rng, (2, 3, 5, 6), (4, 7), spread=1.4)
    for mode in MODES:
        first = gridsample.grid_sample(x, grid, mode, "reflection")
        last = gridsample.grid_sample(np.moveaxis(x, 1, -1).copy(), grid, mode, "reflection",
                                      channel_last=True)
        np.testing.assert_array_equal(np.moveaxis(last, -1, 1), first)


@pytest.mark.parametrize("dtype", REPRESENTATIVES, ids=str)
@pytest.mark.parametrize("rank", [1, 3, 4])
def test_other_ranks_for_each_storage_class(rng, dtype, rank):
    x_spatial = {1: (7,), 3: (3, 4, 5), 4: (2, 3, 3, 4)}[rank]
    out_spatial = {1: (9,), 3: (2, 3, 4), 4: (2, 2, 3, 2)}[rank]
    x = make_x(rng, (2, 2, *x_spatial), dtype)
    grid = f32_case(rng, (2, 2, *x_spatial), out_spatial)
    for mode, padding in (("linear", "zeros"), ("nearest", "border"), ("cubic", "reflection")):
        if rank == 4 and mode == "cubic":
            continue
        got = gridsample.grid_sample(x, grid, mode, padding, True)
        assert_matches_reference(got, x, grid, mode, padding, True)


@pytest.mark.parametrize("dtype", INTS + [np.dtype(bool)], ids=str)
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_integer_x_is_the_float64_computation_rounded(rng, dtype, mode):
    # Rule 6: integer and bool X interpolate in float64 -- exactly what the
    # float64 kernel computes on the same values -- then round half to even
    # and saturate (bool: nonzero after rounding).
    x = make_x(rng, (1, 4, 6, 6), dtype)
    grid = f32_case(rng, (1, 4, 6, 6), (8, 8))
    got = gridsample.grid_sample(x, grid, mode, "border", False)
    f64 = np.rint(gridsample.grid_sample(x.astype(np.float64), grid, mode, "border", False))
    if dtype.kind == "b":
        want = f64 != 0
    else:
        info = np.iinfo(dtype)
        want = np.clip(f64, float(info.min), float(info.max))
        want = np.where(want >= float(info.max), info.max, want)
        want = np.where(want <= float(info.min), info.min, want).astype(dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
@pytest.mark.parametrize("mode", MODES)
def test_half_x_is_the_float32_computation_rounded(rng, dtype, mode):
    # Rule 5: float16/bfloat16 X computes in float32 and stores rounded to
    # nearest even -- bit for bit the float32 kernel's result cast by NumPy.
    x = rng.standard_normal((1, 3, 40, 30)).astype(dtype)
    grid = f32_case(rng, (1, 3, 40, 30), (50, 60), spread=1.2)
    got = gridsample.grid_sample(x, grid.astype(np.float32), mode, "zeros", False)
    want = gridsample.grid_sample(x.astype(np.float32), grid.astype(np.float32), mode, "zeros",
                                  False).astype(dtype)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
@pytest.mark.parametrize("mode", MODES)
def test_half_x_above_32768_pixels_matches_torch_float64(rng, dtype, mode):
    # PyTorch's own float16/bfloat16 CPU path fails above 32768 pixels; its
    # float64 result on the same values is the truth here.  Stored results
    # are within one unit in the last place of the type, plus the effect of
    # float32 coordinates (rule 5): on a 200-pixel axis one float32 ulp of a
    # coordinate is ~1.5e-5 pixel, times neighbour differences of O(1) and
    # cubic's gain -- below 1e-4.
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((1, 2, 200, 200)).astype(dtype)  # 40000 pixels
    grid = f32_case(rng, (1, 2, 200, 200), (190, 210), spread=1.1)
    got = gridsample.grid_sample(x, grid, mode, "border", True).astype(np.float64)
    want = torch.nn.functional.grid_sample(
        torch.from_numpy(x.astype(np.float64)), torch.from_numpy(grid.astype(np.float64)),
        TORCH_MODE[mode],
        "border", True).numpy()
    assert (np.abs(got - want) <= eps(dtype) * np.abs(want) + 1e-4).all()


@pytest.mark.parametrize("gdtype", [F16, BF16], ids=str)
@pytest.mark.parametrize("grid_batch", [1, 2])
def test_half_grid_is_its_float32_values(rng, gdtype, grid_batch):
    # Coordinates of a float16/bfloat16 grid are computed in float32 from its
    # exact values; the grid is converted in chunks of 65536 points, so this
    # output (2 x 300 x 250 = 150000 points per item) spans three chunks.
    x = rng.standard_normal((2, 3, 20, 30)).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, (grid_batch, 300, 250, 2)).astype(gdtype)
    for mode in MODES:
        got = gridsample.grid_sample(x, grid, mode, "zeros", False)
        want = gridsample.grid_sample(x, grid.astype(np.float32), mode, "zeros", False)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [F16, BF16, np.dtype(np.uint8)], ids=str)
def test_fast_kernel_types_at_rank_3(rng, dtype):
    x = make_x(rng, (1, 2, 4, 5, 6), dtype)
    grid = f32_case(rng, (1, 2, 4, 5, 6), (3, 4, 5))
    for padding in PADDINGS:
        got = gridsample.grid_sample(x, grid, "linear", padding, False)
        assert_matches_reference(got, x, grid, "linear", padding, False)


def test_half_grid_with_float64_x_and_channel_last(rng):
    x = rng.standard_normal((1, 7, 8, 3))
    grid = rng.uniform(-1.2, 1.2, (1, 5, 6, 2)).astype(BF16)
    got = gridsample.grid_sample(x, grid, "cubic", "reflection", True, channel_last=True)
    want = reference.grid_sample(x, grid.astype(np.float32), "cubic", "reflection", True,
                                 channel_last=True)
    np.testing.assert_allclose(got, want, **tolerance(np.float64))


class TestRoundingAndSaturationByHand:
    """Rule 6 on 1-D inputs, values derived in the comments (align_corners=False)."""

    @staticmethod
    def at(values, g, dtype, mode="linear"):
        x = np.array(values, dtype).reshape(1, 1, -1)
        grid = np.array([[[g]]], np.float64)
        return gridsample.grid_sample(x, grid, mode, "zeros", False)[0, 0, 0]

    def test_linear_midpoints_round_half_to_even(self):
        # S = 2: x = ((g + 1) * 2 - 1) / 2, so g = 0 is x = 0.5, the midpoint.
        assert self.at([1, 2], 0.0, np.uint8) == 2    # 1.5 -> 2 (even)
        assert self.at([2, 3], 0.0, np.uint8) == 2    # 2.5 -> 2 (even)
        assert self.at([0, 1], 0.0, np.int16) == 0    # 0.5 -> 0
        assert self.at([-2, -1], 0.0, np.int8) == -2  # -1.5 -> -2
        assert self.at([0, 255], 0.0, np.uint8) == 128  # 127.5 -> 128 (even)

    def test_bool_is_nonzero_after_rounding(self):
        assert not self.at([False, True], 0.0, bool)  # 0.5 -> 0 -> False
        assert self.at([False, True], 0.25, bool)     # x = 0.75: 0.75 -> 1 -> True

    def test_cubic_overshoot_saturates(self):
        # S = 4: g = -0.125 gives x = ((0.875 * 4) - 1) / 2 = 1.25: taps 0..3,
        # t = 0.25, Keys weights (A = -0.75) w = (-0.10546875, 0.87890625,
        # 0.26171875, -0.03515625) (they sum to 1).
        # [0, 255, 255, 255]: 255 * (w1 + w2 + w3) = 255 * 1.10546875 = 281.89 -> 255.
        assert self.at([0, 255, 255, 255], -0.125, np.uint8, "cubic") == 255
        # [255, 0, 0, 0]: 255 * w0 = -26.89 -> 0.
        assert self.at([255, 0, 0, 0], -0.125, np.uint8, "cubic") == 0
        # int16 [0, 32767, 32767, 32767]: 32767 * 1.10546875 = 36222.8 -> 32767.
        assert self.at([0, 32767, 32767, 32767], -0.125, np.int16, "cubic") == 32767
        # int8 [127, -128, -128, -128]: 127 w0 - 128 (w1 + w2 + w3) = -154.9 -> -128.
        assert self.at([127, -128, -128, -128], -0.125, np.int8, "cubic") == -128
        # float32 keeps the overshoot: 281.89453125 exactly representable.
        assert self.at([0, 255, 255, 255], -0.125, np.float32, "cubic") == np.float32(281.89453125)

    def test_non_finite_grid_gives_zero_for_integers(self):
        for g in (np.nan, np.inf, -np.inf):
            assert self.at([7, 9], g, np.int32) == 0
            assert not self.at([True, True], g, bool)

    def test_uint64_keeps_large_values(self):
        # float64 interpolation of 2**63 + 2**11 (exact in float64) at weight 1.
        big = 2**63 + 2**11
        assert self.at([big, big], 0.0, np.uint64) == big


class TestStrings:
    words = np.array([["ab", "cd", "ef"], ["gh", "ij", "kl"]])  # (H=2, W=3)

    def x(self, dtype):
        return self.words.astype(dtype).reshape(1, 1, 2, 3)

    @pytest.mark.parametrize("dtype", ["U2", "S2", object])
    @pytest.mark.parametrize("padding", PADDINGS)
    def test_nearest_matches_reference(self, rng, dtype, padding):
        x = np.repeat(self.x(dtype), 2, axis=1)  # 2 channels
        grid = rng.uniform(-1.5, 1.5, (1, 4, 5, 2))
        grid[0, 0, 0] = np.nan
        got = gridsample.grid_sample(x, grid, "nearest", padding, True)
        want = reference.grid_sample(x, grid, "nearest", padding, True)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, want)
        empty = b"" if np.dtype(dtype).kind == "S" else ""
        assert (got[0, :, 0, 0] == empty).all()  # NaN reads nothing

    def test_values_by_hand(self):
        # align_corners=True: g = -1 / 0 / 1 are columns 0 / 1 / 2 and rows 0 / 0.5 / 1.
        grid = np.array([[[[-1.0, -1.0], [1.0, 1.0], [0.0, -1.0], [3.0, 0.0]]]])
        got = gridsample.grid_sample(self.x("U2"), grid, "nearest", "zeros", True)
        assert got[0, 0, 0].tolist() == ["ab", "kl", "cd", ""]  # (3, 0) is outside

    def test_channel_last_and_grid_broadcast(self, rng):
        x = np.stack([self.words, np.char.upper(self.words)], -1)[None].repeat(2, 0)  # (2,2,3,2)
        grid = rng.uniform(-1, 1, (1, 3, 3, 2))
        got = gridsample.grid_sample(x, grid, "nearest", "border", False, channel_last=True)
        want = reference.grid_sample(np.moveaxis(x, -1, 1), grid, "nearest", "border", False)
        np.testing.assert_array_equal(np.moveaxis(got, -1, 1), want)

    @pytest.mark.parametrize("mode", ["linear", "cubic"])
    def test_interpolating_strings_is_an_error(self, mode):
        with pytest.raises(GridSampleError, match=f"mode='{mode}' is not defined for x of string"):
            gridsample.grid_sample(self.x("U2"), np.zeros((1, 1, 1, 2)), mode)


def test_unsupported_dtypes_are_named():
    with pytest.raises(GridSampleTypeError, match="x has dtype datetime64"):
        gridsample.grid_sample(np.zeros((1, 1, 2, 2), "datetime64[s]"), np.zeros((1, 1, 1, 2)))
    with pytest.raises(GridSampleTypeError, match="grid has dtype int32"):
        gridsample.grid_sample(np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 1, 2), np.int32))
    with pytest.raises(GridSampleTypeError, match="grid has dtype complex64"):
        gridsample.grid_sample(np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 1, 2), np.complex64))


def test_half_conversions_match_numpy_and_ml_dtypes():
    # The kernels' float32 <-> float16/bfloat16 conversions against NumPy's
    # and ml_dtypes' casts: random float32 bit patterns (every class:
    # normal, subnormal, overflow, NaN payloads) plus ties and edges.
    import numba

    from gridsample._convert import (
        bf16_bits_to_f32,
        f16_bits_to_f32,
        f32_to_bf16_bits,
        f32_to_f16_bits_hw,
    )

    @numba.njit
    def narrow(values, f16, bf16):
        for i in range(values.size):
            f16[i] = f32_to_f16_bits_hw(values[i])
            bf16[i] = f32_to_bf16_bits(values[i])

    @numba.njit
    def widen(bits, f16, bf16):
        for i in range(bits.size):
            f16[i] = f16_bits_to_f32(bits[i])
            bf16[i] = bf16_bits_to_f32(bits[i])

    rng = np.random.default_rng(7)
    patterns = rng.integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32)
    edges = np.array([0.0, -0.0, 65504, 65519.99, 65520, 65536, 1e30, np.inf, -np.inf, np.nan,
                      2.0**-24, 2.0**-25, 1.5 * 2.0**-25, 2.0**-14, 1e-8, 3.0e38, 1.0 + 2.0**-8,
                      1.0 + 3 * 2.0**-8], np.float32)
    values = np.concatenate([patterns.view(np.float32), edges,
                             np.arange(-70000, 70000, 0.125, dtype=np.float32)])
    f16 = np.empty(values.size, np.uint16)
    bf16 = np.empty(values.size, np.uint16)
    with np.errstate(over="ignore", invalid="ignore"):
        narrow(values, f16, bf16)
        want16 = values.astype(np.float16)
        wantb = values.astype(BF16)
    nan = np.isnan(values)
    np.testing.assert_array_equal(f16[~nan], want16.view(np.uint16)[~nan])
    np.testing.assert_array_equal(bf16[~nan], wantb.view(np.uint16)[~nan])
    assert np.isnan(f16.view(np.float16)[nan]).all()
    assert np.isnan(bf16.view(BF16)[nan].astype(np.float32)).all()

    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    w16 = np.empty(65536, np.float32)
    wb = np.empty(65536, np.float32)
    widen(bits, w16, wb)
    np.testing.assert_array_equal(w16, bits.view(np.float16).astype(np.float32))
    np.testing.assert_array_equal(wb, bits.view(BF16).astype(np.float32))
