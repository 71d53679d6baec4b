"""Forward GridSample: gridsample against its peers, in one process, same inputs.

Run:  python -m benchmarks.bench_forward [--quick] [--case SUBSTRING] [--markdown FILE]

Each case times every implementation ``repeats`` times, interleaved (one
call of each in turn, so drift on a shared machine hits all alike), and
reports medians and the ratio gridsample / peer (< 1: gridsample is faster).
The first-call compile time is measured in fresh processes: cold (empty Numba
cache) and warm (cache filled by the cold run).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmarks.grids import random_grid, smooth_grid
from benchmarks.peers import PEERS, Unsupported, make_gridsample, make_gridsample_of
from benchmarks.timing import (
    checked_cases,
    first_call_seconds,
    interleaved_medians,
    machine_line,
    report,
    set_threads,
    table_parser,
)


@dataclass
class Case:
    name: str
    x_shape: tuple  # channel-first logical shape (N, C, *spatial)
    out_spatial: tuple
    mode: str = "linear"
    padding: str = "zeros"
    # or "random", "shifted" (smooth, half the points outside), or "flow" (smooth, held as a
    # flow field (N, r, D1, ..., Dr) whose component axis is moved last: a strided view)
    grid: str = "smooth"
    channel_last: bool = False
    align: bool = False

    def inputs(self, rng):
        x = rng.standard_normal(self.x_shape, dtype=np.float32)
        n = self.x_shape[0]
        if self.grid in ("smooth", "shifted", "flow"):
            grid = np.ascontiguousarray(smooth_grid(n, self.out_spatial))
            if self.grid == "shifted":  # moved down by half the image: half the points out
                grid[..., 1] += 1
            if self.grid == "flow":
                grid = np.moveaxis(np.ascontiguousarray(np.moveaxis(grid, -1, 1)), 1, -1)
        else:
            grid = random_grid(rng, n, self.out_spatial)
        if self.channel_last:
            x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
        return x, grid


def default_cases():
    img, vol = (1, 3, 1024, 1024), (1, 1, 128, 128, 128)
    cases = []
    for mode in ("linear", "nearest", "cubic"):
        for grid in ("smooth", "random"):
            cases.append(Case(f"image 1x3x1024² {mode} {grid}", img, (1024, 1024), mode,
                              grid=grid))
    cases += [
        # one channel (depth maps, masks, single-channel registration): nothing shares a plan
        Case("image 1x1x1024² linear smooth", (1, 1, 1024, 1024), (1024, 1024)),
        Case("maps 8x32x128² linear", (8, 32, 128, 128), (128, 128)),
        Case("maps 1x64x256² linear border", (1, 64, 256, 256), (256, 256), padding="border"),
        Case("volume 1x1x128³ linear", vol, (128, 128, 128)),
        Case("volume 2x4x64³ linear random", (2, 4, 64, 64, 64), (64, 64, 64), grid="random"),
        Case("volume 1x2x96³ nearest", (1, 2, 96, 96, 96), (96, 96, 96), "nearest"),
        Case("image 1x1024²x3 linear channel-last", img, (1024, 1024), channel_last=True),
        # a vector field (optical flow, a displacement) warped: two channels, channel-last
        Case("field 1x1024²x2 linear channel-last", (1, 2, 1024, 1024), (1024, 1024),
             channel_last=True),
        Case("image 1x512²x3 cubic channel-last", (1, 3, 512, 512), (512, 512), "cubic",
             channel_last=True),
        Case("volume 1x128³x1 linear channel-last", vol, (128, 128, 128), channel_last=True),
        Case("volume 2x64³x4 linear channel-last", (2, 4, 64, 64, 64), (64, 64, 64),
             channel_last=True),
        # feature planes and grids of neural fields: many channels, channel-last
        Case("features 1x256²x32 linear channel-last", (1, 32, 256, 256), (256, 256),
             grid="random", channel_last=True),
        Case("features 1x512²x8 cubic channel-last", (1, 8, 512, 512), (512, 512), "cubic",
             channel_last=True),
        Case("features 1x64³x16 linear channel-last", (1, 16, 64, 64, 64), (64, 64, 64),
             grid="random", channel_last=True),
        # reflection: the planners' fmod (a libm call per coordinate) keeps their loop scalar
        Case("image 1x3x1024² linear reflection", img, (1024, 1024), padding="reflection"),
        Case("image 1x3x1024² nearest reflection", img, (1024, 1024), "nearest",
             padding="reflection"),
        # 2-D cubic across sizes, batches and paddings (where AVX2 machines lagged)
        Case("image 1x3x512² cubic zeros", (1, 3, 512, 512), (512, 512), "cubic"),
        Case("image 1x3x512² cubic reflection align", (1, 3, 512, 512), (512, 512), "cubic",
             padding="reflection", align=True),
        Case("batch 4x1x192x160→200x180 cubic random", (4, 1, 192, 160), (200, 180), "cubic",
             grid="random"),
        Case("batch 4x8x192x160→200x180 cubic border", (4, 8, 192, 160), (200, 180), "cubic",
             padding="border"),
        # A warp that moves half the image out (a spatial transformer's translation): the
        # points outside cost less, so the halves of the work are unequal.
        Case("image 1x3x512² cubic half outside", (1, 3, 512, 512), (512, 512), "cubic",
             grid="shifted"),
        # A registration network's deformation, a flow field (N, 2, H, W) passed as the grid
        # by moving its component axis last (PyTorch reads the view as it is; onnxruntime,
        # OpenCV and SciPy get it copied before the timing)
        Case("image 1x3x1024² linear flow field", img, (1024, 1024), grid="flow"),
        # Small calls, where the time is mostly the call's own overhead (validation, planning
        # in Python, the thread hand-over): an image tile, and a spatial transformer's batch
        # (MNIST-sized).
        Case("small 1x3x64²→64² linear", (1, 3, 64, 64), (64, 64)),
        Case("small batch 64x1x28²→28² linear", (64, 1, 28, 28), (28, 28)),
    ]
    return cases


def time_case(case, peers, repeats, rng):
    x, grid = case.inputs(rng)
    args = (x, grid, case.mode, case.padding, case.align, case.channel_last)
    runners, notes = {"gridsample": make_gridsample(*args)}, {}
    for name, make in peers.items():
        try:
            runners[name] = make(*args)
        except Unsupported as why:
            notes[name] = str(why)
        except ImportError:
            notes[name] = "not installed"
    medians = interleaved_medians(runners, repeats)
    return medians, notes


def compile_times():
    """First-call seconds in a new process: cold (empty cache) and warm (cached)."""
    return first_call_seconds(
        "import time; t0 = time.perf_counter(); import numpy as np, gridsample; "
        "x = np.ones((1, 3, 64, 64), np.float32); g = np.zeros((1, 32, 32, 2), np.float32); "
        "gridsample.grid_sample(x, g); print(time.perf_counter() - t0)")


def format_table(rows, peer_names):
    head = ["case", "gridsample ms"] + [f"{p} ms" for p in peer_names] + [
        f"÷{p}" for p in peer_names]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, medians, notes in rows:
        cells = [name, f"{medians['gridsample'] * 1e3:.2f}"]
        for p in peer_names:
            cells.append(f"{medians[p] * 1e3:.2f}" if p in medians else notes.get(p, "-"))
        for p in peer_names:
            cells.append(f"{medians['gridsample'] / medians[p]:.2f}" if p in medians else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None, fail=None):
    """Run the benchmark with the command-line arguments ``argv``; ``fail``: what a bad option
    calls with its message (:func:`benchmarks.timing.table_parser`)."""
    parser = table_parser(__doc__, fail)
    parser.add_argument("--peers", default=",".join(PEERS),
                        help=f"comma-separated peers, any of {', '.join(PEERS)} "
                             f"(default: all; a peer not installed is skipped)")
    args = parser.parse_args(argv)
    all_cases = default_cases()
    selected = checked_cases(parser, args, [c.name for c in all_cases])
    names = [p for p in args.peers.split(",") if p]
    unknown = [p for p in names if p not in PEERS]
    if unknown:
        parser.error(f"argument --peers: {', '.join(map(repr, unknown))} is not a peer; "
                     f"choose from {', '.join(PEERS)}")
    if args.threads:
        set_threads(args.threads)
    repeats = args.repeats or (3 if args.quick else 9)
    peers = {p: PEERS[p] for p in names}
    if args.baseline:
        from benchmarks.baseline import baseline_option

        base, commit = baseline_option(parser, args.baseline)
        peers = {f"gridsample@{commit}": make_gridsample_of(base), **peers}
    cases = [c for c in all_cases if c.name in selected]

    import numba

    print(machine_line())
    print(f"gridsample benchmark: {numba.get_num_threads()} threads, {repeats} repeats, "
          f"median ms (ratio < 1: gridsample faster)", flush=True)
    rng = np.random.default_rng(0)
    rows = []
    for case in cases:
        medians, notes = time_case(case, peers, repeats, rng)
        rows.append((case.name, medians, notes))
        summary = ", ".join(f"{k} {v * 1e3:.1f}" for k, v in medians.items())
        print(f"  {case.name}: {summary}", flush=True)
    line = None
    if not args.no_compile:
        cold, warm = compile_times()
        line = (f"\nFirst call in a new process (import + compile + run, 2-D linear float32): "
                f"cold cache {cold:.2f} s, warm cache {warm:.2f} s")
    report(format_table(rows, list(peers)), line, args.markdown)

if __name__ == "__main__":
    main()
