"""The single 2-D linear channel summed with explicit vectors
(gridsample._simd_linear.sum_linear_2d_groups, on gridsample._simd): run on its own, it must
give the planned sweep's bits (``GRIDSAMPLE_ONE_PASS=off``, a different loop) for every
point it sums, sum every whole group of lanes, and write nothing else; with AVX-512's 16
lanes here and, in a child process compiling for Haswell, AVX2's 8.

The planned sweep reads a tap outside through a clamped offset and a select; the explicit
loop through a masked gather, and its NaN points through a NaN coordinate rather than a
NaN weight: the same numbers, a NaN as any NaN (test_one_pass.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

import gridsample
from conftest import ALIGNS
from gridsample._simd import AVAILABLE, LANES, has_avx2
from gridsample._simd_linear import sum_linear_2d_groups
from gridsample._taps import axis_constants
from test_one_pass import assert_same_bits
from test_vector_kernels import nasty_grid

pytestmark = pytest.mark.xdist_group("vector-linear-2d")
needs_vectors = pytest.mark.skipif(not AVAILABLE, reason="x86 with AVX2 only")

_PAD_CODES = {"zeros": 0, "border": 1, "constant": 0}


@numba.njit
def _groups(points, nb, xc, oc, ax0, ax1, st0, st1, zero, pad):
    return sum_linear_2d_groups(points, nb, xc, oc, ax0, ax1, st0, st1, zero, pad)


def explicit_sums(x, grid, padding, align, fill):
    """The explicit loop over every point of ``grid`` (1, H', W', 2) on ``x`` (H, W), a
    strided view allowed: (points summed, output with NaN where it wrote nothing)."""
    h, w = x.shape
    base = x.base if x.base is not None else x
    xc = base.reshape(-1)
    st1, st0 = (s // x.itemsize for s in x.strides)
    start = (x.__array_interface__["data"][0] - base.__array_interface__["data"][0]) \
        // x.itemsize
    points = np.ascontiguousarray(grid.reshape(-1))
    nb = points.size // 2
    out = np.full(nb, np.nan, np.float32)
    ax0 = tuple(axis_constants(w, align, np.float32, pad=_PAD_CODES[padding]))
    ax1 = tuple(axis_constants(h, align, np.float32, pad=_PAD_CODES[padding]))
    done = _groups(points, nb, xc[start:], out, ax0, ax1, st0, st1, np.float32(fill),
                   _PAD_CODES[padding])
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


@needs_vectors
def test_the_groups_give_the_planned_sweeps_bits(monkeypatch):
    for x, grid, padding, align in _inputs(0):
        fill = 2.5 if padding == "constant" else 0.0
        got = explicit_sums(x, grid, padding, align, fill)
        want = _planned(monkeypatch, x, grid, padding, align, fill)
        if align and 1 in x.shape:  # c = 0 would turn ±inf into NaN: left to the scalar loop
            assert got[0] == 0
            continue
        _check(got, want, LANES)


@needs_vectors
def test_the_groups_with_avx2_code_in_a_child_process(monkeypatch, tmp_path):
    """8 lanes and AVX2's gathers, compiled for Haswell (also on an AVX-512 machine)."""
    code = (
        "import json, sys, numpy as np\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from test_explicit_vectors import explicit_sums, _inputs\n"
        "from gridsample._simd import LANES\n"
        "rows = [LANES]\n"
        "for x, grid, padding, align in _inputs(0):\n"
        "    done, out = explicit_sums(x, grid, padding, align,\n"
        "                              2.5 if padding == 'constant' else 0.0)\n"
        "    rows.append([int(done), out.view(np.uint32).tolist()])\n"
        "print(json.dumps(rows))\n")
    env = dict(os.environ, NUMBA_CPU_NAME="haswell", NUMBA_CPU_FEATURES="",
               GRIDSAMPLE_CACHE_DIR=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path))
    env.pop("GRIDSAMPLE_VECTOR_WIDTH", None)
    proc = subprocess.run([sys.executable, "-c", code, os.path.dirname(__file__)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout.splitlines()[-1])
    assert rows[0] == 8
    for (x, grid, padding, align), (done, bits) in zip(_inputs(0), rows[1:]):
        fill = 2.5 if padding == "constant" else 0.0
        if align and 1 in x.shape:
            assert done == 0
            continue
        out = np.array(bits, np.uint32).view(np.float32)
        _check((done, out), _planned(monkeypatch, x, grid, padding, align, fill), 8)


@pytest.mark.parametrize("features,cpu,expected", [
    ("+avx2,+fma", "generic", True), ("", "haswell", True), ("", "znver3", True),
    ("-avx2", "haswell", False), ("", "sandybridge", False), ("+sse4.2", "x86-64", False),
])
def test_avx2_is_read_from_the_cpu_name_and_features(features, cpu, expected):
    assert has_avx2(features, cpu) is expected


def test_interpreted_or_elsewhere_it_sums_nothing():
    """The Python body (``NUMBA_DISABLE_JIT=1``, or no AVX2) leaves every point to the
    scalar loop."""
    out = np.zeros(16, np.float32)
    ax = tuple(axis_constants(4, False, np.float32))
    assert sum_linear_2d_groups(np.zeros(32, np.float32), 16, np.ones(16, np.float32), out,
                                ax, ax, 1, 4, np.float32(0), 0) == 0
    assert not out.any()
