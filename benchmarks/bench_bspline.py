"""Cubic B-spline sampling against SciPy and torch-interpol, prefilter included and excluded.

Run:  python -m benchmarks.bench_bspline [--repeats 7] [--case SUBSTRING] [--markdown FILE]

For each case (float32 x, a smooth warp 10% past the edges, ``"mirror"``
boundaries: SciPy's ``mode="mirror"``, torch-interpol's ``bound="dct1"``)
every runner is timed interleaved in one process (medians):

* with the prefilter: ``gridsample.grid_sample(x, grid, "bspline3", "mirror")``,
  ``scipy.ndimage.map_coordinates(order=3, prefilter=True)`` per channel (SciPy
  is single-threaded and filters in float64), torch-interpol's
  ``spline_coeff_nd`` + ``grid_pull`` (CPU);
* without it (coefficients given): the same with ``prefilter=False``,
  ``map_coordinates(prefilter=False)`` and ``grid_pull`` alone; and gridsample's
  ``"cubic"`` (Keys) on the same grid, which ``bspline3`` should stay close to.

Ratios are gridsample's time ÷ the peer's.
"""

from __future__ import annotations

import numpy as np

from benchmarks.timing import case_arguments, interleaved_medians, machine_line, report

CASES = {"image 1x3x1024²": (1, 3, 1024, 1024), "volume 1x1x128³": (1, 1, 128, 128, 128)}


def _case(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    spatial = shape[2:]
    axes = [np.linspace(-1.1, 1.1, s, dtype=np.float32) for s in spatial]
    grid = np.stack(np.meshgrid(*axes, indexing="ij")[::-1], -1)[None]
    grid = grid + 0.02 * rng.standard_normal(grid.shape).astype(np.float32)
    return x, grid


def runners(shape, peers):
    import gridsample

    x, grid = _case(shape)
    spatial = shape[2:]
    # Element coordinates (align_corners=False), in x's axis order for the peers.
    pixels = ((grid[0] + 1) * np.array(spatial[::-1], np.float32) - 1) / 2
    coords = np.moveaxis(pixels[..., ::-1], -1, 0).astype(np.float64)
    coeffs = gridsample.spline_coefficients(x, 3, "mirror")
    run = {
        "gridsample": lambda: gridsample.grid_sample(x, grid, "bspline3", "mirror"),
        "gridsample coefficients": lambda: gridsample.grid_sample(coeffs, grid, "bspline3",
                                                                  "mirror", prefilter=False),
        "gridsample cubic": lambda: gridsample.grid_sample(x, grid, "cubic", "mirror"),
    }
    if "scipy" in peers:
        from scipy import ndimage

        c64 = coeffs.astype(np.float64)

        def scipy_pull(values, prefilter):
            return [ndimage.map_coordinates(values[0, c], coords, order=3, mode="mirror",
                                            prefilter=prefilter) for c in range(shape[1])]
        run["scipy"] = lambda: scipy_pull(x, True)
        run["scipy coefficients"] = lambda: scipy_pull(c64, False)
    if "torch-interpol" in peers:
        import interpol
        import torch

        xt = torch.from_numpy(x)
        ct = torch.from_numpy(coeffs)
        voxels = torch.from_numpy(np.ascontiguousarray(np.moveaxis(coords, 0, -1),
                                                       np.float32))[None]
        dim = len(spatial)

        def interpol_pull(values, prefilter):
            if prefilter:
                values = interpol.spline_coeff_nd(values, interpolation=3, bound="dct1",
                                                  dim=dim)
            return interpol.grid_pull(values, voxels, interpolation=3, bound="dct1",
                                      extrapolate=True)
        run["torch-interpol"] = lambda: interpol_pull(xt, True)
        run["torch-interpol coefficients"] = lambda: interpol_pull(ct, False)
    return run


def _peers() -> list:
    found = []
    for name, module in (("scipy", "scipy.ndimage"), ("torch-interpol", "interpol")):
        try:
            __import__(module)
            found.append(name)
        except ImportError:
            pass
    return found


def main(argv=None):
    args, selected = case_arguments(__doc__, argv, CASES)
    import numba

    peers = _peers()
    print(machine_line())
    print(f"{numba.get_num_threads()} Numba threads, {args.repeats} repeats", flush=True)
    lines = ["| case | prefilter | gridsample ms | ÷SciPy | ÷torch-interpol | ÷cubic |",
             "|---|---|---|---|---|---|"]
    for name in selected:
        shape = CASES[name]
        med = interleaved_medians(runners(shape, peers), args.repeats)
        for label, suffix in (("included", ""), ("excluded", " coefficients")):
            ours = med["gridsample" + suffix]
            cells = [f"{ours / med[p + suffix]:.2f}" if p + suffix in med else "–"
                     for p in ("scipy", "torch-interpol")]
            cubic = f"{ours / med['gridsample cubic']:.2f}" if suffix else "–"
            lines.append(f"| {name} bspline3 mirror | {label} | {ours * 1e3:.1f} | "
                         f"{' | '.join(cells)} | {cubic} |")
            print("  " + lines[-1], flush=True)
    report("\n".join(lines), None, args.markdown)


if __name__ == "__main__":
    main()
