"""gridsample.torch (autograd) and gridsample.cann (CANN/ATen entry points).

Oracles: PyTorch's own ``F.grid_sample`` and its autograd (float64, 2-D and
3-D), ATen's ``grid_sampler_2d/3d`` and their ``_backward`` ops (the very
entry points gridsample.cann mirrors), and ``torch.autograd.gradcheck``
(central differences) for the ranks and modes PyTorch lacks.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import gridsample  # noqa: E402
import gridsample.cann as cann  # noqa: E402
import gridsample.reference  # noqa: E402
import gridsample.torch as gt  # noqa: E402
from conftest import PADDINGS  # noqa: E402

TORCH_MODES = ("bilinear", "nearest", "bicubic")
ATOL = 1e-10  # float64 sums of a few dozen O(1) terms: far above rounding, far below any bug


def _inputs(rng, x_shape, out_spatial, spread=1.3, requires_grad=True):
    r = len(x_shape) - 2
    x = torch.from_numpy(rng.standard_normal(x_shape)).requires_grad_(requires_grad)
    grid = rng.uniform(-spread, spread, (x_shape[0], *out_spatial, r))
    return x, torch.from_numpy(grid).requires_grad_(requires_grad)


def _grads(fn, x, grid, gout):
    y = fn(x, grid)
    return (y, *torch.autograd.grad(y, (x, grid), gout))


@pytest.mark.parametrize("mode", TORCH_MODES)
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("align", (False, True))
def test_matches_torch_2d(rng, mode, padding, align):
    x, grid = _inputs(rng, (2, 3, 6, 7), (5, 4))
    gout = torch.from_numpy(rng.standard_normal((2, 3, 5, 4)))
    ours = _grads(lambda a, b: gt.grid_sample(a, b, mode, padding, align), x, grid, gout)
    ref = _grads(lambda a, b: F.grid_sample(a, b, mode, padding, align), x, grid, gout)
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=ATOL)


@pytest.mark.parametrize("mode", ("bilinear", "nearest"))
@pytest.mark.parametrize("padding", PADDINGS)
def test_matches_torch_3d(rng, mode, padding):
    x, grid = _inputs(rng, (2, 2, 4, 5, 6), (3, 4, 2))
    gout = torch.from_numpy(rng.standard_normal((2, 2, 3, 4, 2)))
    ours = _grads(lambda a, b: gt.grid_sample(a, b, mode, padding, False), x, grid, gout)
    ref = _grads(lambda a, b: F.grid_sample(a, b, mode, padding, False), x, grid, gout)
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=ATOL)


def _smooth_grid(rng, batch, out_spatial):
    """Grid values whose pixel coordinates stay >= 0.1 pixel from the kinks.

    gradcheck differentiates numerically with eps = 1e-6 on the grid; the
    interpolation has kinks where a coordinate crosses an integer (linear,
    cubic's piecewise weights) or a half-integer (nearest), and where
    border/reflection clip.  Sampling the fractional parts of the pixel
    coordinates in [0.2, 0.4] and staying inside the input keeps every
    perturbed point on the smooth side.  (Sizes here are 5: x = g*2 + 2 with
    align_corners=True.)
    """
    r = len(out_spatial)
    whole = rng.integers(1, 3, (batch, *out_spatial, r))
    frac = rng.uniform(0.2, 0.4, (batch, *out_spatial, r))
    pixel = whole + frac                     # in [1.2, 3.4] of [0, 4]
    return (pixel / 2.0) - 1.0               # align_corners=True, S = 5


@pytest.mark.parametrize("rank", (1, 2, 3, 4))
@pytest.mark.parametrize("mode", TORCH_MODES)
def test_gradcheck_every_rank_and_mode(rng, rank, mode):
    out = (2,) * rank  # 2**r points; 4-D bicubic reads 4**4 = 256 taps per point
    x = torch.from_numpy(rng.standard_normal((1, 2) + (5,) * rank)).requires_grad_()
    grid = torch.from_numpy(_smooth_grid(rng, 1, out)).requires_grad_()
    for padding in PADDINGS:
        assert torch.autograd.gradcheck(
            lambda a, b, padding=padding: gt.grid_sample(a, b, mode, padding, True), (x, grid),
            eps=1e-6,
            atol=1e-7, rtol=1e-5)


def test_channel_last_and_broadcast_grid(rng):
    x, _ = _inputs(rng, (3, 2, 6, 5), (4, 4))
    grid = torch.from_numpy(rng.uniform(-1.2, 1.2, (1, 4, 4, 2))).requires_grad_()
    gout = torch.from_numpy(rng.standard_normal((3, 2, 4, 4)))
    ref = _grads(lambda a, b: F.grid_sample(a, b.expand(3, -1, -1, -1), "bicubic", "reflection",
                                            False), x, grid, gout)
    xl = x.detach().movedim(1, -1).contiguous().requires_grad_()
    ours = _grads(lambda a, b: gt.grid_sample(a, b, "bicubic", "reflection", False,
                                              channel_last=True), xl, grid, gout.movedim(1, -1))
    torch.testing.assert_close(ours[0], ref[0].movedim(1, -1), atol=ATOL, rtol=ATOL)
    torch.testing.assert_close(ours[1], ref[1].movedim(1, -1), atol=ATOL, rtol=ATOL)
    torch.testing.assert_close(ours[2], ref[2], atol=ATOL, rtol=ATOL)


def test_warns_like_torch_when_align_corners_is_none(rng):
    x, grid = _inputs(rng, (1, 1, 4, 4), (2, 2), requires_grad=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = gt.grid_sample(x, grid)
        ref = F.grid_sample(x, grid)
    kinds = [w.category for w in caught]
    assert kinds == [UserWarning, UserWarning]
    assert "align_corners" in str(caught[0].message)
    torch.testing.assert_close(ours, ref, atol=ATOL, rtol=ATOL)


def test_zero_copy_and_only_requested_gradients(rng):
    x, grid = _inputs(rng, (1, 2, 8, 8), (4, 4))
    y = gt.grid_sample(x, grid.detach(), "bilinear", "zeros", False)
    y.sum().backward()
    assert grid.grad is None and x.grad is not None
    # The output shares memory with the NumPy result: writing through it is seen.
    a = y.detach().numpy()
    a[0, 0, 0, 0] = 123.0
    assert y[0, 0, 0, 0].item() == 123.0


def test_half_types_forward_and_backward(rng):
    x = torch.from_numpy(rng.standard_normal((1, 2, 6, 6)).astype(np.float32))
    grid = torch.from_numpy(rng.uniform(-1, 1, (1, 3, 3, 2)).astype(np.float32))
    for dtype in (torch.float16, torch.bfloat16):
        xh = x.to(dtype).requires_grad_()
        y = gt.grid_sample(xh, grid, "bilinear", "border", False)
        assert y.dtype == dtype
        expected = gridsample.grid_sample(xh.detach().float().numpy(), grid.numpy(), "linear",
                                          "border", False)
        torch.testing.assert_close(y.float(), torch.from_numpy(expected).to(dtype).float())
        y.float().sum().backward()
        assert xh.grad.dtype == dtype


def test_any_rank_and_3d_cubic_run_where_torch_refuses(rng):
    x, grid = _inputs(rng, (1, 1, 4, 4, 4), (2, 2, 2), requires_grad=False)
    with pytest.raises(RuntimeError):
        F.grid_sample(x, grid, "bicubic", align_corners=False)
    y = gt.grid_sample(x, grid, "bicubic", align_corners=False)
    ref = gridsample.reference.grid_sample(x.numpy(), grid.numpy(), "cubic", "zeros", False)
    np.testing.assert_allclose(y.numpy(), ref, atol=1e-12)


def test_errors():
    x = torch.zeros(1, 1, 4, 4)
    grid = torch.zeros(1, 2, 2, 2)
    with pytest.raises(gridsample.GridSampleError, match="mode"):
        gt.grid_sample(x, grid, "area", align_corners=False)
    with pytest.raises(gridsample.GridSampleTypeError, match="input"):
        gt.grid_sample(x.numpy(), grid, align_corners=False)


# --- gridsample.cann against ATen's own entry points -----------------------------------------

@pytest.mark.parametrize("interp", (0, 1, 2))
@pytest.mark.parametrize("padding", (0, 1, 2))
@pytest.mark.parametrize("align", (False, True))
def test_cann_2d_matches_aten(rng, interp, padding, align):
    x, grid = _inputs(rng, (2, 3, 5, 6), (4, 3), requires_grad=False)
    gout = torch.from_numpy(rng.standard_normal((2, 3, 4, 3)))
    ours = cann.grid_sampler_2d(x.numpy(), grid.numpy(), interp, padding, align)
    ref = torch.grid_sampler_2d(x, grid, interp, padding, align)
    np.testing.assert_allclose(ours, ref.numpy(), atol=ATOL, rtol=ATOL)
    gx, gg = cann.grid_sampler_2d_backward(gout.numpy(), x.numpy(), grid.numpy(), interp,
                                           padding, align, (True, True))
    rx, rg = torch.ops.aten.grid_sampler_2d_backward(gout, x, grid, interp, padding, align,
                                                     [True, True])
    np.testing.assert_allclose(gx, rx.numpy(), atol=ATOL, rtol=ATOL)
    np.testing.assert_allclose(gg, rg.numpy(), atol=ATOL, rtol=ATOL)


@pytest.mark.parametrize("interp", (0, 1))
@pytest.mark.parametrize("padding", (0, 1, 2))
def test_cann_3d_matches_aten(rng, interp, padding):
    x, grid = _inputs(rng, (1, 2, 4, 5, 3), (3, 2, 4), requires_grad=False)
    gout = torch.from_numpy(rng.standard_normal((1, 2, 3, 2, 4)))
    ours = cann.grid_sampler_3d(x.numpy(), grid.numpy(), interp, padding, True)
    np.testing.assert_allclose(ours, torch.grid_sampler_3d(x, grid, interp, padding, True),
                               atol=ATOL, rtol=ATOL)
    gx, gg = cann.grid_sampler_3d_backward(gout.numpy(), x.numpy(), grid.numpy(), interp,
                                           padding, True, (False, True))
    _, rg = torch.ops.aten.grid_sampler_3d_backward(gout, x, grid, interp, padding, True,
                                                    [True, True])
    assert gx is None
    np.testing.assert_allclose(gg, rg.numpy(), atol=ATOL, rtol=ATOL)


def test_cann_graph_mode(rng):
    x, grid = _inputs(rng, (1, 3, 6, 5), (4, 4), requires_grad=False)
    expected = F.grid_sample(x, grid, "bicubic", "reflection", True).numpy()
    xl = np.moveaxis(x.numpy(), 1, -1)
    for scheduler_mode in (0, 1):
        out = cann.grid_sample(xl, grid.numpy(), "bicubic", "reflection", True,
                               channel_last=True, scheduler_mode=scheduler_mode)
        np.testing.assert_allclose(out, np.moveaxis(expected, 1, -1), atol=ATOL, rtol=ATOL)
    out = cann.grid_sample(x.numpy(), grid.numpy(), 2, 2, True)
    np.testing.assert_allclose(out, expected, atol=ATOL, rtol=ATOL)


@pytest.mark.parametrize("call, match", [
    (lambda x4, x5, g2, g3: cann.grid_sampler_2d(x5, g3, 0, 0, False), "input has shape"),
    (lambda x4, x5, g2, g3: cann.grid_sampler_3d(x4, g2, 0, 0, False), "input has shape"),
    (lambda x4, x5, g2, g3: cann.grid_sampler_2d(x4, g3, 0, 0, False), "grid has shape"),
    (lambda x4, x5, g2, g3: cann.grid_sampler_2d(x4, g2, "bilinear", 0, False),
     "interpolation_mode"),
    (lambda x4, x5, g2, g3: cann.grid_sampler_2d(x4, g2, 0, 3, False), "padding_mode=3"),
    (lambda x4, x5, g2, g3: cann.grid_sampler_2d(x4, g2, True, 0, False), "interpolation_mode"),
    (lambda x4, x5, g2, g3: cann.grid_sample(x4, g2, scheduler_mode=2), "scheduler_mode=2"),
    # the argument's own name, and only the modes CANN defines among those allowed
    (lambda x4, x5, g2, g3: cann.grid_sample(x4, g2, interpolation_mode=-1),
     r"^interpolation_mode=-1 is not a valid code; allowed: 'linear', 'bilinear', 'trilinear', "
     r"'nearest', 'cubic', 'bicubic', 'tricubic' or the integer codes 0 \(linear\), 1 "
     r"\(nearest\), 2 \(cubic\)$"),
    (lambda x4, x5, g2, g3: cann.grid_sample(x4, g2, interpolation_mode="bspline3"),
     r"^interpolation_mode='bspline3' is not defined by CANN's GridSample"),
    (lambda x4, x5, g2, g3: cann.grid_sample(x4, g2, interpolation_mode=True),
     r"^interpolation_mode=True is a bool"),
    (lambda x4, x5, g2, g3: cann.grid_sample(x4, g2, padding_mode=7),
     r"^padding_mode=7 is not a valid code; allowed: 'zeros', 'border', 'reflection' or the "
     r"integer codes 0 \(zeros\), 1 \(border\), 2 \(reflection\)$"),
    (lambda x4, x5, g2, g3: cann.grid_sample(x4, g2, scheduler_mode="fast"), "scheduler_mode"),
    (lambda x4, x5, g2, g3: cann.grid_sample(x4[0], g2[0]), "x has shape"),
    (lambda x4, x5, g2, g3: cann.grid_sampler_2d_backward(np.zeros((1, 1, 3, 3)), x4, g2, 0, 0,
                                                          False, (True, True)), "grad_output"),
])
def test_cann_errors_name_the_argument(call, match):
    x4, x5 = np.zeros((1, 1, 4, 4)), np.zeros((1, 1, 4, 4, 4))
    g2, g3 = np.zeros((1, 2, 2, 2)), np.zeros((1, 2, 2, 2, 3))
    with pytest.raises(gridsample.GridSampleError, match=match):
        call(x4, x5, g2, g3)
