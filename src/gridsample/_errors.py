"""The package's exception types.

Every bad argument raises :class:`GridSampleError` (a ``ValueError``); an
argument of the wrong *type* raises :class:`GridSampleTypeError`, which is
both a ``GridSampleError`` and a ``TypeError``.  Messages name the argument,
the value received and what is allowed.  Kernels never raise: everything is
validated before they run.
"""

from __future__ import annotations

__all__ = ["GridSampleError", "GridSampleTypeError"]


class GridSampleError(ValueError):
    """An argument of gridsample's functions has a value that is not allowed."""


class GridSampleTypeError(GridSampleError, TypeError):
    """An argument of gridsample's functions has a type that is not allowed."""


def describe(value: object, limit: int = 60) -> str:
    """A short ``repr`` of *value* for error messages (arrays as shape/dtype)."""
    # (a class such as np.float32 has ``shape`` and ``dtype`` too: descriptors, not values)
    shape = None if isinstance(value, type) else getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{type(value).__name__} of shape {tuple(shape)} and dtype {dtype}"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
