"""``gridsample compile``: compile kernels ahead of use, e.g. while building a container image.

Kernels are compiled on first use and kept on disk (``gridsample info``
shows where); a first call in a fresh environment therefore waits for the
compiler.  ``RUN gridsample compile`` in a Dockerfile, or the same command
on a cluster's workers before a job, moves that wait to build time.
"""

from __future__ import annotations

import os
import time

import numpy as np

from .._errors import GridSampleError
from .._options import MODE_NAMES, PADDING_NAMES
from .._registry import DEFAULT_PADDINGS
from ._errors import USAGE, CLIError, check_string_modes
from ._progress import count, progress_bar

__all__ = ["add_compile_parser", "run_compile"]

#: Highest rank ``compile`` takes: linear reads 2**r taps, at most 2**16.
_MAX_RANK = 16


def add_compile_parser(sub) -> None:
    """Add the ``compile`` subcommand to the ``gridsample`` parser."""
    c = sub.add_parser(
        "compile", help="compile kernels ahead of use (e.g. at container build time)",
        description="Compile the kernels of the given element types, ranks, modes and paddings "
                    "into the disk cache, so that later processes start without compiling. "
                    "Default: float32 x and grid, ranks 2 and 3, every mode the ranks "
                    "allow, the paddings with kernels of their own (mirror and symmetric "
                    "share wrap's), "
                    "forward only.")
    c.add_argument("--dtype", nargs="+", default=["float32"], metavar="DTYPE",
                   help="element types of x (default float32; e.g. float64 float16 bfloat16 "
                        "uint8 int16)")
    c.add_argument("--grid-dtype", nargs="+", default=["float32"], metavar="DTYPE",
                   help="grid dtypes (default float32)")
    c.add_argument("--rank", nargs="+", type=int, default=[2, 3], metavar="R",
                   help="numbers of spatial axes (default 2 3)")
    c.add_argument("--mode", nargs="+", choices=list(MODE_NAMES.values()), default=None,
                   help="interpolation modes (default all that the ranks allow)")
    c.add_argument("--padding", nargs="+", choices=list(PADDING_NAMES.values()),
                   default=list(DEFAULT_PADDINGS),
                   help=f"paddings (default {' '.join(DEFAULT_PADDINGS)})")
    c.add_argument("--channel-last", action="store_true",
                   help="also the channel-last kernels (x of shape (N, ..., C))")
    c.add_argument("--backward", action="store_true",
                   help="also the gradients (grid_sample_backward, gridsample.torch)")
    c.add_argument("--flow-fields", action="store_true",
                   help="also the kernels that read a flow field (N, r, ...) passed as the "
                        "grid with its component axis moved last (np.moveaxis(flow, 1, -1), "
                        "flow.permute(0, 2, 3, 1))")
    c.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                   help="compile in N processes at once (default: one per CPU core)")
    c.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    c.add_argument("--progress", action="store_true",
                   help="show the progress bar even when stderr is not a terminal")
    c.set_defaults(handler=run_compile)


def _check_x_dtype(name: str, modes) -> None:
    """``--dtype name``: an element type gridsample samples (``grid_sample``'s own rule,
    asked of a zero-stride stand-in), in every mode asked for (strings: nearest only)."""
    from .._plan import plan_forward, stand_in
    from .._precompile import resolve_dtype

    dtype = resolve_dtype(name)
    if dtype.kind == "O":  # (what an object array holds decides how it is sampled)
        raise CLIError(f"--dtype {name}: give the element type the arrays hold (str for "
                       f"strings, or a numeric type); object arrays are converted first", USAGE)
    check_string_modes(f"--dtype {name}", dtype, modes)
    x, grid = stand_in((1, 1, 2, 2), dtype), stand_in((1, 1, 1, 2), np.float32)
    for mode in modes:
        try:
            plan_forward(x, grid, mode, "zeros", False, False)
        except GridSampleError as exc:  # (a TypeError for dtypes it never takes)
            raise CLIError(f"--dtype {name}: {exc}", USAGE) from None


def _modes_for_ranks(ranks, modes, given: bool) -> list:
    """``(rank, mode)`` pairs the operator takes (``plan_forward`` asked of stand-ins: a mode
    that reads too many taps a point at a rank is refused there).  A refused pair is a usage
    error where the modes were ``given``; from the default (every mode) it is left out."""
    from .._plan import plan_forward, stand_in

    pairs = []
    for r in ranks:
        x, grid = stand_in((1, 1) + (2,) * r, np.float32), stand_in((1,) * (r + 1) + (r,),
                                                                      np.float32)
        for mode in modes:
            try:
                plan_forward(x, grid, mode, "zeros", False, False)
            except GridSampleError as exc:
                if given:
                    raise CLIError(f"--rank {r} --mode {mode}: {exc}", USAGE) from None
                continue
            pairs.append((r, mode))
    return pairs


def run_compile(args) -> int:
    """Compile every combination the options name, with a progress bar."""
    from .. import _jit
    from .._precompile import combinations, compile_many, resolve_dtype

    jobs = (os.cpu_count() or 1) if args.jobs is None else args.jobs
    if jobs < 1:
        raise CLIError(f"--jobs {args.jobs}: at least 1 process", USAGE)
    if any(r < 1 or r > _MAX_RANK for r in args.rank):
        raise CLIError(f"--rank {' '.join(map(str, args.rank))}: ranks are 1 to {_MAX_RANK} "
                       "(every rank above 3 runs the same N-D kernels)", USAGE)
    for option, names in (("--dtype", args.dtype), ("--grid-dtype", args.grid_dtype)):
        for name in names:
            try:
                resolve_dtype(name)
            except GridSampleError as exc:
                raise CLIError(f"{option} {name}: {exc}", USAGE) from None
    given = args.mode is not None
    modes = args.mode if given else list(MODE_NAMES.values())
    for name in args.dtype:
        _check_x_dtype(name, modes)
    bad = [g for g in args.grid_dtype if resolve_dtype(g).kind != "f"]
    if bad:
        raise CLIError(f"--grid-dtype {bad[0]}: grids are float16, bfloat16, float32 or "
                       "float64", USAGE)
    todo = [c for r, m in _modes_for_ranks(args.rank, modes, given)
            for c in combinations(args.dtype, args.grid_dtype, [r], [m], args.padding,
                                  args.channel_last, args.backward, args.flow_fields)]
    mode = "never" if args.quiet else ("always" if args.progress else "auto")
    start = time.perf_counter()
    with progress_bar(len(todo), "compiling", "kernel", mode) as bar:
        compile_many(todo, jobs, bar.update)
    if not args.quiet:
        print(f"gridsample: {count(len(todo), 'combination')} ready in "
              f"{time.perf_counter() - start:.1f} s ({_jit.cache_dir()})")
    return 0
