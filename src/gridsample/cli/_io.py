"""Read and write images and volumes; the format follows the file name's suffix.

=================  ================================================  ==========================
suffix             holds                                             library
=================  ================================================  ==========================
.png               2-D, uint8 or uint16, grey / grey+alpha / RGB /    pillow (16-bit colour:
                   RGBA                                              :mod:`._png16`)
.jpg .jpeg         2-D, uint8, grey or RGB (lossy; written at         pillow
                   quality 95, 4:4:4)
.tif .tiff         2-D (one page, samples as channels) or 3-D        tifffile
                   (pages as depth), any numeric dtype
.npy .npz          any array: (H, W) image, (D, H, W) volume,        NumPy
                   (D, H, W, C) volume with channels; (H, W, C)
                   image with ``--spatial-dims 2``
.nii .nii.gz       3-D (or 4-D: the 4th axis is channels), 2-D       nibabel (``[nifti]``)
=================  ================================================  ==========================

In memory an image is ``(H, W)`` or ``(H, W, C)`` and a volume ``(D, H, W)``
or ``(D, H, W, C)``: channels last, so ``grid_sample`` runs with
``channel_last=True`` on a ``(1, ..., C)`` view, without a transpose.  NIfTI
arrays are taken in nibabel's voxel order ``(i, j, k)`` as ``(D, H, W)``,
and the output keeps the input's header and affine (voxel-to-world, not
updated for the warp).  Scaled NIfTI data (``scl_slope``) is read scaled,
as float.  JPEG orientation tags are not applied: pixels are taken as stored.

Writes are atomic: the file is written to a hidden temporary file in the
output's directory and moved over the output with :func:`os.replace` only
once it is complete, so an error or an interrupt never leaves a half-written
output (nor replaces an existing one).
"""

from __future__ import annotations

import contextlib
import glob
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import _png16
from ._errors import FAILURE, USAGE, CLIError, numpy_complaint, require

__all__ = ["Raster", "FORMATS", "format_of", "read_raster", "check_readable", "check_writable",
           "write_raster", "atomic_path", "expand_inputs", "full_suffix", "size_text"]

#: Format of each supported suffix.
FORMATS = {".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg", ".tif": "tiff", ".tiff": "tiff",
           ".npy": "npy", ".npz": "npz", ".nii": "nifti", ".nii.gz": "nifti"}
_FORMAT_NAMES = {"png": "PNG", "jpeg": "JPEG", "tiff": "TIFF", "npy": ".npy", "npz": ".npz",
                 "nifti": "NIfTI"}
# NIfTI-1 data types (no float16, no bool).
_NIFTI_DTYPES = {"uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                 "float32", "float64", "complex64", "complex128"}


@dataclass
class Raster:
    """An image or a volume, channels last.

    Attributes
    ----------
    array : ndarray, shape (*spatial) or (*spatial, C)
    spatial_dims : int
        2 (image: H, W) or 3 (volume: D, H, W).
    meta : dict
        Format details carried to the output: ``"nifti"`` (header, affine),
        ``"key"`` (the .npz array name).
    """

    array: np.ndarray
    spatial_dims: int
    meta: dict = field(default_factory=dict)

    @property
    def spatial(self) -> tuple:
        return tuple(self.array.shape[:self.spatial_dims])

    @property
    def channels(self):
        """C, or None when the array has no channel axis."""
        return self.array.shape[-1] if self.array.ndim > self.spatial_dims else None

    def describe(self) -> str:
        """``"640x480 (WxH) RGB uint8 image"``-style summary: sizes x first, as ``--size``."""
        dims = size_text(self.spatial)
        c = self.channels
        chan = {None: "", 1: " 1-channel", 2: " grey+alpha", 3: " RGB", 4: " RGBA"}.get(
            c, f" {c}-channel")
        if self.spatial_dims == 3 and c in (2, 3, 4):
            chan = f" {c}-channel"
        kind = "image" if self.spatial_dims == 2 else "volume"
        return f"{dims}{chan} {self.array.dtype} {kind}"


def size_text(spatial) -> str:
    """Array-order sizes as the command line writes them: ``"640x480 (WxH)"``, ``WxHxD``."""
    labels = "WxH" if len(spatial) == 2 else "WxHxD" if len(spatial) == 3 else ""
    text = "x".join(str(n) for n in tuple(spatial)[::-1])
    return f"{text} ({labels})" if labels else text


def full_suffix(path) -> str:
    """``".nii.gz"`` for NIfTI-gz files, else the last suffix, lower case."""
    name = Path(path).name.lower()
    return ".nii.gz" if name.endswith(".nii.gz") else Path(name).suffix


def format_of(path) -> str:
    """The format name of ``path`` by its suffix; :class:`CLIError` (usage) if unknown."""
    suffix = full_suffix(path)
    if suffix not in FORMATS:
        raise CLIError(f"{path}: unknown file type {suffix or '(no suffix)'!r}; supported: "
                       f"{' '.join(FORMATS)}", USAGE)
    return FORMATS[suffix]


def expand_inputs(patterns) -> list:
    """Paths from the INPUT arguments: existing files as given, others expanded as globs.

    A pattern matching nothing is an error (a missing plain path is reported
    when it is read).
    """
    paths = []
    for pattern in patterns:
        if not os.path.exists(pattern) and glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern))
            if not matches:
                raise CLIError(f"no file matches {pattern!r}", FAILURE)
            paths.extend(Path(m) for m in matches)
        else:
            paths.append(Path(pattern))
    return paths


def _native(a: np.ndarray) -> np.ndarray:
    if not a.dtype.isnative:  # e.g. big-endian TIFF or .npy: the kernels read native order
        a = a.astype(a.dtype.newbyteorder("="))
    return a


def read_raster(path, spatial_dims=None, key=None) -> Raster:
    """Read an image or a volume.

    Parameters
    ----------
    path : path-like
    spatial_dims : {None, 2, 3}
        For .npy / .npz: how many leading axes are spatial (the rest, at most
        one, is channels).  None: 2-D arrays are images, 3-D arrays (D, H, W)
        volumes, 4-D arrays (D, H, W, C) volumes with channels.
    key : str, optional
        The array to read from a .npz holding several.

    Returns
    -------
    Raster

    Raises
    ------
    CLIError
        Unknown suffix (usage), missing optional library, unreadable file or a
        shape that is neither an image nor a volume.
    """
    path = Path(path)
    check_readable(path)
    fmt = format_of(path)
    if fmt not in ("npy", "npz"):
        for option, value in (("--spatial-dims", spatial_dims), ("--key", key)):
            if value is not None:
                raise CLIError(f"{option} applies to .npy and .npz inputs; {path} is "
                               f"{_FORMAT_NAMES[fmt]}", USAGE)
    if fmt == "npy" and key is not None:  # (a .npy file holds one unnamed array)
        raise CLIError(f"--key applies to .npz inputs; {path} is a .npy file", USAGE)
    reader = {"png": _read_pillow, "jpeg": _read_pillow, "tiff": _read_tiff, "npy": _read_numpy,
              "npz": _read_numpy, "nifti": _read_nifti}[fmt]
    try:
        raster = reader(path, fmt, spatial_dims, key)
    except CLIError:
        raise
    except MemoryError:
        raise CLIError(f"cannot read {path}: out of memory", FAILURE) from None
    except Exception as exc:  # any library's complaint about the file's content
        raise CLIError(f"cannot read {path} as {_FORMAT_NAMES[fmt]}: {numpy_complaint(exc)}",
                       FAILURE) from None
    raster.array = _native(raster.array)
    return raster


def _read_pillow(path, fmt, spatial_dims, key):
    with open(path, "rb") as fh:
        head = fh.read(33)
    if fmt == "png" and _png16.needs_png16(head):
        return Raster(_png16.read_png16(path.read_bytes()), 2)
    image_mod = require("PIL.Image", f"{_FORMAT_NAMES[fmt]} files")
    with image_mod.open(path) as im:
        im.load()
        mode = im.mode
        if mode == "1":
            im = im.convert("L")
        elif mode in ("P", "PA"):
            im = im.convert("RGBA" if mode == "PA" or "transparency" in im.info else "RGB")
        elif mode in ("CMYK", "YCbCr", "LAB", "HSV"):
            im = im.convert("RGB")
        elif mode not in ("L", "LA", "RGB", "RGBA", "I;16", "I;16L", "I;16B", "I", "F"):
            raise CLIError(f"cannot read {path}: pillow image mode {mode!r} is not supported",
                           FAILURE)
        a = np.array(im)
    if mode == "I" and fmt == "png" and _png16.png_header(head)[2] == 16:
        a = a.astype(np.uint16)  # 16-bit grey that an older pillow widened to int32
    return Raster(a, 2)


#: Micrometres per unit, for the units TIFF files state pixel sizes in.
_MICROMETRES = {"µm": 1.0, "μm": 1.0, "um": 1.0, "\\u00B5m": 1.0, "micron": 1.0, "microns": 1.0,
                "micrometer": 1.0, "nm": 1e-3, "mm": 1e3, "cm": 1e4, "m": 1e6, "inch": 25400.0}


def _ome_sizes(xml: str) -> dict:
    """``{"x": µm, "y": µm, "z": µm}`` of an OME-XML's first Pixels element (those stated)."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return {}
    pixels = next((e for e in root.iter() if e.tag.endswith("Pixels")), None)
    sizes = {}
    for axis in "XYZ":
        value = pixels.get(f"PhysicalSize{axis}") if pixels is not None else None
        unit = _MICROMETRES.get(pixels.get(f"PhysicalSize{axis}Unit", "µm")) if value else None
        size = _stated(value, unit) if unit is not None else None
        if size is not None:
            sizes[axis.lower()] = size
    return sizes


#: Pixel sizes taken from a file's metadata, in micrometres (outside: not a size anyone
#: measured -- NaN, inf, 0, negative or absurd -- so the file states nothing).
_SIZE_RANGE = (1e-6, 1e9)  # 1 pm to 1 km


def _stated(value, unit: float = 1.0):
    """``value`` times ``unit`` (µm) if a file could mean it (:data:`_SIZE_RANGE`), else None
    (also for a value that is not a number)."""
    try:
        size = float(value) * unit
    except (TypeError, ValueError):
        return None
    return size if _SIZE_RANGE[0] <= size <= _SIZE_RANGE[1] else None


def tiff_pixel_sizes(tif) -> tuple:
    """``(sx, sy, sz)`` in micrometres as the file states them (None where it does not).

    OME-XML's PhysicalSizeX/Y/Z first; then ImageJ's resolution with its unit and its
    z spacing; then the TIFF resolution tags in inches or centimetres (a resolution unit
    of "none", the default, states nothing).
    """
    if tif.is_ome and tif.ome_metadata:
        ome = _ome_sizes(tif.ome_metadata)
        if ome:
            return ome.get("x"), ome.get("y"), ome.get("z")
    page = tif.pages[0]
    xres, yres = page.resolution
    unit = None
    if tif.is_imagej and tif.imagej_metadata:
        unit = _MICROMETRES.get(str(tif.imagej_metadata.get("unit", "")))
    elif int(page.resolutionunit) in (2, 3):
        unit = 25400.0 if int(page.resolutionunit) == 2 else 1e4
    if unit is None or not (xres > 0 and yres > 0):
        return None, None, None
    sz = None
    if tif.is_imagej and tif.imagej_metadata and tif.imagej_metadata.get("spacing"):
        sz = _stated(tif.imagej_metadata["spacing"], unit)
    sx, sy = _stated(unit / xres), _stated(unit / yres)
    if sx is None or sy is None:
        return None, None, None
    return sx, sy, sz


def _read_tiff(path, fmt, spatial_dims, key):
    tifffile = require("tifffile", "TIFF files")
    with tifffile.TiffFile(path) as tif:
        series = tif.series[0]
        axes = series.axes
        a = series.asarray()
        sizes = tiff_pixel_sizes(tif)
    # Samples (S) or channel (C) axes are channels, moved last; all others are spatial.
    chan = [i for i, ax in enumerate(axes) if ax in "SC"]
    if len(chan) > 1:
        raise CLIError(f"cannot read {path}: TIFF axes {axes!r} hold more than one channel "
                       f"axis", FAILURE)
    if chan:
        a = np.moveaxis(a, chan[0], -1)
    dims = a.ndim - len(chan)
    if dims not in (2, 3):
        raise CLIError(f"cannot read {path}: the TIFF has shape {series.shape} (axes {axes!r}), "
                       f"{dims} spatial axes; gridsample warps 2-D images and 3-D volumes",
                       FAILURE)
    meta = {}
    stated = sizes[:dims]
    if all(v is not None and v > 0 for v in stated):
        meta["pixel_size_um"] = tuple(float(v) for v in stated)  # x, y[, z]
    return Raster(a, dims, meta)


def _split_numpy(a, path, spatial_dims) -> Raster:
    hint = ("arrays are (H, W) images, (D, H, W) volumes and (D, H, W, C) volumes with channels; "
            "--spatial-dims 2 reads (H, W, C) images")
    if spatial_dims is None:
        dims = {2: 2, 3: 3, 4: 3}.get(a.ndim)
    else:
        dims = spatial_dims if a.ndim - spatial_dims in (0, 1) else None
    if dims is None:
        raise CLIError(f"cannot read {path}: the array has shape {a.shape}; {hint}", FAILURE)
    return Raster(a, dims)


def _read_numpy(path, fmt, spatial_dims, key):
    if fmt == "npy":
        return _split_numpy(np.load(path, allow_pickle=False), path, spatial_dims)
    with np.load(path, allow_pickle=False) as archive:
        names = archive.files
        if key is None:
            if len(names) != 1:
                raise CLIError(f"cannot read {path}: it holds {len(names)} arrays "
                               f"({', '.join(names) or 'none'}); choose one with --key", FAILURE)
            key = names[0]
        elif key not in names:
            raise CLIError(f"cannot read {path}: no array {key!r} in it (it holds "
                           f"{', '.join(names)})", FAILURE)
        raster = _split_numpy(archive[key], path, spatial_dims)
    raster.meta["key"] = key
    return raster


def nifti_affine(img, what: str) -> np.ndarray:
    """The voxel-to-world affine of the nibabel image ``img`` (float64), or a
    :class:`CLIError` that names ``what`` (the file's role and path) where it is not finite
    or is singular: neither maps voxels to the world, and nibabel cannot write it back."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # (nibabel's, on such an affine)
        affine = np.asarray(img.affine, np.float64)
        fine = np.isfinite(affine).all() and np.linalg.cond(affine[:3, :3]) < 1e12
    if not fine:
        raise CLIError(f"{what} has an affine that is not finite or is singular: "
                       f"{affine[:3].tolist()}", FAILURE)
    return affine


def _read_nifti(path, fmt, spatial_dims, key):
    nib = require("nibabel", "NIfTI files")
    with warnings.catch_warnings():  # (an odd header's warnings: the checks below speak)
        warnings.simplefilter("ignore", RuntimeWarning)
        img = nib.load(str(path))
    affine = nifti_affine(img, f"the input {path}")
    slope, inter = img.header.get_slope_inter()
    scaled = not (slope in (None, 1.0) or np.isnan(slope)) or not (
        inter in (None, 0.0) or np.isnan(inter))
    a = np.asanyarray(img.dataobj) if scaled else np.asarray(img.dataobj.get_unscaled())
    if a.ndim == 5 and a.shape[3] == 1:
        a = a[:, :, :, 0]  # NIfTI vector images: (X, Y, Z, 1, C)
    if a.ndim not in (2, 3, 4):
        raise CLIError(f"cannot read {path}: the NIfTI data has shape {a.shape}; gridsample "
                       f"warps 2-D, 3-D and 3-D + channels data", FAILURE)
    return Raster(a, 2 if a.ndim == 2 else 3, {"nifti": (img.header, affine)})


def check_readable(path) -> None:
    """Raise :class:`CLIError` for an input path that is a directory or missing."""
    path = Path(path)
    if path.is_dir():
        raise CLIError(f"cannot read {path}: it is a directory (give the files in it, e.g. "
                       f"{path / '*.png'})", FAILURE)
    if not path.exists():
        raise CLIError(f"cannot read {path}: no such file", FAILURE)


def make_folder(path) -> None:
    """Create the folder that will hold the output ``path`` (OUTPUT given as ``folder/``), or
    raise :class:`CLIError` saying why it cannot be made."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CLIError(f"cannot make the folder of {path}: {exc.strerror or exc}",
                       FAILURE) from None


def check_writable(path, raster_dtype, spatial_dims: int, channels) -> str:
    """Raise :class:`CLIError` if ``path``'s format cannot store such an array.

    Returns
    -------
    str
        The format name.
    """
    fmt = format_of(path)
    dtype = np.dtype(raster_dtype)
    name = _FORMAT_NAMES[fmt]
    what = (f"a {dtype} {'image' if spatial_dims == 2 else 'volume'}"
            + (f" with {channels} channels" if channels else ""))
    problem = None
    if fmt in ("png", "jpeg") and spatial_dims != 2:
        problem = f"{name} holds 2-D images; write .tif, .npy, .npz or .nii"
        if channels is None:  # (H, W, C) numbers read as a volume: say how to read an image
            problem += (" (or, for a .npy/.npz of shape (H, W, C), pass --spatial-dims 2 to "
                        "read it as an image with C channels)")
    elif fmt == "png" and (dtype not in (np.uint8, np.uint16) or (channels or 1) > 4):
        problem = "PNG stores uint8 or uint16 with 1 to 4 channels; write .tif or .npy"
    elif fmt == "jpeg" and (dtype != np.uint8 or (channels or 1) not in (1, 3)):
        problem = "JPEG stores uint8 grey or RGB; write .png, .tif or .npy"
    elif fmt == "tiff" and dtype.kind not in "biufc":
        problem = "TIFF stores numbers; write .npy"
    elif fmt == "nifti" and dtype.name not in _NIFTI_DTYPES:
        problem = f"NIfTI stores {', '.join(sorted(_NIFTI_DTYPES))}; write .tif or .npy"
    if problem:
        raise CLIError(f"cannot write {what} to {path}: {problem}", FAILURE)
    if fmt in ("png", "jpeg"):
        require("PIL.Image", f"{name} files")
    elif fmt == "tiff":
        require("tifffile", "TIFF files")
    elif fmt == "nifti":
        require("nibabel", "NIfTI files")
    return fmt


_UMASK = None


def _umask() -> int:
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0)
        os.umask(_UMASK)
    return _UMASK


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; move it to ``path`` if the block succeeds.

    The temporary file keeps ``path``'s suffix (writers that look at it, like
    nibabel, write the right format) and is removed on any error.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + full_suffix(path),
                               dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_raster(path, raster: Raster) -> None:
    """Write ``raster`` to ``path`` (format by suffix), atomically.

    Raises
    ------
    CLIError
        The format cannot hold the array, or writing failed (nothing is left
        at ``path`` then; an existing file there is untouched).
    """
    path = Path(path)
    fmt = check_writable(path, raster.array.dtype, raster.spatial_dims, raster.channels)
    writer = {"png": _write_pillow, "jpeg": _write_pillow, "tiff": _write_tiff,
              "npy": _write_numpy, "npz": _write_numpy, "nifti": _write_nifti}[fmt]
    try:
        with atomic_path(path) as tmp:
            writer(tmp, raster, fmt)
    except CLIError:
        raise
    except Exception as exc:
        # (one line: some libraries' messages hold a matrix over several)
        raise CLIError(f"cannot write {path}: {' '.join(str(exc).split())}", FAILURE) from None


def _write_pillow(tmp, raster, fmt):
    a = raster.array
    if a.ndim == 3 and a.shape[-1] == 1:
        a = a[..., 0]
    if fmt == "png" and a.dtype == np.uint16 and a.ndim == 3:
        tmp.write_bytes(_png16.encode_png16(a))
        return
    image_mod = require("PIL.Image", f"{_FORMAT_NAMES[fmt]} files")
    a = np.ascontiguousarray(a)
    im = image_mod.fromarray(a)  # uint16 (H, W) becomes mode "I;16"
    if fmt == "jpeg":
        im.save(tmp, format="JPEG", quality=95, subsampling=0)  # 4:4:4, no chroma halving
    else:
        im.save(tmp, format="PNG")


def _write_tiff(tmp, raster, fmt):
    tifffile = require("tifffile", "TIFF files")
    a, c = raster.array, raster.channels
    if c in (3, 4) and a.dtype in (np.uint8, np.uint16):
        kw = dict(photometric="rgb")
    elif c is not None:
        kw = dict(photometric="minisblack", planarconfig="contig")
    else:
        kw = dict(photometric="minisblack")
    sizes = raster.meta.get("pixel_size_um")
    if sizes is not None:
        # x and y as resolution tags in pixels per centimetre (what every reader takes);
        # a volume's z spacing has no standard tag and is not written.
        kw.update(resolution=(1e4 / sizes[0], 1e4 / sizes[1]), resolutionunit="CENTIMETER")
    with warnings.catch_warnings():  # (tifffile warns that an empty image is empty)
        warnings.simplefilter("ignore", UserWarning)
        tifffile.imwrite(tmp, a, **kw)


def _write_numpy(tmp, raster, fmt):
    with open(tmp, "wb") as fh:
        if fmt == "npy":
            np.save(fh, raster.array, allow_pickle=False)
        else:
            np.savez(fh, **{raster.meta.get("key", "arr_0"): raster.array})


def _write_nifti(tmp, raster, fmt):
    nib = require("nibabel", "NIfTI files")
    header, affine = raster.meta.get("nifti", (None, np.eye(4)))
    img = nib.Nifti1Image(raster.array, affine, header)
    if header is not None:
        # The input's sform and qform codes (what the world space is), both set to the
        # output grid's affine (nibabel would otherwise reset the codes).
        img.set_sform(affine, code=int(header["sform_code"]))
        img.set_qform(affine, code=int(header["qform_code"]))
    img.set_data_dtype(raster.array.dtype)
    nib.save(img, str(tmp))

