"""``gridsample warp``: read, build the grid, sample slab by slab, write atomically.

The output is computed along its first spatial axis in slabs of about
:data:`SLAB_POINTS` points: each slab's grid is made, sampled and dropped,
so the grid never exists whole (a 512^3 float32 grid would be 1.5 GiB), and
the progress bar has something to count.  Output points are independent,
so the slabs together equal one ``grid_sample`` call on the whole grid.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np

from .._plan import check_allocatable, plan_forward, stand_in
from .._splines import prefiltered_sampler
from ._errors import FAILURE, USAGE, CLIError, check_string_modes
from ._io import (
    FORMATS,
    Raster,
    check_readable,
    check_writable,
    expand_inputs,
    format_of,
    full_suffix,
    make_folder,
    read_raster,
    size_text,
    write_raster,
)
from ._progress import progress_bar
from ._transforms import (
    AffineSource,
    AffineSpec,
    FlowSource,
    forward_matrix,
    grid_dtype_for,
    load_flow,
    load_matrix,
    theta_from_forward,
    theta_from_matrix,
)
from ._world import (
    pixel_size_transform,
    reference_grid,
    resized_affine,
    stretch,
    world_pixel_matrix,
)

__all__ = ["SLAB_POINTS", "warp_array", "run_warp", "affine_spec_from_args"]

#: Output points per slab: 256 Ki points is a 3 MiB float32 2-D grid, plenty of
#: blocks for every thread, and few enough Python steps to cost nothing.
SLAB_POINTS = 1 << 18

_AFFINE_DEFAULTS = AffineSpec()
_AFFINE_FIELDS = ("rotate", "rotate_x", "rotate_y", "rotate_z", "scale", "scale_x", "scale_y",
                  "scale_z", "shear_x", "shear_y", "translate", "translate_z")


def warp_array(x: np.ndarray, spatial_dims: int, source, mode: str, padding,
               align_corners: bool, *, fill_value=0, slab_points: int = SLAB_POINTS,
               bar=None) -> np.ndarray:
    """Sample ``x`` (channels last) on the grid of ``source``, slab by slab.

    Parameters
    ----------
    x : ndarray, shape (*spatial) or (*spatial, C)
    spatial_dims : int
        2 or 3.
    source : AffineSource or FlowSource
        Has ``out_spatial`` and ``rows(start, stop, dtype)``.
    mode, padding, align_corners, fill_value
        As for :func:`gridsample.grid_sample`.
    slab_points : int
        Output points per slab (at least one row of the first axis).
    bar : progress bar, optional
        ``update(1)`` per slab.

    Returns
    -------
    ndarray, shape (*source.out_spatial) or (*source.out_spatial, C), x's dtype
    """
    spatial = x.shape[:spatial_dims]
    extra = x.shape[spatial_dims:]
    channels = extra[0] if extra else 1
    x_in = x.reshape(1, *spatial, channels)
    out_spatial = source.out_spatial
    out = np.empty((1, *out_spatial, channels), x.dtype)
    per_row = math.prod(out_spatial[1:])
    step = max(1, slab_points // max(per_row, 1))
    gdtype = grid_dtype_for(x.dtype)
    sample = None  # made with the first slab: a B-spline prefilters x once, not per slab
    for start in range(0, out_spatial[0], step):
        stop = min(out_spatial[0], start + step)
        grid = source.rows(start, stop, gdtype)
        if sample is None:
            sample = prefiltered_sampler(x_in, grid, mode, padding, align_corners,
                                         channel_last=True, fill_value=fill_value)
        out[:, start:stop] = sample(grid)
        if bar is not None:
            bar.update(1)
    return out.reshape(*out_spatial, *extra)


def slab_count(out_spatial: tuple, slab_points: int = SLAB_POINTS) -> int:
    """How many slabs :func:`warp_array` takes."""
    per_row = math.prod(out_spatial[1:])
    step = max(1, slab_points // max(per_row, 1))
    return -(-out_spatial[0] // step)


def affine_spec_from_args(args) -> AffineSpec:
    """The :class:`AffineSpec` of the parsed options (defaults where not given).

    Raises :class:`CLIError` (usage) for a value that gives no transform: NaN
    or infinite, a scale of 0, a shear of 90 degrees (plus any multiple of 180).
    """
    values = {}
    for name in _AFFINE_FIELDS:
        v = getattr(args, name, None)
        if v is not None:
            values[name] = tuple(v) if name == "translate" else v
            _check_affine_value(name, values[name])
    return AffineSpec(**values)


def _check_affine_value(name: str, value) -> None:
    option = "--" + name.replace("_", "-")
    shown = " ".join(f"{v:g}" for v in value) if isinstance(value, tuple) else f"{value:g}"
    if not all(math.isfinite(v) for v in (value if isinstance(value, tuple) else (value,))):
        raise CLIError(f"{option} {shown}: the value must be a finite number", USAGE)
    if name.startswith("scale") and value == 0:
        raise CLIError(f"{option} {shown}: a scale of 0 collapses the image to a point; give a "
                       f"nonzero factor (negative flips)", USAGE)
    if name.startswith("shear") and abs(math.cos(math.radians(value))) < 1e-9:
        exact = shown if float(shown) == value else repr(value)  # (89.9999999999 is not 90)
        raise CLIError(f"{option} {exact}: a shear of ±90 degrees (or so near it that its "
                       f"slope passes 1e9) is infinite; give an angle strictly between -90 and "
                       f"90, farther from them", USAGE)


def _transform_kind(args) -> str:
    """``"affine"``, ``"matrix"`` or ``"flow"``; usage errors for conflicting options."""
    affine_used = [n for n in _AFFINE_FIELDS if getattr(args, n, None) is not None]
    kinds = [k for k, used in (("affine", affine_used), ("matrix", args.matrix),
                               ("flow", args.flow)) if used]
    if len(kinds) > 1:
        opts = {"affine": "--" + (affine_used[0].replace("_", "-") if affine_used else "rotate"),
                "matrix": "--matrix", "flow": "--flow"}
        raise CLIError(f"{' and '.join(opts[k] for k in kinds)} cannot be combined: give affine "
                       f"options, a --matrix file or a --flow field", USAGE)
    for needs, given in (("--matrix FILE", [o for o, used in (
            ("--matrix-units", args.matrix_units is not None),
            ("--invert-matrix", args.invert_matrix)) if used and not args.matrix]),
                         ("--flow FILE", [o for o, used in (
            ("--flow-type", args.flow_type is not None),
            ("--flow-units", args.flow_units is not None)) if used and not args.flow])):
        if given:
            raise CLIError(f"{' and '.join(given)} need{'s' if len(given) == 1 else ''} {needs}",
                           USAGE)
    return kinds[0] if kinds else "affine"


def _plan_outputs(inputs, output: str, ext, force: bool) -> list:
    """The output path of each input; :class:`CLIError` before anything is written.

    OUTPUT is a directory when it exists as one or ends with a slash (then it
    is created, with its parents, once every check has passed); several
    inputs need a directory.
    """
    out = Path(output)
    folder = out.is_dir() or output.endswith(("/", os.sep))
    if ext is not None:
        given, ext = ext, ext if ext.startswith(".") else "." + ext
        if full_suffix("x" + ext) not in FORMATS:
            raise CLIError(f"--ext {given!r} is not a file type gridsample writes; supported: "
                           f"{' '.join(FORMATS)}", USAGE)
    if folder and out.exists() and not out.is_dir():
        raise CLIError(f"cannot write into {output}: it is a file, not a directory", FAILURE)
    if len(inputs) > 1 and not folder:
        raise CLIError(f"{len(inputs)} inputs need OUTPUT to be a directory (an existing one, or "
                       f"a path ending in '/', which is created); {output} is not one", FAILURE)
    if folder:
        outputs = []
        for inp in inputs:
            name = inp.name
            if ext is not None:
                name = name[:len(name) - len(full_suffix(name))] + ext
            outputs.append(out / name)
    else:
        if ext is not None:
            raise CLIError("--ext applies when OUTPUT is a directory", USAGE)
        outputs = [out]
    seen = {}
    for inp, dst in zip(inputs, outputs):
        check_readable(inp)
        format_of(inp)
        format_of(dst)
        _check_parent(dst, created=out if folder else None)
        if dst in seen:
            raise CLIError(f"{seen[dst]} and {inp} would both be written to {dst}", FAILURE)
        seen[dst] = inp
        if dst.exists() and inp.exists() and os.path.samefile(inp, dst) and not force:
            raise CLIError(f"{dst} is the input itself; pass --force to overwrite it, or write "
                           f"elsewhere", FAILURE)
    return outputs


def _check_parent(dst: Path, created) -> None:
    """``dst``'s folder exists, or is the OUTPUT folder to create (under no file)."""
    parent = dst.parent
    if parent.is_dir() or (created is not None and parent == created):
        for above in (parent, *parent.parents):
            if above.exists() and not above.is_dir():
                raise CLIError(f"cannot write {dst}: {above} is a file, not a directory",
                               FAILURE)
        return
    blocking = next((p for p in (parent, *parent.parents) if p.exists()), None)
    if blocking is not None and not blocking.is_dir():
        raise CLIError(f"cannot write {dst}: {blocking} is a file, not a directory", FAILURE)
    raise CLIError(f"cannot write {dst}: the directory {parent} does not exist", FAILURE)


def _out_spatial(args, raster: Raster) -> tuple:
    if args.size is None:
        return raster.spatial
    size = tuple(args.size)
    if len(size) != raster.spatial_dims:
        want = "WxH" if raster.spatial_dims == 2 else "WxHxD"
        raise CLIError(f"--size {'x'.join(map(str, size))} has {len(size)} values; this input "
                       f"is a {raster.describe()}, give {want}", FAILURE)
    # The output and the longest axis's coordinates (float64) must be arrays that can exist
    # (NumPy's "array is too big" names nothing).
    what = f"--size {'x'.join(map(str, size))} asks for an output that"
    check_allocatable((*size, raster.channels or 1), raster.array.dtype.itemsize, what)
    check_allocatable((max(size),), 8, what)
    return size[::-1]  # x, y[, z] -> array order


def _world_grid(args, kind, raster: Raster):
    """``(out_spatial, A_out)`` where the affine options act in world coordinates (a NIfTI
    volume), else None; :class:`CLIError` for ``--like`` where it does not apply."""
    like = getattr(args, "like", None)
    nifti = raster.meta.get("nifti")
    if like is not None:
        if nifti is None or raster.spatial_dims != 3:
            raise CLIError(f"--like resamples NIfTI volumes onto another one's grid; this input "
                           f"is a {raster.describe()}", USAGE)
        if kind != "affine":
            raise CLIError(f"--like cannot be combined with --{kind}: it takes the affine "
                           f"options (or none)", USAGE)
        if args.size is not None:
            raise CLIError("--like and --size cannot be combined: REF sets the output grid",
                           USAGE)
        return reference_grid(like)
    if nifti is None or raster.spatial_dims != 3 or kind != "affine":
        return None
    out_spatial = _out_spatial(args, raster)
    return out_spatial, resized_affine(nifti[1], raster.spatial, out_spatial, args.align_corners)


def _output_meta(args, raster: Raster, out_spatial: tuple, world) -> dict:
    """The output's format details: a NIfTI output's affine, a TIFF's pixel sizes describe
    the output grid (``world``: :func:`_world_grid`'s answer for this input)."""
    sizes = raster.meta.get("pixel_size_um")
    if sizes is not None and tuple(out_spatial) != raster.spatial:
        z = stretch(raster.spatial[::-1], tuple(out_spatial)[::-1], args.align_corners)
        sizes = tuple(float(s * z[k, k]) for k, s in enumerate(sizes))
        return {**raster.meta, "pixel_size_um": sizes}
    nifti = raster.meta.get("nifti")
    if nifti is None:
        return raster.meta
    header, a_in = nifti
    if world is not None:
        a_out = world[1]
    elif tuple(out_spatial) == raster.spatial:
        a_out = a_in
    else:  # --size with a matrix, or a flow field's size: the same field of view
        a_out = resized_affine(a_in, raster.spatial, out_spatial, args.align_corners)
    return {**raster.meta, "nifti": (header, a_out)}


def _source(args, kind, raster: Raster, loaded, world):
    """The grid source of one input (``world``: :func:`_world_grid`'s answer for it)."""
    r = raster.spatial_dims
    align = args.align_corners
    if world is not None:
        out_spatial, a_out = world
        m = world_pixel_matrix(loaded, raster.meta["nifti"][1], raster.spatial, a_out)
        theta = theta_from_matrix(m, "pixels", False, raster.spatial, out_spatial, align)
        return AffineSource(theta, out_spatial, align)
    sizes = raster.meta.get("pixel_size_um")
    if kind == "affine" and sizes is not None:  # a TIFF that states its pixel sizes
        out_spatial = _out_spatial(args, raster)
        m = pixel_size_transform(forward_matrix(loaded, r), sizes, raster.spatial,
                                 out_spatial, align)
        theta = theta_from_matrix(m, "pixels", False, raster.spatial, out_spatial, align)
        return AffineSource(theta, out_spatial, align)
    if kind == "flow":
        field = loaded
        if field.shape[-1] != r:
            raise CLIError(f"the flow field has {field.shape[-1]} components per point but the "
                           f"input is a {raster.describe()} ({r} axes)", FAILURE)
        if args.size is not None and tuple(args.size)[::-1] != field.shape[:-1]:
            raise CLIError(f"--size {'x'.join(map(str, args.size))} differs from the flow "
                           f"field's size {size_text(field.shape[:-1])} (the field sets the "
                           f"output size)", FAILURE)
        return FlowSource(field, args.flow_type or "relative", args.flow_units or "pixels",
                          raster.spatial, align)
    out_spatial = _out_spatial(args, raster)
    if kind == "matrix":
        theta = theta_from_matrix(loaded, args.matrix_units or "normalized", args.invert_matrix,
                                  raster.spatial, out_spatial, align)
    else:
        theta = theta_from_forward(forward_matrix(loaded, r), out_spatial, align)
    return AffineSource(theta, out_spatial, align)


def _check_sampling(args, raster: Raster, source, padding, fill) -> None:
    """What the operator refuses for this input (its dtype under the mode, an empty input
    with a non-empty output, the fill), found on zero-stride stand-ins of the input and
    the grid before any output is written."""
    x, r = raster.array, raster.spatial_dims
    plan_forward(stand_in((1, *raster.spatial, raster.channels or 1), x.dtype),
                 stand_in((1, *source.out_spatial, r), grid_dtype_for(x.dtype)), args.mode,
                 padding, args.align_corners, True, fill_value=fill)


def _sampling(args, raster: Raster) -> tuple:
    """``(padding, fill_value)`` for ``grid_sample`` from ``--padding`` and ``--fill-value``."""
    pads = list(args.padding)
    if len(pads) not in (1, raster.spatial_dims):
        raise CLIError(f"--padding {' '.join(pads)}: give one padding, or one per axis (x first; "
                       f"{raster.spatial_dims} for this {raster.describe()})", USAGE)
    fill = args.fill_value
    if fill is not None and "constant" not in pads:
        raise CLIError(f"--fill-value applies to --padding constant (the padding is "
                       f"{' '.join(pads)})", USAGE)
    channels = raster.channels or 1
    if fill is not None and len(fill) not in (1, channels):
        raise CLIError(f"--fill-value {' '.join(map(str, fill))}: give one value, or one per "
                       f"channel ({channels} in this {raster.describe()})", USAGE)
    padding = pads[0] if len(pads) == 1 else tuple(pads)
    return padding, 0 if fill is None else (fill[0] if len(fill) == 1 else list(fill))


def run_warp(args) -> int:
    """Run ``gridsample warp`` on parsed arguments; returns the exit status."""
    kind = _transform_kind(args)
    progress_mode = "never" if args.quiet else ("always" if args.progress else "auto")
    inputs = expand_inputs(args.inputs)
    outputs = _plan_outputs(inputs, args.output, args.ext, args.force)
    if kind == "matrix":
        loaded = load_matrix(args.matrix)
    elif kind == "flow":
        loaded = load_flow(args.flow)
    else:
        loaded = affine_spec_from_args(args)
    many = len(inputs) > 1
    if many:
        # Every input is read and checked against its output's format before the
        # first output is written: a run fails whole or not at all (each input is
        # read twice; a single input is checked just before its write).
        for inp, dst in zip(inputs, outputs):
            raster = read_raster(inp, args.spatial_dims, args.key)
            check_string_modes(str(inp), raster.array.dtype, [args.mode], FAILURE)
            source = _source(args, kind, raster, loaded, _world_grid(args, kind, raster))
            _check_sampling(args, raster, source, *_sampling(args, raster))
            check_writable(dst, raster.array.dtype, raster.spatial_dims, raster.channels)
            del raster
    with progress_bar(len(inputs), "warp", "file", progress_mode) as files_bar:
        for inp, dst in zip(inputs, outputs):
            raster = read_raster(inp, args.spatial_dims, args.key)
            check_string_modes(str(inp), raster.array.dtype, [args.mode], FAILURE)
            world = _world_grid(args, kind, raster)
            source = _source(args, kind, raster, loaded, world)
            padding, fill = _sampling(args, raster)
            check_writable(dst, raster.array.dtype, raster.spatial_dims, raster.channels)
            make_folder(dst)  # (OUTPUT given as "folder/": before the sampling, not after)
            t0 = time.perf_counter()
            slabs = 1 if many else slab_count(source.out_spatial)
            with progress_bar(slabs, inp.name, "slab", progress_mode) as slab_bar:
                result = warp_array(raster.array, raster.spatial_dims, source, args.mode,
                                    padding, args.align_corners, fill_value=fill, bar=slab_bar)
            seconds = time.perf_counter() - t0
            out = Raster(result, raster.spatial_dims,
                         _output_meta(args, raster, source.out_spatial, world))
            write_raster(dst, out)
            files_bar.update(1)
            if not args.quiet:
                files_bar.write(f"{inp} -> {dst}: {out.describe()}, {args.mode} / "
                                f"{' '.join(args.padding)}"
                                f"{', align_corners' if args.align_corners else ''}, "
                                f"{seconds * 1e3:.1f} ms")
    return 0
