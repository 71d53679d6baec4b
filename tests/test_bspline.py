"""B-spline modes (degrees 2-7) and the prefilter, against SciPy and the reference twin.

SciPy's ``map_coordinates(order=n)`` is the oracle for degrees 2-5, float64,
to 1e-10 (both sides sum O(n^r) terms of unit size in float64; the IIR
prefilters agree to ~1e-14).  Two known differences are avoided by the
shapes chosen, not by tolerance: SciPy's half-sample ("reflect") filter
start is exact only for lines longer than a few dozen samples (its causal
sum covers one period; ours and the dense solve of the reference twin are
exact at any length), so those lines are >= 40 samples; SciPy leaves a line
of one sample unfiltered, as we do.
"""

import numpy as np
import pytest

import gridsample as gs
from gridsample import reference as ref
from gridsample._engine import use_kernels

scipy_ndimage = pytest.importorskip("scipy.ndimage")

# padding -> SciPy's mode of the same boundary
SCIPY_MODES = {"zeros": "grid-constant", "constant": "grid-constant", "border": "nearest",
               "mirror": "mirror", "symmetric": "reflect", "wrap": "grid-wrap"}
SHAPES = {1: (41,), 2: (40, 42), 3: (40, 40, 41)}


def _pixel_grid(coords):
    """SciPy coordinates ``(r, P)`` (array axis order) as a pixel grid ``(1, P, 1.., r)``."""
    r, p = coords.shape
    return np.ascontiguousarray(coords[::-1].T).reshape((1, p) + (1,) * (r - 1) + (r,))


def _coords(rng, shape, points):
    """Points inside, near and past every edge, and some exactly on samples."""
    coords = np.stack([rng.uniform(-7, s + 6, points) for s in shape])
    coords[:, : points // 8] = np.round(coords[:, : points // 8])
    return coords


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("degree", [2, 3, 4, 5])
@pytest.mark.parametrize("padding", list(SCIPY_MODES))
@pytest.mark.parametrize("prefilter", [True, False])
def test_matches_scipy_map_coordinates(rank, degree, padding, prefilter):
    rng = np.random.default_rng([rank, degree, len(padding), prefilter])
    shape = SHAPES[rank]
    x = rng.standard_normal(shape)
    coords = _coords(rng, shape, 150)
    cval = 1.25 if padding == "constant" else 0.0
    expected = scipy_ndimage.map_coordinates(x, coords, order=degree, mode=SCIPY_MODES[padding],
                                             cval=cval, prefilter=prefilter)
    extra = {"fill_value": cval} if padding == "constant" else {}
    got = gs.grid_sample(x[None, None], _pixel_grid(coords), f"bspline{degree}", padding,
                         grid_units="pixels", prefilter=prefilter, **extra)
    np.testing.assert_allclose(got.reshape(-1), expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("degree", [2, 3, 4, 5])
@pytest.mark.parametrize("padding", ["zeros", "border", "mirror", "symmetric", "wrap"])
def test_spline_coefficients_match_scipy_spline_filter(degree, padding):
    rng = np.random.default_rng(degree)
    x = rng.standard_normal((2, 3, 40, 1, 43))
    got = gs.spline_coefficients(x, degree, padding)
    for n in range(2):
        for c in range(3):
            expected = scipy_ndimage.spline_filter(x[n, c], degree, mode=SCIPY_MODES[padding])
            np.testing.assert_allclose(got[n, c], expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("padding", ["mirror", "symmetric", "wrap", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_prefilter_once_sample_many(padding, align_corners):
    """Sampling spline_coefficients(x) without the prefilter = sampling x with it."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, 9, 12))
    grid = rng.uniform(-1.6, 1.6, (1, 5, 7, 2))
    c = gs.spline_coefficients(x, 3, padding, align_corners=align_corners)
    direct = gs.grid_sample(x, grid, "bspline3", padding, align_corners)
    through = gs.grid_sample(c, grid, "bspline3", padding, align_corners, prefilter=False)
    np.testing.assert_allclose(through, direct, rtol=0, atol=1e-12)


@pytest.mark.parametrize("degree", [2, 3, 4, 5, 6, 7])
@pytest.mark.parametrize("padding", ["mirror", "symmetric", "wrap", "border", "zeros"])
def test_interpolates_the_samples(degree, padding):
    """With the prefilter the spline passes through every sample (pixel units, integers)."""
    rng = np.random.default_rng(degree)
    x = rng.standard_normal((1, 1, 13, 10))
    iy, ix = np.meshgrid(np.arange(13.0), np.arange(10.0), indexing="ij")
    grid = np.stack([ix, iy], axis=-1)[None]
    got = gs.grid_sample(x, grid, f"bspline{degree}", padding, grid_units="pixels")
    np.testing.assert_allclose(got, x, rtol=0, atol=1e-11)


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
@pytest.mark.parametrize("degree", [2, 3, 6, 7])
@pytest.mark.parametrize("prefilter", [True, False])
def test_matches_reference_twin(rank, degree, prefilter):
    """Every rank, degrees SciPy lacks, a padding per axis, NaN/inf/huge points."""
    if rank == 4 and degree > 3:
        pytest.skip("(8 taps)**4 per point: the twin's loop is too slow for a unit test")
    rng = np.random.default_rng([rank, degree, prefilter])
    shape = (1, 2) + (5, 7, 4, 3)[:rank]
    x = rng.standard_normal(shape)
    grid = rng.uniform(-1.7, 1.7, (1,) + (3,) * rank + (rank,))
    flat = grid.reshape(-1, rank)
    flat[0, 0], flat[1, -1], flat[2, 0] = np.nan, np.inf, 1e30
    paddings = ("wrap", "border", "symmetric", "zeros", "mirror", "reflection")
    padding = tuple(paddings[(k + degree) % len(paddings)] for k in range(rank))
    for align in (False, True):
        got = gs.grid_sample(x, grid, f"bspline{degree}", padding, align, prefilter=prefilter)
        want = ref.grid_sample(x, grid, f"bspline{degree}", padding, align, prefilter=prefilter)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)
        g_out = rng.standard_normal(got.shape)
        for a, b in zip(gs.grid_sample_backward(g_out, x, grid, f"bspline{degree}", padding,
                                                align, prefilter=prefilter),
                        ref.grid_sample_backward(g_out, x, grid, f"bspline{degree}", padding,
                                                 align, prefilter=prefilter)):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)


@pytest.mark.parametrize("degree", [2, 3, 5])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection", "mirror", "symmetric",
                                     "wrap", ("wrap", "border")])
@pytest.mark.parametrize("prefilter", [True, False])
def test_push_is_the_adjoint(degree, padding, prefilter):
    rng = np.random.default_rng(degree)
    x = rng.standard_normal((2, 3, 8, 11))
    grid = rng.uniform(-1.5, 1.5, (2, 6, 5, 2))
    v = rng.standard_normal((2, 3, 6, 5))
    mode = f"bspline{degree}"
    pushed = gs.grid_push(v, grid, x.shape, mode, padding, prefilter=prefilter)
    sampled = gs.grid_sample(x, grid, mode, padding, prefilter=prefilter)
    assert np.sum(pushed * x) == pytest.approx(np.sum(v * sampled), rel=1e-12, abs=1e-12)
    count = gs.grid_count(grid, (8, 11), mode, padding, prefilter=prefilter)
    np.testing.assert_allclose(count, gs.grid_push(np.ones((2, 1, 6, 5)), grid, (8, 11), mode,
                                                   padding, prefilter=prefilter), atol=1e-14)


@pytest.mark.parametrize("degree", [2, 3, 4])
@pytest.mark.parametrize("padding", ["zeros", "constant", "border", "wrap", "reflection"])
def test_gradients_match_finite_differences(degree, padding):
    rng = np.random.default_rng(degree + 10)
    x = rng.standard_normal((1, 2, 7, 9))
    grid = rng.uniform(-1.3, 1.3, (1, 4, 5, 2))
    extra = {"fill_value": [0.5, -2.0]} if padding == "constant" else {}
    mode = f"bspline{degree}"
    g_out = rng.standard_normal((1, 2, 4, 5))
    gx, gg = gs.grid_sample_backward(g_out, x, grid, mode, padding, **extra)

    def loss(xv, gv):
        return np.sum(g_out * gs.grid_sample(xv, gv, mode, padding, **extra))

    dx, dg, eps = rng.standard_normal(x.shape), rng.standard_normal(grid.shape), 1e-6
    fd_x = (loss(x + eps * dx, grid) - loss(x - eps * dx, grid)) / (2 * eps)
    fd_g = (loss(x, grid + eps * dg) - loss(x, grid - eps * dg)) / (2 * eps)
    assert np.sum(gx * dx) == pytest.approx(fd_x, rel=1e-7, abs=1e-7)
    assert np.sum(gg * dg) == pytest.approx(fd_g, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("degree", [3, 5])
@pytest.mark.parametrize("prefilter", [True, False])
def test_double_backward_matches_finite_differences(degree, prefilter):
    """Directional derivatives of the backward's two results against finite differences."""
    rng = np.random.default_rng(degree)
    x = rng.standard_normal((1, 2, 6, 8))
    grid = rng.uniform(-1.2, 1.2, (1, 3, 4, 2))
    g_out = rng.standard_normal((1, 2, 3, 4))
    p, q = rng.standard_normal(x.shape), rng.standard_normal(grid.shape)
    mode, opts = f"bspline{degree}", dict(padding_mode="border", prefilter=prefilter)

    def m(gv, xv, gridv):  # M = <P, dL/dx> + <Q, dL/dgrid>
        a, b = gs.grid_sample_backward(gv, xv, gridv, mode, **opts)
        return np.sum(p * a) + np.sum(q * b)

    d_gout, d_x, d_grid = gs.grid_sample_double_backward(p, q, g_out, x, grid, mode, **opts)
    eps = 1e-6
    for value, got, which in ((g_out, d_gout, 0), (x, d_x, 1), (grid, d_grid, 2)):
        d = rng.standard_normal(value.shape)
        args = [g_out, x, grid]
        args[which] = value + eps * d
        plus = m(*args)
        args[which] = value - eps * d
        fd = (plus - m(*args)) / (2 * eps)
        assert np.sum(got * d) == pytest.approx(fd, rel=1e-5, abs=1e-6)


# float32 pixel coordinates where x + 1/2 rounds across an integer: just below a half-integer
# (0.49999997 + 0.5 rounds to 1) and odd integers in [2**23, 2**24) (a tie, rounded to even);
# the even-degree anchor floor(x + 1/2) must be taken exactly there.
_ROUNDING_POINTS = [0.49999997, 2.4999998, -0.50000006, 8388611.0, 12345679.0, 16777213.0,
                    -8388611.0, 3.5, -2.5]
# Beyond 2**24 a float32 tap index f + k rounds: the kernels and the twin form each tap from
# the anchor directly (docs/semantics.md, cubic's rule).
_BEYOND_POINTS = [16777218.0, 3e7, -3e7, 1.5e9]


@pytest.mark.parametrize("degree", [2, 4])
@pytest.mark.parametrize("padding", ["wrap", "mirror", "border"])
def test_even_degrees_where_x_plus_half_rounds(degree, padding):
    """Against SciPy with the same coordinates in float64 (where x + 1/2 is exact): float64
    x takes the fraction of its float32 position exactly, so the values agree to float64's
    rounding (adding the half in float32 lost ~1e-8); the anchor taken from a rounded
    x + 1/2 gave values off by up to 0.3 (weights outside [0, 1])."""
    x = np.random.default_rng(degree).standard_normal(7)
    pts = np.array(_ROUNDING_POINTS, np.float32)
    got = gs.grid_sample(x[None, None], pts.reshape(1, -1, 1), f"bspline{degree}", padding,
                         grid_units="pixels", prefilter=False)[0, 0]
    want = scipy_ndimage.map_coordinates(x, pts.astype(np.float64)[None], order=degree,
                                         mode=SCIPY_MODES[padding], prefilter=False)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)


@pytest.mark.parametrize("degree", [2, 3, 4, 5, 6, 7])
@pytest.mark.parametrize("padding", ["wrap", "border", "zeros", "symmetric"])
def test_far_float32_points_match_the_twin(degree, padding):
    """The kernels and the reference twin read the same taps where x + 1/2 or f + k round."""
    x = np.random.default_rng(degree).standard_normal(7)
    pts = np.array(_ROUNDING_POINTS + _BEYOND_POINTS, np.float32).reshape(1, -1, 1)
    args = (f"bspline{degree}", padding)
    got = gs.grid_sample(x[None, None], pts, *args, grid_units="pixels", prefilter=False)
    want = ref.grid_sample(x[None, None], pts, *args, grid_units="pixels", prefilter=False)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)


@pytest.mark.parametrize("degree", [2, 4])
def test_even_degrees_of_float64_x_on_a_float32_grid_match_the_twin(degree):
    """float64 x on a float32 grid: the fraction of the float32 position is taken exactly
    and the half added in float64, in the forward, both gradients and the second order as
    in the twin (adding it in float32 put them ~2e-8 apart, and the second order one
    float32 ulp from the grid gradient it differentiates)."""
    rng = np.random.default_rng(degree)
    x = rng.standard_normal((1, 2, 9, 8))
    grid = rng.uniform(-0.5, 8.5, (1, 5, 6, 2)).astype(np.float32)
    go = rng.standard_normal((1, 2, 5, 6))
    kw = dict(grid_units="pixels", prefilter=False)
    args = (f"bspline{degree}", "mirror")
    np.testing.assert_allclose(gs.grid_sample(x, grid, *args, **kw),
                               ref.grid_sample(x, grid, *args, **kw), rtol=0, atol=1e-13)
    gx, gg = gs.grid_sample_backward(go, x, grid, *args, **kw)
    rx, rg = ref.grid_sample_backward(go, x, grid, *args, **kw)
    np.testing.assert_allclose(gx, rx, rtol=0, atol=1e-13)
    np.testing.assert_allclose(gg, rg, rtol=1e-6)  # rounded to the grid's float32
    # M = <Q, grad_grid>: dM/dG is the grid gradient's map applied to Q (linear in G), so
    # it equals the grid gradient of G = 1 ... at one point, Q picking its first axis.
    g1 = grid[:, :1, :1]
    one = np.ones((1, 1, 1, 1))
    q = np.array([1.0, 0.0]).reshape(1, 1, 1, 2)
    xs = x[:, :1]
    want = ref.grid_sample_backward(one, xs, g1, *args, **kw)[1]  # float32, as the call's
    got = gs.grid_sample_double_backward(None, q, one, xs, g1, *args, **kw)[0]
    assert np.float32(got.item()) == want[0, 0, 0, 0]


@pytest.mark.xdist_group("vector-cubic-2d")  # beside cubic's vector tests: compiled once
def test_bspline3_vector_and_general_kernels_agree():
    """bspline3 runs on cubic's kernels: both families give the same bits."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 30, 31)).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, (1, 17, 19, 2)).astype(np.float32)
    grid[0, 0, :3] = [np.nan, np.inf], [1e30, -1e30], [-np.inf, 0.5]
    for padding in ("zeros", "border", "reflection", "mirror", "wrap"):
        with use_kernels("vector"):
            vec = gs.grid_sample(x, grid, "bspline3", padding)
        with use_kernels("general"):
            gen = gs.grid_sample(x, grid, "bspline3", padding)
        np.testing.assert_array_equal(vec, gen)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int16", "uint8", "bool", "complex128"])
def test_dtypes_follow_the_float64_result(dtype):
    """Other element types: the float64 result cast as every mode's results are."""
    rng = np.random.default_rng(1)
    base = rng.uniform(0, 200, (1, 2, 9, 10))
    if dtype == "complex128":
        base = base + 1j * rng.uniform(-5, 5, base.shape)
    x = base.astype(dtype)
    grid = rng.uniform(-1.1, 1.1, (1, 6, 7, 2))
    got = gs.grid_sample(x, grid, "bspline3", "mirror")
    assert got.dtype == x.dtype
    exact = gs.grid_sample(x.astype(np.complex128 if dtype == "complex128" else np.float64),
                           grid, "bspline3", "mirror")
    if dtype in ("float32", "float16"):
        tol = {"float32": 1e-4, "float16": 0.25}[dtype]
        np.testing.assert_allclose(got.astype(np.float64), exact, rtol=2e-3, atol=tol)
    elif dtype == "complex128":
        np.testing.assert_allclose(got, exact, rtol=0, atol=1e-12)
    else:
        want = ref.grid_sample(x, grid, "bspline3", "mirror")
        np.testing.assert_array_equal(got, want)


def test_channel_last_and_displacement():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 7, 8, 3))
    flow = rng.uniform(-2, 2, (2, 5, 6, 2))
    got = gs.grid_sample(x, flow, "bspline4", "wrap", channel_last=True, grid_units="pixels",
                         displacement=True)
    iy, ix = np.meshgrid(np.arange(5.0), np.arange(6.0), indexing="ij")
    absolute = flow + np.stack([ix, iy], axis=-1)
    want = gs.grid_sample(np.moveaxis(x, -1, 1), absolute, "bspline4", "wrap",
                          grid_units="pixels")
    np.testing.assert_allclose(got, np.moveaxis(want, 1, -1), rtol=0, atol=1e-12)


def test_prefilter_leaves_the_input_alone():
    x = np.random.default_rng(3).standard_normal((1, 1, 6, 6))
    before = x.copy()
    gs.grid_sample(x, np.zeros((1, 2, 2, 2)), "bspline5", "constant", fill_value=2.0)
    gs.grid_sample_backward(np.ones((1, 1, 2, 2)), x, np.zeros((1, 2, 2, 2)), "bspline5")
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("call, match", [
    (lambda: gs.spline_coefficients(np.ones((1, 1, 4)), 8), "degree=8"),
    (lambda: gs.spline_coefficients(np.ones((1, 1, 4)), 2.0), "degree=2.0"),
    (lambda: gs.spline_coefficients(np.ones((1, 4)), 3), "shape"),
    (lambda: gs.spline_coefficients(np.array([[["a"]]]), 3), "dtype"),
    (lambda: gs.grid_sample(np.array([[["a", "b"]]]), np.zeros((1, 1, 1)), "bspline3"),
     "strings"),
    (lambda: gs.grid_sample(np.ones((1, 1, 4)), np.zeros((1, 1, 1)), "bspline3", cubic_a=-0.5),
     "cubic_a"),
    (lambda: gs.grid_sample(np.ones((1, 1, 4)), np.zeros((1, 1, 1)), "bspline9"), "bspline9"),
    (lambda: gs.grid_sample(np.ones((1, 1, 4)), np.zeros((1, 1, 1)), "bspline3",
                            prefilter="yes"), "prefilter"),
    (lambda: gs.grid_sample(np.ones((1, 1) + (2,) * 6), np.zeros((1,) + (1,) * 6 + (6,)),
                            "bspline7"), "taps per output point"),
])
def test_bad_arguments_name_themselves(call, match):
    with pytest.raises((gs.GridSampleError, gs.GridSampleTypeError), match=match):
        call()


@pytest.mark.parametrize("fill", [np.nan, np.inf, -np.inf, [1.0, np.nan]])
def test_a_non_finite_fill_with_the_prefilter_is_refused(fill):
    """The prefilter runs over the fill's samples too (semantics §4.2), so one NaN or
    infinite fill would make every coefficient, and every output, NaN: refused by name, on
    every path that prefilters, and the input left alone."""
    x = np.random.default_rng(5).standard_normal((1, 2, 8, 9))
    before = x.copy()
    grid = np.zeros((1, 3, 3, 2))
    calls = [
        lambda: gs.grid_sample(x, grid, "bspline3", "constant", fill_value=fill),
        lambda: gs.grid_sample(x, grid, "bspline5", ("constant", "mirror"), fill_value=fill),
        lambda: gs.grid_sample_backward(np.ones((1, 2, 3, 3)), x, grid, "bspline2",
                                        "constant", fill_value=fill),
        lambda: gs.affine_warp(x, np.eye(2, 3), None, "bspline4", "constant",
                               fill_value=fill),
    ]
    for call in calls:
        with pytest.raises(gs.GridSampleError, match="fill_value=.*not finite.*prefilter=False"):
            call()
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("dtype, fill", [("bfloat16", np.nan), ("bfloat16", 1e39),
                                         ("float16", 1e6), ("complex64", complex(np.inf, 0))])
def test_a_fill_not_finite_in_the_dtype_of_x_is_refused_with_the_prefilter(dtype, fill):
    """What the prefilter reads is the fill cast to X's dtype (§6.1): past float16's or
    bfloat16's range that is ±inf, and bfloat16 (an ml_dtypes type) is no NumPy float."""
    x = np.zeros((1, 1, 8, 8), np.complex64 if dtype == "complex64" else gs_dtype(dtype))
    with pytest.raises(gs.GridSampleError, match=f"not finite in x's dtype {dtype}"):
        gs.grid_sample(x, np.zeros((1, 2, 2, 2)), "bspline3", "constant", fill_value=fill)


def gs_dtype(name):
    import ml_dtypes

    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


def test_a_non_finite_fill_with_the_prefilter_is_refused_by_dask_and_torch():
    da = pytest.importorskip("dask.array")
    torch = pytest.importorskip("torch")
    import gridsample.dask as gd
    import gridsample.torch as gt

    x = np.zeros((1, 1, 8, 8))
    grid = np.zeros((1, 2, 2, 2))
    with pytest.raises(gs.GridSampleError, match="not finite"):
        gd.grid_sample(da.from_array(x, chunks=4), grid, "bspline3", "constant",
                       fill_value=np.nan)
    for device in ("cpu", "meta"):  # eager, and the shape inference of traced calls
        with pytest.raises(gs.GridSampleError, match="not finite"):
            gt.grid_sample(torch.zeros(1, 1, 8, 8, device=device),
                           torch.zeros(1, 2, 2, 2, device=device), "bspline3", "constant",
                           False, fill_value=float("inf"))


def test_a_non_finite_fill_marks_the_points_outside_without_the_prefilter():
    """The way the refusal points to: coefficients once (SciPy's spline_filter), then a NaN
    fill reaches exactly the points with a tap outside; the others are SciPy's
    map_coordinates of those coefficients."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((40, 42))
    coords = _coords(rng, x.shape, 200)
    c = gs.spline_coefficients(x[None, None], 3, "constant")
    got = gs.grid_sample(c, _pixel_grid(coords), "bspline3", "constant", fill_value=np.nan,
                         grid_units="pixels", prefilter=False).reshape(-1)
    # cubic B-spline taps: floor(u) - 1 ... floor(u) + 2 on each axis
    first = np.floor(coords) - 1
    outside = np.any((first < 0) | (first + 3 > np.array(x.shape)[:, None] - 1), axis=0)
    assert outside.any() and (~outside).any()
    np.testing.assert_array_equal(np.isnan(got), outside)
    coefficients = scipy_ndimage.spline_filter(x, 3, mode="grid-constant")
    expected = scipy_ndimage.map_coordinates(coefficients, coords[:, ~outside], order=3,
                                             mode="grid-constant", prefilter=False)
    np.testing.assert_allclose(got[~outside], expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("prefilter", [True, False])
def test_torch_operators_with_autograd(prefilter):
    """gridsample.torch: the NumPy results, and gradients / second derivatives that check."""
    torch = pytest.importorskip("torch")
    import gridsample.torch as gt

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, 2, 7, 8, dtype=torch.float64, generator=gen, requires_grad=True)
    grid = (torch.rand(1, 4, 5, 2, dtype=torch.float64, generator=gen) * 2.4 - 1.2)
    grid.requires_grad_()
    y = gt.grid_sample(x, grid, "bspline3", "mirror", align_corners=False, prefilter=prefilter)
    np.testing.assert_array_equal(
        y.detach().numpy(), gs.grid_sample(x.detach().numpy(), grid.detach().numpy(),
                                           "bspline3", "mirror", prefilter=prefilter))
    assert torch.autograd.gradcheck(
        lambda a, b: gt.grid_sample(a, b, "bspline4", "border", align_corners=True,
                                    prefilter=prefilter), (x, grid))
    assert torch.autograd.gradgradcheck(
        lambda a, b: gt.grid_sample(a, b, "bspline3", "wrap", align_corners=True,
                                    prefilter=prefilter), (x, grid))
    v = torch.randn(1, 2, 4, 5, dtype=torch.float64, generator=gen, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda a, b: gt.grid_push(a, b, (7, 8), "bspline3", "symmetric", prefilter=prefilter),
        (v, grid))


def test_dask_samples_coefficients():
    """gridsample.dask with prefilter=False equals the in-memory result bit for bit."""
    da = pytest.importorskip("dask.array")
    import gridsample.dask as gd

    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 30, 28))
    grid = rng.uniform(-1.3, 1.3, (1, 12, 14, 2))
    c = gs.spline_coefficients(x, 4, "wrap")
    for padding in ("wrap", "zeros", ("border", "mirror")):
        want = gs.grid_sample(c, grid, "bspline4", padding, prefilter=False)
        got = gd.grid_sample(da.from_array(c, chunks=(1, 1, 10, 9)), grid, "bspline4", padding,
                             prefilter=False, chunks=(5, 6)).compute()
        np.testing.assert_array_equal(got, want)


# The chunked prefilter filters each chunk with halos of decay_length(n) samples (|z|^D <
# 2**-60): the truncated tails lie below float64 round-off, so what is left is the round-off
# of summing the same terms in another order.  Measured (these cases and degrees 4 and 6):
# at most 5.6e-16 of the largest coefficient (2.5 ulp); the bound leaves 18x of headroom.
DASK_RTOL = 1e-14
DASK_PADDINGS = ("mirror", "symmetric", "reflection", "wrap", "zeros", "border", "constant",
                 ("wrap", "border"))


def _relative_error(got, want):
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


@pytest.mark.parametrize("degree, size", [(2, 60), (3, 70), (5, 110), (7, 140)])
def test_dask_chunked_coefficients_equal_the_whole_arrays(degree, size):
    """Chunks with halos (split axes, chunks narrower than the halo merged, the far side
    for wrap, pre-padding at the array's own ends) give the whole array's coefficients."""
    pytest.importorskip("dask.array")
    import dask.array as da

    from gridsample._plan import plan_forward
    from gridsample._prefilter import coefficients, decay_length
    from gridsample.dask._spline import chunked_coefficients

    rng = np.random.default_rng(degree)
    x = rng.standard_normal((1, 2, size, size + 7))
    depth = decay_length(degree)
    chunks = (1, 1, (depth, size - depth - 5, 5), size // 3 + 1)  # 5: merged into its neighbour
    fill = [2.5, -1.0]
    for padding in DASK_PADDINGS:
        for align in (False, True):
            plan, _, _ = plan_forward(x, np.zeros((1, 1, 1, 2)), f"bspline{degree}", padding,
                                      align, False, fill_value=fill if padding == "constant" else 0)
            want, pads = coefficients(x, degree, plan.axis_paddings, align, False, plan.fill)
            got, got_pads = chunked_coefficients(da.from_array(x, chunks=chunks), plan, 1)
            assert got_pads == pads and got.shape == want.shape
            assert _relative_error(got.compute(), want) < DASK_RTOL, (padding, align)


@pytest.mark.parametrize("degree", [3, 5])
def test_dask_prefilter_equals_the_in_memory_result(degree):
    """grid_sample and affine_warp on Dask arrays with prefilter=True: every padding, mixed
    per-axis paddings, channel-last, float32 and uint8, 3-D, NaN/inf/huge grid values, a
    Dask grid over a NumPy x (no region reads: the coefficients exist only as chunks)."""
    pytest.importorskip("dask.array")
    import dask.array as da

    import gridsample.dask as gd

    rng = np.random.default_rng(11)
    mode = f"bspline{degree}"
    x = rng.standard_normal((2, 3, 120, 100))
    grid = rng.uniform(-1.2, 1.2, (2, 30, 40, 2))
    grid[0, 0, :3, 0] = [np.nan, np.inf, -1e30]
    xd = da.from_array(x, chunks=(1, 2, 60, 50))
    for padding in DASK_PADDINGS:
        kw = {"fill_value": [1.5, -2.0, 0.25]} if padding == "constant" else {}
        for align in (False, True):
            want = gs.grid_sample(x, grid, mode, padding, align, **kw)
            got = gd.grid_sample(xd, grid, mode, padding, align, chunks=(15, 20), **kw)
            np.testing.assert_allclose(got.compute(), want, rtol=0,
                                       atol=DASK_RTOL * np.abs(x).max())
    # channel-last float32, a Dask grid
    xl = np.moveaxis(x, 1, -1).astype(np.float32)
    want = gs.grid_sample(xl, grid.astype(np.float32), mode, "border", channel_last=True)
    got = gd.grid_sample(da.from_array(xl, chunks=(1, 40, 50, 3)),
                         da.from_array(grid.astype(np.float32), chunks=(1, 15, 20, 2)), mode,
                         "border", channel_last=True).compute()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(x).max())
    # uint8: rounded and saturated as in memory (equal but for a rare tie of round-off)
    x8 = rng.integers(0, 256, (1, 1, 120, 100), dtype=np.uint8)
    want = gs.grid_sample(x8, grid[:1], mode, "mirror")
    got = gd.grid_sample(da.from_array(x8, chunks=(1, 1, 60, 50)), grid[:1], mode,
                         "mirror").compute()
    assert got.dtype == np.uint8 and np.abs(got.astype(int) - want).max() <= 1
    # 3-D and affine_warp
    x3 = rng.standard_normal((1, 1, 80, 70, 75))
    theta = np.array([[[0.9, 0.1, 0.0, 0.05], [-0.1, 0.95, 0.05, 0.0],
                       [0.0, 0.05, 1.05, -0.1]]])
    grid3 = gs.affine_grid(theta, (1, 1, 40, 35, 30))
    for padding in ("zeros", "wrap", "symmetric"):
        want = gs.grid_sample(x3, grid3, mode, padding)
        x3d = da.from_array(x3, chunks=(1, 1, 40, 70, 38))
        got = gd.affine_warp(x3d, theta, (40, 35, 30), mode, padding, chunks=(20, 18, 15))
        np.testing.assert_allclose(got.compute(), want, rtol=0, atol=DASK_RTOL)
        got = gd.grid_sample(x3d, grid3, mode, padding, chunks=(20, 18, 15))
        np.testing.assert_allclose(got.compute(), want, rtol=0, atol=DASK_RTOL)


def test_onnx_and_cann_refuse_the_splines():
    from gridsample import cann

    with pytest.raises(gs.GridSampleError, match="bspline3"):
        cann.grid_sample(np.ones((1, 1, 4, 4)), np.zeros((1, 2, 2, 2)), "bspline3")


def test_readme_example_runs_as_written():
    """The README's B-spline block runs; sampling the coefficients equals prefiltering."""
    import pathlib
    import re

    readme = (pathlib.Path(__file__).parents[1] / "README.md").read_text()
    section = readme.split("## B-splines", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    scope = {"np": np, "gridsample": gs}
    exec(compile(block, "README.md", "exec"), scope)
    np.testing.assert_allclose(scope["y1"], scope["y"], rtol=0, atol=1e-5)


@pytest.mark.parametrize("degree", [2, 3, 5, 7])
@pytest.mark.parametrize("padding, bound", [("mirror", "dct1"), ("symmetric", "dct2"),
                                            ("wrap", "dft")])
@pytest.mark.parametrize("prefilter", [True, False])
def test_matches_torch_interpol_grid_pull(degree, padding, bound, prefilter):
    """torch-interpol's ``grid_pull`` (voxel coordinates, its bounds) where conventions match."""
    torch = pytest.importorskip("torch")
    interpol = pytest.importorskip("interpol")
    rng = np.random.default_rng(degree)
    x = rng.standard_normal((1, 2, 23, 19))
    pixels = np.stack([rng.uniform(-6, 24, (7, 9)), rng.uniform(-6, 28, (7, 9))], -1)[None]
    got = gs.grid_sample(x, pixels, f"bspline{degree}", padding, grid_units="pixels",
                         prefilter=prefilter)
    voxels = torch.from_numpy(np.ascontiguousarray(pixels[..., ::-1]))  # (y, x): array order
    want = interpol.grid_pull(torch.from_numpy(x), voxels, interpolation=degree, bound=bound,
                              extrapolate=True, prefilter=prefilter).numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


def test_pre_padded_coefficients_too_large_say_why():
    """Zeros padding pre-pads every axis by 12 samples on each side: a tiny x of 10 axes
    would need ~546 TB of coefficients, more than any address space; the error says what
    and why, not only NumPy's "Unable to allocate"."""
    x = np.zeros((1, 1) + (2,) * 9 + (4,), np.float32)
    grid = np.zeros((1,) + (1,) * 10 + (10,), np.float32)
    with pytest.raises(MemoryError, match=r"x's B-spline coefficients \(x pre-padded by \[24,"):
        gs.grid_sample(x, grid, "bspline2")
