"""Run the kernels as plain Python (NUMBA_DISABLE_JIT=1) so their code is
exercised line by line, and checked against the reference, by a coverage tool.

The compiled and the interpreted kernels are the same source; this catches
mistakes that only show outside Numba's typing (and lets coverage see them).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent

# Small cases only: interpreted kernels run about 1000x slower.
SELECTION = ("test_any_rank_matches_reference or test_channel_last_is_bit_identical or "
             "test_non_finite_and_huge or TestNonFiniteRulesByHand or test_any_strides or "
             "test_grid_batch_of_one or test_empty_shapes")


# Element types: the Python bodies of the load/store helpers stand in for
# their compiled overloads.
DTYPE_SELECTION = ("TestRoundingAndSaturationByHand or test_every_type_channel_last or "
                   "TestStrings")


# The vector kernels against the general ones, both interpreted (small cases: all of it but
# the many-channel backward, whose scalar loops run here for one padding of each sweep, and
# 3-D cubic's other paddings: their per-axis code is 2-D cubic's, run here for each padding,
# and 3-D cubic's loops run for zeros, reflection and constant).  Interpreted, 3-D cubic is
# the slowest by far (~20-36 s a test), so these are two runs, cubic and the rest, which
# the test workers take in parallel.
VECTOR_SELECTION = ("(((vector or general or guard or nan_on or layouts) and not "
                    "many_channels_last_gradients) or (many_channels_last_gradients_equal "
                    "and zeros-float32 and (2-linear or 2-cubic or 3-linear))) and not "
                    "(3-cubic and not zeros-float32 and not reflection-float32 "
                    "and not constant_fill)")


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="already interpreted")
@pytest.mark.parametrize("module,selection", [
    ("test_vs_reference.py", SELECTION),
    ("test_dtypes.py", DTYPE_SELECTION),
    ("test_vector_kernels.py", f"({VECTOR_SELECTION}) and cubic"),
    ("test_vector_kernels.py", f"({VECTOR_SELECTION}) and not cubic"),
    ("test_row_loads.py", "rows or lowest or by_hand")])
def test_reference_twins_pass_with_jit_disabled(module, selection):
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         str(HERE / module), "-k", selection],
        env=env, capture_output=True, text=True, timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout
