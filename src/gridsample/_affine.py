"""AffineGrid: the sampling grid of a batch of affine maps (ONNX AffineGrid-20).

For output size ``(N, C, D1, ..., Dr)`` (r = 2 or 3) and ``theta`` of shape
``(N, r, r + 1)``, point ``(i_1, ..., i_r)`` of item ``n`` gets

    grid[n, i_1, ..., i_r, k] = sum_j theta[n, k, j] * b_j + theta[n, k, r]

where ``b_0`` is the base coordinate along the innermost axis (W), ``b_1``
along H, ``b_2`` along D -- the same axis order as GridSample's grid.  The
base coordinate of index ``i`` on an axis of size ``S`` spans ``[-1, 1]``:

    align_corners=True :  b = 2 i / (S - 1) - 1        (corner centres at +-1)
    align_corners=False:  b = (2 i + 1) / S - 1        (corner edges at +-1)

and an axis of size 1 has ``b = 0`` in both settings (PyTorch's choice; the
ONNX reference evaluator gives -1 there with align_corners=1, by an
accident of ``arange``).  Base coordinates are computed in float64 and
rounded once to the compute dtype.

Precision follows ``docs/semantics.md`` §6.2: float64 theta computes in float64,
float32 in float32; float16 and bfloat16 compute in float32 and are cast back
block by block, so no float32 copy of the whole grid is ever made.
"""

from __future__ import annotations

import numpy as np

from ._errors import GridSampleError, GridSampleTypeError, describe
from ._jit import function, read_only, skeleton
from ._options import is_integer, parse_align_corners
from ._plan import as_array, check_allocatable
from ._threads import run_shared, threads_for

__all__ = ["affine_grid", "THETA_DTYPE_NAMES", "SIZE_RULE", "base_coordinates", "batch_mismatch",
           "check_size_length", "check_theta_shape", "parse_affine_args"]

#: dtype names accepted for theta (bfloat16 comes from ``ml_dtypes``).
THETA_DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64")

# Points converted per block when a float16/bfloat16 grid is written through a
# float32 scratch buffer: 256 Ki points x 3 x 4 bytes = 3 MiB, L2/L3-sized.
_CAST_BLOCK_POINTS = 1 << 18


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def parse_affine_args(theta, size, align_corners):
    """Validate ``affine_grid``'s arguments.

    Returns
    -------
    theta : ndarray, shape (N, r, r + 1)
    spatial : tuple of int
        ``(D1, ..., Dr)`` taken from ``size``.
    align : bool
    """
    align = parse_align_corners(align_corners)
    theta = as_array("theta", theta)
    if theta.dtype.name not in THETA_DTYPE_NAMES:
        raise GridSampleTypeError(
            f"theta has dtype {theta.dtype}; allowed dtypes: {', '.join(THETA_DTYPE_NAMES)}"
        )
    size = _parse_size(size)
    check_theta_shape(theta.shape, size)
    if theta.shape[0] != size[0]:
        raise GridSampleError(batch_mismatch(theta.shape[0], size[0]))
    return theta, tuple(size[2:]), align


#: What ``size`` may be, in every message about it.
SIZE_RULE = "(N, C, H, W) for 2-D or (N, C, D, H, W) for 3-D, non-negative integers"


def _parse_size(size) -> tuple:
    try:
        if size is None or isinstance(size, (str, bytes)) or np.ndim(size) == 0:
            raise TypeError  # (a number or a string is not a shape, whatever its digits)
        values = list(np.asarray(size).reshape(-1)) if not isinstance(size, (list, tuple)) \
            else list(size)
    except Exception:
        raise GridSampleTypeError(
            f"size={describe(size)} is not a sequence; it must be {SIZE_RULE}") \
            from None
    check_size_length(values, describe(size))
    if not all(map(is_integer, values)):
        raise GridSampleTypeError(f"size={describe(size)} holds non-integers; it must be "
                                  f"{SIZE_RULE}")
    if any(int(v) < 0 for v in values):
        raise GridSampleError(f"size={describe(size)} has a negative entry; it must be "
                              f"{SIZE_RULE}")
    return tuple(int(v) for v in values)


def check_size_length(size, shown: str) -> None:
    """``size`` (N, C, *spatial) has 2 or 3 spatial axes (``shown``: how a message shows it)."""
    if len(size) not in (4, 5):
        raise GridSampleError(f"size={shown} has {len(size)} entries; it must be {SIZE_RULE}")


def check_theta_shape(theta_shape, size) -> None:
    """theta's shape for ``size`` (N, C, *spatial): ``(N', r, r + 1)`` with ``r`` spatial
    axes; the batch sizes are compared by the caller (:func:`batch_mismatch`: PyTorch's may be
    symbolic).  Also for shapes of tensors without data (gridsample.torch's shape
    inference)."""
    r = len(size) - 2
    if len(theta_shape) != 3 or theta_shape[1] != r or theta_shape[2] != r + 1:
        raise GridSampleError(
            f"theta has shape {tuple(theta_shape)}; for size={list(size)} (r = {r} spatial "
            f"axes) it must be (N, {r}, {r + 1})")


def batch_mismatch(items, wanted) -> str:
    """The message for theta's batch size ``items`` against ``size[0] = wanted``."""
    return f"theta has batch size {items} but size[0]={wanted}; they must be equal"


def base_coordinates(length: int, align_corners: bool, xp=np):
    """The normalized coordinates of the ``length`` points of one axis, float64.

    See the module docstring for the formulas; a single point sits at 0.  ``xp``: the
    array namespace (NumPy, or ``torch``, whose operations trace a symbolic ``length``
    for gridsample.torch's theta gradient).
    """
    i = xp.arange(length, dtype=xp.float64)
    if length == 1:
        return xp.zeros(1, dtype=xp.float64)
    if align_corners:
        return 2.0 * i / (length - 1) - 1.0
    return (2.0 * i + 1.0) / length - 1.0


@skeleton
def affine_row(theta, n, rest, bases, sizes):
    """The part of row ``rest``'s sums (``rest`` counts the rows of item ``n``) that is
    constant along it, ``(c0, c1, c2)``: ``c_k = t[k, r] + t[k, 1] * y (+ t[k, 2] * z)``,
    in that order (``c2`` only where r == 3).  ``sizes`` lists the spatial sizes innermost
    first (W, H[, D]), ``bases`` each axis's base coordinates."""
    r = sizes.shape[0]
    c0 = theta[n, 0, r]
    c1 = theta[n, 1, r]
    c2 = theta[n, r - 1, r]  # only used when r == 3
    for j in range(1, r):
        idx = rest % sizes[j]
        rest //= sizes[j]
        b = bases[j, idx]
        c0 += theta[n, 0, j] * b
        c1 += theta[n, 1, j] * b
        if r == 3:
            c2 += theta[n, 2, j] * b
    return c0, c1, c2


@skeleton
def affine_points(theta, n, bases, sizes, p0, nb, rank, coords):
    """Points ``p0 … p0 + nb - 1`` of item ``n``'s grid, ``rank`` coordinates each, into
    the flat ``coords`` (converted to its dtype): :func:`_affine_rows`'s values, bit for
    bit (the same sums in the same order)."""
    width = sizes[0]
    row = p0 // width
    w0 = p0 - row * width
    a0, a1, a2 = theta[n, 0, 0], theta[n, 1, 0], theta[n, rank - 1, 0]
    j = 0
    while j < nb:
        c0, c1, c2 = affine_row(theta, n, row, bases, sizes)
        m = min(nb - j, width - w0)
        # Views that start at the run: indexed by the loop's own k, which LLVM knows is not
        # negative, the loop vectorizes (indexed w0 + k and j + k it kept Numba's negative-
        # index wraparound on every access and stayed scalar, 1 ns a point).
        bx = bases[0, w0:w0 + m]
        out = coords[rank * j:rank * (j + m)]
        for k in range(m):
            out[rank * k] = a0 * bx[k] + c0
            out[rank * k + 1] = a1 * bx[k] + c1
            if rank == 3:
                out[rank * k + 2] = a2 * bx[k] + c2
        j += m
        row += 1
        w0 = 0


@function
def _affine_rows(first, stop, theta, bases, sizes, row_start, out):
    """Write grid rows ``row_start + first … row_start + stop - 1`` of the flattened output.

    ``theta`` (N, r, r + 1), ``bases`` (r, max size) and ``out`` share the
    compute dtype; ``sizes`` lists the spatial sizes innermost first
    (W, H[, D]).  A row is one line of W points of one batch item; ``out``
    is (rows, W, r) with its row 0 at global row ``row_start``.  The part of
    each sum that is constant along the row (translation plus the H and D
    terms) is formed once per row (:func:`affine_row`), then ``t[k, 0] * x`` is added.
    """
    r = sizes.shape[0]
    width = sizes[0]
    rows_per_item = 1
    for j in range(1, r):
        rows_per_item *= sizes[j]
    for row in range(row_start + first, row_start + stop):
        n = row // rows_per_item
        c0, c1, c2 = affine_row(theta, n, row - n * rows_per_item, bases, sizes)
        line = out[row - row_start]  # a view: indexed by w alone (see affine_points)
        a0, a1, a2 = theta[n, 0, 0], theta[n, 1, 0], theta[n, r - 1, 0]
        for w in range(width):
            bx = bases[0, w]
            line[w, 0] = a0 * bx + c0
            line[w, 1] = a1 * bx + c1
            if r == 3:
                line[w, 2] = a2 * bx + c2


def affine_grid(theta, size, align_corners=False) -> np.ndarray:
    """The sampling grid of a batch of 2-D or 3-D affine maps.

    Equal to ONNX AffineGrid-20 and ``torch.nn.functional.affine_grid``: the
    output feeds :func:`gridsample.grid_sample` to apply ``theta``.

    Parameters
    ----------
    theta : array_like, shape (N, 2, 3) or (N, 3, 4)
        Affine matrices (the last row ``[0, ..., 0, 1]`` is implicit) mapping
        output positions to input positions in normalized coordinates;
        float16, bfloat16, float32 or float64.
    size : sequence of int, (N, C, H, W) or (N, C, D, H, W)
        The output size; ``C`` is not used.
    align_corners : bool or {0, 1}, default False
        ``True``: -1 and 1 are the centres of the corner elements; ``False``:
        their outer edges.  Use the same value in ``grid_sample``.

    Returns
    -------
    ndarray, shape (N, H, W, 2) or (N, D, H, W, 3)
        Same dtype as ``theta``; ``[..., 0]`` is the x (W) coordinate.

    Raises
    ------
    GridSampleError
        Wrong shapes or sizes; :class:`GridSampleTypeError` for wrong types.

    Notes
    -----
    Base coordinates along an axis of size S are ``2 i / (S - 1) - 1`` with
    ``align_corners`` and ``(2 i + 1) / S - 1`` without (0 when S = 1).
    float16/bfloat16 compute in float32, float64 in float64.

    Examples
    --------
    >>> import numpy as np, gridsample
    >>> identity = np.array([[[1, 0, 0], [0, 1, 0]]], np.float32)
    >>> gridsample.affine_grid(identity, (1, 1, 1, 2))[0, 0]
    array([[-0.5,  0. ],
           [ 0.5,  0. ]], dtype=float32)
    """
    theta, spatial, align = parse_affine_args(theta, size, align_corners)
    check_allocatable((theta.shape[0], *spatial, len(spatial)), theta.dtype.itemsize,
                      f"size={describe(size)} asks for a grid that")
    theta_c = np.ascontiguousarray(theta, dtype=_compute_dtype(theta.dtype))
    return affine_window(theta_c, theta.dtype, spatial, (0,) * len(spatial), spatial, align)


def window_bases(ct, spatial, start, stop, align) -> tuple:
    """:func:`_affine_rows`'s ``bases`` and ``sizes`` for the window ``start:stop`` of a grid
    of spatial shape ``spatial``: each axis's base coordinates computed for the full axis,
    rounded once to ``ct``, then sliced (so a window's points have the whole grid's bits)."""
    r = len(spatial)
    block = tuple(b - a for a, b in zip(start, stop))
    sizes = np.array(block[::-1], np.int64)  # innermost (W) first
    bases = np.zeros((r, max(1, int(sizes.max()))), ct)
    for j in range(r):
        axis = r - 1 - j
        full = base_coordinates(int(spatial[axis]), align).astype(ct)
        bases[j, :block[axis]] = full[start[axis]:stop[axis]]
    return bases, sizes


def affine_window(theta_c, out_dtype, spatial, start, stop, align) -> np.ndarray:
    """``affine_grid(theta, (N, C, *spatial))[:, start:stop]`` without the rest of the grid.

    ``theta_c`` is theta in the compute dtype (float32, or float64 for
    float64), C-contiguous; ``start``/``stop`` give the window on each spatial
    axis.  Each axis's base coordinates are computed for the full axis length
    and then sliced, so a window's values are bit-identical to the same
    points of the whole grid (gridsample.dask builds per-block grids this way).
    """
    ct = theta_c.dtype
    theta_c = read_only(theta_c)
    r = len(spatial)
    block = tuple(b - a for a, b in zip(start, stop))
    out = np.empty((theta_c.shape[0], *block, r), out_dtype)
    if out.size == 0:
        return out
    bases, sizes = window_bases(ct, spatial, start, stop, align)
    width = int(sizes[0])
    rows = out.size // (width * r)
    flat = out.reshape(rows, width, r)
    # A point costs r dot products of r + 1 terms: planning-like work, no taps.
    threads = threads_for(rows * width, 0, r)
    if out.dtype == ct:
        run_shared(_affine_rows, rows, (theta_c, bases, sizes, 0, flat), threads)
        return out
    # float16 / bfloat16: compute blocks of rows in float32, cast each back.
    step = max(1, _CAST_BLOCK_POINTS // width)
    scratch = np.empty((min(step, rows), width, r), ct)
    for row in range(0, rows, step):
        end = min(rows, row + step)
        run_shared(_affine_rows, end - row, (theta_c, bases, sizes, row, scratch), threads)
        flat[row:end] = scratch[: end - row]
    return out
