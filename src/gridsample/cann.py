"""CANN / ATen-style entry points on the CPU.

Huawei CANN's GridSample (and PyTorch's ATen underneath
``F.grid_sample``) name the operator by rank and pass options as integer
codes; this module offers those signatures over gridsample's kernels, for
NumPy arrays (anything ``np.asarray`` takes):

* ``grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)``
  and ``grid_sampler_3d(...)``: ``interpolation_mode`` 0 bilinear, 1 nearest,
  2 bicubic; ``padding_mode`` 0 zeros, 1 border, 2 reflection.  The rank is
  checked: 4-D input for 2-D, 5-D for 3-D.  Unlike CANN, 3-D bicubic is
  supported (docs/semantics.md §4, for every rank).
* ``grid_sampler_2d_backward(grad_output, input, grid, interpolation_mode,
  padding_mode, align_corners, output_mask)`` and the 3-D one: returns
  ``(grad_input, grad_grid)``, ``None`` where ``output_mask`` is False.
* ``grid_sample(x, grid, interpolation_mode="bilinear", padding_mode="zeros",
  align_corners=False, channel_last=False, scheduler_mode=1)``: the graph-mode
  operator with its attributes; 4-D or 5-D ``x`` (NHWC / NDHWC with
  ``channel_last``).

``scheduler_mode`` is CANN's choice of NPU schedule for channel-last input
(0: general, 1: sliding window).  It selects how the NPU tiles the work and
never changes results; on the CPU gridsample computes channel-last natively
with one schedule, so the value is validated (0 or 1) and otherwise has no
effect.

Names and codes map to the same rules as :func:`gridsample.grid_sample`;
errors are :class:`gridsample.GridSampleError` naming the argument.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._api import grid_sample as _grid_sample
from ._backward import grid_sample_backward as _grid_sample_backward
from ._errors import GridSampleError, GridSampleTypeError, describe
from ._options import parse_onnx_mode, parse_onnx_padding
from ._plan import as_array

__all__ = ["grid_sampler_2d", "grid_sampler_3d", "grid_sampler_2d_backward",
           "grid_sampler_3d_backward", "grid_sample"]


def _code(name: str, value) -> int:
    """An integer code 0, 1 or 2 (the CANN/ATen entry points take codes only)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise GridSampleTypeError(
            f"{name}={describe(value)} has type {type(value).__name__}; the CANN entry points "
            f"take the integer codes 0, 1, 2 (use gridsample.grid_sample for names)")
    if int(value) not in (0, 1, 2):
        raise GridSampleError(f"{name}={value!r} is not a valid code; allowed: 0, 1, 2")
    return int(value)


def _check_rank(name: str, array, rank: int, entry: str) -> np.ndarray:
    array = as_array(name, array)
    if array.ndim != rank:
        raise GridSampleError(
            f"{name} has shape {array.shape}; {entry} expects a {rank}-D {name} "
            f"({'(N, C, H, W)' if rank == 4 else '(N, C, D, H, W)'} for input, "
            f"{'(N, H, W, 2)' if rank == 4 else '(N, D, H, W, 3)'} for grid)")
    return array


def _sampler(entry, rank, input, grid, interpolation_mode, padding_mode, align_corners):
    mode = _code("interpolation_mode", interpolation_mode)
    padding = _code("padding_mode", padding_mode)
    x = _check_rank("input", input, rank, entry)
    g = _check_rank("grid", grid, rank, entry)
    return _grid_sample(x, g, mode, padding, align_corners)


def _sampler_backward(entry, rank, grad_output, input, grid, interpolation_mode, padding_mode,
                      align_corners, output_mask):
    mode = _code("interpolation_mode", interpolation_mode)
    padding = _code("padding_mode", padding_mode)
    x = _check_rank("input", input, rank, entry)
    g = _check_rank("grid", grid, rank, entry)
    return _grid_sample_backward(grad_output, x, g, mode, padding, align_corners,
                                 output_mask=output_mask)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """ATen/CANN ``grid_sampler_2d``: 4-D input, integer codes.

    Parameters
    ----------
    input : array_like, shape (N, C, H_in, W_in)
    grid : array_like, shape (N, H_out, W_out, 2)
    interpolation_mode : {0, 1, 2}
        0 bilinear, 1 nearest, 2 bicubic.
    padding_mode : {0, 1, 2}
        0 zeros, 1 border, 2 reflection.
    align_corners : bool

    Returns
    -------
    ndarray, shape (N, C, H_out, W_out)
    """
    return _sampler("grid_sampler_2d", 4, input, grid, interpolation_mode, padding_mode,
                    align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """ATen/CANN ``grid_sampler_3d``: 5-D input, integer codes (bicubic included).

    Parameters
    ----------
    input : array_like, shape (N, C, D_in, H_in, W_in)
    grid : array_like, shape (N, D_out, H_out, W_out, 3)
    interpolation_mode, padding_mode : {0, 1, 2}
    align_corners : bool

    Returns
    -------
    ndarray, shape (N, C, D_out, H_out, W_out)
    """
    return _sampler("grid_sampler_3d", 5, input, grid, interpolation_mode, padding_mode,
                    align_corners)


def grid_sampler_2d_backward(grad_output, input, grid, interpolation_mode, padding_mode,
                             align_corners, output_mask=(True, True)):
    """Gradients of :func:`grid_sampler_2d`.

    Parameters
    ----------
    grad_output : array_like, shape (N, C, H_out, W_out)
    input, grid, interpolation_mode, padding_mode, align_corners
        As in :func:`grid_sampler_2d`.
    output_mask : pair of bool
        Which of ``(grad_input, grad_grid)`` to compute.

    Returns
    -------
    grad_input : ndarray, shape of ``input``, or None
    grad_grid : ndarray, shape of ``grid``, or None
    """
    return _sampler_backward("grid_sampler_2d_backward", 4, grad_output, input, grid,
                             interpolation_mode, padding_mode, align_corners, output_mask)


def grid_sampler_3d_backward(grad_output, input, grid, interpolation_mode, padding_mode,
                             align_corners, output_mask=(True, True)):
    """Gradients of :func:`grid_sampler_3d` (see :func:`grid_sampler_2d_backward`)."""
    return _sampler_backward("grid_sampler_3d_backward", 5, grad_output, input, grid,
                             interpolation_mode, padding_mode, align_corners, output_mask)


def grid_sample(x, grid, interpolation_mode="bilinear", padding_mode="zeros",
                align_corners=False, channel_last=False, scheduler_mode=1):
    """CANN's graph-mode GridSample operator.

    Parameters
    ----------
    x : array_like, shape (N, C, H, W) / (N, C, D, H, W), or (N, H, W, C) / (N, D, H, W, C) with
    ``channel_last``
    grid : array_like, shape (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3)
    interpolation_mode : {"bilinear", "nearest", "bicubic"} or {0, 1, 2}, default "bilinear"
    padding_mode : {"zeros", "border", "reflection"} or {0, 1, 2}, default "zeros"
    align_corners : bool, default False
    channel_last : bool, default False
    scheduler_mode : {0, 1}, default 1
        CANN's NPU schedule for channel-last input (0 general, 1 sliding
        window); it does not change results, and on the CPU it has no effect.

    Returns
    -------
    ndarray, shape (N, C, H_out, W_out) / (N, C, D_out, H_out, W_out), channel-last with
    ``channel_last``
    """
    if isinstance(scheduler_mode, (bool, np.bool_)) or not isinstance(scheduler_mode,
                                                                      numbers.Integral):
        raise GridSampleTypeError(
            f"scheduler_mode={describe(scheduler_mode)} has type {type(scheduler_mode).__name__};"
            f" it must be 0 (general) or 1 (sliding window)")
    if int(scheduler_mode) not in (0, 1):
        raise GridSampleError(
            f"scheduler_mode={scheduler_mode!r} is not allowed; it must be 0 (general) or "
            f"1 (sliding window)")
    x = as_array("x", x)
    if x.ndim not in (4, 5):
        raise GridSampleError(
            f"x has shape {x.shape}; CANN's GridSample takes 4-D (2-D sampling) or 5-D "
            f"(3-D sampling) x")
    padding = parse_onnx_padding(padding_mode, "CANN's GridSample")
    mode = parse_onnx_mode(interpolation_mode, "CANN's GridSample", "interpolation_mode")
    return _grid_sample(x, grid, mode, padding, align_corners,
                        channel_last=channel_last)
