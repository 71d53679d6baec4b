"""Compiled kernels live in a folder named by a hash of their sources: never stale.

Numba's own disk cache keys a compiled entry on the entry's file alone, so a
helper edited in another file kept running old machine code until the cache
was deleted by hand.  gridsample keys the whole folder on every kernel
source (gridsample._jit.cache_key).  These tests run a copy of the package in
child processes with a cache folder of their own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import gridsample
from gridsample import _jit

_CENTRE = """
import numpy as np, gridsample
x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
g = np.zeros((1, 1, 1, 2), np.float32)
print(float(gridsample.grid_sample(x, g, align_corners=True)[0, 0, 0, 0]))
"""


def _copy_package(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    shutil.copytree(Path(gridsample.__file__).parent, root / "gridsample",
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    return root


def _run(root: Path, cache: Path, code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(root), GRIDSAMPLE_CACHE_DIR=str(cache))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


def test_an_edited_helper_runs_without_clearing_the_cache(tmp_path):
    root, cache = _copy_package(tmp_path), tmp_path / "cache"
    assert _run(root, cache, _CENTRE) == "7.5"
    assert _run(root, cache, _CENTRE) == "7.5"  # loaded from the cache
    # Edit the element load (gridsample/_convert.py), a helper the entries
    # (gridsample/_vector_entries.py, unchanged) inline: every read doubles.
    conv = root / "gridsample" / "_convert.py"
    text = conv.read_text()
    old = "return lambda x, kind, i: x[i]\n"
    assert text.count(old) == 1
    conv.write_text(text.replace(old, "return lambda x, kind, i: x[i] * 2\n"))
    assert _run(root, cache, _CENTRE) == "15.0"
    folders = sorted(p.name for p in cache.iterdir() if p.is_dir())
    assert len(folders) == 2  # one per build of the sources


def test_a_copy_under_another_name_keeps_its_own_kernels(tmp_path):
    """The same sources imported under another name (a benchmark's baseline of an unchanged
    tree, a vendored copy) compile their own kernels: the cached code names its modules, so
    the original loading the copy's entries failed to import them (before the key held the
    package's name)."""
    root, cache = _copy_package(tmp_path), tmp_path / "cache"
    (root / "gridsample").rename(root / "gridsample_copy")
    original = _copy_package(tmp_path / "original")
    assert _run(root, cache, _CENTRE.replace("gridsample", "gridsample_copy")) == "7.5"
    assert _run(original, cache, _CENTRE) == "7.5"
    assert _run(original, cache, _CENTRE) == "7.5"  # its own, from the cache
    assert len([p for p in cache.iterdir() if p.is_dir()]) == 2


def test_the_key_covers_every_kernel_source_and_versions():
    names = {p.name for p in _jit.kernel_source_files()}
    assert {"_convert.py", "_taps.py", "_planners.py", "_sweeps.py", "_vector.py",
            "_vector_entries.py", "_kernels.py", "_grad_taps.py", "_grad_kernels.py",
            "_options.py", "_jit.py"} <= names
    assert not names & {"reference.py", "torch.py", "cann.py"}
    key = _jit.cache_key()
    assert len(key) == 16 and int(key, 16) >= 0
    assert _jit.cache_dir().name == key


def test_cache_root_follows_the_environment(tmp_path):
    code = "from gridsample import _jit; print(_jit.cache_root())"
    env = dict(os.environ, GRIDSAMPLE_CACHE_DIR=str(tmp_path / "own"))
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == str(tmp_path / "own")
    env.pop("GRIDSAMPLE_CACHE_DIR")
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == str(tmp_path / "numba" / "gridsample")


def test_read_only_inputs_share_the_compiled_kernels(rng):
    """A read-only x, grid, grad_output or theta (a memory map, a frozen array) compiles
    nothing new: every kernel reads its inputs through read-only views."""
    from gridsample import _affine, _backward, _engine

    def frozen(a):
        a = a.copy()
        a.flags.writeable = False
        return a

    x = rng.standard_normal((1, 2, 6, 7)).astype(np.float32)
    grid = rng.uniform(-1, 1, (1, 3, 4, 2)).astype(np.float32)
    gout = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    theta = np.eye(2, 3, dtype=np.float32)[None]
    entries = [_engine.VECTOR_ENTRIES[(2, 0, 0, "native")],
               _backward.GRID_GRAD_ENTRIES[(2, 0, 0)], _backward.INPUT_GRAD_ENTRIES[(2, 0, 0)],
               _affine._affine_rows]
    gridsample.grid_sample(x, grid)
    gridsample.grid_sample_backward(gout, x, grid)
    gridsample.affine_grid(theta, (1, 1, 3, 4))
    before = [len(e.signatures) for e in entries]
    np.testing.assert_array_equal(gridsample.grid_sample(frozen(x), frozen(grid)),
                                  gridsample.grid_sample(x, grid))
    for a, b in zip(gridsample.grid_sample_backward(frozen(gout), frozen(x), frozen(grid)),
                    gridsample.grid_sample_backward(gout, x, grid)):
        np.testing.assert_array_equal(a, b)
    gridsample.affine_grid(frozen(theta), (1, 1, 3, 4))
    assert [len(e.signatures) for e in entries] == before
