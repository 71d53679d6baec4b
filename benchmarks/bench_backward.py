"""Backward GridSample: gridsample's gradients against PyTorch's, in one process.

Run:  python -m benchmarks.bench_backward [--quick] [--case SUBSTRING] [--markdown FILE]

Each case computes both gradients (input and grid) of a float32 forward for
a random ``grad_output``: ``gridsample.grid_sample_backward`` against
``torch.autograd.grad`` through ``F.grid_sample`` (the forward graph is
built once, outside the timing; only the backward is timed).  Runners are
timed interleaved, back to back (PyTorch's OpenMP workers wait passively,
``benchmarks.timing``, so none holds a core into the next call; ``--settle``
pauses before each call, as the benchmark did before: after 50 ms idle a
short call took up to 2x its time on the 2-core VMs, gridsample's and
PyTorch's alike), medians reported with the ratio gridsample / torch (< 1:
gridsample faster).  The first-call compile time of the backward is
measured in fresh processes, cold (empty Numba cache) and warm.
"""

from __future__ import annotations

import numpy as np

from benchmarks.bench_forward import default_cases as forward_cases
from benchmarks.timing import (
    SETTLE_SECONDS,
    checked_cases,
    first_call_seconds,
    interleaved_medians,
    machine_line,
    report,
    set_threads,
    table_parser,
)

TORCH_MODE = {"linear": "bilinear", "nearest": "nearest", "cubic": "bicubic"}


#: Forward benchmark cases the backward benchmark leaves out.
_NOT_TIMED = {"maps 1x64x256² linear border", "volume 1x2x96³ nearest",
              "volume 1x128³x1 linear channel-last", "volume 2x64³x4 linear channel-last"}


def default_cases():
    """The forward benchmark's cases, less those in ``_NOT_TIMED``."""
    return [case for case in forward_cases() if case.name not in _NOT_TIMED]


def runners_for(case, rng, baseline=None):
    import torch
    import torch.nn.functional as F

    import gridsample

    x, grid = case.inputs(rng)
    n, c = case.x_shape[:2]
    gout = rng.standard_normal((n, c, *case.out_spatial), dtype=np.float32)
    if case.channel_last:
        gout = np.ascontiguousarray(np.moveaxis(gout, 1, -1))

    def ours():
        gridsample.grid_sample_backward(gout, x, grid, case.mode, case.padding, case.align,
                                        channel_last=case.channel_last)

    # torch: channel-last as a channels_last-strided NCHW tensor (its native form).
    xt = torch.from_numpy(np.moveaxis(x, -1, 1) if case.channel_last else x).requires_grad_()
    gt = torch.from_numpy(grid).requires_grad_()
    y = F.grid_sample(xt, gt, TORCH_MODE[case.mode], case.padding, case.align)
    got = torch.from_numpy(np.moveaxis(gout, -1, 1) if case.channel_last else gout)

    def theirs():
        torch.autograd.grad(y, (xt, gt), got, retain_graph=True)

    runners = {"gridsample": ours, "torch": theirs}
    if baseline is not None:
        name, module = baseline

        def base():
            module.grid_sample_backward(gout, x, grid, case.mode, case.padding, case.align,
                                        channel_last=case.channel_last)

        runners[name] = base
    return runners


def compile_times():
    """First backward call in a new process (import + compile + run): cold and warm cache."""
    return first_call_seconds(
        "import time; t0 = time.perf_counter(); import numpy as np, gridsample; "
        "x = np.ones((1, 3, 64, 64), np.float32); g = np.zeros((1, 32, 32, 2), np.float32); "
        "gridsample.grid_sample_backward(np.ones((1, 3, 32, 32), np.float32), x, g); "
        "print(time.perf_counter() - t0)")


def main(argv=None, fail=None):
    """Run the benchmark with the command-line arguments ``argv`` (``fail``: see
    :func:`benchmarks.timing.table_parser`)."""
    parser = table_parser(__doc__, fail)
    parser.add_argument("--settle", type=float, default=0.0, metavar="SECONDS",
                        help=f"pause before each timed call (default 0; {SETTLE_SECONDS} was "
                             "the default before PyTorch's workers waited passively)")
    args = parser.parse_args(argv)
    all_cases = default_cases()
    selected = checked_cases(parser, args, [c.name for c in all_cases])
    if not args.settle >= 0:
        parser.error(f"argument --settle: must be 0 or more seconds, not {args.settle}")
    if args.threads:
        set_threads(args.threads)
    repeats = args.repeats or (3 if args.quick else 9)
    cases = [c for c in all_cases if c.name in selected]

    import numba
    import torch

    baseline = None
    if args.baseline:
        from benchmarks.baseline import baseline_option

        module, commit = baseline_option(parser, args.baseline)
        baseline = (f"gridsample@{commit}", module)
    print(machine_line())
    print(f"gridsample backward benchmark: {numba.get_num_threads()} threads (torch "
          f"{torch.get_num_threads()}), {repeats} repeats, median ms of both gradients",
          flush=True)
    rng = np.random.default_rng(0)
    head = "| case | gridsample ms | torch ms | ÷torch |"
    rule = "|---|---|---|---|"
    if baseline:
        head += f" {baseline[0]} ms | ÷{baseline[0]} | {baseline[0]} ÷torch |"
        rule += "---|---|---|"
    lines = [head, rule]
    for case in cases:
        med = interleaved_medians(runners_for(case, rng, baseline), repeats,
                                  settle=args.settle)
        ratio = med["gridsample"] / med["torch"]
        row = (f"| {case.name} | {med['gridsample'] * 1e3:.2f} | {med['torch'] * 1e3:.2f} "
               f"| {ratio:.2f} |")
        if baseline:
            b = med[baseline[0]]
            row += f" {b * 1e3:.2f} | {med['gridsample'] / b:.2f} | {b / med['torch']:.2f} |"
        lines.append(row)
        print(f"  {case.name}: gridsample {med['gridsample'] * 1e3:.1f}, torch "
              f"{med['torch'] * 1e3:.1f}, ratio {ratio:.2f}", flush=True)
    line = None
    if not args.no_compile:
        cold, warm = compile_times()
        line = (f"\nFirst backward call in a new process (import + compile + run, 2-D linear "
                f"float32): cold cache {cold:.2f} s, warm cache {warm:.2f} s")
    report("\n".join(lines), line, args.markdown)

if __name__ == "__main__":
    main()
