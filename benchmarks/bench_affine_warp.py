"""``gridsample.affine_warp`` against the pair it fuses, and against PyTorch's pair.

Run:  python -m benchmarks.bench_affine_warp [--repeats 15] [--case SUBSTRING] [--markdown F]

Each case times, interleaved in one process (medians): ``affine_warp(x, theta)``, the pair
``grid_sample(x, affine_grid(theta))`` it equals bit for bit, and
``F.grid_sample(x, F.affine_grid(theta))`` (torch CPU), all float32, a rotation and zoom
that reaches past the edges.  It also prints the peak memory each gridsample way allocates
beyond the output (``tracemalloc``: NumPy's allocations).
"""

from __future__ import annotations

import tracemalloc

import numpy as np

from benchmarks.timing import case_arguments, interleaved_medians, machine_line, report

CASES = {
    "image 1x3x1024² linear zeros": ((1, 3, 1024, 1024), "linear", "zeros"),
    "image 1x3x1024² nearest border": ((1, 3, 1024, 1024), "nearest", "border"),
    "image 1x3x1024² cubic reflection": ((1, 3, 1024, 1024), "cubic", "reflection"),
    "maps 8x32x128² linear zeros": ((8, 32, 128, 128), "linear", "zeros"),
    "volume 1x1x128³ linear zeros": ((1, 1, 128, 128, 128), "linear", "zeros"),
    "volume 1x1x128³ nearest border": ((1, 1, 128, 128, 128), "nearest", "border"),
    # a spatial transformer's batch (MNIST): small warps, where a call's own cost shows
    "batch 64x1x28² linear zeros": ((64, 1, 28, 28), "linear", "zeros"),
}

TORCH_MODE = {"linear": "bilinear", "nearest": "nearest", "cubic": "bicubic"}


def _theta(batch, rank):
    """A rotation by 0.3 rad in the first two axes, zoomed out by 10% (reaching past the
    edges), shifted a little; one matrix per batch item."""
    t = np.zeros((rank, rank + 1), np.float32)
    c, s = np.cos(0.3) * 1.1, np.sin(0.3) * 1.1
    t[:2, :2] = [[c, -s], [s, c]]
    if rank == 3:
        t[2, 2] = 1.1
    t[:, rank] = 0.05
    return np.broadcast_to(t, (batch, rank, rank + 1)).copy()


def runners(name):
    import gridsample

    shape, mode, padding = CASES[name]
    rank = len(shape) - 2
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    theta = _theta(shape[0], rank)
    run = {
        "affine_warp": lambda: gridsample.affine_warp(x, theta, None, mode, padding),
        "pair": lambda: gridsample.grid_sample(x, gridsample.affine_grid(theta, shape), mode,
                                               padding),
    }
    if mode != "cubic" or rank == 2:
        import torch
        import torch.nn.functional as F

        xt, tt = torch.from_numpy(x), torch.from_numpy(theta)
        tmode = "bilinear" if mode == "linear" else TORCH_MODE[mode]

        def torch_pair():
            with torch.no_grad():
                grid = F.affine_grid(tt, list(shape), align_corners=False)
                return F.grid_sample(xt, grid, tmode, padding, align_corners=False)
        run["torch pair"] = torch_pair
    return run


def extra_peak(call) -> float:
    """MiB that ``call`` allocates at its peak beyond the array it returns."""
    call()
    tracemalloc.start()
    try:
        out = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return (peak - out.nbytes) / 2 ** 20


def main(argv=None):
    args, selected = case_arguments(__doc__, argv, CASES, repeats=15)
    import numba

    print(machine_line())
    print(f"{numba.get_num_threads()} Numba threads, {args.repeats} repeats", flush=True)
    lines = ["| case | affine_warp ms | ÷pair | ÷torch pair | MiB beyond the output: "
             "affine_warp, pair |", "|---|---|---|---|---|"]
    for name in selected:
        run = runners(name)
        med = interleaved_medians(run, args.repeats)
        ours = med["affine_warp"]
        torch_ratio = f"{ours / med['torch pair']:.2f}" if "torch pair" in med else "-"
        lines.append(f"| {name} | {ours * 1e3:.1f} | {ours / med['pair']:.2f} | {torch_ratio} | "
                     f"{extra_peak(run['affine_warp']):.1f}, {extra_peak(run['pair']):.1f} |")
        print("  " + lines[-1], flush=True)
    report("\n".join(lines), None, args.markdown)


if __name__ == "__main__":
    main()
