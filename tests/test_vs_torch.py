"""gridsample against PyTorch's F.grid_sample, the reference implementation of the field.

PyTorch covers 2-D (all modes) and 3-D (linear, nearest); in float64 the two
must agree to ~1e-12 (only rounding order differs), in float32 to ~1e-5.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gridsample
from conftest import ALIGNS, MODES, PADDINGS, TORCH_MODE, random_case, tolerance

torch = pytest.importorskip("torch")
F = torch.nn.functional


def torch_grid_sample(x, grid, mode, padding, align):
    out = F.grid_sample(torch.from_numpy(x), torch.from_numpy(grid), mode=TORCH_MODE[mode],
                        padding_mode=padding, align_corners=align)
    return out.numpy()


@pytest.mark.parametrize("mode,padding,align", list(itertools.product(MODES, PADDINGS, ALIGNS)))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_2d_matches_torch(rng, mode, padding, align, dtype):
    x, grid = random_case(rng, (2, 3, 11, 13), (7, 9), spread=1.6, x_dtype=dtype, grid_dtype=dtype)
    got = gridsample.grid_sample(x, grid, mode, padding, align)
    want = torch_grid_sample(x, grid, mode, padding, align)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, **tolerance(dtype))


@pytest.mark.parametrize("mode,padding,align",
                         list(itertools.product(("linear", "nearest"), PADDINGS, ALIGNS)))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_3d_matches_torch(rng, mode, padding, align, dtype):
    x, grid = random_case(rng, (2, 2, 5, 6, 7), (4, 3, 5), spread=1.6, x_dtype=dtype,
                          grid_dtype=dtype)
    got = gridsample.grid_sample(x, grid, mode, padding, align)
    want = torch_grid_sample(x, grid, mode, padding, align)
    np.testing.assert_allclose(got, want, **tolerance(dtype))


@pytest.mark.parametrize("mode", MODES)
def test_2d_far_points_match_torch(rng, mode):
    """Points far outside (|g| up to 40) exercise repeated reflection and clipping."""
    x, grid = random_case(rng, (1, 2, 6, 5), (8, 8), spread=40.0)
    for padding, align in itertools.product(PADDINGS, ALIGNS):
        got = gridsample.grid_sample(x, grid, mode, padding, align)
        want = torch_grid_sample(x, grid, mode, padding, align)
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


def test_2d_size_one_axes_match_torch(rng):
    """Axes of length 1 (S - 1 = 0): reflection maps everything to 0."""
    x, grid = random_case(rng, (1, 2, 1, 4), (5, 3), spread=2.0)
    for mode, padding, align in itertools.product(MODES, PADDINGS, ALIGNS):
        got = gridsample.grid_sample(x, grid, mode, padding, align)
        want = torch_grid_sample(x, grid, mode, padding, align)
        np.testing.assert_allclose(got, want, **tolerance(np.float64))


def test_channel_last_matches_torch(rng):
    x, grid = random_case(rng, (2, 4, 9, 10), (6, 7))
    want = torch_grid_sample(x, grid, "cubic", "reflection", False)
    got = gridsample.grid_sample(np.ascontiguousarray(np.moveaxis(x, 1, -1)), grid, "cubic",
                                 "reflection", False, channel_last=True)
    np.testing.assert_allclose(np.moveaxis(got, -1, 1), want, **tolerance(np.float64))
