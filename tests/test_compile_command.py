"""``gridsample compile`` compiles exactly what later calls run, and ``info`` lists it."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from gridsample._precompile import Combination, combinations
from gridsample.cli import main


@pytest.fixture(autouse=True)
def _user_kernels(monkeypatch):
    """``gridsample compile`` compiles what users run (conftest picks the general kernels)."""
    monkeypatch.setenv("GRIDSAMPLE_KERNELS", "auto")


_COMPILE_THEN_INFO = """
from gridsample import _jit
from gridsample.cli import main
from gridsample.cli._info import info_lines
assert main(["compile", "--rank", "2", "--mode", "nearest", "--padding", "border",
             "--dtype", "float32", "uint8", "--backward", "-q"]) == 0
print("\\n".join(sorted(_jit.compiled_functions())))
print("--- info")
print("\\n".join(info_lines()))
"""


def test_compile_then_info_lists_the_entries(tmp_path):
    """In a process of its own with a cache folder of its own: the test workers compile
    the same entries into the shared cache at once, and Numba's index of a function is
    rewritten whole by each process that adds to it, so a concurrent writer can drop
    another's signature from it (the code is then compiled again when next needed)."""
    env = dict(os.environ, GRIDSAMPLE_CACHE_DIR=str(tmp_path), GRIDSAMPLE_KERNELS="auto")
    proc = subprocess.run([sys.executable, "-c", _COMPILE_THEN_INFO], env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found, text = proc.stdout.split("--- info\n")
    assert any(name.endswith("nearest_2d_border") for name in found.split())
    assert any(name.endswith("input_grad_nearest_2d_border") for name in found.split())
    assert "float32" in _dtypes_listed(text, "nearest_2d_border")
    assert "uint8" in _dtypes_listed(text, "nearest_2d_border_int")  # integer results' entry
    assert "float32" in _dtypes_listed(text, "input_grad_nearest_2d_border")
    # Every compiled entry is listed, whatever its form (one pass, rows, channel-last, ...).
    entry_modules = ("_vector_entries", "_affine_entries", "_planar_entries",
                     "_grad_vector_entries")
    entries = [name.split(".")[-1] for name in found.split()
               if name.split(".")[-2] in entry_modules]
    assert entries and all(_dtypes_listed(text, entry) for entry in entries), (entries, text)


_COMPILE_FORMS = """
from gridsample import _jit
from gridsample.cli import main
assert main(["compile", "--rank", "2", "--mode", "linear", "cubic", "nearest", "--padding",
             "zeros", "--dtype", "float32", "-q"]) == 0
print("\\n".join(sorted(_jit.compiled_functions())))
"""


def _compiled_in_a_process(tmp_path, code: str) -> set:
    """The names of the functions compiled by ``code`` run in a process of its own, with a
    cache folder of its own and the strategies this machine picks (no forcing setting)."""
    env = dict(os.environ, GRIDSAMPLE_CACHE_DIR=str(tmp_path), GRIDSAMPLE_KERNELS="auto")
    for name in ("GRIDSAMPLE_ROW_LOADS", "GRIDSAMPLE_ONE_PASS"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {name.rsplit(".", 1)[-1] for name in proc.stdout.split()}


def test_compile_covers_every_form_a_call_may_take(tmp_path):
    """A single channel and several, rows a row of taps wide: the planned sweep, the one
    pass (2-D linear, one channel, 512-bit vectors; 2-D nearest with explicit vectors) and
    the row loads (2-D cubic on x86-64) where this machine takes them, so that no first call
    compiles."""
    from gridsample import _engine, _row_loads
    from gridsample._simd import AVAILABLE
    from gridsample._target import fast_gathers, vector_width

    found = _compiled_in_a_process(tmp_path, _COMPILE_FORMS)
    def rows(mode):
        return _row_loads.LITTLE_ENDIAN and _row_loads.row_loads(2, mode) == "rows"

    want = {"linear_2d_zeros_rows" if rows(0) else "linear_2d_zeros",
            "cubic_2d_zeros_rows" if rows(2) else "cubic_2d_zeros"}
    if vector_width() == 512 and not rows(0):
        want.add("linear_2d_zeros_one")
    want.add("nearest_2d_zeros")
    if AVAILABLE and fast_gathers():
        want.add("nearest_2d_zeros_one")
    assert want <= found, sorted(found)
    assert _engine.ONE_PASS_ENTRIES  # the table the one-pass name comes from


_COMPILE_FLOW = """
from gridsample import _jit
from gridsample.cli import main
assert main(["compile", "--rank", "2", "--mode", "linear", "--padding", "zeros", "--dtype",
             "float32", "--flow-fields", "--backward", "-q"]) == 0
print("\\n".join(sorted(_jit.compiled_functions())))
"""


def test_compile_flow_fields(tmp_path):
    """``--flow-fields``: the planar entries that read a flow field's view in place, of the
    form the contiguous grid's call takes, and the backward's interleaving."""
    found = _compiled_in_a_process(tmp_path, _COMPILE_FLOW)
    planar = {name for name in found if name.endswith("_planar")}
    # one channel and four (compile_combination's two calls), each the twin of a grid entry
    assert planar and {name[:-len("_planar")] for name in planar} <= found, sorted(found)
    assert "interleave_grid" in found


_COMPILE_HIGH_RANK = """
import numpy as np, gridsample
from gridsample import _jit
from gridsample.cli import main
assert main(["compile", "--rank", "7", "--mode", "linear", "bspline2", "--padding", "zeros",
             "wrap", "--backward", "-q"]) == 0
before = _jit.compiled_functions()
x = np.ones((1, 2) + (3,) * 7, np.float32)
grid = np.zeros((1,) + (2,) * 7 + (7,), np.float32)
for mode, padding in (("linear", "zeros"), ("bspline2", "wrap")):
    y = gridsample.grid_sample(x, grid, mode, padding)
    gridsample.grid_sample_backward(np.ones_like(y), x, grid, mode, padding)
assert _jit.compiled_functions() == before, "a rank-7 call compiled more"
print("\\n".join(sorted(before)))
"""


def test_compile_high_ranks_compiles_what_their_calls_run(tmp_path):
    """From rank 4 on every kernel takes the rank as data: ``--rank 7`` compiles rank 4's
    example, which a rank-7 call then only loads (a B-spline's zeros-padded example of rank
    7, 12 samples more on each side of every axis, would have needed 32 GiB)."""
    assert _compiled_in_a_process(tmp_path, _COMPILE_HIGH_RANK)


def test_compile_leaves_out_the_modes_a_rank_refuses(capsys):
    """Every mode by default, but those that read more than 65536 taps a point at a rank
    (B-splines of degree 4 and more at rank 7); named on purpose, a usage error."""
    from gridsample.cli._compile import _modes_for_ranks

    everything = ["linear", "nearest", "cubic"] + [f"bspline{d}" for d in range(2, 8)]
    pairs = _modes_for_ranks([2, 7], everything, given=False)
    assert [m for r, m in pairs if r == 2] == everything
    assert [m for r, m in pairs if r == 7] == ["linear", "nearest", "cubic", "bspline2",
                                               "bspline3"]
    assert main(["compile", "--rank", "7", "--mode", "bspline4"]) == 2
    err = capsys.readouterr().err
    assert "--rank 7 --mode bspline4:" in err and "65536" in err


def _dtypes_listed(text, entry):
    """The x dtypes ``gridsample info`` lists for ``entry``."""
    found = re.search(rf"\b{entry} \(([^)]*)\)", text)
    return set(found.group(1).split(", ")) if found else set()


def test_compile_prints_a_summary(capsys):
    assert main(["compile", "--rank", "2", "--mode", "linear", "--padding", "zeros"]) == 0
    assert "1 combination ready" in capsys.readouterr().out


def test_combinations_cover_the_choices():
    combos = combinations(("float32", "int16"), ("float32",), (2, 3), None, None,
                          channel_last=True, backward=True)
    # 2 dtypes x 2 ranks x 3 modes x 5 paddings x 2 layouts forward, float32 backward
    assert len(combos) == 120 + 60
    assert Combination("int16", "float32", 3, "cubic", "reflection", True) in combos
    assert Combination("int16", "float32", 2, "linear", "zeros", False, True) not in combos
    flows = combinations(("float32",), ("float32",), (1, 2, 3), ("linear",), ("zeros",),
                         backward=True, flow_fields=True)
    # ranks 1-3 forward and backward, and a flow field's view at ranks 2 and 3
    assert len(flows) == 6 + 4
    assert Combination("float32", "float32", 3, "linear", "zeros", backward=True,
                       flow_field=True) in flows


@pytest.mark.parametrize("argv,message", [
    (["compile", "--rank", "0"], "ranks are 1 to 16"),
    (["compile", "--rank", "2", "17"], "ranks are 1 to 16"),
    (["compile", "--dtype", "float33"], "--dtype float33: dtype='float33' is not a NumPy"),
    (["compile", "--grid-dtype", "float33"], "--grid-dtype float33: dtype='float33'"),
    (["compile", "--grid-dtype", "int8"], "--grid-dtype int8: grids are"),
    (["compile", "--dtype", "datetime64"], "--dtype datetime64: x has dtype datetime64"),
    (["compile", "--dtype", "str"], "--dtype str: strings are sampled with --mode nearest only, "
                                    "not --mode linear cubic"),
    (["compile", "--dtype", "object", "--mode", "nearest"], "--dtype object: give the element"),
])
def test_bad_options_name_the_argument(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_info_lists_entries_not_their_helpers(monkeypatch):
    """``info`` reads the cache's index: every function of the generated entry modules, the
    named entries of the others, none of the compiled helpers beside them."""
    from gridsample import _jit
    from gridsample.cli._info import info_lines

    x32 = "(Array(float32, 1, 'C', True, aligned=True), int64)"
    claims = "(int64, Array(int64, 1, 'C', False, aligned=True), "
    monkeypatch.setattr(_jit, "compiled_functions", lambda: {
        "_vector_entries.linear_2d_zeros_rows": [claims + x32[1:]],
        "_kernels.task_nd": [x32, x32.replace("float32", "uint8")],
        "_kernels._scratch": [x32], "_kernels._locate": [x32],
        "_grad_kernels._setup": [x32],
        "_affine._affine_rows": [x32.replace("float32", "float64")],
        "_vector.interleave_grid": [x32],
        "_spin.spin_until_set": ["(Array(int64, 1, 'C', False, aligned=True), int64, int64)"],
    })
    text = "\n".join(info_lines())
    assert "compiled vector: linear_2d_zeros_rows (float32)" in text
    assert "compiled general: task_nd (float32, uint8)" in text
    assert "compiled affine grid: _affine_rows (float64)" in text
    assert "compiled flow field: interleave_grid (float32)" in text
    assert "compiled backward: none" in text
    for helper in ("_scratch", "_locate", "_setup", "spin_until_set"):
        assert helper not in text, helper
