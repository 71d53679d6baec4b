"""``gridsample.grid_sample_double_backward``: the backward's own derivative, NumPy API.

Oracle: central differences of :func:`gridsample.grid_sample_backward`
itself.  For ``M(G, X, g) = <P, dL/dX> + <Q, dL/dg>`` the double backward
returns ``dM/dG``, ``dM/dX`` and ``dM/dg``; their inner product with a random
direction ``V`` must equal ``(M(z + hV) - M(z - hV)) / 2h``.  M is bilinear
in (G, X), so differences in those are exact up to rounding; in g it is a
piecewise polynomial of degree <= 3 per cell, so with h = 1e-6 the central
difference's error is ~h^2 * |M'''| ~ 1e-11, plus rounding ~1e-16 / h = 1e-10:
1e-7 relative leaves margin, and a missing term (O(1)) is far above it.
PyTorch's second derivatives and gradgradcheck are in tests/test_torch_ops.py.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

import gridsample
from conftest import MODES, PADDINGS, random_case


def _m(gout, x, grid, p, q, options):
    gx, gg = gridsample.grid_sample_backward(gout, x, grid, **options)
    return np.sum(gx * p) + np.sum(gg * q)


@pytest.mark.parametrize("rank", (1, 2, 3, 4))
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_directional_derivatives_match_central_differences(rng, rank, mode, padding):
    align = rank % 2 == 1
    sides = (5, 4, 6, 3)[:rank]
    x, grid = random_case(rng, (2, 2) + sides, (3, 2, 2, 2)[:rank],
                          grid_batch=1 if rank == 3 else 2)
    options = dict(mode=mode, padding_mode=padding, align_corners=align)
    gout = rng.standard_normal((2, 2) + grid.shape[1:-1])
    p, q = rng.standard_normal(x.shape), rng.standard_normal(grid.shape)
    d_gout, d_x, d_grid = gridsample.grid_sample_double_backward(p, q, gout, x, grid, **options)
    args = [gout, x, grid]
    for k, (grad, h) in enumerate(zip((d_gout, d_x, d_grid), (1.0, 1.0, 1e-6))):
        v = rng.standard_normal(args[k].shape)
        plus, minus = list(args), list(args)
        plus[k], minus[k] = args[k] + h * v, args[k] - h * v
        numeric = (_m(*plus, p, q, options) - _m(*minus, p, q, options)) / (2 * h)
        assert np.sum(grad * v) == pytest.approx(numeric, rel=1e-7, abs=1e-7), ("GXg"[k], k)


def test_none_means_zero_and_output_mask(rng):
    x, grid = random_case(rng, (2, 3, 5, 6), (4, 3))
    gout = rng.standard_normal((2, 3, 4, 3))
    q = rng.standard_normal(grid.shape)
    full = gridsample.grid_sample_double_backward(np.zeros(x.shape), q, gout, x, grid, "cubic")
    none = gridsample.grid_sample_double_backward(None, q, gout, x, grid, "cubic")
    for a, b in zip(full, none):
        np.testing.assert_array_equal(a, b)
    masked = gridsample.grid_sample_double_backward(None, q, gout, x, grid, "cubic",
                                                    output_mask=(False, True, False))
    assert masked[0] is None and masked[2] is None
    np.testing.assert_array_equal(masked[1], full[1])
    both_none = gridsample.grid_sample_double_backward(None, None, gout, x, grid)
    assert all(not a.any() for a in both_none)


def test_layouts_and_dtypes(rng):
    """channel_last equals the moved channel-first result; float32 keeps its dtypes."""
    x, grid = random_case(rng, (2, 3, 5, 6), (4, 3), grid_batch=1)
    gout = rng.standard_normal((2, 3, 4, 3))
    p, q = rng.standard_normal(x.shape), rng.standard_normal(grid.shape)
    first = gridsample.grid_sample_double_backward(p, q, gout, x, grid, "linear", "reflection")
    last = gridsample.grid_sample_double_backward(
        np.moveaxis(p, 1, -1), q, np.moveaxis(gout, 1, -1), np.moveaxis(x, 1, -1), grid,
        "linear", "reflection", channel_last=True)
    np.testing.assert_allclose(np.moveaxis(last[0], -1, 1), first[0], atol=1e-12)
    np.testing.assert_allclose(np.moveaxis(last[1], -1, 1), first[1], atol=1e-12)
    np.testing.assert_allclose(last[2], first[2], atol=1e-12)
    f32 = gridsample.grid_sample_double_backward(
        p.astype(np.float32), q.astype(np.float32), gout.astype(np.float32),
        x.astype(np.float32), grid.astype(np.float32), "linear", "reflection")
    assert [a.dtype for a in f32] == [np.float32] * 3
    for a, b in zip(f32, first):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_non_finite_points(rng):
    """A NaN point: NaN in dM/dG and dM/dg, nothing in dM/dX; a point at inf: 0."""
    x, grid = random_case(rng, (1, 2, 5, 6), (1, 3))
    grid[0, 0, 1, 0] = np.nan
    grid[0, 0, 2, :] = np.inf
    gout = rng.standard_normal((1, 2, 1, 3))
    q = rng.standard_normal(grid.shape)
    d_gout, d_x, d_grid = gridsample.grid_sample_double_backward(None, q, gout, x, grid, "cubic")
    assert np.isnan(d_gout[0, :, 0, 1]).all() and np.isnan(d_grid[0, 0, 1]).all()
    assert (d_gout[0, :, 0, 2] == 0).all() and (d_grid[0, 0, 2] == 0).all()
    assert np.isfinite(d_x).all()
    q_first = q.copy()
    q_first[0, 0, 1:] = 0  # the NaN and the infinite point add nothing to dM/dX
    np.testing.assert_array_equal(
        d_x, gridsample.grid_sample_double_backward(None, q_first, gout, x, grid, "cubic")[1])


def test_bit_identical_at_any_thread_count(rng):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs 2 Numba threads")
    x, grid = random_case(rng, (1, 3, 40, 50), (30, 30), x_dtype=np.float32,
                          grid_dtype=np.float32)
    gout = rng.standard_normal((1, 3, 30, 30)).astype(np.float32)
    p = rng.standard_normal(x.shape).astype(np.float32)
    q = rng.standard_normal(grid.shape).astype(np.float32)
    before = numba.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            results.append(gridsample.grid_sample_double_backward(p, q, gout, x, grid, "cubic"))
    finally:
        numba.set_num_threads(before)
    for a, b in zip(*results):
        assert a.tobytes() == b.tobytes()


def test_bad_arguments_name_themselves(rng):
    x, grid = random_case(rng, (1, 2, 5, 6), (2, 3))
    gout = np.zeros((1, 2, 2, 3))
    call = gridsample.grid_sample_double_backward
    with pytest.raises(gridsample.GridSampleError, match=r"grad_grad_x has shape \(1, 2, 5\)"):
        call(np.zeros((1, 2, 5)), None, gout, x, grid)
    with pytest.raises(gridsample.GridSampleError, match="grad_grad_grid has shape"):
        call(None, np.zeros((1, 2, 3, 1)), gout, x, grid)
    with pytest.raises(gridsample.GridSampleTypeError, match="grad_grad_grid has dtype int64"):
        call(None, np.zeros(grid.shape, np.int64), gout, x, grid)
    with pytest.raises(gridsample.GridSampleError, match="output_mask=.*triple"):
        call(None, None, gout, x, grid, output_mask=(True, True))
    with pytest.raises(gridsample.GridSampleTypeError, match="output_mask"):
        call(None, None, gout, x, grid, output_mask="yes")
    with pytest.raises(gridsample.GridSampleError, match="grad_output has shape"):
        call(None, None, gout[..., :2], x, grid)
