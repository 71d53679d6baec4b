"""Bad arguments raise GridSampleError (a ValueError) or GridSampleTypeError
(also a TypeError), with a message naming the argument, the value and what is
allowed; nothing crashes."""

from __future__ import annotations

import numpy as np
import pytest

import gridsample
from gridsample import GridSampleError, GridSampleTypeError

X = np.zeros((1, 2, 4, 5))
GRID = np.zeros((1, 3, 3, 2))


@pytest.mark.parametrize("kwargs,exc,words", [
    (dict(mode="bilinar"), GridSampleError, ["mode", "'bilinar'", "'linear'"]),
    (dict(mode=9), GridSampleError, ["mode", "9", "2 (cubic)", "8 (bspline7)"]),
    (dict(mode=True), GridSampleTypeError, ["mode", "True"]),
    (dict(mode=1.0), GridSampleTypeError, ["mode", "float"]),
    (dict(padding_mode="warp"), GridSampleError, ["padding_mode", "'warp'", "'wrap'"]),
    (dict(padding_mode=-1), GridSampleError, ["padding_mode", "-1", "6 (wrap)"]),
    (dict(padding_mode=("wrap",)), GridSampleError, ["padding_mode", "1 entries", "(2"]),
    (dict(padding_mode=("wrap", "wobble")), GridSampleError, ["padding_mode[1]", "'wobble'"]),
    (dict(padding_mode="constant", fill_value="red"), GridSampleTypeError,
     ["fill_value", "'red'", "a number or a sequence of 2"]),
    (dict(padding_mode="constant", fill_value=[1, 2, 3]), GridSampleError,
     ["fill_value=[1, 2, 3] has 3 entries", "sequence of 2"]),
    (dict(padding_mode="constant", fill_value=[[1, 2]]), GridSampleTypeError,
     ["fill_value=[[1, 2]]", "a number or a sequence of 2"]),
    (dict(fill_value=5), GridSampleError, ["fill_value=5", "no effect", "'constant'"]),
    (dict(padding_mode=("zeros", "constant"), fill_value=1), GridSampleError,
     ["mixes 'zeros' and 'constant'"]),
    (dict(cubic_a=-0.5), GridSampleError, ["cubic_a=-0.5", "mode='cubic' only", "'linear'"]),
    (dict(mode="cubic", cubic_a=float("nan")), GridSampleError, ["cubic_a=nan", "finite"]),
    (dict(mode="cubic", cubic_a=1e308), GridSampleError, ["cubic_a=1e+308", "at most 1000"]),
    (dict(mode="cubic", cubic_a="sharp"), GridSampleTypeError, ["cubic_a", "real number"]),
    (dict(grid_units="pixel"), GridSampleError, ["grid_units='pixel'", "'pixels'"]),
    (dict(grid_units=1), GridSampleTypeError, ["grid_units=1", "'normalized'"]),
    (dict(displacement="yes"), GridSampleTypeError, ["displacement", "'yes'", "bool"]),
    (dict(align_corners=2), GridSampleError, ["align_corners", "2", "0 or 1"]),
    (dict(align_corners="yes"), GridSampleTypeError, ["align_corners", "'yes'", "bool"]),
    (dict(channel_last=None), GridSampleTypeError, ["channel_last", "None"]),
    # a class where a value belongs (its ``shape`` and ``dtype`` are descriptors)
    (dict(padding_mode="constant", fill_value=np.float32), GridSampleTypeError,
     ["fill_value=<class 'numpy.float32'>"]),
    (dict(mode=np.int8), GridSampleTypeError, ["mode=<class 'numpy.int8'>"]),
])
def test_bad_options(kwargs, exc, words):
    with pytest.raises(exc) as info:
        gridsample.grid_sample(X, GRID, **kwargs)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("x,grid,words", [
    (np.zeros((4, 5)), np.zeros((1, 3, 2)), ["x", "(4, 5)", "at least 3 axes"]),
    (X, np.zeros((1, 3, 2)), ["grid", "(1, 3, 2)", "rank 4", "(N, D1, D2, 2)"]),
    (np.zeros((1, 1, 4)), np.zeros((1, 3, 3, 2)), ["rank 3", "(N, D1, 1)"]),
    (np.zeros((1, 1, 4, 4, 4)), np.zeros((1, 3, 3)), ["rank 5", "(N, D1, D2, D3, 3)"]),
    (np.zeros((1, 1) + (2,) * 5), np.zeros((1, 3, 3)), ["rank 7", "(N, D1, ..., D5, 5)"]),
    (X, np.zeros((1, 3, 3, 3)), ["grid", "last axis", "length 2"]),
    (np.zeros((2, 2, 4, 5)), np.zeros((3, 3, 3, 2)), ["grid", "batch size 3", "2", "be 1"]),
    (np.zeros((1, 2, 0, 5)), GRID, ["x", "empty spatial axis", "not empty"]),
])
def test_bad_shapes(x, grid, words):
    with pytest.raises(GridSampleError) as info:
        gridsample.grid_sample(x, grid)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("x,grid,name", [
    (X.astype("datetime64[s]"), GRID, "x"),
    (X, GRID.astype(np.int64), "grid"),
    (X, GRID.astype(np.complex64), "grid"),
    ([[[1, 2], [3]]], GRID, "x"),
    (X.astype(object), GRID, "x has dtype object and holds numbers"),  # convert them
    (np.array([[[None, "a"]]], object), GRID[..., :1],
     "x has dtype object and holds None (a NoneType); object arrays are sampled as strings"),
    (None, GRID, "x=None is not an array"),
    ({"a": 1}, GRID, "x={'a': 1} is not an array"),
    (X, None, "grid=None is not an array"),
])
def test_bad_dtypes(x, grid, name):
    with pytest.raises(GridSampleTypeError) as info:
        gridsample.grid_sample(x, grid)
    assert str(info.value).startswith(name)


_G = np.zeros((1, 2, 2, 2), np.float32)
_V = np.ones((1, 1, 2, 2), np.float32)
_THETA = np.eye(2, 3, dtype=np.float32)[None]


@pytest.mark.parametrize("call, words", [
    # arrays no machine can address: named by the argument that asks for them, not NumPy's
    # "array is too big" or "Maximum allowed dimension exceeded"
    (lambda: gridsample.grid_count(_G, (2**63, 2)), ["shape=(9223372036854775808, 2)"]),
    (lambda: gridsample.grid_push(_V, _G, (2**62, 2**62)), ["shape=", "address"]),
    (lambda: gridsample.affine_grid(_THETA, (1, 1, 2**31, 2**31)), ["size=", "address"]),
    (lambda: gridsample.affine_warp(np.zeros((1, 1, 4, 4), np.float32), _THETA,
                                    (2**40, 2**40)), ["out_shape=", "address"]),
    (lambda: gridsample.grid_sample(np.broadcast_to(np.float32(0), (1, 2**40, 4, 4)),
                                    np.zeros((1, 2**12, 2**12, 2), np.float32)),
     ["x (1, 1099511627776, 4, 4)", "output", "address"]),
    # grid_count has no values: its messages speak of the count it makes
    (lambda: gridsample.grid_count(_G, (1, 2, 4, 5)),
     ["shape=(1, 2, 4, 5) has N=1, C=2 but the count (the grid's batch, one channel)"]),
    (lambda: gridsample.grid_count(_G, (0, 5)),
     ["shape=(0, 5) has an empty spatial axis", "the count (the grid's batch"]),
    # grid_push names its own arguments: values and shape (it has no x)
    (lambda: gridsample.grid_push(_V, np.zeros((2, 2, 2, 2), np.float32), (4, 4)),
     ["grid has batch size 2", "values"]),
    (lambda: gridsample.grid_push(_V, np.zeros((1, 2, 2, 3), np.float32), (4, 4)),
     ["last axis", "values"]),
    (lambda: gridsample.grid_push(np.ones((1, 3, 2, 2)), _G, (0, 6)),
     ["shape=(0, 6)", "empty spatial axis", "values"]),
    # affine_warp: out_shape against x's axes first, theta named as passed
    (lambda: gridsample.affine_warp(np.zeros((1, 1, 4, 4), np.float32), _THETA, (4, 4, 4)),
     ["out_shape=(4, 4, 4) has 3 axes", "(2 spatial axes), so it must have 2"]),
    (lambda: gridsample.affine_warp(np.zeros((1, 1, 4, 4), np.float32), np.eye(3)),
     ["theta has shape (3, 3); for x of shape (1, 1, 4, 4)", "(N, 2, 3) or (2, 3)"]),
    (lambda: gridsample.affine_warp(np.zeros((1, 1, 4, 4), np.float32), np.eye(3), (5, 6)),
     ["theta has shape (3, 3); for out_shape=(5, 6)"]),
])
def test_errors_name_the_argument_that_asks(call, words):
    with pytest.raises(GridSampleError) as info:
        call()
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("x", [np.full((1, 2, 4, 5), "a"), None])
def test_gradients_of_strings_or_non_arrays_are_type_errors(x):
    # The x's dtype first: the forward's advice for strings (mode='nearest') has no gradient.
    with pytest.raises(GridSampleTypeError, match="^x"):
        gridsample.grid_sample_backward(np.ones((1, 2, 3, 3)), x, GRID)


@pytest.mark.parametrize("call", [
    lambda: gridsample.grid_count(_G, (5.0, 6)),
    lambda: gridsample.grid_push(_V, _G, (4, "5")),
    lambda: gridsample.affine_grid(_THETA, (1, 1, 4.5, 4)),
])
def test_shapes_of_non_integers_are_type_errors(call):
    with pytest.raises(GridSampleTypeError, match="non-integers"):
        call()


def test_error_types_are_value_and_type_errors():
    assert issubclass(GridSampleError, ValueError)
    assert issubclass(GridSampleTypeError, TypeError)
    assert issubclass(GridSampleTypeError, GridSampleError)


def test_lists_and_other_byte_orders_are_accepted():
    x = (X + 1.0).astype(">f8")
    grid = GRID.astype(">f4")
    out = gridsample.grid_sample(x.tolist(), grid)
    np.testing.assert_array_equal(out, gridsample.grid_sample(x, grid))
    np.testing.assert_array_equal(out, np.ones((1, 2, 3, 3)))
