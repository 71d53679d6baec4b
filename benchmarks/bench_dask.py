"""Out-of-core warping with gridsample.dask on a LocalCluster (not a test).

A float32 zarr volume of ``size**3`` voxels on disk, larger than the memory
limit of each worker, is warped into a zarr output

1. by an affine map (``gridsample.dask.affine_warp``, no grid materialized),
2. by a smooth deformation field (``gridsample.dask.grid_sample`` with a lazy
   Dask grid: identity + sinusoidal displacement, made block by block),
3. by ``dask_image.ndinterp.affine_transform`` (scipy, order 1) on the same
   affine job, when dask-image is installed,

each on freshly restarted workers, and reports wall time, the peak resident
memory of each worker process (``ru_maxrss``) and gridsample's time ÷ dask-image's.

    python -m benchmarks.bench_dask --size 512 --memory-limit 400MiB
    python -m benchmarks.bench_dask --size 128 --chunk 32      # a quick run
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import shutil
import tempfile
import time

import numpy as np


def _peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _theta(angle_deg=10.0, scale=1.05, shift=(0.03, -0.02, 0.01)):
    a = math.radians(angle_deg)
    c, s = math.cos(a), math.sin(a)
    # Rotation about the depth axis (mixes x and y), then a zoom and a shift.
    m = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) / scale
    return np.concatenate([m, np.array(shift)[:, None]], 1)[None].astype(np.float32)


def _volume_block(block_info=None):
    info = block_info[None]
    (z0, z1), (y0, y1), (x0, x1) = info["array-location"][2:]
    z, y, x = np.ogrid[z0:z1, y0:y1, x0:x1]
    v = (np.sin(z * 0.05) + np.cos(y * 0.07) * np.sin(x * 0.03 + 0.5 * np.cos(z * 0.02)))
    return v.astype(np.float32)[None, None]


def _deformation_block(size, amplitude, block_info=None):
    """Identity grid (align_corners) + a smooth displacement, for one block."""
    info = block_info[None]
    (z0, z1), (y0, y1), (x0, x1) = info["array-location"][1:4]
    z, y, x = np.ogrid[z0:z1, y0:y1, x0:x1]
    step = 2.0 / (size - 1)
    gz, gy, gx = z * step - 1.0, y * step - 1.0, x * step - 1.0
    k = 2 * math.pi
    dx = amplitude * np.sin(k * gy) * np.cos(k * gz)
    dy = amplitude * np.sin(k * gz) * np.cos(k * gx)
    dz = amplitude * np.sin(k * gx) * np.cos(k * gy)
    shape = (z1 - z0, y1 - y0, x1 - x0)
    grid = np.stack([np.broadcast_to(gx + dx, shape), np.broadcast_to(gy + dy, shape),
                     np.broadcast_to(gz + dz, shape)], -1)
    return grid.astype(np.float32)[None]


def _scipy_affine(theta, size):
    """``theta`` (normalized, align_corners, grid order x, y, z) as scipy's (z, y, x) matrix +
    offset."""
    t = theta[0].astype(np.float64)
    r = 3
    matrix = np.empty((r, r))
    offset = np.empty(r)
    half = (size - 1) / 2.0
    for a in range(r):
        k = r - 1 - a
        for b in range(r):
            matrix[a, b] = t[k, r - 1 - b]
        offset[a] = half * (t[k, r] + 1.0 - t[k, :r].sum())
    return matrix, offset


def _warm(mode):
    """Import gridsample.dask and load the 3-D kernels (Numba's disk cache) in a worker."""
    import gridsample
    import gridsample.dask  # noqa: F401

    x = np.zeros((1, 1, 4, 4, 4), np.float32)
    for m in (mode, "linear"):
        gridsample.grid_sample(x, np.zeros((1, 2, 2, 2, 3), np.float32), m, "reflection", True)
    gridsample.affine_grid(np.eye(3, 4, dtype=np.float32)[None], (1, 1, 2, 2, 2), True)


def _run(client, label, build, out_path, results, mode="linear"):
    import dask.array as da

    client.restart()
    client.run(_warm, mode)  # imports + kernels outside the timing
    base = client.run(_peak_rss)
    t0 = time.perf_counter()
    arr = build()
    da.to_zarr(arr, out_path, overwrite=True, compute=True)
    wall = time.perf_counter() - t0
    peaks = client.run(_peak_rss)
    results[label] = (wall, peaks, base)
    mib = 1 << 20
    per = ", ".join(f"{peaks[w] / mib:.0f} MiB (start {base[w] / mib:.0f})" for w in sorted(peaks))
    print(f"{label:<34} wall {wall:8.2f} s   peak per worker: {per}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=384, help="volume edge (default 384: 216 MiB)")
    p.add_argument("--chunk", type=int, default=64)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="threads per worker")
    p.add_argument("--memory-limit", default="200MiB", help="per worker (default 200MiB)")
    p.add_argument("--mode", default="linear")
    p.add_argument("--dir", default=None, help="where the zarr stores go (default: a temp dir)")
    p.add_argument("--no-dask-image", action="store_true")
    args = p.parse_args(argv)

    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    import gridsample.dask as gdask

    size, chunk = args.size, args.chunk
    workdir = args.dir or tempfile.mkdtemp(prefix="gridsample-bench-dask-")
    os.makedirs(workdir, exist_ok=True)
    vol_path = os.path.join(workdir, "volume.zarr")
    nbytes = 4 * size ** 3
    print(f"volume {size}^3 float32 = {nbytes / (1 << 20):.0f} MiB on disk ({vol_path}); "
          f"chunks {chunk}^3; {args.workers} workers x {args.threads} threads, "
          f"memory limit {args.memory_limit} each", flush=True)

    dask.config.set({"distributed.worker.memory.target": 0.6,
                     "distributed.worker.memory.spill": 0.7,
                     "distributed.worker.memory.pause": 0.85})
    with LocalCluster(n_workers=args.workers, threads_per_worker=args.threads, processes=True,
                      memory_limit=args.memory_limit, dashboard_address=None,
                      silence_logs=40) as cluster, Client(cluster) as client:
        chunks = (1, 1, chunk, chunk, chunk)
        vol = da.map_blocks(_volume_block, chunks=da.core.normalize_chunks(
            chunks, (1, 1, size, size, size)), dtype=np.float32)
        t0 = time.perf_counter()
        da.to_zarr(vol, vol_path, overwrite=True)
        print(f"{'write input volume':<34} wall {time.perf_counter() - t0:8.2f} s", flush=True)

        theta = _theta()
        results = {}
        x = da.from_zarr(vol_path)

        _run(client, "gridsample affine_warp", lambda: gdask.affine_warp(
            da.from_zarr(vol_path), theta, None, args.mode, "zeros", True),
            os.path.join(workdir, "affine.zarr"), results, args.mode)

        def deformed():
            xz = da.from_zarr(vol_path)
            grid = da.map_blocks(_deformation_block, size, 0.02, dtype=np.float32,
                                 chunks=da.core.normalize_chunks(
                                     (1, chunk, chunk, chunk, 3), (1, size, size, size, 3)))
            return gdask.grid_sample(xz, grid, args.mode, "reflection", True)

        _run(client, "gridsample grid_sample (field)", deformed,
             os.path.join(workdir, "deformed.zarr"), results, args.mode)

        have_dask_image = False
        if not args.no_dask_image:
            try:
                from dask_image.ndinterp import affine_transform
                have_dask_image = True
            except ImportError:
                print("dask-image not installed: no comparison (pip install dask-image)")
        if have_dask_image:
            matrix, offset = _scipy_affine(theta, size)
            order = {"linear": 1, "nearest": 0, "cubic": 3}[args.mode]

            def dask_image_job():
                xz = da.from_zarr(vol_path)[0, 0]
                out = affine_transform(xz, matrix, offset=offset, output_shape=xz.shape,
                                       output_chunks=(chunk,) * 3, order=order,
                                       mode="grid-constant")
                return out[None, None]

            _run(client, "dask-image affine_transform", dask_image_job,
                 os.path.join(workdir, "dask_image.zarr"), results)
            ours = results["gridsample affine_warp"][0]
            theirs = results["dask-image affine_transform"][0]
            print(f"gridsample affine ÷ dask-image: {ours / theirs:.2f} (time ratio, < 1 faster)")
            if args.mode == "linear":
                a = da.from_zarr(os.path.join(workdir, "affine.zarr"))
                b = da.from_zarr(os.path.join(workdir, "dask_image.zarr"))
                inner = (0, 0) + (slice(size // 4, 3 * size // 4),) * 3
                diff = float(abs(a[inner] - b[inner]).max().compute())
                print(f"max |gridsample - dask-image| on the inner half: {diff:.2e}")
        del x
    if args.dir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
