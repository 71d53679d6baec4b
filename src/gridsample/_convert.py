"""Reading X's elements and storing results, for every element type.

Kernels never see float16, bfloat16 or bool arrays (Numba has no CPU
float16 arithmetic and does not know ml_dtypes' bfloat16).  The engine
hands them *storage views* instead, and the sweeps go through two helpers,
both chosen at compile time from the view's dtype and, for uint16 views, at
run time from ``kind``:

``load(x, kind, i)``
    ``x[i]`` as a number to multiply by a weight.  float16 bits are widened
    by the CPU's own conversion (LLVM ``fpext half``, F16C), bfloat16 bits by
    a 16-bit shift into a float32 pattern; both exact.  Every other type is
    read directly (integers promote to float64 when multiplied by a float64
    weight).

``store(out, i, acc, kind)``
    writes the accumulated ``acc`` to ``out[i]``, by ``kind``:

    ========  ===============  =========================================
    kind      out viewed as    stored value
    ========  ===============  =========================================
    NATIVE    its own dtype    ``acc`` (float32/float64/complex)
    INT       its own dtype    ``rint(acc)`` saturated to the range; NaN -> 0
    BOOL      uint8            1 if ``rint(acc) != 0`` else 0; NaN -> 0
    F16       uint16           IEEE binary16 bits (LLVM ``fptrunc``: nearest even)
    BF16      uint16           bfloat16 bits, round to nearest even
    ========  ===============  =========================================

The conversions are checked against NumPy / ml_dtypes casts over every
float32 class (normal, subnormal, overflow, ties, inf, NaN) in the tests.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from ._dtypes import KIND_BF16, KIND_BOOL, KIND_F16, KIND_INT, KIND_NATIVE
from ._jit import helper

__all__ = ["KIND_NATIVE", "KIND_INT", "KIND_BOOL", "KIND_F16", "KIND_BF16", "load", "store",
           "f16_bits_to_f32", "bf16_bits_to_f32", "f32_to_f16_bits_hw",
           "f32_to_bf16_bits", "saturate_kind"]



@intrinsic
def f16_bits_to_f32(typingctx, bits):
    """float32 value of IEEE binary16 bits (LLVM ``fpext half``: exact, F16C)."""
    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

    return types.float32(types.uint16), codegen


@intrinsic
def f32_to_f16_bits_hw(typingctx, value):
    """IEEE binary16 bits of a float32 (LLVM ``fptrunc``: round to nearest even)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return types.uint16(types.float32), codegen


@helper
def f32_to_bf16_bits(v):
    """bfloat16 bits of float32 ``v``: the top 16 bits, rounded half to even.

    Adding ``0x7FFF`` plus the lowest kept bit rounds the dropped 16 bits half
    to even; a carry may overflow to infinity, as it should.  NaN is kept
    quiet (a plain shift could turn a NaN with a low payload into infinity).
    """
    bits = np.float32(v).view(np.uint32)
    if (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000):
        return np.uint16((bits >> np.uint32(16)) | np.uint32(0x40))
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) \
        >> np.uint32(16)
    return np.uint16(rounded)


@helper
def bf16_bits_to_f32(bits):
    """float32 value of bfloat16 bits: they are the top half of its pattern."""
    return np.uint32(np.uint32(bits) << np.uint32(16)).view(np.float32)


def load(x, kind, i):
    """Element ``i`` of ``x`` as a number (see the module docstring).

    This Python body runs only with ``NUMBA_DISABLE_JIT=1``; compiled code
    uses the overload below.
    """
    v = x[i]
    if x.dtype == np.uint16 and kind == KIND_F16:
        return np.float32(np.array(v, np.uint16).view(np.float16))
    if x.dtype == np.uint16 and kind == KIND_BF16:
        return np.array(np.uint32(v) << np.uint32(16), np.uint32).view(np.float32)[()]
    return v


@overload(load, inline="always")
def _load_impl(x, kind, i):
    if x.dtype != types.uint16:
        return lambda x, kind, i: x[i]

    def impl(x, kind, i):  # uint16 bits of float16 / bfloat16, or plain uint16
        if kind == KIND_F16:
            return f16_bits_to_f32(x[i])
        if kind == KIND_BF16:
            return bf16_bits_to_f32(x[i])
        # plain uint16 integers: exact in float32 (< 2**24); the float64
        # weight promotes the product to float64 (docs/semantics.md §6.1)
        return np.float32(x[i])

    return impl


def saturate_kind(dtype: np.dtype):
    """``(low, high)`` of an integer dtype as Python ints."""
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def store(out, i, acc, kind):
    """Store ``acc`` into ``out[i]`` converted by ``kind`` (see the module docstring).

    This Python body runs only with ``NUMBA_DISABLE_JIT=1``; compiled code
    uses the overload below.
    """
    if out.dtype.kind not in "iu":
        out[i] = acc
    elif out.dtype == np.uint16 and kind == KIND_F16:
        out[i] = np.array(np.float32(acc), np.float32).astype(np.float16).view(np.uint16)
    elif out.dtype == np.uint16 and kind == KIND_BF16:
        out[i] = f32_to_bf16_bits(acc)
    else:
        with np.errstate(invalid="ignore"):
            v = np.rint(acc)
        low, high = saturate_kind(out.dtype)
        if kind == KIND_BOOL:
            out[i] = 1 if (v == v and v != 0) else 0
        elif not (v == v):
            out[i] = 0
        elif v >= float(high):
            out[i] = high
        elif v <= float(low):
            out[i] = low
        else:
            out[i] = int(v)


def _saturating_store(dtype):
    """A store for integer ``out``: round half to even, saturate, NaN -> 0.

    The bounds are compared in float64 before the cast (a cast of an
    out-of-range float is undefined): ``v >= float(high)`` catches every value
    at or above the top, also for 64-bit types whose ``high`` rounds up to
    ``2**63`` or ``2**64`` in float64.
    """
    low, high = saturate_kind(np.dtype(str(dtype)))
    flow, fhigh = float(low), float(high)
    unsigned = low == 0

    halves = dtype == types.uint16  # a uint16 view also carries float16/bfloat16 bits

    def impl(out, i, acc, kind):
        if halves and kind == KIND_F16:
            out[i] = f32_to_f16_bits_hw(np.float32(acc))
        elif halves and kind == KIND_BF16:
            out[i] = f32_to_bf16_bits(acc)
        else:
            v = np.rint(acc)
            if kind == KIND_BOOL:
                out[i] = 1 if (v == v and v != 0) else 0
            elif not (v == v):
                out[i] = 0
            elif v >= fhigh:
                out[i] = high
            elif v <= flow:
                out[i] = low
            elif unsigned:
                out[i] = np.uint64(v)
            else:
                out[i] = np.int64(v)

    return impl


def store_integer(out, i, acc, kind):
    """:func:`store` for integer views (rounding, saturation, half bits)."""
    store(out, i, acc, kind)


# Not inlined at the Numba IR level: Numba's SSA pass mis-tracks the branch
# variables of this body when it is inlined (NumbaIRAssumptionWarning); as a
# compiled call LLVM still inlines it.
@overload(store_integer)
def _store_integer_impl(out, i, acc, kind):
    return _saturating_store(out.dtype)


@overload(store, inline="always")
def _store_impl(out, i, acc, kind):
    if isinstance(out.dtype, types.Integer):
        def integer(out, i, acc, kind):
            store_integer(out, i, acc, kind)

        return integer

    def impl(out, i, acc, kind):
        out[i] = acc

    return impl
