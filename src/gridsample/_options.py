"""Option names become integer codes here, and only here.

The public functions accept the names and codes the registry
(:mod:`gridsample._registry`) lists: the ONNX names (``"linear"``,
``"nearest"``, ``"cubic"``), PyTorch's (``"bilinear"``, ``"bicubic"``), the
volumetric aliases (``"trilinear"``, ``"tricubic"``) and the integer codes of
CANN / ATen (0 linear, 1 nearest, 2 cubic; padding 0 zeros, 1 border,
2 reflection).  Past this boundary the kernels see integers only.
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
    "parse_align_corners",
    "parse_flag",
]

#: Canonical name of each mode code.
MODE_NAMES = {m.code: m.name for m in MODES}
#: Canonical name of each padding code.
PADDING_NAMES = {p.code: p.name for p in PADDINGS}

_MODE_ALIASES = {name: m.code for m in MODES for name in (m.name, *m.aliases)}
_PADDING_ALIASES = {name: p.code for p in PADDINGS for name in (p.name, *p.aliases)}


def _parse_code(name: str, value: object, aliases: dict, codes: dict) -> int:
    if isinstance(value, str) and value in aliases:  # the common case, first and cheap
        return aliases[value]
    if isinstance(value, (bytes, np.bytes_)):
        value = value.decode("ascii", "replace")
    if isinstance(value, str):
        key = value.strip().lower()
        if key in aliases:
            return aliases[key]
        raise GridSampleError(
            f"{name}={value!r} is not a known {name}; allowed: {_allowed(aliases, codes)}")
    if isinstance(value, (bool, np.bool_)):
        raise GridSampleTypeError(
            f"{name}={value!r} is a bool; {name} must be one of {_allowed(aliases, codes)}"
        )
    if isinstance(value, numbers.Integral):
        code = int(value)
        if code in codes:
            return code
        raise GridSampleError(
            f"{name}={value!r} is not a valid code; allowed: {_allowed(aliases, codes)}")
    raise GridSampleTypeError(
        f"{name}={describe(value)} has type {type(value).__name__}; {name} must be one of "
        f"{_allowed(aliases, codes)}"
    )


def _allowed(aliases: dict, codes: dict) -> str:
    """The accepted names and codes, for error messages."""
    return ", ".join(repr(a) for a in aliases) + " or the integer codes " + ", ".join(
        f"{c} ({n})" for c, n in codes.items()
    )


def parse_mode(mode: object) -> int:
    """Return the integer code of an interpolation *mode* name or code."""
    return _parse_code("mode", mode, _MODE_ALIASES, MODE_NAMES)


def parse_padding(padding_mode: object) -> int:
    """Return the integer code of a *padding_mode* name or code."""
    return _parse_code("padding_mode", padding_mode, _PADDING_ALIASES, PADDING_NAMES)


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
