"""Vector sweeps that read a point's taps a row at a time: one load per row, not a gather
per tap.

A 2-D cubic point reads 4 rows of 4 neighbouring elements of X, a 2-D linear point 2 rows
of 2, a 3-D linear point 4 rows of 2.  The vector sweeps (:mod:`gridsample._vector`)
compute a group of ``L`` points per vector (``L`` = 16 float32 lanes at 512 bits, 8 at
256) and gather each tap: a gather of ``L`` elements per tap, every element a load.  Where
a point's taps of a row are contiguous elements of X, one load (128 bits for 4 taps, 64
for 2) reads them all; here the ``L`` row loads of a group are assembled into vectors and
rearranged in registers so that vector ``t`` holds tap ``t`` of the ``L`` points, in point
order -- the vectors the gathers would have made: for 4 taps the 4x4 transpose within each
128-bit lane (``unpcklps``/``unpckhps``, ``unpcklpd``/``unpckhpd``), for 2 the even and
odd elements of the concatenated loads.  The weights, their products and the sums are the
gathering sweep's operations in its order (no ``fastmath``), so the results are the same
bits (docs/kernels.md, "Row loads", has what was measured).

A point qualifies when, on every row, its taps are contiguous unpadded elements (x stride
1) and every part of their offsets is inside.  The others -- near an edge, NaN coordinates
moved outside, a padded tap -- are summed again afterwards, one by one, by the gathering
sweep's per-point sum, which gives them the bits it always did; their group's loads read
element 0 of the plane meanwhile (in bounds: X's rows are at least as wide as a row of taps
where these sweeps run).  They are found from a bit mask per group, not by testing every
point: a loop over the points with a test was if-converted by LLVM into a masked gathering
sweep of every point (measured: 1.4x the gathering sweep alone).

The plan table of a row-load sweep has :data:`ROW_LOAD_ROWS` int32 rows after its
kernel's own: one per row of taps, the flat offset of the row's first tap (0 for a point
that does not qualify), then, at the first point of each group, the mask of the group's
points that do not qualify (bit ``p`` for point ``j0 + p``; the table's last row).
"""

from __future__ import annotations

import dataclasses
import platform
import sys

import numba
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._environ import getenv
from ._errors import GridSampleError
from ._options import MODE_CUBIC, MODE_LINEAR
from ._target import vector_width, wide_gathers_beat_row_loads

__all__ = ["ROW_LOAD_ROWS", "ROW_TAPS", "LANES", "LITTLE_ENDIAN", "ROW_LOADS",
           "ROW_LOADS_VARIABLE", "row_loads", "lowest_bit",
           "plan_rows_cubic_2d", "group_cubic_2d", "pair_cubic_2d",
           "plan_rows_linear_2d", "group_linear_2d", "pair_linear_2d",
           "plan_rows_linear_3d", "group_linear_3d", "pair_linear_3d"]

#: The environment variable that forces a strategy (:func:`row_loads`), and what it may say.
ROW_LOADS_VARIABLE = "GRIDSAMPLE_ROW_LOADS"
ROW_LOADS = ("auto", "rows", "gather")

#: Points per group: float32 lanes of the vector width gridsample compiles for.
LANES = 16 if vector_width() == 512 else 8


@dataclasses.dataclass(frozen=True)
class _Kernel:
    """A vector plan read a row of taps at a time.

    ``rows[r] = (x_rows, parts)``: tap ``t`` of row ``r`` has the offset
    ``off[x_rows[t]] + sum(off[parts])`` and the weight ``wts[x_rows[t]]`` times each
    ``wts[parts]`` in turn (the gathering sweep's products and order), rows in the
    gathering sweep's order.  ``plan_rows``: rows of the kernel's own plan.
    """

    plan_rows: int
    rows: tuple

    @property
    def taps(self) -> int:
        return len(self.rows[0][0])


# 2-D cubic: x offsets and weights in rows 0-3, y in 4-7; y outer, x inner (_cubic_sum).
_CUBIC_2D = _Kernel(8, tuple(((0, 1, 2, 3), (4 + ky,)) for ky in range(4)))
# 2-D linear: the 4 taps' full offsets and weights, (y0 x0, y0 x1, y1 x0, y1 x1).
_LINEAR_2D = _Kernel(4, (((0, 1), ()), ((2, 3), ())))
# 3-D linear: x in rows 0-1, y in 2-3, z in 4-5; z outer, x inner, ((w_x w_y) w_z) (_sum_3d).
_LINEAR_3D = _Kernel(6, tuple(((0, 1), (2 + ky, 4 + kz)) for kz in range(2) for ky in range(2)))

_KERNELS = {(2, MODE_CUBIC): _CUBIC_2D, (2, MODE_LINEAR): _LINEAR_2D, (3, MODE_LINEAR): _LINEAR_3D}
#: int32 rows a row-load sweep adds to its kernel's plan table, by (rank, mode code).
ROW_LOAD_ROWS = {key: len(kernel.rows) + 1 for key, kernel in _KERNELS.items()}
#: Taps of a row, by (rank, mode code): X's rows must be at least this wide.
ROW_TAPS = {key: kernel.taps for key, kernel in _KERNELS.items()}

_X86_64 = platform.machine().lower() in ("x86_64", "amd64")
#: Whether the group masks can be made here: a vector of booleans read as an integer puts
#: lane 0 in bit 0 on little-endian machines only (elsewhere the sweeps always gather).
LITTLE_ENDIAN = sys.byteorder == "little"


def row_loads(rank: int, mode: int) -> str:
    """How the vector sweep of ``(rank, mode)`` reads float32 taps: ``"rows"`` (this
    module; 2-D cubic and linear, 3-D linear) or ``"gather"`` (a gather per tap).

    ``GRIDSAMPLE_ROW_LOADS`` forces one (``rows``, ``gather``; read at each call, for
    tests and benchmarks).  ``auto`` (the default, also when unset or empty): on x86-64,
    rows for 2-D cubic (4 taps a load: measured faster with AVX-512 and with AVX2 code) and
    for linear (2 taps a load) with 256-bit code (AVX2: 0.55-0.94x the gathering sweeps) and
    on AMD Zen 4 (0.70-0.91x), but gathers with Intel's AVX-512 (rows 1.08-1.28x there:
    :func:`gridsample._target.wide_gathers_beat_row_loads`); elsewhere gathers (not
    measured).  Either gives the same bits (docs/kernels.md, "Row loads").
    """
    raw = getenv(ROW_LOADS_VARIABLE, "")
    value = raw.strip().lower() or "auto"
    if value not in ROW_LOADS:
        raise GridSampleError(f"GRIDSAMPLE_ROW_LOADS={raw!r} is not allowed: use one of "
                              f"{', '.join(ROW_LOADS)}")
    if value != "auto":
        return value
    if not _X86_64 or (mode == MODE_LINEAR and LANES > 8 and wide_gathers_beat_row_loads()):
        return "gather"
    return "rows"



def _flat(ty, dtype) -> bool:
    # The sweeps' flat views (layout "A" once sliced) are unit-stride by construction.
    return isinstance(ty, types.Array) and ty.ndim == 1 and ty.dtype == dtype


def _contiguous_2d(ty, dtype) -> bool:
    return (isinstance(ty, types.Array) and ty.ndim == 2 and ty.layout == "C"
            and ty.dtype == dtype)


class _Emitter:
    """LLVM IR for a group of :data:`LANES` points of a plan table (``oa``, ``wa``: the
    plan's offsets and weights as array structs; ``first``: the group's first point)."""

    def __init__(self, builder, oa, wa, first):
        self.builder, self.oa, self.wa, self.first = builder, oa, wa, first
        self.i32, self.i64, self.fl = ir.IntType(32), ir.IntType(64), ir.FloatType()

    def row(self, ary, k):
        """Pointer to ``ary[k, first]`` (a C-contiguous 2-D table)."""
        b = self.builder
        length = b.extract_value(ary.shape, 1)
        index = b.add(b.mul(ir.Constant(self.i64, k), length), self.first)
        return b.gep(ary.data, [index])

    def load(self, ptr, ty, count):
        value = self.builder.load(self.builder.bitcast(ptr, ir.PointerType(ir.VectorType(ty,
                                                                                      count))))
        value.align = 4
        return value

    def shuffle(self, a, b, mask):
        mask_type = ir.VectorType(self.i32, len(mask))
        return self.builder.shuffle_vector(a, b, ir.Constant(mask_type, mask))

    def concat(self, parts):
        while len(parts) > 1:
            parts = [self.shuffle(parts[i], parts[i + 1], list(range(2 * parts[i].type.count)))
                     for i in range(0, len(parts), 2)]
        return parts[0]

    def taps(self, chunks, width):
        """Vectors of tap ``t`` of every point from each point's ``width`` contiguous taps."""
        lanes = len(chunks)
        if width == 2:  # the even and the odd elements of all the loads in a row
            joined = self.concat(chunks)
            return [self.shuffle(joined, joined, [2 * p + t for p in range(lanes)])
                    for t in range(2)]
        # Vector k holds, in 128-bit lane g, the 4 taps of point 4 g + k; the in-lane
        # transpose then leaves tap t of points 0 ... lanes - 1, in order, in vector t.
        z = [self.concat([chunks[4 * g + k] for g in range(lanes // 4)]) for k in range(4)]
        groups = range(lanes // 4)
        lo_ps = [i for g in groups for i in (4 * g, lanes + 4 * g, 4 * g + 1, lanes + 4 * g + 1)]
        hi_ps = [i + 2 for i in lo_ps]
        lo_pd = [i for g in groups for i in (4 * g, 4 * g + 1, lanes + 4 * g, lanes + 4 * g + 1)]
        hi_pd = [i + 2 for i in lo_pd]
        t0, t1 = self.shuffle(z[0], z[1], lo_ps), self.shuffle(z[2], z[3], lo_ps)
        t2, t3 = self.shuffle(z[0], z[1], hi_ps), self.shuffle(z[2], z[3], hi_ps)
        return [self.shuffle(t0, t1, lo_pd), self.shuffle(t0, t1, hi_pd),
                self.shuffle(t2, t3, lo_pd), self.shuffle(t2, t3, hi_pd)]

    def sums(self, kernel: _Kernel, planes, outs):
        """``outs[c][first : first + LANES]`` = the sums of plane ``planes[c]``: row starts,
        weights and their products formed once for every channel."""
        b, lanes = self.builder, LANES
        weights = {}

        def weight(k):
            if k not in weights:
                weights[k] = self.load(self.row(self.wa, k), self.fl, lanes)
            return weights[k]

        totals = [None] * len(planes)
        for r, (x_rows, parts) in enumerate(kernel.rows):
            starts_row = self.row(self.oa, kernel.plan_rows + r)
            starts = [b.sext(b.load(b.gep(starts_row, [ir.Constant(self.i64, p)])), self.i64)
                      for p in range(lanes)]
            products = []
            for x in x_rows:
                w = weight(x)
                for part in parts:
                    w = b.fmul(w, weight(part))
                products.append(w)
            for c, plane in enumerate(planes):
                chunks = [self.load(b.gep(plane.data, [s]), self.fl, kernel.taps) for s in starts]
                for w, tap in zip(products, self.taps(chunks, kernel.taps)):
                    term = b.fmul(w, tap)
                    totals[c] = term if totals[c] is None else b.fadd(totals[c], term)
        for total, out in zip(totals, outs):
            ptr = b.bitcast(b.gep(out.data, [self.first]),
                            ir.PointerType(ir.VectorType(self.fl, lanes)))
            b.store(total, ptr).align = 4

    def plan(self, kernel: _Kernel):
        """The row starts of the group's points; returns the mask of those that do not
        qualify (i64)."""
        b, lanes = self.builder, LANES
        vec = ir.VectorType(self.i32, lanes)
        rows = {}

        def off(k):
            if k not in rows:
                ptr = b.bitcast(self.row(self.oa, k), ir.PointerType(vec))
                rows[k] = b.load(ptr)
                rows[k].align = 4
            return rows[k]

        def splat(value):
            return ir.Constant(vec, [value] * lanes)

        clean, starts = None, []
        for x_rows, parts in kernel.rows:
            x0 = off(x_rows[0])
            ok = b.icmp_signed(">=", x0, splat(0))
            for t in range(1, len(x_rows)):  # contiguous, unpadded: x0 + t
                ok = b.and_(ok, b.icmp_signed("==", off(x_rows[t]), b.add(x0, splat(t))))
            start = x0
            for part in parts:
                ok = b.and_(ok, b.icmp_signed(">=", off(part), splat(0)))
                start = b.add(start, off(part))
            clean = ok if clean is None else b.and_(clean, ok)
            starts.append(start)
        for r, start in enumerate(starts):
            ptr = b.bitcast(self.row(self.oa, kernel.plan_rows + r), ir.PointerType(vec))
            b.store(b.select(clean, start, splat(0)), ptr).align = 4
        ones = ir.Constant(ir.VectorType(ir.IntType(1), lanes), [1] * lanes)
        misses = b.bitcast(b.xor(clean, ones), ir.IntType(lanes))
        return b.zext(misses, self.i64)


def _group_types(planes, outs, off, wts, j0) -> bool:
    f32 = types.float32
    return (all(_flat(a, f32) for a in planes + outs) and _contiguous_2d(off, types.int32)
            and _contiguous_2d(wts, f32) and isinstance(j0, types.Integer))


def _arrays(context, builder, signature, args, indices):
    return [context.make_array(signature.args[i])(context, builder, args[i]) for i in indices]


def _first(context, builder, signature, args, i):
    return context.cast(builder, args[i], signature.args[i], types.int64)


def _intrinsics(kernel: _Kernel):
    """The compiled group sums (one channel, two) and group plan of ``kernel``."""

    @intrinsic
    def group(typingctx, xc, off, wts, j0, oc):
        if not _group_types((xc,), (oc,), off, wts, j0):
            return None

        def codegen(context, builder, signature, args):
            xa, oa, wa, outa = _arrays(context, builder, signature, args, (0, 1, 2, 4))
            first = _first(context, builder, signature, args, 3)
            _Emitter(builder, oa, wa, first).sums(kernel, [xa], [outa])
            return context.get_dummy_value()

        return types.none(xc, off, wts, j0, oc), codegen

    @intrinsic
    def pair(typingctx, xa, xb, off, wts, j0, oa, ob):
        if not _group_types((xa, xb), (oa, ob), off, wts, j0):
            return None

        def codegen(context, builder, signature, args):
            a, bb, offa, wa, outa, outb = _arrays(context, builder, signature, args,
                                                  (0, 1, 2, 3, 5, 6))
            first = _first(context, builder, signature, args, 4)
            _Emitter(builder, offa, wa, first).sums(kernel, [a, bb], [outa, outb])
            return context.get_dummy_value()

        return types.none(xa, xb, off, wts, j0, oa, ob), codegen

    @intrinsic
    def plan(typingctx, off, j0):
        if not (_contiguous_2d(off, types.int32) and isinstance(j0, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            (oa,) = _arrays(context, builder, signature, args, (0,))
            first = _first(context, builder, signature, args, 1)
            return _Emitter(builder, oa, None, first).plan(kernel)

        return types.int64(off, j0), codegen

    return group, pair, plan


def _tap_offset(kernel, off, r, t, j) -> int:
    x_rows, parts = kernel.rows[r]
    return int(off[x_rows[t], j]) + sum(int(off[p, j]) for p in parts)


def _group_interpreted(kernel, xc, off, wts, j0, oc):
    """The group sum as plain Python (``NUMBA_DISABLE_JIT=1``): the same float32
    operations in the same order."""
    for j in range(j0, j0 + LANES):
        acc = None
        for r, (x_rows, parts) in enumerate(kernel.rows):
            start = int(off[kernel.plan_rows + r, j])
            for t, x in enumerate(x_rows):
                w = wts[x, j]
                for part in parts:
                    w = w * wts[part, j]
                term = w * xc[start + t]
                acc = term if acc is None else acc + term
        oc[j] = acc


def _plan_interpreted(kernel, off, j0):
    """The group plan as plain Python (``NUMBA_DISABLE_JIT=1``)."""
    misses = 0
    for p in range(LANES):
        j = j0 + p
        clean = True
        for x_rows, parts in kernel.rows:
            x0 = int(off[x_rows[0], j])
            clean &= x0 >= 0 and all(int(off[x, j]) == x0 + t for t, x in enumerate(x_rows))
            clean &= all(int(off[part, j]) >= 0 for part in parts)
        for r in range(len(kernel.rows)):
            off[kernel.plan_rows + r, j] = _tap_offset(kernel, off, r, 0, j) if clean else 0
        misses |= 0 if clean else 1 << p
    return misses


def _functions(kernel: _Kernel):
    """``(plan, group, pair)`` of ``kernel``: the intrinsics, or with ``NUMBA_DISABLE_JIT=1``
    plain Python twins (chosen once, as :mod:`gridsample._int32` does: an overload
    dispatching between them cost each entry's first call ~0.3 s of inlining)."""
    if not numba.config.DISABLE_JIT:
        group, pair, plan = _intrinsics(kernel)
        return plan, group, pair

    def plan(off, j0):
        """Row starts of points ``j0 … j0 + LANES - 1`` of a planned block (module
        docstring); returns the mask of those that do not qualify (bit ``p``: ``j0 + p``)."""
        return _plan_interpreted(kernel, off, j0)

    def group(xc, off, wts, j0, oc):
        """``oc[j0 : j0 + LANES]``: those points' sums, read a row at a time (every point
        must qualify, or have row starts 0 and be summed again after)."""
        _group_interpreted(kernel, xc, off, wts, j0, oc)

    def pair(xa, xb, off, wts, j0, oa, ob):
        """:func:`group` of two channels, the row starts, weights and products shared."""
        _group_interpreted(kernel, xa, off, wts, j0, oa)
        _group_interpreted(kernel, xb, off, wts, j0, ob)

    return plan, group, pair


plan_rows_cubic_2d, group_cubic_2d, pair_cubic_2d = _functions(_CUBIC_2D)
plan_rows_linear_2d, group_linear_2d, pair_linear_2d = _functions(_LINEAR_2D)
plan_rows_linear_3d, group_linear_3d, pair_linear_3d = _functions(_LINEAR_3D)


@intrinsic
def _count_trailing_zeros(typingctx, bits):
    if not isinstance(bits, types.Integer):
        return None
    sig = types.int64(bits)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        value = context.cast(builder, args[0], signature.args[0], types.int64)
        cttz = builder.module.declare_intrinsic(
            "llvm.cttz", [i64], ir.FunctionType(i64, [i64, ir.IntType(1)]))
        return builder.call(cttz, [value, ir.Constant(ir.IntType(1), 0)])

    return sig, codegen


def _lowest_bit(bits):
    """The index of the lowest set bit of ``bits`` (> 0)."""
    return (int(bits) & -int(bits)).bit_length() - 1


#: The index of the lowest set bit of an integer > 0 (``llvm.cttz`` compiled).
lowest_bit = _lowest_bit if numba.config.DISABLE_JIT else _count_trailing_zeros
