"""The B-spline prefilter on a chunked array: coefficients chunk by chunk, with halos.

The prefilter (:mod:`gridsample._prefilter`) is a pair of recursions per pole
along each axis: every coefficient depends on the whole line, but on a sample
``m`` positions away only through ``z^m``.  A chunk extended by ``D =
decay_length(degree)`` samples of its neighbours on each side of a cut
(``|z|^D < 2**-60``) and filtered as a line of its own therefore gets the
whole array's coefficients on its own part to float64 round-off, whatever rule
starts the recursions at the cut ends (the one of the axis is used).  The ends
of the array get their axis's exact rule, as in memory:

* mirror, symmetric, reflection: the whole- or half-sample start at the true
  ends; cuts carry halos;
* constant (zeros) and border: the first and last chunks are pre-padded by
  ``SPLINE_PAD`` samples of the fill or the edge value (the coefficient array
  is larger by ``2 SPLINE_PAD`` there, as in memory);
* wrap: split along the axis, every chunk takes halos from the far side too
  (Dask's periodic overlap); whole, the periodic start.

An axis in one chunk is filtered exactly (no halo).  Chunks narrower than
``D`` along a split axis are merged with their neighbours first.
"""

from __future__ import annotations

import dask.array as da
import numpy as np

from .._prefilter import (
    BC_MIRROR,
    BC_WRAP,
    _spatial_axes,
    boundary,
    coefficient_dtype,
    decay_length,
    filter_window,
)
from ._block import kernel_threads

__all__ = ["chunked_coefficients"]


def _merge_narrow(chunks: tuple, depth: int) -> tuple:
    """``chunks`` with every chunk narrower than ``depth`` merged into a neighbour."""
    out = []
    for c in chunks:
        if out and out[-1] < depth:
            out[-1] += c
        else:
            out.append(c)
    if len(out) > 1 and out[-1] < depth:
        narrow = out.pop()
        out[-1] += narrow
    return tuple(out)


def chunked_coefficients(xd, plan, threads):
    """The B-spline coefficients of the Dask array ``xd`` for the plan's mode and paddings.

    Returns ``(c, pads)`` as :func:`gridsample._prefilter.coefficients` does:
    a lazy array in the coefficients' dtype, larger by ``2 P`` on each axis
    pre-padded by ``P`` (``pads``, grid order); chunked as ``xd`` (its first
    and last chunk along such an axis ``P`` larger).
    """
    r = plan.rank
    spatial = _spatial_axes(xd.ndim, plan.channel_last)  # grid order, as the in-memory filter
    rules = [boundary(p, plan.align_corners) for p in plan.axis_paddings]
    depth = decay_length(plan.spline)
    split = [len(xd.chunks[ax]) > 1 for ax in spatial]
    merged = {ax: _merge_narrow(xd.chunks[ax], depth) for ax, s in zip(spatial, split) if s}
    if any(merged[ax] != xd.chunks[ax] for ax in merged):
        xd = xd.rechunk(merged)
    split = [len(xd.chunks[ax]) > 1 for ax in spatial]
    depths = {ax: (depth if s else 0) for ax, s in zip(spatial, split)}
    kinds = {ax: ("periodic" if rule[0] == BC_WRAP else "none")
             for ax, rule, s in zip(spatial, rules, split) if s}
    ext = da.overlap.overlap(xd, depth={**{a: 0 for a in range(xd.ndim)}, **depths},
                             boundary={**{a: "none" for a in range(xd.ndim)}, **kinds})
    pads = tuple(rule[1] for rule in rules)
    chunks = list(xd.chunks)
    for ax, p in zip(spatial, pads):
        if p:
            sizes = list(chunks[ax])
            sizes[0] += p
            sizes[-1] += p
            chunks[ax] = tuple(sizes)
    fill = None if plan.fill is None else np.asarray(plan.fill)
    layout = dict(spatial=tuple(spatial), rules=tuple(rules), depths=depths,
                  periodic=tuple(ax for ax in kinds if kinds[ax] == "periodic"),
                  degree=plan.spline, channel_last=plan.channel_last, fill=fill,
                  channel_axis=r + 1 if plan.channel_last else 1, threads=threads)
    dtype = coefficient_dtype(xd.dtype)
    c = ext.map_blocks(_coefficient_block, chunks=tuple(chunks), dtype=dtype,
                       meta=np.empty((0,) * xd.ndim, dtype), **layout)
    return c, pads


def _coefficient_block(block, spatial, rules, depths, periodic, degree, channel_last, fill,
                       channel_axis, threads, block_info=None):
    """Map-blocks function: one chunk's coefficients from the chunk with its halos."""
    info = block_info[0]
    where, count = info["chunk-location"], info["num-chunks"]
    bcs, margins, holds, halos = [], [], [], []
    for ax, (bc, pad, kind) in zip(spatial, rules):
        d = depths[ax]
        cyclic = ax in periodic
        first, last = where[ax] == 0, where[ax] == count[ax] - 1
        halos.append((d if (cyclic or not first) else 0, d if (cyclic or not last) else 0))
        # The array's own ends take the axis's pre-padding; cut ends carry halos.
        margins.append((pad if first and not cyclic else 0, pad if last and not cyclic else 0))
        # A split periodic axis: its halos hold the far side; any rule starts the cut ends.
        bcs.append(BC_MIRROR if cyclic else bc)
        holds.append(kind)
    if fill is not None:
        c0, c1 = info["array-location"][channel_axis]
        fill = fill[c0:c1]
    with kernel_threads(threads):
        c = filter_window(np.asarray(block), degree, bcs, margins, holds, channel_last, fill)
    keep = [slice(None)] * c.ndim
    for ax, (low, high) in zip(spatial, halos):
        keep[ax] = slice(low, c.shape[ax] - high)
    return c[tuple(keep)]
