"""Element types: what X and the grid may be, and how kernels compute each.

docs/semantics.md §6, as a table the engine reads.  Every X type is computed
through a *storage view* the kernels can handle (:mod:`gridsample._convert`):

============================  ===========  =========  ===========  ========
X dtype                       storage      weights    accumulator  stored
============================  ===========  =========  ===========  ========
float32                       float32      float32    float32      as is
float64                       float64      float64    float64      as is
float16, bfloat16             uint16 bits  float32    float32      rounded to nearest even
int8 ... int64, uint8 ... 64  itself       float64    float64      rint, saturated, NaN -> 0
bool                          uint8        float64    float64      rint != 0, NaN -> 0
complex64                     complex64    float32    complex64    as is
complex128                    complex128   float64    complex128   as is
str / bytes / object          (nearest only: an index image is sampled, then gathered)
============================  ===========  =========  ===========  ========

The grid may be float16, bfloat16, float32 or float64; coordinates are
computed in float64 for a float64 grid and in float32 otherwise.  A
float16/bfloat16 grid is converted to float32 a chunk of points at a time.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

__all__ = ["XConversion", "x_conversion", "is_string", "is_half", "X_DTYPE_NAMES",
           "GRID_DTYPE_NAMES", "coord_dtype", "dtype_name", "cast_values"]

#: How the kernels read ``x``'s elements and store results
#: (:mod:`gridsample._convert`): as they are, integers rounded and saturated,
#: bool, float16 bits, bfloat16 bits.
KIND_NATIVE, KIND_INT, KIND_BOOL, KIND_F16, KIND_BF16 = 0, 1, 2, 3, 4

_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
#: Names of the numeric X dtypes; strings (str, bytes, object) come on top.
X_DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64", *_INTS, "bool", "complex64",
                 "complex128")
#: Names of the grid dtypes.
GRID_DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True, eq=False)
class XConversion:
    """How kernels read an X dtype and store results in it."""

    storage: np.dtype      # the view of X (and of the output) the kernels see
    kind: int              # KIND_* of gridsample._convert
    weight: np.dtype       # dtype of weights and tap products (docs/semantics.md §6.1)
    accumulator: np.dtype  # dtype of the per-channel sums


@functools.lru_cache(maxsize=256)
def dtype_name(dtype: np.dtype) -> str:
    """``dtype.name``, cached: NumPy computes the name in Python on every access (about
    4 µs), and each call of the operators asks for it several times."""
    return dtype.name


def is_string(dtype: np.dtype) -> bool:
    """True for NumPy str, bytes and object dtypes (sampled with nearest only)."""
    return dtype.kind in "USO"


def is_half(dtype: np.dtype) -> bool:
    """True for float16 and bfloat16."""
    return dtype_name(dtype) in ("float16", "bfloat16")


def coord_dtype(grid_dtype: np.dtype) -> np.dtype:
    """Coordinates in the grid's precision, float32 at least (docs/semantics.md §6.2)."""
    return np.dtype(np.float64) if grid_dtype == np.float64 else np.dtype(np.float32)


@functools.cache
def _conversion(name: str, dtype: np.dtype) -> XConversion:
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    if name in ("float32", "float64"):
        return XConversion(dtype, KIND_NATIVE, dtype, dtype)
    if name in ("complex64", "complex128"):
        w = f32 if name == "complex64" else f64
        return XConversion(dtype, KIND_NATIVE, w, dtype)
    if name in ("float16", "bfloat16"):
        kind = KIND_F16 if name == "float16" else KIND_BF16
        return XConversion(np.dtype(np.uint16), kind, f32, f32)
    if name == "bool":
        return XConversion(np.dtype(np.uint8), KIND_BOOL, f64, f64)
    return XConversion(dtype, KIND_INT, f64, f64)  # integers


def x_conversion(dtype: np.dtype) -> XConversion:
    """The :class:`XConversion` of a numeric X dtype (one in ``X_DTYPE_NAMES``)."""
    return _conversion(dtype_name(dtype), dtype)


def cast_values(values, dtype):
    """float64 / complex128 values to X's dtype, as results are cast (docs/semantics.md §6.1).

    Integers: round half to even, saturate to the range, NaN -> 0.  bool:
    nonzero after rounding, NaN -> False.  Floats and complex: one rounding
    (float16/bfloat16 through NumPy / ml_dtypes casts).
    """
    if dtype.kind in "USO":
        return values
    if dtype.kind == "b":
        v = np.rint(values)
        return (v != 0) & ~np.isnan(v)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = np.rint(values)
        out = np.zeros(v.shape, dtype)
        high = v >= float(info.max)
        low = v <= float(info.min)
        mid = ~(high | low | np.isnan(v))
        out[high] = info.max
        out[low] = info.min
        out[mid] = v[mid].astype(dtype)
        return out
    with np.errstate(over="ignore"):  # (overflow gives ±inf, as §6.1 has it)
        return values.astype(dtype)
