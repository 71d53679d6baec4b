"""ONNX: a spatial-transformer model and AffineGrid, gridsample against its peers.

Run:  python -m benchmarks.bench_onnx [--quick]

Part 1 times the model ``GridSample(X, AffineGrid(theta, size))`` through
``onnx.reference.ReferenceEvaluator`` alone, through the same evaluator with
gridsample's operators (``gridsample.onnx.evaluator``) and through
onnxruntime.  Part 2 times ``gridsample.affine_grid`` against
``torch.nn.functional.affine_grid`` on large sizes.  Medians of interleaved
calls; ratio < 1 means gridsample is faster.
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks.peers import ort_session_options
from benchmarks.timing import interleaved_medians

# (name, x shape, output spatial, mode, opset, time the plain evaluator): the
# plain pure-Python evaluator is timed on small models only (seconds each).
MODELS = [
    ("STN 2-D 1x3x64² linear", (1, 3, 64, 64), (64, 64), "linear", 20, True),
    ("STN 2-D 1x3x64² cubic border", (1, 3, 64, 64), (64, 64), "cubic border", 20, True),
    ("STN 3-D 1x1x16³ cubic", (1, 1, 16, 16, 16), (16, 16, 16), "cubic", 22, True),
    ("STN 2-D 1x3x512² linear", (1, 3, 512, 512), (512, 512), "linear", 20, False),
    ("STN 3-D 1x1x64³ linear", (1, 1, 64, 64, 64), (64, 64, 64), "linear", 20, False),
]
AFFINE_SIZES = [(1, 3, 1024, 1024), (8, 32, 128, 128), (1, 1, 128, 128, 128)]


def model_runners(x_shape, out_spatial, mode, opset, rng):
    import onnx.reference

    import gridsample.onnx as gso

    mode, _, padding = mode.partition(" ")
    model = gso.spatial_transformer_model(x_shape, out_spatial, mode=mode,
                                          padding_mode=padding or "zeros",
                                          opset=opset)
    r = len(x_shape) - 2
    feeds = {"X": rng.standard_normal(x_shape, dtype=np.float32),
             "theta": (np.eye(r, r + 1) + 0.2 * rng.standard_normal((x_shape[0], r, r + 1)))
             .astype(np.float32)}
    plain = onnx.reference.ReferenceEvaluator(model)
    ours = gso.evaluator(model)
    runners = {"gridsample ops": lambda: ours.run(None, feeds),
               "reference alone": lambda: plain.run(None, feeds)}
    notes = {}
    try:
        import onnxruntime as ort

        sess = ort.InferenceSession(model.SerializeToString(), ort_session_options(),
                                    providers=["CPUExecutionProvider"])
        sess.run(None, feeds)
        runners["onnxruntime"] = lambda: sess.run(None, feeds)
    except ImportError:
        notes["onnxruntime"] = "not installed"
    except Exception as exc:  # onnxruntime rejects 5-D cubic
        notes["onnxruntime"] = "unsupported" if "Cubic" in str(exc) else type(exc).__name__
    return runners, notes


def affine_runners(size, rng):
    import torch

    import gridsample

    r = len(size) - 2
    theta = (np.eye(r, r + 1) + 0.2 * rng.standard_normal((size[0], r, r + 1))).astype(np.float32)
    tt = torch.from_numpy(theta)
    return {"gridsample": lambda: gridsample.affine_grid(theta, size),
            "torch": lambda: torch.nn.functional.affine_grid(tt, list(size),
                                                             align_corners=False)}


def _ms(seconds):
    return f"{seconds * 1e3:.2f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats instead of 9")
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else 9
    rng = np.random.default_rng(0)

    print("| model | reference alone ms | gridsample ops ms | onnxruntime ms "
          "| speed-up over reference alone | ÷onnxruntime |")
    print("|---|---|---|---|---|---|")
    for name, x_shape, out_spatial, mode, opset, time_plain in MODELS:
        runners, notes = model_runners(x_shape, out_spatial, mode, opset, rng)
        # The pure-Python evaluator runs for seconds: time it on its own (two
        # calls), so that its long single-threaded stretches do not sit
        # between the millisecond calls of the others.
        plain = runners.pop("reference alone")
        med = interleaved_medians({"reference alone": plain}, 1) if time_plain else {}
        med.update(interleaved_medians(runners, repeats))
        ours = med["gridsample ops"]
        ort_cell = _ms(med["onnxruntime"]) if "onnxruntime" in med else notes["onnxruntime"]
        ratio = f"{ours / med['onnxruntime']:.2f}" if "onnxruntime" in med else "-"
        if time_plain:
            alone = med["reference alone"]
            plain_cell, speedup = _ms(alone), f"{alone / ours:.0f}x"
        else:
            plain_cell, speedup = "not timed (minutes)", "-"
        print(f"| {name} | {plain_cell} | {_ms(ours)} | {ort_cell} | {speedup} | {ratio} |",
              flush=True)

    print()
    print("| affine_grid float32 | gridsample ms | torch ms | ÷torch |")
    print("|---|---|---|---|")
    for size in AFFINE_SIZES:
        med = interleaved_medians(affine_runners(size, rng), repeats)
        label = "x".join(map(str, size))
        print(f"| {label} | {_ms(med['gridsample'])} | {_ms(med['torch'])} "
              f"| {med['gridsample'] / med['torch']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
