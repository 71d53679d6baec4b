"""int32 sums and products that stay 32 bits wide in compiled code.

Numba types ``int32 * int32`` (and ``+``) as int64, the platform integer, so a planner's
offset arithmetic ran in 64-bit lanes: half the vector width, sign extensions and
``vpmullq`` (a slow instruction) around every product, and more instructions per point.
Compiled, :func:`add32` and :func:`mul32` are the 32-bit LLVM operations themselves
(intrinsics, typed at each call: no function to compile or inline); with
``NUMBA_DISABLE_JIT=1`` they are plain Python functions that compute the same values.
They wrap on overflow, so callers use them only where the values fit: the vector kernels'
offsets, which :func:`gridsample._vector.fits_int32` guarantees.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

__all__ = ["add32", "mul32"]


def _wrap(value: int) -> np.int32:
    """A Python int taken modulo 2**32 into int32's range."""
    return np.int32((value + 2 ** 31) % 2 ** 32 - 2 ** 31)


def _add32(a, b):
    """``a + b`` in int32 (wrapping), for integers of any width (taken modulo 2**32)."""
    return _wrap(int(a) + int(b))


def _mul32(a, b):
    """``a * b`` in int32 (wrapping), for integers of any width (taken modulo 2**32)."""
    return _wrap(int(a) * int(b))


def _signature(a, b, operation):
    """The typing and code of ``a <operation> b`` on LLVM i32 (operands cast to int32)."""
    if not (isinstance(a, types.Integer) and isinstance(b, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        x, y = (context.cast(builder, v, t, types.int32) for v, t in zip(args, signature.args))
        return getattr(builder, operation)(x, y)

    return types.int32(a, b), codegen


@intrinsic
def _add_i32(typingctx, a, b):
    return _signature(a, b, "add")


@intrinsic
def _mul_i32(typingctx, a, b):
    return _signature(a, b, "mul")


if numba.config.DISABLE_JIT:
    add32, mul32 = _add32, _mul32
else:
    add32, mul32 = _add_i32, _mul_i32
