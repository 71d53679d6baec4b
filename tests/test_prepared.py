"""Prepared runs kept per call signature (gridsample._prepared).

A second call with the same shapes, strides, dtypes and options skips validation and
planning: it must give what the full path gives on its own data, follow the settings in
force at that call, raise for arguments that differ only in type, keep none of a call's
arrays, and stay bounded.
"""

from __future__ import annotations

import collections
import gc
import weakref

import numba
import numpy as np
import pytest

import gridsample
from gridsample import _api, _backward, _engine, _prepared, reference
from gridsample._engine import use_kernels
from gridsample._errors import GridSampleError


@pytest.fixture(autouse=True)
def empty_cache():
    for cache in (_api._prepared, _backward._prepared):
        cache.entries.clear()
    yield
    for cache in (_api._prepared, _backward._prepared):
        cache.entries.clear()


def _inputs(rng, x_shape=(2, 3, 9, 11), out=(5, 7), dtype=np.float32):
    x = rng.standard_normal(x_shape).astype(dtype)
    grid = rng.uniform(-1.3, 1.3, (x_shape[0], *out, len(x_shape) - 2)).astype(dtype)
    return x, grid


def _entries(monkeypatch):
    """Record the entry of every run the engine makes (run_shared: the general kernels;
    run_claimed: the vector entries; the runners of a prepared run's one-share calls)."""
    seen = []
    for name in ("run_shared", "run_claimed"):
        run = getattr(_engine, name)

        def spy(entry, tasks, args, threads, scratch=(), run=run):
            seen.append((entry, threads))
            return run(entry, tasks, args, threads, scratch)

        monkeypatch.setattr(_engine, name, spy)
    make = _engine.alone_runner

    def spy_runner(entry, tasks, scratch=()):
        runner = make(entry, tasks, scratch)

        def run(*args):
            seen.append((entry, 1))
            runner(*args)
        return run

    monkeypatch.setattr(_engine, "alone_runner", spy_runner)
    return seen


@pytest.mark.parametrize("family", ["auto", "general"])
@pytest.mark.parametrize("mode,padding", [("linear", "zeros"), ("nearest", "reflection"),
                                          ("cubic", "border")])
def test_a_repeated_signature_samples_its_own_data(rng, family, mode, padding):
    with use_kernels(family):
        for _ in range(3):  # the first call prepares, the others reuse it
            x, grid = _inputs(rng)
            grid[0, 0, 0] = (np.nan, 0.5)
            grid[1, 1, 1] = (np.inf, -1e30)
            got = gridsample.grid_sample(x, grid, mode, padding)
            want = reference.grid_sample(x, grid, mode, padding)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert len(_api._prepared.entries) == 1


def test_strided_and_channel_last_inputs_are_kept_by_their_strides(rng):
    x, grid = _inputs(rng, (2, 3, 12, 16))
    views = [x[:, :, ::-1], x[:, :, :, ::2], np.moveaxis(x, 1, -1)]
    for _ in range(2):
        for view in views:
            last = view.shape[-1] == 3
            got = gridsample.grid_sample(view, grid, "linear", channel_last=last)
            want = reference.grid_sample(view, grid, "linear", channel_last=last)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert len(_api._prepared.entries) == len(views)


def test_non_native_byte_order_takes_the_full_path(rng):
    x, grid = _inputs(rng)
    want = gridsample.grid_sample(x, grid)
    swapped = x.astype(x.dtype.newbyteorder(">" if x.dtype.byteorder != ">" else "<"))
    grid_swapped = grid.astype(grid.dtype.newbyteorder(">" if grid.dtype.byteorder != ">"
                                                       else "<"))
    for _ in range(2):
        np.testing.assert_array_equal(gridsample.grid_sample(swapped, grid), want)
        np.testing.assert_array_equal(gridsample.grid_sample(x, grid_swapped), want)
    assert _prepared.signature((swapped, grid), ()) is None
    assert _prepared.signature((x, grid_swapped), ()) is None


def test_the_kernel_family_in_force_at_each_call_runs(rng, monkeypatch):
    x, grid = _inputs(rng)
    seen = _entries(monkeypatch)
    with use_kernels("auto"):
        gridsample.grid_sample(x, grid, "cubic")
        gridsample.grid_sample(x, grid, "cubic")
    with use_kernels("general"):
        gridsample.grid_sample(x, grid, "cubic")
    general = _engine.GENERAL_KERNELS[(2, 2)]
    assert [entry is general for entry, _ in seen] == [False, False, True]


def test_the_row_load_setting_at_each_call_runs(rng, monkeypatch):
    x, grid = _inputs(rng)
    seen = _entries(monkeypatch)
    with use_kernels("auto"):
        for setting in ("rows", "gather", "rows"):
            monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", setting)
            gridsample.grid_sample(x, grid, "cubic")
    names = [entry.__name__ if hasattr(entry, "__name__") else entry.py_func.__name__
             for entry, _ in seen]
    assert [name.endswith("_rows") for name in names] == [True, False, True]


def test_the_thread_settings_at_each_call_apply(rng, monkeypatch):
    x, grid = _inputs(rng)
    seen = _entries(monkeypatch)
    monkeypatch.setenv("GRIDSAMPLE_THREAD_MIN_WORK", "1")  # (the tests' default)
    before = numba.get_num_threads()
    try:
        for threads in (2, 1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            gridsample.grid_sample(x, grid)
        monkeypatch.setenv("GRIDSAMPLE_THREAD_MIN_WORK", "1000000000")
        gridsample.grid_sample(x, grid)
    finally:
        numba.set_num_threads(before)
    most = min(2, numba.config.NUMBA_NUM_THREADS)
    assert [threads for _, threads in seen] == [most, 1, most, 1]


def test_bad_settings_raise_at_every_call(rng, monkeypatch):
    x, grid = _inputs(rng)
    gridsample.grid_sample(x, grid)
    monkeypatch.setenv("GRIDSAMPLE_THREAD_MIN_WORK", "many")
    for _ in range(2):
        with pytest.raises(GridSampleError, match="GRIDSAMPLE_THREAD_MIN_WORK"):
            gridsample.grid_sample(x, grid)


@pytest.mark.parametrize("good,bad", [({"mode": 1}, {"mode": True}),
                                      ({"padding_mode": (0, 1)}, {"padding_mode": (False, 1)}),
                                      ({"align_corners": 1}, {"align_corners": 2})])
def test_options_that_differ_only_in_type_are_validated_again(rng, good, bad):
    x, grid = _inputs(rng)
    for _ in range(2):
        gridsample.grid_sample(x, grid, **good)
    with pytest.raises((GridSampleError, TypeError), match=next(iter(bad))):
        gridsample.grid_sample(x, grid, **bad)


def test_a_tuple_subclass_option_is_validated_again(rng):
    """A named tuple of paddings: its items' types belong to the key as a tuple's do."""
    Pads = collections.namedtuple("Pads", "w h")
    x, grid = _inputs(rng)
    for _ in range(2):
        gridsample.grid_sample(x, grid, padding_mode=Pads(1, "zeros"))
    for call in (gridsample.grid_sample, lambda x, grid, **kw: gridsample.grid_sample_backward(
            np.ones((2, 3, 5, 7)), x, grid, **kw)):
        with pytest.raises(TypeError, match=r"padding_mode\[0\]=True is a bool"):
            call(x, grid, padding_mode=Pads(True, "zeros"))


def test_fills_that_differ_in_the_sign_of_a_zero_keep_their_own(rng):
    """``(1.0, -0.0)`` equals ``(1.0, 0.0)``, but a point outside reads each fill's own
    zero: a kept run of the one does not serve the other."""
    x = rng.standard_normal((1, 2, 4, 4))
    grid = np.full((1, 1, 1, 2), 5.0)  # every tap outside
    fills = ((1.0, 0.0), (1.0, -0.0))
    for family in ("auto", "general"):  # (the families may differ in the sign: §8)
        with use_kernels(family):
            cold = []
            for fill in fills:
                _api._prepared.entries.clear()
                cold.append(gridsample.grid_sample(x, grid, padding_mode="constant",
                                                   fill_value=fill))
            for fill, want in zip(fills * 2, cold * 2):
                got = gridsample.grid_sample(x, grid, padding_mode="constant", fill_value=fill)
                assert np.signbit(got).tolist() == np.signbit(want).tolist()


def test_a_run_made_while_the_settings_changed_is_not_kept(monkeypatch):
    """A run made under settings other than its key's (another thread changed them while it
    was made: it may have read either) is used once, not kept under the key."""
    cache = _prepared.PreparedCache()
    monkeypatch.setenv("GRIDSAMPLE_KERNELS", "general")
    key = _prepared.signature((np.zeros(3),), ("linear",))
    monkeypatch.setenv("GRIDSAMPLE_KERNELS", "auto")
    cache.put(key, object())
    assert cache.get(key) is None
    monkeypatch.setenv("GRIDSAMPLE_KERNELS", "general")
    kept = object()
    cache.put(key, kept)
    assert cache.get(key) is kept


def test_the_nd_family_runs_the_general_nd_backward(rng, monkeypatch):
    """``use_kernels("nd")``: the backward's general N-D entry alone, the same bits as the
    rank's own general entry."""
    x, grid = _inputs(rng)
    grad_out = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    ran = []
    real = _backward.run_shared
    monkeypatch.setattr(_backward, "run_shared",
                        lambda entry, *args: (ran.append(entry), real(entry, *args))[1])
    from gridsample import _grad_kernels as gk

    with use_kernels("general"):
        want = gridsample.grid_sample_backward(grad_out, x, grid, "cubic")
    assert gk.BACKWARD_ENTRIES[(2, 2)] in ran and gk.backward_nd not in ran
    ran.clear()
    with use_kernels("nd"):
        got = gridsample.grid_sample_backward(grad_out, x, grid, "cubic")
    assert gk.backward_nd in ran and gk.BACKWARD_ENTRIES[(2, 2)] not in ran
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_unhashable_options_take_the_full_path(rng):
    x, grid = _inputs(rng)
    want = gridsample.grid_sample(x, grid, padding_mode=("zeros", "border"))
    got = gridsample.grid_sample(x, grid, padding_mode=["zeros", "border"])
    np.testing.assert_array_equal(got, want)
    fills = np.array([1.0, 2.0, 3.0])
    for _ in range(2):
        got = gridsample.grid_sample(x, grid, padding_mode="constant", fill_value=fills)
        want = reference.grid_sample(x, grid, padding_mode="constant", fill_value=fills)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert len(_api._prepared.entries) == 1  # the tuple padding only


def test_no_array_of_a_call_is_kept(rng):
    x, grid = _inputs(rng)
    out = gridsample.grid_sample(x, grid)
    refs = [weakref.ref(a) for a in (x, grid, out)]
    gridsample.grid_sample(x, grid)
    del x, grid, out
    gc.collect()
    assert all(ref() is None for ref in refs)


def test_the_cache_stays_bounded(rng):
    size = _api._prepared.size
    for n in range(size + 5):
        x, grid = _inputs(rng, (1, 1, 4, 4 + n), (2, 2))
        gridsample.grid_sample(x, grid)
    assert 0 < len(_api._prepared.entries) <= size


@pytest.mark.parametrize("family", ["auto", "general"])
@pytest.mark.parametrize("mode,padding,mask", [("linear", "zeros", (True, True)),
                                               ("cubic", "reflection", (True, False)),
                                               ("linear", "border", (False, True)),
                                               ("nearest", "zeros", (True, True))])
def test_a_repeated_backward_signature_differentiates_its_own_data(rng, family, mode, padding,
                                                                   mask):
    with use_kernels(family):
        for _ in range(3):
            x, grid = _inputs(rng, dtype=np.float64)
            grid[0, 0, 0] = (np.nan, 0.5)
            gout = rng.standard_normal((2, 3, 5, 7))
            got = gridsample.grid_sample_backward(gout, x, grid, mode, padding,
                                                  output_mask=mask)
            want = reference.grid_sample_backward(gout, x, grid, mode, padding,
                                                  output_mask=mask)
            for g, w in zip(got, want):
                assert (g is None) == (w is None)
                if g is not None:
                    np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)
    assert len(_api._prepared.entries) == 0  # the backward keeps its own
    assert len(_backward._prepared.entries) == 1


def test_backward_fill_and_half_types_repeat_exactly(rng):
    x, grid = _inputs(rng)
    gout = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    first = [gridsample.grid_sample_backward(gout, x, grid, padding_mode="constant",
                                             fill_value=2.0) for _ in range(2)]
    for a, b in zip(*first):
        np.testing.assert_array_equal(a, b)
    half = [gridsample.grid_sample_backward(gout.astype(np.float16), x.astype(np.float16),
                                            grid) for _ in range(2)]
    for a, b in zip(*half):
        assert a.dtype in (np.float16, np.float32)
        np.testing.assert_array_equal(a, b)
    assert half[0][0].dtype == np.float16 and half[0][1].dtype == np.float32


def test_backward_options_that_differ_only_in_type_are_validated_again(rng):
    x, grid = _inputs(rng)
    gout = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    for _ in range(2):
        gridsample.grid_sample_backward(gout, x, grid, output_mask=(1, 0))
    with pytest.raises(GridSampleError, match="output_mask"):
        gridsample.grid_sample_backward(gout, x, grid, output_mask=(2, 0))
    with pytest.raises(GridSampleError, match="grad_output"):
        gridsample.grid_sample_backward(gout[:, :, :4], x, grid)


def test_the_settings_reader_sees_every_change_made_through_os_environ(monkeypatch):
    # The per-call settings are read through gridsample._environ.getenv, which reads the
    # mapping os.environ keeps: it must agree with os.environ.get after each change.
    import os

    from gridsample._environ import getenv

    name = "GRIDSAMPLE_TEST_SETTING_READER"
    monkeypatch.delenv(name, raising=False)
    assert getenv(name) is None and getenv(name, "dflt") == "dflt"
    for value in ("rows", "", "ünïcode", "rows"):
        monkeypatch.setenv(name, value)
        assert getenv(name) == os.environ.get(name) == value
    os.environ[name] = "gather"
    assert getenv(name, "dflt") == "gather"
    del os.environ[name]
    assert getenv(name, "dflt") == "dflt"
    monkeypatch.setattr(os, "environ", {name: "replaced"})  # os.environ swapped wholesale
    assert getenv(name) == "replaced"


@pytest.mark.parametrize("mode,padding,dtype,out", [
    ("linear", "zeros", np.float32, (5, 7)), ("nearest", "reflection", np.float32, (6, 4)),
    ("cubic", "border", np.float64, (5, 7)), ("linear", "constant", np.float32, (1, 1)),
    ("nearest", "zeros", np.float32, (64, 64)),  # nearest's one pass
])
def test_one_share_calls_skip_the_lookups_and_sample_their_own_data(rng, monkeypatch, mode,
                                                                    padding, dtype, out):
    """A repeated one-thread call runs its entry through the prepared run's own runner
    (``PreparedForward._direct``): the same bits as the full path, on each call's data."""
    monkeypatch.setenv("GRIDSAMPLE_THREAD_MIN_WORK", "1000000000")  # one thread
    claimed = []
    run_claimed = _engine.run_claimed
    monkeypatch.setattr(_engine, "run_claimed",
                        lambda *args: claimed.append(args[0]) or run_claimed(*args))
    seen = _entries(monkeypatch)  # (after: it counts the calls above once more)
    with use_kernels("auto"):
        for _ in range(3):
            x, grid = _inputs(rng, (2, 3, 9, 11), out, dtype)
            grid[0, 0, 0] = (np.nan, 0.5)
            grid[-1, -1, -1] = (np.inf, -1e30)
            got = gridsample.grid_sample(x, grid, mode, padding, fill_value=0.5 if
                                         padding == "constant" else 0)
            # the full path, made anew (validation, plan, prepared run, run_claimed)
            _api._prepared.entries.clear()
            want = gridsample.grid_sample(x, grid, mode, padding, fill_value=0.5 if
                                          padding == "constant" else 0)
            np.testing.assert_array_equal(got, want)
            ref = reference.grid_sample(x, grid, mode, padding,
                                        fill_value=0.5 if padding == "constant" else 0)
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    # Each fresh prepared run (the first call, and each `want`) went through run_claimed;
    # the two repeated calls through the runner, with the same entry.
    assert len(claimed) == 4 and len(seen) == 4 + 2
    assert all(entry is claimed[0] for entry, _ in seen)
    (prepared,) = _api._prepared.entries.values()
    assert list(prepared._direct) == [1]


@pytest.mark.parametrize("mode, padding", [("linear", "zeros"), ("cubic", "reflection"),
                                           ("nearest", "border")])
def test_one_share_affine_warps_skip_the_lookups_and_warp_their_own_data(rng, monkeypatch,
                                                                         mode, padding):
    """A repeated one-thread ``affine_warp`` runs its affine entry through the prepared run's
    own runner: the same bits as the full path and as the pair it fuses, each call's x and
    theta."""
    from gridsample import _affine_warp

    monkeypatch.setenv("GRIDSAMPLE_THREAD_MIN_WORK", "1000000000")  # one thread
    seen = _entries(monkeypatch)
    with use_kernels("auto"):
        for _ in range(3):
            x = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
            theta = (np.eye(2, 3) + rng.uniform(-0.3, 0.3, (2, 2, 3))).astype(np.float32)
            got = gridsample.affine_warp(x, theta, (6, 5), mode, padding)
            _affine_warp._prepared.entries.clear()
            want = gridsample.affine_warp(x, theta, (6, 5), mode, padding)
            np.testing.assert_array_equal(got, want)
            pair = gridsample.grid_sample(x, gridsample.affine_grid(theta, (2, 3, 6, 5)), mode,
                                          padding)
            np.testing.assert_array_equal(got, pair)
    affine = [entry for entry, _ in seen if entry.py_func.__name__.endswith("_affine")]
    # each fresh warp made its runner on its first call; the repeated calls ran it
    assert len(affine) == 6 and all(entry is affine[0] for entry in affine)
    (warp,) = _affine_warp._prepared.entries.values()
    assert (1, "affine") in warp.prepared._direct


def test_a_prepared_run_takes_its_general_path_for_other_grids(rng, monkeypatch):
    """The runner serves C-contiguous grids of the dtype it was made for; a strided grid or
    one of another dtype given to the same prepared run takes the general path."""
    monkeypatch.setenv("GRIDSAMPLE_THREAD_MIN_WORK", "1000000000")
    with use_kernels("auto"):
        x, grid = _inputs(rng, (2, 3, 9, 11), (6, 5))
        gridsample.grid_sample(x, grid)
        (prepared,) = _api._prepared.entries.values()
        prepared.run(x, grid)  # makes the runner
        assert prepared._direct
        wide = np.zeros((2, 5, 6, 2))  # (a float64 grid of another plan: equal points)
        strided = wide.transpose(0, 2, 1, 3).astype(np.float32)
        strided[...] = grid
        assert not strided.flags.c_contiguous
        want = prepared.run(x, grid)
        np.testing.assert_array_equal(prepared.run(x, strided), want)
        np.testing.assert_array_equal(prepared.run(x, grid.astype(np.float16)),
                                      gridsample.grid_sample(x, grid.astype(np.float16)))
