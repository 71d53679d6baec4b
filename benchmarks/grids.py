"""Benchmark inputs: smooth (rotation + scale + gentle warp) and random grids."""

from __future__ import annotations

import numpy as np


def smooth_grid(batch, out_spatial, *, angle_deg=15.0, scale=0.9, warp=0.02, dtype=np.float32):
    """A rotation + zoom + sinusoidal warp, the typical spatial-transformer grid.

    Returns shape (batch, *out_spatial, r), grid order (x first).
    """
    r = len(out_spatial)
    axes = [np.linspace(-1, 1, n) for n in out_spatial]
    mesh = np.meshgrid(*axes, indexing="ij")  # mesh[k] varies along spatial axis k
    coords = [mesh[r - 1 - a] for a in range(r)]  # grid order: innermost axis first
    t = np.deg2rad(angle_deg)
    x, y = coords[0], coords[1] if r > 1 else np.zeros_like(coords[0])
    rx = scale * (np.cos(t) * x - np.sin(t) * y)
    ry = scale * (np.sin(t) * x + np.cos(t) * y)
    out = [rx, ry] + [scale * c for c in coords[2:]]
    out = out[:r]
    for a in range(r):
        out[a] = out[a] + warp * np.sin(np.pi * 3 * coords[(a + 1) % r])
    grid = np.stack(out, -1)[None]
    return np.broadcast_to(grid, (batch,) + grid.shape[1:]).astype(dtype)


def random_grid(rng, batch, out_spatial, dtype=np.float32):
    r = len(out_spatial)
    return rng.uniform(-1, 1, (batch, *out_spatial, r)).astype(dtype)
