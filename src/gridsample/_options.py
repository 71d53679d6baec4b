"""Option names become integer codes here, and only here.

The public functions accept the names and codes the registry
(:mod:`gridsample._registry`) lists: the ONNX names (``"linear"``,
``"nearest"``, ``"cubic"``), PyTorch's (``"bilinear"``, ``"bicubic"``), the
volumetric aliases (``"trilinear"``, ``"tricubic"``) and the integer codes of
CANN / ATen (0 linear, 1 nearest, 2 cubic; padding 0 zeros, 1 border,
2 reflection), plus the paddings beyond ONNX (3 constant, 4 mirror,
5 symmetric, 6 wrap), one for all axes or one per grid component.  Past
this boundary the kernels see integers only.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._errors import GridSampleError, GridSampleTypeError, describe
from ._registry import (
    MODE_CUBIC,
    MODE_LINEAR,
    MODE_NEAREST,
    MODES,
    PAD_BORDER,
    PAD_REFLECTION,
    PAD_ZEROS,
    PADDINGS,
)

__all__ = [
    "MODE_LINEAR",
    "MODE_NEAREST",
    "MODE_CUBIC",
    "PAD_ZEROS",
    "PAD_BORDER",
    "PAD_REFLECTION",
    "MODE_NAMES",
    "PADDING_NAMES",
    "parse_mode",
    "parse_padding",
    "parse_paddings",
    "parse_onnx_padding",
    "parse_onnx_mode",
    "parse_grid_units",
    "parse_cubic_a",
    "parse_align_corners",
    "parse_flag",
]

#: Canonical name of each mode code.
MODE_NAMES = {m.code: m.name for m in MODES}
#: Canonical name of each padding code.
PADDING_NAMES = {p.code: p.name for p in PADDINGS}

_MODE_ALIASES = {name: m.code for m in MODES for name in (m.name, *m.aliases)}
_PADDING_ALIASES = {name: p.code for p in PADDINGS for name in (p.name, *p.aliases)}
#: The modes and paddings ONNX GridSample defines (gridsample.cann and gridsample.onnx).
_ONNX_MODES = tuple(m for m in MODES if m.onnx)
_ONNX_PADDINGS = tuple(p for p in PADDINGS if p.onnx)


def _parse_code(name: str, value: object, aliases: dict, codes: dict, table=None) -> int:
    """The code of ``value`` (a name of ``aliases`` or a code of ``codes``), or the error
    naming ``name``; ``table`` (registry entries): the errors list only these entries'
    names and codes (an API that takes a subset, which then refuses the others by name)."""
    if isinstance(value, str) and value in aliases:  # the common case, first and cheap
        return aliases[value]
    if isinstance(value, (bytes, np.bytes_)):
        value = value.decode("ascii", "replace")
    if isinstance(value, str):
        key = value.strip().lower()
        if key in aliases:
            return aliases[key]
        raise GridSampleError(
            f"{name}={value!r} is not a known {name}; allowed: "
            f"{_allowed(aliases, codes, table)}")
    if isinstance(value, (bool, np.bool_)):
        raise GridSampleTypeError(
            f"{name}={value!r} is a bool; {name} must be one of "
            f"{_allowed(aliases, codes, table)}")
    if isinstance(value, numbers.Integral):
        code = int(value)
        if code in codes:
            return code
        raise GridSampleError(
            f"{name}={value!r} is not a valid code; allowed: "
            f"{_allowed(aliases, codes, table)}")
    raise GridSampleTypeError(
        f"{name}={describe(value)} has type {type(value).__name__}; {name} must be one of "
        f"{_allowed(aliases, codes, table)}"
    )


def _allowed(aliases: dict, codes: dict, table=None) -> str:
    """The accepted names and codes, for error messages (``table``: only its entries')."""
    if table is not None:
        kept = {e.code for e in table}
        aliases = {a: c for a, c in aliases.items() if c in kept}
        codes = {c: n for c, n in codes.items() if c in kept}
    return ", ".join(repr(a) for a in aliases) + " or the integer codes " + ", ".join(
        f"{c} ({n})" for c, n in codes.items()
    )


def parse_mode(mode: object) -> int:
    """Return the integer code of an interpolation *mode* name or code."""
    return _parse_code("mode", mode, _MODE_ALIASES, MODE_NAMES)


def parse_padding(padding_mode: object) -> int:
    """Return the integer code of a *padding_mode* name or code."""
    return _parse_code("padding_mode", padding_mode, _PADDING_ALIASES, PADDING_NAMES)


def parse_paddings(padding_mode: object, rank: int) -> tuple:
    """One padding code per grid component (grid order: ``grid[..., 0]``'s axis first).

    A single name or code applies to every axis; a tuple or list gives one
    per component and must have ``rank`` entries.
    """
    if isinstance(padding_mode, (tuple, list)):
        if len(padding_mode) != rank:
            raise GridSampleError(
                f"padding_mode={padding_mode!r} has {len(padding_mode)} entries; a per-axis "
                f"padding needs one per grid component ({rank}, grid[..., 0]'s axis first)")
        return tuple(_parse_code(f"padding_mode[{k}]", p, _PADDING_ALIASES, PADDING_NAMES)
                     for k, p in enumerate(padding_mode))
    return (parse_padding(padding_mode),) * rank


def parse_onnx_padding(padding_mode: object, where: str) -> int:
    """A padding ONNX GridSample defines (zeros, border, reflection), for ``where``'s API."""
    if isinstance(padding_mode, (tuple, list)):
        raise GridSampleError(
            f"padding_mode={padding_mode!r}: {where} takes one padding for all axes "
            f"(per-axis paddings are gridsample.grid_sample's extension)")
    code = _parse_code("padding_mode", padding_mode, _PADDING_ALIASES, PADDING_NAMES,
                       _ONNX_PADDINGS)
    return _onnx_only("padding_mode", padding_mode, code, PADDINGS, where)


def parse_onnx_mode(mode: object, where: str, name: str = "mode") -> int:
    """A mode ONNX GridSample defines (linear, nearest, cubic), for ``where``'s API, whose
    argument is called ``name``."""
    code = _parse_code(name, mode, _MODE_ALIASES, MODE_NAMES, _ONNX_MODES)
    return _onnx_only(name, mode, code, MODES, where)


def _onnx_only(name: str, value: object, code: int, table: tuple, where: str) -> int:
    """``code`` if the registry ``table`` marks it as ONNX's, else the error naming it."""
    entry = next(e for e in table if e.code == code)
    if not entry.onnx:
        allowed = ", ".join(repr(e.name) for e in table if e.onnx)
        raise GridSampleError(
            f"{name}={value!r} is not defined by {where}; allowed: {allowed} "
            f"(gridsample.grid_sample has {entry.name!r})")
    return code


#: Values of ``grid_units``.
GRID_UNITS = ("normalized", "pixels")


def parse_grid_units(grid_units: object) -> bool:
    """``True`` for ``"pixels"``, ``False`` for ``"normalized"``."""
    if not isinstance(grid_units, str):
        raise GridSampleTypeError(
            f"grid_units={describe(grid_units)} has type {type(grid_units).__name__}; "
            f"grid_units must be 'normalized' or 'pixels'")
    key = grid_units.strip().lower()
    if key not in GRID_UNITS:
        raise GridSampleError(
            f"grid_units={grid_units!r} is not known; allowed: 'normalized', 'pixels'")
    return key == "pixels"


def is_integer(value) -> bool:
    """An integer that is not a bool (``True == 1``, but a flag is not a size)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


#: The largest magnitude of Keys' coefficient accepted (:func:`parse_cubic_a`).
MAX_CUBIC_A = 1000.0


def parse_cubic_a(cubic_a: object, mode: int) -> float:
    """Keys' coefficient: a real number of magnitude at most :data:`MAX_CUBIC_A`; other than
    -0.75 only for ``mode="cubic"``."""
    if isinstance(cubic_a, (bool, np.bool_)) or not isinstance(cubic_a, numbers.Real):
        raise GridSampleTypeError(
            f"cubic_a={describe(cubic_a)} has type {type(cubic_a).__name__}; cubic_a must be "
            f"a real number (Keys' coefficient: -0.75 as PyTorch, -0.5 as Pillow)")
    a = float(cubic_a)
    # One comparison, false for NaN and ±inf too (torch.compile traces this parser: with
    # dynamic shapes math.isfinite breaks its graph).  Keys' weights reach ~8|a| and cancel to
    # sum 1: beyond |a| = 1000 float32 sums keep no accurate digits, and far beyond they
    # overflow (every output NaN).
    if not abs(a) <= MAX_CUBIC_A:
        raise GridSampleError(f"cubic_a={cubic_a!r} must be finite, at most {MAX_CUBIC_A:g} in "
                              f"magnitude (-0.75 as PyTorch, -0.5 as Pillow)")
    if a != -0.75 and mode != MODE_CUBIC:
        raise GridSampleError(
            f"cubic_a={cubic_a!r} applies to mode='cubic' only; mode is "
            f"{MODE_NAMES[mode]!r}")
    return a


def parse_flag(name: str, value: object) -> bool:
    """Accept ``True``/``False``, NumPy bools and the integers 0 and 1."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral) and int(value) in (0, 1):
        return bool(int(value))
    if isinstance(value, numbers.Integral):
        raise GridSampleError(f"{name}={value!r} is not allowed; {name} must be a bool, 0 or 1")
    raise GridSampleTypeError(
        f"{name}={describe(value)} has type {type(value).__name__}; {name} must be a bool, 0 or 1"
    )


def parse_align_corners(align_corners: object) -> bool:
    """Return *align_corners* as a bool (accepts bools and 0/1)."""
    return parse_flag("align_corners", align_corners)
