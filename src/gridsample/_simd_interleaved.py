"""A point's taps summed over many contiguous channels with explicit x86 vectors.

The point-at-a-time sweeps over channel-last memory
(:func:`gridsample._vector.sweep_linear_2d_il` and its kin) sum, for every channel ``c`` of
a point, ``w_0 x[q_0 + c] + w_1 x[q_1 + c] + ...`` over the point's taps. Left to LLVM, the
loop over the channels is vectorized for whole vectors of ``LANES`` channels and the rest
runs one channel at a time (with 16 lanes, a 2-D cubic point of 8 channels: 16 taps x 8
scalar channels). :func:`sum_interleaved` emits the loop itself, ``LANES`` channels a step
with a lane mask for the last step: each step one masked load per tap (``llvm.masked.load``:
the lanes past the last channel are not read), the products and sums in the taps' order, and
one masked store. Each lane does the scalar loop's operations in the same order: the same
bits.

A tap outside (offset ``-1``) reads the channels' outside values ``azero`` (0, or the fill
of ``"constant"``) instead of ``X``, as :func:`gridsample._vector._tap_interleaved` does.
"""

from __future__ import annotations

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._simd import AVAILABLE, LANES, Lanes

__all__ = ["sum_interleaved", "interleaved_vectors_serve"]

_I1, _I32, _I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)


def _float32_vectors(*arrays) -> bool:
    """Whether the vectors serve: x86 with AVX2 or AVX-512, and every array float32, 1-D and
    contiguous (the flat views the sweeps pass)."""
    return AVAILABLE and all(isinstance(a, types.Array) and a.dtype == types.float32
                             and a.ndim == 1 and a.layout == "C" for a in arrays)


@intrinsic
def _serve(typingctx, xn, weights, out, azero):
    """Whether :func:`sum_interleaved` serves these arrays (a constant of the types)."""
    serves = _float32_vectors(xn, weights, out, azero)

    def codegen(context, builder, signature, args):
        return ir.Constant(_I1, int(serves))

    return types.boolean(xn, weights, out, azero), codegen


def _data(context, builder, ty, value):
    return context.make_array(ty)(context, builder, value).data


@intrinsic
def _sum_interleaved(typingctx, xn, taps, weights, T, C, out, oj, azero):
    """``out[oj + c] = sum_t weights[t] * (x[taps[t] + c] or azero[c])``, ``t`` in order,
    for ``c < C`` (see the module docstring); float32 only (else nothing is done)."""
    serves = _float32_vectors(xn, weights, out, azero)
    sig = types.void(xn, taps, weights, T, C, out, oj, azero)

    def codegen(context, builder, signature, args):
        if not serves:
            return context.get_dummy_value()
        xt, tt, wt, Tt, Ct, ot, ojt, zt = signature.args
        x_base = _data(context, builder, xt, args[0])
        t_base = _data(context, builder, tt, args[1])
        w_base = _data(context, builder, wt, args[2])
        o_base = _data(context, builder, ot, args[5])
        z_base = _data(context, builder, zt, args[7])
        count = context.cast(builder, args[3], Tt, types.intp)
        channels = context.cast(builder, args[4], Ct, types.intp)
        oj = context.cast(builder, args[6], ojt, types.intp)
        v = Lanes(builder)
        vec = v.f32
        load_fn = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(vec, [vec.as_pointer(), _I32, ir.VectorType(_I1, LANES), vec]),
            f"llvm.masked.load.v{LANES}f32.p0v{LANES}f32")
        store_fn = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(ir.VoidType(),
                            [vec, vec.as_pointer(), _I32, ir.VectorType(_I1, LANES)]),
            f"llvm.masked.store.v{LANES}f32.p0v{LANES}f32")
        iota = ir.Constant(ir.VectorType(_I64, LANES), list(range(LANES)))
        nothing = ir.Constant(vec, None)
        four = ir.Constant(_I32, 4)
        zero64 = ir.Constant(_I64, 0)

        def tap(t, c0, mask):
            """``weights[t]`` splat and the masked load of tap ``t``'s channels ``c0 ...``."""
            q = builder.load(builder.gep(t_base, [t]))
            inside = builder.icmp_signed(">=", q, ir.Constant(q.type, 0))
            at_x = builder.gep(x_base, [builder.add(builder.sext(q, _I64), c0)])
            at_zero = builder.gep(z_base, [c0])
            ptr = builder.select(inside, at_x, at_zero)
            value = builder.call(load_fn, [builder.bitcast(ptr, vec.as_pointer()), four, mask,
                                           nothing])
            w = builder.load(builder.gep(w_base, [t]))
            return builder.fmul(v.splat(w), value)

        with cgutils.for_range_slice(builder, zero64, channels, ir.Constant(_I64, LANES),
                                     _I64) as (c0, _):
            mask = builder.icmp_signed("<", builder.add(iota, v.splat(c0)), v.splat(channels))
            first = tap(zero64, c0, mask)
            acc = cgutils.alloca_once_value(builder, first)
            with cgutils.for_range_slice(builder, ir.Constant(_I64, 1), count,
                                         ir.Constant(_I64, 1), _I64) as (t, _):
                builder.store(builder.fadd(builder.load(acc), tap(t, c0, mask)), acc)
            dest = builder.gep(o_base, [builder.add(oj, c0)])
            builder.call(store_fn, [builder.load(acc), builder.bitcast(dest, vec.as_pointer()),
                                    four, mask])
        return context.get_dummy_value()

    return sig, codegen


def _nothing(*args):
    """Interpreted (``NUMBA_DISABLE_JIT=1``): the vectors serve nothing."""
    return False


if numba.config.DISABLE_JIT:
    sum_interleaved = interleaved_vectors_serve = _nothing
else:
    sum_interleaved = _sum_interleaved
    interleaved_vectors_serve = _serve
