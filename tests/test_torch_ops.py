"""gridsample's PyTorch operators: torch.library, torch.compile, torch.export, double backward.

Oracles: ``torch.library.opcheck`` (schema, fake implementation against the
real one, autograd registration, AOT dispatch with dynamic shapes);
``torch.autograd.gradgradcheck`` (central differences of our own backward,
float64) for every mode x padding x rank 1-3; PyTorch's own second
derivatives of ``F.grid_sample`` where it has them (2-D, and 3-D linear and
nearest); eager execution for compiled and exported models.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import gridsample  # noqa: E402
import gridsample.torch as gt  # noqa: E402
from conftest import MODES, PADDINGS, TORCH_MODE  # noqa: E402

OPS = torch.ops.gridsample
# float64 sums of <= 64 products of O(1) values: rounding is ~1e-15; 1e-10
# leaves five orders of margin and is far below any wrong term.
ATOL = 1e-10


def _case(seed, rank, *, channel_last=False, grid_batch=2, requires_grad=False, spread=1.3):
    """Random float64 x (N=2, C=3, sides 4..6) and a grid with points in and outside [-1, 1]."""
    gen = torch.Generator().manual_seed(seed)
    sides = (4, 5, 6, 4)[:rank]
    x = torch.randn((2, 3) + sides, dtype=torch.float64, generator=gen)
    if channel_last:
        x = x.movedim(1, -1).contiguous()
    out = (3, 2, 3, 2)[:rank]
    grid = (torch.rand((grid_batch,) + out + (rank,), dtype=torch.float64, generator=gen)
            * 2 - 1) * spread
    return x.requires_grad_(requires_grad), grid.requires_grad_(requires_grad)


def _variants() -> list:
    """Every rank 1-4 x mode x padding; align_corners, channel_last and a broadcast grid vary."""
    return [pytest.param(rank, mode, padding, i % 2 == 0, i % 3 == 0, i % 4 == 1,
                         id=f"{rank}d-{mode}-{padding}")
            for i, (rank, mode, padding)
            in enumerate(itertools.product((1, 2, 3, 4), MODES, PADDINGS))]


def _codes(mode, padding):
    from gridsample._options import parse_mode, parse_padding
    return parse_mode(mode), parse_padding(padding)


@pytest.mark.parametrize("rank, mode, padding, align, channel_last, broadcast", _variants())
def test_opcheck_every_operator(rank, mode, padding, align, channel_last, broadcast):
    x, grid = _case(rank, rank, channel_last=channel_last, grid_batch=1 if broadcast else 2,
                    requires_grad=True)
    m, p = _codes(mode, padding)
    options = (m, p, align, channel_last)
    y = OPS.grid_sample(x, grid, *options)
    gout = torch.randn_like(y).requires_grad_()
    torch.library.opcheck(OPS.grid_sample.default, (x, grid, *options))
    torch.library.opcheck(OPS.grid_sample_backward.default,
                          (gout, x, grid, *options, [True, True]))
    torch.library.opcheck(OPS.grid_sample_backward.default,
                          (gout, x, grid, *options, [False, True]))
    # The double backward has no derivative of its own: its inputs do not require grad.
    args = (torch.randn_like(x), torch.randn_like(grid), gout.detach(), x.detach(),
            grid.detach(), *options)
    torch.library.opcheck(OPS.grid_sample_double_backward.default, (*args, [True, True, True]))
    torch.library.opcheck(OPS.grid_sample_double_backward.default,
                          (None, args[1], *args[2:], [True, False, True]))


@pytest.mark.parametrize("rank", (1, 2, 3))
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_gradgradcheck(rank, mode, padding):
    align = (rank + len(mode) + len(padding)) % 2 == 0
    x, grid = _case(10 * rank, rank, requires_grad=True)

    def fn(a, b):
        return gt.grid_sample(a, b, mode, padding, align_corners=align)

    assert torch.autograd.gradgradcheck(fn, (x, grid))


@pytest.mark.parametrize("channel_last, broadcast", ((True, False), (False, True)))
def test_gradgradcheck_layouts(channel_last, broadcast):
    x, grid = _case(7, 2, channel_last=channel_last, grid_batch=1 if broadcast else 2,
                    requires_grad=True)

    def fn(a, b):
        return gt.grid_sample(a, b, "bicubic", "reflection", align_corners=False,
                              channel_last=channel_last)

    assert torch.autograd.gradgradcheck(fn, (x, grid))


def _second_derivatives(sample, x, grid, gout, ggx, ggg):
    """d/d(gout, x, grid) of <ggx, dL/dx> + <ggg, dL/dgrid> through autograd."""
    gout = gout.clone().requires_grad_()
    y = sample(x, grid)
    gx, gg = torch.autograd.grad(y, (x, grid), gout, create_graph=True)
    m = (gx * ggx).sum() + (gg * ggg).sum()
    grads = torch.autograd.grad(m, (gout, x, grid), allow_unused=True)
    return [torch.zeros_like(t) if d is None else d for d, t in zip(grads, (gout, x, grid))]


@pytest.mark.parametrize("align", (False, True))
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("rank, mode", [(2, m) for m in MODES] + [(3, "linear"), (3, "nearest")])
def test_second_derivatives_match_torch(rank, mode, padding, align):
    x, grid = _case(rank + 100, rank, requires_grad=True)
    gen = torch.Generator().manual_seed(5)
    gout = torch.randn((2, 3) + grid.shape[1:-1], dtype=torch.float64, generator=gen)
    ggx = torch.randn(x.shape, dtype=torch.float64, generator=gen)
    ggg = torch.randn(grid.shape, dtype=torch.float64, generator=gen)
    ours = _second_derivatives(
        lambda a, b: gt.grid_sample(a, b, TORCH_MODE[mode], padding, align_corners=align),
        x, grid, gout, ggx, ggg)
    ref = _second_derivatives(
        lambda a, b: F.grid_sample(a, b, TORCH_MODE[mode], padding, align_corners=align),
        x, grid, gout, ggx, ggg)
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=ATOL)


# --- torch.compile and torch.export -------------------------------------------------------

class SpatialTransformer(torch.nn.Module):
    """affine_grid -> grid_sample, with a learned affine matrix."""

    def __init__(self):
        super().__init__()
        self.theta = torch.nn.Parameter(torch.tensor([[[0.9, 0.2, 0.05], [-0.1, 1.1, 0.1]]]))

    def forward(self, image):
        theta = self.theta.expand(image.shape[0], 2, 3)
        grid = F.affine_grid(theta, list(image.shape), align_corners=False)
        return gt.grid_sample(image, grid, "bilinear", "border", align_corners=False)


class DeformationField(torch.nn.Module):
    """A learned 3-D displacement field added to the identity grid, cubic sampling."""

    def __init__(self, shape):
        super().__init__()
        self.flow = torch.nn.Parameter(0.05 * torch.randn((1, *shape, 3),
                                                          generator=torch.Generator().manual_seed(3)))
        eye = torch.eye(3, 4).unsqueeze(0)
        self.register_buffer("identity", F.affine_grid(eye, [1, 1, *shape], align_corners=True))

    def forward(self, volume):
        grid = self.identity + self.flow
        return gt.grid_sample(volume, grid, "bicubic", "reflection", align_corners=True)


def _models():
    gen = torch.Generator().manual_seed(1)
    return [(SpatialTransformer(), torch.randn(2, 3, 12, 10, generator=gen)),
            (DeformationField((5, 6, 4)), torch.randn(1, 2, 5, 6, 4, generator=gen))]


def _loss_and_grads(model, inp):
    loss = model(inp).square().mean()
    params = list(model.parameters())
    return loss, torch.autograd.grad(loss, params)


@pytest.mark.parametrize("which", (0, 1), ids=("spatial-transformer", "deformation-field"))
def test_torch_compile_fullgraph(which):
    model, inp = _models()[which]
    eager_loss, eager_grads = _loss_and_grads(model, inp)
    compiled = torch.compile(model, fullgraph=True)  # a graph break would raise here
    loss, grads = _loss_and_grads(compiled, inp)
    # inductor computes affine_grid in its own order: float32 rounding apart
    torch.testing.assert_close(loss, eager_loss, atol=1e-5, rtol=1e-5)
    for a, b in zip(grads, eager_grads):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("which", (0, 1), ids=("spatial-transformer", "deformation-field"))
def test_torch_export(which):
    model, inp = _models()[which]
    program = torch.export.export(model, (inp,))
    targets = {str(n.target) for n in program.graph.nodes}
    assert "gridsample.grid_sample.default" in targets
    torch.testing.assert_close(program.module()(inp), model(inp), atol=0, rtol=0)


@pytest.mark.parametrize("mode, options", [("bilinear", {}), ("bicubic", {"cubic_a": -0.5})])
def test_dynamic_shapes_compile_and_export(mode, options):
    """Symbolic sizes and floats through the wrappers' option parsing and the operators'
    shape inference: one graph serves several batch and image sizes (the default cubic_a's
    math.isfinite once broke the graph)."""
    def sample(x, g):
        return gt.grid_sample(x, g, mode, "border", False, **options)

    compiled = torch.compile(sample, dynamic=True, fullgraph=True)
    gen = torch.Generator().manual_seed(5)
    for n, h in ((2, 5), (3, 7), (1, 9)):
        x = torch.randn(n, 2, h, h + 1, generator=gen)
        g = torch.rand(n, 4, 3, 2, generator=gen) * 2.4 - 1.2
        torch.testing.assert_close(compiled(x, g), sample(x, g), atol=0, rtol=0)

    class Sampler(torch.nn.Module):
        def forward(self, x, g):
            return sample(x, g)

    batch, height = torch.export.Dim("batch", max=64), torch.export.Dim("height", max=512)
    program = torch.export.export(
        Sampler(), (torch.randn(2, 2, 5, 6), torch.rand(2, 4, 3, 2)),
        dynamic_shapes={"x": {0: batch, 2: height}, "g": {0: batch}})
    x, g = torch.randn(5, 2, 9, 6, generator=gen), torch.rand(5, 4, 3, 2, generator=gen)
    torch.testing.assert_close(program.module()(x, g), sample(x, g), atol=0, rtol=0)


# --- tensors: devices, layouts, no copies --------------------------------------------------

def test_meta_tensors_infer_shapes():
    x = torch.empty(2, 3, 8, 9, device="meta")
    grid = torch.empty(1, 4, 5, 2, device="meta")
    y = gt.grid_sample(x, grid, align_corners=False)
    assert y.device.type == "meta" and y.shape == (2, 3, 4, 5)
    y = gt.grid_sample(x.movedim(1, -1), grid, align_corners=False, channel_last=True)
    assert y.shape == (2, 4, 5, 3)


# Shapes and dtypes the CPU call refuses: shape inference (meta tensors, compile, export)
# refuses them too, with the same error type, rather than inferring an output.
_BAD_SAMPLE_SHAPES = [
    ((1, 1, 3, 3), (1, 2, 2, 2, 3), torch.float32, "rank 4"),  # grid of another rank
    ((1, 1, 3, 3), (1, 2, 2, 3), torch.float32, "last axis"),
    ((2, 1, 3, 3), (3, 2, 2, 2), torch.float32, "batch size 3"),
    ((1, 1, 0, 3), (1, 2, 2, 2), torch.float32, "nothing to sample from"),
    ((1, 1, 3, 3), (1, 2, 2, 2), torch.int64, "grid has dtype"),
    ((3, 3), (1, 2, 2, 2), torch.float32, "at least 3 axes"),
]


@pytest.mark.parametrize("x_shape, grid_shape, grid_dtype, match", _BAD_SAMPLE_SHAPES)
def test_shape_inference_refuses_what_the_call_refuses(x_shape, grid_shape, grid_dtype, match):
    # (the same words eagerly: the tensors by their names, input and grid)
    with pytest.raises((gridsample.GridSampleError, gridsample.GridSampleTypeError),
                       match=match) as cpu:
        gt.grid_sample(torch.zeros(x_shape), torch.zeros(grid_shape, dtype=grid_dtype),
                       align_corners=False)
    with pytest.raises(type(cpu.value), match=match):
        gt.grid_sample(torch.zeros(x_shape, device="meta"),
                       torch.zeros(grid_shape, dtype=grid_dtype, device="meta"),
                       align_corners=False)


@pytest.mark.parametrize("values_shape, grid_shape, shape, match", [
    ((1, 1, 5, 5), (1, 2, 2, 2), (4, 4), r"values has shape \(1, 1, 5, 5\)"),
    ((1, 1, 2, 2), (2, 2, 2, 2), (4, 4), "batch size 2"),
    ((1, 1, 2, 2), (1, 2, 2, 3), (4, 4), "last axis"),
    ((), (1, 2, 2, 2), (4, 4), "at least 3 axes"),
])
def test_push_shape_inference_refuses_what_the_call_refuses(values_shape, grid_shape, shape,
                                                           match):
    with pytest.raises(gridsample.GridSampleError):
        gt.grid_push(torch.zeros(values_shape), torch.zeros(grid_shape), shape)
    with pytest.raises(gridsample.GridSampleError, match=match):
        gt.grid_push(torch.zeros(values_shape, device="meta"),
                     torch.zeros(grid_shape, device="meta"), shape)
    good = gt.grid_push(torch.zeros(1, 2, 3, 5, device="meta"),
                        torch.zeros(1, 3, 5, 2, device="meta"), (7, 8))
    assert good.shape == (1, 2, 7, 8)


@pytest.mark.parametrize("values_shape, grid_shape, shape", [
    ((1, 2, 3, 3), (2, 3, 3, 2), (1, 2, 4, 5)),  # batch
    ((1, 2, 3, 3), (1, 3, 3, 2), (1, 2, 0, 5)),  # an empty result under non-empty values
    ((1, 2, 0, 5), (1, 3, 3, 2), (1, 2, 0, 5)),  # values that sampling cannot give
])
def test_push_shape_inference_says_what_the_call_says(values_shape, grid_shape, shape):
    """One set of rules (_push.check_push_shapes) for the call and for shape inference."""
    with pytest.raises(gridsample.GridSampleError) as cpu:
        gt.grid_push(torch.ones(values_shape), torch.zeros(grid_shape), shape)
    with pytest.raises(gridsample.GridSampleError) as meta:
        gt.grid_push(torch.ones(values_shape, device="meta"),
                     torch.zeros(grid_shape, device="meta"), shape)
    assert str(meta.value).replace("[", "(").replace("]", ")") == str(cpu.value)


@pytest.mark.parametrize("call", [
    lambda: gt.grid_push(torch.ones(1, 1, 2, 2, dtype=torch.int64, device="meta"),
                         torch.zeros(1, 2, 2, 2, device="meta"), (4, 4)),
    lambda: gt.affine_grid(torch.zeros(1, 2, 3, device="meta").to(torch.float8_e4m3fn),
                           (1, 1, 4, 4), align_corners=False),
], ids=["push-int-values", "affine-float8-theta"])
def test_shape_inference_refuses_dtypes_the_call_refuses(call):
    with pytest.raises(gridsample.GridSampleTypeError, match="allowed dtypes"):
        call()


def test_data_dependent_sizes_compile():
    """Sizes known only at run time (nonzero, boolean masks) pass shape inference: its checks
    become runtime assertions, not guards on them."""
    m = torch.tensor([True, False, True, True])
    x = torch.randn(4, 2, 5, 5, generator=torch.Generator().manual_seed(6))
    cases = [
        (lambda x, g: gt.grid_sample(x[torch.nonzero(m).squeeze(1)], g, align_corners=False),
         torch.rand(1, 3, 3, 2)),  # a data-dependent batch against a broadcast grid
        (lambda x, g: gt.grid_sample(x[:, :, torch.nonzero(m).squeeze(1)], g,
                                     align_corners=False), torch.rand(1, 4, 5, 2)),
        (lambda x, g: gt.grid_push(x[torch.nonzero(m).squeeze(1)], g, (6, 6)),
         torch.rand(1, 5, 5, 2)),
    ]
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        for f, g in cases:
            got = torch.compile(f, fullgraph=True, backend="eager")(x, g)
            torch.testing.assert_close(got, f(x, g), atol=0, rtol=0)


def test_export_with_separate_batch_dims_checks_them_at_run_time():
    class Sampler(torch.nn.Module):
        def forward(self, x, g):
            return gt.grid_sample(x, g, "bilinear", "zeros", False)

    program = torch.export.export(
        Sampler(), (torch.randn(2, 2, 5, 6), torch.rand(2, 4, 3, 2)),
        dynamic_shapes={"x": {0: torch.export.Dim("b1")}, "g": {0: torch.export.Dim("b2")}})
    x, g = torch.randn(3, 2, 5, 6), torch.rand(3, 4, 3, 2)
    torch.testing.assert_close(program.module()(x, g), Sampler()(x, g), atol=0, rtol=0)
    with pytest.raises(Exception, match="size"):  # grid batch 2 against 3: the assertion
        program.module()(x, torch.rand(2, 4, 3, 2))


@pytest.mark.parametrize("make", [lambda: torch.zeros(1, 1, 3, 3).to(torch.float8_e4m3fn),
                                  lambda: torch.zeros(1, 1, 3, 3).to_sparse()],
                         ids=["float8", "sparse"])
def test_tensors_without_a_numpy_view_are_type_errors(make):
    with pytest.raises(gridsample.GridSampleTypeError, match="input has dtype"):
        gt.grid_sample(make(), torch.zeros(1, 2, 2, 2), align_corners=False)


def test_strided_tensors_are_read_in_place(monkeypatch):
    """channels_last-strided, transposed and requires-grad tensors reach NumPy as views."""
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(2, 3, 8, 9, generator=gen).to(memory_format=torch.channels_last)
    grid = torch.rand(2, 5, 4, 2, generator=gen).transpose(1, 2) * 2 - 1  # non-contiguous
    x.requires_grad_()
    seen = []
    real = gt._to_numpy

    def spy(name, t):
        a = real(name, t)
        seen.append((name, np.shares_memory(a, t.detach().numpy())))
        return a

    monkeypatch.setattr(gt, "_to_numpy", spy)
    y = gt.grid_sample(x, grid, "bicubic", align_corners=False)
    assert seen == [("input", True), ("grid", True)]
    ref = gridsample.grid_sample(x.detach().contiguous().numpy(), grid.contiguous().numpy(),
                                 "cubic")
    np.testing.assert_array_equal(y.detach().numpy(), ref)
    y.sum().backward()
    assert x.grad.shape == x.shape


def test_non_cpu_tensors_are_refused():
    """The wrapper lets meta tensors through (shape inference); the kernels take CPU only."""
    meta = torch.zeros(1, 1, 4, 4, device="meta")
    with pytest.raises(gridsample.GridSampleError, match="input is on device meta.*CPU"):
        gt._to_numpy("input", meta)
    with pytest.raises(gridsample.GridSampleError, match="grid is on device meta.*CPU"):
        gt._check_device("grid", meta, allowed=("cpu",))
    with pytest.raises(gridsample.GridSampleTypeError, match="grid has type ndarray"):
        gt.grid_sample(torch.zeros(1, 1, 4, 4), np.zeros((1, 2, 2, 2)), align_corners=False)


@pytest.mark.parametrize("call", [
    lambda cpu, meta: gt.grid_sample(cpu((1, 1, 4, 4)), meta((1, 2, 2, 2)), align_corners=False),
    lambda cpu, meta: gt.grid_sample(meta((1, 1, 4, 4)), cpu((1, 2, 2, 2)), align_corners=False),
    lambda cpu, meta: gt.grid_push(cpu((1, 1, 2, 2)), meta((1, 2, 2, 2)), (4, 4)),
    lambda cpu, meta: gt.grid_push(meta((1, 1, 2, 2)), cpu((1, 2, 2, 2)), (4, 4)),
    lambda cpu, meta: torch.ops.gridsample.grid_sample(cpu((1, 1, 4, 4)), meta((1, 2, 2, 2)),
                                                       0, 0, False, False),
])
def test_a_cpu_tensor_beside_a_meta_one_is_refused(call):
    """Shape inference alone would answer: an output of memory never written (PyTorch's own
    operators refuse the mix too)."""
    def cpu(shape):
        return torch.zeros(shape)

    def meta(shape):
        return torch.zeros(shape, device="meta")

    with pytest.raises(gridsample.GridSampleError, match="on device meta and .* on cpu|"
                                                         "on device cpu and .* on meta"):
        call(cpu, meta)


def test_grid_count_of_a_meta_grid_infers_its_shape():
    out = gt.grid_count(torch.zeros(2, 3, 3, 2, device="meta"), (4, 5))
    assert out.device.type == "meta" and out.shape == (2, 1, 4, 5)


@pytest.mark.parametrize("fill", [torch.nn.Parameter(torch.tensor([1.0, 2.0])),
                                  torch.tensor(0.5, requires_grad=True)])
def test_a_fill_value_that_requires_grad_is_refused(fill):
    """The fill is a constant of the operator: read as numbers, a fill that wants a gradient
    would get none, silently."""
    x, grid = torch.zeros(1, 2, 4, 4), torch.zeros(1, 2, 2, 2)
    with pytest.raises(gridsample.GridSampleTypeError, match="fill_value=.*requires grad"):
        gt.grid_sample(x, grid, "bilinear", "constant", False, fill_value=fill)
    out = gt.grid_sample(x, grid, "bilinear", "constant", False, fill_value=fill.detach())
    with torch.no_grad():  # (no gradient to lose)
        same = gt.grid_sample(x, grid, "bilinear", "constant", False, fill_value=fill)
    torch.testing.assert_close(out, same, rtol=0, atol=0)


def test_third_derivative_is_refused():
    x, grid = _case(4, 2, requires_grad=True)
    y = gt.grid_sample(x, grid, "bicubic", align_corners=False)
    (gg,) = torch.autograd.grad(y.sum(), grid, create_graph=True)
    (h,) = torch.autograd.grad(gg.sum(), grid, create_graph=True)
    with pytest.raises(RuntimeError, match="autograd"):
        torch.autograd.grad(h.sum(), grid)


def test_readme_pytorch_examples_run_as_written():
    """Every README code block that imports gridsample.torch runs as written."""
    import pathlib
    import re

    readme = (pathlib.Path(__file__).parents[1] / "README.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S)
              if "import gridsample.torch" in b]
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


# --- The options beyond ONNX, push and count (issue 15) -------------------------------

EXTRA_CASES = [
    pytest.param(mode, padding, extras, id=f"{mode}-{name}")
    for mode in MODES
    for name, padding, extras in (
        ("wrap", "wrap", {}),
        ("mirror-symmetric", ("mirror", "symmetric"), {}),
        ("constant-fill", "constant", {"fill_value": [0.5, -1.0, 2.0]}),
        ("wrap-border-pixels", ("wrap", "border"), {"grid_units": "pixels"}),
        ("symmetric-displacement", "symmetric", {"displacement": True}),
    )
] + [pytest.param("cubic", "border", {"cubic_a": -0.5}, id="cubic-a"),
      pytest.param("bspline4", ("wrap", "border"), {}, id="bspline4")]


def _extras_case(extras):
    x, grid = _case(7, 2, spread=1.6)
    if extras.get("grid_units") == "pixels":
        grid = grid * 4
    if extras.get("displacement"):
        grid = grid * 0.3
    return x, grid


@pytest.mark.parametrize("mode, padding, extras", EXTRA_CASES)
def test_extras_match_numpy_and_have_exact_gradients(mode, padding, extras):
    x, grid = _extras_case(extras)
    y = gt.grid_sample(x, grid, mode, padding, align_corners=False, **extras)
    want = gridsample.grid_sample(x.numpy(), grid.numpy(), mode, padding, **extras)
    np.testing.assert_array_equal(y.numpy(), want)
    x.requires_grad_()
    grid.requires_grad_(mode != "nearest")

    def f(*args):  # nearest has no grid gradient: then x alone varies
        xx, gg = args if len(args) == 2 else (args[0], grid)
        return gt.grid_sample(xx, gg, mode, padding, align_corners=False, **extras)

    inputs = (x, grid) if mode != "nearest" else (x,)
    assert torch.autograd.gradcheck(f, inputs, atol=1e-7)
    assert torch.autograd.gradgradcheck(f, inputs, atol=1e-6)


@pytest.mark.parametrize("mode, padding, extras", EXTRA_CASES)
def test_opcheck_the_extras(mode, padding, extras):
    x, grid = _extras_case(extras)
    x.requires_grad_()
    grid.requires_grad_()
    from gridsample.torch import _extras

    code = _codes(mode, "zeros")[0]
    pad, per_axis, fill, a, pixels, displacement, prefilter = _extras(
        2, code, padding, extras.get("fill_value", 0), extras.get("cubic_a", -0.75),
        extras.get("grid_units", "normalized"), extras.get("displacement", False), True)
    options = (code, pad, False, False)
    tail = (per_axis, fill, a, pixels, displacement, prefilter)
    y = OPS.grid_sample(x, grid, *options, *tail)
    gout = torch.randn_like(y)
    torch.library.opcheck(OPS.grid_sample.default, (x, grid, *options, *tail))
    torch.library.opcheck(OPS.grid_sample_backward.default,
                          (gout, x, grid, *options, [True, True], *tail))
    torch.library.opcheck(OPS.grid_push.default,
                          (gout, grid, list(x.shape), *options, per_axis, a, pixels,
                           displacement, prefilter))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection", "mirror", "wrap"])
def test_push_and_count_autograd(mode, padding):
    x, grid = _case(11, 2, spread=1.4)
    v = torch.randn(2, 3, 3, 2, dtype=torch.float64, requires_grad=True)
    grid.requires_grad_(mode != "nearest")
    pushed = gt.grid_push(v, grid, (4, 5), mode, padding)
    np.testing.assert_array_equal(
        pushed.detach().numpy(),
        gridsample.grid_push(v.detach().numpy(), grid.detach().numpy(), (4, 5), mode, padding))
    inputs = (v, grid) if mode != "nearest" else (v,)

    def push(*args):  # nearest has no grid gradient: then v alone varies
        vv, gg = args if len(args) == 2 else (args[0], grid)
        return gt.grid_push(vv, gg, (4, 5), mode, padding)

    assert torch.autograd.gradcheck(push, inputs, atol=1e-7)
    assert torch.autograd.gradgradcheck(push, inputs, atol=1e-6)
    count = gt.grid_count(grid, (4, 5), mode, padding)
    assert count.shape == (2, 1, 4, 5)
    np.testing.assert_array_equal(count.detach().numpy(), gridsample.grid_count(
        grid.detach().numpy(), (4, 5), mode, padding))
    if mode != "nearest":
        assert torch.autograd.gradcheck(lambda g: gt.grid_count(g, (4, 5), mode, padding),
                                        (grid,), atol=1e-7)


def test_push_compiles_and_exports():
    class Splat(torch.nn.Module):
        def forward(self, v, grid):
            return gt.grid_push(v, grid, (6, 7), "bilinear", "wrap").square().sum()

    v, grid = torch.randn(2, 3, 4, 5), torch.rand(2, 4, 5, 2) * 2 - 1
    eager = Splat()(v, grid)
    compiled = torch.compile(Splat(), fullgraph=True)(v, grid)
    torch.testing.assert_close(compiled, eager)
    exported = torch.export.export(Splat(), (v, grid))
    assert "gridsample.grid_push.default" in str(exported.graph)
    torch.testing.assert_close(exported.module()(v, grid), eager)


# --- The eager path: plain CPU tensors skip the dispatcher, everything traced keeps the op ---

def _grad_fn_name(y) -> str:
    return type(y.grad_fn).__name__


@pytest.mark.parametrize("mode, padding, extras", [
    ("bilinear", "zeros", {}), ("bicubic", "reflection", {"cubic_a": -0.5}),
    ("nearest", ("wrap", "border"), {}), ("bilinear", "constant", {"fill_value": [0.5, 1, -2]}),
    ("bspline3", "mirror", {"grid_units": "pixels"}),
])
def test_eager_path_equals_the_operator(mode, padding, extras):
    """gt.grid_sample on plain tensors runs the kernels at once (its graph node is the eager
    function's); its output, both gradients and the second derivatives are the operator's,
    bit for bit."""
    from gridsample.torch import _sample_options

    x, grid = _case(21, 2, requires_grad=True, spread=1.5)
    if extras.get("grid_units") == "pixels":
        grid = (grid.detach() * 4).requires_grad_()
    options = _sample_options(2, mode, padding, False, False, extras.get("fill_value", 0),
                              extras.get("cubic_a", -0.75),
                              extras.get("grid_units", "normalized"), False, True)
    eager = gt.grid_sample(x, grid, mode, padding, align_corners=False, **extras)
    op = OPS.grid_sample(x, grid, *options)
    assert _grad_fn_name(eager) == "_EagerGridSampleBackward"
    assert _grad_fn_name(op) != _grad_fn_name(eager)
    torch.testing.assert_close(eager, op, atol=0, rtol=0)
    gen = torch.Generator().manual_seed(4)
    gout = torch.randn(eager.shape, dtype=torch.float64, generator=gen)
    ggx = torch.randn(x.shape, dtype=torch.float64, generator=gen)
    ggg = torch.randn(grid.shape, dtype=torch.float64, generator=gen)
    first = [torch.autograd.grad(y, (x, grid), gout, retain_graph=True) for y in (eager, op)]
    for a, b in zip(*first):
        torch.testing.assert_close(a, b, atol=0, rtol=0)
    second = [_second_derivatives(sample, x, grid, gout, ggx, ggg) for sample in (
        lambda a, b: gt.grid_sample(a, b, mode, padding, align_corners=False, **extras),
        lambda a, b: OPS.grid_sample(a, b, *options))]
    for a, b in zip(*second):
        torch.testing.assert_close(a, b, atol=0, rtol=0)


def test_eager_path_without_gradients_and_for_parameters():
    x, grid = _case(22, 2)
    with torch.no_grad():
        y = gt.grid_sample(x.requires_grad_(), grid, "bicubic", align_corners=True)
    assert y.grad_fn is None and not y.requires_grad
    planes = torch.nn.Parameter(x.detach().clone())  # neural-field feature planes
    y = gt.grid_sample(planes, grid, "bicubic", align_corners=True)
    assert _grad_fn_name(y) == "_EagerGridSampleBackward"
    y.square().sum().backward()
    want = OPS.grid_sample_backward(2 * y.detach(), x.detach(), grid, 2, 0, True, False,
                                    [True, False])[0]
    torch.testing.assert_close(planes.grad, want, atol=0, rtol=0)


@pytest.mark.filterwarnings("ignore:.*torch.jit.trace.*:DeprecationWarning")
def test_traced_calls_keep_the_operator():
    """make_fx (a dispatch mode), torch.jit.trace and functorch transforms see the
    operator, not the kernels' result."""
    from torch.fx.experimental.proxy_tensor import make_fx

    x, grid = _case(23, 2)

    def f(a, b):
        return gt.grid_sample(a, b, "bilinear", "border", align_corners=False)

    graph = make_fx(f)(x, grid)
    assert "gridsample.grid_sample.default" in {str(n.target) for n in graph.graph.nodes}
    traced = torch.jit.trace(f, (x, grid), check_trace=False)
    assert "gridsample::grid_sample" in str(traced.graph)
    other = grid * 0.5
    torch.testing.assert_close(traced(x, other), f(x, other), atol=0, rtol=0)
    # Under a torch.func transform every call takes the operator: its inputs are functorch
    # tensors (of type Tensor), and an autograd.Function would raise there even for tensors
    # captured from outside.
    from gridsample.torch import _runs_eagerly

    seen = []

    def probe(b):
        seen.append((_runs_eagerly(x, b), _runs_eagerly(x, grid)))
        return b.sum()

    torch.func.grad(probe)(grid)
    assert seen == [(False, False)]


def test_kept_options_are_told_apart_and_bad_ones_still_raise():
    """Parsed options are kept by value and type: True is not the code 1, a list or tensor
    fill is read at every call, and a bad option raises at every call."""
    x, grid = _case(24, 2)
    nearest = gt.grid_sample(x, grid, 1, align_corners=False)  # code 1: nearest
    torch.testing.assert_close(nearest, gt.grid_sample(x, grid, "nearest", align_corners=False))
    for _ in range(2):
        with pytest.raises(gridsample.GridSampleTypeError, match="mode"):
            gt.grid_sample(x, grid, True, align_corners=False)
        with pytest.raises(gridsample.GridSampleError, match="padding_mode='zero'"):
            gt.grid_sample(x, grid, padding_mode="zero", align_corners=False)
    fill = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    a = gt.grid_sample(x, grid, padding_mode="constant", fill_value=fill, align_corners=False)
    fill[:] = -5.0
    b = gt.grid_sample(x, grid, padding_mode="constant", fill_value=fill, align_corners=False)
    want = gridsample.grid_sample(x.numpy(), grid.numpy(), padding_mode="constant",
                                  fill_value=[-5.0] * 3)
    np.testing.assert_array_equal(b.numpy(), want)
    assert not torch.equal(a, b)


@pytest.mark.parametrize("mode, padding", [("bilinear", "wrap"), ("bicubic", "reflection"),
                                           ("nearest", "zeros")])
def test_eager_push_equals_the_operator(mode, padding):
    """gt.grid_push on plain tensors skips the dispatcher as gt.grid_sample does: the
    operator's result, gradients and second derivatives, bit for bit."""
    from gridsample._options import parse_mode, parse_padding

    x, grid = _case(25, 2, spread=1.4)
    v = torch.randn(2, 3, 3, 2, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(6)).requires_grad_()
    grid.requires_grad_()
    options = (parse_mode(mode), parse_padding(padding), False, False)
    eager = gt.grid_push(v, grid, (4, 5), mode, padding)
    op = OPS.grid_push(v, grid, [2, 3, 4, 5], *options)
    assert _grad_fn_name(eager) == "_EagerGridPushBackward"
    torch.testing.assert_close(eager, op, atol=0, rtol=0)
    gout = torch.randn(eager.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    for create_graph in (False, True):
        grads = [torch.autograd.grad(y, (v, grid), gout, retain_graph=True,
                                     create_graph=create_graph) for y in (eager, op)]
        for a, b in zip(*grads):
            torch.testing.assert_close(a, b, atol=0, rtol=0)
    # a second derivative through the eager node: d/dgrid of <dpush/dv, w>
    w = torch.randn(v.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
    second = []
    for y in (eager, op):
        (gv,) = torch.autograd.grad(y, v, gout, retain_graph=True, create_graph=True)
        second.append(torch.autograd.grad((gv * w).sum(), grid, allow_unused=True)[0])
    if second[0] is None or second[1] is None:
        assert second[0] is None and second[1] is None
    else:
        torch.testing.assert_close(second[0], second[1], atol=0, rtol=0)


def test_eager_path_leaves_transforms_batched_and_lazy_tensors_to_the_dispatcher():
    """Calls the eager path cannot serve as the operator does go to the operator: under a
    torch.func transform (tensors captured from outside it included), with the batched
    tensors of batched gradients (is_grads_batched, vectorized jacobians), with a lazily
    negated tensor, and with the zero tensors autograd passes for unused outputs."""
    x, grid = _case(26, 2, requires_grad=True)

    def f(a, b):
        return gt.grid_sample(a, b, "bilinear", "border", align_corners=False)

    y = f(x, grid)
    assert _grad_fn_name(y) == "_EagerGridSampleBackward"
    # torch.func with a captured tensor that requires grad
    scale = torch.tensor(2.0, dtype=torch.float64)
    d = torch.func.grad(lambda s: (f(x, grid) * s).sum())(scale)
    torch.testing.assert_close(d, y.detach().sum(), atol=0, rtol=0)
    mapped = torch.func.vmap(lambda s: (f(x, grid) * s).sum())(torch.ones(3, dtype=torch.float64))
    torch.testing.assert_close(mapped, y.detach().sum().expand(3), atol=0, rtol=0)
    # batched gradients: each row the gradient of one output element
    eye = torch.eye(y.numel(), dtype=torch.float64)[:5].reshape(5, *y.shape)
    batched = torch.autograd.grad(y, (x, grid), eye, retain_graph=True, is_grads_batched=True)
    for k in range(5):
        one = torch.autograd.grad(y, (x, grid), eye[k], retain_graph=True)
        for a, b in zip(batched, one):
            torch.testing.assert_close(a[k], b, atol=0, rtol=0)
    # a lazily negated input, and a zero tensor for grad_output
    z = torch.complex(x.detach(), -x.detach())
    negated = z.conj().imag  # x itself, its negation a lazy bit
    assert negated.is_neg()
    torch.testing.assert_close(f(negated, grid.detach()), y.detach(), atol=0, rtol=0)
    zeros = torch.autograd.grad(y, (x, grid), torch._efficientzerotensor(y.shape,
                                                                         dtype=y.dtype))
    assert all(not t.any() for t in zeros)


# --- affine_grid: gridsample's kernel, differentiable w.r.t. theta -------------------------

AFFINE_SIZES = [(2, 3, 5, 7), (2, 1, 4, 5, 6), (1, 1, 1, 3), (2, 1, 1, 1, 4), (2, 1, 3, 1)]


@pytest.mark.parametrize("align", (False, True))
@pytest.mark.parametrize("size", AFFINE_SIZES, ids=str)
def test_affine_grid_matches_torch_and_numpy_with_gradients(size, align):
    """Values: gridsample.affine_grid's bits, PyTorch's up to its matrix product's rounding
    (float64: 1e-15 per term); dL/dtheta: PyTorch's, and central differences twice over
    (gradcheck, gradgradcheck) -- through the eager path and through the operator."""
    r = len(size) - 2
    gen = torch.Generator().manual_seed(len(size) * 10 + align)
    theta = torch.randn(size[0], r, r + 1, dtype=torch.float64, generator=gen,
                        requires_grad=True)
    grid = gt.affine_grid(theta, size, align_corners=align)
    assert _grad_fn_name(grid) == "_EagerAffineGridBackward"
    np.testing.assert_array_equal(grid.detach().numpy(), gridsample.affine_grid(
        theta.detach().numpy(), size, align))
    with pytest.warns(UserWarning) if 1 in size[2:] and align else _no_warning():
        want = F.affine_grid(theta, list(size), align_corners=align)
    torch.testing.assert_close(grid, want, atol=1e-14, rtol=0)
    gout = torch.randn(grid.shape, dtype=torch.float64, generator=gen)
    (ours,) = torch.autograd.grad(grid, theta, gout)
    (theirs,) = torch.autograd.grad(want, theta, gout)
    torch.testing.assert_close(ours, theirs, atol=1e-12, rtol=1e-12)
    op = OPS.affine_grid(theta, list(size), align)
    (via_op,) = torch.autograd.grad(op, theta, gout)
    torch.testing.assert_close(via_op, ours, atol=0, rtol=0)
    for f in (lambda t: gt.affine_grid(t, size, align_corners=align),
              lambda t: OPS.affine_grid(t, list(size), align)):
        assert torch.autograd.gradcheck(f, (theta,))
        assert torch.autograd.gradgradcheck(f, (theta,))
    torch.library.opcheck(OPS.affine_grid.default, (theta, list(size), align))


def _no_warning():
    import contextlib
    return contextlib.nullcontext()


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16, torch.float32))
def test_affine_grid_narrow_types(dtype):
    theta = (torch.eye(2, 3) + 0.1 * torch.randn(2, 3, generator=torch.Generator()
                                                 .manual_seed(1))).expand(4, 2, 3)
    theta = theta.to(dtype).requires_grad_()
    grid = gt.affine_grid(theta, (4, 1, 6, 5), align_corners=False)
    assert grid.dtype == dtype and grid.shape == (4, 6, 5, 2)
    want = gridsample.affine_grid(gt._to_numpy("theta", theta), (4, 1, 6, 5))
    np.testing.assert_array_equal(gt._to_numpy("grid", grid), want)
    grid.float().sum().backward()
    assert theta.grad.dtype == dtype
    # d(sum of the grid)/dtheta: the sums of the base coordinates (0 along x and y: the
    # bases are symmetric) and the point count (30) for the translation column.
    torch.testing.assert_close(theta.grad.float(), torch.tensor(
        [[0.0, 0.0, 30.0], [0.0, 0.0, 30.0]]).expand(4, 2, 3), atol=2e-2, rtol=0)


def test_affine_grid_errors_name_the_argument():
    with pytest.raises(gridsample.GridSampleError, match="theta has shape"):
        gt.affine_grid(torch.zeros(2, 3, 3), (2, 1, 4, 4), align_corners=False)
    with pytest.raises(gridsample.GridSampleError, match="size="):
        gt.affine_grid(torch.zeros(2, 2, 3), (2, 4, 4), align_corners=False)
    with pytest.raises(gridsample.GridSampleTypeError, match="theta has type"):
        gt.affine_grid(np.zeros((1, 2, 3)), (1, 1, 4, 4), align_corners=False)
    with pytest.warns(UserWarning, match="align_corners"):
        gt.affine_grid(torch.zeros(1, 2, 3), (1, 1, 2, 2))
    for bad in (5, None):
        with pytest.raises(gridsample.GridSampleError, match="size="):
            gt.affine_grid(torch.zeros(1, 2, 3), bad, align_corners=False)
    with pytest.raises(gridsample.GridSampleTypeError, match="size=.*non-integers"):
        gt.affine_grid(torch.zeros(1, 2, 3), [1, 1, 4.0, 4], align_corners=False)
    meta = gt.affine_grid(torch.zeros(2, 3, 4, device="meta"), (2, 1, 3, 4, 5),
                          align_corners=True)
    assert meta.device.type == "meta" and meta.shape == (2, 3, 4, 5, 3)
    # shape inference checks what the kernel would
    for theta, size, match in [((3, 2, 3), (2, 1, 4, 5), "batch size 3 but size"),
                               ((2, 3, 4), (2, 1, 4, 5), "theta has shape"),
                               ((2, 2, 3), (2, 1, 4, 5, 6, 7), "6 entries")]:
        with pytest.raises(gridsample.GridSampleError, match=match):
            gt.affine_grid(torch.zeros(theta, device="meta"), size, align_corners=False)
    with pytest.raises(gridsample.GridSampleTypeError, match="theta has dtype"):
        gt.affine_grid(torch.zeros(2, 2, 3, dtype=torch.int32, device="meta"), (2, 1, 4, 5),
                       align_corners=False)


def test_affine_grid_unit_axes_warn_and_empty_batches_differentiate():
    with pytest.warns(UserWarning, match="unit-size"):
        gt.affine_grid(torch.zeros(2, 2, 3), (2, 1, 1, 5), align_corners=True)
    theta = torch.zeros(0, 2, 3, requires_grad=True)
    grid = gt.affine_grid(theta, (0, 1, 4, 5), align_corners=False)
    assert grid.shape == (0, 4, 5, 2)
    grid.sum().backward()
    assert theta.grad.shape == (0, 2, 3)


class AffineTransformer(SpatialTransformer):
    """The spatial transformer on gridsample's affine_grid as well."""

    def forward(self, image):
        theta = self.theta.expand(image.shape[0], 2, 3)
        grid = gt.affine_grid(theta, image.shape, align_corners=False)
        return gt.grid_sample(image, grid, "bilinear", "border", align_corners=False)


def test_affine_grid_compiles_and_exports():
    model, image = AffineTransformer(), torch.randn(2, 3, 12, 10,
                                                    generator=torch.Generator().manual_seed(9))
    eager_loss, eager_grads = _loss_and_grads(model, image)
    compiled = torch.compile(model, fullgraph=True)
    loss, grads = _loss_and_grads(compiled, image)
    torch.testing.assert_close(loss, eager_loss, atol=1e-6, rtol=1e-6)
    for a, b in zip(grads, eager_grads):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    program = torch.export.export(model, (image,))
    targets = {str(n.target) for n in program.graph.nodes}
    assert {"gridsample.affine_grid.default", "gridsample.grid_sample.default"} <= targets
    torch.testing.assert_close(program.module()(image), model(image), atol=0, rtol=0)


def test_forward_mode_ad_is_refused_not_dropped():
    """No operator of gridsample.torch has a forward-mode formula: jvp, jacfwd and dual
    tensors raise (PyTorch would otherwise return a zero or missing tangent), while the
    forward-AD context alone and vmap still run."""
    import torch.autograd.forward_ad as fwAD

    x, grid = _case(27, 2)
    theta = torch.randn(2, 2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    calls = {
        "grid_sample": lambda a: gt.grid_sample(a, grid, "bicubic", align_corners=False),
        "grid_push": lambda a: gt.grid_push(a, grid, (4, 5)),
        "affine_grid": lambda t: gt.affine_grid(t, (2, 1, 4, 5), align_corners=False),
    }
    first = {"grid_sample": x, "grid_push": torch.randn(2, 3, 3, 2, dtype=torch.float64),
             "affine_grid": theta}
    for name, f in calls.items():
        a = first[name]
        with pytest.raises(NotImplementedError, match=f"{name}: forward-mode AD"):
            torch.func.jvp(f, (a,), (torch.ones_like(a),))
        with pytest.raises(NotImplementedError, match="forward-mode AD"):
            torch.func.jacfwd(f)(a)
        with fwAD.dual_level():
            plain = f(a)  # no dual input: runs
            with pytest.raises(NotImplementedError, match="forward-mode AD"):
                f(fwAD.make_dual(a, torch.ones_like(a)))
        torch.testing.assert_close(plain, f(a), atol=0, rtol=0)
    mapped = torch.func.vmap(calls["affine_grid"])(torch.stack([theta, 2 * theta]))
    torch.testing.assert_close(mapped[1], calls["affine_grid"](2 * theta), atol=0, rtol=0)
