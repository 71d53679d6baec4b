"""2-D points planned and summed in one loop: a single linear channel
(gridsample._vector.sum_linear_2d_one) and up to three nearest channels
(gridsample._vector.sum_nearest_2d_one): the same bits as the planned sweep
(``GRIDSAMPLE_ONE_PASS=off``), run exactly where it applies.

Both forms compute the same operations in the same order, so the results are compared as
bits (a NaN as any NaN, see test_row_loads.py) and each against the general kernels.
"""

from __future__ import annotations

import numpy as np
import pytest

import gridsample
from conftest import ALIGNS
from gridsample import _api, _engine
from gridsample._errors import GridSampleError
from test_vector_kernels import PADDINGS, nasty_grid

# Beside the 2-D linear vector tests (conftest): each variant compiles once a run.
pytestmark = pytest.mark.xdist_group("vector-linear-2d")

_UINT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


@pytest.fixture(autouse=True)
def _user_kernels(monkeypatch):
    monkeypatch.setenv("GRIDSAMPLE_KERNELS", "auto")
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", "gather")  # the one pass serves gathers only


def spy_runs(monkeypatch, entries) -> list:
    """Whether each vector launch that follows ran one of ``entries``."""
    ran = []
    launch = _engine.run_claimed  # how the engine runs its vector entries
    entries = set(entries)

    def spy(entry, tasks, args, threads, scratch=()):
        if scratch:
            ran.append(entry in entries)
        return launch(entry, tasks, args, threads, scratch)

    monkeypatch.setattr(_engine, "run_claimed", spy)
    return ran


def _spy(monkeypatch) -> list:
    """Whether each vector launch that follows ran a one-pass entry."""
    return spy_runs(monkeypatch, _engine.ONE_PASS_ENTRIES.values())


def sample(monkeypatch, setting, *args, **kwargs):
    monkeypatch.setenv("GRIDSAMPLE_ONE_PASS", setting)
    return gridsample.grid_sample(*args, **kwargs)


def assert_same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    numbers = ~np.isnan(a)
    bits = _UINT[a.dtype]
    np.testing.assert_array_equal(a[numbers].view(bits), b[numbers].view(bits))


@pytest.mark.parametrize("mode,channels", [("linear", 1), ("nearest", 1), ("nearest", 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("align", ALIGNS)
@pytest.mark.parametrize("pad", PADDINGS)
def test_one_pass_gives_the_planned_sweeps_bits(rng, monkeypatch, pad, align, dtype, mode,
                                                channels):
    """Every padding (the scalar loops where the explicit vectors do not serve: float64, the
    other paddings), 99 points an item: whole groups and a tail."""
    x = rng.standard_normal((2, channels, 13, 17)).astype(dtype)
    x.reshape(-1)[[0, 5, 40, 300]] = [np.inf, -np.inf, np.nan, -0.0]
    grid = nasty_grid(rng, (2, 9, 11, 2), dtype)
    kwargs = dict(padding_mode=pad, align_corners=align)
    if pad == "constant":
        kwargs["fill_value"] = [2.5, -1.0, 7.0][:channels]
    ran = _spy(monkeypatch)
    one = sample(monkeypatch, "on", x, grid, mode, **kwargs)
    planned = sample(monkeypatch, "off", x, grid, mode, **kwargs)
    assert ran == [True, False]
    assert_same_bits(one, planned)
    with _engine.use_kernels("general"):
        np.testing.assert_array_equal(one, gridsample.grid_sample(x, grid, mode, **kwargs))


@pytest.mark.parametrize("pad", ["zeros", "border", "constant"])
@pytest.mark.parametrize("align", ALIGNS)
def test_linear_groups_inside_and_beside_edges(rng, monkeypatch, pad, align):
    """Whole groups of points whose taps all lie inside X (the nasty grids above put a
    non-finite or far point in nearly every group), beside groups that hold a point at an
    edge, outside, NaN or infinite: the planned sweep's bits."""
    x = rng.standard_normal((2, 1, 23, 37)).astype(np.float32)
    grid = rng.uniform(-0.9, 0.9, (2, 16, 40, 2)).astype(np.float32)
    flat = grid.reshape(2, -1, 2)
    flat[:, 40:200:23] = nasty_grid(rng, (2, 7, 1, 2), np.float32).reshape(2, 7, 2)
    flat[:, 300] = (1.0, -1.0)  # corners: one row's or column's taps outside
    flat[:, 301] = (-1.0, 1.0)
    fill = dict(fill_value=2.5) if pad == "constant" else {}
    ran = _spy(monkeypatch)
    one = sample(monkeypatch, "on", x, grid, padding_mode=pad, align_corners=align, **fill)
    planned = sample(monkeypatch, "off", x, grid, padding_mode=pad, align_corners=align,
                     **fill)
    assert ran == [True, False]
    assert_same_bits(one, planned)


@pytest.mark.parametrize("mode,channels", [("linear", 1), ("nearest", 1), ("nearest", 3)])
def test_broadcast_grid_strided_input_and_channel_last(rng, monkeypatch, mode, channels):
    x = rng.standard_normal((3, channels, 20, 24)).astype(np.float32)
    grid = nasty_grid(rng, (1, 7, 9, 2), np.float32)
    cases = [(x, False), (x[:, :, 2:18:3, 1:22:2], False), (x[::-1, :, ::-1], False)]
    if channels == 1:  # channel-last points are the channels apart: several take the plan
        cases.append((np.ascontiguousarray(np.moveaxis(x, 1, -1)), True))
    for data, last in cases:
        ran = _spy(monkeypatch)
        one = sample(monkeypatch, "on", data, grid, mode, channel_last=last)
        planned = sample(monkeypatch, "off", data, grid, mode, channel_last=last)
        assert ran == [True, False]
        assert_same_bits(one, planned)


@pytest.mark.parametrize("case", ["two channels", "float16", "wider grid", "row loads",
                                  "channel-last pair", "four nearest channels"])
def test_where_the_one_pass_does_not_apply(rng, monkeypatch, case):
    channels = {"two channels": 2, "channel-last pair": 2, "four nearest channels": 4}
    x = rng.standard_normal((1, channels.get(case, 1), 8, 9))
    x = x.astype(np.float16 if case == "float16" else np.float32)
    grid = rng.uniform(-1, 1, (1, 4, 5, 2)).astype(np.float64 if case == "wider grid"
                                                    else np.float32)
    padding = "zeros"
    if case == "row loads":  # where the explicit vectors do not serve (reflection)
        monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", "rows")
        padding = "reflection"
    last = case == "channel-last pair"
    if last:
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    ran = _spy(monkeypatch)
    monkeypatch.setenv("GRIDSAMPLE_ONE_PASS", "on")
    gridsample.grid_sample(x, grid, "nearest" if case.endswith("nearest channels") else "linear",
                           padding_mode=padding, channel_last=last)
    assert ran in ([False], [])  # [] where the general kernels serve it


def test_affine_warp_is_not_affected(rng, monkeypatch):
    x = rng.standard_normal((2, 1, 12, 10)).astype(np.float32)
    theta = np.array([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.05]]] * 2, np.float32)
    got = gridsample.affine_warp(x, theta)
    want = gridsample.grid_sample(x, gridsample.affine_grid(theta, x.shape))
    np.testing.assert_array_equal(got, want)


def test_the_setting_is_checked(rng, monkeypatch):
    x = rng.standard_normal((1, 1, 6, 6)).astype(np.float32)
    grid = np.zeros((1, 2, 2, 2), np.float32)
    _api._prepared.entries.clear()
    for bad in ("yes", "1", "gather"):
        with pytest.raises(GridSampleError, match=f"GRIDSAMPLE_ONE_PASS=.{bad}."):
            sample(monkeypatch, bad, x, grid)
    np.testing.assert_array_equal(sample(monkeypatch, " OFF ", x, grid),
                                  sample(monkeypatch, "", x, grid))


@pytest.mark.parametrize("padding", ["zeros", "border", "constant", "reflection", "wrap"])
@pytest.mark.parametrize("host, most", [("znver5", 1), ("znver4", 3), ("sapphirerapids", 3)])
def test_the_default_takes_nearest_where_explicit_vectors_serve(rng, monkeypatch, padding,
                                                                host, most):
    """... for as many channels as the host CPU's rule says (``_target.nearest_pass_channels``:
    one on Zen 5, else three); ``on`` takes up to three anywhere they serve."""
    from gridsample import _target
    from gridsample._simd import AVAILABLE
    from gridsample._target import fast_gathers

    monkeypatch.setattr(_target, "_host_cpu_name", lambda: host)
    _api._prepared.entries.clear()  # prepared runs keep the rule of the host they met
    grid = rng.uniform(-1, 1, (1, 3, 4, 2)).astype(np.float32)
    serves = AVAILABLE and fast_gathers() and padding in ("zeros", "border", "constant")
    for channels in (1, 2, 3):
        x = rng.standard_normal((1, channels, 6, 7)).astype(np.float32)
        ran = _spy(monkeypatch)
        sample(monkeypatch, "auto", x, grid, "nearest", padding_mode=padding)
        assert ran == [serves and channels <= most]
        ran = _spy(monkeypatch)
        sample(monkeypatch, "on", x, grid, "nearest", padding_mode=padding)
        assert ran == [True]
    _api._prepared.entries.clear()


@pytest.mark.parametrize("padding", ["zeros", "border", "constant", "reflection", "wrap"])
def test_the_default_takes_it_where_explicit_vectors_serve_or_with_512_bit_vectors(
        rng, monkeypatch, padding):
    from gridsample._simd import AVAILABLE
    from gridsample._target import fast_gathers, vector_width, wide_gathers_beat_row_loads

    x = rng.standard_normal((1, 1, 6, 7)).astype(np.float32)
    grid = rng.uniform(-1, 1, (1, 3, 4, 2)).astype(np.float32)
    explicit = AVAILABLE and fast_gathers() and padding in ("zeros", "border", "constant")
    for rows in ("rows", "gather"):
        # the explicit vectors run ahead of the row loads, but where wide gathers lose to
        # them (Zen 4)
        monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", rows)
        ran = _spy(monkeypatch)
        sample(monkeypatch, "auto", x, grid, padding_mode=padding)
        ahead = explicit and (rows == "gather" or wide_gathers_beat_row_loads())
        assert ran == [ahead or (rows == "gather" and vector_width() == 512)]
        if explicit:  # "on" takes it wherever it applies
            ran = _spy(monkeypatch)
            sample(monkeypatch, "on", x, grid, padding_mode=padding)
            assert ran == [True]
