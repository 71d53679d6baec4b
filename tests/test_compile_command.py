"""``gridsample compile`` compiles exactly what later calls run, and ``info`` lists it."""

from __future__ import annotations

import re

import pytest

from gridsample import _jit
from gridsample._precompile import Combination, combinations
from gridsample.cli import main
from gridsample.cli._info import info_lines


@pytest.fixture(autouse=True)
def _user_kernels(monkeypatch):
    """``gridsample compile`` compiles what users run (conftest picks the general kernels)."""
    monkeypatch.setenv("GRIDSAMPLE_KERNELS", "auto")


def test_compile_then_info_lists_the_entries(capsys):
    assert main(["compile", "--rank", "2", "--mode", "nearest", "--padding", "border",
                 "--dtype", "float32", "uint8", "--backward", "-q"]) == 0
    assert capsys.readouterr().out == ""
    found = _jit.compiled_functions()
    assert any(name.endswith("nearest_2d_border") for name in found)
    assert any(name.endswith("input_grad_nearest_2d_border") for name in found)
    text = "\n".join(info_lines())
    assert {"float32", "uint8"} <= _dtypes_listed(text, "nearest_2d_border")
    assert "float32" in _dtypes_listed(text, "input_grad_nearest_2d_border")


def _dtypes_listed(text, entry):
    """The x dtypes ``gridsample info`` lists for ``entry``."""
    found = re.search(rf"\b{entry} \(([^)]*)\)", text)
    return set(found.group(1).split(", ")) if found else set()


def test_compile_prints_a_summary(capsys):
    assert main(["compile", "--rank", "2", "--mode", "linear", "--padding", "zeros"]) == 0
    assert "1 combinations ready" in capsys.readouterr().out


def test_combinations_cover_the_choices():
    combos = combinations(("float32", "int16"), ("float32",), (2, 3), None, None,
                          channel_last=True, backward=True)
    # 2 dtypes x 2 ranks x 3 modes x 5 paddings x 2 layouts forward, float32 backward
    assert len(combos) == 120 + 60
    assert Combination("int16", "float32", 3, "cubic", "reflection", True) in combos
    assert Combination("int16", "float32", 2, "linear", "zeros", False, True) not in combos


@pytest.mark.parametrize("argv,message", [
    (["compile", "--rank", "0"], "ranks are 1 to 16"),
    (["compile", "--rank", "2", "17"], "ranks are 1 to 16"),
    (["compile", "--dtype", "float33"], "dtype='float33' is not a NumPy dtype name"),
    (["compile", "--grid-dtype", "int8"], "--grid-dtype int8: grids are"),
])
def test_bad_options_name_the_argument(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err
