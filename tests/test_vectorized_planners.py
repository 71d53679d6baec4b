"""The vector planners' point loops are vectorized by LLVM.

Nothing else notices when one of them falls back to a scalar loop: the results stay the same
bits, only slower.  That happened to 2-D and 3-D nearest under the index paddings (mirror,
symmetric, wrap): its planner was handed the grid and indexed it itself, and LLVM left the loop
scalar on every target (2.2-2.8x border's time on Zen 5; docs/kernels.md, "The index paddings in
the vector planners").  Each planner rounds or floors its coordinates; a vectorized loop does it
on vectors (``llvm.rint.v8f32``, ``llvm.floor.v16f32``, ...), a scalar one on floats alone.

The backward's planners are compiled functions of their own that its entries call
(:func:`gridsample._jit.callee`), and the process that compiles an entry runs their standalone
code: optimized once, the 2-D linear grid gradient's under reflection and the index paddings
stayed scalar (docs/kernels.md, "Freshly compiled code can run slower").  Their standalone IR
is checked here; the input gradient's reflection planner, vectorized after one pass too, is a
guard.

The entries' IR can be read only where they were compiled in the process (not loaded from the
cache), so a child process compiles them into a cache folder of its own, with the host's code
and with Haswell's AVX2 code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gridsample._simd import AVAILABLE

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="x86 with AVX2 only")

# (compiled function of gridsample's module, rank, mode, padding, the rounding it vectorizes);
# the forward's entries inline their planners, the backward's call them
PLANNERS = [
    ("_vector_entries.nearest_2d_index", 2, "nearest", "wrap", "rint"),
    ("_vector_entries.nearest_3d_index", 3, "nearest", "mirror", "rint"),
    ("_vector_entries.nearest_2d_border", 2, "nearest", "border", "rint"),
    ("_vector_entries.linear_2d_index_rows", 2, "linear", "symmetric", "floor"),
    ("_grad_vector_entries.plan_grad_linear_2d_reflection", 2, "linear", "reflection", "floor"),
    ("_grad_vector_entries.plan_grad_linear_2d_index", 2, "linear", "wrap", "floor"),
    ("_grad_vector_entries.plan_linear_2d_reflection", 2, "linear", "reflection", "floor"),
]

_CHILD = """
import json, re, sys
import numpy as np
import gridsample
from gridsample import _grad_vector_entries, _vector_entries
found = {}
for name, rank, mode, pad, op in json.loads(sys.argv[1]):
    x = np.ones((1, 3) + (9,) * rank, np.float32)
    shape = (1, 64) + (1,) * (rank - 1) + (rank,)
    grid = np.linspace(-1.2, 1.2, 64 * rank, dtype=np.float32).reshape(shape)
    module, function = name.split(".")
    if module == "_vector_entries":
        gridsample.grid_sample(x, grid, mode, pad)
    else:
        gout = np.ones((1, 3) + shape[1:-1], np.float32)
        gridsample.grid_sample_backward(gout, x, grid, mode, pad)
    entry = getattr(globals()[module], function)
    assert entry.signatures, f"{name} was not compiled by its call"
    ir = "".join(entry.inspect_llvm(sig) for sig in entry.signatures)
    found[name] = sorted(set(re.findall(r"llvm\\.%s\\.v(\\d+)f32" % op, ir)))
print(json.dumps(found))
"""


def _vector_widths(tmp_path, cpu: str | None) -> dict:
    env = dict(os.environ, GRIDSAMPLE_CACHE_DIR=str(tmp_path / (cpu or "host")),
               GRIDSAMPLE_KERNELS="auto", GRIDSAMPLE_ROW_LOADS="auto")
    env.pop("NUMBA_DISABLE_JIT", None)
    if cpu is not None:
        env.update(NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES="")
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(PLANNERS)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("cpu", [None, "haswell"], ids=["host", "haswell"])
def test_the_planners_round_whole_vectors(tmp_path, cpu):
    widths = _vector_widths(tmp_path, cpu)
    for name, *_ in PLANNERS:
        assert widths[name], f"{name}: its planner's loop was not vectorized ({cpu or 'host'})"
