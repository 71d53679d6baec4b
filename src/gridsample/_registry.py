"""Every interpolation mode and padding, with the facts each part of gridsample needs.

This is the one place a mode or a padding is defined.  Option parsing
(:mod:`gridsample._options`), the kernel tables of the engine and the
backward, the tap counts, the Dask footprints, the reference twin, the ONNX
and CANN entry points, ``gridsample.torch`` and the command line all read
these tables; a code that is not listed here is refused before any kernel
runs, so no dispatcher has a default branch to fall into.

Pure Python: importing it imports no compiled code.

The taps of one axis (docs/semantics.md §3-§4), in the terms used here: a
mode *anchors* a coordinate ``x`` at ``floor(x)`` (linear, cubic) or at
``rint(x)`` (nearest, half to even) and reads the indices
``anchor + k`` for ``k`` in ``reach``.  Linear and nearest pad the
continuous coordinate before anchoring (``pads="coordinate"``); cubic pads
each tap index (``pads="taps"``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Mode", "Padding", "MODES", "PADDINGS", "MODE_LINEAR", "MODE_NEAREST", "MODE_CUBIC",
           "PAD_ZEROS", "PAD_BORDER", "PAD_REFLECTION", "PAD_CONSTANT", "PAD_MIRROR",
           "PAD_SYMMETRIC", "PAD_WRAP", "CUBIC_A", "DEFAULT_PADDINGS", "mode_of", "padding_of",
           "taps_per_point", "kernel_name", "MAX_TAPS_PER_POINT", "MAX_AXIS_TAPS",
           "MODE_BSPLINE", "MODE_SPLINE_FIRST", "MODE_SPLINE_LAST", "spline_modes"]

#: Mode codes: the integers the kernels see, CANN's / ATen's interpolation codes.
MODE_LINEAR, MODE_NEAREST, MODE_CUBIC = 0, 1, 2
#: B-spline modes (docs/semantics.md §4.2): ``MODE_BSPLINE[n]`` is the code of degree ``n``.
MODE_BSPLINE = {n: n + 1 for n in range(2, 8)}
#: The first and last B-spline codes (the kernels' degree is ``code - 1``).
MODE_SPLINE_FIRST, MODE_SPLINE_LAST = MODE_BSPLINE[2], MODE_BSPLINE[7]
#: Padding codes: the integers the kernels see; 0-2 are CANN's / ATen's padding codes.
PAD_ZEROS, PAD_BORDER, PAD_REFLECTION = 0, 1, 2
#: Keys' cubic convolution coefficient by default (PyTorch, OpenCV, onnxruntime).
CUBIC_A = -0.75
#: The paddings beyond ONNX (docs/semantics.md §3.3): they pad each tap index, for every mode.
PAD_CONSTANT, PAD_MIRROR, PAD_SYMMETRIC, PAD_WRAP = 3, 4, 5, 6


@dataclass(frozen=True)
class Mode:
    """An interpolation mode.

    Attributes
    ----------
    code : int
        The integer the kernels see (CANN / ATen ``interpolation_mode``).
    name : str
        Canonical name (ONNX GridSample-20/22).
    aliases : tuple of str
        Other names :func:`gridsample.grid_sample` accepts (PyTorch's, the
        volumetric ones).
    onnx16 : str
        Its name in ONNX GridSample-16.
    torch : str
        Its name in ``torch.nn.functional.grid_sample``.
    taps : int
        Taps per axis.
    anchor : {"floor", "rint", "round"}
        Index the taps are counted from: ``floor(x)``, ``rint(x)`` (half to
        even) or ``floor(x + 1/2)`` (the even-degree B-splines, as SciPy).
    reach : tuple of int
        Offsets ``k`` of the taps from the anchor, first and last.
    pads : {"coordinate", "taps"}
        What the padding acts on.
    specialised_ranks : tuple of int
        Ranks with a rank-specialised general kernel and backward planner
        (others run the N-D kernels; a mode run as another's ``kernel`` has
        that mode's).
    vector_ranks : tuple of int
        Ranks with branch-free vector kernels (:mod:`gridsample._vector`).
    grid_grad_vector_ranks : tuple of int
        Ranks with branch-free grid-gradient kernels (:mod:`gridsample._grad_vector`).
    kernel : int or None
        The code the kernels run it as (None: its own).  The cubic B-spline
        is a piecewise cubic of support 4, like Keys' kernel: it runs on
        cubic's kernels with its own polynomial coefficients.
    onnx : bool
        Defined by ONNX GridSample (and CANN, ATen); ``gridsample.onnx``,
        ``gridsample.cann`` and the demo take only these.
    spline : int
        Its B-spline degree (0: not a B-spline mode).  B-spline modes pad
        each tap index (like cubic) and, by default, prefilter ``x`` into
        spline coefficients (:mod:`gridsample._prefilter`).
    """

    code: int
    name: str
    aliases: tuple
    onnx16: str
    torch: str
    taps: int
    anchor: str
    reach: tuple
    pads: str
    specialised_ranks: tuple
    vector_ranks: tuple
    grid_grad_vector_ranks: tuple = ()
    kernel: int | None = None
    spline: int = 0
    onnx: bool = True

    @property
    def kernel_code(self) -> int:
        """The mode code the kernels see."""
        return self.code if self.kernel is None else self.kernel


@dataclass(frozen=True)
class Padding:
    """A padding mode.

    Attributes
    ----------
    code : int
        The integer the kernels see (0-2: CANN / ATen ``padding_mode``).
    name : str
        Canonical name.
    aliases : tuple of str
        Other accepted names.
    onnx : bool
        Defined by ONNX GridSample (and CANN, ATen); ``gridsample.onnx`` and
        ``gridsample.cann`` accept only these.
    index : bool
        Pads each integer tap index, for every mode (docs/semantics.md §3.3);
        otherwise linear and nearest pad the continuous coordinate and cubic
        the tap indices (the ONNX rules, §3.1 and §4).
    far_side : bool
        A tap past one edge may read the other edge (wrap): a footprint
        near an edge includes the far side of the axis.
    scipy, opencv, numpy, interpol : str
        The same boundary's name in ``scipy.ndimage``, OpenCV's
        ``borderMode``, ``numpy.pad`` and torch-interpol's ``bound`` ("" where
        that library has no exact equivalent).
    vector : bool
        The vector kernels have a branch-free planner for it.
    """

    code: int
    name: str
    aliases: tuple = ()
    onnx: bool = True
    index: bool = False
    far_side: bool = False
    scipy: str = ""
    opencv: str = ""
    numpy: str = ""
    interpol: str = ""
    vector: bool = True


MODES = (
    Mode(MODE_LINEAR, "linear", ("bilinear", "trilinear"), onnx16="bilinear", torch="bilinear",
         taps=2, anchor="floor", reach=(0, 1), pads="coordinate", specialised_ranks=(2, 3),
         vector_ranks=(2, 3), grid_grad_vector_ranks=(2, 3)),
    Mode(MODE_NEAREST, "nearest", (), onnx16="nearest", torch="nearest",
         taps=1, anchor="rint", reach=(0, 0), pads="coordinate", specialised_ranks=(2, 3),
         vector_ranks=(2, 3)),
    Mode(MODE_CUBIC, "cubic", ("bicubic", "tricubic"), onnx16="bicubic", torch="bicubic",
         taps=4, anchor="floor", reach=(-1, 2), pads="taps", specialised_ranks=(2,),
         vector_ranks=(2, 3), grid_grad_vector_ranks=(2,)),
    *(Mode(MODE_BSPLINE[n], f"bspline{n}", (), onnx16="", torch="", taps=n + 1,
           anchor="floor" if n % 2 else "round", reach=(-(n // 2), n - n // 2) if n % 2
           else (-(n // 2), n // 2), pads="taps",
           specialised_ranks=(), vector_ranks=(), kernel=MODE_CUBIC if n == 3 else None,
           spline=n, onnx=False)
      for n in range(2, 8)),
)

PADDINGS = (
    Padding(PAD_ZEROS, "zeros", scipy="grid-constant", opencv="BORDER_CONSTANT",
            numpy="constant", interpol="zero"),
    Padding(PAD_BORDER, "border", scipy="nearest", opencv="BORDER_REPLICATE", numpy="edge",
            interpol="replicate"),
    Padding(PAD_REFLECTION, "reflection"),
    Padding(PAD_CONSTANT, "constant", onnx=False, index=True, scipy="grid-constant",
            opencv="BORDER_CONSTANT", numpy="constant", interpol="zero (fill 0 only)",
            vector=False),
    Padding(PAD_MIRROR, "mirror", onnx=False, index=True, scipy="mirror",
            opencv="BORDER_REFLECT_101", numpy="reflect", interpol="dct1"),
    Padding(PAD_SYMMETRIC, "symmetric", onnx=False, index=True, scipy="reflect",
            opencv="BORDER_REFLECT", numpy="symmetric", interpol="dct2"),
    Padding(PAD_WRAP, "wrap", ("periodic", "circular"), onnx=False, index=True, far_side=True,
            scipy="grid-wrap", opencv="BORDER_WRAP", numpy="wrap", interpol="dft"),
)

#: The paddings with compiled code of their own, which ``gridsample compile``
#: compiles by default: the ONNX three (each has vector kernels), one index
#: padding (mirror, symmetric and wrap share the general kernels, which read
#: the padding at run time) and constant (its fill kernel).
DEFAULT_PADDINGS = ("zeros", "border", "reflection", "wrap", "constant")

_MODES = {m.code: m for m in MODES}
_PADDINGS = {p.code: p for p in PADDINGS}


def mode_of(code: int) -> Mode:
    """The :class:`Mode` of a code (``KeyError`` for an unknown one: a bug, never user input)."""
    return _MODES[code]


def padding_of(code: int) -> Padding:
    """The :class:`Padding` of a code (``KeyError`` for an unknown one)."""
    return _PADDINGS[code]


#: Most taps per point a kernel plans (its scratch is ``block * K`` pairs):
#: linear up to r = 16, cubic up to r = 8, a degree-7 B-spline up to r = 5,
#: nearest at any rank.
MAX_TAPS_PER_POINT = 2**16
#: Most taps per axis (a degree-7 B-spline): the per-axis scratch of the general planners.
MAX_AXIS_TAPS = 8


def spline_modes() -> tuple:
    """The B-spline modes, by degree."""
    return tuple(m for m in MODES if m.spline)


def taps_per_point(code: int, rank: int) -> int:
    """Taps one output point reads at most: ``taps ** rank``."""
    return _MODES[code].taps ** rank


def kernel_name(code: int, rank: int) -> str:
    """The stem naming a (mode, rank) kernel in the kernel modules, e.g. ``"linear_2d"``."""
    return f"{_MODES[code].name}_{rank}d"
