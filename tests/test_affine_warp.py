"""gridsample.affine_warp: bit for bit the pair grid_sample(x, affine_grid(theta)), without
the grid in memory."""

import itertools
import tracemalloc

import ml_dtypes
import numba
import numpy as np
import pytest

import gridsample
import gridsample._affine_warp
from gridsample import GridSampleError, GridSampleTypeError
from gridsample._engine import use_kernels


@pytest.fixture(params=["general", "vector"])
def kernels(request):
    """Both kernel families: under the vector kernels each block of an affine warp makes its
    own points (the compiled affine entries); the general kernels sample bands of the grid."""
    with use_kernels(request.param):
        yield request.param


def pair(x, theta, out_shape, mode, padding, align, **kw):
    """The oracle: the grid made in full, then sampled."""
    theta = np.asarray(theta)
    theta = theta[None] if theta.ndim == 2 else theta
    size = (theta.shape[0], 1, *out_shape)
    grid = gridsample.affine_grid(theta, size, align)
    return gridsample.grid_sample(x, grid, mode, padding, align, **kw)


def random_theta(rng, batch, rank, dtype=np.float32):
    """Rotations, scalings and shears that reach past the edges, with a translation."""
    theta = np.zeros((batch, rank, rank + 1))
    theta[:, :, :rank] = np.eye(rank) * 1.1 + rng.uniform(-0.4, 0.4, (batch, rank, rank))
    theta[:, :, rank] = rng.uniform(-0.3, 0.3, (batch, rank))
    return theta.astype(dtype)


CASES = [
    # rank, mode, padding
    (2, "linear", "zeros"), (2, "nearest", "border"), (2, "cubic", "reflection"),
    (2, "linear", "wrap"), (2, "cubic", "mirror"), (2, "bspline3", "symmetric"),
    (3, "linear", "border"), (3, "nearest", "zeros"), (3, "cubic", "wrap"),
    (3, "bspline2", "mirror"),
]


@pytest.mark.parametrize("rank,mode,padding", CASES)
@pytest.mark.parametrize("align", [False, True])
def test_equal_to_grid_sample_of_affine_grid(rng, kernels, rank, mode, padding, align):
    x = rng.standard_normal((2, 3) + (11, 13, 9)[:rank]).astype(np.float32)
    theta = random_theta(rng, 2, rank)
    out_shape = (7, 12, 10)[:rank]
    got = gridsample.affine_warp(x, theta, out_shape, mode, padding, align)
    np.testing.assert_array_equal(got, pair(x, theta, out_shape, mode, padding, align))


@pytest.mark.parametrize("rank", [2, 3])
def test_many_bands_a_broadcast_theta_and_channel_last(rng, kernels, rank):
    """Outputs larger than one band (each band made and sampled on its own), a theta of
    batch 1 for a batch of 3, channel-last memory and the default out_shape."""
    spatial = (300, 290) if rank == 2 else (12, 90, 80)
    x = rng.standard_normal((3,) + spatial + (2,)).astype(np.float64)
    theta = random_theta(rng, 1, rank, np.float64)[0]  # (r, r + 1): a batch of one
    got = gridsample.affine_warp(x, theta, None, "linear", "reflection", channel_last=True)
    want = pair(x, theta, spatial, "linear", "reflection", False, channel_last=True)
    assert got.shape == want.shape == x.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("theta_dtype", [np.float16, ml_dtypes.bfloat16, np.float64])
def test_theta_dtypes(rng, kernels, theta_dtype):
    """theta's dtype is the grid's, as in affine_grid: half grids are sampled in float32."""
    x = rng.standard_normal((2, 1, 20, 17)).astype(np.float32)
    theta = random_theta(rng, 2, 2).astype(theta_dtype)
    got = gridsample.affine_warp(x, theta, (15, 16), "cubic", "border", True)
    np.testing.assert_array_equal(got, pair(x, theta, (15, 16), "cubic", "border", True))


@pytest.mark.parametrize("dtype", ["uint8", "int16", "complex64", "bool", "float16",
                                   "bfloat16"])
def test_element_types(rng, kernels, dtype):
    x = (rng.uniform(0, 200, (1, 2, 9, 10))).astype(getattr(ml_dtypes, dtype, dtype))
    theta = random_theta(rng, 1, 2)
    got = gridsample.affine_warp(x, theta, (8, 8), "linear", "constant", fill_value=7)
    np.testing.assert_array_equal(got, pair(x, theta, (8, 8), "linear", "constant", False,
                                            fill_value=7))
    assert got.dtype == x.dtype


def test_strings_and_fill_per_channel(rng):
    x = np.array([[["ab", "c"], ["d", "efg"]], [["h", "i"], ["j", "k"]]]).reshape(1, 2, 2, 2)
    theta = np.array([[0.9, 0.5, 0.3], [-0.4, 1.2, 0.1]], np.float32)
    got = gridsample.affine_warp(x, theta, (5, 6), "nearest", "constant",
                                 fill_value=["-", "+"])
    np.testing.assert_array_equal(got, pair(x, theta, (5, 6), "nearest", "constant", False,
                                            fill_value=["-", "+"]))


def test_nan_infinite_and_huge_theta(rng, kernels):
    x = rng.standard_normal((4, 2, 8, 9)).astype(np.float32)
    theta = random_theta(rng, 4, 2)
    theta[0, 0, 0] = np.nan
    theta[1, 1, 2] = np.inf
    theta[2, 0, 1] = -1e30
    theta[3] = 3e38
    for padding in ("zeros", "border", "reflection", "wrap"):
        for mode in ("linear", "nearest", "cubic"):
            got = gridsample.affine_warp(x, theta, (6, 7), mode, padding)
            np.testing.assert_array_equal(got, pair(x, theta, (6, 7), mode, padding, False))


def test_repeated_warps_read_each_calls_theta_and_x(rng, kernels):
    """Calls with the same shapes, dtypes and options reuse their plan (a spatial
    transformer's batches): each still warps its own ``x`` by its own ``theta`` (values
    changed in place between calls too), a 2-D theta and a batch of one included, and a
    change of kernel family between calls is followed."""
    x = rng.standard_normal((4, 2, 9, 8)).astype(np.float32)
    theta = random_theta(rng, 4, 2)
    single = random_theta(rng, 1, 2)[0]
    for step in range(4):
        theta[...] = random_theta(rng, 4, 2)  # in place: the same array, new values
        x[...] = rng.standard_normal(x.shape)
        if step == 2:
            theta[1, 0, 0] = np.nan
        for th in (theta, single, single[None]):
            for mode, padding in (("linear", "zeros"), ("cubic", "border")):
                got = gridsample.affine_warp(x, th, (7, 6), mode, padding)
                np.testing.assert_array_equal(got, pair(x, th, (7, 6), mode, padding, False))
    other = "general" if kernels == "vector" else "vector"
    want = pair(x, theta, (7, 6), "linear", "zeros", False)
    with use_kernels(other):
        np.testing.assert_array_equal(gridsample.affine_warp(x, theta, (7, 6)), want)
    np.testing.assert_array_equal(gridsample.affine_warp(x, theta, (7, 6)), want)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        np.testing.assert_array_equal(gridsample.affine_warp(x, theta, (7, 6)), want)
    finally:
        numba.set_num_threads(threads)


def test_a_kept_warp_is_planned_once_and_its_out_shape_read_each_call(rng, monkeypatch):
    """A repeated call is planned once; ``out_shape`` is read each call (a list changed in
    place gives its new shape), and a sequence that is neither a tuple nor a list (here a
    generator, exhausted after one call) is validated every time."""
    planned = []
    plan_forward = gridsample._affine_warp.plan_forward

    def counted(*args, **kwargs):
        planned.append(args[1].shape)
        return plan_forward(*args, **kwargs)

    monkeypatch.setattr(gridsample._affine_warp, "plan_forward", counted)
    x = rng.standard_normal((2, 1, 9, 8)).astype(np.float32)
    theta = random_theta(rng, 2, 2)
    gridsample._affine_warp._prepared.entries.clear()
    for _ in range(3):
        got = gridsample.affine_warp(x, theta, (5, 4))
    assert len(planned) == 1
    np.testing.assert_array_equal(got, pair(x, theta, (5, 4), "linear", "zeros", False))
    shape = [5, 4]
    gridsample.affine_warp(x, theta, shape)
    shape[1] = 6
    got = gridsample.affine_warp(x, theta, shape)
    np.testing.assert_array_equal(got, pair(x, theta, (5, 6), "linear", "zeros", False))
    sizes = (n for n in (5, 4))
    gridsample.affine_warp(x, theta, sizes)
    with pytest.raises(GridSampleError, match="out_shape"):
        gridsample.affine_warp(x, theta, sizes)


@pytest.mark.parametrize("rank", [2, 3])
def test_vector_kernels_make_no_band(rng, monkeypatch, rank):
    """Under the vector kernels each block makes its own points from theta: the band
    maker (affine_grid's row kernel, called per band) is never called, and the result is
    still the pair's."""
    x = rng.standard_normal((2, 3) + (40, 37, 9)[:rank]).astype(np.float32)
    theta = random_theta(rng, 2, rank)
    out_shape = (45, 33, 11)[:rank]
    want = pair(x, theta, out_shape, "linear", "border", False)

    def no_band(*args):
        raise AssertionError("a band of the grid was made")

    monkeypatch.setattr(gridsample._affine_warp, "_affine_rows", no_band)
    with use_kernels("vector"):
        got = gridsample.affine_warp(x, theta, out_shape, "linear", "border")
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode,padding,channels", [
    ("nearest", "zeros", 3), ("nearest", "border", 1), ("linear", "zeros", 1),
    ("linear", "border", 3), ("cubic", "zeros", 2)])
def test_vector_affine_warps_run_the_grids_form(rng, monkeypatch, mode, padding, channels):
    """Each affine entry is the twin of the entry the same call with a grid runs (one pass,
    row loads or plan and sweep: whichever this CPU picks), and gives the general kernels'
    bits."""
    from gridsample import _engine

    x = rng.standard_normal((2, channels, 40, 37)).astype(np.float32)
    theta = random_theta(rng, 2, 2)
    theta[1, 0, 0] = np.nan
    out_shape = (45, 33)
    with use_kernels("general"):
        want = pair(x, theta, out_shape, mode, padding, False)
    seen = []
    run = _engine.run_claimed  # how the engine runs its vector entries

    def spy(entry, tasks, args, threads, scratch=()):
        seen.append(getattr(entry, "__name__", None) or entry.py_func.__name__)
        return run(entry, tasks, args, threads, scratch)

    monkeypatch.setattr(_engine, "run_claimed", spy)
    with use_kernels("vector"):
        got = gridsample.affine_warp(x, theta, out_shape, mode, padding)
        via_grid = pair(x, theta, out_shape, mode, padding, False)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(via_grid, want)
    fused, from_grid = seen[0], seen[-1]
    assert fused == from_grid + "_affine", seen


def test_memory_is_the_output_alone(rng, kernels):
    """The full grid (2 float64 coordinates per output point: 4x the float32 output here)
    is never allocated: beyond the output, each of the (two) threads holds one band of
    coordinates (general kernels) or one block's (vector kernels) at a time, a small
    fraction of the grid."""
    x = rng.standard_normal((1, 1, 64, 64)).astype(np.float32)
    theta = random_theta(rng, 1, 2, np.float64)
    out_shape = (1500, 1500)
    gridsample.affine_warp(x, theta, (8, 8))  # compile outside the measurement
    threads = numba.get_num_threads()
    numba.set_num_threads(min(2, threads))
    tracemalloc.start()
    try:
        out = gridsample.affine_warp(x, theta, out_shape)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        numba.set_num_threads(threads)
    grid_bytes = out.size * 2 * 8
    assert peak - out.nbytes < grid_bytes / 5
    np.testing.assert_array_equal(out, pair(x, theta, out_shape, "linear", "zeros", False))


def test_empty_output():
    x = np.ones((2, 1, 4, 4), np.float32)
    got = gridsample.affine_warp(x, np.eye(2, 3), (0, 5))
    assert got.shape == (2, 1, 0, 5)
    # no item (a batch of 0 matrices, or of 0 inputs with one matrix), no channel
    for x, theta in [(np.zeros((0, 1, 3, 3), np.float32), np.zeros((0, 2, 3), np.float32)),
                     (np.zeros((0, 2, 3, 3), np.float32), np.eye(2, 3)),
                     (np.zeros((2, 0, 3, 3), np.float32), np.eye(2, 3))]:
        got = gridsample.affine_warp(x, theta)
        assert got.shape == x.shape
        assert got.shape == gridsample.grid_sample(
            x, gridsample.affine_grid(theta if theta.ndim == 3 else theta[None],
                                      (theta.shape[0] if theta.ndim == 3 else 1, 1, 3, 3))).shape


@pytest.mark.parametrize("args,kwargs,words", [
    ((np.ones((1, 1, 4)), np.eye(1, 2)), {}, "x has shape (1, 1, 4)"),
    ((np.ones((1, 1, 4, 4)), np.eye(3, 4)), {}, "theta has shape"),
    ((np.ones((1, 1, 4, 4)), np.ones((1, 2, 2))), {}, "theta has shape"),
    ((np.ones((2, 1, 4, 4)), np.ones((3, 2, 3))), {}, "theta has batch size 3"),
    ((np.ones((1, 1, 4, 4)), np.eye(2, 3), (4, -1)), {}, "out_shape=(4, -1)"),
    ((np.ones((1, 1, 4, 4)), np.eye(2, 3), (5,)), {}, "out_shape=(5,)"),
    ((np.ones((1, 1, 4, 4)), np.eye(2, 3), "ab"), {}, "out_shape='ab'"),
    ((np.ones((1, 1, 4, 4)), np.eye(2, 3), (3, 3), "bogus"), {}, "mode"),
    ((np.ones((1, 1, 4, 4)), np.eye(2, 3)), {"channel_last": 2}, "channel_last"),
])
def test_errors_name_the_argument(args, kwargs, words):
    with pytest.raises(GridSampleError) as info:
        gridsample.affine_warp(*args, **kwargs)
    assert words in str(info.value)


@pytest.mark.parametrize("out_shape", [(5.7, 9), (True, 9), ("5", "9"), b"59", "59", 59,
                                       np.array(3)])
def test_out_shape_takes_integers_only(out_shape):
    """As affine_grid's size: no silent int() of floats, bools, strings or bytes."""
    with pytest.raises(GridSampleTypeError, match="out_shape="):
        gridsample.affine_warp(np.ones((1, 3, 6, 7), np.float32), np.eye(2, 3), out_shape)


def test_theta_type_error():
    with pytest.raises(GridSampleTypeError, match="theta has dtype int64"):
        gridsample.affine_warp(np.ones((1, 1, 4, 4)), np.eye(2, 3, dtype=np.int64))


@pytest.mark.parametrize("rank", [2, 3])
def test_channel_last_with_many_channels(rng, kernels, rank):
    """Channel-last memory of many contiguous channels: the point-at-a-time entries of the
    affine tables (from their channel counts on) and the channel-at-a-time ones below."""
    spatial = (21, 19) if rank == 2 else (9, 8, 7)
    modes = ("linear", "nearest", "cubic") if rank == 2 else ("linear", "nearest")
    theta = random_theta(rng, 2, rank)
    for channels, mode, padding in itertools.product((5, 8, 19), modes, ("zeros", "border")):
        x = rng.standard_normal((2,) + spatial + (channels,)).astype(np.float32)
        got = gridsample.affine_warp(x, theta, None, mode, padding, channel_last=True)
        want = pair(x, theta, spatial, mode, padding, False, channel_last=True)
        np.testing.assert_array_equal(got, want)
