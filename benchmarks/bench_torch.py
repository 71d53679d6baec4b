"""Training steps in PyTorch: gridsample's operator against ``F.grid_sample``, in one process.

Run:  python -m benchmarks.bench_torch [--repeats 7] [--case SUBSTRING] [--markdown FILE]

Each case is one optimizer step (forward, loss, backward, SGD update) of a
small model that samples with either ``gridsample.torch.grid_sample`` or
``torch.nn.functional.grid_sample``, both the same model otherwise:

* spatial transformer: a learned affine matrix, ``affine_grid`` ->
  ``grid_sample`` (bilinear, border) on a batch of images (MNIST-sized digits, or
  16 RGB images of 128²), MSE to a target; the "+ gt.affine_grid" cases make
  gridsample's grid with ``gridsample.torch.affine_grid`` too (PyTorch's with its own);
* deformation field: a learned 3-D displacement field added to the
  identity grid, trilinear sampling of a volume, MSE plus a smoothness term;
* gradient penalty: the spatial transformer's loss plus the squared norm
  of its gradient w.r.t. the input image (``create_graph=True``: a double
  backward through the sampler), eager.

The first two run compiled (``torch.compile(fullgraph=True)``, inductor,
CPU) and eager.  torch.compile does not trace a double backward, so the
gradient penalty is eager only.  Steps are timed interleaved (medians, a
50 ms pause before each); the table gives steps per second and the time
ratio gridsample / F.grid_sample (< 1: gridsample faster).
"""

from __future__ import annotations

from benchmarks.timing import (
    SETTLE_SECONDS,
    case_arguments,
    interleaved_medians,
    machine_line,
    report,
)


def _samplers():
    import torch.nn.functional as F

    import gridsample.torch as gt
    return {"gridsample": gt.grid_sample, "torch": F.grid_sample}


def _spatial_transformer(sample, batch, side, channels=3, affine=None):
    import torch
    import torch.nn.functional as F

    affine = affine or F.affine_grid

    class SpatialTransformer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.theta = torch.nn.Parameter(torch.tensor([[0.9, 0.2, 0.05], [-0.1, 1.1, 0.1]]))

        def forward(self, image):
            theta = self.theta.expand(image.shape[0], 2, 3)
            grid = affine(theta, list(image.shape), align_corners=False)
            return sample(image, grid, "bilinear", "border", align_corners=False)

    gen = torch.Generator().manual_seed(0)
    image = torch.rand(batch, channels, side, side, generator=gen)
    target = torch.rand(batch, channels, side, side, generator=gen)
    return SpatialTransformer(), image, target


def _deformation_field(sample, side):
    import torch
    import torch.nn.functional as F

    class DeformationField(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.flow = torch.nn.Parameter(torch.zeros(1, side, side, side, 3))
            eye = torch.eye(3, 4).unsqueeze(0)
            self.register_buffer("identity",
                                 F.affine_grid(eye, [1, 1, side, side, side], align_corners=True))

        def forward(self, volume):
            return sample(volume, self.identity + self.flow, "bilinear", "zeros",
                          align_corners=True)

    gen = torch.Generator().manual_seed(1)
    volume = torch.rand(1, 1, side, side, side, generator=gen)
    target = torch.rand(1, 1, side, side, side, generator=gen)
    return DeformationField(), volume, target


def _step(model, forward, inp, target, penalty=False):
    """One SGD step as a zero-argument callable."""
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def run():
        opt.zero_grad(set_to_none=True)
        if penalty:
            inp.requires_grad_(True)
        out = forward(inp)
        loss = (out - target).square().mean()
        if penalty:  # R1-style: the norm of the loss's gradient w.r.t. the input
            (g,) = torch.autograd.grad(loss, inp, create_graph=True)
            loss = loss + g.square().sum()
        loss.backward()
        opt.step()
    return run


CASES = {
    # gridsample's runner with gt.affine_grid as well (the torch runner: F.affine_grid)
    "spatial transformer 64x1x28² (MNIST) + gt.affine_grid eager": (
        "stn", dict(batch=64, side=28, channels=1, gt_affine=True), False, False),
    "spatial transformer 16x3x128² + gt.affine_grid eager": (
        "stn", dict(batch=16, side=128, gt_affine=True), False, False),
    "spatial transformer 64x1x28² (MNIST) compiled": ("stn", dict(batch=64, side=28, channels=1),
                                                      True, False),
    "spatial transformer 64x1x28² (MNIST) eager": ("stn", dict(batch=64, side=28, channels=1),
                                                   False, False),
    "spatial transformer 16x3x128² compiled": ("stn", dict(batch=16, side=128), True, False),
    "spatial transformer 16x3x128² eager": ("stn", dict(batch=16, side=128), False, False),
    "deformation field 1x1x64³ compiled": ("field", dict(side=64), True, False),
    "deformation field 1x1x64³ eager": ("field", dict(side=64), False, False),
    "gradient penalty 16x3x128² eager": ("stn", dict(batch=16, side=128), False, True),
}


def runners_for(name):
    import torch

    import gridsample.torch as gt

    kind, size, compiled, penalty = CASES[name]
    size = dict(size)
    gt_affine = size.pop("gt_affine", False)
    runners = {}
    for label, sample in _samplers().items():
        build = _spatial_transformer if kind == "stn" else _deformation_field
        if gt_affine and label == "gridsample":
            size["affine"] = gt.affine_grid
        model, inp, target = build(sample, **size)
        size.pop("affine", None)
        # dynamic=False: each case compiles for its own shapes (a second shape would otherwise
        # recompile with symbolic sizes, where PyTorch 2.13's affine_grid backward fails)
        forward = torch.compile(model, fullgraph=True, dynamic=False) if compiled else model
        runners[label] = _step(model, forward, inp, target, penalty)
    return runners


def main(argv=None):
    args, selected = case_arguments(__doc__, argv, CASES)
    import numba
    import torch

    print(machine_line())
    print(f"PyTorch training-step benchmark: torch {torch.__version__}, {numba.get_num_threads()} "
          f"Numba threads, {torch.get_num_threads()} torch threads, {args.repeats} repeats",
          flush=True)
    lines = ["| case | gridsample steps/s | F.grid_sample steps/s | time ÷torch |",
             "|---|---|---|---|"]
    for name in selected:
        med = interleaved_medians(runners_for(name), args.repeats, settle=SETTLE_SECONDS)
        ratio = med["gridsample"] / med["torch"]
        lines.append(f"| {name} | {1 / med['gridsample']:.1f} | {1 / med['torch']:.1f} "
                     f"| {ratio:.2f} |")
        print(f"  {name}: gridsample {med['gridsample'] * 1e3:.1f} ms, torch "
              f"{med['torch'] * 1e3:.1f} ms, ratio {ratio:.2f}", flush=True)
    report("\n".join(lines), None, args.markdown)


if __name__ == "__main__":
    main()
