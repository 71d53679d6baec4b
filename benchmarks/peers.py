"""Adapters that run one forward GridSample with each peer library.

Each ``make_*`` returns a zero-argument callable computing the result on
prepared inputs (conversions happen outside the timed call), or raises
``Unsupported`` with the reason.  Peers are imported lazily: a missing
library just drops its column.
"""

from __future__ import annotations

import os

import numpy as np

import gridsample


class Unsupported(Exception):
    pass


TORCH_MODE = {"linear": "bilinear", "nearest": "nearest", "cubic": "bicubic"}


def make_gridsample_of(module):
    """A ``make_*`` adapter for a gridsample module (this one, or another revision's)."""
    def make(x, grid, mode, padding, align, channel_last):
        return lambda: module.grid_sample(x, grid, mode, padding, align,
                                          channel_last=channel_last)

    return make


make_gridsample = make_gridsample_of(gridsample)


def make_torch(x, grid, mode, padding, align, channel_last):
    import torch

    if mode == "cubic" and grid.shape[-1] != 2:
        raise Unsupported("no 3-D cubic")
    if grid.shape[-1] not in (2, 3):
        raise Unsupported("rank")
    xt = torch.from_numpy(np.ascontiguousarray(np.moveaxis(x, -1, 1) if channel_last else x))
    if channel_last:  # torch's channels_last memory format, the fair equivalent
        fmt = torch.channels_last if x.ndim == 4 else torch.channels_last_3d
        xt = xt.contiguous(memory_format=fmt)
    gt = torch.from_numpy(grid)  # (strided grids as they are: PyTorch reads them in place)
    f = torch.nn.functional.grid_sample

    def run():
        with torch.no_grad():
            return f(xt, gt, mode=TORCH_MODE[mode], padding_mode=padding, align_corners=align)

    return run


def make_onnxruntime(x, grid, mode, padding, align, channel_last):
    import onnxruntime as ort
    from onnx import TensorProto, helper

    if channel_last:
        raise Unsupported("no channel-last")
    if mode == "cubic" and grid.shape[-1] == 3:
        raise Unsupported("no 5-D cubic")
    elem = TensorProto.FLOAT if x.dtype == np.float32 else TensorProto.DOUBLE
    node = helper.make_node("GridSample", ["X", "G"], ["Y"], mode=mode, padding_mode=padding,
                            align_corners=int(align))
    graph = helper.make_graph(
        [node], "gs",
        [helper.make_tensor_value_info("X", elem, list(x.shape)),
         helper.make_tensor_value_info("G", elem, list(grid.shape))],
        [helper.make_tensor_value_info("Y", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    sess = ort.InferenceSession(model.SerializeToString(), ort_session_options(),
                                providers=["CPUExecutionProvider"])
    feeds = {"X": np.ascontiguousarray(x), "G": np.ascontiguousarray(grid)}
    return lambda: sess.run(None, feeds)[0]


def ort_session_options():
    """onnxruntime options for fair interleaved timing.

    By default onnxruntime's worker threads keep spinning after a run
    finishes, taking a core from whatever runs next in the same process
    (measured: gridsample 7.7 ms alone, 11.6 ms right after onnxruntime; 6.1 ms
    with spinning off, and onnxruntime itself was not slower).
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if os.environ.get("ORT_THREADS"):  # benchmarks' --threads (timing.set_threads)
        opts.intra_op_num_threads = int(os.environ["ORT_THREADS"])
    opts.log_severity_level = 4  # errors are raised as exceptions anyway
    return opts


def _pixel_maps(grid, in_spatial, align):
    """Unnormalized (x, y) maps for cv2.remap / scipy (float32)."""
    maps = []
    for a, size in enumerate(in_spatial[::-1]):
        g = grid[..., a].astype(np.float64)
        m = (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2
        maps.append(m.astype(np.float32))
    return maps


def make_opencv(x, grid, mode, padding, align, channel_last):
    import cv2

    if grid.shape[-1] != 2:
        raise Unsupported("2-D only")
    if x.shape[0] != 1:
        raise Unsupported("single image")
    image = x[0] if channel_last else np.moveaxis(x[0], 0, -1)
    if image.shape[-1] > 4:
        raise Unsupported("<= 4 channels")
    image = np.ascontiguousarray(image)
    in_spatial = image.shape[:2]
    mx, my = _pixel_maps(grid[0], in_spatial, align)
    interp = {"linear": cv2.INTER_LINEAR, "nearest": cv2.INTER_NEAREST, "cubic": cv2.INTER_CUBIC}
    border = {"zeros": cv2.BORDER_CONSTANT, "border": cv2.BORDER_REPLICATE,
              "reflection": cv2.BORDER_REFLECT}
    return lambda: cv2.remap(image, mx, my, interp[mode], borderMode=border[padding])


def make_scipy(x, grid, mode, padding, align, channel_last):
    from scipy import ndimage

    if channel_last:
        raise Unsupported("channel-first only")
    order = {"linear": 1, "nearest": 0, "cubic": 3}[mode]
    smode = {"zeros": "constant", "border": "nearest", "reflection": "reflect"}[padding]
    maps = [_pixel_maps(grid[min(n, grid.shape[0] - 1)], x.shape[2:], align)[::-1]
            for n in range(x.shape[0])]

    def run():
        out = np.empty(x.shape[:2] + grid.shape[1:-1], x.dtype)
        for n in range(x.shape[0]):
            coords = np.stack(maps[n])
            for c in range(x.shape[1]):
                out[n, c] = ndimage.map_coordinates(x[n, c], coords, order=order, mode=smode,
                                                    prefilter=False)
        return out

    return run


PEERS = {
    "torch": make_torch,
    "onnxruntime": make_onnxruntime,
    "opencv": make_opencv,
    "scipy": make_scipy,
}
