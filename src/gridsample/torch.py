"""PyTorch integration: an autograd-enabled ``grid_sample`` for CPU tensors.

``gridsample.torch.grid_sample`` is a drop-in for
``torch.nn.functional.grid_sample`` -- same arguments, defaults, warning and
results -- that also takes what gridsample adds: any number of spatial axes
(``input`` of rank r + 2 >= 3), cubic interpolation in 3-D and beyond,
``channel_last`` tensors, and every element type of :func:`gridsample.grid_sample`.

Tensors cross to NumPy without copies (``Tensor.numpy()`` shares memory;
bfloat16 goes through an int16 view and ``ml_dtypes``), and results come
back the same way (``torch.from_numpy``).  Gradients come from
:func:`gridsample.grid_sample_backward`, which computes only those autograd
asks for.  Double backward is not supported: a backward with
``create_graph=True`` raises a ``RuntimeError`` that says so.

This module imports ``torch``; ``import gridsample`` does not.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from ._api import grid_sample as _grid_sample_numpy
from ._backward import grid_sample_backward
from ._errors import GridSampleError, GridSampleTypeError

__all__ = ["grid_sample"]


def _to_numpy(name: str, t) -> np.ndarray:
    """A NumPy view of a CPU tensor's memory (no copy)."""
    if not isinstance(t, torch.Tensor):
        raise GridSampleTypeError(f"{name} has type {type(t).__name__}; it must be a torch.Tensor")
    if t.device.type != "cpu":
        raise GridSampleError(
            f"{name} is on device {t.device}; gridsample.torch runs on CPU tensors only "
            f"(move it with .cpu())"
        )
    t = t.detach()
    if t.is_conj():
        t = t.resolve_conj()
    if t.dtype == torch.bfloat16:
        import ml_dtypes  # bfloat16 in NumPy; a dependency of gridsample's half support

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _to_torch(a: np.ndarray) -> torch.Tensor:
    """A tensor sharing ``a``'s memory (bfloat16 through an int16 view)."""
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


class _GridSample(torch.autograd.Function):
    """Forward: gridsample's kernels; backward: ``grid_sample_backward``."""

    @staticmethod
    def forward(ctx, input, grid, mode, padding_mode, align_corners, channel_last):
        x = _to_numpy("input", input)
        g = _to_numpy("grid", grid)
        out = _grid_sample_numpy(x, g, mode, padding_mode, align_corners,
                                 channel_last=channel_last)
        ctx.save_for_backward(input, grid)
        ctx.options = (mode, padding_mode, align_corners, channel_last)
        return _to_torch(out)

    @staticmethod
    def backward(ctx, grad_output):
        if torch.is_grad_enabled():
            # create_graph=True: the gradient itself would have to be
            # differentiable, and gridsample has no second derivative.
            raise RuntimeError(
                "gridsample.torch.grid_sample does not support double backward: its gradient "
                "is computed by gridsample.grid_sample_backward, which has no derivative of "
                "its own; call backward/autograd.grad without create_graph=True (or use "
                "torch.nn.functional.grid_sample where second derivatives are needed)")
        input, grid = ctx.saved_tensors
        mode, padding_mode, align_corners, channel_last = ctx.options
        want_x, want_grid = ctx.needs_input_grad[:2]
        gx, gg = grid_sample_backward(
            _to_numpy("grad_output", grad_output), _to_numpy("input", input),
            _to_numpy("grid", grid), mode, padding_mode, align_corners,
            channel_last=channel_last, output_mask=(want_x, want_grid))
        return (None if gx is None else _to_torch(gx), None if gg is None else _to_torch(gg),
                None, None, None, None)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None, *,
                channel_last=False):
    """``torch.nn.functional.grid_sample`` on gridsample's kernels, with autograd.

    Parameters
    ----------
    input : Tensor, shape (N, C, d1, ..., dr), or (N, d1, ..., dr, C) with ``channel_last``
        CPU tensor, r >= 1 spatial axes, any strides; any dtype
        :func:`gridsample.grid_sample` accepts (gradients for float16,
        bfloat16, float32 and float64).
    grid : Tensor, shape (N, D1, ..., Dr, r) or (1, D1, ..., Dr, r)
        Normalized positions (float16, bfloat16, float32, float64); a batch
        of 1 broadcasts (its gradient is summed over the batch).
    mode : str or int, default "bilinear"
        ``"bilinear"``, ``"nearest"``, ``"bicubic"`` as in PyTorch; also
        ``"linear"``, ``"trilinear"``, ``"cubic"``, ``"tricubic"`` and the
        codes 0, 1, 2.  ``"bilinear"`` means linear on every axis (trilinear
        for 5-D input), as in PyTorch; bicubic works for every rank.
    padding_mode : {"zeros", "border", "reflection"} or {0, 1, 2}, default "zeros"
    align_corners : bool or None, default None
        None means False, with PyTorch's warning about the changed default.
    channel_last : bool, default False
        ``input`` is ``(N, d1, ..., dr, C)`` and so is the output.

    Returns
    -------
    Tensor, shape (N, C, D1, ..., Dr), or (N, D1, ..., Dr, C) with ``channel_last``
        ``input``'s dtype; differentiable w.r.t. ``input`` and ``grid``
        (once: a backward with ``create_graph=True`` raises ``RuntimeError``).

    Raises
    ------
    gridsample.GridSampleError
        Bad options or shapes (see :func:`gridsample.grid_sample`), or a
        tensor not on the CPU.

    Examples
    --------
    >>> import torch, gridsample.torch as gt
    >>> x = torch.arange(16.0).reshape(1, 1, 4, 4).requires_grad_()
    >>> grid = torch.zeros(1, 1, 1, 2, requires_grad=True)
    >>> y = gt.grid_sample(x, grid, align_corners=True)
    >>> y.item()
    7.5
    >>> y.sum().backward()
    >>> grid.grad
    tensor([[[[1.5000, 6.0000]]]])
    """
    if align_corners is None:
        # PyTorch warns here too (a UserWarning): its default changed in 1.3.0.
        warnings.warn(
            "grid_sample: align_corners was not given, so it is False (PyTorch's default "
            "since 1.3.0); pass align_corners=True for the corner-aligned convention of "
            "earlier versions.", UserWarning, stacklevel=2)
        align_corners = False
    return _GridSample.apply(input, grid, mode, padding_mode, align_corners, channel_last)
