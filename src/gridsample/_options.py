"""Option names become integer codes here, and only here.

The public functions accept the ONNX names (``"linear"``, ``"nearest"``,
``"cubic"``), PyTorch's (``"bilinear"``, ``"bicubic"``) and the volumetric
aliases (``"trilinear"``, ``"tricubic"``), as well as the integer codes of
CANN / ATen (0 linear, 1 nearest, 2 cubic; padding 0 zeros, 1 border,
2 reflection).  Past this boundary the kernels see integers only.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._errors import GridSampleError, GridSampleTypeError, describe

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

MODE_LINEAR, MODE_NEAREST, MODE_CUBIC = 0, 1, 2
PAD_ZEROS, PAD_BORDER, PAD_REFLECTION = 0, 1, 2

#: Canonical name of each mode code.
MODE_NAMES = {MODE_LINEAR: "linear", MODE_NEAREST: "nearest", MODE_CUBIC: "cubic"}
#: Canonical name of each padding code.
PADDING_NAMES = {PAD_ZEROS: "zeros", PAD_BORDER: "border", PAD_REFLECTION: "reflection"}

_MODE_ALIASES = {
    "linear": MODE_LINEAR,
    "bilinear": MODE_LINEAR,
    "trilinear": MODE_LINEAR,
    "nearest": MODE_NEAREST,
    "cubic": MODE_CUBIC,
    "bicubic": MODE_CUBIC,
    "tricubic": MODE_CUBIC,
}
_PADDING_ALIASES = {"zeros": PAD_ZEROS, "border": PAD_BORDER, "reflection": PAD_REFLECTION}


def _parse_code(name: str, value: object, aliases: dict, codes: dict) -> int:
    allowed = ", ".join(repr(a) for a in aliases) + " or the integer codes " + ", ".join(
        f"{c} ({n})" for c, n in codes.items()
    )
    if isinstance(value, (bytes, np.bytes_)):
        value = value.decode("ascii", "replace")
    if isinstance(value, str):
        key = value.strip().lower()
        if key in aliases:
            return aliases[key]
        raise GridSampleError(f"{name}={value!r} is not a known {name}; allowed: {allowed}")
    if isinstance(value, (bool, np.bool_)):
        raise GridSampleTypeError(
            f"{name}={value!r} is a bool; {name} must be one of {allowed}"
        )
    if isinstance(value, numbers.Integral):
        code = int(value)
        if code in codes:
            return code
        raise GridSampleError(f"{name}={value!r} is not a valid code; allowed: {allowed}")
    raise GridSampleTypeError(
        f"{name}={describe(value)} has type {type(value).__name__}; {name} must be one of {allowed}"
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
