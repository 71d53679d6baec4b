"""A point's taps over many contiguous channels with explicit x86 vectors.

The backward's point-at-a-time sweeps over channel-last memory
(:mod:`gridsample._grad_interleaved`) read, for every channel ``c`` of a point, ``x[q_0 + c],
x[q_1 + c], ...`` at the point's taps. Left to LLVM, a loop
over the channels is vectorized for whole vectors of ``LANES`` channels and the rest runs one
channel at a time (with 16 lanes, a 2-D cubic point of 8 channels: 16 taps x 8 scalar
channels). The intrinsics here emit the loop themselves, ``LANES`` channels a step with a
lane mask for the last step: each step one masked load per tap (``llvm.masked.load``: the
lanes past the last channel are not read), the products and sums in the taps' order. Each
lane does the scalar loop's operations in the same order: the same bits.

* :func:`slope_sums_interleaved` (the grid gradient): ``R`` sums at once from the same
  loads, ``s_{a,c} = 0 + D_{a,0} x[q_0 + c] + D_{a,1} x[q_1 + c] + ...``, stored;
  :func:`channel_slope_sums_interleaved` the same weighted by dL/dy and added over the
  channels in order in registers, ``out[a] = 0 + G[0] s_{a,0} + ...``;
* :func:`scatter_interleaved` (the input gradient): ``gx[q_t + c] += g[c] w_t`` for each
  tap ``t`` inside in turn.

A tap outside (offset ``-1``) reads the channels' outside values ``azero`` (0, or the fill
of ``"constant"``) instead of ``X``, as :func:`gridsample._vector._tap_interleaved` does; the
scatter skips it.

The forward's sweeps (:func:`gridsample._vector.sweep_linear_2d_il` and its kin) keep the loop
LLVM vectorizes: with these masked vectors they took 1.1-1.7x its time (Zen 5, 2-D linear, 2-32
channels; docs/kernels.md, "Channel-last: the point loop's hidden costs").
"""

from __future__ import annotations

from contextlib import contextmanager

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._simd import AVAILABLE, LANES, Lanes

__all__ = ["slope_sums_interleaved", "channel_slope_sums_interleaved",
           "scatter_interleaved", "interleaved_vectors_serve"]

_I1, _I32, _I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
_F32 = ir.FloatType()


def _float32_vectors(*arrays) -> bool:
    """Whether the vectors serve: x86 with AVX2 or AVX-512, and every array float32, 1-D and
    contiguous (the flat views the sweeps pass)."""
    return AVAILABLE and all(isinstance(a, types.Array) and a.dtype == types.float32
                             and a.ndim == 1 and a.layout == "C" for a in arrays)


@intrinsic
def _serve(typingctx, xn, weights, out, azero):
    """Whether the intrinsics serve these arrays (a constant of the types)."""
    serves = _float32_vectors(xn, weights, out, azero)

    def codegen(context, builder, signature, args):
        return ir.Constant(_I1, int(serves))

    return types.boolean(xn, weights, out, azero), codegen


class _Steps:
    """The code shared by the intrinsics: argument access, masked loads and stores, and the
    loop over the channels ``LANES`` at a time."""

    def __init__(self, context, builder, signature, args):
        self.context, self.builder = context, builder
        self.types, self.args = signature.args, args
        self.v = Lanes(builder)
        vec = self.vec = self.v.f32
        mask = ir.VectorType(_I1, LANES)
        self._load = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vec, [vec.as_pointer(), _I32, mask, vec]),
            f"llvm.masked.load.v{LANES}f32.p0v{LANES}f32")
        self._store = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [vec, vec.as_pointer(), _I32, mask]),
            f"llvm.masked.store.v{LANES}f32.p0v{LANES}f32")
        self._iota = ir.Constant(ir.VectorType(_I64, LANES), list(range(LANES)))

    def data(self, i):
        """The data pointer of array argument ``i``."""
        ty = self.types[i]
        return self.context.make_array(ty)(self.context, self.builder, self.args[i]).data

    def integer(self, i):
        """Integer argument ``i`` as an ``i64``."""
        return self.context.cast(self.builder, self.args[i], self.types[i], types.intp)

    def load(self, ptr, mask):
        """The lanes of ``mask`` from ``ptr`` on (the others are not read: undefined)."""
        return self.builder.call(self._load, [self.builder.bitcast(ptr, self.vec.as_pointer()),
                                              ir.Constant(_I32, 4), mask,
                                              ir.Constant(self.vec, None)])

    def store(self, value, ptr, mask):
        self.builder.call(self._store, [value, self.builder.bitcast(ptr, self.vec.as_pointer()),
                                        ir.Constant(_I32, 4), mask])

    @contextmanager
    def steps(self, first, stop):
        """``with`` the loop over channels ``first .. stop - 1``, ``LANES`` a step: yields
        the step's first channel and its lane mask (the lanes below ``stop``)."""
        builder, v = self.builder, self.v
        with cgutils.for_range_slice(builder, first, stop, ir.Constant(_I64, LANES),
                                     _I64) as (c0, _):
            yield c0, builder.icmp_signed("<", builder.add(self._iota, v.splat(c0)),
                                          v.splat(stop))

    def tap_loop(self, start, count):
        """The loop over taps ``start .. count - 1`` (yields ``t``, an ``i64``)."""
        return cgutils.for_range_slice(self.builder, ir.Constant(_I64, start), count,
                                       ir.Constant(_I64, 1), _I64)

    def tap_values(self, x_base, t_base, z_base, t, c0, mask):
        """The masked load of tap ``t``'s channels ``c0 ...``: from ``x`` at the tap's offset,
        or from the outside values ``azero`` where the offset is negative."""
        builder = self.builder
        q = builder.load(builder.gep(t_base, [t]))
        inside = builder.icmp_signed(">=", q, ir.Constant(q.type, 0))
        at_x = builder.gep(x_base, [builder.add(builder.sext(q, _I64), c0)])
        ptr = builder.select(inside, at_x, builder.gep(z_base, [c0]))
        return self.load(ptr, mask)

    def scalar(self, base, index):
        """``base[index]`` splat to every lane."""
        return self.v.splat(self.builder.load(self.builder.gep(base, [index])))


def _slope_vectors(s, args, step):
    """Emit one channel step's ``R`` slope sums ``0 + sum_t slopes[a T + t] * x[...]`` from
    one masked load per tap (the ``R`` vectors, in registers); ``args`` are the argument
    indices of ``(xn, taps, slopes, T, azero)``."""
    builder = s.builder
    x_base, t_base, d_base, z_base = (s.data(i) for i in (args[0], args[1], args[2], args[4]))
    count = s.integer(args[3])
    c0, mask, sums = step
    accs = [cgutils.alloca_once_value(builder, ir.Constant(s.vec, [0.0] * LANES))
            for _ in range(sums)]
    with s.tap_loop(0, count) as (t, _):
        value = s.tap_values(x_base, t_base, z_base, t, c0, mask)
        for a, acc in enumerate(accs):
            d = s.scalar(d_base, builder.add(builder.mul(count, ir.Constant(_I64, a)), t))
            builder.store(builder.fadd(builder.load(acc), builder.fmul(d, value)), acc)
    return [builder.load(acc) for acc in accs]


def _sums_count(R):
    """``R``'s value if it is a constant from 1 to 3, else None (the intrinsic does not
    type)."""
    if isinstance(R, types.IntegerLiteral) and 1 <= R.literal_value <= 3:
        return R.literal_value
    return None


@intrinsic
def _slope_sums_interleaved(typingctx, xn, taps, slopes, T, R, C, out, azero):
    """``out[a C + c] = s_{a,c} = 0 + sum_t slopes[a T + t] * (x[taps[t] + c] or
    azero[c])``, ``t`` in order, for ``a < R`` (a constant: 1 to 3) and ``c < C``; float32
    only."""
    sums = _sums_count(R)
    if sums is None:
        return None
    serves = _float32_vectors(xn, slopes, out, azero)
    sig = types.void(xn, taps, slopes, T, R, C, out, azero)

    def codegen(context, builder, signature, args):
        if not serves:
            return context.get_dummy_value()
        s = _Steps(context, builder, signature, args)
        o_base, channels = s.data(6), s.integer(5)
        with s.steps(ir.Constant(_I64, 0), channels) as (c0, mask):
            vectors = _slope_vectors(s, (0, 1, 2, 3, 7), (c0, mask, sums))
            for a, vector in enumerate(vectors):
                at = builder.add(builder.mul(channels, ir.Constant(_I64, a)), c0)
                s.store(vector, builder.gep(o_base, [at]), mask)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _channel_slope_sums_interleaved(typingctx, xn, taps, slopes, T, R, C, g, gj, out, azero):
    """``out[a] = 0 + sum_c g[gj + c] s_{a,c}``, the slope sums ``s`` of
    :func:`slope_sums_interleaved` weighted by dL/dy and added over the channels in order,
    each step's ``s`` taken from the registers lane by lane; float32 only."""
    sums = _sums_count(R)
    if sums is None:
        return None
    serves = _float32_vectors(xn, slopes, g, out, azero)
    sig = types.void(xn, taps, slopes, T, R, C, g, gj, out, azero)

    def codegen(context, builder, signature, args):
        if not serves:
            return context.get_dummy_value()
        s = _Steps(context, builder, signature, args)
        g_base, o_base = s.data(6), s.data(8)
        channels, gj = s.integer(5), s.integer(7)
        totals = [cgutils.alloca_once_value(builder, ir.Constant(_F32, 0.0))
                  for _ in range(sums)]
        with s.steps(ir.Constant(_I64, 0), channels) as (c0, mask):
            vectors = _slope_vectors(s, (0, 1, 2, 3, 9), (c0, mask, sums))
            for lane in range(LANES):
                c = builder.add(c0, ir.Constant(_I64, lane))
                with builder.if_then(builder.icmp_signed("<", c, channels)):
                    gv = builder.load(builder.gep(g_base, [builder.add(gj, c)]))
                    for vector, total in zip(vectors, totals):
                        term = builder.fmul(gv, builder.extract_element(vector,
                                                                        ir.Constant(_I32, lane)))
                        builder.store(builder.fadd(builder.load(total), term), total)
        for a, total in enumerate(totals):
            builder.store(builder.load(total), builder.gep(o_base, [ir.Constant(_I64, a)]))
        return context.get_dummy_value()

    return sig, codegen


#: The widths of the scatter's steps past the last whole vector, widest first: unmasked
#: loads and stores, so that the next point's loads of the same elements are forwarded from
#: these stores (a masked store is not forwarded, measured: a load waiting for it made 8
#: channels 5x slower per channel than 16 on Zen 4).
_TAIL_WIDTHS = tuple(w for w in (8, 4, 2, 1) if w < LANES)


@intrinsic
def _scatter_interleaved(typingctx, gx, taps, weights, T, g, gj, c0, c1):
    """``gx[taps[t] + c] += g[gj + c] * weights[t]`` for each tap ``t`` in order whose offset
    is not negative, for ``c0 <= c < c1``; float32 only.  Whole vectors of ``LANES``
    channels, then narrower unmasked steps (``_TAIL_WIDTHS``)."""
    serves = _float32_vectors(gx, weights, g)
    sig = types.void(gx, taps, weights, T, g, gj, c0, c1)

    def codegen(context, builder, signature, args):
        if not serves:
            return context.get_dummy_value()
        s = _Steps(context, builder, signature, args)
        x_base, t_base, w_base, g_base = (s.data(i) for i in (0, 1, 2, 4))
        count, gj, first, stop = (s.integer(i) for i in (3, 5, 6, 7))

        def step(c, width):
            """Channels ``c .. c + width - 1`` of every tap."""
            ty = _F32 if width == 1 else ir.VectorType(_F32, width)

            def at(base, index):
                return builder.bitcast(builder.gep(base, [index]), ty.as_pointer())

            def splat(scalar):
                if width == 1:
                    return scalar
                lanes = ir.VectorType(_I32, width)
                one = builder.insert_element(ir.Constant(ty, ir.Undefined), scalar,
                                             ir.Constant(_I32, 0))
                return builder.shuffle_vector(one, ir.Constant(ty, ir.Undefined),
                                              ir.Constant(lanes, [0] * width))

            gv = builder.load(at(g_base, builder.add(gj, c)), align=4)
            with s.tap_loop(0, count) as (t, _):
                q = builder.load(builder.gep(t_base, [t]))
                with builder.if_then(builder.icmp_signed(">=", q, ir.Constant(q.type, 0))):
                    ptr = at(x_base, builder.add(builder.sext(q, _I64), c))
                    term = builder.fmul(gv, splat(builder.load(builder.gep(w_base, [t]))))
                    builder.store(builder.fadd(builder.load(ptr, align=4), term), ptr, align=4)

        lanes = ir.Constant(_I64, LANES)
        whole = builder.sub(stop, builder.srem(builder.sub(stop, first), lanes))
        with cgutils.for_range_slice(builder, first, whole, lanes, _I64) as (c, _):
            step(c, LANES)
        at_c = cgutils.alloca_once_value(builder, whole)
        for width in _TAIL_WIDTHS:
            c = builder.load(at_c)
            fits = builder.icmp_signed(">=", builder.sub(stop, c), ir.Constant(_I64, width))
            with builder.if_then(fits):
                step(c, width)
                builder.store(builder.add(c, ir.Constant(_I64, width)), at_c)
        return context.get_dummy_value()

    return sig, codegen


def _nothing(*args):
    """Interpreted (``NUMBA_DISABLE_JIT=1``): the vectors serve nothing."""
    return False


if numba.config.DISABLE_JIT:
    slope_sums_interleaved = scatter_interleaved = _nothing
    channel_slope_sums_interleaved = _nothing
    interleaved_vectors_serve = _nothing
else:
    slope_sums_interleaved = _slope_sums_interleaved
    channel_slope_sums_interleaved = _channel_slope_sums_interleaved
    scatter_interleaved = _scatter_interleaved
    interleaved_vectors_serve = _serve
