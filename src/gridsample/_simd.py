"""Explicit x86 vectors in compiled code: a Numba type for an LLVM vector and its operations.

The vector kernels (:mod:`gridsample._vector`) are scalar loops that LLVM vectorizes.  That
leaves LLVM to choose how a tap outside ``X`` is read, and it cannot express the one
instruction the x86 ISAs have for it, a *masked* gather (lanes whose mask is off are not
read and keep a given value): a gathered tap costs a clamp of its offset, the gather, a
select of the outside value and the mask's upkeep (docs/kernels.md, "Explicit vectors").
Here a loop over groups of :data:`LANES` points is written with vectors:

``Vector(dtype, lanes)``
    an LLVM ``<lanes x dtype>`` value (``boolean``: ``<lanes x i1>``, a mask); ``+ - *``
    and the comparisons act lane by lane (``!=`` is true for NaN, like a float's), ``& |``
    combine masks.
``splat(v, lanes)``, ``load_pairs(a, i, lanes)``, ``store_vector(a, i, v)``
    a constant vector, the even and odd elements of ``a[i : i + 2 lanes]`` (a grid's
    interleaved coordinates), a store of ``lanes`` elements at ``a[i]``;
``load_row(t, k, i, lanes)``, ``store_row(t, k, i, v)``
    the same at ``t[k, i]`` of a C-contiguous 2-D table (a plan's rows).
``select(m, a, b)``, ``floor(v)``, ``truncate(v)``, ``gather(a, start, q, m, outside)``
    a blend; a round down; float32 to int32 with x86's defined result for NaN and huge
    values; ``a[start + q]`` where ``m`` holds, ``outside`` elsewhere, with AVX2's or
    AVX-512's masked gather (float32).

The operations are LLVM instructions without ``fast-math`` flags, so a kernel written
with them computes the bits its scalar twin computes when it does the same operations
in the same order.  They exist where :data:`AVAILABLE`: compiled code for an x86 CPU
with AVX2; elsewhere (other CPUs, ``NUMBA_DISABLE_JIT=1``) the kernels built on them are
not used.
"""

from __future__ import annotations

import operator
import platform

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, overload, register_model

from ._target import target_cpu_name, target_features, target_has_avx512, vector_width

__all__ = ["AVAILABLE", "LANES", "Vector", "splat", "load_pairs", "store_vector", "load_row",
           "store_row", "select",
           "floor", "truncate", "gather", "has_avx2"]

#: LLVM CPU names (prefixes) whose own features include AVX2.
_AVX2_CPUS = ("haswell", "broadwell", "skylake", "cascadelake", "cooperlake", "cannonlake",
              "icelake", "tigerlake", "rocketlake", "alderlake", "raptorlake", "meteorlake",
              "arrowlake", "lunarlake", "pantherlake", "gracemont", "sapphirerapids",
              "emeraldrapids", "graniterapids", "diamondrapids", "sierraforest",
              "clearwaterforest", "grandridge", "znver", "bdver4", "x86-64-v3", "x86-64-v4")


def has_avx2(features: str, cpu_name: str) -> bool:
    """Whether code for ``cpu_name`` with ``features`` may use AVX2 (the rules of
    :func:`gridsample._target._has_avx512`: the named CPU's own features, changed by
    ``+f``/``-f``)."""
    flags = {f.strip() for f in features.split(",") if f.strip()}
    if "-avx2" in flags:
        return False
    return "+avx2" in flags or cpu_name.startswith(_AVX2_CPUS)


#: Whether the vector operations exist here: compiled code for an x86-64 CPU with AVX2.
AVAILABLE = (not numba.config.DISABLE_JIT
             and platform.machine().lower() in ("x86_64", "amd64")
             and (target_has_avx512() or has_avx2(target_features(), target_cpu_name())))
#: float32 lanes of a vector: 16 with 512-bit vectors, 8 with AVX2's.
LANES = 16 if vector_width() == 512 else 8


class Vector(types.Type):
    """``lanes`` values of ``dtype`` in one LLVM vector (``boolean``: a mask)."""

    def __init__(self, dtype, lanes: int):
        self.dtype, self.lanes = dtype, lanes
        super().__init__(name=f"Vector({dtype} x {lanes})")


@register_model(Vector)
class _VectorModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        element = (ir.IntType(1) if fe_type.dtype == types.boolean
                   else dmm.lookup(fe_type.dtype).get_value_type())
        super().__init__(dmm, fe_type, ir.VectorType(element, fe_type.lanes))


def _i32(value: int) -> ir.Constant:
    return ir.Constant(ir.IntType(32), value)


def _lanes_constant(values) -> ir.Constant:
    return ir.Constant(ir.VectorType(ir.IntType(32), len(values)), list(values))


def _element_pointer(context, builder, signature, args, count):
    """A pointer to ``args[0][args[1 : 1 + count]]`` (no bounds check; the vectors read and
    write from there on, so the last axis must be contiguous)."""
    array_type = signature.args[0]
    array_struct = context.make_array(array_type)(context, builder, args[0])
    indices = [context.cast(builder, v, t, types.intp)
               for v, t in zip(args[1:1 + count], signature.args[1:1 + count])]
    return cgutils.get_item_pointer(context, builder, array_type, array_struct, indices)


def _call(builder, name: str, result, args):
    function = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(result, [a.type for a in args]), name)
    return builder.call(function, args)


@intrinsic(prefer_literal=True)
def splat(typingctx, value, lanes):
    """``lanes`` copies of ``value`` (``lanes`` a literal int)."""
    if not isinstance(lanes, types.IntegerLiteral) or not isinstance(value, types.Number):
        return None
    vector = Vector(value, lanes.literal_value)

    def codegen(context, builder, signature, args):
        ty = context.get_value_type(vector)
        one = builder.insert_element(ir.Constant(ty, ir.Undefined), args[0], _i32(0))
        return builder.shuffle_vector(one, ir.Constant(ty, ir.Undefined),
                                      _lanes_constant([0] * vector.lanes))

    return vector(value, lanes), codegen


@intrinsic(prefer_literal=True)
def load_pairs(typingctx, array, start, lanes):
    """``(array[start::2], array[start + 1::2])``, ``lanes`` of each: one load of
    ``2 lanes`` elements, split in registers."""
    if not (isinstance(lanes, types.IntegerLiteral) and isinstance(array, types.Array)):
        return None
    count = lanes.literal_value
    vector = Vector(array.dtype, count)
    result = types.UniTuple(vector, 2)

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature, args, 1)
        element = context.get_value_type(array.dtype)
        wide = ir.VectorType(element, 2 * count)
        both = builder.load(builder.bitcast(pointer, wide.as_pointer()),
                            align=array.dtype.bitwidth // 8)
        undefined = ir.Constant(wide, ir.Undefined)
        even = builder.shuffle_vector(both, undefined, _lanes_constant(range(0, 2 * count, 2)))
        odd = builder.shuffle_vector(both, undefined, _lanes_constant(range(1, 2 * count, 2)))
        return context.make_tuple(builder, result, [even, odd])

    return result(array, start, lanes), codegen


@intrinsic
def store_vector(typingctx, array, start, value):
    """``array[start : start + lanes] = value`` (1-D ``array``)."""
    if not (isinstance(value, Vector) and isinstance(array, types.Array) and array.ndim == 1
            and value.dtype == array.dtype):
        return None

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature, args, 1)
        builder.store(args[2], builder.bitcast(pointer, args[2].type.as_pointer()),
                      align=array.dtype.bitwidth // 8)

    return types.void(array, start, value), codegen


@intrinsic
def store_row(typingctx, table, row, start, value):
    """``table[row, start : start + lanes] = value`` (a 2-D table, rows contiguous)."""
    if not (isinstance(value, Vector) and isinstance(table, types.Array) and table.ndim == 2
            and table.layout == "C" and value.dtype == table.dtype):
        return None

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature, args, 2)
        builder.store(args[3], builder.bitcast(pointer, args[3].type.as_pointer()),
                      align=table.dtype.bitwidth // 8)

    return types.void(table, row, start, value), codegen


@intrinsic(prefer_literal=True)
def load_row(typingctx, table, row, start, lanes):
    """``table[row, start : start + lanes]`` (a 2-D table, rows contiguous)."""
    if not (isinstance(lanes, types.IntegerLiteral) and isinstance(table, types.Array)
            and table.ndim == 2 and table.layout == "C"):
        return None
    vector = Vector(table.dtype, lanes.literal_value)

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature, args, 2)
        ty = context.get_value_type(vector)
        return builder.load(builder.bitcast(pointer, ty.as_pointer()),
                            align=table.dtype.bitwidth // 8)

    return vector(table, row, start, lanes), codegen


def _lane_operation(float_op, int_op, compare=None):
    """An intrinsic for ``a <op> b`` on two vectors of one type (a comparison gives a mask:
    ordered for floats, but ``!=``, true for NaN as Python's)."""

    @intrinsic
    def operation(typingctx, a, b):
        if not (isinstance(a, Vector) and a == b):
            return None
        is_float = isinstance(a.dtype, types.Float)
        result = Vector(types.boolean, a.lanes) if compare else a

        def codegen(context, builder, signature, args):
            if compare is None:
                return getattr(builder, float_op if is_float else int_op)(*args)
            if not is_float:
                return builder.icmp_signed(compare, *args)
            if compare == "!=":
                return builder.fcmp_unordered(compare, *args)
            return builder.fcmp_ordered(compare, *args)

        return result(a, b), codegen

    return operation


_OPERATIONS = {
    operator.add: _lane_operation("fadd", "add"),
    operator.sub: _lane_operation("fsub", "sub"),
    operator.mul: _lane_operation("fmul", "mul"),
    operator.and_: _lane_operation("and_", "and_"),
    operator.or_: _lane_operation("or_", "or_"),
    **{op: _lane_operation(None, None, symbol) for op, symbol in (
        (operator.lt, "<"), (operator.le, "<="), (operator.gt, ">"), (operator.ge, ">="),
        (operator.eq, "=="), (operator.ne, "!="))},
}


def _overload_operator(op, implementation):
    @overload(op)
    def _vectors(a, b):
        if isinstance(a, Vector) and isinstance(b, Vector):
            return lambda a, b: implementation(a, b)


for _op, _implementation in _OPERATIONS.items():
    _overload_operator(_op, _implementation)


@intrinsic
def select(typingctx, mask, a, b):
    """``a`` where ``mask`` holds, else ``b``, lane by lane."""
    if not (isinstance(mask, Vector) and mask.dtype == types.boolean and a == b
            and isinstance(a, Vector) and a.lanes == mask.lanes):
        return None

    def codegen(context, builder, signature, args):
        return builder.select(*args)

    return a(mask, a, b), codegen


@intrinsic
def floor(typingctx, a):
    """``floor`` of each lane (LLVM's ``llvm.floor``: ``roundps``)."""
    if not (isinstance(a, Vector) and isinstance(a.dtype, types.Float)):
        return None

    def codegen(context, builder, signature, args):
        return _call(builder, f"llvm.floor.v{a.lanes}f{a.dtype.bitwidth}", args[0].type, args)

    return a(a), codegen


@intrinsic
def truncate(typingctx, a):
    """Each float32 lane converted to int32, rounding toward zero, with x86's rule for the
    rest: NaN and values outside int32's range give ``-2**31`` (``cvttps2dq``; LLVM's own
    conversion leaves them undefined)."""
    if not (isinstance(a, Vector) and a.dtype == types.float32 and a.lanes in (8, 16)):
        return None
    result = Vector(types.int32, a.lanes)

    def codegen(context, builder, signature, args):
        ty = context.get_value_type(result)
        if a.lanes == 8:
            return _call(builder, "llvm.x86.avx.cvtt.ps2dq.256", ty, args)
        every = ir.Constant(ir.IntType(16), -1)  # no mask; 4: the current rounding mode
        return _call(builder, "llvm.x86.avx512.mask.cvttps2dq.512", ty,
                     [args[0], ir.Constant(ty, None), every, _i32(4)])

    return result(a), codegen


@intrinsic
def gather(typingctx, array, start, q, mask, outside):
    """``array[start + q]`` in the lanes where ``mask`` holds, ``outside`` in the others,
    which are not read (float32 ``array``, int32 ``q``, 8 or 16 lanes): AVX2's
    ``vgatherdps`` or AVX-512's."""
    if not (isinstance(array, types.Array) and array.dtype == types.float32
            and isinstance(q, Vector) and q.dtype == types.int32 and q.lanes in (8, 16)
            and isinstance(mask, Vector) and mask.lanes == q.lanes
            and outside == Vector(types.float32, q.lanes)):
        return None

    def codegen(context, builder, signature, args):
        _, _, offsets, lanes_on, fill = args
        base = builder.bitcast(
            _element_pointer(context, builder, signature, args, 1),
            ir.IntType(8).as_pointer())
        if q.lanes == 8:  # AVX2: the mask is the sign bit of a float vector
            sign = builder.bitcast(builder.sext(lanes_on, offsets.type), fill.type)
            return _call(builder, "llvm.x86.avx2.gather.d.ps.256", fill.type,
                         [fill, base, offsets, sign, ir.Constant(ir.IntType(8), 4)])
        return _call(builder, "llvm.x86.avx512.mask.gather.dps.512", fill.type,
                     [fill, base, offsets, lanes_on, _i32(4)])

    return outside(array, start, q, mask, outside), codegen
