"""Every registered mode and padding, through every path; footprints cover every read.

The registry (gridsample._registry) is the one place a mode or padding is
defined.  These tests walk all of it, so a new entry is exercised
everywhere without a test naming it: the forward (each kernel family), the
backward, the reference twin, the option parsers of every API, and the
Dask footprints, which must contain every index the reference reads
(property test with NaN, ±inf, huge and edge coordinates).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gridsample
from gridsample import _axis_numpy, _engine, reference
from gridsample._options import parse_mode, parse_padding
from gridsample._registry import MODES, PADDINGS, mode_of, padding_of, taps_per_point
from gridsample.dask._footprint import interval_window, points_window

PAIRS = list(itertools.product(MODES, PADDINGS))
PAIR_IDS = [f"{m.name}-{p.name}" for m, p in PAIRS]
SPECIALS = [np.nan, np.inf, -np.inf, 1e30, -1e30, 1.0, -1.0, 0.0, 1.0 + 1e-7, -1.0 - 1e-7]


def test_codes_and_names_are_unique():
    for table in (MODES, PADDINGS):
        codes = [e.code for e in table]
        names = [n for e in table for n in (e.name, *e.aliases)]
        assert len(set(codes)) == len(codes) and len(set(names)) == len(names)
    for m in MODES:
        assert m.reach[1] - m.reach[0] + 1 == m.taps
        assert m.anchor in ("floor", "rint", "round") and m.pads in ("coordinate", "taps")
        # vector kernels exist for 2-D and 3-D; a grid-gradient vector kernel plans with them
        assert set(m.vector_ranks) <= {2, 3}
        assert set(m.grid_grad_vector_ranks) <= set(m.vector_ranks)


@pytest.mark.parametrize("m,p", PAIRS, ids=PAIR_IDS)
def test_every_name_and_code_parses(m, p):
    for name in (m.name, *m.aliases, m.code):
        assert parse_mode(name) == m.code
    for name in (p.name, *p.aliases, p.code):
        assert parse_padding(name) == p.code
    assert mode_of(m.code) is m and padding_of(p.code) is p


def _case(rng, rank):
    x = rng.standard_normal((2, 2) + (5, 4, 3, 3)[:rank]).astype(np.float64)
    out = {1: (7,), 2: (3, 4), 3: (3, 2, 2), 4: (2, 2, 2, 2)}[rank]
    grid = rng.uniform(-1.4, 1.4, (2, *out, rank))
    flat = grid.reshape(-1)
    flat[: len(SPECIALS)] = SPECIALS
    return x, grid


@pytest.mark.parametrize("m,p", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_forward_and_backward_on_every_path(rng, m, p, rank):
    if taps_per_point(m.code, rank) > 64:
        rank = 3  # keep 4-D cubic small: 3-D covers the same paths
    x, grid = _case(rng, rank)
    want = reference.grid_sample(x, grid, m.name, p.name, True)
    tol = 1e-10 if m.spline else 1e-12  # a B-spline's prefilter: dense solve vs recursion
    for family in ("general", "nd"):  # the vector family: test_vector_kernels.py
        with _engine.use_kernels(family):
            got = gridsample.grid_sample(x, grid, m.code, p.code, True)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=family)
    gout = rng.standard_normal(want.shape)
    gx, gg = gridsample.grid_sample_backward(gout, x, grid, m.name, p.name, True)
    rx, rg = reference.grid_sample_backward(gout, x, grid, m.name, p.name, True)
    np.testing.assert_allclose(gx, rx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gg, rg, rtol=1e-9, atol=1e-9)


def _reads(coord_values, size, m, p, align):
    """Every index the reference reads along one axis for these grid values."""
    with np.errstate(all="ignore"):  # values near float64's limit unnormalize to ±inf
        coord = _axis_numpy.unnormalize(np.asarray(coord_values, np.float64), size, align)
        taps, nan = _axis_numpy.axis_taps(coord, size, m.code, p.code, align)
    read = set()
    for idx, _, ok in taps:
        read.update(int(i) for i in idx[ok & ~nan])
    return read


_values = st.one_of(st.floats(-3, 3), st.sampled_from(SPECIALS),
                    st.floats(allow_nan=True, allow_infinity=True))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.sampled_from(PAIRS), st.integers(1, 9), st.booleans(),
       st.lists(_values, min_size=1, max_size=12))
def test_footprint_contains_every_read(pair, size, align, values):
    m, p = pair
    g = np.array(values, np.float64)
    read = _reads(g, size, m, p, align)
    window = points_window(g.reshape(-1, 1), (size,), m.code, p.code, align, np.float64)
    if window is None:
        assert not read
        return
    (lo, hi), = window
    assert 0 <= lo <= hi <= size - 1
    assert all(lo <= i <= hi for i in read), (read, (lo, hi))
    finite = g[np.isfinite(g)]
    if finite.size:  # the interval form (affine blocks) covers the finite points too
        with np.errstate(over="ignore"):  # a finite value near float64's limit: ±inf
            coord = _axis_numpy.unnormalize(finite, size, align)
        span = interval_window(float(coord.min()), float(coord.max()), size, m.code, p.code,
                               align)
        inner = _reads(finite, size, m, p, align)
        if inner:
            assert span is not None and all(span[0] <= i <= span[1] for i in inner)


@pytest.mark.parametrize("padding", ["wrap", "symmetric", "mirror"])
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("size", [2**24 + 7, 2**23 + 1, 1000])
def test_the_interval_window_covers_float32_points_past_float32s_integers(padding, mode, size):
    # float32 coordinates fold by float32's rounded period past 2**24 (semantics §2); an
    # affine Dask block's window (float64, from its corners) must still cover what its
    # points read (it did not: the task then found its footprint outside the window).
    m, p = mode_of(parse_mode(mode)), padding_of(parse_padding(padding))
    for first in (size - 3.0, size + 2.0, 2.0 * size + 1.0, -5.0, -size - 2.0):
        u = np.array([first, first + 1.0, first + 2.0], np.float32)
        points = points_window(u[:, None], (size,), m.code, p.code, False, np.float32,
                               pixels=True)
        span = interval_window(float(u[0]), float(u[-1]), size, m.code, p.code, False)
        if points is not None:
            (lo, hi), = points
            assert span is not None and span[0] <= lo and hi <= span[1], (u, points, span)
