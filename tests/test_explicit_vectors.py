"""The 2-D kernels written with explicit vectors (gridsample._simd_linear, on
gridsample._simd): linear's single-channel one pass, its planner with the gathering sweeps
(one channel, two channels, three channel-last channels interleaved) over its table, and
nearest's one pass over every channel of a point.  Each is run on its own and must give, for every
point it does, the bits of the planned sweep as the LLVM-vectorized loops compute it (a child
process compiled for Sandy Bridge, where no explicit vectors serve), do every whole group of
lanes and write nothing else: with AVX-512's 16 lanes here and, in a child process compiled
for Haswell, AVX2's 8.  Through ``grid_sample`` they also run in every 2-D linear test of
test_vector_kernels.py, test_row_loads.py and test_one_pass.py.  Nearest's planned sweep has
no explicit vectors, so its one pass is compared with it in the same process.

The scalar loops read a tap outside through a clamped offset and a select, the explicit ones
through a masked gather, and a NaN point through a NaN coordinate rather than a NaN weight:
the same numbers, a NaN as any NaN (test_one_pass.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numba
import numpy as np
import pytest

import gridsample
from conftest import ALIGNS
from gridsample._grad_vector import _grad_linear_2d_point
from gridsample._simd import AVAILABLE, LANES
from gridsample._simd_linear import (
    plan_grad_linear_2d_groups,
    plan_linear_2d_groups,
    sum_linear_2d_groups,
    sum_nearest_2d_groups,
    sweep_linear_2d_cl_groups,
    sweep_linear_2d_groups,
    whole_groups,
)
from gridsample._taps import AXIS_ONE, axis_constants
from gridsample._target import fast_gathers, has_avx2
from test_one_pass import assert_same_bits
from test_vector_kernels import nasty_grid

pytestmark = pytest.mark.xdist_group("vector-linear-2d")
needs_vectors = pytest.mark.skipif(not AVAILABLE, reason="x86 with AVX2 only")

_PAD_CODES = {"zeros": 0, "border": 1, "constant": 0}


@numba.njit
def _groups(points, nb, xc, oc, ax0, ax1, st0, st1, zero, pad):
    return sum_linear_2d_groups(points, whole_groups(nb, ax0, ax1, pad), xc, oc, ax0, ax1, st0,
                                st1, zero, pad)


@numba.njit
def _plan_table(points, nb, ax0, ax1, st0, st1, pad):
    """The explicit planner's table of ``nb`` points (-7 where it wrote nothing) and how many
    points it planned."""
    off = np.full((4, nb), -7, np.int32)
    wts = np.zeros((4, nb), np.float32)
    planned = plan_linear_2d_groups(points, whole_groups(nb, ax0, ax1, pad), off, wts, ax0, ax1,
                                    st0, st1, pad)
    return off, wts, planned


@numba.njit
def _planned_groups(points, nb, xc, oc, ax0, ax1, st0, st1, zero, pad):
    off, wts, planned = _plan_table(points, nb, ax0, ax1, st0, st1, pad)
    swept = sweep_linear_2d_groups(xc, xc, off, wts, planned, oc, oc, zero, zero, 0)
    # the two-channel sweep, here of the same channel twice: the same sums
    pair_a, pair_b = np.full(nb, np.nan, np.float32), np.full(nb, np.nan, np.float32)
    paired = sweep_linear_2d_groups(xc, xc, off, wts, planned, pair_a, pair_b, zero, zero, 1)
    same = paired == planned
    for j in range(nb):
        for v in (pair_a[j], pair_b[j]):
            same = same and (v == oc[j] or (v != v and oc[j] != oc[j]))
    return planned if swept == planned and same and (off[:, planned:] == -7).all() else -1


def _flat_from(x):
    """The memory of the view ``x`` flat from its first element, and its element strides."""
    base = x.base if x.base is not None else x
    start = (x.__array_interface__["data"][0] - base.__array_interface__["data"][0]) \
        // x.itemsize
    return base.reshape(-1)[start:], tuple(s // x.itemsize for s in x.strides)


def _points_and_axes(grid, h, w, padding, align):
    """``grid``'s points flat, their count, and the axis constants of an (h, w) input."""
    points = np.ascontiguousarray(grid.reshape(-1))
    ax0 = tuple(axis_constants(w, align, np.float32, pad=_PAD_CODES[padding]))
    ax1 = tuple(axis_constants(h, align, np.float32, pad=_PAD_CODES[padding]))
    return points, points.size // 2, ax0, ax1


def explicit_sums(x, grid, padding, align, fill, planned=False):
    """The explicit one pass (or with ``planned`` the planner, then the sweep) over every
    point of ``grid`` (1, H', W', 2) on ``x`` (H, W), a strided view allowed: (points done,
    output with NaN where nothing was written)."""
    xc, (st1, st0) = _flat_from(x)
    points, nb, ax0, ax1 = _points_and_axes(grid, *x.shape, padding, align)
    out = np.full(nb, np.nan, np.float32)
    run = _planned_groups if planned else _groups
    done = run(points, nb, xc, out, ax0, ax1, st0, st1, np.float32(fill), _PAD_CODES[padding])
    return done, out


def _inputs(seed: int):
    rng = np.random.default_rng(seed)
    wide = rng.standard_normal((11, 26)).astype(np.float32)
    wide.reshape(-1)[[0, 7, 30]] = [np.inf, -np.inf, np.nan]
    cases = []
    for padding in _PAD_CODES:
        for align in ALIGNS:
            for x in (wide[:, :13], wide[1::2, ::2], wide[:1, :]):
                grid = nasty_grid(rng, (1, 7, 11, 2), np.float32)  # 77 points: a tail
                cases.append((x, grid, padding, align))
    return cases


def _planned(monkeypatch, x, grid, padding, align, fill):
    monkeypatch.setenv("GRIDSAMPLE_ONE_PASS", "off")
    kwargs = {"fill_value": fill} if padding == "constant" else {}
    return gridsample.grid_sample(x[None, None], grid, "linear", padding, align,
                                  **kwargs).reshape(-1)


def _check(got, want, lanes):
    done, out = got
    nb = want.size
    expect_done = nb - nb % lanes
    assert done == expect_done
    assert_same_bits(out[:done], want[:done])
    assert np.isnan(out[done:]).all()  # nothing written past the groups


@pytest.fixture(scope="module")
def before(tmp_path_factory):
    """The planned sweep's results on :func:`_inputs` as the tree before the explicit vectors
    computed them: the LLVM-vectorized loops, forced by compiling for a CPU without AVX2
    (``sandybridge``: no vectors serve there)."""
    return _child(tmp_path_factory.mktemp("before"), "sandybridge", "before")


def _child(cache, cpu, what):
    code = (
        "import json, sys, numpy as np\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import test_explicit_vectors as t\n"
        "print(json.dumps(t.child_rows(sys.argv[2])))\n")
    env = dict(os.environ, NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES="",
               GRIDSAMPLE_CACHE_DIR=str(cache), NUMBA_CACHE_DIR=str(cache),
               GRIDSAMPLE_ONE_PASS="off", GRIDSAMPLE_ROW_LOADS="gather",
               GRIDSAMPLE_KERNELS="auto")
    env.pop("GRIDSAMPLE_VECTOR_WIDTH", None)
    proc = subprocess.run([sys.executable, "-c", code, os.path.dirname(__file__), what],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def child_rows(what):
    """What a child process reports: its lanes, then per input of :func:`_inputs` the
    planned sweep's result bits (``before``) or the explicit kernels' (points done, bits)
    for the one pass and the planner with the sweep."""
    from gridsample._simd import LANES as lanes

    rows = [lanes]
    if what == "grad":
        for x, grid, padding, align in _inputs(0):
            rows.append(list(grad_tables_agree(x, grid, padding, align)))
        return rows
    if what == "channel-last":
        for x, grid, padding, align in _channel_last_inputs(0):
            done, out = explicit_channel_last(x, grid, padding, align)
            rows.append([int(done), out.view(np.uint32).tolist()])
        return rows
    if what == "nearest":
        for x, grid, padding, align in _nearest_inputs(0):
            done, out = explicit_nearest(x, grid, padding, align, _nearest_fills(padding))
            rows.append([int(done), out.view(np.uint32).tolist()])
        return rows
    for x, grid, padding, align in _inputs(0):
        fill = 2.5 if padding == "constant" else 0.0
        if what == "before":
            kwargs = {"fill_value": fill} if padding == "constant" else {}
            out = gridsample.grid_sample(x[None, None], grid, "linear", padding, align,
                                         **kwargs).reshape(-1)
            rows.append(out.view(np.uint32).tolist())
            continue
        for planned in (False, True):
            done, out = explicit_sums(x, grid, padding, align, fill, planned)
            rows.append([int(done), out.view(np.uint32).tolist()])
    return rows


@numba.njit
def _nearest_groups(points, nb, xn, xs_c, C, on, os_c, ax0, ax1, st0, st1, azero, pad):
    return sum_nearest_2d_groups(points, whole_groups(nb, ax0, ax1, pad), xn, xs_c, C, on,
                                 os_c, ax0, ax1, st0, st1, azero, np.float32(1),
                                 np.float32(np.nan), pad)


def _nearest_inputs(seed: int):
    """Two-channel inputs (2, H, W), strided views among them, with the grids of
    :func:`_inputs`."""
    rng = np.random.default_rng(seed)
    wide = rng.standard_normal((2, 11, 26)).astype(np.float32)
    wide.reshape(-1)[[0, 7, 30, 300]] = [np.inf, -np.inf, np.nan, -0.0]
    cases = []
    for padding in _PAD_CODES:
        for align in ALIGNS:
            for x in (wide[:, :, :13], wide[:, 1::2, ::2], wide[:, :1, :]):
                grid = nasty_grid(rng, (1, 7, 11, 2), np.float32)  # 77 points: a tail
                cases.append((x, grid, padding, align))
    return cases


def explicit_nearest(x, grid, padding, align, fills):
    """The explicit nearest one pass over every point of ``grid`` (1, H', W', 2) and both
    channels of ``x`` (2, H, W), a strided view allowed: (points done, output (2, points)
    with NaN where nothing was written)."""
    xn, (xs_c, st1, st0) = _flat_from(x)
    points, nb, ax0, ax1 = _points_and_axes(grid, *x.shape[1:], padding, align)
    out = np.full(2 * nb, np.nan, np.float32)
    done = _nearest_groups(points, nb, xn, xs_c, 2, out, nb, ax0, ax1, st0, st1,
                           np.asarray(fills, np.float32), _PAD_CODES[padding])
    return done, out.reshape(2, nb)


def _nearest_planned(monkeypatch, x, grid, padding, align, fills):
    monkeypatch.setenv("GRIDSAMPLE_ONE_PASS", "off")
    kwargs = {"fill_value": fills} if padding == "constant" else {}
    return gridsample.grid_sample(x[None], grid, "nearest", padding, align,
                                  **kwargs).reshape(2, -1)


def _nearest_fills(padding):
    return [2.5, -1.0] if padding == "constant" else [0.0, 0.0]


@numba.njit
def _cl_groups(points, nb, xn, ax0, ax1, st0, st1, pad, out, azero):
    off, wts, planned = _plan_table(points, nb, ax0, ax1, st0, st1, pad)
    return sweep_linear_2d_cl_groups(xn, 1, 3, off, wts, planned, out, 1, 3, azero)


def _channel_last_inputs(seed: int):
    """Three-channel channel-last inputs (H, W, 3), strided views among them, with grids of 77
    points (a tail)."""
    rng = np.random.default_rng(seed)
    wide = rng.standard_normal((11, 26, 3)).astype(np.float32)
    wide.reshape(-1)[[0, 7, 30, 300]] = [np.inf, -np.inf, np.nan, -0.0]
    return [(x, nasty_grid(rng, (1, 7, 11, 2), np.float32), padding, align)
            for padding in _PAD_CODES for align in ALIGNS
            for x in (wide[:, :13], wide[1::2, ::2], wide[:1])]


def _channel_last_fills(padding):
    return [2.5, -1.0, 7.0] if padding == "constant" else [0.0, 0.0, 0.0]


def explicit_channel_last(x, grid, padding, align):
    """The explicit planner, then the interleaving channel-last sweep, over every point of
    ``grid`` on ``x`` (H, W, 3): (points done, output (points, 3) with NaN where nothing was
    written)."""
    xn, (st1, st0, _) = _flat_from(x)
    points, nb, ax0, ax1 = _points_and_axes(grid, *x.shape[:2], padding, align)
    out = np.full(3 * nb, np.nan, np.float32)
    done = _cl_groups(points, nb, xn, ax0, ax1, st0, st1, _PAD_CODES[padding], out,
                      np.asarray(_channel_last_fills(padding), np.float32))
    return done, out.reshape(nb, 3)


def _channel_first_sums(x, grid, padding, align):
    """The planned sweep's sums of ``x`` (H, W, 3) laid out channel-first, as (points, 3)."""
    kwargs = {"fill_value": _channel_last_fills(padding)} if padding == "constant" else {}
    first = np.ascontiguousarray(np.moveaxis(x, -1, 0))[None]
    return gridsample.grid_sample(first, grid, "linear", padding, align,
                                  **kwargs).reshape(3, -1).T


def _check_channel_last(done, out, want, lanes, x, align, fast=True):
    """``fast``: whether the CPU's gathers are fast (elsewhere the groups do nothing)."""
    if (align and 1 in x.shape[:2]) or not fast:  # c = 0: the planner leaves such axes out
        assert done == 0
        return
    nb = want.shape[0]
    assert done == nb - nb % lanes
    assert_same_bits(out[:done], np.ascontiguousarray(want[:done]))
    assert np.isnan(out[done:]).all()  # nothing written past the groups


def _floats(bits):
    return np.array(bits, np.uint32).view(np.float32)


@needs_vectors
def test_the_groups_give_the_planned_sweeps_bits(monkeypatch, before):
    assert before[0] == 8 and not has_avx2("", "sandybridge")
    for (x, grid, padding, align), want in zip(_inputs(0), before[1:]):
        fill = 2.5 if padding == "constant" else 0.0
        want = _floats(want)
        np.testing.assert_array_equal(want, _planned(monkeypatch, x, grid, padding, align,
                                                     fill))
        for planned in (False, True):
            got = explicit_sums(x, grid, padding, align, fill, planned)
            if align and 1 in x.shape:  # c = 0 would turn ±inf into NaN: the scalar loop
                assert got[0] == 0
                continue
            _check(got, want, LANES)


@needs_vectors
def test_the_groups_with_avx2_code_in_a_child_process(tmp_path, before):
    """8 lanes and AVX2's gathers, compiled for Haswell (also on an AVX-512 machine)."""
    rows = _child(tmp_path, "haswell", "explicit")
    assert rows[0] == 8
    results = iter(rows[1:])
    for (x, _, _, align), want in zip(_inputs(0), before[1:]):
        for _ in range(2):  # the one pass, then the planner and sweep
            done, bits = next(results)
            if align and 1 in x.shape:
                assert done == 0
                continue
            _check((done, _floats(bits)), _floats(want), 8)


def _check_nearest(done, out, want, lanes, x, align):
    if align and 1 in x.shape:  # c = 0 would turn ±inf into NaN: the scalar loop
        assert done == 0
        return
    nb = want.shape[1]
    assert done == nb - nb % lanes
    for c in range(2):
        assert_same_bits(out[c, :done], want[c, :done])
    assert np.isnan(out[:, done:]).all()  # nothing written past the groups


@needs_vectors
def test_the_nearest_groups_give_the_planned_sweeps_bits(monkeypatch):
    for x, grid, padding, align in _nearest_inputs(0):
        fills = _nearest_fills(padding)
        want = _nearest_planned(monkeypatch, x, grid, padding, align, fills)
        done, out = explicit_nearest(x, grid, padding, align, fills)
        _check_nearest(done, out, want, LANES, x, align)


@needs_vectors
def test_the_nearest_groups_with_avx2_code_in_a_child_process(tmp_path, monkeypatch):
    rows = _child(tmp_path, "haswell", "nearest")
    assert rows[0] == 8
    for (x, grid, padding, align), (done, bits) in zip(_nearest_inputs(0), rows[1:]):
        want = _nearest_planned(monkeypatch, x, grid, padding, align, _nearest_fills(padding))
        _check_nearest(done, _floats(bits).reshape(2, -1), want, 8, x, align)


@needs_vectors
def test_the_channel_last_groups_give_the_channel_first_sums_bits(monkeypatch):
    """Channel-last sums interleaved in registers: each the bits of the channel-first sweep's
    (the same planner and sums), and through ``grid_sample`` the general kernels' numbers."""
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", "gather")
    for x, grid, padding, align in _channel_last_inputs(0):
        want = _channel_first_sums(x, grid, padding, align)
        done, out = explicit_channel_last(x, grid, padding, align)
        _check_channel_last(done, out, want, LANES, x, align, fast_gathers())
        kwargs = {"fill_value": _channel_last_fills(padding)} if padding == "constant" else {}
        got = gridsample.grid_sample(x[None], grid, "linear", padding, align, channel_last=True,
                                     **kwargs)
        assert_same_bits(got.reshape(-1, 3), np.ascontiguousarray(want))
        with gridsample._engine.use_kernels("general"):
            np.testing.assert_array_equal(got, gridsample.grid_sample(
                x[None], grid, "linear", padding, align, channel_last=True, **kwargs))


@needs_vectors
def test_the_channel_last_groups_with_avx2_code_in_a_child_process(tmp_path, monkeypatch):
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", "gather")
    rows = _child(tmp_path, "haswell", "channel-last")
    assert rows[0] == 8
    for (x, grid, padding, align), (done, bits) in zip(_channel_last_inputs(0), rows[1:]):
        want = _channel_first_sums(x, grid, padding, align)
        _check_channel_last(done, _floats(bits).reshape(-1, 3), want, 8, x, align)


@numba.njit(error_model="numpy")  # the kernels' flags: the scalar rule's NaN is 0 / 0
def _grad_tables(points, nb, ax0, ax1, st0, st1, pad, explicit):
    """The grid gradient's plan table of ``nb`` points by the explicit groups (``explicit``)
    or by the scalar rule point by point, how many points were planned; -7 in the offsets
    and 1234.5 in the other rows where nothing was written."""
    off = np.full((4, nb), -7, np.int32)
    dws = np.full((8, nb), 1234.5, np.float32)
    chain = np.full((2, nb), 1234.5, np.float32)
    if explicit:
        done = plan_grad_linear_2d_groups(points, whole_groups(nb, ax0, ax1, pad), off, dws,
                                          chain, ax0, ax1, st0, st1, pad)
    else:
        done = nb
        for j in range(nb):
            _grad_linear_2d_point(points, j, pad, ax0, ax1, st0, st1, ax0[AXIS_ONE], False,
                                  off, dws, chain)
    return done, off, dws, chain


def grad_tables_agree(x, grid, padding, align):
    """(points the explicit groups planned, whether their rows are the scalar rule's bits and
    nothing past them was written).  A NaN as any NaN; a NaN point's offsets may differ (-1
    from the vectors, the scalar rule's are those of a point moved to 0): its slopes are NaN,
    so its sums are NaN whatever its taps read."""
    _, (st1, st0) = _flat_from(x)
    points, nb, ax0, ax1 = _points_and_axes(grid, *x.shape, padding, align)
    pad = _PAD_CODES[padding]
    done, *got = _grad_tables(points, nb, ax0, ax1, st0, st1, pad, True)
    _, *want = _grad_tables(points, nb, ax0, ax1, st0, st1, pad, False)
    same = all((a[:, done:] == (-7 if a.dtype == np.int32 else 1234.5)).all() for a in got)
    (off, *rows), (want_off, *want_rows) = got, want
    numbers = ~np.isnan(want_rows[0][:, :done]).any(axis=0)
    same &= bool((off[:, :done][:, numbers] == want_off[:, :done][:, numbers]).all())
    for a, b in zip(rows, want_rows):
        a, b = a[:, :done], b[:, :done]
        nan = np.isnan(a)
        same &= bool((nan == np.isnan(b)).all())
        same &= bool((a.view(np.uint32)[~nan] == b.view(np.uint32)[~nan]).all())
    return int(done), same


def _check_grad(rows, lanes):
    for (x, _, _, align), (done, same) in zip(_inputs(0), rows):
        assert same
        if align and 1 in x.shape:  # c = 0: the scalar rule's (see whole_groups)
            assert done == 0
        else:
            assert done == 77 - 77 % lanes


@needs_vectors
def test_the_grid_gradient_groups_give_the_scalar_plan_bits():
    """Offsets, weight slopes and chain factors (border's clip, ±inf and NaN points)."""
    _check_grad([grad_tables_agree(*case) for case in _inputs(0)], LANES)


@needs_vectors
def test_the_grid_gradient_groups_with_avx2_code_in_a_child_process(tmp_path):
    rows = _child(tmp_path, "haswell", "grad")
    assert rows[0] == 8
    _check_grad(rows[1:], 8)


@pytest.mark.parametrize("features,cpu,expected", [
    ("+avx2,+fma", "generic", True), ("", "haswell", True), ("", "znver3", True),
    ("-avx2", "haswell", False), ("", "sandybridge", False), ("+sse4.2", "x86-64", False),
])
def test_avx2_is_read_from_the_cpu_name_and_features(features, cpu, expected):
    assert has_avx2(features, cpu) is expected


def test_interpreted_the_scalar_loops_do_every_point(rng):
    """With ``NUMBA_DISABLE_JIT=1`` the kernels are plain-Python stand-ins that do no point
    and the scalar loops do them all: the compiled result, in a child process."""
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    grid = nasty_grid(rng, (1, 4, 5, 2), np.float32)
    code = (
        "import sys, numpy as np, gridsample\n"
        "from gridsample import _simd_linear as s\n"
        "assert s.sum_linear_2d_groups is s.sum_nearest_2d_groups is s._nothing\n"
        "x, grid = np.load(sys.argv[1]), np.load(sys.argv[2])\n"
        "one = gridsample.grid_sample(x[:, :1], grid)\n"
        "np.save(sys.argv[3], np.concatenate([gridsample.grid_sample(x, grid), one], 1))\n")
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, f"{name}.npy") for name in ("x", "grid", "out")]
        np.save(paths[0], x)
        np.save(paths[1], grid)
        env = dict(os.environ, NUMBA_DISABLE_JIT="1")
        proc = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True,
                              text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = np.load(paths[2])
    want = gridsample.grid_sample(x, grid)
    np.testing.assert_array_equal(out, np.concatenate([want, want[:, :1]], 1))


@pytest.mark.parametrize("case", ["zeros", "border", "reflection", "size 1 aligned", "offset",
                                  "longer than 2**24"])
def test_which_blocks_the_vectors_take(case):
    """``whole_groups``: every whole group of lanes where the vectors' dropped steps keep
    every number, none elsewhere (the scalar loops take those blocks)."""
    pad = {"border": 1, "reflection": 2}.get(case, 0)
    size = {"size 1 aligned": 1, "longer than 2**24": 2 ** 24 + 1}.get(case, 40)
    ax = tuple(axis_constants(size, case == "size 1 aligned", np.float32, pad=pad,
                              offset=2 if case == "offset" else 0))
    wide = tuple(axis_constants(50, False, np.float32, pad=pad))
    expected = 100 - 100 % LANES if case in ("zeros", "border") else 0
    assert whole_groups(100, ax, wide, pad) == expected
    assert whole_groups(100, wide, ax, pad) == expected
