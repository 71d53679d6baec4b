"""Explicit x86 vectors in compiled code: LLVM vector instructions emitted into a kernel.

The vector kernels (:mod:`gridsample._vector`) are scalar loops that LLVM vectorizes.  That
leaves LLVM to choose how a tap outside ``X`` is read, and it cannot express the one
instruction the x86 ISAs have for it, a *masked* gather (lanes whose mask is off are not
read and keep a given value): a gathered tap costs a clamp of its offset, the gather, a
select of the outside value and the mask's upkeep (docs/kernels.md, "Explicit vectors").
Kernels written with :class:`Lanes` emit the vector instructions themselves, into the
function being compiled, from the codegen of a Numba intrinsic
(:mod:`gridsample._simd_linear`): ``LANES`` points at a time, in ``<LANES x float>``,
``<LANES x i32>`` and ``<LANES x i1>`` (masks) values.

The operations are LLVM instructions without ``fast-math`` flags, so a kernel written with
them computes the bits its scalar twin computes when it does the same operations in the
same order.  Why emitted IR rather than a Numba vector type with one intrinsic per
operation: every such call is a statement Numba types, and operators are typed by trying
each template registered for them; a first call compiled ~0.5 s longer that way.

They exist where :data:`AVAILABLE`: compiled code for an x86-64 CPU with AVX2; elsewhere
(other CPUs, ``NUMBA_DISABLE_JIT=1``) the kernels built on them are not used.
"""

from __future__ import annotations

import platform

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils

from ._target import target_has_avx2, vector_width

__all__ = ["AVAILABLE", "LANES", "Lanes", "element_pointer"]

#: Whether the vector operations exist here: compiled code for an x86-64 CPU with AVX2.
AVAILABLE = (not numba.config.DISABLE_JIT
             and platform.machine().lower() in ("x86_64", "amd64") and target_has_avx2())
#: float32 lanes of a vector: 16 with 512-bit vectors, 8 with AVX2's.
LANES = 16 if vector_width() == 512 else 8

_I8, _I16, _I32 = ir.IntType(8), ir.IntType(16), ir.IntType(32)
_F32 = ir.FloatType()


def element_pointer(context, builder, array_type, array, indices):
    """A pointer to ``array[indices]``: ``indices`` are ``(value, Numba type)`` pairs (no
    bounds check; the vectors read and write from there on, so the last axis must be
    contiguous)."""
    array_struct = context.make_array(array_type)(context, builder, array)
    at = [context.cast(builder, v, t, types.intp) for v, t in indices]
    return cgutils.get_item_pointer(context, builder, array_type, array_struct, at)


class Lanes:
    """The vector operations of ``lanes`` float32 (or int32) lanes, emitted by ``builder``."""

    def __init__(self, builder, lanes: int = LANES):
        self.builder, self.lanes = builder, lanes
        self.f32, self.i32 = ir.VectorType(_F32, lanes), ir.VectorType(_I32, lanes)

    def _call(self, name: str, result, args):
        function = cgutils.get_or_insert_function(
            self.builder.module, ir.FunctionType(result, [a.type for a in args]), name)
        return self.builder.call(function, args)

    def interleave(self, sums: list) -> list:
        """The sums of ``C`` channels (``lanes`` points each) in channel-last order, point
        by point and channel within a point: ``C`` vectors, the ``k``-th holding elements
        ``k lanes … (k + 1) lanes - 1`` of ``p0c0, p0c1, …, p1c0, …``.  The sums are joined
        into one wide vector (pairwise shuffles; an undefined fourth for three), then each
        output vector picks its elements from it."""
        n, b = self.lanes, self.builder
        parts = list(sums)
        if len(parts) % 2:
            parts.append(ir.Constant(parts[0].type, ir.Undefined))
        while len(parts) > 1:
            width = 2 * parts[0].type.count
            parts = [b.shuffle_vector(parts[i], parts[i + 1],
                                      ir.Constant(ir.VectorType(_I32, width), list(range(width))))
                     for i in range(0, len(parts), 2)]
        wide = parts[0]
        C = len(sums)
        undefined = ir.Constant(wide.type, ir.Undefined)
        picks = [[(e % C) * n + e // C for e in range(k * n, (k + 1) * n)] for k in range(C)]
        return [b.shuffle_vector(wide, undefined, ir.Constant(ir.VectorType(_I32, n), pick))
                for pick in picks]

    def splat(self, scalar):
        """``lanes`` copies of a float32 or int32 scalar."""
        ty = ir.VectorType(scalar.type, self.lanes)
        one = self.builder.insert_element(ir.Constant(ty, ir.Undefined), scalar, _I32(0))
        zeros = ir.Constant(ir.VectorType(_I32, self.lanes), [0] * self.lanes)
        return self.builder.shuffle_vector(one, ir.Constant(ty, ir.Undefined), zeros)

    def _is_float(self, a) -> bool:
        return isinstance(a.type.element, ir.FloatType)

    def add(self, a, b):
        return (self.builder.fadd if self._is_float(a) else self.builder.add)(a, b)

    def sub(self, a, b):
        return (self.builder.fsub if self._is_float(a) else self.builder.sub)(a, b)

    def mul(self, a, b):
        return (self.builder.fmul if self._is_float(a) else self.builder.mul)(a, b)

    def less(self, a, b):
        """``a < b``: a mask (ordered: false for NaN; signed for int32)."""
        if self._is_float(a):
            return self.builder.fcmp_ordered("<", a, b)
        return self.builder.icmp_signed("<", a, b)

    def below(self, a, b):
        """``a < b`` on int32 lanes read as unsigned: a mask (``0 <= a < b`` for ``b >= 0``)."""
        return self.builder.icmp_unsigned("<", a, b)

    def both(self, a, b):
        return self.builder.and_(a, b)

    def either(self, a, b):
        return self.builder.or_(a, b)

    def is_nan(self, a):
        """Whether each float lane is NaN: a mask."""
        return self.builder.fcmp_unordered("uno", a, a)

    def rint(self, a):
        """Round to an integral value in the current rounding mode (half to even), as
        ``np.rint``."""
        return self._call(f"llvm.rint.v{self.lanes}f32", a.type, [a])

    def select(self, mask, a, b):
        return self.builder.select(mask, a, b)

    def floor(self, a):
        return self._call(f"llvm.floor.v{self.lanes}f32", a.type, [a])

    def truncate(self, a):
        """float32 to int32 rounding toward zero, with x86's rule for the rest: NaN and
        values outside int32's range give ``-2**31`` (``cvttps2dq``; LLVM's own ``fptosi``
        leaves them undefined)."""
        if self.lanes == 8:
            return self._call("llvm.x86.avx.cvtt.ps2dq.256", self.i32, [a])
        every = ir.Constant(_I16, -1)  # no mask; 4: the current rounding mode
        return self._call("llvm.x86.avx512.mask.cvttps2dq.512", self.i32,
                          [a, ir.Constant(self.i32, None), every, _I32(4)])

    def load(self, pointer, ty):
        """``lanes`` elements of type ``ty`` (a vector type) from ``pointer`` on."""
        return self.builder.load(self.builder.bitcast(pointer, ty.as_pointer()), align=4)

    def store(self, pointer, value):
        self.builder.store(value, self.builder.bitcast(pointer, value.type.as_pointer()),
                           align=4)

    def load_pairs(self, pointer):
        """The even and odd float32 elements of the ``2 lanes`` from ``pointer`` on (a grid's
        interleaved coordinates): one load, split in registers."""
        n = self.lanes
        wide = ir.VectorType(_F32, 2 * n)
        both = self.load(pointer, wide)
        undefined = ir.Constant(wide, ir.Undefined)
        lanes = ir.VectorType(_I32, n)
        even = self.builder.shuffle_vector(both, undefined,
                                           ir.Constant(lanes, list(range(0, 2 * n, 2))))
        odd = self.builder.shuffle_vector(both, undefined,
                                          ir.Constant(lanes, list(range(1, 2 * n, 2))))
        return even, odd

    def gather(self, base, q, mask, outside):
        """``base[q]`` (float32) in the lanes where ``mask`` holds, ``outside`` in the others,
        which are not read: AVX2's ``vgatherdps`` or AVX-512's."""
        base = self.builder.bitcast(base, _I8.as_pointer())
        if self.lanes == 8:  # AVX2: the mask is the sign bit of a float vector
            sign = self.builder.bitcast(self.builder.sext(mask, self.i32), self.f32)
            return self._call("llvm.x86.avx2.gather.d.ps.256", self.f32,
                              [outside, base, q, sign, _I8(4)])
        return self._call("llvm.x86.avx512.mask.gather.dps.512", self.f32,
                          [outside, base, q, mask, _I32(4)])
