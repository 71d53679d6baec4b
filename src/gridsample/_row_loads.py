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
moved outside, a padded tap -- are "misses": their row loads read element 0 of the plane
(in bounds: X's rows are at least as wide as a row of taps where these sweeps run), then
each of their taps is read on its own into its lane, by the gathering sweep's offsets and
inside test (a tap outside reads the channel's outside value), before the same products
and sums: they get the bits the gathering sweep gives them.  The misses are found from a
bit mask per group, a loop over its set bits (a test per point was if-converted by LLVM
into a masked gather of every point: 1.4x the gathering sweep alone; masked gathers of
the miss lanes cost random grids, whose groups mostly hold a miss, 1.1-1.45x).  A group's
points past the block's end are neither read nor stored.  (The misses were once summed
after the groups by the gathering sweep's per-point sum: that code cost a first call
~0.7 s of compiling.)

A miss with no tap inside (a point outside X, beyond the reach of its taps: half the points
of a warp that moves the image half out) is "void": every tap reads the outside value, so
its lanes of the row loads' tap vectors are replaced by that value at once, without the
miss loop (which cost such warps 2.3x the time of one that stays inside).

The plan table of a row-load sweep has :data:`ROW_LOAD_ROWS` int32 rows after its
kernel's own: one per row of taps, the flat offset of the row's first tap (0 for a point
that does not qualify), then, at the first point of each group, the group's masks (the
table's last row): its misses with a tap inside (bit ``p`` for point ``j0 + p``) and its
void points (bit ``LANES + p``).  Its rows are
:func:`table_width` wide: a whole number of groups, so that the last group's loads stay
in the table.
"""

from __future__ import annotations

import dataclasses
import platform
import sys

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._environ import getenv
from ._errors import GridSampleError
from ._options import MODE_CUBIC, MODE_LINEAR
from ._simd import Lanes
from ._target import vector_width, wide_gathers_beat_row_loads

__all__ = ["ROW_LOAD_ROWS", "ROW_TAPS", "LANES", "LITTLE_ENDIAN", "ROW_LOADS",
           "ROW_LOADS_VARIABLE", "row_loads", "table_width",
           "plan_rows_cubic_2d", "group_cubic_2d", "pair_cubic_2d",
           "plan_rows_linear_2d", "group_linear_2d", "pair_linear_2d",
           "plan_rows_linear_3d", "group_linear_3d", "pair_linear_3d",
           "sweep_linear_2d_cl_rows", "sweep_cubic_2d_cl_rows",
           "sweep_linear_3d_cl_rows", "CL_ROW_CHANNELS"]

#: The environment variable that forces a strategy (:func:`row_loads`), and what it may say.
ROW_LOADS_VARIABLE = "GRIDSAMPLE_ROW_LOADS"
ROW_LOADS = ("auto", "rows", "gather")

#: Points per group: float32 lanes of the vector width gridsample compiles for.
LANES = 16 if vector_width() == 512 else 8


#: Whether a group sum has a second copy, without the miss loops, for groups without
#: misses.  Measured on Zen 4, one thread, the same process (2-D and 3-D linear and 2-D
#: cubic on smooth warps, 15 interleaved rounds): with 8 lanes (AVX2 code) the copy took
#: 0.91-0.98 of the time of one copy with the loops (a loop's test and carried vectors per
#: row of taps weigh on 8 points); with 16 lanes 0.98-1.08, no gain (identical code read
#: 0.99-1.07 of itself in that A/B), so one copy: half the code to compile.
_MISS_FREE_COPY = LANES == 8


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
    #: Elements between neighbouring taps of a row, and channels read with each tap: 1 and 1,
    #: or X's channel count for channel-last X (``stride == channels``: a row's taps and
    #: their channels are one run of ``taps x channels`` elements).
    stride: int = 1
    channels: int = 1

    @property
    def taps(self) -> int:
        return len(self.rows[0][0])

    @property
    def mask_row(self) -> int:
        """The plan table's last row: the groups' miss masks, after the row starts."""
        return self.plan_rows + len(self.rows)


# 2-D cubic: x offsets and weights in rows 0-3, y in 4-7; y outer, x inner (_cubic_sum).
_CUBIC_2D = _Kernel(8, tuple(((0, 1, 2, 3), (4 + ky,)) for ky in range(4)))
# 2-D linear: the 4 taps' full offsets and weights, (y0 x0, y0 x1, y1 x0, y1 x1).
_LINEAR_2D = _Kernel(4, (((0, 1), ()), ((2, 3), ())))
# 3-D linear: x in rows 0-1, y in 2-3, z in 4-5; z outer, x inner, ((w_x w_y) w_z) (_sum_3d).
_LINEAR_3D = _Kernel(6, tuple(((0, 1), (2 + ky, 4 + kz)) for kz in range(2) for ky in range(2)))

# Channel-last X of a few channels (RGB: r0 g0 b0 r1 g1 b1): the kernel's own plan, each row
# of taps one run of taps x C elements, the channels summed apart and stored interleaved;
# 2-D linear and cubic and 3-D linear, 2 to 4 channels.  From 5 channels they are read a
# point at a time (_engine.INTERLEAVED_MIN_CHANNELS: linear from 4, cubic from 8; these runs
# take precedence at 4, where they measured 0.48-0.94x that sweep's time).
_CHANNEL_LAST = {key: {C: _Kernel(kernel.plan_rows, kernel.rows, stride=C, channels=C)
                       for C in (2, 3, 4)}
                 for key, kernel in (((2, MODE_LINEAR), _LINEAR_2D), ((2, MODE_CUBIC), _CUBIC_2D),
                                     ((3, MODE_LINEAR), _LINEAR_3D))}

_KERNELS = {(2, MODE_CUBIC): _CUBIC_2D, (2, MODE_LINEAR): _LINEAR_2D, (3, MODE_LINEAR): _LINEAR_3D}
#: int32 rows a row-load sweep adds to its kernel's plan table, by (rank, mode code).
ROW_LOAD_ROWS = {key: len(kernel.rows) + 1 for key, kernel in _KERNELS.items()}
#: Channel-last channel counts whose taps are read a run at a time, by (rank, mode code)
#: (:func:`sweep_linear_2d_cl_rows`, :func:`sweep_cubic_2d_cl_rows`,
#: :func:`sweep_linear_3d_cl_rows`).
CL_ROW_CHANNELS = {key: tuple(kernels) for key, kernels in _CHANNEL_LAST.items()}
#: Taps of a row, by (rank, mode code): X's rows must be at least this wide.
ROW_TAPS = {key: kernel.taps for key, kernel in _KERNELS.items()}

#: Whether the row loads exist here: on x86-64 (measured there only).
ROWS_EXIST = platform.machine().lower() in ("x86_64", "amd64")
#: Whether the group masks can be made here: a vector of booleans read as an integer puts
#: lane 0 in bit 0 on little-endian machines only (elsewhere the sweeps always gather).
LITTLE_ENDIAN = sys.byteorder == "little"


def row_loads(rank: int, mode: int) -> str:
    """How the vector sweep of ``(rank, mode)`` reads float32 taps: ``"rows"`` (this
    module; 2-D cubic and linear, 3-D linear, and their channel-last runs) or ``"gather"``
    (a gather per tap).

    ``GRIDSAMPLE_ROW_LOADS`` forces one (``rows``, ``gather``; read at each call, for
    tests and benchmarks) where the rows exist (:data:`ROWS_EXIST`).  ``auto`` (the
    default, also when unset or empty): rows for 2-D cubic (4 taps a load: measured faster
    with AVX-512 and with AVX2 code) and for linear (2 taps a load) with 256-bit code (AVX2:
    0.55-0.94x the gathering sweeps) and on AMD Zen 4 (0.70-0.91x), but gathers with
    Intel's AVX-512 (rows 1.08-1.28x there:
    :func:`gridsample._target.wide_gathers_beat_row_loads`).  Either gives the same bits
    (docs/kernels.md, "Row loads")."""
    raw = getenv(ROW_LOADS_VARIABLE, "")
    value = raw.strip().lower() or "auto"
    if value not in ROW_LOADS:
        raise GridSampleError(f"GRIDSAMPLE_ROW_LOADS={raw!r} is not allowed: use one of "
                              f"{', '.join(ROW_LOADS)}")
    if not ROWS_EXIST:
        return "gather"
    if value != "auto":
        return value
    if mode == MODE_LINEAR and LANES > 8 and wide_gathers_beat_row_loads():
        return "gather"
    return "rows"


def table_width(block: int) -> int:
    """Columns of a row-load sweep's plan table for blocks of ``block`` points: whole
    groups of :data:`LANES`."""
    return -(-block // LANES) * LANES



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

    def vector(self, ary, k, ty):
        """``ary[k, first : first + LANES]`` as a vector of ``ty``."""
        return self.load(self.row(ary, k), ty, LANES)

    def sums(self, kernel: _Kernel, planes, outs, zeros, count):
        """``outs[c][first : first + count]`` = the sums of plane ``planes[c]``, whose taps
        outside read ``zeros[c]`` (``count``, i64: the points left in the block; those past
        LANES belong to the next group): row starts, weights and their products formed once
        for every channel; the misses' taps read one by one (:meth:`_insert_misses`).  With
        8 lanes, a group without misses takes a copy of the code without the miss loops
        (:data:`_MISS_FREE_COPY`)."""
        b = self.builder
        misses = b.load(self.row(self.oa, kernel.mask_row))  # misses | void << LANES
        if not _MISS_FREE_COPY:
            self._sums(kernel, planes, outs, zeros, count, misses)
            return
        with b.if_else(b.icmp_unsigned("!=", misses, ir.Constant(self.i32, 0)),
                       likely=False) as (with_misses, without):
            with with_misses:
                self._sums(kernel, planes, outs, zeros, count, misses)
            with without:
                self._sums(kernel, planes, outs, zeros, count, None)

    def _sums(self, kernel: _Kernel, planes, outs, zeros, count, misses):
        """:meth:`sums`, the misses read where ``misses`` (the group's i32 word of masks:
        :meth:`plan`) is given."""
        b, lanes = self.builder, LANES
        if misses is not None:
            voids = b.lshr(misses, ir.Constant(self.i32, lanes))
            void = b.bitcast(b.trunc(voids, ir.IntType(lanes)),
                             ir.VectorType(ir.IntType(1), lanes))
            misses = b.and_(misses, ir.Constant(self.i32, (1 << lanes) - 1))
            outside = [Lanes(b, lanes).splat(zero) for zero in zeros]
        weights = {}

        def weight(k):
            if k not in weights:
                weights[k] = self.vector(self.wa, k, self.fl)
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
            if kernel.channels == 1:
                taps = [self.taps([self.load(b.gep(plane.data, [s]), self.fl, kernel.taps)
                                   for s in starts], kernel.taps) for plane in planes]
            else:
                taps = self._run_taps(kernel, planes[0], starts)
            if misses is not None:
                # A point with no tap inside reads the outside value at every tap, as the
                # gathering sweep does: its lanes of every tap vector replaced at once (a
                # branch around the selects for groups without such points measured no
                # faster).
                taps = [[b.select(void, value, tap) for tap in plane]
                        for plane, value in zip(taps, outside)]
                # Row by row: the vectors a miss loop carries stay few (one row's taps).
                taps = self._insert_misses((x_rows, parts), planes, zeros, misses, taps)
            for c, plane_taps in enumerate(taps):
                for w, tap in zip(products, plane_taps):
                    term = b.fmul(w, tap)
                    totals[c] = term if totals[c] is None else b.fadd(totals[c], term)
        if kernel.channels == 1:
            self._store(totals, outs, count)
        else:
            self._store_interleaved(totals, outs[0], count)

    def _run_taps(self, kernel: _Kernel, plane, starts):
        """Per channel, per tap of a row: the vectors of a channel-last row of taps, read as
        the 128-bit quads (or the 64-bit pairs, where the run is not whole quads) of each
        point's run of ``taps x channels`` elements (starting at ``starts`` in ``plane``, the
        first channel's), split into vectors of element ``w k + i`` of every run as
        :meth:`taps` splits a channel-first row; element ``t stride + c`` is tap ``t`` of
        channel ``c``."""
        b = self.builder
        run = kernel.taps * kernel.channels
        width = 4 if run % 4 == 0 else 2  # (128-bit loads where the run allows)
        elements = []
        for k in range(run // width):
            at = ir.Constant(self.i64, width * k)
            elements += self.taps([self.load(b.gep(plane.data, [b.add(s, at)]), self.fl,
                                             width) for s in starts], width)
        return [[elements[t * kernel.stride + c] for t in range(kernel.taps)]
                for c in range(kernel.channels)]

    def _store_interleaved(self, totals, out, count):
        """``out[C first : C (first + min(count, LANES))]`` = the ``C`` channels' ``totals``
        interleaved (channel-last points, ``C`` elements apart)."""
        b, channels = self.builder, len(totals)
        whole = b.icmp_signed(">=", count, ir.Constant(self.i64, LANES))
        at = b.gep(out.data, [b.mul(self.first, ir.Constant(self.i64, channels))])
        with b.if_else(whole, likely=True) as (group, tail):
            with group:
                for i, vector in enumerate(Lanes(b, LANES).interleave(totals)):
                    ptr = b.gep(at, [ir.Constant(self.i64, i * LANES)])
                    b.store(vector, b.bitcast(ptr, ir.PointerType(vector.type))).align = 4
            with tail:  # the block's last points: one store each
                with cgutils.for_range(b, count) as loop:
                    point = b.mul(loop.index, ir.Constant(self.i64, channels))
                    for c, total in enumerate(totals):
                        b.store(b.extract_element(total, loop.index),
                                b.gep(at, [b.add(point, ir.Constant(self.i64, c))]))

    def _insert_misses(self, row, planes, zeros, misses, taps):
        """``taps`` (per plane, per tap of the row of taps ``row`` = ``(x_rows, parts)``: a
        vector) with the lanes of the ``misses`` (an i32 mask) read one tap at a time: the
        gathering sweep's offsets and inside tests (every part of a tap's offset at least
        0; a tap outside reads the plane's ``zeros[c]``).  A loop over the mask's set bits,
        the vectors carried through it: a group without misses passes straight through."""
        b, i32 = self.builder, self.i32
        x_rows, parts = row
        flat = [t for plane in taps for t in plane]
        before = b.block
        head = b.append_basic_block("misses.head")
        body = b.append_basic_block("misses.body")
        done = b.append_basic_block("misses.done")
        b.branch(head)
        b.position_at_end(head)
        bits = b.phi(i32)
        bits.add_incoming(misses, before)
        carried = []
        for vector in flat:
            phi = b.phi(vector.type)
            phi.add_incoming(vector, before)
            carried.append(phi)
        b.cbranch(b.icmp_unsigned("!=", bits, ir.Constant(i32, 0)), body, done)
        b.position_at_end(body)
        cttz = b.module.declare_intrinsic("llvm.cttz", [i32],
                                          ir.FunctionType(i32, [i32, ir.IntType(1)]))
        lane = b.call(cttz, [bits, ir.Constant(ir.IntType(1), 1)])
        at = b.zext(lane, self.i64)

        def offset(k):  # off[k, first + lane]
            return b.load(b.gep(self.row(self.oa, k), [at]))

        zero32 = ir.Constant(i32, 0)
        inside, base = None, None
        for part in parts:
            o = offset(part)
            ok = b.icmp_signed(">=", o, zero32)
            inside = ok if inside is None else b.and_(inside, ok)
            base = o if base is None else b.add(base, o)
        reads = []
        for x in x_rows:
            ox = offset(x)
            ok = b.icmp_signed(">=", ox, zero32)
            ok = ok if inside is None else b.and_(ok, inside)
            q = ox if base is None else b.add(ox, base)
            # Element 0 read where the tap lies outside (always in bounds), then dropped.
            reads.append((ok, b.sext(b.select(ok, q, zero32), self.i64)))
        values = [b.select(ok, b.load(b.gep(plane.data, [q])), zero)
                  for plane, zero in zip(planes, zeros) for ok, q in reads]
        for phi, value in zip(carried, values):
            phi.add_incoming(b.insert_element(phi, value, lane), b.block)
        bits.add_incoming(b.and_(bits, b.sub(bits, ir.Constant(i32, 1))), b.block)
        b.branch(head)
        b.position_at_end(done)
        count = len(x_rows)
        return [carried[c * count:(c + 1) * count] for c in range(len(planes))]

    def _store(self, totals, outs, count):
        """``outs[c][first : first + min(count, LANES)] = totals[c]``."""
        b = self.builder
        whole = b.icmp_signed(">=", count, ir.Constant(self.i64, LANES))
        for total, out in zip(totals, outs):
            at = b.gep(out.data, [self.first])
            with b.if_else(whole, likely=True) as (group, tail):
                with group:
                    b.store(total, b.bitcast(at, ir.PointerType(total.type))).align = 4
                with tail:  # the block's last points: one store each
                    with cgutils.for_range(b, count) as loop:
                        b.store(b.extract_element(total, loop.index),
                                b.gep(at, [loop.index]))

    def plan(self, kernel: _Kernel, count):
        """The row starts of the group's points; returns its masks (i64, the int32 word the
        sweep stores): of the ``count`` (i64) left in the block, the points that do not
        qualify but have a tap inside (bit ``p``) and those with none (bit ``LANES + p``)."""
        b, lanes = self.builder, LANES
        vec = ir.VectorType(self.i32, lanes)
        rows = {}

        def off(k):
            if k not in rows:
                rows[k] = self.vector(self.oa, k, self.i32)
            return rows[k]

        def splat(value):
            return ir.Constant(vec, [value] * lanes)

        clean, starts, seen = None, [], None
        for x_rows, parts in kernel.rows:
            x0 = off(x_rows[0])
            ok = b.icmp_signed(">=", x0, splat(0))
            for t in range(1, len(x_rows)):  # neighbours, unpadded: x0 + t stride
                ok = b.and_(ok, b.icmp_signed("==", off(x_rows[t]),
                                              b.add(x0, splat(t * kernel.stride))))
            start = x0
            row_in = None  # every part of the row's offsets inside
            for part in parts:
                part_in = b.icmp_signed(">=", off(part), splat(0))
                row_in = part_in if row_in is None else b.and_(row_in, part_in)
                start = b.add(start, off(part))
            if row_in is not None:
                ok = b.and_(ok, row_in)
            clean = ok if clean is None else b.and_(clean, ok)
            starts.append(start)
            # Whether some tap of the row lies inside (the gathering sweep's test).
            for x in x_rows:
                tap_in = b.icmp_signed(">=", off(x), splat(0))
                tap_in = tap_in if row_in is None else b.and_(tap_in, row_in)
                seen = tap_in if seen is None else b.or_(seen, tap_in)
        # Lanes past the block's end hold stale plan entries: neither clean nor missed.
        left = b.select(b.icmp_signed("<", count, ir.Constant(self.i64, lanes)), count,
                        ir.Constant(self.i64, lanes))
        live = b.icmp_signed("<", ir.Constant(vec, list(range(lanes))),
                             Lanes(b, lanes).splat(b.trunc(left, self.i32)))
        clean = b.and_(clean, live)
        for r, start in enumerate(starts):
            ptr = b.bitcast(self.row(self.oa, kernel.plan_rows + r), ir.PointerType(vec))
            b.store(b.select(clean, start, splat(0)), ptr).align = 4
        ones = ir.Constant(ir.VectorType(ir.IntType(1), lanes), [1] * lanes)
        missed = b.and_(b.xor(clean, ones), live)
        void = b.and_(missed, b.xor(seen, ones))  # no tap inside
        misses = b.zext(b.bitcast(b.and_(missed, seen), ir.IntType(lanes)), self.i32)
        void = b.zext(b.bitcast(void, ir.IntType(lanes)), self.i32)
        # The table's int32 word, as a signed number (bit 31: lane 15's void bit).
        return b.sext(b.or_(misses, b.shl(void, ir.Constant(self.i32, lanes))), self.i64)


def _group_types(planes, outs, off, wts, j0, nb, zeros) -> bool:
    f32 = types.float32
    return (all(_flat(a, f32) for a in planes + outs) and _contiguous_2d(off, types.int32)
            and _contiguous_2d(wts, f32) and isinstance(j0, types.Integer)
            and isinstance(nb, types.Integer) and all(z == f32 for z in zeros))


def _arrays(context, builder, signature, args, indices):
    return [context.make_array(signature.args[i])(context, builder, args[i]) for i in indices]


def _first(context, builder, signature, args, i):
    return context.cast(builder, args[i], signature.args[i], types.int64)


def _left(context, builder, signature, args, first, i):
    """The points of the block left from ``first`` on: ``args[i] - first`` (i64)."""
    return builder.sub(_first(context, builder, signature, args, i), first)


def _intrinsics(kernel: _Kernel):
    """The compiled group sums (one channel, two) and group plan of ``kernel``."""

    @intrinsic
    def group(typingctx, xc, off, wts, j0, oc, nb, zero):
        if not _group_types((xc,), (oc,), off, wts, j0, nb, (zero,)):
            return None

        def codegen(context, builder, signature, args):
            xa, oa, wa, outa = _arrays(context, builder, signature, args, (0, 1, 2, 4))
            first = _first(context, builder, signature, args, 3)
            count = _left(context, builder, signature, args, first, 5)
            _Emitter(builder, oa, wa, first).sums(kernel, [xa], [outa], [args[6]], count)
            return context.get_dummy_value()

        return types.none(xc, off, wts, j0, oc, nb, zero), codegen

    @intrinsic
    def pair(typingctx, xa, xb, off, wts, j0, oa, ob, nb, za, zb):
        if not _group_types((xa, xb), (oa, ob), off, wts, j0, nb, (za, zb)):
            return None

        def codegen(context, builder, signature, args):
            a, bb, offa, wa, outa, outb = _arrays(context, builder, signature, args,
                                                  (0, 1, 2, 3, 5, 6))
            first = _first(context, builder, signature, args, 4)
            count = _left(context, builder, signature, args, first, 7)
            _Emitter(builder, offa, wa, first).sums(kernel, [a, bb], [outa, outb],
                                                    [args[8], args[9]], count)
            return context.get_dummy_value()

        return types.none(xa, xb, off, wts, j0, oa, ob, nb, za, zb), codegen

    @intrinsic
    def plan(typingctx, off, j0, nb):
        if not (_contiguous_2d(off, types.int32) and isinstance(j0, types.Integer)
                and isinstance(nb, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            (oa,) = _arrays(context, builder, signature, args, (0,))
            first = _first(context, builder, signature, args, 1)
            count = _left(context, builder, signature, args, first, 2)
            return _Emitter(builder, oa, None, first).plan(kernel, count)

        return types.int64(off, j0, nb), codegen

    return group, pair, plan


def _tap_offset(kernel, off, r, t, j) -> int:
    x_rows, parts = kernel.rows[r]
    return int(off[x_rows[t], j]) + sum(int(off[p, j]) for p in parts)


def _group_interpreted(kernel, xc, off, wts, j0, oc, nb, zero):
    """The group sum as plain Python (``NUMBA_DISABLE_JIT=1``): the same float32
    operations in the same order, a miss's taps read one by one (outside: ``zero``)."""
    word = int(off[kernel.mask_row, j0]) & 0xFFFFFFFF
    misses = (word | word >> LANES) & ((1 << LANES) - 1)  # a void point: a miss here
    for j in range(j0, min(j0 + LANES, nb)):
        miss = (misses >> (j - j0)) & 1
        acc = None
        for r, (x_rows, parts) in enumerate(kernel.rows):
            start = int(off[kernel.plan_rows + r, j])
            for t, x in enumerate(x_rows):
                w = wts[x, j]
                for part in parts:
                    w = w * wts[part, j]
                if not miss:
                    tap = xc[start + t * kernel.stride]
                elif min(int(off[k, j]) for k in (x, *parts)) >= 0:
                    tap = xc[_tap_offset(kernel, off, r, t, j)]
                else:
                    tap = zero
                term = w * tap
                acc = term if acc is None else acc + term
        oc[j] = acc


def _plan_interpreted(kernel, off, j0, nb):
    """The group plan as plain Python (``NUMBA_DISABLE_JIT=1``)."""
    misses = 0
    for p in range(LANES):
        j = j0 + p
        clean = j < nb
        for x_rows, parts in kernel.rows:
            if not clean:
                break
            x0 = int(off[x_rows[0], j])
            clean &= x0 >= 0 and all(int(off[x, j]) == x0 + t * kernel.stride
                                     for t, x in enumerate(x_rows))
            clean &= all(int(off[part, j]) >= 0 for part in parts)
        for r in range(len(kernel.rows)):
            off[kernel.plan_rows + r, j] = _tap_offset(kernel, off, r, 0, j) if clean else 0
        if clean or j >= nb:
            continue
        seen = any(int(off[x, j]) >= 0 and all(int(off[part, j]) >= 0 for part in parts)
                   for x_rows, parts in kernel.rows for x in x_rows)
        misses |= 1 << p if seen else 1 << (p + LANES)
    return misses - (1 << 32) if misses >= 1 << 31 else misses  # the table's int32


def _functions(kernel: _Kernel):
    """``(plan, group, pair)`` of ``kernel``: the intrinsics, or with ``NUMBA_DISABLE_JIT=1``
    plain Python twins (chosen once, as :mod:`gridsample._int32` does: an overload
    dispatching between them cost each entry's first call ~0.3 s of inlining)."""
    if not numba.config.DISABLE_JIT:
        group, pair, plan = _intrinsics(kernel)
        return plan, group, pair

    def plan(off, j0, nb):
        """Row starts of points ``j0 … j0 + LANES - 1`` of a planned block of ``nb`` points
        (module docstring); returns its masks (misses with a tap inside, bit ``p`` for
        ``j0 + p``; void points, bit ``LANES + p``)."""
        return _plan_interpreted(kernel, off, j0, nb)

    def group(xc, off, wts, j0, oc, nb, zero):
        """``oc[j0 : min(j0 + LANES, nb)]``: those points' sums, read a row at a time, a
        miss's taps one by one (taps outside read ``zero``)."""
        _group_interpreted(kernel, xc, off, wts, j0, oc, nb, zero)

    def pair(xa, xb, off, wts, j0, oa, ob, nb, za, zb):
        """:func:`group` of two channels, the row starts, weights and products shared."""
        _group_interpreted(kernel, xa, off, wts, j0, oa, nb, za)
        _group_interpreted(kernel, xb, off, wts, j0, ob, nb, zb)

    return plan, group, pair


class _Plane:
    """A channel of channel-last X for :class:`_Emitter`: its first element's pointer."""

    def __init__(self, data):
        self.data = data


def _cl_serves(xn, off, wts, on, azero) -> bool:
    f32 = types.float32
    return (all(_flat(a, f32) for a in (xn, on, azero)) and _contiguous_2d(off, types.int32)
            and _contiguous_2d(wts, f32))


def _cl_block(b, kernel: _Kernel, xa, oa, wa, outa, za, nb) -> None:
    """A channel-last row sweep's work for ``kernel`` (its channel count): every group's
    row starts and masks, then every group's sums."""
    i64 = ir.IntType(64)

    def const(value):
        return ir.Constant(i64, value)

    groups = b.sdiv(b.add(nb, const(LANES - 1)), const(LANES))
    with cgutils.for_range(b, groups) as loop:
        first = b.mul(loop.index, const(LANES))
        emitter = _Emitter(b, oa, None, first)
        masks = emitter.plan(kernel, b.sub(nb, first))
        b.store(b.trunc(masks, ir.IntType(32)), emitter.row(oa, kernel.mask_row))
    planes = [_Plane(b.gep(xa.data, [const(c)])) for c in range(kernel.channels)]
    zeros = [b.load(b.gep(za.data, [const(c)])) for c in range(kernel.channels)]
    with cgutils.for_range(b, groups) as loop:
        first = b.mul(loop.index, const(LANES))
        _Emitter(b, oa, wa, first).sums(kernel, planes, [outa], zeros, b.sub(nb, first))


def _cl_rows_intrinsic(kernels: dict):
    """The compiled channel-last row sweep of ``kernels`` (one per channel count)."""
    rows = next(iter(kernels.values())).mask_row + 1  # (the same table for every count)

    @intrinsic
    def sweep(typingctx, xn, xs_c, C, off, wts, nb, on, os_c, os_p, azero):
        serves = _cl_serves(xn, off, wts, on, azero)

        def codegen(context, builder, signature, args):
            if not serves:
                return context.get_constant(types.intp, 0)
            b, i64 = builder, ir.IntType(64)
            xa, oa, wa, outa, za = _arrays(context, b, signature, args, (0, 3, 4, 6, 9))

            def arg(i):
                return context.cast(b, args[i], signature.args[i], types.int64)

            def equal(value, constant):
                return b.icmp_signed("==", value, ir.Constant(i64, constant))

            nb, channels = arg(5), arg(2)
            layout = b.and_(equal(b.extract_value(oa.shape, 0), rows),
                            b.and_(equal(arg(1), 1), equal(arg(7), 1)))  # xs_c, os_c
            done = cgutils.alloca_once_value(b, ir.Constant(i64, 0))
            for count, kernel in kernels.items():
                wanted = b.and_(layout, b.and_(equal(channels, count), equal(arg(8), count)))
                with b.if_then(wanted):
                    _cl_block(b, kernel, xa, oa, wa, outa, za, nb)
                    b.store(nb, done)
            return b.load(done)

        return types.intp(xn, xs_c, C, off, wts, nb, on, os_c, os_p, azero), codegen

    return sweep


def _cl_rows_interpreted(kernels, xn, xs_c, C, off, wts, nb, on, os_c, os_p, azero):
    """A channel-last row sweep as plain Python (``NUMBA_DISABLE_JIT=1``): the group plans,
    then each channel's group sums (the same float32 operations in the same order) into its
    interleaved places."""
    kernel = kernels.get(C)
    if (kernel is None or off.shape[0] != kernel.mask_row + 1
            or (xs_c, os_c, os_p) != (1, 1, C)):
        return 0
    for j0 in range(0, nb, LANES):
        off[kernel.mask_row, j0] = _plan_interpreted(kernel, off, j0, nb)
    sums = np.empty(nb, np.float32)
    for c in range(C):
        for j0 in range(0, nb, LANES):
            _group_interpreted(kernel, xn[c:], off, wts, j0, sums, nb, azero[c])
        on[c:C * nb:C] = sums
    return nb


def _cl_rows_function(key):
    """The channel-last row sweep of ``key`` (rank, mode code): the intrinsic, or its
    interpreted twin."""
    kernels = _CHANNEL_LAST[key]
    if not numba.config.DISABLE_JIT:
        return _cl_rows_intrinsic(kernels)

    def sweep(xn, xs_c, C, off, wts, nb, on, os_c, os_p, azero):
        return _cl_rows_interpreted(kernels, xn, xs_c, C, off, wts, nb, on, os_c, os_p, azero)

    return sweep


#: sweep_linear_2d_cl_rows(xn, xs_c, C, off, wts, nb, on, os_c, os_p, azero),
#: sweep_cubic_2d_cl_rows(...), sweep_linear_3d_cl_rows(...): a planned 2-D linear (2-D
#: cubic, 3-D linear) block of float32 channel-last X
#: with ``C`` in :data:`CL_ROW_CHANNELS` channels (``xs_c == 1`` apart in X, output points
#: ``os_p == C`` apart, channels ``os_c == 1``) whose plan table has the row loads' rows: its
#: groups' row starts and masks, then each group's channels from the runs of ``taps x C``
#: elements its rows of taps are, stored interleaved; returns ``nb``, or 0 (and does
#: nothing) where any of that does not hold (other element types compile it as 0).
sweep_linear_2d_cl_rows = _cl_rows_function((2, MODE_LINEAR))
sweep_cubic_2d_cl_rows = _cl_rows_function((2, MODE_CUBIC))
sweep_linear_3d_cl_rows = _cl_rows_function((3, MODE_LINEAR))

plan_rows_cubic_2d, group_cubic_2d, pair_cubic_2d = _functions(_CUBIC_2D)
plan_rows_linear_2d, group_linear_2d, pair_linear_2d = _functions(_LINEAR_2D)
plan_rows_linear_3d, group_linear_3d, pair_linear_3d = _functions(_LINEAR_3D)
