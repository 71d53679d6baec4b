r"""Volumes in physical space: NIfTI voxel grids, world coordinates, output affines.

A NIfTI file maps voxel indices ``v = (i, j, k)`` to world coordinates ``w``
in millimetres (RAS+ for scanner and MNI spaces) with its 4x4 affine ``A``:
``w = A v``.  gridsample reads the voxel axes ``(i, j, k)`` as the array
axes ``(D, H, W)``, so pixel coordinates (``x`` along W first, as everywhere in
the command line) are ``p = (k, j, i)``: ``v = P p`` with the permutation ``P``.

The affine options then act in world coordinates: the content moves by

    T = C @ Tr @ R @ Sh @ Sc @ C^-1

about the input volume's centre ``c`` (``C`` translates the origin to ``c``),
with ``Sc = diag(scale_x, scale_y, scale_z)`` along the world axes, the shear
of :mod:`gridsample.cli._transforms` in world axes, ``R = Rz @ Ry @ Rx``
right-handed rotations about the world axes (``--rotate-x`` first; seen
from the positive end of an axis, a positive angle turns counter-clockwise:
``Rz`` takes +x towards +y), and ``Tr`` a translation in millimetres.  An
output voxel ``v_out`` (world ``A_out v_out``) shows the content that was at
``T^-1 A_out v_out``, i.e. at input voxel ``A_in^-1 T^-1 A_out v_out``.  In
pixel coordinates that is the matrix

    M = P^-1 @ A_in^-1 @ T^-1 @ A_out @ P        (output pixel -> input pixel)

which the ``--matrix-units pixels`` path turns into ``theta``.  Voxel sizes
and oblique axes therefore enter through ``A_in`` and ``A_out``: a rotation
is a rotation in millimetres, whatever the voxel shape.

The output grid (``A_out`` and its shape): the input's by default; with
``--size`` the same field of view sampled by the new number of voxels (the
voxel sizes change: ``A_out = A_in @ Z``, ``Z`` the per-axis stretch that
``--size`` applies in pixel units); with ``--like REF`` the grid of REF.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import replace

import numpy as np

from ._errors import FAILURE, CLIError
from ._io import nifti_affine
from ._transforms import AffineSpec, forward_matrix

__all__ = ["about", "world_transform", "stretch", "resized_affine", "world_pixel_matrix",
           "pixel_size_transform", "reference_grid"]

#: Pixel (x, y, z, 1) -> voxel (i, j, k, 1): i = z, j = y, k = x.
_P = np.array([[0, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]], np.float64)


def about(centre, move: np.ndarray) -> np.ndarray:
    """``C @ move @ C^-1``: the homogeneous ``move`` made about ``centre`` instead of 0."""
    r = len(centre)
    c, c_inv = np.eye(r + 1), np.eye(r + 1)
    c[:r, r] = centre
    c_inv[:r, r] = -np.asarray(centre, np.float64)
    return c @ move @ c_inv


def world_transform(spec: AffineSpec, centre) -> np.ndarray:
    """``T`` (4x4, world millimetres) of the affine options, about ``centre`` (world).

    The composition is :func:`gridsample.cli._transforms.forward_matrix`'s (scale, shear,
    rotation x then y then z, translation); its rotations follow the image convention
    (``x' = x cos a + y sin a``), which is the right-handed rotation by ``-a``, so the
    angles are negated.
    """
    right_handed = replace(spec, rotate=-spec.rotate, rotate_x=-spec.rotate_x,
                           rotate_y=-spec.rotate_y, rotate_z=-spec.rotate_z)
    return about(centre, forward_matrix(right_handed, 3))


def stretch(in_sizes, out_sizes, align_corners: bool) -> np.ndarray:
    """The command line's resize as a homogeneous matrix: output index -> input index.

    Per axis (``affine_grid`` with the identity): ``v_in = (v_out + 1/2) n_in / n_out - 1/2``,
    or with align_corners ``v_in = v_out (n_in - 1) / (n_out - 1)``.  Axes in the order given.
    """
    r = len(in_sizes)
    z = np.eye(r + 1)
    for axis, (n_in, n_out) in enumerate(zip(in_sizes, out_sizes)):
        if align_corners:
            z[axis, axis] = (n_in - 1) / (n_out - 1) if n_out > 1 else 1.0
        else:
            f = n_in / n_out
            z[axis, axis] = f
            z[axis, r] = (f - 1) / 2
    return z


def resized_affine(a_in: np.ndarray, in_spatial: tuple, out_spatial: tuple,
                   align_corners: bool) -> np.ndarray:
    """``A_out`` of the same field of view sampled by ``out_spatial`` voxels (array order)."""
    z = np.eye(4)
    r = len(in_spatial)
    s = stretch(in_spatial, out_spatial, align_corners)
    z[:r, :r], z[:r, 3] = s[:r, :r], s[:r, r]
    return np.asarray(a_in, np.float64) @ z


def pixel_size_transform(forward: np.ndarray, sizes, in_spatial: tuple, out_spatial: tuple,
                         align_corners: bool) -> np.ndarray:
    """``M`` (output pixel -> input pixel) for an image or volume with pixel sizes (TIFF).

    ``sizes`` are micrometres per pixel in x, y[, z] order; pixel ``p`` (x first) has
    its centre at ``s (p + 1/2)``, so ``A = [diag(s) | s/2]``.  ``forward`` is the
    affine options' move in centred units (:func:`gridsample.cli._transforms.
    forward_matrix`, the image conventions), applied in micrometres about the centre:
    ``M = A_in^-1 C forward^-1 C^-1 A_out`` (output pixel -> input pixel), with
    ``A_out = A_in Z`` (``Z`` the resize of ``--size``, :func:`stretch`).
    """
    r = len(sizes)
    a_in = np.eye(r + 1)
    a_in[:r, :r] = np.diag(sizes)
    a_in[:r, r] = np.asarray(sizes) / 2
    z = stretch(in_spatial[::-1], out_spatial[::-1], align_corners)
    a_out = a_in @ z
    centre = (a_in @ np.array([*((n - 1) / 2 for n in in_spatial[::-1]), 1.0]))[:r]
    return np.linalg.inv(a_in) @ np.linalg.inv(about(centre, forward)) @ a_out


def world_pixel_matrix(spec: AffineSpec, a_in: np.ndarray, in_spatial: tuple,
                       a_out: np.ndarray) -> np.ndarray:
    """``M`` (4x4): output pixel ``(x, y, z, 1)`` -> input pixel, for the options ``spec``."""
    a_in = np.asarray(a_in, np.float64)
    centre_voxel = [(n - 1) / 2 for n in in_spatial]
    centre = (a_in @ np.array([*centre_voxel, 1.0]))[:3]
    t = world_transform(spec, centre)
    try:
        with np.errstate(all="ignore"):  # (a NaN or huge affine: the check below says so)
            m = np.linalg.inv(_P) @ np.linalg.inv(a_in) @ np.linalg.inv(t) @ np.asarray(
                a_out, np.float64) @ _P
    except np.linalg.LinAlgError:
        m = np.full((4, 4), np.nan)  # a singular affine (a zero sform, say)
    if not np.isfinite(m).all():
        raise CLIError("the transform in world coordinates is not finite (check the input's "
                       "affine)", FAILURE)
    return m


@functools.lru_cache(maxsize=8)
def reference_grid(path) -> tuple:
    """``(shape, affine)`` of the voxel grid of the NIfTI file ``path`` (``--like``)."""
    from ._errors import require

    nib = require("nibabel", "NIfTI files")
    try:
        with warnings.catch_warnings():  # (an odd header's warnings: the checks below speak)
            warnings.simplefilter("ignore", RuntimeWarning)
            img = nib.load(str(path))
    except Exception as exc:  # any complaint of nibabel's about the file
        raise CLIError(f"cannot read the --like reference {path}: {exc}", FAILURE) from None
    if len(img.shape) < 3:
        raise CLIError(f"the --like reference {path} has shape {img.shape}; it must be a "
                       f"volume", FAILURE)
    return tuple(int(n) for n in img.shape[:3]), nifti_affine(img, f"the --like reference {path}")
