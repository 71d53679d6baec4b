"""One place for Numba's flags and for where compiled code is kept.

Every compiled function of gridsample is made with :func:`function` (entries
and loop-level functions, array arguments ``noalias``), :func:`callee` (the
same, optimized twice: planners that need it), :func:`helper` (small
scalar helpers) or :func:`skeleton` (loop skeletons inlined into their
callers), so the flags are chosen once:

* ``nogil=True``: the entries run on gridsample's own thread pool
  (:mod:`gridsample._threads`), several at once.
* ``error_model="numpy"``: division never raises inside a kernel (kernels must
  not raise; arguments are validated before they run).
* no ``fastmath``: NaN and infinity must follow the written rules, and
  reassociation would make results depend on vector width.
* no IR-level inlining (``inline="always"``) but for the loop skeletons of
  :func:`skeleton`: Numba re-types an inlined body in every caller, which
  measured 2-6x the compile time of letting LLVM inline the small callees
  (it does, and vectorizes the same loops).  Skeletons are inlined by
  gridsample's own pass (:mod:`gridsample._inline`), which decides the
  branches on constant arguments before it copies what they guard.

Compiled code is cached on disk under a folder named by a hash of the kernel
sources, Numba's and llvmlite's versions and Python's (:func:`cache_key`).
Numba's own cache keys on the file of each entry only, so an edited helper
in another file would keep running old machine code; here any edit to any
kernel source, or an upgrade, selects a new folder.  The folder is
:func:`cache_root` / :func:`cache_key`.
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings
from pathlib import Path

import llvmlite
import numba
import numba.core.dispatcher
import numpy as np
from numba.core import caching

from ._target import target_cpu_name, target_isa, tune_cpu, vector_width


def _pipeline() -> dict:
    """Compile with gridsample's skeleton inliner (:mod:`gridsample._inline`).

    It builds on Numba internals; where a Numba version has moved them, its
    own pipeline serves (the same programs, slower to compile).
    """
    try:
        from ._inline import Compiler
    except Exception:  # pragma: no cover - depends on Numba internals
        return {}
    return {"pipeline_class": Compiler}


__all__ = ["function", "callee", "helper", "skeleton", "cache_root", "cache_key", "cache_dir",
           "NOALIAS", "TUNED", "code_attributes", "code_description",
           "kernel_source_files", "compiled_functions", "read_only"]

_PIPELINE = _pipeline()
_COMMON = dict(nogil=True, error_model="numpy", **_PIPELINE)

#: Whether compiled functions carry gridsample's LLVM attributes (its own pipeline is in use).
TUNED = bool(_PIPELINE)


def code_attributes() -> tuple:
    """The vector width and tuning gridsample's compiled code has, ``(None, None)`` for
    LLVM's own (:mod:`gridsample._target`; none where Numba's own pipeline compiles)."""
    return (vector_width(), tune_cpu()) if TUNED else (None, None)


def code_description() -> str:
    """What gridsample's kernels are compiled for, in words: the CPU, the ISA, the vector
    width and the tuning (``gridsample info`` and the benchmarks print it)."""
    width, tune = code_attributes()
    line = f"{target_cpu_name()}, {target_isa()}, vector width {width or 'LLVM default'}"
    return line + (f", tuned for {tune}" if tune else "")

_PACKAGE = Path(__file__).resolve().parent
_PACKAGE_NAME = __name__.rpartition(".")[0]

#: Parts of the package that hold no compiled code and no constant compiled
#: code reads: editing them must not invalidate the kernels.
_NOT_KERNEL_SOURCES = ("cli", "dask", "onnx", "torch.py", "cann.py", "reference.py")


def kernel_source_files() -> list[Path]:
    """The package's Python files whose text compiled code depends on, sorted."""
    files = []
    for path in sorted(_PACKAGE.rglob("*.py")):
        top = path.relative_to(_PACKAGE).parts[0]
        if top not in _NOT_KERNEL_SOURCES:
            files.append(path)
    return files


_key: str | None = None


def cache_key() -> str:
    """16 hex digits naming this build of the kernels.

    A SHA-256 of the package's import name, of every kernel source file (name and text),
    of Numba's, llvmlite's and Python's versions and of the vector width and tuning
    (:func:`gridsample._target.vector_width`, :func:`~gridsample._target.tune_cpu`).
    Computed once per process (~2 ms).  The import name is part of it because the
    cached code refers to its modules by name: a copy of the same sources under
    another name (a benchmark's baseline of an unchanged tree, a vendored copy) loading
    this one's entries would fail to import them, or run the other copy's settings.
    """
    global _key
    if _key is None:
        h = hashlib.sha256()
        h.update(f"{_PACKAGE_NAME}|{numba.__version__}|{llvmlite.__version__}|"
                 f"{sys.version}".encode())
        width, tune = code_attributes()
        h.update(f"|width={width}|tune={tune}".encode())
        for path in kernel_source_files():
            h.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
            h.update(path.read_bytes() + b"\0")
        _key = h.hexdigest()[:16]
    return _key


def _user_cache_home() -> Path:
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local"
        return Path(base) / "gridsample" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "gridsample"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gridsample"


def cache_root() -> Path:
    """Where compiled kernels are kept, one sub-folder per :func:`cache_key`.

    ``GRIDSAMPLE_CACHE_DIR`` if set; else ``$NUMBA_CACHE_DIR/gridsample`` if
    Numba's cache folder is set; else the user's cache folder
    (``~/.cache/gridsample`` on Linux, ``~/Library/Caches/gridsample`` on
    macOS, ``%LOCALAPPDATA%\\gridsample\\Cache`` on Windows).  Read when the
    package is imported.
    """
    own = os.environ.get("GRIDSAMPLE_CACHE_DIR")
    if own:
        return Path(own)
    if numba.config.CACHE_DIR:
        return Path(numba.config.CACHE_DIR) / "gridsample"
    return _user_cache_home()


_dir: Path | None = None
_dir_usable: bool | None = None


def cache_dir() -> Path:
    """This build's folder: :func:`cache_root` / :func:`cache_key`."""
    global _dir
    if _dir is None:
        _dir = cache_root() / cache_key()
    return _dir


def _ensure_cache_dir() -> bool:
    """Create the folder once per process; False if it cannot be written."""
    global _dir_usable
    if _dir_usable is None:
        try:
            cache_dir().mkdir(parents=True, exist_ok=True)
            probe = cache_dir() / f".probe-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
            _dir_usable = True
        except OSError:
            _dir_usable = False
            warnings.warn(f"gridsample: cannot write compiled kernels to {cache_dir()}; "
                          "they will be compiled in every process (set GRIDSAMPLE_CACHE_DIR "
                          "to a writable folder)", RuntimeWarning, stacklevel=3)
    return _dir_usable


class _KeyedLocator(caching._CacheLocator):
    """Numba cache locator: :func:`cache_dir`, stamped with :func:`cache_key`."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file  # Numba names it in its warnings
        self._lineno = py_func.__code__.co_firstlineno

    def ensure_cache_path(self):
        if not _ensure_cache_dir():
            raise OSError(f"cannot write to {cache_dir()}")

    def get_cache_path(self):
        return str(cache_dir())

    def get_source_stamp(self):
        return cache_key()

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        return cls(py_func, py_file) if _ensure_cache_dir() else None


class _KeyedCacheImpl(caching.CompileResultCacheImpl):
    _locator_classes = [_KeyedLocator]


class _KeyedFunctionCache(caching.FunctionCache):
    _impl_class = _KeyedCacheImpl


def _cached(dispatcher):
    """Give ``dispatcher`` the keyed disk cache (or none where it cannot be written)."""
    if not isinstance(dispatcher, numba.core.dispatcher.Dispatcher):
        return dispatcher  # NUMBA_DISABLE_JIT=1: the plain Python function
    try:
        dispatcher._cache = _KeyedFunctionCache(dispatcher.py_func)
    except RuntimeError:  # no usable folder: compile in every process
        pass
    return dispatcher


def _enable_noalias_option() -> bool:
    """Let ``njit`` accept ``noalias=True`` (Numba's own ``Flags.noalias``).

    Numba sets this flag on the functions it generates for ``prange`` loops
    but does not expose it to ``njit``; without it LLVM must assume that a
    store into one array argument may change any other, which blocks
    vectorization and keeps reloading constants (measured: the forward
    entries ran 1.3-2x slower).  The shim adds the option mapping to the CPU
    target; if a future Numba moves it, gridsample runs without the flag
    (correct, somewhat slower).
    """
    try:
        from numba.core import cpu, options

        if not hasattr(cpu.CPUTargetOptions, "noalias"):
            cpu.CPUTargetOptions.noalias = options._mapping("noalias")
        return True
    except Exception:  # pragma: no cover - depends on Numba internals
        return False


#: Whether compiled functions declare their array arguments ``noalias``.
NOALIAS = _enable_noalias_option()


def function(func):
    """Compile an entry or a loop-level function (called from Python or compiled code).

    Its array arguments are declared ``noalias``: every caller in gridsample
    passes distinct arrays (inputs, the output and fresh scratch; the output
    is always a new array), so no store through one is seen through another.
    """
    extra = {"noalias": True} if NOALIAS else {}
    return _cached(numba.njit(**_COMMON, **extra)(func))


def callee(func):
    """Compile a vector planner that other compiled code calls by symbol and whose loop one
    pass of LLVM leaves scalar (the 2-D linear grid gradient's, under reflection and the
    index paddings).

    :func:`function`, with its module optimized twice by LLVM
    (:func:`gridsample._inline._optimize_twice`): the process that compiles a caller runs
    the callee's standalone code, and some planners' loops vectorize only on a second pass.
    Where gridsample's own pipeline is not in use (:data:`TUNED` false), the same as
    :func:`function`.  Which functions need it, and what it costs: docs/kernels.md,
    "Freshly compiled code can run slower".
    """
    if TUNED:
        from ._inline import OPTIMIZED_TWICE

        OPTIMIZED_TWICE.add(func)
    return function(func)


def helper(func):
    """Compile a small helper (per-axis math, element loads and stores).

    A separate compiled function that LLVM inlines into its callers, where
    constant arguments (a padding code, a tap count) fold away.
    """
    return _cached(numba.njit(**_COMMON)(func))


def skeleton(func):
    """Compile a loop skeleton that entries instantiate with compiled functions as arguments.

    Inlined into each caller at Numba's IR level: the functions it receives
    become direct calls of the caller, which can then be cached (a compiled
    function that *receives* another as an argument cannot be).  Keep
    skeletons small: an inlined body is typed again in every caller.
    """
    return numba.njit(inline="always", **_COMMON)(func)


def compiled_functions() -> dict:
    """What this build's cache folder holds: ``{"module.function": [signature, ...]}``.

    Read from Numba's index files (one per compiled function); a file that
    cannot be read is skipped.
    """
    import pickle

    found = {}
    folder = cache_dir()
    if not folder.is_dir():
        return found
    for index in sorted(folder.glob("*.nbi")):
        name = index.name.split("-")[0]
        try:
            with open(index, "rb") as f:
                pickle.load(f)  # the Numba version that wrote it
                _stamp, overloads = pickle.loads(f.read())
        except Exception:  # noqa: BLE001 - a cache file of another version or a partial write
            continue
        found.setdefault(name, []).extend(str(key[0]) for key in overloads)
    return found


def read_only(a: np.ndarray) -> np.ndarray:
    """``a`` as a read-only view (no copy).

    Numba compiles one signature for writable and another for read-only
    arrays.  The kernels read every input (``x``, the grid, ``dL/dy``, theta)
    through read-only views, so a caller's read-only array (a memory map,
    a frozen array, a tensor's view) shares the compiled kernels of a
    writable one instead of compiling its own.
    """
    view = a.view()
    view.setflags(write=False)  # (cheaper than the flags object: ~0.25 against ~0.5 µs)
    return view
