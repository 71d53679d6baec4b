"""The options beyond ONNX (issue 15): paddings per axis, fill values, Keys' coefficient,
pixel units, displacements, push and count.

Oracles: ``scipy.ndimage.map_coordinates`` for the paddings (orders 0 and 1, pixel
units, float64), onnxruntime's ``Resize`` for ``cubic_a``, torch-interpol for push
and count, the adjoint identity, and the NumPy reference twin (which shares no
arithmetic with the kernels) for cubic, rank 4, per-axis tuples, gradients and the
non-finite rules.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gridsample
from gridsample import GridSampleError, _engine, reference
from gridsample._options import parse_mode
from gridsample._registry import MODES, PADDINGS, mode_of, taps_per_point

NEW = ("constant", "mirror", "symmetric", "wrap")
ALL = tuple(p.name for p in PADDINGS)
FAMILIES = ("general", "nd")  # the vector kernels: test_vector_kernels.py
#: scipy.ndimage's name of each padding that it has exactly (docs/semantics.md §3.3).
SCIPY = {"constant": "grid-constant", "zeros": "grid-constant", "border": "nearest",
         "mirror": "mirror", "symmetric": "reflect", "wrap": "grid-wrap"}
SPECIALS = [np.nan, np.inf, -np.inf, 1e30, -1e30, 3e7, -2.5e6, 0.5, -1.5]


def _fill(padding, channels):
    return dict(fill_value=np.linspace(-2.0, 3.0, channels).tolist()) \
        if padding == "constant" else {}


def _pixel_case(rng, rank, channels=2):
    spatial = (7, 6, 5)[:rank]
    out = (4, 3, 5)[:rank]
    x = rng.standard_normal((2, channels) + spatial)
    # Far outside on both sides, several periods away, and inside.
    grid = rng.uniform(-2.5, 2.5, (2,) + out + (rank,)) * np.array(spatial[::-1])
    return x, grid


@pytest.mark.parametrize("padding", sorted(SCIPY))
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("mode,order", [("linear", 1), ("nearest", 0)])
def test_paddings_match_scipy_map_coordinates(rng, padding, rank, mode, order):
    scipy_ndimage = pytest.importorskip("scipy.ndimage")
    x, grid = _pixel_case(rng, rank)
    kw = _fill(padding, 2)
    for family in FAMILIES:
        with _engine.use_kernels(family):
            got = gridsample.grid_sample(x, grid, mode, padding, grid_units="pixels", **kw)
        for n in range(2):
            for c in range(2):
                coords = np.moveaxis(grid[n], -1, 0)[::-1]  # SciPy lists axes outermost first
                want = scipy_ndimage.map_coordinates(
                    x[n, c], coords, order=order, mode=SCIPY[padding], prefilter=False,
                    cval=kw["fill_value"][c] if kw else 0.0)
                np.testing.assert_allclose(got[n, c], want, rtol=0, atol=1e-12, err_msg=family)


def _twin_case(rng, rank, mode):
    spatial = (5, 4, 3, 3)[:rank]
    out = {1: (9,), 2: (3, 4), 3: (3, 2, 2), 4: (2, 2, 2, 2)}[rank]
    x = rng.standard_normal((2, 3) + spatial)
    grid = rng.uniform(-2.6, 2.6, (2, *out, rank))
    flat = grid.reshape(-1)
    flat[: len(SPECIALS)] = SPECIALS
    return x, grid


def _paddings(rank):
    """Each padding for every axis, and a mixed tuple (no zeros next to a filled constant)."""
    mixed = tuple(("wrap", "constant", "mirror", "symmetric", "border")[k % 5] for k in range(rank))
    return [*NEW, mixed]


@pytest.mark.parametrize("mode", [m.name for m in MODES])
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_forward_backward_and_push_match_the_twin(rng, mode, rank):
    if taps_per_point(parse_mode(mode), rank) > 64:
        rank = 3  # the twin loops over every tap combination: 3-D covers the same paths
    # A B-spline's twin solves for its coefficients densely where the kernels filter
    # recursively (gain up to ~20): round-off 1e-12 relative becomes ~1e-11 absolute.
    tol = 1e-10 if mode_of(parse_mode(mode)).spline else 1e-12
    x, grid = _twin_case(rng, rank, mode)
    for padding in _paddings(rank):
        for align in (False, True):
            kw = dict(_fill("constant" if "constant" in np.atleast_1d(padding) else "", 3),
                      cubic_a=-0.5 if mode == "cubic" else -0.75)
            want = reference.grid_sample(x, grid, mode, padding, align, **kw)
            for family in FAMILIES:
                with _engine.use_kernels(family):
                    got = gridsample.grid_sample(x, grid, mode, padding, align, **kw)
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol,
                                           err_msg=f"{padding} {family}")
            gout = rng.standard_normal(want.shape)
            gx, gg = gridsample.grid_sample_backward(gout, x, grid, mode, padding, align, **kw)
            rx, rg = reference.grid_sample_backward(gout, x, grid, mode, padding, align, **kw)
            np.testing.assert_allclose(gx, rx, rtol=1e-10, atol=1e-10, err_msg=str(padding))
            np.testing.assert_allclose(gg, rg, rtol=1e-9, atol=1e-9, err_msg=str(padding))
            kw.pop("fill_value", None)
            pushed = gridsample.grid_push(gout, grid, x.shape, mode, padding, align, **kw)
            np.testing.assert_array_equal(pushed, gridsample.grid_sample_backward(
                gout, x, grid, mode, padding, align, output_mask=(True, False), **kw)[0])


@pytest.mark.parametrize("padding", ALL + (("wrap", "border"),))
@pytest.mark.parametrize("mode", [m.name for m in MODES])
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_push_is_the_adjoint_of_sampling(rng, padding, mode, rank):
    if taps_per_point(parse_mode(mode), rank) > 64:
        rank = 3
    if isinstance(padding, tuple):
        padding = (padding * rank)[:rank]
    spatial = (6, 5, 4, 3)[:rank]
    out = (5, 4, 3, 2)[:rank]
    x = rng.standard_normal((2, 3) + spatial)
    grid = rng.uniform(-1.8, 1.8, (2, *out, rank))
    v = rng.standard_normal((2, 3) + out)
    sampled = gridsample.grid_sample(x, grid, mode, padding)  # a fill of 0: the linear part
    pushed = gridsample.grid_push(v, grid, x.shape, mode, padding)
    lhs, rhs = np.vdot(pushed, x), np.vdot(v, sampled)
    tol = 1e-10 if mode_of(parse_mode(mode)).spline else 1e-12  # the prefilter's round-off
    assert abs(lhs - rhs) <= tol * max(1.0, abs(rhs))
    count = gridsample.grid_count(grid, spatial, mode, padding)
    ones = gridsample.grid_push(np.ones((2, 1) + out), grid, (2, 1) + spatial, mode, padding)
    np.testing.assert_array_equal(count, ones)


def test_push_and_count_are_deterministic_across_threads(rng):
    from gridsample._threads import num_threads

    if num_threads() < 2:
        pytest.skip("needs 2 threads")
    import numba

    x = rng.standard_normal((1, 1, 300, 200))
    grid = rng.uniform(-1.1, 1.1, (1, 250, 260, 2))
    v = rng.standard_normal((1, 1, 250, 260))
    results = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        try:
            results.append((gridsample.grid_push(v, grid, x.shape, "cubic", "wrap"),
                            gridsample.grid_count(grid, (300, 200), "linear", "mirror")))
        finally:
            numba.set_num_threads(num_threads())
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bound,padding", [("replicate", "border"), ("dct2", "symmetric"),
                                           ("dct1", "mirror"), ("dft", "wrap"),
                                           ("zero", "zeros")])
@pytest.mark.parametrize("order,mode", [(1, "linear"), (0, "nearest")])
def test_pull_push_count_match_torch_interpol(rng, bound, padding, order, mode):
    torch = pytest.importorskip("torch")
    interpol = pytest.importorskip("interpol")
    x = rng.standard_normal((2, 3, 7, 9))
    pts = rng.uniform(-3.0, 11.0, (2, 5, 6, 2))  # interpol: voxel coordinates, (i, j) order
    v = rng.standard_normal((2, 3, 5, 6))
    t = {k: torch.from_numpy(a) for k, a in (("x", x), ("pts", pts), ("v", v))}
    opts = dict(interpolation=order, bound=bound, extrapolate=True)
    grid = pts[..., ::-1].copy()  # gridsample: grid[..., 0] is the innermost axis
    ours = dict(mode=mode, padding_mode=padding, grid_units="pixels")
    np.testing.assert_allclose(gridsample.grid_sample(x, grid, **ours),
                               interpol.grid_pull(t["x"], t["pts"], **opts).numpy(), atol=1e-12)
    np.testing.assert_allclose(gridsample.grid_push(v, grid, (7, 9), **ours),
                               interpol.grid_push(t["v"], t["pts"], shape=(7, 9), **opts).numpy(),
                               atol=1e-12)
    np.testing.assert_allclose(gridsample.grid_count(grid, (7, 9), **ours),
                               interpol.grid_count(t["pts"], shape=(7, 9), **opts).numpy(),
                               atol=1e-12)


@pytest.mark.parametrize("a", [-0.5, -0.75, -0.6])
def test_cubic_a_matches_onnxruntime_resize(rng, a):
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = rng.standard_normal((1, 2, 6, 7)).astype(np.float32)
    out = (9, 11)
    node = helper.make_node("Resize", ["X", "", "", "sizes"], ["Y"], mode="cubic",
                            cubic_coeff_a=a, exclude_outside=0,
                            coordinate_transformation_mode="align_corners")
    graph = helper.make_graph(
        [node], "resize", [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("sizes", TensorProto.INT64, [4], [1, 2, *out])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
    # align_corners Resize reads input position i * (in - 1) / (out - 1) on each axis;
    # it clamps each tap to the edge: border padding of the tap indices.
    ys = np.arange(out[0]) * (6 - 1) / (out[0] - 1)
    xs = np.arange(out[1]) * (7 - 1) / (out[1] - 1)
    grid = np.stack(np.meshgrid(xs, ys), -1)[None]
    got = gridsample.grid_sample(x.astype(np.float64), grid, "cubic", "border",
                                 grid_units="pixels", cubic_a=a)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    del onnx


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("mode", [m.name for m in MODES])
def test_displacement_and_pixels_equal_absolute_normalized_grids(rng, align, mode):
    x = rng.standard_normal((2, 3, 8, 10)).astype(np.float32)
    disp = rng.uniform(-0.4, 0.4, (2, 5, 7, 2)).astype(np.float32)
    identity = gridsample.affine_grid(np.tile(np.eye(2, 3, dtype=np.float32), (2, 1, 1)),
                                      (2, 3, 5, 7), align)
    for padding in ("zeros", "wrap", ("mirror", "border")):
        want = gridsample.grid_sample(x, disp + identity, mode, padding, align)
        got = gridsample.grid_sample(x, disp, mode, padding, align, displacement=True)
        np.testing.assert_array_equal(got, want)
    # Pixel units: the same positions, element coordinates (float64: the conversion is exact
    # to round-off, so the results agree to round-off away from nearest's ties).
    xd = x.astype(np.float64)
    g = rng.uniform(-1.2, 1.2, (2, 5, 7, 2))
    size = np.array([10, 8])
    pixels = (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2
    for padding in ("zeros", "border", "wrap"):
        want = gridsample.grid_sample(xd, g, mode, padding, align)
        got = gridsample.grid_sample(xd, pixels, mode, padding, align, grid_units="pixels")
        np.testing.assert_allclose(got, want, atol=1e-12)
    # Displacement in pixels: base is each point's own index.
    pix_disp = rng.uniform(-3, 3, (2, 8, 10, 2))
    jj, ii = np.meshgrid(np.arange(10), np.arange(8))
    absolute = pix_disp + np.stack([jj, ii], -1)
    np.testing.assert_array_equal(
        gridsample.grid_sample(xd, pix_disp, mode, "wrap", grid_units="pixels",
                               displacement=True),
        gridsample.grid_sample(xd, absolute, mode, "wrap", grid_units="pixels"))


def test_defaults_and_constant_zero_are_the_onnx_results_bit_for_bit(rng):
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, (2, 6, 5, 2)).astype(np.float32)
    for mode in ("linear", "nearest", "cubic"):
        base = gridsample.grid_sample(x, grid, mode, "zeros")
        same = [gridsample.grid_sample(x, grid, mode, "zeros", fill_value=0, cubic_a=-0.75,
                                       grid_units="normalized", displacement=False),
                gridsample.grid_sample(x, grid, mode, "constant"),
                gridsample.grid_sample(x, grid, mode, ("constant", "zeros")),
                gridsample.grid_sample(x, grid, mode, (0, 3))]
        for other in same:
            np.testing.assert_array_equal(other, base)


def test_fill_is_cast_like_results_and_never_leaks_inside(rng):
    x = np.full((1, 2, 4, 5), 7, np.uint8)
    grid = np.array([[[[0.0, 0.0], [5.0, 0.0], [1.1, 0.0]]]])  # inside, outside, partly
    out = gridsample.grid_sample(x, grid, "linear", "constant", True, fill_value=[300, -4.6])
    # Inside: exactly 7 whatever the fill; outside: the fill saturated / rounded to uint8.
    assert out[0, :, 0, 0].tolist() == [7, 7]
    assert out[0, :, 0, 1].tolist() == [255, 0]
    # Part inside: 7 and the fill mixed by the weights of the taps.
    xf = np.full((1, 1, 4, 5), 7.0)
    mixed = gridsample.grid_sample(xf, grid, "linear", "constant", True, fill_value=1e6)
    assert mixed[0, 0, 0, 0] == 7.0
    # x = 4.2 with align_corners: tap 4 (weight 0.8) inside, tap 5 (0.2) reads the fill
    np.testing.assert_allclose(mixed[0, 0, 0, 2], 7.0 * 0.8 + 1e6 * 0.2, rtol=1e-9)
    # A non-finite fill (NaN marks what lies outside): the points whose taps are all inside
    # stay exact; every point with a tap outside is non-finite (docs/semantics.md §3.4).
    for fill in (np.inf, np.nan):
        got = gridsample.grid_sample(xf, grid, "cubic", "constant", True, fill_value=fill)
        assert got[0, 0, 0, 0] == 7.0 and not np.isfinite(got[0, 0, 0, 1:]).any()


def test_a_fill_past_float16_range_is_infinite_without_a_warning():
    """§6.1: the fill is cast as results are; past float16's range that is ±inf, quietly
    (NumPy's cast warns of the overflow)."""
    x = np.ones((1, 2, 4), np.float16)
    grid = np.array([[[9.0]]], np.float32)  # entirely outside
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = gridsample.grid_sample(x, grid, "nearest", "constant", fill_value=[1e6, -1e6])
    assert out.dtype == np.float16 and out.ravel().tolist() == [np.inf, -np.inf]


def test_bool_x_takes_a_bool_fill_and_other_x_refuse_it():
    """``True`` fills a bool ``x`` (as ``1`` does); for numbers it is likely a slip (an
    option's flag given in the wrong place) and stays refused."""
    x = np.array([[[False, True, False]]])
    grid = np.array([[[-2.0], [0.0], [2.0]]])  # outside, inside, outside (1-D)
    got = gridsample.grid_sample(x, grid, "nearest", "constant", True, fill_value=True)
    np.testing.assert_array_equal(got, [[[True, True, True]]])
    np.testing.assert_array_equal(
        got, reference.grid_sample(x, grid, "nearest", "constant", True, fill_value=1))
    with pytest.raises(TypeError, match="fill_value=True must be a number"):
        gridsample.grid_sample(x.astype(np.float32), grid, "nearest", "constant",
                               fill_value=True)


def test_strings_take_fill_and_the_new_paddings():
    x = np.array([[["a", "b", "c", "d"]]])
    grid = np.array([[[-1.0], [1.0], [-1.7], [2.6]]])
    wrap = gridsample.grid_sample(x, grid, "nearest", "wrap", True)
    # align_corners: -1.7 -> -1.05 -> index -1 -> 3; 2.6 -> 5.4 -> 5 -> 1
    assert wrap.tolist() == [[["a", "d", "d", "b"]]]
    const = gridsample.grid_sample(x, np.array([[[5.0], [0.0]]]), "nearest", "constant",
                                   fill_value="?")
    assert const.tolist() == [[["?", "c"]]]


@pytest.mark.parametrize("padding", NEW)
def test_huge_and_non_finite_grids_follow_the_rules(rng, padding):
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    gx_, gy_ = np.meshgrid(SPECIALS, SPECIALS)
    grid = np.stack([gx_, gy_], -1)[None].astype(np.float32)
    kw = _fill(padding, 2)
    for mode in ("linear", "nearest", "cubic"):
        want = reference.grid_sample(x, grid, mode, padding, **kw)
        got = gridsample.grid_sample(x, grid, mode, padding, **kw)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=mode)
        inf_x = got[0, 0, SPECIALS.index(0.5), 1]  # the point (inf, 0.5)
        if padding == "constant":  # +-inf reads the fill
            assert inf_x == np.float32(kw["fill_value"][0])
        else:  # an infinite coordinate has no image under an index padding: NaN
            assert np.isnan(inf_x)


@pytest.mark.parametrize("call,words", [
    (lambda: gridsample.grid_push(np.zeros((1, 1, 2)), np.zeros((1, 2, 1)), (1, 1, 0.5)),
     ["shape", "non-negative ints"]),
    (lambda: gridsample.grid_push(np.zeros((1, 1, 2)), np.zeros((1, 2, 1)), (2, 1, 4)),
     ["shape=(2, 1, 4)", "N=2", "values has N=1"]),
    (lambda: gridsample.grid_push(np.zeros((1, 1, 2)), np.zeros((1, 2, 1)), (4, 4)),
     ["2 entries", "3 (N, C, d1, ..., dr) or 1"]),
    (lambda: gridsample.grid_push(np.zeros((1, 1, 2), np.int32), np.zeros((1, 2, 1)), (4,)),
     ["values has dtype int32"]),
    (lambda: gridsample.grid_push(np.zeros((1, 1, 3)), np.zeros((1, 2, 1)), (4,)),
     ["values has shape (1, 1, 3)", "(1, 1, 2)"]),
    (lambda: gridsample.grid_count(np.zeros((1, 2, 1)), "4"), ["shape='4'", "sequence of ints"]),
    (lambda: gridsample.grid_push(np.zeros((1, 1, 2)), np.zeros((1, 2, 1)), (4,),
                                  padding_mode="wrapped"), ["padding_mode='wrapped'"]),
])
def test_push_errors_name_the_argument(call, words):
    with pytest.raises((GridSampleError, TypeError)) as info:
        call()
    for word in words:
        assert word in str(info.value)


def test_onnx_and_cann_keep_their_specifications_options():
    from gridsample import cann

    x, grid = np.zeros((1, 1, 3, 3), np.float32), np.zeros((1, 2, 2, 2), np.float32)
    for padding in ("wrap", "constant", ("zeros", "zeros")):
        with pytest.raises(GridSampleError, match="padding_mode"):
            cann.grid_sample(x, grid, padding_mode=padding)
    with pytest.raises(GridSampleError, match="valid code"):
        cann.grid_sampler_2d(x, grid, 0, 6, False)
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    from gridsample.onnx import OPS

    node = helper.make_node("GridSample", ["X", "G"], ["Y"], padding_mode="wrap")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape),
                      helper.make_tensor_value_info("G", TensorProto.FLOAT, grid.shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    with pytest.raises(GridSampleError, match="not defined by ONNX GridSample-22"):
        ReferenceEvaluator(model, new_ops=OPS).run(None, {"X": x, "G": grid})


def test_readme_examples_run_as_written():
    """The README's API blocks (the first defines ``x`` and ``np`` for the extras' block) run,
    and the extras' block gives what its comments say."""
    import pathlib
    import re

    readme = (pathlib.Path(__file__).parents[1] / "README.md").read_text()
    api = readme.split("## API", 1)[1].split("## B-splines", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", api, re.S)
    assert len(blocks) == 2
    scope = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), scope)
    assert scope["y"].shape == scope["z"].shape == (2, 3, 64, 360)
    assert scope["splat"].shape == (2, 3, 64, 360) and scope["density"].shape == (2, 1, 64, 360)
    # The density is the push of ones: the weight every element receives, 32 x 180 points.
    np.testing.assert_allclose(scope["density"].sum(axis=(1, 2, 3)), 32 * 180, rtol=1e-5)


@pytest.mark.parametrize("kw", [
    dict(padding_mode="wrap"),
    dict(padding_mode=("wrap", "symmetric"), mode="cubic", cubic_a=-0.5),
    dict(padding_mode="constant", fill_value=[1, 2, 3]),
    dict(padding_mode="mirror", mode="nearest"),
    dict(padding_mode="border", grid_units="pixels"),
    dict(padding_mode="wrap", displacement=True),
    dict(padding_mode=("wrap", "constant"), fill_value=-1.0, grid_units="pixels",
         displacement=True),
], ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_dask_equals_in_memory_bit_for_bit(rng, kw):
    da = pytest.importorskip("dask.array")
    import gridsample.dask as gdask

    x = rng.standard_normal((2, 3, 20, 17)).astype(np.float32)
    g = rng.uniform(-1.5, 1.5, (2, 9, 11, 2)).astype(np.float32)
    g[0, 0, 0], g[0, 0, 1], g[1, 2, 3] = [np.inf, 0.3], [1e30, np.nan], [-1e30, 2e8]
    if kw.get("grid_units") == "pixels":
        g = g * 10
    want = gridsample.grid_sample(x, g, **kw)
    xd = da.from_array(x, chunks=(1, 2, 7, 6))
    for grid in (g, da.from_array(g, chunks=(1, 4, 5, 2))):  # footprints planned, then read
        got = gdask.grid_sample(xd, grid, **kw).compute(scheduler="sync")
        np.testing.assert_array_equal(got, want)
    got = gdask.grid_sample(x, da.from_array(g, chunks=(1, 4, 5, 2)), **kw)  # region reads
    np.testing.assert_array_equal(got.compute(scheduler="sync"), want)


def test_dask_affine_warp_takes_paddings_and_fill(rng):
    da = pytest.importorskip("dask.array")
    import gridsample.dask as gdask

    x = rng.standard_normal((2, 3, 20, 17)).astype(np.float32)
    theta = np.array([[[0.9, 0.3, 0.1], [-0.2, 1.1, 0.4]]] * 2, np.float32)
    xd = da.from_array(x, chunks=(1, 2, 7, 6))
    for kw in (dict(padding_mode="wrap"), dict(padding_mode=("mirror", "constant"),
                                               fill_value=5, mode="cubic", cubic_a=-0.5)):
        want = gridsample.grid_sample(x, gridsample.affine_grid(theta, (2, 3, 15, 13)), **kw)
        got = gdask.affine_warp(xd, theta, (15, 13), **kw).compute(scheduler="sync")
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("channels", [2, 6])  # planar and interleaved channel-last sweeps
def test_channel_last_equals_channel_first(rng, channels):
    x = rng.standard_normal((2, channels, 9, 8))
    grid = rng.uniform(-1.6, 1.6, (2, 5, 7, 2))
    xl = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    fill = np.linspace(-1, 1, channels).tolist()
    for mode in ("linear", "nearest", "cubic"):
        for padding, kw in (("wrap", {}), (("symmetric", "mirror"), {}),
                            ("constant", {"fill_value": fill})):
            first = gridsample.grid_sample(x, grid, mode, padding, **kw)
            last = gridsample.grid_sample(xl, grid, mode, padding, channel_last=True, **kw)
            np.testing.assert_array_equal(np.moveaxis(last, -1, 1), first)
