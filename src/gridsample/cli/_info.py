"""``gridsample info``: version, kernels, threads, cache location, optional libraries.

Optional libraries are looked up by their installed metadata
(:mod:`importlib.metadata`) and integration modules by
:func:`importlib.util.find_spec`, so ``info`` imports none of them.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
from pathlib import Path

import numba
import numpy as np

import gridsample

__all__ = ["run_info", "info_lines"]

# (distribution names, import name, what gridsample uses it for)
_OPTIONAL = (
    (("pillow",), "PIL", "CLI: PNG / JPEG, demo  [cli]"),
    (("tifffile",), "tifffile", "CLI: TIFF  [cli]"),
    (("tqdm",), "tqdm", "CLI: progress bars  [cli]"),
    (("nibabel",), "nibabel", "CLI: NIfTI  [nifti]"),
    (("ml_dtypes",), "ml_dtypes", "bfloat16 arrays"),
    (("onnx",), "onnx", "gridsample.onnx  [onnx]"),
    (("onnxruntime",), "onnxruntime", "benchmark peer"),
    (("torch",), "torch", "benchmark peer, tests"),
    (("opencv-python-headless", "opencv-python"), "cv2", "benchmark peer"),
    (("scipy",), "scipy", "benchmark peer"),
)
_INTEGRATIONS = (("gridsample.onnx", "onnx"), ("gridsample.torch", "torch"),
                 ("gridsample.cann", None))


def _version(dists, import_name):
    for dist in dists:
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
        if importlib.util.find_spec(import_name) is not None:
            return version
    return None


def _kernel_lines():
    from .. import _engine
    from .._options import MODE_NAMES

    by_rank = {}
    for rank, mode in sorted(_engine.FORWARD_KERNELS):
        by_rank.setdefault(rank, []).append(MODE_NAMES[mode])
    special = "; ".join(f"{r}-D {', '.join(m)}" for r, m in sorted(by_rank.items()))
    fast = ", ".join(getattr(_engine, "_PRANGE_DTYPES", ()))
    from .._vector import VECTOR_KERNELS

    by_rank = {}
    for rank, mode in sorted(VECTOR_KERNELS):
        by_rank.setdefault(rank, []).append(MODE_NAMES[mode])
    vector = "; ".join(f"{r}-D {', '.join(m)}" for r, m in sorted(by_rank.items()))
    lines = [f"kernels: forward {special}; any other rank / mode: the general N-D kernel",
             f"         parallel kernels for {fast}; every other element type on a thread pool",
             f"         vector (SIMD) kernels for those types, planar sweeps: {vector}"]
    backward = "yes" if hasattr(gridsample, "grid_sample_backward") else "not in this version"
    lines.append(f"         backward (grid_sample_backward): {backward}")
    return lines


def _cache_line():
    configured = os.environ.get("NUMBA_CACHE_DIR")
    where = Path(configured) if configured else Path(gridsample.__file__).parent / "__pycache__"
    count = len(list(where.rglob("*.nbi"))) if where.is_dir() else 0
    source = "NUMBA_CACHE_DIR" if configured else "next to the sources; set NUMBA_CACHE_DIR " \
                                                  "for read-only installs"
    return f"cache: {where} ({source}); {count} compiled entries"


def info_lines() -> list:
    """The lines ``gridsample info`` prints."""
    layer = os.environ.get("NUMBA_THREADING_LAYER") or numba.config.THREADING_LAYER
    lines = [f"gridsample {gridsample.__version__} ({Path(gridsample.__file__).parent})",
             f"python {platform.python_version()}, numpy {np.__version__}, "
             f"numba {numba.__version__}"]
    lines += _kernel_lines()
    lines.append(f"threads: {numba.get_num_threads()} (NUMBA_NUM_THREADS; threading layer "
                 f"requested: {layer})")
    lines.append(_cache_line())
    lines.append("optional libraries:")
    for dists, import_name, use in _OPTIONAL:
        version = _version(dists, import_name)
        lines.append(f"  {dists[0]:<24}{version or 'not installed':<16}{use}")
    lines.append("integrations:")
    for module, needs in _INTEGRATIONS:
        try:
            present = importlib.util.find_spec(module) is not None
        except ImportError:
            present = False
        state = "present" if present else "not in this version"
        if present and needs:
            state += f", needs {needs}: " + ("found" if importlib.util.find_spec(needs)
                                             else "not installed")
        lines.append(f"  {module:<24}{state}")
    return lines


def run_info(args) -> int:
    """Print :func:`info_lines`."""
    print("\n".join(info_lines()))
    return 0
