"""The branch-free vector kernels (gridsample._vector, 2-D and 3-D) against the general kernels.

Both families implement the same rules; the vector kernels sum masked taps
(a tap outside reads 0) where the general ones drop them, which can change
only the sign of a zero sum.  ``assert_array_equal`` treats +0 and -0 as
equal and NaN as equal to NaN, so these comparisons are otherwise bit for bit.
"""

from __future__ import annotations

import functools
import itertools
import warnings

import ml_dtypes
import numba
import numpy as np
import pytest

import gridsample
from conftest import ALIGNS
from gridsample import _engine, _vector, reference
from gridsample._registry import PAD_MIRROR, PAD_SYMMETRIC, PAD_WRAP
from gridsample._registry import PADDINGS as _REGISTRY_PADDINGS

#: Every padding the vector kernels plan (the ONNX three and the index paddings).
PADDINGS = tuple(p.name for p in _REGISTRY_PADDINGS if p.vector)
ONNX_PADDINGS = ("zeros", "border", "reflection")
_FLOATS = (np.float32, np.float64)
#: (padding, x dtype, grid dtype): every padding's variant with float32, and each other
#: float pair once.  A pair changes the planners' arithmetic types, which every padding's
#: variant shares; each (variant, pair) compiles on its own (seconds on a cold cache).
PAD_DTYPES = ([(p, np.float32, np.float32) for p in PADDINGS]
              + [("zeros", np.float64, np.float64), ("border", np.float32, np.float64),
                 ("reflection", np.float64, np.float32)])
#: The backward's kernels see one dtype, float32 or float64 (float64 if x or the grid is;
#: both are converted to it first): every padding's variant with float32, and float64 once.
GRAD_PAD_DTYPES = ([(p, np.float32, np.float32) for p in PADDINGS]
                   + [("zeros", np.float64, np.float64)])


VECTOR_MODES = ("linear", "nearest", "cubic")


@pytest.fixture(autouse=True)
def _user_kernels(monkeypatch):
    """Calls without a ``use_kernels`` block get the kernels users get (conftest picks
    general), gathering their taps (test_row_loads.py tests the sweeps that read rows of
    taps, against these)."""
    monkeypatch.setenv("GRIDSAMPLE_KERNELS", "auto")
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", "gather")


def general(monkeypatch, *args, **kwargs):
    """``grid_sample`` with the vector kernels switched off."""
    with _engine.use_kernels("general"):
        return gridsample.grid_sample(*args, **kwargs)


def nasty_grid(rng, shape, dtype):
    """Ordinary points plus edges, exact pixel centres, NaN, ±inf and huge values."""
    g = rng.uniform(-1.3, 1.3, shape)
    flat = g.reshape(-1)
    specials = [np.nan, np.inf, -np.inf, 1e30, -1e30, 3e38, 1.0, -1.0, 0.0,
                1.0 + 1e-7, -1.0 - 1e-7, 0.999999, 5.5, -7.25]
    idx = rng.choice(flat.size, size=min(flat.size, 3 * len(specials)), replace=False)
    flat[idx] = np.resize(specials, idx.size)
    return g.astype(dtype)


def spied(calls, table, label):
    """``table`` with each entry wrapped to append ``label`` to ``calls`` when it runs."""
    def wrap(entry):
        def call(*args):
            calls.append(label)
            return entry(*args)
        return call
    return {key: wrap(f) for key, f in table.items()}


@pytest.mark.parametrize("mode", VECTOR_MODES)
@pytest.mark.parametrize("pad,x_dtype,grid_dtype", PAD_DTYPES)
def test_3d_equal_to_the_general_kernels(rng, monkeypatch, mode, pad, x_dtype, grid_dtype):
    # three channels: cubic sweeps a pair, then the odd one (gridsample._vector.sweep_cubic_3d)
    x = rng.standard_normal((2, 3, 5, 6, 7)).astype(x_dtype)
    x[0, 1, 2, 3, 4] = np.inf
    x[0, 2, 1, 1, 1] = -np.inf
    x[1, 0, 4, 5, 6] = np.nan
    grid = nasty_grid(rng, (2, 4, 6, 5, 3), grid_dtype)
    for align in ALIGNS:
        np.testing.assert_array_equal(gridsample.grid_sample(x, grid, mode, pad, align),
                                      general(monkeypatch, x, grid, mode, pad, align))
    xl = np.moveaxis(x, 1, -1)  # channel-last view (strided), planar sweep
    np.testing.assert_array_equal(
        gridsample.grid_sample(xl, grid[:1], mode, pad, channel_last=True),
        general(monkeypatch, xl, grid[:1], mode, pad, channel_last=True))


def test_the_engine_uses_them(monkeypatch):
    calls = []
    real = dict(_engine.VECTOR_ENTRIES)

    def spy(entry):
        def call(*args):
            calls.append(1)
            return entry(*args)
        return call

    spied = {key: spy(f) for key, f in real.items()}
    monkeypatch.setattr(_engine, "VECTOR_ENTRIES", spied)
    # 2-D nearest with a few channels runs in one pass (test_one_pass.py)
    monkeypatch.setattr(_engine, "ONE_PASS_ENTRIES",
                        {key: spy(f) for key, f in _engine.ONE_PASS_ENTRIES.items()})
    x = np.ones((1, 2, 5, 6), np.float32)
    gridsample.grid_sample(x, np.zeros((1, 3, 3, 2), np.float32))
    gridsample.grid_sample(x, np.zeros((1, 3, 3, 2), np.float32), "nearest")
    gridsample.grid_sample(x, np.zeros((1, 3, 3, 2), np.float32), "cubic")
    x3 = np.ones((1, 2, 3, 4, 5), np.float32)
    gridsample.grid_sample(x3, np.zeros((1, 2, 2, 2, 3), np.float32))
    gridsample.grid_sample(x3, np.zeros((1, 2, 2, 2, 3), np.float32), "nearest")
    gridsample.grid_sample(x3, np.zeros((1, 2, 2, 2, 3), np.float32), "cubic")
    assert len(calls) == 6


@pytest.mark.parametrize("mode", VECTOR_MODES)
def test_each_layout_runs_its_entry(monkeypatch, mode):
    """Each vector kernel has an entry for contiguous output points (channel-first) and one
    for strided points (channel-last with two or more channels); each call runs its own."""
    calls = []
    spy = functools.partial(spied, calls)

    monkeypatch.setattr(_engine, "VECTOR_ENTRIES", spy(_engine.VECTOR_ENTRIES, "first"))
    monkeypatch.setattr(_engine, "CHANNEL_LAST_ENTRIES",
                        spy(_engine.CHANNEL_LAST_ENTRIES, "last"))
    # A single 2-D linear channel runs in one pass, into contiguous points too
    # (test_one_pass.py).
    monkeypatch.setattr(_engine, "ONE_PASS_ENTRIES", spy(_engine.ONE_PASS_ENTRIES, "first"))
    for rank in (2, 3):
        grid = np.zeros((1,) + (2,) * rank + (rank,), np.float32)
        for channels, channel_last, want in ((3, False, "first"), (3, True, "last"),
                                             (1, True, "first")):  # one channel: contiguous
            spatial = (4,) * rank
            shape = (1, *spatial, channels) if channel_last else (1, channels, *spatial)
            calls.clear()
            gridsample.grid_sample(np.ones(shape, np.float32), grid, mode,
                                   channel_last=channel_last)
            assert calls == [want], (rank, channels, channel_last)


@pytest.mark.parametrize("mode", VECTOR_MODES)
@pytest.mark.parametrize("pad,x_dtype,grid_dtype", PAD_DTYPES)
def test_equal_to_the_general_kernels(rng, monkeypatch, mode, pad, x_dtype, grid_dtype):
    x = rng.standard_normal((2, 3, 7, 9)).astype(x_dtype)
    x[0, 0, 3, 4] = np.inf  # a tap outside must never turn 0 * inf into NaN
    x[1, 2, 0, 0] = -np.inf
    x[1, 1, 6, 8] = np.nan
    grid = nasty_grid(rng, (2, 11, 13, 2), grid_dtype)
    for align in ALIGNS:
        want = general(monkeypatch, x, grid, mode, pad, align)
        got = gridsample.grid_sample(x, grid, mode, pad, align)
        np.testing.assert_array_equal(got, want)
    xl = np.moveaxis(x, 1, -1)  # channel-last: the entries for strided output points
    np.testing.assert_array_equal(
        gridsample.grid_sample(xl, grid, mode, pad, channel_last=True),
        general(monkeypatch, xl, grid, mode, pad, channel_last=True))


@pytest.mark.parametrize("mode", VECTOR_MODES)
def test_layouts_types_strides_and_sizes(rng, monkeypatch, mode):
    pad = "border"
    # channel-last with few channels (planar sweep with strided stores)
    xl = rng.standard_normal((2, 8, 9, 3)).astype(np.float32)
    grid = nasty_grid(rng, (1, 6, 7, 2), np.float32)  # batch 1 broadcasts
    np.testing.assert_array_equal(
        gridsample.grid_sample(xl, grid, mode, pad, channel_last=True),
        general(monkeypatch, xl, grid, mode, pad, channel_last=True))
    # the other element types of the fast kernels (their sweeps do not depend on the
    # padding: a few paddings between them)
    base = rng.uniform(0, 200, (1, 2, 8, 9))
    for dtype, paddings in ((np.uint8, ("reflection",)), (np.uint16, ("zeros", "mirror")),
                            (np.float16, ("zeros", "wrap")), (ml_dtypes.bfloat16, ("border",))):
        # uint16 across its range: cubic overshoots saturate at 0 and 65535
        x = (base * (327 if dtype == np.uint16 else 1)).astype(dtype)
        for p in paddings:
            got = gridsample.grid_sample(x, grid, mode, p)
            want = general(monkeypatch, x, grid, mode, p)
            assert got.dtype == want.dtype == x.dtype
            # float32 exactly holds every value of these types (NaN compares as NaN there)
            np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
    # strided input and grid views, and axes of size 1
    big = rng.standard_normal((2, 4, 16, 20))
    xs = big[:, ::2, ::-3, 1::2]
    gs = nasty_grid(rng, (2, 10, 12, 2), np.float64)[:, ::2, 1::3]
    for align in ALIGNS:
        np.testing.assert_array_equal(gridsample.grid_sample(xs, gs, mode, "zeros", align),
                                      general(monkeypatch, xs, gs, mode, "zeros", align))
    # axes of size 1 (float32: the variants compiled above)
    gs32 = gs.astype(np.float32)
    for shape in [(2, 1, 1, 5), (2, 1, 4, 1), (2, 2, 1, 1)]:
        x1 = rng.standard_normal(shape).astype(np.float32)
        for p, align in itertools.product(PADDINGS, ALIGNS):
            np.testing.assert_array_equal(gridsample.grid_sample(x1, gs32, mode, p, align),
                                          general(monkeypatch, x1, gs32, mode, p, align))


@pytest.mark.parametrize("mode", VECTOR_MODES)
def test_nan_on_an_axis_of_size_one(monkeypatch, mode):
    # reflection over an empty span (size 1, align_corners) must keep a NaN point NaN
    # float32: the variants the other tests of this group compile (each float64 variant
    # would compile for this test alone)
    x = np.arange(5.0, dtype=np.float32).reshape(1, 1, 1, 5)
    grid = np.array([[[[np.nan, 0.2], [0.3, np.nan], [np.inf, 0.0], [0.1, -np.inf]]]],
                    np.float32)
    for pad, align in itertools.product(PADDINGS, ALIGNS):
        got = gridsample.grid_sample(x, grid, mode, pad, align)
        np.testing.assert_array_equal(got, general(monkeypatch, x, grid, mode, pad, align))
        assert np.isnan(got[0, 0, 0, :2]).all()


def test_infinite_coordinate_under_border_reads_the_edge_value(monkeypatch):
    # Rule 7: ±inf under border gives the edge value, also when the edge holds
    # ±inf (a zero-weight tap must not turn it into NaN); cubic reads one tap.
    x = np.arange(16.0, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 0, 3] = np.inf
    x[0, 0, 3, 0] = -np.inf
    grid = np.array([[[[np.inf, -np.inf], [-np.inf, np.inf], [np.inf, np.inf], [0.1, -np.inf]]]],
                    np.float32)
    for mode in VECTOR_MODES:
        got = gridsample.grid_sample(x, grid, mode, "border")
        np.testing.assert_array_equal(got, general(monkeypatch, x, grid, mode, "border"))
        np.testing.assert_array_equal(got, reference.grid_sample(x, grid, mode, "border"))
        np.testing.assert_array_equal(got[0, 0, 0, :3], [np.inf, -np.inf, 15.0])


def test_int32_offsets_guard(rng, monkeypatch):
    assert _vector.fits_int32([1024, 1024], [1, 1024])
    assert not _vector.fits_int32([50000, 50000], [1, 50000])
    assert not _vector.fits_int32([2 ** 31 - 3, 1], [1, 1])
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    entry = _engine.vector_entry
    assert entry(2, 0, 0, f32, f32, [50000, 50000], [1, 50000], 0) is None
    assert entry(2, 0, 0, f32, f32, [64, 64], [1, 64], 0) is not None
    # cubic with coordinates wider than weights: the general kernels (rounding)
    assert entry(2, 2, 1, f64, f32, [64, 64], [1, 64], 0) is None
    assert entry(2, 2, 1, f32, f64, [64, 64], [1, 64], 0) is not None
    assert entry(3, 0, 2, f64, f32, [8, 8, 8], [1, 8, 64], 0) is None
    assert entry(3, 1, 2, f64, f32, [8, 8, 8], [1, 8, 64], 0) is not None
    # when they do not fit, the general kernels run (same results)
    x = rng.standard_normal((1, 2, 6, 7)).astype(np.float32)
    grid = nasty_grid(rng, (1, 5, 5, 2), np.float32)
    monkeypatch.setattr(_engine, "fits_int32", lambda sizes, strides: False)
    np.testing.assert_array_equal(gridsample.grid_sample(x, grid),
                                  general(monkeypatch, x, grid))


# --- the backward's vector-planned kernels (gridsample._grad_vector) -----------------------

@pytest.mark.parametrize("pad,x_dtype,grid_dtype", GRAD_PAD_DTYPES)
@pytest.mark.parametrize("rank, mode", [(2, "linear"), (3, "linear"), (2, "nearest"),
                                        (3, "nearest"), (2, "cubic"), (3, "cubic")])
def test_gradients_equal_to_the_general_kernels(rng, rank, mode, pad, x_dtype, grid_dtype):
    """Bit for bit (up to the sign of a zero), NaN, ±inf, huge and edge points included."""
    grid = nasty_grid(rng, (2,) + (12, 10, 5)[:rank] + (rank,), grid_dtype)
    for channels in (1, 3):  # scatter_fused takes two channels a pass: a pair and one left
        x = rng.standard_normal((2, channels) + (9, 11, 7)[:rank]).astype(x_dtype)
        x[(0, channels - 1) + (2, 3, 4)[:rank]] = np.inf
        gout = rng.standard_normal((2, 2 * channels) + (12, 10, 5)[:rank]).astype(x_dtype)
        gout[(1, 0) + (3, 4, 2)[:rank]] = np.nan  # in both views below
        gout[(0, 2 * channels - 2) + (5, 6, 1)[:rank]] = -np.inf  # the strided view's last
        gout[(1, channels - 1) + (7, 2, 3)[:rank]] = np.inf  # the first view's last
        for align, mask, g in itertools.product(ALIGNS, ((False, True), (True, False),
                                                         (True, True)), (grid, grid[:1])):
            # channels 1 apart, and (once per align, for scatter_fused's pairs) 2 apart
            strided = g is grid and all(mask) and mode != "cubic"
            for dy in (gout[:, :channels],) + ((gout[:, ::2],) if strided else ()):
                args = (dy, x, g, mode, pad, align)
                fast = gridsample.grid_sample_backward(*args, output_mask=mask)
                with _engine.use_kernels("general"):
                    slow = gridsample.grid_sample_backward(*args, output_mask=mask)
                for a, b in zip(fast, slow):
                    np.testing.assert_array_equal(a, b)


def _spy_on(monkeypatch, table: dict) -> list:
    """Replace every entry of ``table`` by a wrapper that records its key; the record."""
    calls = []
    for key, entry in list(table.items()):
        def spy(*args, _entry=entry, _key=key):
            calls.append(_key)
            return _entry(*args)
        monkeypatch.setitem(table, key, spy)
    return calls


def test_the_backward_uses_them(monkeypatch):
    from gridsample import _backward

    monkeypatch.setenv("GRIDSAMPLE_ONE_PASS", "off")  # the planned grid gradient
    grids = _spy_on(monkeypatch, _backward.GRID_GRAD_ENTRIES)
    inputs = _spy_on(monkeypatch, _backward.INPUT_GRAD_ENTRIES)
    x = np.ones((1, 2, 4, 4), np.float32)
    grid = np.zeros((1, 3, 3, 2), np.float32)
    gout = np.ones((1, 2, 3, 3), np.float32)
    gridsample.grid_sample_backward(gout, x, grid, "linear", "border", output_mask=(False, True))
    assert grids == [(2, 0, 1)] and inputs == []
    gridsample.grid_sample_backward(gout, x, grid, "cubic", output_mask=(True, False))
    assert set(inputs) == {(2, 2, 0)}
    with _engine.use_kernels("general"):
        gridsample.grid_sample_backward(gout, x, grid)
    assert grids == [(2, 0, 1)] and set(inputs) == {(2, 2, 0)}


@pytest.mark.skipif(not (gridsample._simd.AVAILABLE and gridsample._target.fast_gathers()),
                    reason="explicit vectors: x86 with AVX2 and fast gathers")
@pytest.mark.parametrize("pad", ["zeros", "border"])
def test_the_grid_gradient_in_one_pass(rng, monkeypatch, pad):
    """The 2-D linear grid gradient planned and summed in one pass (1-3 channels, float32,
    zeros and border) gives the planned pass's bits: NaN, ±inf, huge and edge points, blocks
    that end in a part of a group, a broadcast grid, X with a strided innermost axis, one
    and two threads.  It runs where the backward says (spied on), and not for 4 channels,
    an axis of size 1 with align_corners or ``GRIDSAMPLE_ONE_PASS=off``."""
    from gridsample import _backward

    ones = _spy_on(monkeypatch, _backward.GRID_GRAD_ONE_PASS_ENTRIES)
    planned = _spy_on(monkeypatch, _backward.GRID_GRAD_ENTRIES)
    out = (13, 11)  # 143 points: whole groups and a part of one
    grid = nasty_grid(rng, (2, *out, 2), np.float32)
    before = numba.get_num_threads()
    try:
        for channels, align, g, strided, threads in itertools.product(
                (1, 2, 3), ALIGNS, (grid, grid[:1]), (False, True), (1, 2)):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            x = rng.standard_normal((2, channels, 9, 22 if strided else 11)).astype(np.float32)
            x = x[..., ::2] if strided else x
            gout = rng.standard_normal((2, channels, *out)).astype(np.float32)
            del ones[:], planned[:]
            monkeypatch.setenv("GRIDSAMPLE_ONE_PASS", "auto")
            # The grid gradient alone where X is strided: with dL/dx as well, X is copied
            # to C order first (its scatter wants it so).
            mask = (False, True) if strided else (True, True)
            fast = gridsample.grid_sample_backward(gout, x, g, "linear", pad, align,
                                                   output_mask=mask)
            assert ones and not planned
            monkeypatch.setenv("GRIDSAMPLE_ONE_PASS", "off")
            slow = gridsample.grid_sample_backward(gout, x, g, "linear", pad, align,
                                                   output_mask=mask)
            assert planned
            for a, b in zip(fast, slow):
                if a is not None:
                    np.testing.assert_array_equal(a, b)
    finally:
        numba.set_num_threads(before)
    monkeypatch.setenv("GRIDSAMPLE_ONE_PASS", "auto")
    for x, align in ((rng.standard_normal((1, 4, 9, 11)), False),
                     (rng.standard_normal((1, 1, 1, 11)), True)):
        x = x.astype(np.float32)
        del ones[:], planned[:]
        gout = np.ones((1, x.shape[1], *out), np.float32)
        gridsample.grid_sample_backward(gout, x, grid[:1], "linear", pad, align)
        assert planned and not ones


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("rank, mode", [(2, "linear"), (2, "nearest"), (2, "cubic"),
                                        (3, "linear"), (3, "nearest"), (3, "cubic")])
def test_constant_fill_equal_to_the_general_kernels(rng, monkeypatch, rank, mode, dtype):
    """The vector sweeps read the fill for a tap outside; the general fill kernel keeps its
    taps outside in the plan and reads the fill there: the same sums, bit for bit."""
    x = rng.standard_normal((2, 3) + (7, 9, 5)[:rank]).astype(dtype)
    x[(0, 0) + (3, 4, 2)[:rank]] = np.inf
    grid = nasty_grid(rng, (2,) + (11, 13, 4)[:rank] + (rank,), dtype)
    for fill, align, a in ((2.5, False, -0.75), ([1.0, -3.0, 7.5], True, -0.6)):
        kw = dict(fill_value=fill, cubic_a=a if mode == "cubic" else -0.75)
        want = general(monkeypatch, x, grid, mode, "constant", align, **kw)
        got = gridsample.grid_sample(x, grid, mode, "constant", align, **kw)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("rank, mode", [(2, "linear"), (2, "nearest"), (2, "cubic"),
                                        (3, "linear"), (3, "nearest"), (3, "cubic")])
def test_index_paddings_on_the_vector_kernels(rng, monkeypatch, rank, mode):
    """One vector variant serves mirror, symmetric and wrap, each axis reading its own code:
    a per-axis mix of them runs on it (forward and input gradient), bit for bit as the
    general kernels.  The first blocks lie inside, the last ones reach outside and hold NaN,
    ±inf and huge values."""
    calls = _spy_on(monkeypatch, _engine.VECTOR_ENTRIES)
    from gridsample import _backward

    inputs = _spy_on(monkeypatch, _backward.INPUT_GRAD_ENTRIES)
    x = rng.standard_normal((2, 2) + (9, 10, 8)[:rank]).astype(np.float32)
    x[(0, 1) + (4, 5, 3)[:rank]] = np.inf
    out_spatial = (16, 12, 8)[:rank]
    grid = rng.uniform(-0.5, 0.5, (2,) + out_spatial + (rank,)).astype(np.float32)
    tail = grid.reshape(2, -1, rank)[:, -grid[0].size // (2 * rank):]
    tail[...] = nasty_grid(rng, tail.shape, np.float32)
    for pads in (("wrap", "mirror", "symmetric")[:rank], "mirror", "symmetric", "wrap"):
        for align in ALIGNS:
            want = general(monkeypatch, x, grid, mode, pads, align)
            np.testing.assert_array_equal(gridsample.grid_sample(x, grid, mode, pads, align),
                                          want)
            gout = rng.standard_normal(want.shape).astype(np.float32)
            fast = gridsample.grid_sample_backward(gout, x, grid, mode, pads, align)
            with _engine.use_kernels("general"):
                slow = gridsample.grid_sample_backward(gout, x, grid, mode, pads, align)
            for a, b in zip(fast, slow):
                np.testing.assert_array_equal(a, b)
        # the per-axis mix (first) ran on the vector kernels, forward and input gradient
        assert calls and inputs
    assert {key[2] for key in calls + inputs} <= {PAD_MIRROR, PAD_SYMMETRIC, PAD_WRAP}


def _reflection_ladder(rng, count, size, align):
    """Pixel coordinates along an axis of ``size`` under reflection, both signs, from 0 to
    past ``2**22``: multiples of the period and their float32 neighbours (where a rounded
    quotient is off by one), powers of two and their neighbours (±1, ±1/2, ±1/4), random
    values log-uniform in magnitude."""
    period = 2 * (size - 1) if align else 2 * size
    low = 0.0 if align else -0.5  # reflection folds d = u - low
    multiples = (np.unique(np.geomspace(1, 2 ** 22 / period, 200).astype(np.int64))
                 * period).astype(np.float32)
    d = np.concatenate([multiples, np.nextafter(multiples, np.float32(0)),
                        np.nextafter(multiples, np.float32(np.inf)), multiples - 0.5,
                        [2.0 ** k + e for k in range(23) for e in (-1, -0.5, -0.25, 0, 0.25,
                                                                   0.5, 1)],
                        10 ** rng.uniform(-3, 6.7, count)]).astype(np.float32)
    u = np.concatenate([d + np.float32(low), np.float32(low) - d])
    return rng.permutation(np.resize(u, count)).astype(np.float32)


@pytest.mark.parametrize("rank, mode", [(2, "linear"), (2, "nearest"), (2, "cubic"),
                                        (3, "linear"), (3, "nearest"), (3, "cubic")])
def test_reflection_across_the_exact_pass_threshold(rng, monkeypatch, rank, mode):
    """Reflection reduces a coordinate by its period with a vectorized modulo below ``2**21``
    and with ``fmod`` beyond (the exact pass): bit for bit the general kernels' ``fmod``,
    for blocks wholly below the threshold, wholly beyond and mixed; forward and both
    gradients.  float32 (float64 has the same bounds with more digits to spare; its
    variants would compile for this test alone)."""
    # Periods whose float32 quotients overshoot (12, 14: sizes 7) and undershoot (82: sizes
    # 41 without and 42 with align_corners) at some multiples.
    spatial = ((7, 41), (41, 7, 42))[rank - 2]
    x = rng.standard_normal((1, 2) + spatial).astype(np.float32)
    out_spatial = ((64, 40), (24, 20, 12))[rank - 2]
    points = int(np.prod(out_spatial))
    for align in ALIGNS:
        # grid component k runs along spatial axis rank - 1 - k
        coords = np.stack([_reflection_ladder(rng, points, spatial[rank - 1 - k], align)
                           for k in range(rank)], -1)
        below = np.where(np.abs(coords) < 2 ** 21 - 2, coords, coords / 8)
        for values in (below, coords):
            grid = values.reshape((1,) + out_spatial + (rank,))
            kw = dict(align_corners=align, grid_units="pixels")
            want = general(monkeypatch, x, grid, mode, "reflection", **kw)
            got = gridsample.grid_sample(x, grid, mode, "reflection", **kw)
            np.testing.assert_array_equal(got, want)
            gout = rng.standard_normal(want.shape).astype(np.float32)
            fast = gridsample.grid_sample_backward(gout, x, grid, mode, "reflection", **kw)
            with _engine.use_kernels("general"):
                slow = gridsample.grid_sample_backward(gout, x, grid, mode, "reflection",
                                                       **kw)
            for a, b in zip(fast, slow):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mode", VECTOR_MODES)
def test_reflection_with_a_period_beyond_the_vectorized_modulo(rng, monkeypatch, mode):
    """An axis longer than ``2**20`` has a period past ``2**21``: every point takes the
    exact pass, with the same results."""
    size = (1 << 20) + 3
    x = rng.standard_normal((1, 1, 2, size)).astype(np.float32)
    u = np.concatenate([rng.uniform(-3 * size, 3 * size, 200), [size - 1.5, -0.5, size + 0.25]])
    grid = np.stack([u, np.resize([0.0, 1.0, 0.5], u.size)], -1)[None, None].astype(np.float32)
    for align in ALIGNS:
        kw = dict(align_corners=align, grid_units="pixels")
        np.testing.assert_array_equal(
            gridsample.grid_sample(x, grid, mode, "reflection", **kw),
            general(monkeypatch, x, grid, mode, "reflection", **kw))


@pytest.mark.parametrize("mode", VECTOR_MODES)
def test_channel_groups(rng, monkeypatch, mode):
    """Many large channels are swept a group at a time (``_engine.channel_groups``; the
    thresholds lowered here so that small arrays are grouped): every group reads and writes
    its own channels, with its own fill, on a strided channel axis and through
    ``affine_warp``.  (Channel-last memory is grouped only where it is swept planar, at
    most ``PLANAR_MAX_CHANNELS``: never more than one group.)"""
    monkeypatch.setattr(_engine, "_GROUP_MIN_ITEM_BYTES", 0)
    monkeypatch.setattr(_engine, "_GROUP_MIN_CHANNEL_BYTES", 0)
    monkeypatch.setattr(_engine, "_GROUP_BYTES", 2)  # groups of max(4, 2) = 4 channels
    assert _engine.channel_groups(10, 1) == [(0, 4), (4, 4), (8, 2)]
    big = rng.standard_normal((2, 20, 9, 11)).astype(np.float32)
    fill = np.arange(10, dtype=np.float32) + 0.5
    grid = nasty_grid(rng, (2, 7, 8, 2), np.float32)
    for x in (big[:, :10], big[:, ::2]):
        for pad, kwargs in (("reflection", {}), ("constant", {"fill_value": fill})):
            np.testing.assert_array_equal(gridsample.grid_sample(x, grid, mode, pad, **kwargs),
                                          general(monkeypatch, x, grid, mode, pad, **kwargs))
    theta = np.array([[[0.9, -0.3, 0.1], [0.4, 1.1, -0.2]]], np.float32)
    x = big[:, :10]
    with _engine.use_kernels("general"):
        want = gridsample.affine_warp(x, theta, (6, 13), mode, "zeros")
    np.testing.assert_array_equal(gridsample.affine_warp(x, theta, (6, 13), mode, "zeros"),
                                  want)


@pytest.mark.parametrize("mode", VECTOR_MODES)
def test_blocks_of_many_swept_channels(rng, monkeypatch, mode):
    """Channel-first 2-D linear and nearest sweeps of 12 to 32 channels plan blocks of at
    most ``SWEPT_ENTRIES_PER_BLOCK // C`` points (``_engine.swept_block_cap``; cubic, fewer
    channels, more channels, channel-last memory and channel-last output over channel-first
    memory keep the tables' blocks): the blocks' size does not change a bit (the general
    kernels' results, with their non-finite and huge points), at one thread and two (the
    calls' work lowered below what takes a second thread)."""
    monkeypatch.setenv("GRIDSAMPLE_THREAD_MIN_WORK", "1")
    capped = mode in ("linear", "nearest")
    grid = nasty_grid(rng, (2, 40, 45, 2), np.float32)
    before = numba.get_num_threads()
    try:
        for channels, threads in itertools.product((4, 12, 32, 40), (1, 2)):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            x = rng.standard_normal((2, channels, 31, 37)).astype(np.float32)
            for layout in ("first", "last", "last over first"):
                last = layout != "first"
                xs = {"first": x, "last": np.ascontiguousarray(np.moveaxis(x, 1, -1)),
                      "last over first": np.moveaxis(x, 1, -1)}[layout]
                plan, xx, gg = gridsample._plan.plan_forward(xs, grid, mode, "border", False,
                                                             last)
                prepared = _engine.PreparedForward(plan, xx.shape, xx.strides, xx.itemsize)
                got = prepared.run(xx, gg)
                (points, batch, used, _, _), _, block = list(prepared._sizings.values())[0][:3]
                assert used == min(threads, numba.config.NUMBA_NUM_THREADS)
                tables = _engine.block_size(points, batch, _engine.PLAN_ROWS[(2, plan.kernel_mode)],
                                            used, _engine.PLAN_ENTRIES_PER_BLOCK)
                if capped and not last and 12 <= channels <= 32:
                    assert block <= _engine.SWEPT_ENTRIES_PER_BLOCK // channels < tables
                else:
                    assert block == tables
                with _engine.use_kernels("general"):
                    want = gridsample.grid_sample(xs, grid, mode, "border", channel_last=last)
                np.testing.assert_array_equal(got, want)
    finally:
        numba.set_num_threads(before)


def test_scattered_warps_are_told_apart(rng):
    """``_engine.is_scattered``: a random grid's consecutive points lie far apart, a smooth
    warp's (an affine map, in normalized or pixel units) close; NaN and ±inf steps are left
    out, and a grid of NaN is not scattered (no warning either)."""
    x = np.zeros((1, 2, 64, 80), np.float32)

    def scattered(grid, units="normalized"):
        plan = gridsample._plan.plan_forward(x, grid, "linear", "zeros", False, False,
                                             grid_units=units)[0]
        return _engine.is_scattered(plan, grid.reshape(grid.shape[0], -1, 2))

    theta = np.array([[[0.9, -0.3, 0.1], [0.4, 1.1, -0.2]]], np.float32)
    smooth = gridsample.affine_grid(theta, (1, 2, 50, 60))
    assert not scattered(smooth)
    wild = rng.uniform(-1, 1, (1, 50, 60, 2)).astype(np.float32)
    assert scattered(wild)
    pixels = (smooth + 1) * np.array([80, 64], np.float32) / 2 - 0.5
    assert not scattered(np.ascontiguousarray(pixels), "pixels")
    with_specials = wild.copy()
    with_specials[0, 0, ::2] = np.nan
    with_specials[0, 0, 1::3] = np.inf
    assert scattered(with_specials)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not scattered(np.full((1, 5, 6, 2), np.nan, np.float32))


@pytest.mark.parametrize("mode", VECTOR_MODES)
def test_scattered_warps_sweep_a_channel_at_a_time(rng, monkeypatch, mode):
    """A scattered warp over many large planes is swept in groups that fit in cache (the
    thresholds lowered here): the same bits as the general kernels, with fills."""
    monkeypatch.setattr(_engine, "_SCATTERED_ITEM_BYTES", 0)
    monkeypatch.setattr(_engine, "_SCATTERED_GROUP_BYTES", 1)
    monkeypatch.setattr(_engine, "_SCATTERED_STEP_PIXELS", 1.0)  # steps of a 9x11 input
    assert _engine.channel_groups(3, 10, 5, True) == [(0, 1), (1, 1), (2, 1)]
    x = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
    grid = nasty_grid(rng, (2, 7, 8, 2), np.float32)
    calls = []
    real = _engine.channel_groups

    def spy(*args):
        calls.append(real(*args))
        return calls[-1]

    monkeypatch.setattr(_engine, "channel_groups", spy)
    fill = np.array([0.5, -2.0, 7.0], np.float32)
    for pad, kwargs in (("reflection", {}), ("constant", {"fill_value": fill})):
        np.testing.assert_array_equal(gridsample.grid_sample(x, grid, mode, pad, **kwargs),
                                      general(monkeypatch, x, grid, mode, pad, **kwargs))
    assert calls and all(len(groups) == 3 for groups in calls)
    # Channel-last channels share cache lines: a scattered warp sweeps them together, one
    # run of the entry (channels innermost: no groups asked for).
    calls.clear()
    runs = []
    real_run = _engine.run_claimed  # how the engine runs its vector entries

    def counted(*args, **kwargs):
        runs.append(1)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(_engine, "run_claimed", counted)
    last = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    got = gridsample.grid_sample(last, grid, mode, "constant", fill_value=fill,
                                 channel_last=True)
    assert calls == [] and len(runs) == 1
    np.testing.assert_array_equal(
        got, general(monkeypatch, last, grid, mode, "constant", fill_value=fill,
                     channel_last=True))


@pytest.mark.parametrize("mode, padding", [("linear", "reflection"), ("cubic", "mirror"),
                                           ("nearest", "wrap")])
def test_kernel_constants_are_shared_and_never_written(rng, mode, padding):
    """The per-axis and weight constants are kept between calls (one pair per plan shape):
    no call may write into them."""
    from gridsample._engine import kernel_constants
    from gridsample._plan import plan_forward

    x = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
    grid = rng.uniform(-1.5, 1.5, (2, 5, 7, 2)).astype(np.float32)
    plan, _, _ = plan_forward(x, grid, mode, padding, False, False)
    axc, kc = kernel_constants(plan, plan.coord_dtype, plan.weight_dtype)
    before = axc.copy(), kc.copy()
    for family in ("vector", "general"):
        with _engine.use_kernels(family):
            gridsample.grid_sample(x, grid, mode, padding)
            gridsample.grid_sample_backward(np.ones((2, 3, 5, 7), np.float32), x, grid, mode,
                                            padding)
    again = kernel_constants(plan, plan.coord_dtype, plan.weight_dtype)
    assert again[0] is axc and again[1] is kc
    np.testing.assert_array_equal(axc, before[0])
    np.testing.assert_array_equal(kc, before[1])


# Channel-last memory of many channels: the point-at-a-time sweeps (gridsample._vector,
# sweep_*_il; _engine.INTERLEAVED_MIN_CHANNELS) and, below their channel counts, the
# channel-at-a-time ones.  4 channels: the fewest that take the point-at-a-time sweeps (2-D
# linear and nearest, 3-D linear); 19: a vector of 16 and three more.
_MANY_CHANNELS = (4, 5, 8, 19)


@pytest.mark.parametrize("mode", VECTOR_MODES)
@pytest.mark.parametrize("pad,x_dtype,grid_dtype", PAD_DTYPES)
def test_many_channels_last_equal_to_the_general_kernels(rng, monkeypatch, mode, pad, x_dtype,
                                                         grid_dtype):
    grid = nasty_grid(rng, (2, 6, 7, 2), grid_dtype)
    for channels in _MANY_CHANNELS:
        x = rng.standard_normal((2, 7, 9, channels)).astype(x_dtype)
        x[0, 3, 4, 1] = np.inf  # a tap outside must never turn 0 * inf into NaN
        x[1, 0, 0, channels - 1] = -np.inf
        x[1, 6, 8, 2] = np.nan
        for align in ALIGNS:
            np.testing.assert_array_equal(
                gridsample.grid_sample(x, grid, mode, pad, align, channel_last=True),
                general(monkeypatch, x, grid, mode, pad, align, channel_last=True))


@pytest.mark.parametrize("mode", VECTOR_MODES)
def test_many_channels_last_3d_types_strides_and_fills(rng, monkeypatch, mode):
    """3-D (cubic: the channel-at-a-time sweep at any count), the other element families,
    strided X whose channels stay contiguous, a broadcast grid, a fill per channel, and one
    against two threads."""
    grid = nasty_grid(rng, (2, 6, 7, 8, 3), np.float32)  # blocks past the prefetch distance
    for pad, channels in itertools.product(ONNX_PADDINGS, _MANY_CHANNELS):
        x = rng.standard_normal((2, 5, 6, 7, channels)).astype(np.float32)
        x[1, 4, 5, 6, 0] = np.nan
        np.testing.assert_array_equal(
            gridsample.grid_sample(x, grid, mode, pad, channel_last=True),
            general(monkeypatch, x, grid, mode, pad, channel_last=True))
    for dtype in (np.float16, np.float64):  # the loop over the channels (no explicit vectors)
        x = rng.uniform(-50, 50, (1, 5, 6, 7, 9)).astype(dtype)
        np.testing.assert_array_equal(
            gridsample.grid_sample(x, grid[:1], mode, "border", channel_last=True),
            general(monkeypatch, x, grid[:1], mode, "border", channel_last=True))
    grid = nasty_grid(rng, (1, 6, 7, 2), np.float32)  # batch 1 broadcasts
    base = rng.uniform(0, 200, (2, 8, 9, 8))
    for dtype, pad in ((np.uint8, "reflection"), (np.float16, "zeros"),
                       (ml_dtypes.bfloat16, "border"), (np.float64, "wrap")):
        x = base.astype(dtype)
        got = gridsample.grid_sample(x, grid, mode, pad, channel_last=True)
        want = general(monkeypatch, x, grid, mode, pad, channel_last=True)
        assert got.dtype == want.dtype == x.dtype
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
    big = rng.standard_normal((2, 12, 15, 22)).astype(np.float32)
    # strided rows and columns read in place, channels 1-19 of 22 contiguous, a fill each
    for xs in (big[:, 1::2, ::2, 1:20], big[:, 1::2, ::2, 1:9]):
        assert not xs.flags.c_contiguous and xs.strides[-1] == 4
        fill = np.arange(xs.shape[-1], dtype=np.float32) - 3.5
        for pad, kw in (("zeros", {}), ("constant", {"fill_value": fill})):
            np.testing.assert_array_equal(
                gridsample.grid_sample(xs, grid, mode, pad, channel_last=True, **kw),
                general(monkeypatch, xs, grid, mode, pad, channel_last=True, **kw))
    # a size-1 axis of stride 0 (a new axis) does not hide that the channels are innermost
    x1 = rng.standard_normal((2, 9, 11, 8)).astype(np.float32)[:, None]
    grid3 = nasty_grid(rng, (2, 1, 5, 6, 3), np.float32)
    np.testing.assert_array_equal(
        gridsample.grid_sample(x1, grid3, mode, "border", channel_last=True),
        general(monkeypatch, x1, grid3, mode, "border", channel_last=True))
    x = rng.standard_normal((1, 40, 40, 19)).astype(np.float32)
    wide = nasty_grid(rng, (1, 30, 40, 2), np.float32)
    one = gridsample.grid_sample(x, wide, mode, "border", channel_last=True)
    numba = pytest.importorskip("numba")
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        np.testing.assert_array_equal(
            one, gridsample.grid_sample(x, wide, mode, "border", channel_last=True))
    finally:
        numba.set_num_threads(threads)


def test_each_channel_count_runs_its_sweep(monkeypatch):
    """Channel-last with contiguous channels runs the point-at-a-time entry from its
    kernel's channel count on, the channel-at-a-time one below it (and for 3-D cubic)."""
    calls = []
    spy = functools.partial(spied, calls)

    monkeypatch.setattr(_engine, "CHANNEL_LAST_ENTRIES",
                        spy(_engine.CHANNEL_LAST_ENTRIES, "channel"))
    monkeypatch.setattr(_engine, "INTERLEAVED_ENTRIES",
                        spy(_engine.INTERLEAVED_ENTRIES, "point"))
    codes = {"linear": 0, "nearest": 1, "cubic": 2}
    for rank, mode in itertools.product((2, 3), VECTOR_MODES):
        least = _engine.INTERLEAVED_MIN_CHANNELS.get((rank, codes[mode]))
        grid = np.zeros((1,) + (2,) * rank + (rank,), np.float32)
        for channels in (3, 4, 5, 7, 8, 16):
            calls.clear()
            x = np.ones((1,) + (4,) * rank + (channels,), np.float32)
            gridsample.grid_sample(x, grid, mode, channel_last=True)
            want = "point" if least is not None and channels >= least else "channel"
            assert calls == [want], (rank, mode, channels)
    # channels not contiguous (every other one of a wider array): a channel at a time
    calls.clear()
    x = np.ones((1, 4, 4, 32), np.float32)[..., ::2]
    gridsample.grid_sample(x, np.zeros((1, 2, 2, 2), np.float32), channel_last=True)
    assert calls == ["channel"]
    # a size-1 axis added with np.newaxis (stride 0): still a point at a time
    calls.clear()
    x = np.ones((1, 4, 4, 8), np.float32)[:, None]
    gridsample.grid_sample(x, np.zeros((1, 2, 2, 2, 3), np.float32), channel_last=True)
    assert calls == ["point"]


# The backward over channel-last memory of many channels: a point at a time
# (gridsample._grad_interleaved; more than PLANAR_MAX_CHANNELS contiguous channels).

@pytest.mark.parametrize("pad,x_dtype,grid_dtype", GRAD_PAD_DTYPES)
@pytest.mark.parametrize("rank, mode", [(2, "linear"), (3, "linear"), (2, "nearest"),
                                        (3, "nearest"), (2, "cubic"), (3, "cubic")])
def test_many_channels_last_gradients_equal_to_the_general_kernels(rng, rank, mode, pad,
                                                                   x_dtype, grid_dtype):
    """Both gradients bit for bit (up to the sign of a zero) against the general kernels,
    NaN, ±inf, huge and edge points and non-finite X included; the grid gradient also
    equal to channel-first memory's (every kernel adds the channels in one order)."""
    out = (12, 10, 5)[:rank]
    grid = nasty_grid(rng, (2,) + out + (rank,), grid_dtype)
    for channels in _MANY_CHANNELS + (13,):  # 13: the scatter's tail steps of 8, 4 and 1
        x = rng.standard_normal((2,) + (9, 11, 7)[:rank] + (channels,)).astype(x_dtype)
        x[(0,) + (2, 3, 4)[:rank] + (channels - 1,)] = np.inf
        x[(1,) + (0, 0, 0)[:rank] + (1,)] = np.nan
        gout = rng.standard_normal((2,) + out + (channels,)).astype(x_dtype)
        for align, mask, g in itertools.product(ALIGNS, ((False, True), (True, False),
                                                         (True, True)), (grid, grid[:1])):
            args = (gout, x, g, mode, pad, align)
            fast = gridsample.grid_sample_backward(*args, output_mask=mask, channel_last=True)
            with _engine.use_kernels("general"):
                slow = gridsample.grid_sample_backward(*args, output_mask=mask,
                                                       channel_last=True)
            for a, b in zip(fast, slow):
                np.testing.assert_array_equal(a, b)
            if mask[1]:
                first = gridsample.grid_sample_backward(
                    np.moveaxis(gout, -1, 1), np.moveaxis(x, -1, 1), g, mode, pad, align,
                    output_mask=(False, True))[1]
                np.testing.assert_array_equal(fast[1], first)


@pytest.mark.parametrize("mode", VECTOR_MODES)
def test_many_channels_last_gradients_chunks_threads_and_strides(rng, monkeypatch, mode):
    """A single item large enough for two point chunks (private dL/dx buffers), one against
    two threads; strided X (the kernels read a contiguous copy); non-contiguous dL/dy
    channels (the general kernels run, spied)."""
    from gridsample import _backward

    x = rng.standard_normal((1, 40, 50, 19)).astype(np.float32)
    grid = nasty_grid(rng, (1, 180, 200, 2), np.float32)
    gout = rng.standard_normal((1, 180, 200, 19)).astype(np.float32)
    args = (gout, x, grid, mode, "border", False)
    fast = gridsample.grid_sample_backward(*args, channel_last=True)
    with _engine.use_kernels("general"):
        slow = gridsample.grid_sample_backward(*args, channel_last=True)
    numba = pytest.importorskip("numba")
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        one = gridsample.grid_sample_backward(*args, channel_last=True)
    finally:
        numba.set_num_threads(threads)
    for a, b, c in zip(fast, slow, one):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    big = rng.standard_normal((1, 24, 30, 22)).astype(np.float32)
    xs = big[:, ::2, 1::2, 2:21]
    small = nasty_grid(rng, (1, 6, 7, 2), np.float32)
    go = rng.standard_normal((1, 6, 7, 19)).astype(np.float32)
    np.testing.assert_array_equal(
        gridsample.grid_sample_backward(go, xs, small, mode, channel_last=True)[0],
        gridsample.grid_sample_backward(go, np.ascontiguousarray(xs), small, mode,
                                        channel_last=True)[0])
    # the grid gradient alone reads X in place: channels 2 apart run the general kernels
    xw = big[:, ::2, 1::2, ::2]
    grads = {}
    for family in ("auto", "general"):
        with _engine.use_kernels(family):
            grads[family] = gridsample.grid_sample_backward(
                go[..., :11], xw, small, mode, channel_last=True, output_mask=(False, True))[1]
    np.testing.assert_array_equal(grads["auto"], grads["general"])
    calls = _spy_on(monkeypatch, _backward.INPUT_GRAD_INTERLEAVED_ENTRIES)
    _backward._prepared.entries.clear()  # prepared runs hold the entries they chose
    wide = rng.standard_normal((1, 6, 7, 38)).astype(np.float32)
    strided = gridsample.grid_sample_backward(wide[..., ::2], xs, small, mode,
                                              channel_last=True)
    assert calls == []
    with _engine.use_kernels("general"):
        want = gridsample.grid_sample_backward(wide[..., ::2], xs, small, mode,
                                               channel_last=True)
    for a, b in zip(strided, want):
        np.testing.assert_array_equal(a, b)
    gridsample.grid_sample_backward(np.ascontiguousarray(wide[..., ::2]), xs, small, mode,
                                    channel_last=True)
    assert len(calls) == 1


def test_the_backward_sweeps_many_channels_last_a_point_at_a_time(monkeypatch):
    """More than ``PLANAR_MAX_CHANNELS`` contiguous channel-last channels run the
    interleaved entries; at most that many, the planar ones."""
    from gridsample import _backward

    monkeypatch.setenv("GRIDSAMPLE_ONE_PASS", "off")
    grids = _spy_on(monkeypatch, _backward.GRID_GRAD_INTERLEAVED_ENTRIES)
    inputs = _spy_on(monkeypatch, _backward.INPUT_GRAD_INTERLEAVED_ENTRIES)
    planar = _spy_on(monkeypatch, _backward.INPUT_GRAD_ENTRIES)
    grid = np.zeros((1, 3, 3, 2), np.float32)
    for channels in (_engine.PLANAR_MAX_CHANNELS, _engine.PLANAR_MAX_CHANNELS + 1):
        x = np.ones((1, 4, 4, channels), np.float32)
        gout = np.ones((1, 3, 3, channels), np.float32)
        gridsample.grid_sample_backward(gout, x, grid, "cubic", "border", channel_last=True)
    assert grids == [(2, 2, 1)] and inputs == [(2, 2, 1)] and planar == [(2, 2, 1)]


@pytest.mark.parametrize("rank", [2, 3])
def test_many_channels_last_on_a_large_input_prefetch(rng, rank):
    """X of 16 MiB, where the point-at-a-time sweeps ask for a later point's lines
    (gridsample._prefetch.worth_prefetching; random points jump): forward and both
    gradients equal to the general kernels'."""
    from gridsample._prefetch import PREFETCH_MIN_BYTES

    spatial = (1024, 256) if rank == 2 else (64, 64, 64)
    x = np.ones((1,) + spatial + (16,), np.float32)
    assert x.nbytes >= PREFETCH_MIN_BYTES
    x[(0,) + tuple(s // 2 for s in spatial)] = np.arange(16)  # a bump to sample
    x[0, -1] = -2.5
    out = (9, 8, 7)[:rank]
    grid = nasty_grid(rng, (1,) + out + (rank,), np.float32)
    gout = rng.standard_normal((1,) + out + (16,)).astype(np.float32)
    for mode in ("linear", "nearest"):
        with _engine.use_kernels("general"):
            y = gridsample.grid_sample(x, grid, mode, "border", channel_last=True)
            grads = gridsample.grid_sample_backward(gout, x, grid, mode, "border",
                                                    channel_last=True)
        np.testing.assert_array_equal(
            gridsample.grid_sample(x, grid, mode, "border", channel_last=True), y)
        for a, b in zip(gridsample.grid_sample_backward(gout, x, grid, mode, "border",
                                                        channel_last=True), grads):
            np.testing.assert_array_equal(a, b)
