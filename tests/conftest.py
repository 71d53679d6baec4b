"""Shared helpers for the tests: option lists, random inputs, tolerances."""

from __future__ import annotations

import numpy as np
import pytest

MODES = ("linear", "nearest", "cubic")
PADDINGS = ("zeros", "border", "reflection")
ALIGNS = (False, True)
TORCH_MODE = {"linear": "bilinear", "nearest": "nearest", "cubic": "bicubic"}


def random_case(rng, x_shape, out_spatial, *, spread=1.3, x_dtype=np.float64,
                grid_dtype=np.float64, grid_batch=None):
    """Random X and a grid with points inside and outside [-1, 1]."""
    n = x_shape[0]
    r = len(x_shape) - 2
    gb = n if grid_batch is None else grid_batch
    x = rng.standard_normal(x_shape).astype(x_dtype)
    grid = rng.uniform(-spread, spread, (gb, *out_spatial, r)).astype(grid_dtype)
    return x, grid


def tolerance(dtype) -> dict:
    """assert_allclose tolerances by the precision the kernels compute in.

    float64 sums of <= 64 taps of O(1) values with O(1) weights carry a few
    ulp of error each: 1e-12 leaves three orders of margin.  float32 computes
    coordinates and weights in float32: a coordinate rounded by one ulp of a
    value up to S ~ 100 moves a weight by ~1e-5, hence 2e-5.
    """
    if np.dtype(dtype) == np.float64:
        return dict(rtol=1e-12, atol=1e-12)
    return dict(rtol=2e-5, atol=2e-5)


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)
