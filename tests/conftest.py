"""Shared helpers for the tests: option lists, random inputs, tolerances.

The tests run on the general kernels unless they ask for another family.
The oracles (PyTorch, onnxruntime, SciPy, the reference twin) pin the
general kernels; ``test_vector_kernels.py`` pins the vector kernels to the
general ones bit for bit, every (mode, padding) variant once, so the
oracles' verdicts carry over without compiling every vector variant for
every dtype pair the other tests use (each costs seconds of compile time
on a cold cache).  ``GRIDSAMPLE_KERNELS=auto pytest`` runs every test on the
kernels a user gets.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("GRIDSAMPLE_KERNELS", "general")
# Split every call over the threads as large inputs are (the tests' inputs are small), so
# that thread-count independence is tested; test_threads.py tests the default threshold.
os.environ.setdefault("GRIDSAMPLE_THREAD_MIN_WORK", "1")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's hook, which reads the groups
def pytest_collection_modifyitems(config, items):
    """Keep each (mode, rank)'s vector-kernel tests on one xdist worker (``--dist loadgroup``).

    Two workers that both need a vector variant both compile it; grouped by
    (mode, rank), each variant compiles once per test run.  The groups go first, so
    that the workers start on them and the other tests fill in around them
    (a group left for last would run alone on one worker).
    """
    for item in items:
        if item.path.name != "test_vector_kernels.py":
            continue
        params = getattr(item, "callspec", None)
        mode = params.params.get("mode", "linear") if params else "linear"
        rank = params.params.get("rank", 3 if "3d" in item.name else 2) if params else 2
        item.add_marker(pytest.mark.xdist_group(f"vector-{mode}-{rank}d"))
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)


def pytest_runtest_setup(item):
    """Fail a grouped test when ``--dist loadgroup`` did not take its group: pytest-xdist
    marks a grouped test by suffixing its node id, which pytest >= 9.2 no longer lets it do
    (the test extra pins pytest below it), and a silently ungrouped cold run compiles most
    vector variants on both workers."""
    if (item.config.getoption("loadgroup", False) and "@" not in item.nodeid
            and item.get_closest_marker("xdist_group")):
        pytest.fail(f"--dist loadgroup ignored this test's xdist_group (pytest "
                    f"{pytest.__version__}): install the test extra's pytest", pytrace=False)

MODES = ("linear", "nearest", "cubic")
PADDINGS = ("zeros", "border", "reflection")
ALIGNS = (False, True)
TORCH_MODE = {"linear": "bilinear", "nearest": "nearest", "cubic": "bicubic"}


def random_case(rng, x_shape, out_spatial, *, spread=1.3, x_dtype=np.float64,
                grid_dtype=np.float64, grid_batch=None):
    """Random X and a grid with points inside and outside [-1, 1]."""
    n = x_shape[0]
    r = len(x_shape) - 2
    gb = n if grid_batch is None else grid_batch
    x = rng.standard_normal(x_shape).astype(x_dtype)
    grid = rng.uniform(-spread, spread, (gb, *out_spatial, r)).astype(grid_dtype)
    return x, grid


def tolerance(dtype) -> dict:
    """assert_allclose tolerances by the precision the kernels compute in.

    float64 sums of <= 64 taps of O(1) values with O(1) weights carry a few
    ulp of error each: 1e-12 leaves three orders of margin.  float32 computes
    coordinates and weights in float32: a coordinate rounded by one ulp of a
    value up to S ~ 100 moves a weight by ~1e-5, hence 2e-5.
    """
    if np.dtype(dtype) == np.float64:
        return dict(rtol=1e-12, atol=1e-12)
    return dict(rtol=2e-5, atol=2e-5)


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)


@pytest.fixture(autouse=True)
def _fresh_prepared_runs():
    """Start each test without the prepared runs of earlier ones (gridsample._prepared):
    a test that swaps an entry table or spies on a module sees its own calls prepared."""
    from gridsample import _api, _backward

    for cache in (_api._prepared, _backward._prepared):
        cache.entries.clear()
