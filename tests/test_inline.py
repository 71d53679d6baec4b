"""gridsample's skeleton inliner (``gridsample._inline``): dead branches are never copied.

A variant that copied the code of every padding's branch compiled 4-20x slower (the cold
start regression of 2026-12-02); these tests pin the pruning on toy skeletons, compiled
without the disk cache so that every run goes through the inliner, and check the results
against plain Python.
"""

from __future__ import annotations

import collections

import numba
import pytest

from gridsample import _inline
from gridsample._jit import skeleton

pytestmark = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="compiles with Numba")

PAD_A, PAD_B, PAD_C = 0, 1, 4


@skeleton
def _costly(x):
    return x * 3.0 + 1.0


@skeleton
def _cheap(x):
    return x + 0.5


@skeleton
def _padded(x, pad):
    if pad >= PAD_C:  # the shape of the index paddings' test
        return _costly(x)
    if pad == PAD_B:
        return _costly(x) - 2.0
    return _cheap(x)


@skeleton
def _has_second_pass(pad):
    if pad >= PAD_C:
        return True
    return pad == PAD_B


@skeleton
def _two_passes(x, pad, exact):
    y = _cheap(x)
    if _has_second_pass(pad):  # a predicate that is itself a skeleton call
        y = y + _costly(x)
    if exact:
        y = y * 2.0
    return y


@skeleton
def _is_b(pad):
    return pad == PAD_B


@skeleton
def _folded_twice(x, pad):
    if _is_b(pad) == False:  # noqa: E712 - a comparison of a comparison: only the fold decides
        return _cheap(x)
    return _costly(x)


def _compile(body):
    """``body`` compiled in gridsample's pipeline, without the disk cache."""
    return numba.njit(pipeline_class=_inline.Compiler)(body)


@pytest.fixture
def copied(monkeypatch):
    """Names of the skeletons the inliner copies while the test compiles."""
    seen = collections.Counter()
    inline = _inline._inline

    def counting(func_ir, block, i, raw, func):
        seen[func.__name__] += 1
        return inline(func_ir, block, i, raw, func)

    monkeypatch.setattr(_inline, "_inline", counting)
    return seen


def test_a_branch_on_a_constant_padding_copies_only_its_side(copied):
    def entry_a(x):
        return _padded(x, PAD_A)

    assert _compile(entry_a)(2.0) == 2.5
    assert copied["_cheap"] == 1 and copied["_costly"] == 0


@pytest.mark.parametrize("pad, want", [(PAD_B, 5.0), (PAD_C, 7.0)])
def test_the_other_paddings_keep_their_side(copied, pad, want):
    def entry(x):
        return _padded(x, pad)

    assert _compile(entry)(2.0) == want
    assert copied["_costly"] == 1 and copied["_cheap"] == 0


def test_a_predicate_skeleton_is_decided_before_what_it_guards_is_copied(copied):
    def entry_a(x):
        return _two_passes(x, PAD_A, False)

    def entry_b(x):
        return _two_passes(x, PAD_B, True)

    assert _compile(entry_a)(2.0) == 2.5
    assert copied["_costly"] == 0
    assert _compile(entry_b)(2.0) == (2.5 + 7.0) * 2.0
    assert copied["_costly"] == 1


def test_a_comparison_of_folded_comparisons_is_decided(copied):
    def entry_a(x):
        return _folded_twice(x, PAD_A)

    assert _compile(entry_a)(2.0) == 2.5
    assert copied["_costly"] == 0


def test_a_padding_assigned_twice_is_not_taken_for_a_constant(copied):
    def entry(x, flag):
        pad = PAD_A
        if flag:
            pad = PAD_B
        return _padded(x, pad)

    compiled = _compile(entry)
    assert [compiled(2.0, False), compiled(2.0, True)] == [2.5, 5.0]
    assert copied["_costly"] >= 1 and copied["_cheap"] == 1


def test_a_runtime_padding_keeps_every_branch(copied):
    def entry(x, pad):
        return _padded(x, pad)

    compiled = _compile(entry)
    assert [compiled(2.0, pad) for pad in (PAD_A, PAD_B, PAD_C)] == [2.5, 5.0, 7.0]
    assert copied["_costly"] == 2 and copied["_cheap"] == 1


def test_the_zeros_entry_copies_no_other_paddings_code(copied, monkeypatch):
    """The real 2-D linear and cubic zeros entries (the one pass's too): none of
    reflection's or the index paddings' per-axis code is copied into them (each copy is
    typed and compiled), while the reflection entry copies reflection's."""
    import numpy as np

    import gridsample
    from gridsample import _vector_entries
    from gridsample._engine import use_kernels

    # The gathering entries (two channels, gathers), or the one pass (one channel, forced).
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", "gather")
    monkeypatch.setenv("GRIDSAMPLE_ONE_PASS", "on")
    grid = np.zeros((1, 2, 2, 2), np.float32)
    other = {"_reflect", "reflect_residue", "_reflect_taps", "_index_pair", "_period", "_fold",
             "_index_coordinate", "_distant"}
    for mode, padding, channels, entry in (
            ("linear", "zeros", 2, _vector_entries.linear_2d_zeros),
            ("linear", "zeros", 1, _vector_entries.linear_2d_zeros_one),
            ("cubic", "zeros", 1, _vector_entries.cubic_2d_zeros),
            ("linear", "reflection", 2, _vector_entries.linear_2d_reflection)):
        x = np.zeros((1, channels, 4, 4), np.float32)
        with use_kernels("vector"):  # compiled or loaded: its signature is known
            gridsample.grid_sample(x, grid, mode, padding)
        copied.clear()
        numba.njit(pipeline_class=_inline.Compiler)(entry.py_func).compile(entry.signatures[0])
        assert copied["run_blocks"] == 1
        if padding == "zeros":
            assert not other & set(copied), mode
        else:  # the control: reflection's own variant does copy them
            assert {"_reflect", "reflect_residue"} <= set(copied)
