"""The options beyond ONNX: each padding against ``"border"``, and push against its peers.

Run:  python -m benchmarks.bench_beyond [--repeats 9] [--case SUBSTRING] [--markdown FILE]

Two tables, every runner of a case timed interleaved in one process (medians):

* paddings: the forward benchmark's image and volume shapes (float32, a smooth
  or a random warp reaching past the edges) with ``"border"`` and with each padding
  gridsample adds (``"constant"`` with a fill of 1, so the fill path runs);
  the ratio is the time ÷ border's.
* push: ``gridsample.grid_push`` against torch-interpol's ``grid_push`` (CPU,
  same positions in voxel units, linear, each with its wrap-around bound) and
  against ``grid_sample_backward``'s input gradient (what push is made of);
  ratios are gridsample's time ÷ the peer's.
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks.timing import interleaved_medians, machine_line, report

PADDINGS = ("border", "zeros", "constant", "mirror", "symmetric", "wrap", "reflection")

SHAPES = {
    "image 1x3x1024² linear": ((1, 3, 1024, 1024), "linear", "smooth"),
    "image 1x3x1024² nearest": ((1, 3, 1024, 1024), "nearest", "smooth"),
    "image 1x3x1024² nearest random": ((1, 3, 1024, 1024), "nearest", "random"),
    "image 1x3x512² cubic": ((1, 3, 512, 512), "cubic", "smooth"),
    "image 1x3x512² cubic random": ((1, 3, 512, 512), "cubic", "random"),
    "volume 1x1x128³ linear": ((1, 1, 128, 128, 128), "linear", "smooth"),
}


def _case(shape, seed=0, kind="smooth"):
    """float32 x and a warp of the same size that reaches 10% past each edge: smooth (the
    identity plus small noise) or random (uniform positions: random memory access)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    spatial = shape[2:]
    if kind == "random":
        return x, rng.uniform(-1.1, 1.1, (1, *spatial, len(spatial))).astype(np.float32)
    axes = [np.linspace(-1.1, 1.1, s, dtype=np.float32) for s in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")
    grid = np.stack(mesh[::-1], -1)[None]
    grid = grid + 0.02 * rng.standard_normal(grid.shape).astype(np.float32)
    return x, grid


def padding_runners(name):
    import gridsample

    shape, mode, kind = SHAPES[name]
    x, grid = _case(shape, kind=kind)

    def runner(padding):
        kw = {"fill_value": 1.0} if padding == "constant" else {}
        return lambda: gridsample.grid_sample(x, grid, mode, padding, **kw)
    return {p: runner(p) for p in PADDINGS}


def push_runners(shape):
    import interpol
    import torch

    import gridsample

    x, grid = _case(shape, seed=1)
    values = np.ones(x.shape, np.float32) + x
    spatial = shape[2:]
    # torch-interpol: voxel coordinates in the array's axis order; gridsample: pixels, x first.
    pixels = ((grid + 1) * np.array(spatial[::-1], np.float32) - 1) / 2
    voxels = torch.from_numpy(np.ascontiguousarray(pixels[..., ::-1]))
    v_t = torch.from_numpy(values)
    return {
        "gridsample": lambda: gridsample.grid_push(values, pixels, spatial, "linear", "wrap",
                                                   grid_units="pixels"),
        "torch-interpol": lambda: interpol.grid_push(v_t, voxels, shape=list(spatial),
                                                     interpolation=1, bound="dft",
                                                     extrapolate=True),
        "backward": lambda: gridsample.grid_sample_backward(
            values, x, pixels, "linear", "wrap", grid_units="pixels",
            output_mask=(True, False)),
    }


PUSH_SHAPES = {"push image 1x3x1024² linear wrap": (1, 3, 1024, 1024),
               "push volume 1x1x128³ linear wrap": (1, 1, 128, 128, 128)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--case", action="append", default=[],
                        help="only cases whose name contains this (repeatable)")
    parser.add_argument("--markdown", default=None, help="also write the tables to this file")
    args = parser.parse_args(argv)
    import numba

    def wanted(name):
        return not args.case or any(s in name for s in args.case)

    print(machine_line())
    print(f"{numba.get_num_threads()} Numba threads, {args.repeats} repeats", flush=True)
    lines = ["| case | border ms | " + " | ".join(f"{p} ÷border" for p in PADDINGS[1:]) + " |",
             "|---|---|" + "---|" * (len(PADDINGS) - 1)]
    for name in SHAPES:
        if not wanted(name):
            continue
        med = interleaved_medians(padding_runners(name), args.repeats)
        ratios = " | ".join(f"{med[p] / med['border']:.2f}" for p in PADDINGS[1:])
        lines.append(f"| {name} | {med['border'] * 1e3:.1f} | {ratios} |")
        print("  " + lines[-1], flush=True)
    lines += ["", "| case | gridsample ms | ÷torch-interpol | ÷input gradient |",
              "|---|---|---|---|"]
    try:
        import interpol  # noqa: F401
    except ImportError:
        lines.append("| (torch-interpol not installed) | | | |")
    else:
        for name, shape in PUSH_SHAPES.items():
            if not wanted(name):
                continue
            med = interleaved_medians(push_runners(shape), args.repeats)
            ours = med["gridsample"]
            lines.append(f"| {name} | {ours * 1e3:.1f} | {ours / med['torch-interpol']:.2f} | "
                         f"{ours / med['backward']:.2f} |")
            print("  " + lines[-1], flush=True)
    report("\n".join(lines), None, args.markdown)


if __name__ == "__main__":
    main()
