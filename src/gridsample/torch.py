"""PyTorch integration: gridsample's operators, registered with ``torch.library``.

``gridsample.torch.grid_sample`` is a drop-in for
``torch.nn.functional.grid_sample`` -- same arguments, defaults, warning and
results -- that also takes what gridsample adds: any number of spatial axes
(``input`` of rank r + 2 >= 3), cubic interpolation in 3-D and beyond,
``channel_last`` tensors, and every element type of :func:`gridsample.grid_sample`.

It calls ``torch.ops.gridsample.grid_sample``, a real PyTorch operator
(``torch.library.custom_op``) with a fake implementation for shapes and
dtypes and registered autograd, so models that use it work under
``torch.compile(fullgraph=True)`` and ``torch.export`` (the exported graph
holds ``gridsample.grid_sample.default``).  Its derivative is the operator
``torch.ops.gridsample.grid_sample_backward``, whose own derivative is
``torch.ops.gridsample.grid_sample_double_backward``
(:func:`gridsample.grid_sample_double_backward`): second derivatives
(``create_graph=True``, gradient penalties, Hessian-vector products) work
for every mode, padding and rank; a third derivative raises.  The
operators take options as integer codes (``gridsample._options``); the
wrapper turns names into codes.

``gridsample.torch.affine_grid`` is ``torch.nn.functional.affine_grid`` on
:func:`gridsample.affine_grid`'s kernel (``torch.ops.gridsample.affine_grid``), with
its derivative w.r.t. ``theta`` made from torch operations (so differentiable again).

Called eagerly on plain CPU tensors (nothing tracing: :func:`_runs_eagerly`), the
wrapper runs the operator's body at once, with its derivative through an
``autograd.Function`` (:class:`_EagerGridSample`), instead of through the
dispatcher's Python layers of ``torch.library`` (~40 µs a forward call, ~250 µs a forward
and backward: more than sampling a 64x1x28² batch takes); anything traced still sees
the operator.

Tensors cross to NumPy without copies (``Tensor.numpy()`` shares memory,
any strides; bfloat16 goes through an int16 view and ``ml_dtypes``), and
results come back the same way (``torch.from_numpy``).  CPU tensors only
(meta tensors for shape inference).

This module imports ``torch``; ``import gridsample`` does not.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
import torch.autograd.forward_ad as _forward_ad
from torch import _C
from torch.fx.experimental.symbolic_shapes import sym_and as _sym_and
from torch.fx.experimental.symbolic_shapes import sym_or as _sym_or

from ._affine import (
    THETA_DTYPE_NAMES,
    _parse_size,
    base_coordinates,
    batch_mismatch,
    check_size_length,
    check_theta_shape,
)
from ._affine import affine_grid as _affine_grid_numpy
from ._api import grid_sample as _grid_sample_numpy
from ._backward import GRAD_DTYPE_NAMES, grid_sample_backward
from ._dtypes import GRID_DTYPE_NAMES, X_DTYPE_NAMES
from ._errors import GridSampleError, GridSampleTypeError, describe
from ._options import (
    parse_align_corners,
    parse_cubic_a,
    parse_flag,
    parse_grid_units,
    parse_mode,
    parse_paddings,
)
from ._plan import PLAIN_LOGIC, check_prefiltered_fill, check_rank, check_shapes
from ._push import check_push_shapes, parse_push_shape
from ._push import grid_push as _grid_push_numpy
from ._registry import mode_of
from ._second_order import grid_sample_double_backward

__all__ = ["grid_sample", "grid_push", "grid_count", "affine_grid"]

# The options beyond ONNX, as every operator's schema ends with them (with
# defaults, so the ONNX-only call keeps its short form): per-axis padding
# codes (empty: padding_mode for all axes), the fill per channel (empty: 0),
# Keys' coefficient, pixel units, displacement, the B-spline prefilter.
_EXTRAS_SCHEMA = ("int[] paddings=[], float[] fill_value=[], float cubic_a=-0.75, "
                  "bool pixels=False, bool displacement=False, bool prefilter=True")


def _numpy_options(padding_mode, paddings, fill_value, cubic_a, pixels, displacement,
                   prefilter) -> dict:
    """The operators' extras as the NumPy API's keyword arguments."""
    return dict(padding_mode=tuple(paddings) if len(paddings) else padding_mode,
                fill_value=list(fill_value) if len(fill_value) else 0, cubic_a=cubic_a,
                grid_units="pixels" if pixels else "normalized", displacement=displacement,
                prefilter=prefilter)


def _check_device(name: str, t, allowed=("cpu", "meta")) -> None:
    """A torch.Tensor on the CPU (or, for shape inference only, the meta device)."""
    if not isinstance(t, torch.Tensor):
        raise GridSampleTypeError(f"{name} has type {type(t).__name__}; it must be a torch.Tensor")
    if t.device.type not in allowed:
        raise GridSampleError(
            f"{name} is on device {t.device}; gridsample.torch runs on CPU tensors only "
            f"(move it with .cpu())"
        )


def _check_devices(*named) -> None:
    """Each ``(name, tensor)`` passes :func:`_check_device`, and all are on one device: a CPU
    tensor beside a meta one would run the shape-only implementation and return memory never
    written."""
    for name, t in named:
        _check_device(name, t)
    first, head = named[0]
    for name, t in named[1:]:
        if t.device != head.device:
            raise GridSampleError(
                f"{name} is on device {t.device} and {first} on {head.device}; they must be on "
                f"one device (the CPU, or meta for shape inference)")


def _to_numpy(name: str, t) -> np.ndarray:
    """A NumPy view of a CPU tensor's memory (no copy)."""
    if not (isinstance(t, torch.Tensor) and t.is_cpu):
        _check_device(name, t, ("cpu",))
    t = t.detach()
    if t.is_conj():
        t = t.resolve_conj()
    if t.dtype == torch.bfloat16:
        import ml_dtypes  # bfloat16 in NumPy; a dependency of gridsample's half support

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    try:
        return t.numpy()
    except (TypeError, RuntimeError) as exc:  # float8, sparse, quantized, ...: no NumPy view
        raise GridSampleTypeError(
            f"{name} has dtype {t.dtype} and layout {t.layout}; gridsample.torch reads strided "
            f"tensors of NumPy's dtypes and bfloat16 ({exc})") from None


def _dtype_name(t) -> str:
    """A tensor's dtype as NumPy (and ml_dtypes) name it: ``float32``, ``bfloat16``, ..."""
    return str(t.dtype).removeprefix("torch.")


def _check_dtypes(name: str, t, allowed: tuple) -> None:
    """``t``'s dtype is one of ``allowed`` (NumPy names), as the NumPy API checks it: for
    tensors without data (shape inference)."""
    if _dtype_name(t) not in allowed:
        raise GridSampleTypeError(f"{name} has dtype {t.dtype}; allowed dtypes: "
                                  f"{', '.join(allowed)}")


def _require(ok, message) -> None:
    """``check_shapes``' enforcement for sizes that may be symbolic: a plain bool raises at
    once; a symbolic condition -- possibly on sizes known only at run time (``nonzero``,
    boolean masks) -- becomes a runtime assertion instead of a guard on it."""
    if isinstance(ok, bool):
        if not ok:
            raise GridSampleError(message())
    else:
        torch._check(ok, message)


#: ``_plan.check_shapes``' logic for shape inference: conditions stay symbolic.
_SYMBOLIC = (_sym_or, _sym_and, _require)


def _spatial_rank(name: str, t, channel_last) -> int:
    """The spatial axes of ``t`` (checked before the options, which are parsed per axis)."""
    return check_rank(name, t.shape, channel_last is True)


def _to_torch(a: np.ndarray) -> torch.Tensor:
    """A tensor sharing ``a``'s memory (bfloat16 through an int16 view)."""
    if a.dtype.kind == "V" and a.dtype.name == "bfloat16":  # (kind first: name is slow)
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _check_sample_tensors(input, grid, mode: int, channel_last: bool, logic=PLAIN_LOGIC) -> None:
    """:func:`gridsample.grid_sample`'s checks of dtypes and shapes, without data, naming the
    tensors as the operators do (``input``; the NumPy API says ``x``).  ``logic``:
    :func:`gridsample._plan.check_shapes`' (symbolic for shape inference)."""
    _check_dtypes("input", input, X_DTYPE_NAMES)
    _check_dtypes("grid", grid, GRID_DTYPE_NAMES)
    check_shapes(input.shape, grid.shape, mode, channel_last, "input", logic)


def _sample(input, grid, mode, padding_mode, align_corners, channel_last, paddings, fill_value,
            cubic_a, pixels, displacement, prefilter) -> torch.Tensor:
    """The forward on CPU tensors, options as the operators take them: the NumPy API on views
    of the tensors' memory."""
    options = _numpy_options(padding_mode, paddings, fill_value, cubic_a, pixels, displacement,
                             prefilter)
    try:
        out = _grid_sample_numpy(_to_numpy("input", input), _to_numpy("grid", grid), mode,
                                 align_corners=align_corners, channel_last=channel_last,
                                 **options)
    except GridSampleError:  # (and its type error) the tensors' own names, as traced calls
        _check_sample_tensors(input, grid, mode, channel_last)
        raise
    return _to_torch(out)


def _sample_backward(grad_output, input, grid, mode, padding_mode, align_corners, channel_last,
                     output_mask, paddings, fill_value, cubic_a, pixels, displacement,
                     prefilter) -> tuple:
    """``(dL/dinput or None, dL/dgrid or None)`` on CPU tensors, as :func:`_sample` runs."""
    options = _numpy_options(padding_mode, paddings, fill_value, cubic_a, pixels, displacement,
                             prefilter)
    try:
        gx, gg = grid_sample_backward(
            _to_numpy("grad_output", grad_output), _to_numpy("input", input),
            _to_numpy("grid", grid), mode, align_corners=align_corners,
            channel_last=channel_last, output_mask=tuple(output_mask), **options)
    except GridSampleError:  # the tensors' own names, as in _sample
        _check_dtypes("input", input, GRAD_DTYPE_NAMES)
        _check_sample_tensors(input, grid, mode, channel_last)
        raise
    return (None if gx is None else _to_torch(gx)), (None if gg is None else _to_torch(gg))


def _default_align_corners(name: str) -> bool:
    """``align_corners=None``: False, with a UserWarning as PyTorch's (its default changed
    in 1.3.0), attributed to the caller of the public function ``name``."""
    warnings.warn(
        f"{name}: align_corners was not given, so it is False (PyTorch's default since "
        f"1.3.0); pass align_corners=True for the corner-aligned convention of earlier "
        f"versions.", UserWarning, stacklevel=3)
    return False


def _run_eager(function, body, args: tuple, tensors: tuple):
    """A call :func:`_runs_eagerly` lets skip the dispatcher: through ``function`` (an
    ``autograd.Function`` with the operator's derivative) where one of ``tensors`` will
    want a gradient, else ``body(*args)`` alone (the operator's body)."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return function.apply(*args)
    return body(*args)


def _derives_eagerly(*tensors) -> bool:
    """Whether a registered derivative may run its body at once: it will not be
    differentiated again (no ``create_graph``) and nothing traces (:func:`_runs_eagerly`);
    otherwise it calls the operators, whose own derivatives are registered."""
    return not torch.is_grad_enabled() and _runs_eagerly(*tensors)


def _refuse_forward_mode(name: str, *tensors) -> None:
    """Forward-mode AD (``torch.func.jvp``, ``jacfwd``, ``torch.autograd.forward_ad``) has
    no formula in gridsample's operators, and PyTorch would drop the tangent (a zero or no
    tangent, silently): raise instead.  Not while dynamo traces (it has no such transform)."""
    if torch.compiler.is_compiling():
        return
    jvp = _C._are_functorch_transforms_active() and any(
        i.key() == _C._functorch.TransformType.Jvp
        for i in _functorch_interpreters())
    if not jvp and _forward_ad._current_level >= 0:
        jvp = any(isinstance(t, torch.Tensor) and _forward_ad.unpack_dual(t).tangent is not None
                  for t in tensors)
    if jvp:
        raise NotImplementedError(
            f"gridsample.torch.{name}: forward-mode AD (torch.func.jvp, jacfwd, "
            f"torch.autograd.forward_ad) is not implemented; use reverse mode "
            f"(torch.autograd.grad, .backward())")


def _functorch_interpreters():
    from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters
    return retrieve_all_functorch_interpreters()


# Tensor types a call may hand to NumPy directly (a Parameter is a Tensor with a flag).
_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)


def _runs_eagerly(*tensors) -> bool:
    """Whether a call may skip PyTorch's dispatcher and run gridsample at once: nothing
    traces it (torch.compile and torch.export, ``make_fx``, ``torch.jit.trace``, a
    dispatch or function mode) and its tensors are plain CPU tensors (no subclass, fake or
    functorch wrapper).  Anything else goes through the registered operators, whose every
    step the dispatcher sees.

    The direct call is the same computation: the operators' bodies are :func:`_sample` and
    :func:`_sample_backward`.  What it skips is ~40 µs of Python a call in
    ``torch.library``'s layers (an autograd function, redispatches, a guard against
    dynamo), and ~250 µs for a forward and backward: on small warps (a 64x1x28² batch takes
    ~0.1 ms) those layers cost more than the sampling.
    """
    if (torch.compiler.is_compiling() or _C._len_torch_dispatch_stack()
            or _C._is_torch_function_mode_enabled() or _C._get_tracing_state() is not None
            or _C._are_functorch_transforms_active()):  # (an autograd.Function would raise)
        return False
    for t in tensors:
        # Also left to the dispatcher, which makes them plain first: the batched tensors of
        # batched gradients (is_grads_batched, vectorized jacobians), tensors whose negation
        # is a lazy bit, and the zero tensors autograd passes for unused outputs.
        if (type(t) not in _PLAIN_TYPES or not t.is_cpu
                or _C._functorch.is_functorch_wrapped_tensor(t)
                or _C._functorch.is_legacy_batchedtensor(t) or t.is_neg()
                or t._is_zerotensor()):
            return False
    return True


# ---------------------------------------------------------------------------
# The operators.  Options arrive as the integer codes of gridsample._options
# (the wrapper parses names once, in Python, so the traced graph holds
# constants).  Each operator runs the NumPy API on views of the tensors'
# memory; its fake implementation gives shapes and dtypes without running
# anything, for torch.compile, torch.export and meta tensors.  An output the
# output_mask leaves out is an empty tensor (operators cannot return None).

@torch.library.custom_op(
    "gridsample::grid_sample", mutates_args=(),
    schema="(Tensor input, Tensor grid, int mode, int padding_mode, bool align_corners, "
           f"bool channel_last, {_EXTRAS_SCHEMA}) -> Tensor")
def _grid_sample_op(input, grid, mode, padding_mode, align_corners, channel_last, paddings=(),
                    fill_value=(), cubic_a=-0.75, pixels=False, displacement=False, prefilter=True):
    return _sample(input, grid, mode, padding_mode, align_corners, channel_last, paddings,
                   fill_value, cubic_a, pixels, displacement, prefilter)


@_grid_sample_op.register_fake
def _(input, grid, mode, padding_mode, align_corners, channel_last, paddings=(), fill_value=(),
      cubic_a=-0.75, pixels=False, displacement=False, prefilter=True):
    _check_devices(("input", input), ("grid", grid))
    _check_sample_tensors(input, grid, mode, channel_last, _SYMBOLIC)
    if prefilter and len(fill_value) and mode_of(mode).spline:
        check_prefiltered_fill(list(fill_value), np.asarray(fill_value, np.float64), mode,
                               align_corners, channel_last)
    out_spatial = tuple(grid.shape[1:-1])
    if channel_last:
        shape = (input.shape[0], *out_spatial, input.shape[-1])
    else:
        shape = (input.shape[0], input.shape[1], *out_spatial)
    return input.new_empty(shape)


@torch.library.custom_op(
    "gridsample::grid_sample_backward", mutates_args=(),
    schema="(Tensor grad_output, Tensor input, Tensor grid, int mode, int padding_mode, "
           f"bool align_corners, bool channel_last, bool[] output_mask, {_EXTRAS_SCHEMA}) "
           "-> (Tensor, Tensor)")
def _backward_op(grad_output, input, grid, mode, padding_mode, align_corners, channel_last,
                 output_mask, paddings=(), fill_value=(), cubic_a=-0.75, pixels=False,
                 displacement=False, prefilter=True):
    gx, gg = _sample_backward(grad_output, input, grid, mode, padding_mode, align_corners,
                              channel_last, output_mask, paddings, fill_value, cubic_a, pixels,
                              displacement, prefilter)
    # (operators cannot return None: an output left out is an empty tensor)
    return (input.new_empty(0) if gx is None else gx), (grid.new_empty(0) if gg is None else gg)


@_backward_op.register_fake
def _(grad_output, input, grid, mode, padding_mode, align_corners, channel_last, output_mask,
      paddings=(), fill_value=(), cubic_a=-0.75, pixels=False, displacement=False,
      prefilter=True):
    return _fake_like(input, output_mask[0]), _fake_like(grid, output_mask[1])


@torch.library.custom_op(
    "gridsample::grid_sample_double_backward", mutates_args=(),
    schema="(Tensor? grad_grad_input, Tensor? grad_grad_grid, Tensor grad_output, "
           "Tensor input, Tensor grid, int mode, int padding_mode, bool align_corners, "
           f"bool channel_last, bool[] output_mask, {_EXTRAS_SCHEMA}) "
           "-> (Tensor, Tensor, Tensor)")
def _double_backward_op(grad_grad_input, grad_grad_grid, grad_output, input, grid, mode,
                        padding_mode, align_corners, channel_last, output_mask, paddings=(),
                        fill_value=(), cubic_a=-0.75, pixels=False, displacement=False,
                        prefilter=True):
    options = _numpy_options(padding_mode, paddings, fill_value, cubic_a, pixels, displacement,
                             prefilter)
    d_gout, d_x, d_grid = grid_sample_double_backward(
        None if grad_grad_input is None else _to_numpy("grad_grad_input", grad_grad_input),
        None if grad_grad_grid is None else _to_numpy("grad_grad_grid", grad_grad_grid),
        _to_numpy("grad_output", grad_output), _to_numpy("input", input),
        _to_numpy("grid", grid), mode, align_corners=align_corners,
        channel_last=channel_last, output_mask=tuple(output_mask), **options)
    return _or_empty(d_gout, grad_output), _or_empty(d_x, input), _or_empty(d_grid, grid)


@_double_backward_op.register_fake
def _(grad_grad_input, grad_grad_grid, grad_output, input, grid, mode, padding_mode,
      align_corners, channel_last, output_mask, paddings=(), fill_value=(), cubic_a=-0.75,
      pixels=False, displacement=False, prefilter=True):
    return (_fake_like(grad_output, output_mask[0]), _fake_like(input, output_mask[1]),
            _fake_like(grid, output_mask[2]))


def _or_empty(a, like):
    """A result as a tensor; an empty one (``like``'s dtype) where it was not asked for."""
    return like.new_empty(0) if a is None else _to_torch(a)


def _fake_like(t, wanted):
    """Fake result: contiguous with ``t``'s shape and dtype, or empty when not wanted."""
    return t.new_empty(tuple(t.shape) if wanted else 0)


def _wanted(grad, wanted):
    return grad if wanted else None


# Autograd: the forward's derivative is the backward operator, whose own
# derivative is the double backward operator; the chain stops there (a third
# derivative raises PyTorch's "autograd kernel not registered" error).

# The options every operator shares: mode, padding_mode, align_corners,
# channel_last (then output_mask, for the backward ones), then the 6 extras.
_OPTIONS, _EXTRAS = 4, 6


def _setup_forward(ctx, inputs, output):
    input, grid, *rest = inputs
    ctx.save_for_backward(input, grid)
    ctx.options, ctx.extras = rest[:_OPTIONS], rest[_OPTIONS:]


def _forward_derivative(ctx, grad_output):
    input, grid = ctx.saved_tensors
    want = list(ctx.needs_input_grad[:2])
    if _derives_eagerly(grad_output, input, grid):
        gx, gg = _sample_backward(grad_output, input, grid, *ctx.options, want, *ctx.extras)
    else:  # the operator, whose own derivative is registered
        gx, gg = torch.ops.gridsample.grid_sample_backward(grad_output, input, grid,
                                                           *ctx.options, want, *ctx.extras)
    return (_wanted(gx, want[0]), _wanted(gg, want[1])) + (None,) * (_OPTIONS + _EXTRAS)


class _EagerGridSample(torch.autograd.Function):
    """``torch.ops.gridsample.grid_sample`` with its registered derivative, for calls that
    :func:`_runs_eagerly` lets skip the dispatcher: the same forward, saved tensors and
    backward (:func:`_forward_derivative`)."""

    @staticmethod
    def forward(ctx, input, grid, *options):
        ctx.save_for_backward(input, grid)
        ctx.options, ctx.extras = options[:_OPTIONS], options[_OPTIONS:]
        return _sample(input, grid, *options)

    @staticmethod
    def backward(ctx, grad_output):
        return _forward_derivative(ctx, grad_output)


def _setup_backward(ctx, inputs, output):
    grad_output, input, grid, *rest = inputs
    ctx.save_for_backward(grad_output, input, grid)
    ctx.options, ctx.output_mask = rest[:_OPTIONS], rest[_OPTIONS]
    ctx.extras = rest[_OPTIONS + 1:]
    ctx.set_materialize_grads(False)


def _backward_derivative(ctx, grad_grad_input, grad_grad_grid):
    grad_output, input, grid = ctx.saved_tensors
    want = list(ctx.needs_input_grad[:3])
    # An output left out by output_mask (an empty tensor) has no derivative.
    ggx = grad_grad_input if ctx.output_mask[0] else None
    ggg = grad_grad_grid if ctx.output_mask[1] else None
    d_gout, d_x, d_grid = torch.ops.gridsample.grid_sample_double_backward(
        ggx, ggg, grad_output, input, grid, *ctx.options, want, *ctx.extras)
    return ((_wanted(d_gout, want[0]), _wanted(d_x, want[1]), _wanted(d_grid, want[2]))
            + (None,) * (_OPTIONS + 1 + _EXTRAS))


torch.library.register_autograd("gridsample::grid_sample", _forward_derivative,
                                setup_context=_setup_forward)
torch.library.register_autograd("gridsample::grid_sample_backward", _backward_derivative,
                                setup_context=_setup_backward)


# Push: the adjoint of sampling in the input.  Its derivatives are the
# sampler's own operators: d<push(v), U>/dv = sample(U) (the linear part: no
# fill) and d/dgrid = the grid gradient of <v, sample(U)>, which is the
# backward with grad_output = v and input = U.  Higher derivatives follow
# from theirs.

@torch.library.custom_op(
    "gridsample::grid_push", mutates_args=(),
    schema="(Tensor values, Tensor grid, SymInt[] shape, int mode, int padding_mode, "
           "bool align_corners, bool channel_last, int[] paddings=[], float cubic_a=-0.75, "
           "bool pixels=False, bool displacement=False, bool prefilter=True) -> Tensor")
def _grid_push_op(values, grid, shape, mode, padding_mode, align_corners, channel_last,
                  paddings=(), cubic_a=-0.75, pixels=False, displacement=False, prefilter=True):
    return _push(values, grid, shape, mode, padding_mode, align_corners, channel_last, paddings,
                 cubic_a, pixels, displacement, prefilter)


def _push(values, grid, shape, mode, padding_mode, align_corners, channel_last, paddings,
          cubic_a, pixels, displacement, prefilter) -> torch.Tensor:
    """The push on CPU tensors, options as ``torch.ops.gridsample.grid_push`` takes them."""
    out = _grid_push_numpy(
        _to_numpy("values", values), _to_numpy("grid", grid), tuple(shape), mode,
        tuple(paddings) if len(paddings) else padding_mode, align_corners,
        channel_last=channel_last, cubic_a=cubic_a,
        grid_units="pixels" if pixels else "normalized", displacement=displacement,
        prefilter=prefilter)
    return _to_torch(out)


@_grid_push_op.register_fake
def _(values, grid, shape, mode, padding_mode, align_corners, channel_last, paddings=(),
      cubic_a=-0.75, pixels=False, displacement=False, prefilter=True):
    # gridsample.grid_push's checks, without data: the pushed array (``shape``) against the
    # grid as grid_sample's input, and values against what sampling it would give
    _check_devices(("values", values), ("grid", grid))
    _check_dtypes("values", values, GRAD_DTYPE_NAMES)
    _check_dtypes("grid", grid, GRID_DTYPE_NAMES)
    check_push_shapes(tuple(values.shape), tuple(grid.shape), tuple(shape), mode, channel_last,
                      f"shape={list(shape)}", _SYMBOLIC)
    return values.new_empty(tuple(shape))


def _setup_push(ctx, inputs, output):
    values, grid, _shape, mode, padding_mode, align_corners, channel_last, *extras = inputs
    ctx.save_for_backward(values, grid)
    ctx.options = (mode, padding_mode, align_corners, channel_last)
    paddings, cubic_a, pixels, displacement, prefilter = extras
    # no fill: the linear part
    ctx.extras = (paddings, [], cubic_a, pixels, displacement, prefilter)


def _push_derivative(ctx, grad_output):
    values, grid = ctx.saved_tensors
    want_values, want_grid = ctx.needs_input_grad[:2]
    grad_values = grad_grid = None
    direct = _derives_eagerly(grad_output, values, grid)
    if want_values:
        grad_values = (_sample if direct else torch.ops.gridsample.grid_sample)(
            grad_output, grid, *ctx.options, *ctx.extras)
    if want_grid:
        grad_grid = (_sample_backward if direct else torch.ops.gridsample.grid_sample_backward)(
            values, grad_output, grid, *ctx.options, [False, True], *ctx.extras)[1]
    return (grad_values, grad_grid) + (None,) * 10


class _EagerGridPush(torch.autograd.Function):
    """``torch.ops.gridsample.grid_push`` with its registered derivative, for calls that
    :func:`_runs_eagerly` lets skip the dispatcher (as :class:`_EagerGridSample`)."""

    @staticmethod
    def forward(ctx, values, grid, shape, *options):
        _setup_push(ctx, (values, grid, shape, *options), None)
        return _push(values, grid, shape, *options)

    @staticmethod
    def backward(ctx, grad_output):
        return _push_derivative(ctx, grad_output)


torch.library.register_autograd("gridsample::grid_push", _push_derivative,
                                setup_context=_setup_push)


def _fill_list(fill_value) -> list:
    """``fill_value`` as the operators' list of floats (empty for the default 0)."""
    if isinstance(fill_value, int) and not isinstance(fill_value, bool) and fill_value == 0:
        return []
    if isinstance(fill_value, torch.Tensor):
        if fill_value.requires_grad and torch.is_grad_enabled():
            # (read as numbers, it would be cut from autograd)
            raise GridSampleTypeError(
                f"fill_value={describe(fill_value)} requires grad; the fill is a constant of "
                f"the operator, without a gradient: pass fill_value.detach() or numbers")
        fill_value = fill_value.tolist()  # (read at each call)
    values = [fill_value] if not isinstance(fill_value, (list, tuple)) else list(fill_value)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise GridSampleTypeError(
            f"fill_value={describe(fill_value)} must be a real number or a sequence of them "
            f"(one per channel)")
    return [float(v) for v in values]


def _extras(rank: int, mode: int, padding_mode, fill_value, cubic_a, grid_units,
            displacement, prefilter) -> tuple:
    """The operators' padding code, per-axis codes and extras, parsed from the wrapper's names."""
    pads = parse_paddings(padding_mode, rank)
    per_axis = [] if len(set(pads)) == 1 else list(pads)
    return (pads[0], per_axis, _fill_list(fill_value), parse_cubic_a(cubic_a, mode),
            parse_grid_units(grid_units), parse_flag("displacement", displacement),
            parse_flag("prefilter", prefilter))


def _sample_options(rank: int, mode, padding_mode, align_corners, channel_last, fill_value,
                    cubic_a, grid_units, displacement, prefilter) -> tuple:
    """``grid_sample``'s options as ``torch.ops.gridsample.grid_sample`` takes them, after
    ``input`` and ``grid``."""
    mode = parse_mode(mode)
    padding, paddings, fill, cubic_a, pixels, displacement, prefilter = _extras(
        rank, mode, padding_mode, fill_value, cubic_a, grid_units, displacement, prefilter)
    return (mode, padding, parse_align_corners(align_corners),
            parse_flag("channel_last", channel_last), paddings, fill, cubic_a, pixels,
            displacement, prefilter)


# The parsed options of recent eager calls (~8 µs of parsing a call), by the values and
# their types (``True`` and ``1`` are equal but not the same option).  Only plain values
# are kept -- str, bool, int, float, None, and tuples of them -- never a tensor or a list
# (a fill_value the caller may change in place).
_parsed: dict = {}
_PARSED_KEPT = 64
_PLAIN_OPTIONS = frozenset((str, bool, int, float, type(None)))


def _plain_kinds(values: tuple):
    """The types of ``values`` and of the items of those that are tuples, or None where one
    is not a plain option value."""
    kinds = tuple(map(type, values))
    for value, kind in zip(values, kinds):
        if kind is tuple:
            inner = tuple(map(type, value))
            if not _PLAIN_OPTIONS.issuperset(inner):
                return None
            kinds += (inner,)
        elif kind not in _PLAIN_OPTIONS:
            return None
    return kinds


def _parsed_sample_options(*values) -> tuple:
    """:func:`_sample_options` of ``values``, kept for the next call with the same ones."""
    kinds = _plain_kinds(values)
    if kinds is None:
        return _sample_options(*values)
    key = (values, kinds)
    options = _parsed.get(key)
    if options is None:
        options = _sample_options(*values)  # raises for bad options: nothing kept
        if len(_parsed) >= _PARSED_KEPT:
            _parsed.clear()
        _parsed[key] = options
    return options


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None, *,
                channel_last=False, fill_value=0, cubic_a=-0.75, grid_units="normalized",
                displacement=False, prefilter=True):
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
    padding_mode : str or int, or a tuple of them (one per grid component), default "zeros"
        PyTorch's ``"zeros"``, ``"border"``, ``"reflection"``, and
        gridsample's ``"constant"``, ``"mirror"``, ``"symmetric"``,
        ``"wrap"`` (see :func:`gridsample.grid_sample`).
    align_corners : bool or None, default None
        None means False, with PyTorch's warning about the changed default.
    channel_last : bool, default False
        ``input`` is ``(N, d1, ..., dr, C)`` and so is the output.
    fill_value, cubic_a, grid_units, displacement, prefilter
        As in :func:`gridsample.grid_sample` (``fill_value`` real: a number
        or one per channel, or a tensor of them read at each call as a
        constant -- not one that requires grad, and numbers under
        ``torch.compile(fullgraph=True)``, which cannot read a tensor's
        values while it traces; the B-spline modes ``"bspline2"`` …
        ``"bspline7"`` prefilter ``input`` unless ``prefilter=False``);
        gradients, second ones included, follow them.

    Returns
    -------
    Tensor, shape (N, C, D1, ..., Dr), or (N, D1, ..., Dr, C) with ``channel_last``
        ``input``'s dtype; differentiable w.r.t. ``input`` and ``grid``,
        twice (docs/semantics.md §7.6 gives the second derivatives' rules).

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
        align_corners = _default_align_corners("grid_sample")
    _refuse_forward_mode("grid_sample", input, grid)
    values = (mode, padding_mode, align_corners, channel_last, fill_value, cubic_a, grid_units,
              displacement, prefilter)
    if _runs_eagerly(input, grid):
        return _run_eager(_EagerGridSample, _sample,
                          (input, grid, *_parsed_sample_options(
                              _spatial_rank("input", input, channel_last), *values)),
                          (input, grid))
    _check_devices(("input", input), ("grid", grid))
    return torch.ops.gridsample.grid_sample(input, grid,
                                            *_sample_options(
                                                _spatial_rank("input", input, channel_last),
                                                *values))


def grid_push(values, grid, shape, mode="bilinear", padding_mode="zeros", align_corners=False, *,
              channel_last=False, cubic_a=-0.75, grid_units="normalized", displacement=False,
              prefilter=True):
    """:func:`gridsample.grid_push` on tensors, with autograd (w.r.t. ``values`` and ``grid``).

    Parameters
    ----------
    values : Tensor, shape (N, C, D1, ..., Dr), or (N, D1, ..., Dr, C) with ``channel_last``
    grid : Tensor, shape (N, D1, ..., Dr, r) or (1, D1, ..., Dr, r)
    shape : sequence of int
        The result's shape in its layout, or its spatial part ``(d1, ..., dr)``.
    mode, padding_mode, align_corners, channel_last, cubic_a, grid_units, displacement, prefilter
        As in :func:`grid_sample` (``align_corners`` defaults to False here,
        without a warning).

    Returns
    -------
    Tensor of ``shape``, dtype of ``values``
        The adjoint of :func:`grid_sample` in ``input``: splatting.
    """
    _check_devices(("values", values), ("grid", grid))
    _refuse_forward_mode("grid_push", values, grid)
    mode = parse_mode(mode)
    rank = _spatial_rank("values", values, channel_last)
    padding, paddings, _, cubic_a, pixels, displacement, prefilter = _extras(
        rank, mode, padding_mode, 0, cubic_a, grid_units, displacement, prefilter)
    channel_last = parse_flag("channel_last", channel_last)
    full = parse_push_shape(shape, tuple(values.shape), rank, channel_last)
    options = (mode, padding, parse_align_corners(align_corners), channel_last, paddings,
               cubic_a, pixels, displacement, prefilter)
    if _runs_eagerly(values, grid):
        return _run_eager(_EagerGridPush, _push, (values, grid, list(full), *options),
                          (values, grid))
    return torch.ops.gridsample.grid_push(values, grid, list(full), *options)


def grid_count(grid, shape, mode="bilinear", padding_mode="zeros", align_corners=False, *,
               channel_last=False, cubic_a=-0.75, grid_units="normalized", displacement=False,
               prefilter=True):
    """:func:`gridsample.grid_count` on tensors: the push of ones, differentiable w.r.t. ``grid``.

    Returns
    -------
    Tensor, shape (N, 1, d1, ..., dr), or (N, d1, ..., dr, 1) with ``channel_last``
        In the grid's dtype.
    """
    _check_device("grid", grid)
    if grid.dim() < 3:
        raise GridSampleError(f"grid has shape {tuple(grid.shape)}; it must be "
                              f"(N, D1, ..., Dr, r)")
    out = tuple(grid.shape[1:-1])
    ones_shape = (grid.shape[0], *out, 1) if channel_last else (grid.shape[0], 1, *out)
    wide = grid.dtype in (torch.float32, torch.float64)
    ones = torch.ones((), dtype=grid.dtype if wide else torch.float32,
                      device=grid.device).expand(ones_shape)
    return grid_push(ones, grid, shape, mode, padding_mode, align_corners,
                     channel_last=channel_last, cubic_a=cubic_a, grid_units=grid_units,
                     displacement=displacement, prefilter=prefilter)


# ---------------------------------------------------------------------------
# affine_grid: gridsample.affine_grid's kernel, differentiable w.r.t. theta.  The grid is
# linear in theta: grid[n, p, k] = sum_j theta[n, k, j] b_j(p) + theta[n, k, r], with b_j
# the base coordinate along grid axis j (gridsample._affine), so
#     dL/dtheta[n, k, j] = sum_p dL/dgrid[n, p, k] b_j(p),   dL/dtheta[n, k, r] = sum_p ...
# made from torch operations (itself differentiable: second derivatives come free).

@torch.library.custom_op("gridsample::affine_grid", mutates_args=(),
                         schema="(Tensor theta, SymInt[] size, bool align_corners) -> Tensor")
def _affine_grid_op(theta, size, align_corners):
    return _affine_grid(theta, size, align_corners)


def _affine_grid(theta, size, align_corners) -> torch.Tensor:
    """The grid on a CPU tensor (gridsample.affine_grid on a view of its memory)."""
    return _to_torch(_affine_grid_numpy(_to_numpy("theta", theta), tuple(size), align_corners))


@_affine_grid_op.register_fake
def _(theta, size, align_corners):
    _check_affine_shapes(theta, size)
    return theta.new_empty((size[0], *size[2:], len(size) - 2))


def _check_affine_shapes(theta, size) -> None:
    """What :func:`gridsample.affine_grid` checks of theta's shape and dtype and of size's
    length, for tensors without data (meta and fake tensors: shape inference)."""
    check_size_length(size, str(list(size)))
    check_theta_shape(theta.shape, size)
    _check_dtypes("theta", theta, THETA_DTYPE_NAMES)
    items, wanted = theta.shape[0], size[0]
    _require(items == wanted, lambda: batch_mismatch(items, wanted))


def _theta_gradient(grad_grid, size, align_corners, theta_dtype) -> torch.Tensor:
    """dL/dtheta, shape (N, r, r + 1), from dL/dgrid (N, D1, ..., Dr, r): the points'
    homogeneous base coordinates ``B`` (P, r + 1) against dL/dgrid as (N, P, r), one
    matrix product per item."""
    r = len(size) - 2
    dtype = torch.promote_types(theta_dtype, torch.float32)  # (half types: in float32)
    spatial = list(size[2:])
    columns = []
    for j in range(r):  # grid component j varies along array axis r - 1 - j
        shape = [1] * r
        shape[r - 1 - j] = spatial[r - 1 - j]
        b = base_coordinates(spatial[r - 1 - j], align_corners, torch).to(dtype)
        columns.append(b.reshape(shape).expand(spatial))
    columns.append(torch.ones(spatial, dtype=dtype))
    base = torch.stack(columns, -1).reshape(-1, r + 1)
    g = grad_grid.to(dtype).reshape(grad_grid.shape[0], base.shape[0], r)  # (N may be 0)
    return torch.matmul(g.transpose(1, 2), base).to(theta_dtype)


def _setup_affine_grid(ctx, inputs, output):
    theta, size, align_corners = inputs
    ctx.size, ctx.align, ctx.theta_dtype = tuple(size), align_corners, theta.dtype


def _affine_grid_derivative(ctx, grad_grid):
    return _theta_gradient(grad_grid, ctx.size, ctx.align, ctx.theta_dtype), None, None


torch.library.register_autograd("gridsample::affine_grid", _affine_grid_derivative,
                                setup_context=_setup_affine_grid)


class _EagerAffineGrid(torch.autograd.Function):
    """``torch.ops.gridsample.affine_grid`` with its derivative, for calls that
    :func:`_runs_eagerly` lets skip the dispatcher (as :class:`_EagerGridSample`)."""

    @staticmethod
    def forward(ctx, theta, size, align_corners):
        _setup_affine_grid(ctx, (theta, size, align_corners), None)
        return _affine_grid(theta, size, align_corners)

    @staticmethod
    def backward(ctx, grad_grid):
        return _affine_grid_derivative(ctx, grad_grid)


def affine_grid(theta, size, align_corners=None):
    """``torch.nn.functional.affine_grid`` on gridsample's kernel, differentiable w.r.t.
    ``theta``.

    Parameters
    ----------
    theta : Tensor, shape (N, 2, 3) or (N, 3, 4)
        CPU tensor of affine matrices (float16, bfloat16, float32, float64), any strides.
    size : sequence of int, (N, C, H, W) or (N, C, D, H, W)
        The output size (``torch.Size`` or a list); ``C`` is not used.
    align_corners : bool or None, default None
        None means False, with PyTorch's warning about the changed default.

    Returns
    -------
    Tensor, shape (N, H, W, 2) or (N, D, H, W, 3)
        ``theta``'s dtype: :func:`gridsample.affine_grid`'s values (PyTorch's up to the
        rounding of its matrix product), for :func:`grid_sample`.

    Examples
    --------
    >>> import torch, gridsample.torch as gt
    >>> theta = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], requires_grad=True)
    >>> grid = gt.affine_grid(theta, (1, 1, 1, 2), align_corners=False)
    >>> grid.detach()[0, 0]
    tensor([[-0.5000,  0.0000],
            [ 0.5000,  0.0000]])
    >>> grid.sum().backward()
    >>> theta.grad
    tensor([[[0., 0., 2.],
             [0., 0., 2.]]])
    """
    if align_corners is None:
        align_corners = _default_align_corners("affine_grid")
    _check_device("theta", theta)
    _refuse_forward_mode("affine_grid", theta)
    align = parse_align_corners(align_corners)
    eager = _runs_eagerly(theta)
    if eager:  # (traced: the sizes may be symbolic; the fake implementation checks them)
        size = _parse_size(size)
    if align and any(s == 1 for s in list(size)[2:]):
        warnings.warn(  # as PyTorch's
            "affine_grid: with align_corners=True a unit-size axis has its single point at "
            "0 (PyTorch's behaviour since 1.3.0: before, -1); unit-size grids are not an "
            "intended use of affine_grid.", UserWarning, stacklevel=2)
    if eager:
        return _run_eager(_EagerAffineGrid, _affine_grid, (theta, size, align), (theta,))
    return torch.ops.gridsample.affine_grid(theta, list(size), align)
