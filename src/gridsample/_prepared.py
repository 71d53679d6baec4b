"""Prepared runs kept per call signature, so that repeated small calls skip validation and
planning.

A call's validation and plan depend on its arrays only through their shapes, strides and
dtypes, and on its options; what the engine then derives (strides, constants, the kernel,
the thread count) also on the settings in force (:func:`gridsample._engine.settings_key`).
The public functions look a call's :func:`signature` up here first: a hit was validated
and planned by an earlier call with the same signature, and runs at once (a small call
spent ~30 µs of its ~40 in validating and planning).  Arguments that are not plain NumPy
arrays of native byte order, numeric dtypes and hashable options are not kept (they take
the full path every time).
"""

from __future__ import annotations

import math

import numpy as np

from ._engine import settings_key

__all__ = ["signature", "PreparedCache"]

# Not kept: strings and objects (whose validation reads the values).
_KEPT_KINDS = frozenset("biufcV")


class _NegativeZero:
    """The kind of a ``-0.0`` inside a tuple option (a fill per channel): equal to ``0.0``,
    but the fill it gives carries its sign."""


def _kind(value) -> type:
    """``value``'s type, or :class:`_NegativeZero` for a float ``-0.0``."""
    kind = type(value)
    if kind is float and value == 0 and math.copysign(1.0, value) < 0:
        return _NegativeZero
    return kind


#: Option types that hold no items.
_SCALARS = frozenset((str, int, float, bool, type(None)))


def _types(options: tuple, kind=type) -> tuple:
    """The types of ``options`` and of the items of those that are tuples (subclasses too),
    beside the values in a key: ``True`` and ``1``, ``-0.0`` and ``0.0`` are equal, but not
    the same option.  Items are told by :func:`_kind` (a top-level ``-0.0``, a fill or
    ``cubic_a``, gives the bits ``0.0`` gives)."""
    kinds = tuple(map(kind, options))
    if not _SCALARS.issuperset(kinds):  # (the common case, tested first and cheap)
        kinds += tuple(_types(v, _kind) for v in options if isinstance(v, tuple))
    return kinds


def signature(arrays: tuple, options: tuple):
    """The key of a call with ``arrays`` and ``options``, or None where the call is not kept
    (other array types, non-native byte order, strings and objects); a key with unhashable
    options is not kept either (:class:`PreparedCache`)."""
    layouts = []
    for a in arrays:
        if type(a) is not np.ndarray:
            return None
        dtype = a.dtype
        if dtype.kind not in _KEPT_KINDS or not dtype.isnative:
            return None
        layouts.append((a.shape, a.strides, dtype))
    # Not hashed here: a key whose options are unhashable (a list, an array) is simply never
    # found or kept (PreparedCache).
    return (*layouts, options, _types(options), settings_key())


class PreparedCache:
    """At most ``size`` prepared runs by signature (emptied when full: calls with many
    signatures are large or varied, and pay the full path anyway).  Safe to share between
    threads: entries are immutable and only added or dropped whole."""

    def __init__(self, size: int = 64):
        self.size = size
        self.entries = {}

    def get(self, key):
        """The prepared run kept for ``key``, or None (also for a None or unhashable key)."""
        if key is None:
            return None
        try:
            return self.entries.get(key)
        except TypeError:  # an option that is a list or an array
            return None

    def put(self, key, prepared) -> None:
        """Keep ``prepared`` for ``key`` (nothing for a None or unhashable key, nor where
        the settings changed while it was made: another thread's, say, whose values it may
        have read in part)."""
        if key is None or key[-1] != settings_key():
            return
        try:
            hash(key)
        except TypeError:
            return
        if len(self.entries) >= self.size:
            self.entries.clear()
        self.entries[key] = prepared
