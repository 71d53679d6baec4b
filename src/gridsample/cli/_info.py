"""``gridsample info``: version, kernels, threads, cache location, optional libraries.

Optional libraries are looked up by their installed metadata
(:mod:`importlib.metadata`) and integration modules by
:func:`importlib.util.find_spec`, so ``info`` imports none of them.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import re
from pathlib import Path

import numba
import numpy as np

import gridsample

from ._progress import count

__all__ = ["info_lines", "run_info"]

# (distribution names, import name, what gridsample uses it for)
_OPTIONAL = (
    (("pillow",), "PIL", "CLI: PNG / JPEG, demo  [cli]"),
    (("tifffile",), "tifffile", "CLI: TIFF  [cli]"),
    (("tqdm",), "tqdm", "CLI: progress bars  [cli]"),
    (("nibabel",), "nibabel", "CLI: NIfTI  [nifti]"),
    (("ml_dtypes",), "ml_dtypes", "bfloat16 arrays"),
    (("onnx",), "onnx", "gridsample.onnx  [onnx]"),
    (("dask",), "dask", "gridsample.dask  [dask]"),
    (("distributed",), "distributed", "gridsample.dask on a cluster  [dask]"),
    (("zarr",), "zarr", "gridsample.dask: zarr stores as inputs"),
    (("onnxruntime",), "onnxruntime", "benchmark peer"),
    (("torch",), "torch", "benchmark peer, tests"),
    (("opencv-python-headless", "opencv-python"), "cv2", "benchmark peer"),
    (("scipy",), "scipy", "benchmark peer"),
)
_INTEGRATIONS = (("gridsample.onnx", "onnx"), ("gridsample.torch", "torch"),
                 ("gridsample.dask", "dask"), ("gridsample.cann", None))


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

    def by_rank(keys):
        ranks = {}
        for rank, mode in sorted(set(keys)):
            ranks.setdefault(rank, []).append(MODE_NAMES[mode])
        return "; ".join(f"{r}-D {', '.join(m)}" for r, m in sorted(ranks.items()))

    special = by_rank(_engine.GENERAL_KERNELS)
    vector = by_rank((rank, mode) for rank, mode, _, _ in _engine.VECTOR_ENTRIES)
    fast = ", ".join(_engine.VECTOR_DTYPES)
    return [f"kernels: general: {special}; any other rank / mode: the N-D kernel; "
            "every element type",
            f"         vector (SIMD): {vector}; {fast}; planar sweeps",
            f"         in use: {_engine.kernel_family()} (GRIDSAMPLE_KERNELS)",
            "         backward (grid_sample_backward): vector-planned passes where a vector "
            "planner exists (grid gradient: 2-D linear and cubic, 3-D linear), the general "
            "kernels for any rank"]


def _cache_lines():
    """Where compiled kernels are kept, and which entries are compiled, by x dtype."""
    from .. import _engine, _jit
    from .._affine import _affine_rows
    from .._grad_kernels import BACKWARD_ENTRIES, backward_nd
    from .._kernels import task_fill, task_nd
    from .._prefilter import _filter_lines
    from .._vector import interleave_grid

    folder = _jit.cache_dir()
    found = _jit.compiled_functions()
    # Other builds' folders are named as this one is (_jit.cache_key: 16 hex digits); Numba's
    # own cache folders may share the root where NUMBA_CACHE_DIR is the same folder.
    others = [p for p in folder.parent.iterdir() if p.is_dir() and p != folder
              and re.fullmatch(r"[0-9a-f]{16}", p.name)] if folder.parent.is_dir() else []
    stale = (f"; {count(len(others), 'folder')} of other builds beside it" if others
             else "")
    lines = [f"cache: {folder} ({count(len(found), 'compiled function')}{stale})"]
    # Each compiled entry under the kernels it belongs to: every function of the generated
    # entry modules (every form: gathers, rows, one pass, channel-last, ...), and the named
    # entries of the others (whose modules also hold compiled helpers, not listed).
    by_module = {"_vector_entries": "vector", "_affine_entries": "affine warp",
                 "_planar_entries": "flow field", "_grad_vector_entries": "backward vector"}
    by_name = {}
    for label, entries in (("general", [*_engine.GENERAL_KERNELS.values(), task_nd, task_fill]),
                           ("backward", [*BACKWARD_ENTRIES.values(), backward_nd]),
                           ("flow field", [interleave_grid]),
                           ("affine grid", [_affine_rows]),
                           ("B-spline prefilter", [_filter_lines])):
        for entry in entries:
            by_name[f"{entry.py_func.__module__.rsplit('.', 1)[-1]}."
                    f"{entry.py_func.__name__}"] = label
    ready = {label: [] for label in dict.fromkeys([*by_module.values(), *by_name.values()])}
    for name, signatures in sorted(found.items()):
        module, _, function = name.partition(".")
        label = by_module.get(module) or by_name.get(name)
        if label is None:
            continue  # the entries' helpers, the thread pool's spins
        # X's dtype: the first array, after the forward vector entries' claims array.
        dtypes = sorted({m.group(1) for sig in signatures
                         for m in [re.search(r"[Aa]rray\((\w+)", _after_claims(sig))] if m})
        ready[label].append(f"{function} ({', '.join(dtypes)})" if dtypes else function)
    for label, functions in ready.items():
        lines.append(f"  compiled {label}: " + ("; ".join(functions) if functions else "none"))
    lines.append("  (gridsample compile --help: compile ahead of use)")
    return lines


def _after_claims(sig: str) -> str:
    """A compiled signature without the ``share, claims`` arguments that the forward's vector
    entries take first (``gridsample._claims``)."""
    return re.sub(r"^\(int64, [Aa]rray\(int64, 1, 'C', False, aligned=True\), ", "(", sig)


def _strategy_line() -> str:
    """What the kernels pick on this CPU, and the variables that force it."""
    from .._engine import ONE_PASS_NEAREST_CHANNELS
    from .._errors import GridSampleError
    from .._options import MODE_NAMES
    from .._row_loads import CL_ROW_CHANNELS, ROW_TAPS, row_loads
    from .._simd import AVAILABLE, LANES
    from .._target import fast_gathers, nearest_pass_channels, wide_gathers_beat_row_loads

    explicit = f"{LANES} lanes" if AVAILABLE else "not available (x86-64 with AVX2 only)"
    def reading_rows(kernels) -> list:
        return [f"{rank}-D {MODE_NAMES[mode]}"
                for rank, mode in sorted(kernels, key=lambda k: (k[0], MODE_NAMES[k[1]]))
                if row_loads(rank, mode) == "rows"]

    try:
        by_rows = reading_rows(ROW_TAPS)
        rows = ", ".join(by_rows) if by_rows else "none"
        counts = sorted({c for channels in CL_ROW_CHANNELS.values() for c in channels})
        runs = ", ".join(reading_rows(CL_ROW_CHANNELS)) or "none"
        rows += f"; channel-last, {counts[0]}-{counts[-1]} channels: {runs}"
    except GridSampleError as exc:  # a bad GRIDSAMPLE_ROW_LOADS: say so, as a call would
        by_rows, rows = [], str(exc)
    # The explicit one pass takes a single linear channel ahead of the row loads, but where
    # wide gathers lose to them (_engine.one_pass_applies).
    single = "2-D linear" not in by_rows or wide_gathers_beat_row_loads()
    most = nearest_pass_channels(ONE_PASS_NEAREST_CHANNELS)
    nearest = f"2-D nearest of {'one channel' if most == 1 else f'up to {most} channels'}"
    one_pass = f"{nearest} and a single linear channel" if single else nearest
    gathers = (f"fast ({one_pass} in one pass)" if fast_gathers()
               else "microcoded (the row loads keep a single channel, nearest its plan)")
    return ("strategies: explicit vectors with masked gathers (2-D linear and nearest, "
            f"float32, zeros / constant / border): {explicit}; gathers {gathers}; "
            f"taps read a row at a time: {rows} (GRIDSAMPLE_ONE_PASS, GRIDSAMPLE_ROW_LOADS)")


def info_lines() -> list:
    """The lines ``gridsample info`` prints."""
    lines = [f"gridsample {gridsample.__version__} ({Path(gridsample.__file__).parent})",
             f"python {platform.python_version()}, numpy {np.__version__}, "
             f"numba {numba.__version__}"]
    lines += _kernel_lines()
    lines.append(f"threads: {numba.get_num_threads()} (NUMBA_NUM_THREADS, "
                 "numba.set_num_threads; gridsample's own thread pool)")
    from .._jit import code_description

    lines.append(f"code: {code_description()} (GRIDSAMPLE_VECTOR_WIDTH, GRIDSAMPLE_TUNE_CPU)")
    lines.append(_strategy_line())
    lines += _cache_lines()
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
