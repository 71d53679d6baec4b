r"""Sampling grids for the command line: affine transforms and displacement fields.

Coordinates
-----------
Pixel coordinates are ``x`` along the width (the innermost array axis),
``y`` along the height (rows; down as displayed) and, for volumes, ``z``
along the depth (the first array axis).  Pixel ``i`` has its centre at
``i``.  Every option that takes one value per axis lists them in this
``x, y, z`` order, the order of ``grid[..., k]``.

``grid_sample`` reads normalized coordinates ``g``.  On an axis of ``S``
pixels (docs/semantics.md §2, inverted)::

    align_corners=False:  p = ((g + 1) S - 1) / 2   <=>   g = (2 p + 1) / S - 1
    align_corners=True:   p = (g + 1) (S - 1) / 2   <=>   g = 2 p / (S - 1) - 1

Both are ``g = s (p - c)`` with the centre ``c = (S - 1) / 2`` at ``g = 0``
and the *pixel step* ``s = 2 / S`` (False) or ``s = 2 / (S - 1)`` (True):
one pixel is ``s`` normalized units.  (With align_corners=True and
``S = 1`` every ``g`` reads the single pixel; ``s = 2`` is used there.)

Affine options (``--rotate`` ... ``--translate``)
---------------------------------------------------
They describe how the *content* moves, in output pixels, about the centre
of the image, applied in the order scale, shear, rotation, translation::

    A = T @ R @ Sh @ Sc           (homogeneous, in centred output pixel units)

* ``Sc = diag(scale * scale_x, scale * scale_y[, scale * scale_z])``: > 1 enlarges.
* ``Sh``: ``x' = x + tan(shear_x) y``, ``y' = y + tan(shear_y) x`` (degrees).
* ``R = Rz @ Ry @ Rx`` (``--rotate-x`` first), degrees.  ``Rz``
  (``--rotate``; ``--rotate-z`` for volumes) is ``x' = x cos a + y sin a``,
  ``y' = -x sin a + y cos a``: counter-clockwise as displayed (rows going
  down).  ``Rx`` and ``Ry`` are the same formula on ``(y, z)`` and ``(z, x)``.
* ``T`` moves the content by ``(tx, ty[, tz])`` output pixels: +x right,
  +y down, +z towards higher slices.

Without ``--size`` the output has the input's size.  With it, the input is
first stretched onto the output canvas (the identity transform resizes, as
``affine_grid`` with an identity ``theta`` does) and ``A`` acts in output
pixels.  Normalized coordinates are shared by the input and the stretched
canvas, so an output point ``g_out`` sits at centred output pixel offset
``g_out / s_out`` and reads the canvas point ``A^-1 (g_out / s_out)``::

    theta = S @ A^-1 @ S^-1,        S = diag(s_x, s_y[, s_z], 1) of the OUTPUT sizes

(the translation column of ``theta`` is thus ``s * (A^-1)_translation``:
pixels converted to normalized units with the output's pixel step).

Matrix files (``--matrix``)
---------------------------
2x3 / 3x3 (images) or 3x4 / 4x4 (volumes; the last row must be
``0 ... 0 1``).  By default the matrix is ``theta`` itself: it maps output
positions to input positions in normalized coordinates (the
``affine_grid`` / ``grid_sample`` convention).  With ``--matrix-units
pixels`` it maps output pixel coordinates (``x, y[, z]``, pixel ``i`` at
``i``) to input pixel coordinates, as ``scipy.ndimage.affine_transform`` (in
x-first order) and OpenCV's ``WARP_INVERSE_MAP`` do; with
``g = s (p - c)`` on both sides::

    theta = N_in @ M @ N_out^-1,    N = [[diag(s), -s * c], [0, 1]]  (pixel -> normalized)

``--invert-matrix`` says the file maps input to output (the forward map)
and inverts it first.

Displacement fields (``--flow``)
--------------------------------
A ``.npy`` of shape ``(H, W, 2)`` or ``(D, H, W, 3)`` (a leading axis of
1 is accepted); component ``k`` is along axis ``x, y, z`` as above.  The
field's spatial shape is the output's.  For output point ``i`` with
identity position ``b`` (its ``affine_grid`` identity coordinate):

* absolute, normalized: ``g = f``                 (the field is the grid)
* relative, normalized: ``g = b + f``
* absolute, pixels: ``g = (2 f + 1) / S_in - 1`` (False) or ``2 f / (S_in - 1) - 1`` (True)
* relative, pixels: ``g = b + s_in f``: a displacement of ``f`` input pixels
  is ``s_in f`` normalized units, ``s_in = 2 / S_in`` or ``2 / (S_in - 1)``.

Relative fields map output to input (backward warping, like
``cv2.remap(src, identity + flow)``): output pixel ``p`` reads the input at
``p + f(p)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._affine import base_coordinates  # affine_grid's own identity coordinates
from ._errors import FAILURE, USAGE, CLIError, numpy_complaint

__all__ = [
    "AffineSpec", "pixel_step", "base_coordinates", "forward_matrix", "theta_from_forward",
    "theta_from_matrix", "load_matrix", "load_flow", "AffineSource", "FlowSource",
    "grid_dtype_for",
]


def pixel_step(size: int, align_corners: bool) -> float:
    """Normalized units per pixel on an axis of ``size`` pixels: 2/S, or 2/(S-1) if aligned."""
    if align_corners:
        return 2.0 / (size - 1) if size > 1 else 2.0
    return 2.0 / size if size > 0 else 2.0


def grid_dtype_for(x_dtype: np.dtype) -> np.dtype:
    """The grid dtype used for an input: float64 for 64-bit float / complex, else float32.

    float32 coordinates place a point within ~S * 6e-8 pixels (2.4e-4 px on
    4096 pixels) and halve the grid's memory; float64 inputs get float64.
    """
    if np.dtype(x_dtype) in (np.float64, np.complex128, np.longdouble):
        return np.dtype(np.float64)
    return np.dtype(np.float32)


@dataclass(frozen=True)
class AffineSpec:
    """The affine options of ``gridsample warp``: degrees, factors, output pixels."""

    rotate: float = 0.0
    rotate_x: float = 0.0
    rotate_y: float = 0.0
    rotate_z: float = 0.0
    scale: float = 1.0
    scale_x: float = 1.0
    scale_y: float = 1.0
    scale_z: float = 1.0
    shear_x: float = 0.0
    shear_y: float = 0.0
    translate: tuple = (0.0, 0.0)
    translate_z: float = 0.0

    def check_rank(self, r: int) -> None:
        """Raise :class:`CLIError` for 3-D options given for a 2-D image."""
        if r == 2:
            used = [name for name, value, neutral in (
                ("--rotate-x", self.rotate_x, 0.0), ("--rotate-y", self.rotate_y, 0.0),
                ("--rotate-z", self.rotate_z, 0.0), ("--scale-z", self.scale_z, 1.0),
                ("--translate-z", self.translate_z, 0.0)) if value != neutral]
            if used:
                raise CLIError(f"{', '.join(used)} appl{'ies' if len(used) == 1 else 'y'} to "
                               f"volumes; this input is a 2-D image (use --rotate, --scale-x/-y, "
                               f"--translate TX TY)", FAILURE)


def _rotation_2d(deg: float) -> np.ndarray:
    # x' = x cos a + y sin a, y' = -x sin a + y cos a: counter-clockwise with y down.
    a = math.radians(deg)
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, s], [-s, c]])


def _embed(block: np.ndarray, axes: tuple, r: int) -> np.ndarray:
    m = np.eye(r)
    m[np.ix_(axes, axes)] = block
    return m


def forward_matrix(spec: AffineSpec, r: int) -> np.ndarray:
    """``A = T @ R @ Sh @ Sc``, (r+1, r+1), in centred output pixel units (see the module notes)."""
    spec.check_rank(r)
    scales = [spec.scale * spec.scale_x, spec.scale * spec.scale_y, spec.scale * spec.scale_z][:r]
    sc = np.diag(scales)
    sh = _embed(np.array([[1.0, math.tan(math.radians(spec.shear_x))],
                          [math.tan(math.radians(spec.shear_y)), 1.0]]), (0, 1), r)
    if r == 2:
        rot = _rotation_2d(spec.rotate)
    else:
        # --rotate on a volume is the in-slice rotation, --rotate-z.
        rz = _embed(_rotation_2d(spec.rotate + spec.rotate_z), (0, 1), 3)
        rx = _embed(_rotation_2d(spec.rotate_x), (1, 2), 3)
        ry = _embed(_rotation_2d(spec.rotate_y), (2, 0), 3)
        rot = rz @ ry @ rx
    a = np.eye(r + 1)
    a[:r, :r] = rot @ sh @ sc
    a[:r, r] = list(spec.translate)[:2] + ([spec.translate_z] if r == 3 else [])
    return a


def theta_from_forward(a: np.ndarray, out_spatial: tuple, align_corners: bool) -> np.ndarray:
    """``theta = S @ A^-1 @ S^-1`` (r, r+1) for a forward matrix in centred output pixels."""
    r = len(out_spatial)
    steps = [pixel_step(n, align_corners) for n in out_spatial[::-1]]  # x, y[, z]
    s = np.diag(steps + [1.0])
    s_inv = np.diag([1.0 / v for v in steps] + [1.0])
    # Each option is finite and nonzero (checked where parsed), but together they may
    # still collapse the image: shears whose tangents multiply to 1, say.
    # The linear part's condition: a translation, however far, collapses nothing.
    if not np.isfinite(a).all() or np.linalg.cond(a[:r, :r]) > 1e12:
        raise CLIError("the affine transform is singular or degenerate (together, the options "
                       "collapse the image onto a line or a point)", USAGE)
    a_inv = np.linalg.inv(a)
    return (s @ a_inv @ s_inv)[:r]


def _pixel_to_normalized(spatial: tuple, align_corners: bool) -> np.ndarray:
    """``N``: homogeneous pixel (x, y[, z]) -> normalized map, ``g = s p - s c``."""
    r = len(spatial)
    n = np.eye(r + 1)
    for k, size in enumerate(spatial[::-1]):
        s = pixel_step(size, align_corners)
        n[k, k] = s
        n[k, r] = -s * (size - 1) / 2.0
    return n


def theta_from_matrix(matrix: np.ndarray, units: str, invert: bool, in_spatial: tuple,
                      out_spatial: tuple, align_corners: bool) -> np.ndarray:
    """The ``theta`` (r, r+1) of a matrix file; see the module notes for the conventions.

    Parameters
    ----------
    matrix : ndarray, shape (r, r+1) or (r+1, r+1)
    units : {"normalized", "pixels"}
    invert : bool
        The matrix maps input to output; invert it first.
    in_spatial, out_spatial : tuple of int
        Spatial shapes in array order ((H, W) or (D, H, W)).
    align_corners : bool
    """
    r = len(in_spatial)
    if matrix.shape not in ((r, r + 1), (r + 1, r + 1)):
        kind = "2-D image" if r == 2 else "volume"
        raise CLIError(f"the matrix has shape {matrix.shape}; a {kind} needs {r}x{r + 1} or "
                       f"{r + 1}x{r + 1}", FAILURE)
    m = np.eye(r + 1)
    m[:matrix.shape[0]] = matrix
    if not np.array_equal(m[r], np.eye(r + 1)[r]):
        raise CLIError(f"the matrix's last row is {m[r].tolist()}; an affine matrix has "
                       f"{[0.0] * r + [1.0]} there", FAILURE)
    if invert:
        try:
            m = np.linalg.inv(m)
        except np.linalg.LinAlgError:
            raise CLIError("--invert-matrix: the matrix is singular", FAILURE) from None
    if units == "pixels":
        n_in = _pixel_to_normalized(in_spatial, align_corners)
        n_out = _pixel_to_normalized(out_spatial, align_corners)
        m = n_in @ m @ np.linalg.inv(n_out)
    return m[:r]


def _read_array(path, what: str) -> np.ndarray:
    try:
        if str(path).lower().endswith(".npy"):
            return np.load(path, allow_pickle=False)
        with open(path, encoding="utf-8") as fh:
            text = fh.read().replace(",", " ")
        from io import StringIO

        if not text.strip():  # (loadtxt would warn about it on stderr, then give 0 x 0)
            return np.empty((0, 0))
        return np.loadtxt(StringIO(text), dtype=np.float64, ndmin=2)
    except (OSError, ValueError, EOFError, UnicodeDecodeError) as exc:
        raise CLIError(f"cannot read the {what} {path}: {numpy_complaint(exc)}",
                       FAILURE) from None


def load_matrix(path) -> np.ndarray:
    """Read a matrix file (.npy, or text with numbers separated by spaces or commas).

    Returns
    -------
    ndarray of float64, 2-D (a leading axis of 1 is dropped)
    """
    m = _read_array(path, "matrix file")
    if m.ndim == 3 and m.shape[0] == 1:
        m = m[0]
    if m.ndim != 2 or m.dtype.kind not in "iuf" or m.size == 0:
        raise CLIError(f"the matrix file {path} holds a {m.dtype} array of shape {m.shape}; "
                       f"it must be a 2x3, 3x3, 3x4 or 4x4 matrix of numbers", FAILURE)
    m = m.astype(np.float64)
    if not np.isfinite(m).all():
        raise CLIError(f"the matrix file {path} holds NaN or infinite values", FAILURE)
    return m


def load_flow(path) -> np.ndarray:
    """Read a displacement / sampling field: ``.npy`` of shape (H, W, 2) or (D, H, W, 3).

    Returns
    -------
    ndarray, shape (*spatial, r), memory-mapped when possible (read slab by slab)
    """
    if not str(path).lower().endswith(".npy"):
        raise CLIError(f"the flow field {path} must be a .npy file", FAILURE)
    try:
        f = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise CLIError(f"cannot read the flow field {path}: {numpy_complaint(exc)}",
                       FAILURE) from None
    if f.ndim in (4, 5) and f.shape[0] == 1 and f.shape[-1] == f.ndim - 2:
        f = f[0]
    if f.ndim not in (3, 4) or f.shape[-1] != f.ndim - 1 or f.dtype.kind not in "iuf":
        raise CLIError(f"the flow field {path} has shape {f.shape} and dtype {f.dtype}; it must "
                       f"be (H, W, 2) or (D, H, W, 3) numbers, component 0 along x (width)",
                       FAILURE)
    return f


#: The largest entry of an affine ``theta`` taken (normalized units): far beyond any image
#: (a point 1e30 half-widths out), and far from float32's range, so that its grid, cast
#: to float32, stays finite.
_THETA_MAX = 1e30


class AffineSource:
    """The grid of an affine ``theta``, computed one slab of output rows at a time.

    ``rows(start, stop)`` equals ``affine_grid(theta[None], (1, 1, *out_spatial),
    align_corners)[:, start:stop]`` bit for bit (the same float64 operations in the
    same order as the ``affine_grid`` kernel), then cast to the grid dtype.
    """

    def __init__(self, theta: np.ndarray, out_spatial: tuple, align_corners: bool):
        self.theta = np.asarray(theta, np.float64)
        if not np.isfinite(self.theta).all() or np.abs(self.theta).max() > _THETA_MAX:
            raise CLIError(f"the transform maps the output beyond what a grid holds "
                           f"(theta {self.theta.tolist()}; entries up to {_THETA_MAX:g} in "
                           f"normalized units)", FAILURE)
        self.out_spatial = tuple(out_spatial)
        self.bases = [base_coordinates(n, align_corners) for n in self.out_spatial[::-1]]

    def rows(self, start: int, stop: int, dtype) -> np.ndarray:
        """Grid of output rows ``[start, stop)`` of the first spatial axis, (1, rows, ..., r)."""
        t, r = self.theta, len(self.out_spatial)
        shape = (1, stop - start, *self.out_spatial[1:], r)
        grid = np.empty(shape, dtype)
        if r == 2:
            bx = self.bases[0][None, :]
            by = self.bases[1][start:stop, None]
            for k in range(2):
                c = t[k, 2] + t[k, 1] * by
                grid[0, ..., k] = t[k, 0] * bx + c
        else:
            bx = self.bases[0][None, None, :]
            by = self.bases[1][None, :, None]
            bz = self.bases[2][start:stop, None, None]
            for k in range(3):
                c = (t[k, 3] + t[k, 1] * by) + t[k, 2] * bz
                grid[0, ..., k] = t[k, 0] * bx + c
        return grid


class FlowSource:
    """The grid of a displacement or sampling field, one slab of output rows at a time.

    Parameters
    ----------
    field : ndarray, shape (*out_spatial, r)
    kind : {"relative", "absolute"}
    units : {"pixels", "normalized"}
    in_spatial : tuple of int
        The input's spatial shape (array order), for pixel units.
    align_corners : bool
    """

    def __init__(self, field, kind: str, units: str, in_spatial: tuple, align_corners: bool):
        self.field = field
        self.kind, self.units, self.align = kind, units, align_corners
        self.out_spatial = tuple(field.shape[:-1])
        self.in_sizes = tuple(in_spatial[::-1])  # x, y[, z]
        self.bases = [base_coordinates(n, align_corners) for n in self.out_spatial[::-1]]

    def rows(self, start: int, stop: int, dtype) -> np.ndarray:
        """Grid of output rows ``[start, stop)``, shape (1, rows, ..., r)."""
        f = np.asarray(self.field[start:stop], np.float64)
        r = f.shape[-1]
        g = np.empty((1,) + f.shape, dtype)
        # A value beyond the grid dtype's range is a point infinitely far out (±inf), as
        # grid_sample reads it: no overflow warning.
        with np.errstate(over="ignore"):
            for k in range(r):
                g[0, ..., k] = self._component(f[..., k], k, r, start, stop)
        return g

    def _component(self, fk, k: int, r: int, start: int, stop: int) -> np.ndarray:
        """Grid component ``k`` of the field's component ``fk`` (rows ``[start, stop)``)."""
        if self.units == "pixels":
            size = self.in_sizes[k]
            if self.kind == "absolute":
                if self.align:
                    fk = 2.0 * fk / (size - 1) - 1.0 if size > 1 else np.zeros_like(fk)
                else:
                    fk = (2.0 * fk + 1.0) / size - 1.0
            else:
                fk = fk * pixel_step(size, self.align)
        if self.kind == "relative":
            shape = [1] * r
            shape[r - 1 - k] = -1  # grid component k runs along array axis r-1-k
            base = self.bases[k]
            if r - 1 - k == 0:
                base = base[start:stop]
            fk = base.reshape(shape) + fk
        return fk
