"""int32 sums and products that stay 32 bits wide in compiled code.

Numba types ``int32 * int32`` (and ``+``, ``|``) as int64, the platform integer, so a
planner's offset arithmetic ran in 64-bit lanes: half the vector width, sign extensions
and ``vpmullq`` (a slow instruction) around every product, and twice the instructions per
point.  These intrinsics emit the 32-bit LLVM operation itself.  They wrap on overflow, so
callers use them only where the values fit: the vector kernels' offsets, which
:func:`gridsample._vector.fits_int32` guarantees.
"""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic

__all__ = ["add32", "mul32"]

def _signature(a, b, operation):
    """The typing and code of ``a <operation> b`` on LLVM i32 (operands cast to int32)."""
    if not (isinstance(a, types.Integer) and isinstance(b, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        x, y = (context.cast(builder, v, t, types.int32) for v, t in zip(args, signature.args))
        return getattr(builder, operation)(x, y)

    return types.int32(a, b), codegen


@intrinsic
def add32(typingctx, a, b):
    """``a + b`` in int32 (wrapping), for integers of any width (taken modulo 2**32)."""
    return _signature(a, b, "add")


@intrinsic
def mul32(typingctx, a, b):
    """``a * b`` in int32 (wrapping), for integers of any width (taken modulo 2**32)."""
    return _signature(a, b, "mul")
