"""The ``gridsample`` command: warp images and volumes, show modes and paddings, benchmark.

Subcommands (each in its own module, imported when it runs)::

    gridsample warp INPUT [INPUT ...] OUTPUT [transform] [sampling] [output options]
    gridsample demo [--output gridsample-demo.png] [--size 256]
    gridsample bench [benchmark options]       # benchmarks/bench_forward.py
    gridsample compile [--dtype ... --rank ... --mode ... --padding ... --backward --flow-fields]
    gridsample info

``import gridsample.cli`` imports no imaging library: pillow, tifffile,
nibabel and tqdm are imported by the code that reads, writes or shows
progress, and a missing one is an error naming the extra to install
(``pip install "gridsample[cli]"``, ``"gridsample[nifti]"``).

Errors a user can cause print ``gridsample: error: <message>`` on stderr
and exit with 2 (the command line itself is wrong) or 1 (a file cannot be
read or written, a shape does not fit, the operator refused); no traceback.
"""

from __future__ import annotations

import argparse
import sys

from .. import GridSampleError, __version__
from .._registry import MODES, PADDINGS
from ._compile import add_compile_parser
from ._errors import FAILURE, USAGE, CLIError

__all__ = ["main", "build_parser", "CLIError"]

_MODES = tuple(n for m in MODES for n in (m.name, *m.aliases))
_PADDINGS = tuple(n for p in PADDINGS for n in (p.name, *p.aliases))

_WARP_EPILOG = """\
conventions:
  Coordinates are pixels: x along the width, y along the rows (down), z along
  the depth (first axis of a volume); pixel i is centred at i.  Values given
  per axis are in x, y, z order, like grid[..., k].
  Affine options move the content about the image centre, in output pixels,
  applied as scale, shear, rotation, translation.  --rotate is degrees
  counter-clockwise as displayed; on a volume it is --rotate-z (they add).
  --rotate-x/-y/-z apply in the order x, y, z.  With --size the input is
  first stretched onto the new canvas (no transform = resize).
  NIfTI volumes are transformed in world coordinates (mm, the file's affine):
  rotations right-handed about the world x, y, z axes through the volume's
  centre, translations in mm; --like REF.nii.gz resamples onto REF's grid.
  TIFFs that state pixel sizes are transformed in micrometres (image
  conventions); other files use pixels.
  --matrix: a 2x3/3x3 (image) or 3x4/4x4 (volume) matrix, .npy or text,
  mapping OUTPUT positions to INPUT positions (grid_sample's direction);
  --matrix-units normalized (default: it is affine_grid's theta) or pixels;
  --invert-matrix if it maps input to output.
  --flow: .npy of shape (H, W, 2) or (D, H, W, 3), component 0 along x; the
  output has its shape.  relative (default): output pixel p reads the input
  at p + flow(p); absolute: at flow(p).  Units: input pixels (default) or
  normalized coordinates.
  Images are (H, W[, C]); volumes (D, H, W[, C]) with channels last.  A .npy
  with 3 axes is a volume (D, H, W) unless --spatial-dims 2 makes it (H, W, C).
  The output keeps the input's dtype: PNG/JPEG take uint8 (PNG also uint16),
  TIFF/.npy/.npz any numeric type, NIfTI the NIfTI-1 types.
  Outputs are written atomically (a temporary file, then renamed): an error
  never leaves a partial file.  OUTPUT may not be INPUT unless --force.
  Several inputs (or a quoted glob such as "scans/*.tif") need OUTPUT to be
  a directory (an OUTPUT ending in "/" is created); outputs keep the input
  names (--ext changes the suffix).  Every input is read and checked against
  its output's format before the first output is written.

examples:
  gridsample warp photo.png out.png --rotate 30 --scale 1.2 --mode cubic
  gridsample warp scan.nii.gz out.nii.gz --rotate-x 10 --rotate-z -5 --padding border
  gridsample warp in.tif out.tif --matrix theta.txt --matrix-units pixels
  gridsample warp frame.png warped.png --flow flow.npy --flow-units pixels
  gridsample warp "raw/*.png" small/ --size 320x240 --ext .jpg
"""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors become :class:`CLIError` (exit 2, one message)."""

    def error(self, message):
        raise CLIError(f"{message} (see '{self.prog} --help')", USAGE)


#: The largest output size along an axis (an int64 index's range: larger cannot be made).
_MAX_SIZE = 2 ** 62


def _size(text: str) -> tuple:
    parts = text.lower().replace(",", "x").split("x")
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) not in (2, 3) or min(values) < 1 or max(values) > _MAX_SIZE:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size; give WIDTHxHEIGHT (images) or WIDTHxHEIGHTxDEPTH "
            f"(volumes) in pixels, e.g. 640x480")
    return values


def _add_warp(sub) -> None:
    w = sub.add_parser(
        "warp", help="apply an affine transform or a displacement field to images or volumes",
        description="Resample images (PNG, JPEG, TIFF) or volumes (.npy, .npz, multi-page "
                    "TIFF, NIfTI) with gridsample.grid_sample.",
        epilog=_WARP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    w.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="input file(s) or quoted glob pattern(s)")
    w.add_argument("output", metavar="OUTPUT",
                   help="output file, or a directory (required for several inputs; "
                        "a path ending in / is created)")
    t = w.add_argument_group("affine transform (content moves; degrees, output pixels)")
    t.add_argument("--rotate", type=float, metavar="DEG",
                   help="rotate counter-clockwise about the centre (volumes: about z)")
    for ax in "xyz":
        t.add_argument(f"--rotate-{ax}", type=float, metavar="DEG",
                       help=f"volumes: rotate about the {ax} axis")
    t.add_argument("--scale", type=float, metavar="S", help="zoom every axis (> 1 enlarges)")
    for ax in "xyz":
        t.add_argument(f"--scale-{ax}", type=float, metavar="S",
                       help=f"zoom along {ax} (times --scale)")
    t.add_argument("--shear-x", type=float, metavar="DEG", help="x' = x + tan(DEG) y")
    t.add_argument("--shear-y", type=float, metavar="DEG", help="y' = y + tan(DEG) x")
    t.add_argument("--translate", type=float, nargs=2, metavar=("TX", "TY"),
                   help="move right / down by output pixels")
    t.add_argument("--translate-z", type=float, metavar="TZ", help="volumes: move along z")
    m = w.add_argument_group("matrix file")
    m.add_argument("--matrix", metavar="FILE", help="affine matrix, .npy or text (see below)")
    m.add_argument("--matrix-units", choices=("normalized", "pixels"),
                   help="units of the matrix (default normalized: affine_grid's theta)")
    m.add_argument("--invert-matrix", action="store_true",
                   help="the matrix maps input to output; invert it")
    f = w.add_argument_group("displacement / flow field")
    f.add_argument("--flow", metavar="FILE", help=".npy field (H, W, 2) or (D, H, W, 3)")
    f.add_argument("--flow-type", choices=("relative", "absolute"),
                   help="displacements added to each output position (default) or positions")
    f.add_argument("--flow-units", choices=("pixels", "normalized"),
                   help="input pixels (default) or normalized [-1, 1] units")
    s = w.add_argument_group("sampling")
    s.add_argument("--mode", choices=_MODES, default="linear", help="interpolation (linear)")
    s.add_argument("--padding", nargs="+", choices=_PADDINGS, default=["zeros"],
                   metavar="PADDING",
                   help="what points outside the input read: zeros (default), border, "
                        "reflection, constant (--fill-value), mirror, symmetric, wrap; or one "
                        "per axis, x first (e.g. --padding wrap border)")
    s.add_argument("--fill-value", nargs="+", type=float, metavar="V",
                   help="what --padding constant reads outside: one value, or one per channel")
    s.add_argument("--align-corners", action="store_true",
                   help="-1 and 1 are the centres of the corner pixels, not their outer edges")
    o = w.add_argument_group("input and output")
    o.add_argument("--size", type=_size, metavar="WxH[xD]",
                   help="output size in pixels (default: the input's)")
    o.add_argument("--like", metavar="REF",
                   help="NIfTI: resample onto REF's voxel grid (shape and affine); the affine "
                        "options still apply, in world coordinates")
    o.add_argument("--ext", metavar="EXT", help="suffix of outputs written to a directory")
    o.add_argument("--force", action="store_true", help="allow OUTPUT to be the INPUT file")
    o.add_argument("--spatial-dims", type=int, choices=(2, 3),
                   help=".npy/.npz: leading spatial axes (2 reads (H, W, C) as an image)")
    o.add_argument("--key", metavar="NAME", help=".npz: the array to read")
    o.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary")
    o.add_argument("--progress", action="store_true",
                   help="show the progress bar even when stderr is not a terminal")
    w.set_defaults(handler=_run_warp)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gridsample`` (``bench`` passes its arguments on unparsed)."""
    parser = _Parser(prog="gridsample",
                     description="GridSample on the command line: warp images and volumes, "
                                 "show what modes and paddings do, benchmark.")
    parser.add_argument("--version", action="version", version=f"gridsample {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add_warp(sub)
    d = sub.add_parser("demo", help="render every mode x padding on a test chart to one PNG",
                       description="Warp a built-in test chart (zone plate, star, text-like "
                                   "edges, fine lines, colours) with a rotation + zoom + local "
                                   "swirl in every mode x padding, write a PNG contact sheet "
                                   "with zoomed crops and print each panel's time.")
    d.add_argument("--output", "-o", default="gridsample-demo.png", metavar="PNG",
                   help="the contact sheet (default gridsample-demo.png)")
    d.add_argument("--size", type=int, default=256, metavar="N",
                   help="chart and panel size in pixels, 32 to 2048 (default 256)")
    d.add_argument("--align-corners", action="store_true", help="use align_corners=True")
    d.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    d.set_defaults(handler=_run_demo)
    sub.add_parser("bench", add_help=False,
                   help="the forward benchmark table (benchmarks/bench_forward.py; "
                        "its options, e.g. --quick, pass through)")
    add_compile_parser(sub)
    i = sub.add_parser("info", help="version, kernels, threads, cache, optional libraries")
    i.set_defaults(handler=_run_info)
    return parser


def _run_warp(args) -> int:
    from ._warp import run_warp

    return run_warp(args)


def _run_demo(args) -> int:
    from ._demo import run_demo

    return run_demo(args)


def _run_info(args) -> int:
    from ._info import run_info

    return run_info(args)


def _attach_negative_sizes(argv: list) -> list:
    """``--size -5x10`` as ``--size=-5x10``: argparse takes a value that starts with ``-`` and
    is not a plain negative number for an option, and would say ``--size`` lacks its value;
    attached, the size's own check names what is wrong with it."""
    out, i = [], 0
    while i < len(argv):
        if (argv[i] == "--size" and i + 1 < len(argv) and argv[i + 1][:1] == "-"
                and argv[i + 1][1:2].isdigit()):
            out.append(f"--size={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def main(argv=None) -> int:
    """Run the ``gridsample`` command; returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 for a bad command line, 1 for a failure while running.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["bench"]:
            from ._bench import run_bench

            return run_bench(argv[1:])
        parser = build_parser()
        args = parser.parse_args(_attach_negative_sizes(argv))
        if args.command is None:
            parser.print_help(sys.stderr)
            return USAGE
        return args.handler(args)
    except CLIError as exc:
        print(f"gridsample: error: {exc}", file=sys.stderr)
        return exc.code
    except GridSampleError as exc:  # the operator refused the data (e.g. strings with linear)
        print(f"gridsample: error: {exc}", file=sys.stderr)
        return FAILURE
    except MemoryError as exc:  # (NumPy's says how much; warp's and demo's --size set it)
        print(f"gridsample: error: out of memory{': ' + str(exc) if str(exc) else ''}",
              file=sys.stderr)
        return FAILURE
    except KeyboardInterrupt:
        print("gridsample: interrupted", file=sys.stderr)
        return 130
