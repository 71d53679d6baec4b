"""grid_sample_backward: dL/dx and dL/dgrid (DESIGN.md rule 10).

Oracles, each for what the others lack:

* PyTorch autograd of ``F.grid_sample`` in float64 (2-D all modes, 3-D linear
  and nearest): the same formulas, only the rounding order differs, so
  1e-10 holds with orders of margin (gradients here are O(1)-O(100));
* the slow NumPy twin :func:`gridsample.reference.grid_sample_backward`,
  itself checked against PyTorch on 2-D/3-D, for r = 1 and 4, 3-D cubic,
  channel-last, mixed dtypes and the non-finite rules;
* central finite differences of the forward, and the adjoint identity
  ``<dL/dy, forward(x)> = <dL/dx, x>`` (the forward is linear in x);
* identities: thread-count independence, output_mask, float16/bfloat16 as
  the rounded float32 computation.
"""

from __future__ import annotations

import itertools

import numba
import numpy as np
import pytest

import gridsample
from conftest import ALIGNS, MODES, PADDINGS, TORCH_MODE, random_case
from gridsample import GridSampleError, GridSampleTypeError, reference

ALL_OPTIONS = list(itertools.product(MODES, PADDINGS, ALIGNS))
EXACT = dict(rtol=1e-10, atol=1e-10)


def grad_output_like(rng, x, grid, *, channel_last=False, dtype=None):
    """A random dL/dy of the forward output's shape."""
    n, c = (x.shape[0], x.shape[-1]) if channel_last else x.shape[:2]
    out_spatial = grid.shape[1:-1]
    shape = (n, *out_spatial, c) if channel_last else (n, c, *out_spatial)
    return rng.standard_normal(shape).astype(dtype or x.dtype)


def assert_close_f32(got, want):
    """Tolerance for gradients computed in float32.

    A grid-gradient element sums C * T**r terms (T taps per axis, up to 16
    for 2-D cubic), each up to (S/2) * |k'| * |x| * |dL/dy|; every term and
    partial sum carries ~6e-8 relative rounding, and a coordinate rounded
    by one float32 ulp (<= 1e-6 for S <= 16) moves a weight by as much.
    Errors are thus bounded by ~48 * 6e-8 ~ 3e-6 of the largest term, so
    2e-5 of the largest gradient leaves margin (measured: <= 6e-7 of it).
    """
    scale = float(np.nanmax(np.abs(want))) if want.size else 0.0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-5 * max(scale, 1.0))


def torch_backward(grad_output, x, grid, mode, padding, align, *, broadcast_to=None):
    """PyTorch autograd of F.grid_sample: (dL/dx, dL/dgrid).

    ``broadcast_to=N`` expands a grid of batch 1 to N items inside the
    graph, so its gradient is the sum over the batch.
    """
    torch = pytest.importorskip("torch")
    xt = torch.from_numpy(x).requires_grad_()
    gt = torch.from_numpy(grid).requires_grad_()
    g = gt if broadcast_to is None else gt.expand(broadcast_to, *grid.shape[1:])
    y = torch.nn.functional.grid_sample(xt, g, mode=TORCH_MODE[mode], padding_mode=padding,
                                        align_corners=align)
    gx, gg = torch.autograd.grad(y, (xt, gt), torch.from_numpy(grad_output))
    return gx.numpy(), gg.numpy()


def assert_matches(got, want, check=None):
    check = check or (lambda a, b: np.testing.assert_allclose(a, b, **EXACT))
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
        check(a, b)


def assert_twins(grad_output, x, grid, mode, padding, align, *, channel_last=False, check=None):
    args = (grad_output, x, grid, mode, padding, align)
    got = gridsample.grid_sample_backward(*args, channel_last=channel_last)
    want = reference.grid_sample_backward(*args, channel_last=channel_last)
    assert_matches(got, want, check)
    return got


# --------------------------------------------------------------------------
# PyTorch autograd


@pytest.mark.parametrize("mode,padding,align", ALL_OPTIONS)
def test_2d_matches_torch(rng, mode, padding, align):
    x, grid = random_case(rng, (2, 3, 6, 7), (5, 4))
    go = grad_output_like(rng, x, grid)
    got = gridsample.grid_sample_backward(go, x, grid, mode, padding, align)
    assert_matches(got, torch_backward(go, x, grid, mode, padding, align))


@pytest.mark.parametrize("mode,padding,align",
                         list(itertools.product(("linear", "nearest"), PADDINGS, ALIGNS)))
def test_3d_matches_torch(rng, mode, padding, align):
    x, grid = random_case(rng, (2, 2, 4, 5, 3), (3, 2, 4))
    go = grad_output_like(rng, x, grid)
    got = gridsample.grid_sample_backward(go, x, grid, mode, padding, align)
    assert_matches(got, torch_backward(go, x, grid, mode, padding, align))


@pytest.mark.parametrize("mode", MODES)
def test_far_points_and_size_one_axes_match_torch(rng, mode):
    """|g| up to 40 (many reflections, each flipping the slope) and axes of length 1."""
    far = random_case(rng, (1, 2, 6, 5), (6, 6), spread=40.0)
    thin = random_case(rng, (1, 2, 1, 4), (5, 3), spread=2.0)
    for (x, grid), padding, align in itertools.product((far, thin), PADDINGS, ALIGNS):
        go = grad_output_like(rng, x, grid)
        got = gridsample.grid_sample_backward(go, x, grid, mode, padding, align)
        assert_matches(got, torch_backward(go, x, grid, mode, padding, align))


@pytest.mark.parametrize("rank,mode", [(2, "linear"), (2, "nearest"), (2, "cubic"),
                                       (3, "linear"), (3, "nearest")])
def test_broadcast_grid_matches_torch(rng, rank, mode):
    """A grid of batch 1 serves N = 3 items: its gradient is the sum over them."""
    x_shape, out = ((3, 2, 6, 7), (5, 4)) if rank == 2 else ((3, 2, 4, 5, 3), (3, 2, 4))
    x, grid = random_case(rng, x_shape, out, grid_batch=1)
    go = grad_output_like(rng, x, grid)
    got = gridsample.grid_sample_backward(go, x, grid, mode, "reflection", False)
    assert got[1].shape == grid.shape
    assert_matches(got, torch_backward(go, x, grid, mode, "reflection", False, broadcast_to=3))


@pytest.mark.parametrize("mode", MODES)
def test_channel_last_matches_torch(rng, mode):
    x, grid = random_case(rng, (2, 4, 6, 7), (5, 4))
    go = grad_output_like(rng, x, grid)
    want_x, want_grid = torch_backward(go, x, grid, mode, "border", True)
    x_last = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    go_last = np.ascontiguousarray(np.moveaxis(go, 1, -1))
    gx, gg = gridsample.grid_sample_backward(go_last, x_last, grid, mode, "border", True,
                                             channel_last=True)
    assert gx.shape == x_last.shape
    np.testing.assert_allclose(np.moveaxis(gx, -1, 1), want_x, **EXACT)
    np.testing.assert_allclose(gg, want_grid, **EXACT)


@pytest.mark.parametrize("mode,padding,align", ALL_OPTIONS)
def test_float32_matches_torch(rng, mode, padding, align):
    x, grid = random_case(rng, (2, 3, 11, 13), (7, 9), x_dtype=np.float32,
                          grid_dtype=np.float32)
    go = grad_output_like(rng, x, grid)
    got = gridsample.grid_sample_backward(go, x, grid, mode, padding, align)
    assert_matches(got, torch_backward(go, x, grid, mode, padding, align), assert_close_f32)


@pytest.mark.parametrize("mode,padding,align", ALL_OPTIONS)
def test_reference_twin_matches_torch(rng, mode, padding, align):
    """The twin is an oracle only where it is itself checked: 2-D, and 3-D linear/nearest."""
    cases = [((2, 2, 6, 7), (4, 5))]
    if mode != "cubic":
        cases.append(((1, 2, 4, 5, 3), (3, 2, 4)))
    for shape, out in cases:
        x, grid = random_case(rng, shape, out, spread=3.0)
        go = grad_output_like(rng, x, grid)
        want = torch_backward(go, x, grid, mode, padding, align)
        assert_matches(reference.grid_sample_backward(go, x, grid, mode, padding, align), want)


# --------------------------------------------------------------------------
# The slow twin, for what PyTorch lacks


@pytest.mark.parametrize("rank,x_spatial,out_spatial", [
    (1, (9,), (11,)),
    (3, (4, 5, 6), (3, 4, 2)),        # 3-D cubic is only covered here
    (4, (3, 4, 3, 4), (2, 3, 2, 2)),
])
@pytest.mark.parametrize("mode,padding,align", ALL_OPTIONS)
def test_any_rank_matches_reference(rng, rank, x_spatial, out_spatial, mode, padding, align):
    x, grid = random_case(rng, (2, 2, *x_spatial), out_spatial)
    assert_twins(grad_output_like(rng, x, grid), x, grid, mode, padding, align)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_channel_last_and_broadcast_match_reference(rng, rank, mode):
    x, grid = random_case(rng, (3, 4, *(6, 5, 4)[:rank]), (4, 3, 2)[:rank], grid_batch=1)
    x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    go = grad_output_like(rng, x, grid, channel_last=True)
    for padding, align in itertools.product(PADDINGS, ALIGNS):
        assert_twins(go, x, grid, mode, padding, align, channel_last=True)


@pytest.mark.parametrize("x_dtype,grid_dtype,go_dtype", [
    (np.float32, np.float64, np.float32),   # computed in float64
    (np.float64, np.float32, np.float64),   # computed in float64
    (np.float64, np.float64, np.float32),   # grad_output's dtype does not choose the precision
    (np.float32, np.float32, np.float64),   # computed in float32
])
@pytest.mark.parametrize("mode", MODES)
def test_mixed_dtypes_match_reference(rng, x_dtype, grid_dtype, go_dtype, mode):
    x, grid = random_case(rng, (2, 3, 7, 6), (5, 4), x_dtype=x_dtype, grid_dtype=grid_dtype)
    go = grad_output_like(rng, x, grid, dtype=go_dtype)
    wide = np.float64 in (x.dtype, grid.dtype)
    # Rounded to float32 at the end of a float64 computation: within an ulp
    # of float32 of the twin's float64-then-rounded results.
    check = (lambda a, b: np.testing.assert_allclose(a, b, rtol=3e-7, atol=1e-12)) if wide \
        else assert_close_f32
    gx, gg = assert_twins(go, x, grid, mode, "reflection", False, check=check)
    assert gx.dtype == x_dtype and gg.dtype == grid_dtype


def test_strided_inputs_match_reference(rng):
    x, grid = random_case(rng, (2, 3, 10, 12), (6, 8))
    go = grad_output_like(rng, x, grid)
    want = reference.grid_sample_backward(go, x, grid, "cubic", "border", False)
    views = {
        "sliced x": (go, np.repeat(x, 2, axis=3)[..., ::2], grid),
        "fortran": (np.asfortranarray(go), np.asfortranarray(x), np.asfortranarray(grid)),
        "reversed grad_output": (np.ascontiguousarray(go[:, :, ::-1])[:, :, ::-1], x, grid),
        "grid sliced": (go, x, np.repeat(grid, 3, axis=-1)[..., ::3]),
    }
    for name, (gv, xv, grv) in views.items():
        got = gridsample.grid_sample_backward(gv, xv, grv, "cubic", "border", False)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, err_msg=name, **EXACT)
    x0, g0, go0 = x.copy(), grid.copy(), go.copy()
    gridsample.grid_sample_backward(go, x, grid, "cubic", "border", False)
    np.testing.assert_array_equal(x, x0)  # inputs are not modified
    np.testing.assert_array_equal(grid, g0)
    np.testing.assert_array_equal(go, go0)


SPECIALS = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e38, 1e7, -1.0, 1.0, 0.0, 0.3])


@pytest.mark.parametrize("mode,padding,align", ALL_OPTIONS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_non_finite_and_huge_grids(rng, mode, padding, align, dtype):
    """Rule 7 for gradients, against the twin and by its letter.

    grid[0, i, j] = (SPECIALS[j], SPECIALS[i]): row 0 and column 0 hold a
    NaN coordinate; columns 1-2 (rows 1-2) an infinite x (y) coordinate.
    """
    x = rng.standard_normal((1, 2, 5, 6)).astype(dtype)
    gx_, gy_ = np.meshgrid(SPECIALS, SPECIALS)
    grid = np.stack([gx_, gy_], -1)[None].astype(dtype)
    go = grad_output_like(rng, x, grid)
    check = (lambda a, b: np.testing.assert_allclose(a, b, **EXACT)) if dtype == np.float64 \
        else assert_close_f32
    gx, gg = assert_twins(go, x, grid, mode, padding, align, check=check)

    nan_point = np.isnan(grid).any(-1)[0]
    # In float32, 3e38 unnormalizes past float32's range: an infinite coordinate.
    infinite = np.isinf(grid)[0] | ((dtype == np.float32) & (np.abs(grid[0]) >= 1e38))
    if padding == "reflection":  # reflecting an infinite point has no image: a NaN point
        nan_point |= infinite.any(-1)
    assert np.isfinite(gx).all()
    # A NaN point adds nothing to dL/dx: zeroing its dL/dy changes nothing.
    go_quiet = go.copy()
    go_quiet[0, :, nan_point] = 0
    np.testing.assert_array_equal(
        gridsample.grid_sample_backward(go_quiet, x, grid, mode, padding, align)[0], gx)
    if mode == "nearest":
        np.testing.assert_array_equal(gg, 0)  # piecewise constant: 0, also at NaN points
        return
    assert np.isnan(gg[0][nan_point]).all()
    assert np.isfinite(gg[0][~nan_point]).all()
    # An infinite coordinate is infinitely far out: its gradient is 0.
    assert (gg[0][infinite & ~nan_point[..., None]] == 0).all()


@pytest.mark.parametrize("first", [np.nan, np.inf])
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_block_starting_without_taps_reads_no_scratch(rng, mode, first):
    """A block whose first point is a NaN point, or has no taps (inf under
    zeros), leaves the start of the kernels' uninitialized scratch unwritten;
    nothing may be derived from it.  Freed NaN-filled buffers before each call
    make stale NaN likely to sit in that scratch."""
    x, grid = random_case(rng, (1, 2, 5, 6), (11, 11))
    grid[0, 0, 0, 0] = first
    go = grad_output_like(rng, x, grid)
    want_x, want_grid = reference.grid_sample_backward(go, x, grid, mode, "zeros", False)
    for _ in range(20):
        junk = [np.full(m, np.nan) for m in range(8, 1200, 2) for _ in range(2)]
        del junk
        gx, gg = gridsample.grid_sample_backward(go, x, grid, mode, "zeros", False)
        np.testing.assert_allclose(gx, want_x, **EXACT)
        np.testing.assert_allclose(gg, want_grid, **EXACT)


@pytest.mark.parametrize("fn", [gridsample.grid_sample_backward, reference.grid_sample_backward])
class TestByHand:
    """1-D ramp x = [10, 20, 30] with align_corners: the coordinate is g + 1 (dx/dg = 1)."""

    x = np.array([[[10.0, 20.0, 30.0]]])

    def run(self, fn, g, mode, padding):
        gx, gg = fn(np.ones((1, 1, 1)), self.x, np.array([[[g]]]), mode, padding, True)
        return gx[0, 0], gg[0, 0, 0]

    def test_linear(self, fn):
        # x = 1.25: y = 0.75 * 20 + 0.25 * 30, dy/dx = 30 - 20.
        gx, gg = self.run(fn, 0.25, "linear", "zeros")
        np.testing.assert_allclose(gx, [0, 0.75, 0.25])
        np.testing.assert_allclose(gg, 10.0)
        # border: at or past an edge the clip is active: slope 0.
        for g in (1.0, -1.0, 1.5, np.inf):
            assert self.run(fn, g, "linear", "border")[1] == 0
        # reflection: x = 2.5 reflects to 1.5 (slope -1) -> dy/dg = -10.
        gx, gg = self.run(fn, 1.5, "linear", "reflection")
        np.testing.assert_allclose(gx, [0, 0.5, 0.5])
        np.testing.assert_allclose(gg, -10.0)
        # x = -0.5 reflects to 0.5: also mirrored, slope -1.
        np.testing.assert_allclose(self.run(fn, -1.5, "linear", "reflection")[1], -10.0)

    def test_non_finite(self, fn):
        gx, gg = self.run(fn, np.nan, "linear", "zeros")
        np.testing.assert_array_equal(gx, 0)
        assert np.isnan(gg)
        gx, gg = self.run(fn, np.inf, "linear", "border")  # reads the last element
        np.testing.assert_array_equal(gx, [0, 0, 1])
        assert gg == 0
        gx, gg = self.run(fn, np.nan, "nearest", "zeros")
        np.testing.assert_array_equal(gx, 0)
        assert gg == 0

    def test_nearest(self, fn):
        gx, gg = self.run(fn, 0.4, "nearest", "zeros")  # x = 1.4 -> index 1
        np.testing.assert_array_equal(gx, [0, 1, 0])
        assert gg == 0

    def test_cubic(self, fn):
        # x = 1, t = 0: weights (0, 1, 0, 0) on taps 0..3 and slopes
        # (k'(1), k'(0), -k'(1), -k'(2)) = (A, 0, -A, 0): dy/dx = A (10 - 30) = 15.
        for padding in ("zeros", "border"):
            gx, gg = self.run(fn, 0.0, "cubic", padding)
            np.testing.assert_allclose(gx, [0, 1, 0], atol=1e-15)
            np.testing.assert_allclose(gg, 15.0)


# --------------------------------------------------------------------------
# Finite differences and the adjoint identity


def safe_grid(rng, in_spatial, out_spatial, align, grid_batch):
    """A grid whose pixel coordinates stay >= 0.15 away from every kink.

    The forward is piecewise polynomial in each coordinate x; its kinks
    (where a central difference straddles a jump of the slope) are at
    integers (linear taps, zeros-padding edges, border's 0 and S-1,
    reflection's 0 and S-1 with align_corners) and half-integers (nearest's
    rounding, reflection's -0.5 and S-0.5 and their mirror images without
    align_corners).  Here x = i + u with u in (0.15, 0.35) or (0.65, 0.85)
    and i from -1 to S (points inside X and up to a pixel outside), so a
    step of eps * dx/dg <= 1e-6 * S/2 never crosses a kink.  Cubic is C^1
    anywhere; the same grid serves it.
    """
    r = len(in_spatial)
    grid = np.empty((grid_batch, *out_spatial, r))
    for a in range(r):
        size = in_spatial[r - 1 - a]
        i = rng.integers(-1, size + 1, (grid_batch, *out_spatial))
        u = rng.uniform(0.15, 0.35, i.shape) + 0.5 * rng.integers(0, 2, i.shape)
        x = i + u
        # Invert rule 2: x = (g + 1) / 2 * (S - 1)  or  x = ((g + 1) * S - 1) / 2.
        grid[..., a] = 2 * x / (size - 1) - 1 if align else (2 * x + 1) / size - 1
    return grid


def finite_difference_grad_grid(go, x, grid, mode, padding, align, channel_last, eps=1e-6):
    """Central differences of L = <dL/dy, grid_sample(x, grid)> per grid element.

    Output point p depends on grid[n, p] only, so moving component a of
    every point at once and summing dL/dy * y over channels per point gives
    all the partial derivatives of component a in two forward calls.
    """
    n = x.shape[0]
    channel_axis = -1 if channel_last else 1
    out = np.empty(grid.shape)
    for a in range(grid.shape[-1]):
        plus, minus = grid.copy(), grid.copy()
        plus[..., a] += eps
        minus[..., a] -= eps
        step = plus[..., a] - minus[..., a]
        ys = [gridsample.grid_sample(x, g, mode, padding, align, channel_last=channel_last)
              for g in (plus, minus)]
        per_point = np.sum(go * (ys[0] - ys[1]), axis=channel_axis)  # (N, *out_spatial)
        if grid.shape[0] != n:  # broadcast grid: the items' contributions add
            per_point = per_point.sum(axis=0, keepdims=True)
        out[..., a] = per_point / step
    return out


FD_CASES = [  # (x shape, output spatial, channel_last, grid batch)
    ((2, 2, 9), (7,), False, 2),
    ((1, 2, 3, 4, 3, 4), (2, 2, 3, 2), False, 1),
    ((2, 4, 5, 4, 3), (3, 2, 4), True, 1),            # 3-D, channel-last, broadcast grid
    ((2, 5, 6, 3), (4, 5), True, 2),                  # 2-D channel-last
]


@pytest.mark.parametrize("case", range(len(FD_CASES)),
                         ids=["1d", "4d", "3d-channel-last-broadcast", "2d-channel-last"])
@pytest.mark.parametrize("mode,padding,align", ALL_OPTIONS)
def test_grad_grid_matches_finite_differences(rng, case, mode, padding, align):
    x_shape, out_spatial, channel_last, gb = FD_CASES[case]
    x = rng.standard_normal(x_shape)
    in_spatial = x_shape[1:-1] if channel_last else x_shape[2:]
    grid = safe_grid(rng, in_spatial, out_spatial, align, gb)
    go = grad_output_like(rng, x, grid, channel_last=channel_last)
    _, gg = gridsample.grid_sample_backward(go, x, grid, mode, padding, align,
                                            channel_last=channel_last)
    fd = finite_difference_grad_grid(go, x, grid, mode, padding, align, channel_last)
    # Linear is exactly linear between kinks (only rounding of y / 2e-6,
    # <= 5e-9 measured, remains); cubic adds eps**2 * y''' / 6, far below that.
    np.testing.assert_allclose(gg, fd, rtol=1e-7, atol=1e-7 * (1 + np.abs(fd).max()))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_grad_x_is_the_adjoint(rng, rank, mode):
    """<dL/dy, forward(x)> = <dL/dx, x>: the forward is linear in x for a fixed grid."""
    x_spatial, out_spatial = [((7,), (9,)), ((5, 6), (4, 7)), ((4, 3, 5), (3, 4, 2)),
                              ((3, 4, 3, 2), (2, 3, 2, 3))][rank - 1]
    for (padding, align), channel_last in itertools.product(
            itertools.product(PADDINGS, ALIGNS), (False, True)):
        x, grid = random_case(rng, (2, 3, *x_spatial), out_spatial,
                              grid_batch=1 if channel_last else 2)
        if channel_last:
            x = np.moveaxis(x, 1, -1)  # a strided view, on purpose
        go = grad_output_like(rng, x, grid, channel_last=channel_last)
        y = gridsample.grid_sample(x, grid, mode, padding, align, channel_last=channel_last)
        gx, _ = gridsample.grid_sample_backward(go, x, grid, mode, padding, align,
                                                channel_last=channel_last,
                                                output_mask=(True, False))
        lhs, rhs = np.vdot(go, y), np.vdot(gx, x)
        scale = np.vdot(np.abs(go), np.abs(y)) + np.vdot(np.abs(gx), np.abs(x))
        assert abs(lhs - rhs) <= 1e-13 * scale, (padding, align, channel_last, lhs, rhs)


@pytest.mark.parametrize("rank,grid_dtype,family", [
    (2, np.float32, "general"), (3, np.float32, "general"), (2, np.float32, "vector"),
    (3, np.float32, "vector"), (2, np.float16, "general"),  # float16 is read as float32
])
@pytest.mark.parametrize("mode", MODES)
def test_grad_x_of_float64_x_on_a_narrower_grid_is_the_adjoint(rng, rank, mode, grid_dtype,
                                                               family):
    """float64 x with a float32 (or float16) grid: the forward forms positions in float32
    (docs/semantics.md §6.2) and sums in float64.  The backward and the push form the
    positions the same way, so dL/dx is the forward's exact adjoint to float64's rounding
    (computed from float64 positions it was off by float32's rounding of them times x's
    slope: ~1e-6 relative on these axes of a few hundred)."""
    from gridsample._engine import use_kernels

    spatial, out = ((37, 300), (20, 30)) if rank == 2 else ((9, 11, 130), (5, 6, 7))
    x = rng.standard_normal((2, 2, *spatial))
    grid = rng.uniform(-1.1, 1.1, (2, *out, rank)).astype(grid_dtype)
    go = rng.standard_normal((2, 2, *out))
    for padding, align in itertools.product(PADDINGS, ALIGNS):
        with use_kernels(family):
            y = gridsample.grid_sample(x, grid, mode, padding, align)
            gx, _ = gridsample.grid_sample_backward(go, x, grid, mode, padding, align,
                                                    output_mask=(True, False))
            pushed = gridsample.grid_push(go, grid, x.shape, mode, padding, align)
        lhs, rhs = np.vdot(go, y), np.vdot(gx, x)
        scale = np.vdot(np.abs(go), np.abs(y)) + np.vdot(np.abs(gx), np.abs(x))
        assert abs(lhs - rhs) <= 1e-13 * scale, (padding, align, lhs, rhs)
        np.testing.assert_array_equal(pushed, gx)


def test_nearest_tie_in_float32_goes_where_the_forward_went():
    """A float32 grid value whose float32 position is exactly 150.5 (a tie, rounded to the
    even 150) while in float64 it lies above 150.5 (151): the backward of float64 x
    scatters to the tap the forward read, as does the push."""
    size, f32 = 300, np.float32
    g0 = f32((2 * 150.5 + 1) / size - 1)
    candidates = g0 + np.arange(-300, 300, dtype=f32) * np.spacing(g0)
    ties = [g for g in candidates
            if ((g + f32(1)) * f32(size) - f32(1)) * f32(0.5) == f32(150.5)
            and ((float(g) + 1) * size - 1) * 0.5 > 150.5]
    assert ties, "no float32 value ties in float32 alone"
    grid = np.array([ties[0], 0.0], f32).reshape(1, 1, 1, 2)
    x = np.zeros((1, 1, 1, size))
    x[0, 0, 0, 150] = 1.0
    assert gridsample.grid_sample(x, grid, "nearest", "zeros", False)[0, 0, 0, 0] == 1.0
    gx, _ = gridsample.grid_sample_backward(np.ones((1, 1, 1, 1)), x, grid, "nearest",
                                            "zeros", False)
    np.testing.assert_array_equal(np.flatnonzero(gx), [150])
    pushed = gridsample.grid_push(np.ones((1, 1, 1, 1)), grid, x.shape, "nearest")
    np.testing.assert_array_equal(pushed, gx)


# --------------------------------------------------------------------------
# Determinism, output_mask, dtypes, shapes, errors


@pytest.mark.parametrize("case", ["2d-image", "3d-single-channel", "batched-broadcast"])
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_bit_identical_at_any_thread_count(rng, case, mode):
    """The 3-D case (one item, one channel, 64,000 points) scatters into
    private per-chunk buffers; the others split by channels or items."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs 2 Numba threads")
    x_shape, out, gb = {
        "2d-image": ((1, 3, 64, 64), (64, 64), None),
        "3d-single-channel": ((1, 1, 20, 40, 40), (40, 40, 40), None),
        "batched-broadcast": ((4, 2, 16, 16), (24, 24), 1),
    }[case]
    x, grid = random_case(rng, x_shape, out, x_dtype=np.float32, grid_dtype=np.float32,
                          grid_batch=gb)
    go = grad_output_like(rng, x, grid)
    before = numba.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 1):
            numba.set_num_threads(threads)
            results.append(gridsample.grid_sample_backward(go, x, grid, mode, "reflection",
                                                           False))
    finally:
        numba.set_num_threads(before)
    for gx, gg in results[1:]:
        np.testing.assert_array_equal(gx, results[0][0])
        np.testing.assert_array_equal(gg, results[0][1])


@pytest.mark.parametrize("shape,out,mode", [((1, 1, 60, 70), (90, 80), "linear"),
                                            ((1, 1, 20, 30, 40), (30, 40, 30), "linear"),
                                            ((1, 3, 60, 70), (90, 80), "linear"),
                                            ((1, 2, 20, 30, 40), (30, 40, 30), "linear"),
                                            ((1, 3, 40, 50), (45, 35), "cubic")])
@pytest.mark.parametrize("padding", ["zeros", "border", "wrap"])
def test_a_single_item_shares_both_vector_passes_at_any_thread_count(rng, monkeypatch, shape,
                                                                     out, mode, padding):
    """One item of one channel, or of a few channel-first ones: the vector kernels run both
    gradients' passes as one set of jobs the threads take in turn
    (gridsample._threads.run_jobs; spied on): the same bits at one and two threads, and the
    general kernels' bits (up to the sign of a zero)."""
    from gridsample import _backward
    from gridsample._engine import use_kernels

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs 2 Numba threads")
    shared = []

    def spy(jobs, threads):
        shared.append(len(jobs))
        return run_jobs(jobs, threads)

    run_jobs = _backward.run_jobs
    monkeypatch.setattr(_backward, "run_jobs", spy)
    x, grid = random_case(rng, shape, out, x_dtype=np.float32, grid_dtype=np.float32)
    go = grad_output_like(rng, x, grid)
    before = numba.get_num_threads()
    results = []
    try:
        for family, threads in (("auto", 1), ("auto", 2), ("general", 2)):
            numba.set_num_threads(threads)
            with use_kernels(family):
                results.append(gridsample.grid_sample_backward(go, x, grid, mode, padding,
                                                               False))
            assert bool(shared) == ((family, threads) == ("auto", 2))
            del shared[:]
    finally:
        numba.set_num_threads(before)
    for gx, gg in results[1:]:
        np.testing.assert_array_equal(gx, results[0][0])
        np.testing.assert_array_equal(gg, results[0][1])


@pytest.mark.parametrize("shape,out,mode,channel_last", [
    ((1, 3, 40, 50), (45, 35), "linear", False),   # both passes as shared jobs at two
    ((1, 1, 40, 50), (45, 35), "cubic", False),    # one plan for both gradients
    ((4, 1, 24, 20), (25, 18), "linear", False),   # a task an item
    ((1, 20, 24, 3), (30, 18), "linear", True),    # channel-last runs
    ((1, 2, 10, 12, 14), (12, 10, 8), "cubic", False),  # the general kernels
])
def test_a_backward_while_the_workers_sleep_runs_its_one_thread_twin(rng, monkeypatch, shape,
                                                                    out, mode, channel_last):
    """Work worth two threads while a worker spins, but not enough to wake one
    (:func:`gridsample._threads.threads_now`), runs the tasks cut for one thread (a twin
    prepared run, kept): the bits of the two-thread run, NaN, ±inf and far points
    included."""
    from gridsample import _backward, _threads

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs 2 Numba threads")
    x, grid = random_case(rng, shape, out, x_dtype=np.float32, grid_dtype=np.float32)
    if channel_last:
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    grid.reshape(-1)[:4] = [np.nan, np.inf, -np.inf, 1e30]
    go = grad_output_like(rng, x, grid, channel_last=channel_last)
    r = grid.shape[-1]
    channels = x.shape[-1] if channel_last else x.shape[1]
    taps = {"linear": 2, "cubic": 4}[mode] ** r
    work = _threads.call_work(grid[..., 0].size, channels * taps, r, cost=3)
    # Two threads' worth, below the sleeping workers' threshold.
    monkeypatch.setenv("GRIDSAMPLE_THREAD_MIN_WORK", str(work // 3))
    monkeypatch.setattr(_threads, "_mark_awake", lambda: None)
    made = []
    twin = _backward.PreparedGradients.__init__

    def spy(self, *args, threads=None):
        made.append(threads)
        twin(self, *args, threads=threads)

    monkeypatch.setattr(_backward.PreparedGradients, "__init__", spy)
    before = numba.get_num_threads()
    results = []
    try:
        numba.set_num_threads(2)
        for awake_until in (float("inf"), 0.0, 0.0):  # awake; asleep (the twin); asleep
            monkeypatch.setattr(_threads._pool, "awake_until", awake_until)
            results.append(gridsample.grid_sample_backward(go, x, grid, mode, "zeros",
                                                           channel_last=channel_last))
    finally:
        numba.set_num_threads(before)
    assert made == [None, 1]  # the prepared run, then its twin, made once
    for gx, gg in results[1:]:
        np.testing.assert_array_equal(gx, results[0][0])
        np.testing.assert_array_equal(gg, results[0][1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,out,channel_last,grid_batch", [
    ((4, 1, 24, 20), (25, 18), False, None),    # a batch: a task an item
    ((1, 1, 150, 140), (130, 128), False, 1),   # one item: two chunks of points (Q = 2)
    ((3, 1, 22, 20), (19, 23), True, 1),        # channel-last, a broadcast grid
])
def test_both_gradients_from_one_plan(rng, monkeypatch, dtype, shape, out, channel_last,
                                      grid_batch):
    """2-D cubic of one channel plans each block once for both gradients
    (gridsample._grad_vector.run_both_grad_blocks; spied on): the bits of the two vector
    passes and of the general kernels, at one and two threads, every padding, NaN, ±inf,
    huge and far points included."""
    from gridsample import _backward
    from gridsample._engine import use_kernels

    x, grid = random_case(rng, shape, out, x_dtype=dtype, grid_dtype=dtype,
                          grid_batch=grid_batch)
    grid.reshape(-1)[:len(SPECIALS)] = SPECIALS  # both components of the first points
    grid.reshape(-1)[-len(SPECIALS):] = SPECIALS[::-1]
    if channel_last:
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    go = grad_output_like(rng, x, grid, channel_last=channel_last)
    ran = []

    def spy(entry):
        def run(*args):
            ran.append(entry)
            return entry(*args)
        return run

    spied = {key: spy(entry) for key, entry in _backward.BOTH_GRADS_ENTRIES.items()}
    counts = (1, 2) if numba.config.NUMBA_NUM_THREADS >= 2 else (1,)
    before = numba.get_num_threads()
    try:
        for padding in ("zeros", "border", "reflection", "wrap", "mirror"):
            kw = dict(channel_last=channel_last)
            with use_kernels("general"):
                want = gridsample.grid_sample_backward(go, x, grid, "cubic", padding, **kw)
            for threads in counts:
                numba.set_num_threads(threads)
                monkeypatch.setattr(_backward, "BOTH_GRADS_ENTRIES", spied)
                with use_kernels("vector"):
                    got = gridsample.grid_sample_backward(go, x, grid, "cubic", padding, **kw)
                assert ran, (padding, threads)
                del ran[:]
                monkeypatch.setattr(_backward, "BOTH_GRADS_ENTRIES", {})
                with use_kernels("vector"):
                    passes = gridsample.grid_sample_backward(go, x, grid, "cubic", padding, **kw)
                for a, b, c in zip(got, passes, want):
                    np.testing.assert_array_equal(a, b, err_msg=padding)
                    np.testing.assert_array_equal(a, c, err_msg=padding)
    finally:
        numba.set_num_threads(before)


def test_both_gradients_from_one_plan_of_a_single_item_view(rng):
    """x as a view of one item whose batch and channel strides are not its size (NumPy
    calls ``img[None, None]`` contiguous with strides 0, so the backward takes it as it is):
    the one-plan entry zeroes and fills dL/dx's buffers by their own item size, not x's
    strides (it zeroed nothing for ``img[None, None]``: garbage; a channel of a batch-1
    array zeroed the next point chunk's buffer too, a race at two threads)."""
    from gridsample._engine import use_kernels

    img = rng.standard_normal((64, 64))
    big = rng.standard_normal((1, 3, 64, 64))
    grid = rng.uniform(-1.3, 1.3, (1, 182, 182, 2))  # 33124 points: two chunks of points
    go = rng.standard_normal((1, 1, 182, 182))
    views = {"img[None, None]": (img[None, None], False),
             "broadcast": (np.broadcast_to(img, (1, 1, 64, 64)), False),
             "a channel": (big[:, 1:2], False),
             "channel-last img[None, :, :, None]": (img[None, :, :, None], True)}
    counts = (1, 2) if numba.config.NUMBA_NUM_THREADS >= 2 else (1,)
    before = numba.get_num_threads()
    try:
        for name, (x, channel_last) in views.items():
            g = np.moveaxis(go, 1, -1) if channel_last else go
            with use_kernels("general"):
                want = gridsample.grid_sample_backward(g, np.ascontiguousarray(x.copy()), grid,
                                                       "cubic", channel_last=channel_last)
            for threads in counts:
                numba.set_num_threads(threads)
                for _ in range(5):
                    with use_kernels("vector"):
                        got = gridsample.grid_sample_backward(g, x, grid, "cubic",
                                                              channel_last=channel_last)
                    np.testing.assert_array_equal(got[0], want[0], err_msg=name)
                    np.testing.assert_array_equal(got[1], want[1], err_msg=name)
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,out,channel_last,mode", [
    ((1, 3, 30, 40), (25, 35), False, "linear"),       # one item: a job per channel (2 threads)
    ((1, 4, 30, 40), (25, 35), False, "linear"),       # channel groups claimed (G = 2 at 2)
    ((1, 1, 200, 200), (190, 190), False, "cubic"),     # one item, one channel: Q = 2 buffers
    ((1, 190, 190, 3), (190, 190), True, "linear"),     # channel-last, one item: Q = 2
    ((3, 2, 20, 24), (18, 22), False, "nearest"),       # a batch
    ((2, 20, 24, 5), (18, 22), True, "linear"),         # a channel-last batch
    ((2, 1, 12, 14, 10), (9, 11, 8), False, "linear"),  # 3-D
])
def test_vector_passes_need_no_zeroed_buffers(rng, monkeypatch, threads, shape, out,
                                              channel_last, mode):
    """The vector scatter's buffers come from ``np.empty`` and each task zeroes its own part
    (gridsample._grad_vector.run_scatter_blocks); the grid gradient's rows are each written
    whole by one task: with every fresh array of the backward filled with NaN, both
    gradients are still the general kernels' (which start from zeroed buffers)."""
    from gridsample import _backward
    from gridsample._engine import use_kernels

    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("needs 2 Numba threads")
    x, grid = random_case(rng, shape, out, x_dtype=np.float32, grid_dtype=np.float32)
    go = grad_output_like(rng, x, grid, channel_last=channel_last)

    made = []

    class NaNEmpty:  # numpy, but np.empty gives arrays full of NaN
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def empty(shape, dtype=float):
            made.append(shape)
            return np.full(shape, np.nan, dtype)

    before = numba.get_num_threads()
    try:
        numba.set_num_threads(threads)
        with use_kernels("general"):
            expected, expected_grid = gridsample.grid_sample_backward(
                go, x, grid, mode, "zeros", channel_last=channel_last)
        monkeypatch.setattr(_backward, "np", NaNEmpty())
        with use_kernels("vector"):
            got, got_grid = gridsample.grid_sample_backward(go, x, grid, mode, "zeros",
                                                            channel_last=channel_last)
    finally:
        numba.set_num_threads(before)
    assert made, "the vector scatter did not run"
    assert not np.isnan(expected).any() and not np.isnan(expected_grid).any()
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got_grid, expected_grid)


@pytest.mark.parametrize("Q", [1, 2, 3])
@pytest.mark.parametrize("chunk", [7, 1 << 16])
def test_per_thread_buffers_are_added_in_order(rng, Q, chunk):
    """The input gradient's per-thread buffers are summed ``((b0 + b1) + b2) ...`` for every
    element, whatever the chunking (NaN, infinities and cancellation included)."""
    from gridsample._grad_kernels import task_sum_buffers

    size = 1000
    bufs = rng.standard_normal(Q * size).astype(np.float32) * np.float32(1e8)
    bufs[::97] = np.nan
    bufs[5::89] = np.inf
    bufs[7::83] = -np.inf
    out = np.full(size, -1.0, np.float32)
    task_sum_buffers(0, -(-size // chunk), bufs, Q, size, chunk, out)
    parts = bufs.reshape(Q, size)
    expected = parts[0].copy()
    for q in range(1, Q):
        expected = expected + parts[q]  # float32, element by element, in buffer order
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("mode", MODES)
def test_output_mask(rng, mode):
    x, grid = random_case(rng, (2, 3, 6, 7), (5, 4))
    go = grad_output_like(rng, x, grid)
    full_x, full_grid = gridsample.grid_sample_backward(go, x, grid, mode)
    only_x = gridsample.grid_sample_backward(go, x, grid, mode, output_mask=(True, False))
    only_grid = gridsample.grid_sample_backward(go, x, grid, mode, output_mask=(False, True))
    assert only_x[1] is None and only_grid[0] is None
    np.testing.assert_array_equal(only_x[0], full_x)
    np.testing.assert_array_equal(only_grid[1], full_grid)
    assert gridsample.grid_sample_backward(go, x, grid, mode, output_mask=(False, False)) == \
        (None, None)
    assert gridsample.grid_sample_backward(go, x, grid, mode, output_mask=[1, 0])[1] is None


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("mode", MODES)
def test_half_types_are_rounded_float32(rng, name, mode):
    """float16/bfloat16 compute in float32 on the widened inputs, then round."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    half = np.dtype(np.float16) if name == "float16" else np.dtype(ml_dtypes.bfloat16)
    x, grid = random_case(rng, (2, 3, 6, 7), (5, 4))
    go = grad_output_like(rng, x, grid)
    x, grid, go = x.astype(half), grid.astype(half), go.astype(half)
    wide = [a.astype(np.float32) for a in (go, x, grid)]
    for grid_dtype in (half, np.dtype(np.float32)):  # a half grid, then a float32 grid
        g = grid.astype(grid_dtype)
        gx, gg = gridsample.grid_sample_backward(go, x, g, mode, "border", False)
        want_x, want_grid = gridsample.grid_sample_backward(*wide, mode, "border", False)
        assert gx.dtype == half and gg.dtype == grid_dtype
        np.testing.assert_array_equal(gx, want_x.astype(half))
        np.testing.assert_array_equal(gg, want_grid.astype(grid_dtype))


@pytest.mark.parametrize("shape,out_spatial,grid_batch", [
    ((0, 2, 4, 4), (3, 3), 0),
    ((0, 2, 4, 4), (3, 3), 1),
    ((2, 0, 4, 4), (3, 3), 2),
    ((2, 2, 4, 4), (0, 3), 2),
    ((2, 2, 0, 4), (0, 3), 1),  # empty input and empty output: fine
])
@pytest.mark.parametrize("channel_last", [False, True])
def test_empty_shapes(shape, out_spatial, grid_batch, channel_last):
    x = np.ones(shape)
    if channel_last:
        x = np.moveaxis(x, 1, -1)
    grid = np.full((grid_batch, *out_spatial, 2), 0.3)
    n, c = shape[:2]
    out_shape = (n, *out_spatial, c) if channel_last else (n, c, *out_spatial)
    for mode in MODES:
        gx, gg = gridsample.grid_sample_backward(np.ones(out_shape), x, grid, mode,
                                                 channel_last=channel_last)
        assert gx.shape == x.shape and gg.shape == grid.shape
        assert gx.dtype == gg.dtype == np.float64
        assert not gx.any() and not gg.any()


X = np.zeros((1, 2, 4, 5))
GRID = np.zeros((1, 3, 3, 2))
GOUT = np.zeros((1, 2, 3, 3))


@pytest.mark.parametrize("x", [X.astype(np.int32), X.astype(np.complex128), X.astype(str),
                               X.astype(bool)], ids=["int", "complex", "str", "bool"])
def test_x_without_gradients_is_a_type_error(x):
    with pytest.raises(GridSampleTypeError, match=r"^x has dtype"):
        gridsample.grid_sample_backward(GOUT, x, GRID, "nearest")


@pytest.mark.parametrize("go,channel_last,exc,words", [
    (np.zeros((1, 2, 3, 4)), False, GridSampleError, ["grad_output", "(1, 2, 3, 4)",
                                                       "(1, 2, 3, 3)"]),
    (GOUT, True, GridSampleError, ["grad_output", "(1, 2, 3, 3)", "(1, 3, 3, 2)"]),
    (np.zeros((2, 3, 3)), False, GridSampleError, ["grad_output", "(2, 3, 3)"]),
    (GOUT.astype(np.int64), False, GridSampleTypeError, ["grad_output", "int64"]),
    (GOUT.astype(np.complex64), False, GridSampleTypeError, ["grad_output", "complex64"]),
])
def test_bad_grad_output(go, channel_last, exc, words):
    x = np.moveaxis(X, 1, -1) if channel_last else X
    with pytest.raises(exc) as info:
        gridsample.grid_sample_backward(go, x, GRID, channel_last=channel_last)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("mask", ["yes", (1, 2, 3), (True,), (True, 2), None, True, (1.0, 0.0),
                                  (1 + 0j, 0), np.array([[True, False], [True, False]]),
                                  np.array([[1], [0]]), [np.array([1, 1]), True]])
def test_bad_output_mask(mask):
    with pytest.raises(GridSampleError, match="output_mask") as info:
        gridsample.grid_sample_backward(GOUT, X, GRID, output_mask=mask)
    assert "pair of bools" in str(info.value)


@pytest.mark.parametrize("mask", [(True, False), (1, 0), np.array([1, 0]),
                                  np.array([True, False]), [np.int64(1), np.bool_(False)]])
def test_output_mask_of_bools_or_zeros_and_ones(mask):
    gx, gg = gridsample.grid_sample_backward(GOUT, X, GRID, output_mask=mask)
    assert gx is not None and gg is None


def test_bad_options_are_the_forwards_errors():
    with pytest.raises(GridSampleError, match="mode"):
        gridsample.grid_sample_backward(GOUT, X, GRID, mode="bilinar")
    with pytest.raises(GridSampleError, match="grid"):
        gridsample.grid_sample_backward(GOUT, X, np.zeros((1, 3, 3, 3)))
