"""The vector width of gridsample's compiled code (gridsample._target).

LLVM prefers 256-bit vectors on Intel's AVX-512 CPUs; gridsample's functions
carry ``prefer-vector-width`` 512 wherever Numba's target has AVX-512F, and
``GRIDSAMPLE_VECTOR_WIDTH`` forces a width.  The width must never change a
result: the same call at 256 and 512 bits gives the same bits.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numba
import numpy as np
import pytest

import gridsample
from gridsample import _jit, _target
from gridsample._errors import GridSampleError
from gridsample._inline import Compiler

pytestmark = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="compiles with Numba")


@pytest.fixture
def fresh_width(monkeypatch):
    """Let :func:`_target.vector_width` and :func:`_target.tune_cpu` read the environment
    again, then restore them."""
    monkeypatch.setattr(_target, "_width", False)
    monkeypatch.setattr(_target, "_tune", False)
    return monkeypatch


@pytest.mark.parametrize("value, expected", [("256", 256), ("512", 512), (" 512 ", 512)])
def test_the_environment_forces_a_width(fresh_width, value, expected):
    fresh_width.setenv("GRIDSAMPLE_VECTOR_WIDTH", value)
    assert _target.vector_width() == expected


@pytest.mark.parametrize("avx512, expected", [(True, 512), (False, None)])
def test_auto_gives_512_bits_where_the_target_has_avx512(fresh_width, avx512, expected):
    fresh_width.setenv("GRIDSAMPLE_VECTOR_WIDTH", "auto")
    fresh_width.setattr(_target, "target_has_avx512", lambda: avx512)
    assert _target.vector_width() == expected


@pytest.mark.parametrize("value", ["128", "wide", "1024", "5l2"])
def test_a_bad_width_names_the_variable(fresh_width, value):
    fresh_width.setenv("GRIDSAMPLE_VECTOR_WIDTH", value)
    with pytest.raises(GridSampleError, match=r"GRIDSAMPLE_VECTOR_WIDTH=.*auto, 256, 512"):
        _target.vector_width()


@pytest.mark.parametrize("features, cpu, expected", [
    ("+avx2,+fma,+avx512f,+avx512bw", "rocketlake", True),
    ("+avx2,+fma,-avx512f", "sapphirerapids", False),  # removed from the CPU's own
    ("+avx2,+fma,-avx512f", "haswell", False),
    ("+avx2,+fma", "znver3", False),
    ("+avx512f", "haswell", True),  # added to the CPU's own
    ("+sse4.2,+avx2", "skylake-avx512", True),  # the CPU's own AVX-512 stays
    ("", "haswell", False),  # NUMBA_CPU_FEATURES="": the CPU's own features
    ("", "znver3", False),
    ("", "znver4", True),
    ("", "icelake-server", True),
])
def test_avx512_is_read_from_the_features_numba_compiles_for(features, cpu, expected):
    assert _target._has_avx512(features, cpu) is expected


def _function_ir():
    def body(a):
        s = a[0]
        for i in range(1, a.size):
            s += a[i]
        return s

    f = numba.njit(pipeline_class=Compiler)(body)  # not cached: its IR can be read
    f(np.ones(4, np.float32))
    return f.inspect_llvm(f.signatures[0])


def test_compiled_functions_carry_the_width(fresh_width):
    fresh_width.setenv("GRIDSAMPLE_VECTOR_WIDTH", "512")
    fresh_width.setenv("GRIDSAMPLE_TUNE_CPU", "none")
    ir = _function_ir()
    assert '"prefer-vector-width"="512"' in ir and "tune-cpu" not in ir
    fresh_width.setattr(_target, "_width", None)  # auto on a CPU without AVX-512
    assert "prefer-vector-width" not in _function_ir()


def test_a_named_tuning_is_carried(fresh_width):
    fresh_width.setenv("GRIDSAMPLE_TUNE_CPU", "Skylake")
    assert _target.tune_cpu() == "skylake"
    assert '"tune-cpu"="skylake"' in _function_ir()


@pytest.mark.parametrize("cpu, avx512, expected", [
    ("znver3", False, "skylake"), ("znver2", False, "skylake"), ("znver1", False, "skylake"),
    ("znver3", True, None),  # znver3 told to use AVX-512: not a Zen 3's code
    ("znver4", True, None), ("rocketlake", True, None), ("haswell", False, None)])
@pytest.mark.parametrize("value", [None, "", "auto", " AUTO "])
def test_auto_tunes_zen_1_3_for_gathers(fresh_width, value, cpu, avx512, expected):
    if value is None:
        fresh_width.delenv("GRIDSAMPLE_TUNE_CPU", raising=False)
    else:
        fresh_width.setenv("GRIDSAMPLE_TUNE_CPU", value)
    fresh_width.setattr(_target, "target_cpu_name", lambda: cpu)
    fresh_width.setattr(_target, "target_has_avx512", lambda: avx512)
    assert _target.tune_cpu() == expected


@pytest.mark.parametrize("cpu, rows, nearest", [
    ("znver4", True, 3), ("znver5", True, 1), ("rocketlake", False, 3),
    ("sapphirerapids", False, 3), ("haswell", False, 3)])
def test_cpu_rules_of_the_strategies(monkeypatch, cpu, rows, nearest):
    """What the CPU tables say for the host CPU, whatever code is compiled: linear's row
    loads ahead of gathers (AMD Zen 4 and 5), nearest's one pass for a single channel
    (Zen 5)."""
    monkeypatch.setattr(_target, "_host_cpu_name", lambda: cpu)
    monkeypatch.setattr(_target, "target_cpu_name", lambda: "haswell")
    assert _target.wide_gathers_beat_row_loads() is not rows
    assert _target.nearest_pass_channels(3) == nearest


@pytest.mark.parametrize("host, l3", [("znver5", True), ("znver4", False),
                                      ("icelake-server", False)])
def test_scattered_planes_follow_the_host(monkeypatch, host, l3):
    """The bytes of planes beyond which a scattered warp's channels are swept in groups of
    their own follow the host (its caches: the L3 on Zen 5), not the compiled code's CPU;
    the engine reads them."""
    from gridsample import _engine

    monkeypatch.setattr(_target, "_host_cpu_name", lambda: host)
    monkeypatch.setattr(_target, "target_cpu_name", lambda: "haswell")
    size = _target.l3_bytes()
    assert size > 0 and size % 1024 == 0
    assert _target.scattered_item_bytes(8 << 20) == (size if l3 else 8 << 20)
    monkeypatch.undo()
    assert _engine._SCATTERED_ITEM_BYTES == _target.scattered_item_bytes(8 << 20)


def test_none_keeps_the_targets_own_tuning(fresh_width):
    fresh_width.setenv("GRIDSAMPLE_TUNE_CPU", "none")
    fresh_width.setattr(_target, "target_cpu_name", lambda: "znver3")
    fresh_width.setattr(_target, "target_has_avx512", lambda: False)
    assert _target.tune_cpu() is None
    assert "tune-cpu" not in _function_ir()


@pytest.mark.parametrize("value", ["sky lake", "x" * 60, "znver3;rm", "3dnow"])
def test_a_bad_tuning_names_the_variable(fresh_width, value):
    fresh_width.setenv("GRIDSAMPLE_TUNE_CPU", value)
    with pytest.raises(GridSampleError, match="GRIDSAMPLE_TUNE_CPU=.*auto, none, or an LLVM CPU"):
        _target.tune_cpu()


def test_the_cache_key_covers_the_width_and_the_tuning(fresh_width):
    keys = set()
    for width, tune in (("256", "none"), ("512", "none"), ("512", "skylake")):
        fresh_width.setenv("GRIDSAMPLE_VECTOR_WIDTH", width)
        fresh_width.setenv("GRIDSAMPLE_TUNE_CPU", tune)
        fresh_width.setattr(_target, "_width", False)
        fresh_width.setattr(_target, "_tune", False)
        fresh_width.setattr(_jit, "_key", None)
        keys.add(_jit.cache_key())
    assert len(keys) == 3


_SAMPLE = """
import sys, numpy as np, gridsample
from gridsample._engine import use_kernels
rng = np.random.default_rng(7)
x = rng.standard_normal((2, 3, 23, 31)).astype(np.float32)
g = (rng.uniform(-1.3, 1.3, (2, 17, 19, 2))).astype(np.float32)
g[0, 0, :4, 0] = [np.nan, np.inf, -np.inf, 1e30]
dy = rng.standard_normal((2, 3, 17, 19)).astype(np.float32)
outs = []
with use_kernels("vector"):
    for mode, pad in [("linear", "reflection"), ("cubic", "zeros"), ("nearest", "border")]:
        outs.append(gridsample.grid_sample(x, g, mode, pad))
    outs.extend(gridsample.grid_sample_backward(dy, x, g, "cubic", "border"))
sys.stdout.buffer.write(np.concatenate([o.ravel() for o in outs]).tobytes())
"""


def _code_variants() -> dict:
    """Environments that compile the same kernels differently: 256 and 512 bits, and (where
    the host has AVX2) AVX2 code under Zen 3's own tuning and under gridsample's default for
    it (gathers vectorized)."""
    import llvmlite.binding as llvm

    variants = {"256 bits": {"GRIDSAMPLE_VECTOR_WIDTH": "256"},
                "512 bits": {"GRIDSAMPLE_VECTOR_WIDTH": "512"}}
    if llvm.get_host_cpu_features().get("avx2"):
        avx2 = {"NUMBA_CPU_NAME": "znver3", "NUMBA_CPU_FEATURES": ""}
        variants["AVX2, Zen 3's tuning"] = {**avx2, "GRIDSAMPLE_TUNE_CPU": "none"}
        variants["AVX2, default tuning"] = {**avx2, "GRIDSAMPLE_TUNE_CPU": "auto"}
    return variants


@pytest.mark.xdist_group("vector_width")
def test_results_do_not_depend_on_the_width_or_tuning(tmp_path):
    """The same vector kernels (forward, and the gradients) compiled at 256 and at 512 bits,
    and as AVX2 code with and without gathers, give the same bits."""
    x_size, g_size = 2 * 3 * 23 * 31, 2 * 17 * 19 * 2
    runs = []
    for i, (name, variant) in enumerate(_code_variants().items()):
        env = {k: v for k, v in os.environ.items()
               if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "GRIDSAMPLE_TUNE_CPU")}
        env.update(variant, GRIDSAMPLE_CACHE_DIR=str(tmp_path / str(i)))
        proc = subprocess.run([sys.executable, "-c", _SAMPLE], env=env, capture_output=True,
                              timeout=900)
        assert proc.returncode == 0, f"{name}: " + proc.stderr.decode()[-3000:]
        runs.append(np.frombuffer(proc.stdout, np.float32))
    assert runs[0].size == 2 * 3 * 17 * 19 * 3 + x_size + g_size
    for run in runs[1:]:
        np.testing.assert_array_equal(runs[0].view(np.uint32), run.view(np.uint32))
    # and both are what this process computes on the general kernels (equal values, NaN
    # where they have NaN: the two families may give a NaN point a NaN of either sign)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 23, 31)).astype(np.float32)
    g = (rng.uniform(-1.3, 1.3, (2, 17, 19, 2))).astype(np.float32)
    g[0, 0, :4, 0] = [np.nan, np.inf, -np.inf, 1e30]
    dy = rng.standard_normal((2, 3, 17, 19)).astype(np.float32)
    ours = np.concatenate([gridsample.grid_sample(x, g, m, p).ravel() for m, p in
                           [("linear", "reflection"), ("cubic", "zeros"),
                            ("nearest", "border")]]
                          + [a.ravel() for a in gridsample.grid_sample_backward(
                              dy, x, g, "cubic", "border")])
    np.testing.assert_array_equal(runs[0], ours)
