"""gridsample.affine_grid against PyTorch, ONNX's reference and our own twin."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import gridsample
import gridsample.reference as ref
from gridsample import GridSampleError, GridSampleTypeError
from gridsample._affine import _CAST_BLOCK_POINTS

torch = pytest.importorskip("torch")

SIZES = [(2, 3, 5, 7), (1, 1, 1, 4), (3, 2, 6, 1), (2, 1, 4, 5, 6), (1, 2, 1, 3, 1)]


def random_theta(rng, n, r, dtype=np.float64):
    """Identity plus a random perturbation: rotations, scales, shears, shifts."""
    return (np.eye(r, r + 1) + 0.5 * rng.standard_normal((n, r, r + 1))).astype(dtype)


def torch_affine_grid(theta, size, align):
    with warnings.catch_warnings():  # torch warns about unit sizes with align_corners
        warnings.simplefilter("ignore")
        return torch.nn.functional.affine_grid(torch.from_numpy(theta), list(size),
                                               align_corners=align).numpy()


@pytest.mark.parametrize("size,align", list(itertools.product(SIZES, (False, True))))
def test_float64_matches_torch(rng, size, align):
    theta = random_theta(rng, size[0], len(size) - 2)
    got = gridsample.affine_grid(theta, size, align)
    assert got.dtype == np.float64
    # Three products and two sums of O(1) values: a few ulp.
    np.testing.assert_allclose(got, torch_affine_grid(theta, size, align), rtol=0, atol=1e-14)


@pytest.mark.parametrize("size,align", list(itertools.product(SIZES, (False, True))))
def test_float32_matches_torch(rng, size, align):
    theta = random_theta(rng, size[0], len(size) - 2, np.float32)
    got = gridsample.affine_grid(theta, size, align)
    assert got.dtype == np.float32
    # float32 on both sides, in different orders: each of the <= 4 terms is
    # O(2) and carries half an ulp (6e-8) of rounding, the base coordinates
    # one more; 1e-6 is a few ulp of the largest term.
    np.testing.assert_allclose(got, torch_affine_grid(theta, size, align), rtol=0, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("r", [2, 3])
def test_matches_reference_twin(rng, dtype, r):
    dt = np.dtype(pytest.importorskip("ml_dtypes").bfloat16) if dtype == "bfloat16" \
        else np.dtype(dtype)
    size = (2, 1, 7, 9) if r == 2 else (2, 1, 4, 5, 6)
    theta = random_theta(rng, 2, r).astype(dt)
    for align in (False, True):
        got = gridsample.affine_grid(theta, size, align)
        want = ref.affine_grid(theta, size, align)
        assert got.dtype == dt and got.shape == want.shape
        # The twin sums in float64 and rounds once; the kernel computes in
        # float32 (float64 for float64): at most 1 ulp of the stored type.
        eps = {"float64": 2e-16, "float32": 1.2e-7, "float16": 9.8e-4, "bfloat16": 7.9e-3}[dtype]
        g, w = got.astype(np.float64), want.astype(np.float64)
        assert np.all(np.abs(g - w) <= 2 * eps * np.maximum(np.abs(w), 1.0))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_in_several_blocks(rng, dtype):
    # More points than one float32 scratch block holds, so the block loop runs
    # several times; every block must be right, including the short last one.
    dt = np.dtype(pytest.importorskip("ml_dtypes").bfloat16) if dtype == "bfloat16" \
        else np.dtype(dtype)
    h, w = 3 * (_CAST_BLOCK_POINTS // 1000) + 7, 1000
    theta = random_theta(rng, 1, 2).astype(dt)
    got = gridsample.affine_grid(theta, (1, 1, h, w))
    want32 = gridsample.affine_grid(theta.astype(np.float32), (1, 1, h, w))
    # float16/bfloat16 compute in float32: the result is the float32 result rounded.
    np.testing.assert_array_equal(got, want32.astype(dt))


def test_identity_warp_returns_the_input(rng):
    x = rng.standard_normal((2, 3, 6, 7))
    identity = np.repeat(np.eye(2, 3)[None], 2, axis=0)
    for align in (False, True):
        grid = gridsample.affine_grid(identity, x.shape, align)
        np.testing.assert_allclose(gridsample.grid_sample(x, grid, align_corners=align), x,
                                   atol=1e-12)


def test_unit_axis_sits_at_zero():
    # An axis of size 1 has base coordinate 0 with either align_corners (PyTorch's rule).
    theta = np.array([[[1.0, 0, 0.25], [0, 1.0, 0]]])
    for align in (False, True):
        assert gridsample.affine_grid(theta, (1, 1, 1, 1), align)[0, 0, 0].tolist() == [0.25, 0.0]


def test_empty_sizes_give_empty_grids():
    assert gridsample.affine_grid(np.zeros((0, 2, 3)), (0, 1, 4, 5)).shape == (0, 4, 5, 2)
    assert gridsample.affine_grid(np.zeros((1, 3, 4)), (1, 1, 0, 2, 3)).shape == (1, 0, 2, 3, 3)


def test_array_size_and_list_theta():
    got = gridsample.affine_grid([[[1.0, 0, 0], [0, 1.0, 0]]], np.array([1, 3, 2, 2], np.int64))
    np.testing.assert_allclose(got[0, :, :, 0], [[-0.5, 0.5], [-0.5, 0.5]])


@pytest.mark.parametrize("theta,size,match,exc", [
    (np.zeros((1, 2, 3)), (1, 1, 4, 4, 4), r"theta has shape \(1, 2, 3\).*\(N, 3, 4\)",
     GridSampleError),
    (np.zeros((2, 2, 3)), (1, 1, 4, 4), r"theta has batch size 2 but size\[0\]=1",
     GridSampleError),
    (np.zeros((1, 2, 3)), (1, 4, 4), r"size=.*has 3 entries", GridSampleError),
    (np.zeros((1, 2, 3)), (1, 1, -4, 4), r"negative entry", GridSampleError),
    (np.zeros((1, 2, 3)), (1, 1, 4.0, 4), r"non-integers", GridSampleTypeError),
    (np.zeros((1, 2, 3), np.int32), (1, 1, 4, 4), r"theta has dtype int32", GridSampleTypeError),
    (np.zeros((2, 3)), (1, 1, 4, 4), r"theta has shape \(2, 3\)", GridSampleError),
    (np.zeros((1, 2, 3)), None, r"size=None is not a sequence", GridSampleTypeError),
    (np.zeros((1, 2, 3)), 4, r"size=4 is not a sequence", GridSampleTypeError),
    (np.zeros((1, 2, 3)), "1145", r"size='1145' is not a sequence", GridSampleTypeError),
    (np.zeros((1, 2, 3)), np.int64(4), r"is not a sequence", GridSampleTypeError),
])
def test_bad_arguments_are_named(theta, size, match, exc):
    with pytest.raises(exc, match=match):
        gridsample.affine_grid(theta, size)


def test_bad_align_corners_is_named():
    with pytest.raises(GridSampleError, match="align_corners=2"):
        gridsample.affine_grid(np.zeros((1, 2, 3)), (1, 1, 2, 2), 2)
