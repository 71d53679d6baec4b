"""Element types: float16, bfloat16 and uint8 against gridsample's own float32.

Run:  python -m benchmarks.bench_dtypes [--quick] [--no-memory]

Part 1 times the same warp (2-D image 1x3x1024² and 3-D volume 1x1x128³,
linear, smooth float32 grid) for X of each type, interleaved, and prints the
ratio to the float32 time (the issue's target: <= 1.2).  PyTorch's float16
and bfloat16 CPU path is timed beside it where it runs (it returns NaN for
images above 32768 pixels, so its result is not checked here).

Part 2 measures peak memory in a fresh process: a 1x3x4096² float16 image
warped with a float32 and with a float16 grid.  The peak resident set is
reset (``/proc/self/clear_refs``) after the inputs exist, and
``(peak - resident before the inputs) / (inputs + output)`` is reported;
1.0 means nothing but the inputs and the output was ever resident.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import numpy as np

from benchmarks.grids import smooth_grid
from benchmarks.timing import interleaved_medians

CASES = [("image 1x3x1024² linear", (1, 3, 1024, 1024), (1024, 1024)),
         ("volume 1x1x128³ linear", (1, 1, 128, 128, 128), (128, 128, 128))]


def _dtypes():
    import ml_dtypes

    return {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
            "bfloat16": np.dtype(ml_dtypes.bfloat16), "uint8": np.dtype(np.uint8)}


def time_types(x_shape, out_spatial, repeats):
    import gridsample

    rng = np.random.default_rng(0)
    base = rng.standard_normal(x_shape, dtype=np.float32)
    grid = np.ascontiguousarray(smooth_grid(x_shape[0], out_spatial))
    runners = {}
    for name, dt in _dtypes().items():
        x = (np.clip(base * 40 + 128, 0, 255) if name == "uint8" else base).astype(dt)
        runners[name] = (lambda x=x: gridsample.grid_sample(x, grid))
    try:
        import torch

        gt = torch.from_numpy(grid)
        for name, tdt in (("torch float32", torch.float32), ("torch float16", torch.float16),
                          ("torch bfloat16", torch.bfloat16)):
            xt = torch.from_numpy(base).to(tdt)
            runners[name] = (lambda xt=xt, g=gt.to(tdt):  # noqa: B008 - bound per dtype
                             torch.nn.functional.grid_sample(xt, g, align_corners=False))
    except ImportError:
        pass
    return interleaved_medians(runners, repeats)


_MEMORY_CODE = r"""
import sys, numpy as np, ml_dtypes, gridsample
def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
grid_dtype = np.dtype(sys.argv[1])
h = w = 4096
small = np.zeros((1, 3, 8, 8), np.float16)
gridsample.grid_sample(small, np.zeros((1, 4, 4, 2), grid_dtype))  # compile first
before = status("VmRSS")
x = np.random.default_rng(0).standard_normal((1, 3, h, w), dtype=np.float32).astype(np.float16)
ys, xs = np.meshgrid(np.linspace(-1, 1, h, dtype=np.float32),
                     np.linspace(-1, 1, w, dtype=np.float32), indexing="ij")
grid = np.empty((1, h, w, 2), grid_dtype)
grid[0, ..., 0] = 0.9 * xs + 0.1 * ys
grid[0, ..., 1] = -0.1 * xs + 0.9 * ys
del xs, ys
open("/proc/self/clear_refs", "w").write("5")  # reset the peak to the current RSS
out = gridsample.grid_sample(x, grid)
peak = status("VmHWM")
useful = x.nbytes + grid.nbytes + out.nbytes
print(peak - before, useful)
"""


def peak_memory(grid_dtype: str):
    out = subprocess.run([sys.executable, "-c", _MEMORY_CODE, grid_dtype], capture_output=True,
                         text=True, check=True)
    extra, useful = map(int, out.stdout.split())
    return extra, useful


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats instead of 9")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else 9
    names = list(_dtypes())
    print("| case | " + " | ".join(f"{n} ms" for n in names) + " | "
          + " | ".join(f"{n} ÷float32" for n in names[1:])
          + " | torch float32 / float16 / bfloat16 ms |")
    print("|" + "---|" * (2 * len(names) + 1))
    for label, x_shape, out_spatial in CASES:
        med = time_types(x_shape, out_spatial, repeats)
        f32 = med["float32"]
        torch_cell = " / ".join(f"{med[k] * 1e3:.1f}" for k in
                                ("torch float32", "torch float16", "torch bfloat16") if k in med)
        print(f"| {label} | " + " | ".join(f"{med[n] * 1e3:.2f}" for n in names) + " | "
              + " | ".join(f"{med[n] / f32:.2f}" for n in names[1:]) + f" | {torch_cell} |",
              flush=True)
    if args.no_memory:
        return
    print()
    print("| peak memory, 1x3x4096² float16 image, linear | inputs + output MiB "
          "| peak above start MiB | ratio |")
    print("|---|---|---|---|")
    for gdt in ("float32", "float16"):
        extra, useful = peak_memory(gdt)
        print(f"| {gdt} grid | {useful / 2**20:.0f} | {extra / 2**20:.0f} "
              f"| {extra / useful:.2f} |", flush=True)


if __name__ == "__main__":
    main()
