"""The vector sweeps' two ways of reading taps (gridsample._row_loads; 2-D cubic and
linear, 3-D linear): row loads and gathers give the same bits, and the engine picks rows
only where they apply.

Both strategies compute the same float32 operations in the same order, so the
results are compared as bits (``view(np.uint32)``: the sign of a zero included;
a NaN as any NaN, since LLVM may swap the operands of an add and x86 returns the
first of two NaN operands), and each against the general kernels
(``assert_array_equal``: those may differ in the sign of a zero sum, see
test_vector_kernels.py).
"""

from __future__ import annotations

import itertools
import platform

import numba
import numpy as np
import pytest

import gridsample
from conftest import ALIGNS
from gridsample import _engine, _row_loads
from gridsample._errors import GridSampleError
from gridsample._options import MODE_CUBIC, MODE_LINEAR
from gridsample._target import fast_gathers, wide_gathers_beat_row_loads
from test_vector_kernels import PADDINGS, nasty_grid


def _kernel(mode, rank):
    # Beside that kernel's vector tests (conftest): each variant compiles once a run.
    return pytest.param(mode, rank, id=f"{mode}-{rank}d",
                        marks=pytest.mark.xdist_group(f"vector-{mode}-{rank}d"))


KERNELS = [_kernel("cubic", 2), _kernel("linear", 2), _kernel("linear", 3)]
#: Plan table rows of each kernel's gathering sweep.
PLAN_ROWS = {("cubic", 2): 8, ("linear", 2): 4, ("linear", 3): 6}
#: Those of every gathering sweep (nearest 1, 3-D cubic 12 too).
GATHER_ROWS = {1, 4, 6, 8, 12}
MODE_CODES = {"cubic": MODE_CUBIC, "linear": MODE_LINEAR}


@pytest.fixture(autouse=True)
def _user_kernels(monkeypatch):
    monkeypatch.setenv("GRIDSAMPLE_KERNELS", "auto")
    # A single float32 2-D linear channel would run the one pass (test_explicit_vectors.py)
    monkeypatch.setenv("GRIDSAMPLE_ONE_PASS", "off")


def sample(monkeypatch, loads, *args, **kwargs):
    """``grid_sample`` with the sweeps' loads forced to ``loads``."""
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", loads)
    return gridsample.grid_sample(*args, **kwargs)


def general(*args, **kwargs):
    with _engine.use_kernels("general"):
        return gridsample.grid_sample(*args, **kwargs)


def assert_same_bits(a, b):
    assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    numbers = ~np.isnan(a)
    np.testing.assert_array_equal(a[numbers].view(np.uint32), b[numbers].view(np.uint32))


def table_rows(monkeypatch) -> list:
    """The plan tables' row counts of the vector launches that follow, checking that the
    row-load entries run exactly when the table has the row loads' rows."""
    from gridsample._affine_entries import AFFINE_CHANNEL_LAST_ENTRIES, AFFINE_ROW_LOAD_ENTRIES
    from gridsample._planar_entries import PLANAR_CHANNEL_LAST_ENTRIES, PLANAR_ROW_LOAD_ENTRIES

    rows = []
    launch = _engine.run_claimed  # how the engine runs its vector entries
    by_rows = {*_engine.ROW_LOAD_ENTRIES.values(), *AFFINE_ROW_LOAD_ENTRIES.values(),
               *PLANAR_ROW_LOAD_ENTRIES.values()}
    # channel-last X of 2 to 4 channels: the channel-last entries of the kernels with runs
    # read rows where the table has them
    cl_rows = {entry for table in (_engine.CHANNEL_LAST_ENTRIES, AFFINE_CHANNEL_LAST_ENTRIES,
                                   PLANAR_CHANNEL_LAST_ENTRIES)
               for key, entry in table.items()
               if key[:2] in _row_loads.CL_ROW_CHANNELS and key[3] == "native"}

    def spy(entry, tasks, args, threads, scratch=()):
        if scratch:
            rows.append(scratch[0][0][0])
            if entry not in cl_rows:
                assert (rows[-1] not in GATHER_ROWS) == (entry in by_rows)
        return launch(entry, tasks, args, threads, scratch)

    monkeypatch.setattr(_engine, "run_claimed", spy)
    return rows


def with_rows(mode, rank):
    """The plan table's row count of ``(mode, rank)`` with the row loads' rows."""
    return PLAN_ROWS[(mode, rank)] + _row_loads.ROW_LOAD_ROWS[(rank, MODE_CODES[mode])]


def inputs(rng, shape, out_spatial, batch_grid=None):
    """X with ±inf and NaN among its values (a tap must never make 0 * inf), and a grid
    mostly inside -- whole groups of points that qualify -- with nasty points (edges, NaN,
    ±inf, huge values) in its last three quarters."""
    rank = len(out_spatial)
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[::97] = np.inf
    x.reshape(-1)[5::89] = -np.inf
    x.reshape(-1)[11::101] = np.nan
    gshape = (batch_grid or shape[0],) + out_spatial + (rank,)
    grid = rng.uniform(-0.8, 0.8, gshape).astype(np.float32)
    tail = grid.reshape(gshape[0], -1, rank)[:, grid[0].size // (4 * rank):]
    tail[...] = nasty_grid(rng, tail.shape, np.float32)
    return x, grid


SPATIAL = {2: ((9, 12), (13, 11)), 3: ((5, 6, 7), (4, 5, 7))}
#: X exactly a row of taps wide: a point that does not qualify loads the whole first row.
NARROWEST = {("cubic", 2): (6, 4), ("linear", 2): (6, 2), ("linear", 3): (4, 5, 2)}


@pytest.mark.parametrize("mode, rank", KERNELS)
@pytest.mark.parametrize("pad", PADDINGS)
def test_rows_equal_gathers_and_the_general_kernels(rng, monkeypatch, mode, rank, pad):
    # 1, 2 and 3 channels: the single sweep, a pair, a pair and one; 143 or 140 points:
    # whole groups and a tail of either lane count.
    in_spatial, out_spatial = SPATIAL[rank]
    cases = [(channels, align, in_spatial) for channels, align in
             itertools.product((1, 2, 3), ALIGNS)] + [(3, False, NARROWEST[(mode, rank)])]
    for channels, align, in_spatial in cases:
        x, grid = inputs(rng, (2, channels) + in_spatial, out_spatial)
        rows = table_rows(monkeypatch)
        got = sample(monkeypatch, "rows", x, grid, mode, pad, align)
        assert rows and set(rows) == {with_rows(mode, rank)}
        assert_same_bits(got, sample(monkeypatch, "gather", x, grid, mode, pad, align))
        np.testing.assert_array_equal(got, general(x, grid, mode, pad, align))


@pytest.mark.parametrize("mode, rank", KERNELS)
def test_rows_with_fill_values_per_axis_paddings_and_strided_views(rng, monkeypatch, mode,
                                                                    rank):
    in_spatial, out_spatial = SPATIAL[rank]
    x, grid = inputs(rng, (2, 3) + in_spatial, out_spatial)
    for fill, a in ((2.5, -0.5), ([1.0, -3.0, 7.5], -0.75)):
        kw = dict(fill_value=fill, cubic_a=a) if mode == "cubic" else dict(fill_value=fill)
        got = sample(monkeypatch, "rows", x, grid, mode, "constant", **kw)
        assert_same_bits(got, sample(monkeypatch, "gather", x, grid, mode, "constant", **kw))
        np.testing.assert_array_equal(got, general(x, grid, mode, "constant", **kw))
    # per-axis index paddings (one vector variant reads each axis's code), a grid of batch
    # 1 broadcast over 3 items
    x, grid = inputs(rng, (3, 2) + in_spatial, out_spatial, batch_grid=1)
    pads = ("wrap", "mirror", "symmetric")[:rank]
    rows = table_rows(monkeypatch)
    got = sample(monkeypatch, "rows", x, grid, mode, pads)
    assert set(rows) == {with_rows(mode, rank)}
    assert_same_bits(got, sample(monkeypatch, "gather", x, grid, mode, pads))
    # channels and an outer axis of X strided (a view with gaps, not copied), its rows
    # contiguous: rows apply
    big = rng.standard_normal((2, 6, 2 * in_spatial[0]) + in_spatial[1:]).astype(np.float32)
    xs = big[:, ::3, ::2]
    assert not xs.flags.c_contiguous
    rows.clear()
    got = sample(monkeypatch, "rows", xs, grid, mode, "zeros", True)
    assert set(rows) == {with_rows(mode, rank)}
    assert_same_bits(got, sample(monkeypatch, "gather", xs, grid, mode, "zeros", True))
    # channel-last with one channel: its rows are contiguous, and so are the output points
    xl = np.ascontiguousarray(np.moveaxis(x[:, :1], 1, -1))
    rows.clear()
    got = sample(monkeypatch, "rows", xl, grid, mode, "border", channel_last=True)
    assert set(rows) == {with_rows(mode, rank)}
    assert_same_bits(got, sample(monkeypatch, "gather", xl, grid, mode, "border",
                                 channel_last=True))
    np.testing.assert_array_equal(got, general(xl, grid, mode, "border", channel_last=True))


def _cl_kernel(mode):
    # Beside that kernel's vector tests (conftest): each variant compiles once a run.
    return pytest.param(mode, id=mode, marks=pytest.mark.xdist_group(f"vector-{mode}-2d"))


CL_MODES = [_cl_kernel("linear"), _cl_kernel("cubic")]


def channel_last(x):
    return np.ascontiguousarray(np.moveaxis(x, 1, -1))


@pytest.mark.parametrize("mode", CL_MODES)
@pytest.mark.parametrize("channels", [2, 3, 4])
@pytest.mark.parametrize("pad", PADDINGS)
def test_channel_last_rows_equal_gathers_the_general_kernels_and_channel_first(
        rng, monkeypatch, pad, channels, mode):
    """Channel-last float32 X of 2 to 4 channels (RGB) reads each row of 2-D linear or cubic
    taps as one run of taps x C elements (_row_loads.sweep_linear_2d_cl_rows,
    sweep_cubic_2d_cl_rows): the bits of the gathering sweeps, of the general kernels and of
    the same image channel-first; narrow X (a row of taps wide), NaN, ±inf and huge points,
    whole groups and tails of either lane count."""
    out_spatial = SPATIAL[2][1]
    for align, in_spatial in ((False, SPATIAL[2][0]), (True, SPATIAL[2][0]),
                              (False, NARROWEST[(mode, 2)]), (True, (40, 37))):
        x, grid = inputs(rng, (2, channels) + in_spatial, out_spatial)
        xl = channel_last(x)
        rows = table_rows(monkeypatch)
        got = sample(monkeypatch, "rows", xl, grid, mode, pad, align, channel_last=True)
        assert rows and set(rows) == {with_rows(mode, 2)}
        assert_same_bits(got, sample(monkeypatch, "gather", xl, grid, mode, pad, align,
                                     channel_last=True))
        np.testing.assert_array_equal(got, general(xl, grid, mode, pad, align,
                                                   channel_last=True))
        first = sample(monkeypatch, "rows", x, grid, mode, pad, align)
        assert_same_bits(got, np.ascontiguousarray(np.moveaxis(first, 1, -1)))


@pytest.mark.parametrize("mode", CL_MODES)
@pytest.mark.parametrize("channels", [2, 3, 4])
def test_channel_last_rows_with_fills_per_axis_paddings_affine_maps_and_flow_fields(
        rng, monkeypatch, channels, mode):
    x, grid = inputs(rng, (3, channels, 16, 21), (15, 19), batch_grid=1)
    xl = channel_last(x)
    fills = [1.0, -3.0, np.inf, 0.5][:channels]
    cases = [("constant", dict(fill_value=fills)), (("wrap", "mirror"), {}),
             (("symmetric", "wrap"), {})]
    if mode == "cubic":
        cases.append(("border", dict(cubic_a=-0.5)))
    for pad, kw in cases:
        rows = table_rows(monkeypatch)
        got = sample(monkeypatch, "rows", xl, grid, mode, pad, channel_last=True, **kw)
        assert set(rows) == {with_rows(mode, 2)}
        assert_same_bits(got, sample(monkeypatch, "gather", xl, grid, mode, pad,
                                     channel_last=True, **kw))
    # the grid held planar (a flow field's view) and affine maps: their channel-last entries
    flow = np.moveaxis(np.ascontiguousarray(np.moveaxis(grid, -1, 1)), 1, -1)
    rows.clear()
    got = sample(monkeypatch, "rows", xl, flow, mode, "zeros", channel_last=True)
    assert set(rows) == {with_rows(mode, 2)}
    assert_same_bits(got, sample(monkeypatch, "gather", xl, grid, mode, "zeros",
                                 channel_last=True))
    theta = (rng.uniform(-0.3, 0.3, (3, 2, 3)) + np.eye(2, 3)).astype(np.float32)
    for loads in ("rows", "gather"):
        monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", loads)
        rows.clear()
        warped = gridsample.affine_warp(xl, theta, (17, 23), mode, "border",
                                        channel_last=True)
        assert set(rows) <= ({with_rows(mode, 2)} if loads == "rows" else GATHER_ROWS)
        affine = gridsample.affine_grid(theta, (3, channels, 17, 23))
        assert_same_bits(warped, sample(monkeypatch, "gather", xl, affine, mode, "border",
                                        channel_last=True))


@pytest.mark.parametrize("mode", CL_MODES)
@pytest.mark.parametrize("case", ["five channels", "one channel", "float64", "float16",
                                  "channel-first output", "strided channels", "narrow"])
def test_channel_last_rows_only_where_they_apply(rng, monkeypatch, case, mode):
    """Float32, 2 to 4 channels, channel-last in X and in the output, each contiguous, rows
    at least a row of taps wide: elsewhere no channel-last row loads (and the general
    kernels' results)."""
    channels = {"five channels": 5, "one channel": 1}.get(case, 3)
    x = rng.standard_normal((1, channels, 6, 9)).astype(np.float32)
    if case in ("float64", "float16"):
        x = x.astype(case)
    elif case == "narrow":  # narrower than a row of taps
        x = x[..., :ROW_TAPS_OF[mode] - 1]
    xl = channel_last(x)
    if case == "strided channels":  # a pixel's channels 2 elements apart
        xl = channel_last(rng.standard_normal((1, 6, 6, 9)).astype(np.float32))[..., ::2]
    kw = {} if case == "channel-first output" else {"channel_last": True}
    grid = nasty_grid(rng, (1, 5, 7, 2), np.float32)
    data = x if case == "channel-first output" else xl
    rows = table_rows(monkeypatch)
    got = sample(monkeypatch, "rows", data, grid, mode, "border", **kw)
    # (channel-first X and one channel-last channel: the channel-first row loads)
    plain_rows = case in ("channel-first output", "one channel")
    assert rows and (set(rows) <= GATHER_ROWS) == (not plain_rows)
    np.testing.assert_array_equal(got, general(data, grid, mode, "border", **kw))


@pytest.mark.xdist_group("vector-linear-3d")
@pytest.mark.parametrize("channels", [2, 3, 4])
@pytest.mark.parametrize("pad", PADDINGS)
def test_channel_last_rows_3d(rng, monkeypatch, pad, channels):
    """3-D linear channel-last X of 2 to 4 channels read as runs (sweep_linear_3d_cl_rows):
    the bits of the gathering sweeps, the general kernels and the volume channel-first; X a
    row of taps wide; a grid held planar and affine maps through their channel-last entries."""
    in_spatial, out_spatial = SPATIAL[3]
    for align, spatial in ((False, in_spatial), (True, in_spatial),
                           (False, NARROWEST[("linear", 3)])):
        x, grid = inputs(rng, (2, channels) + spatial, out_spatial)
        xl = channel_last(x)
        rows = table_rows(monkeypatch)
        got = sample(monkeypatch, "rows", xl, grid, "linear", pad, align, channel_last=True)
        assert rows and set(rows) == {with_rows("linear", 3)}
        assert_same_bits(got, sample(monkeypatch, "gather", xl, grid, "linear", pad, align,
                                     channel_last=True))
        np.testing.assert_array_equal(got, general(xl, grid, "linear", pad, align,
                                                   channel_last=True))
        first = sample(monkeypatch, "rows", x, grid, "linear", pad, align)
        assert_same_bits(got, np.ascontiguousarray(np.moveaxis(first, 1, -1)))
    if pad != "zeros":
        return
    flow = np.moveaxis(np.ascontiguousarray(np.moveaxis(grid, -1, 1)), 1, -1)
    rows.clear()
    got = sample(monkeypatch, "rows", xl, flow, "linear", "zeros", channel_last=True)
    assert set(rows) == {with_rows("linear", 3)}
    assert_same_bits(got, sample(monkeypatch, "gather", xl, grid, "linear", "zeros",
                                 channel_last=True))
    theta = (rng.uniform(-0.3, 0.3, (2, 3, 4)) + np.eye(3, 4)).astype(np.float32)
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", "rows")
    rows.clear()
    warped = gridsample.affine_warp(xl, theta, (6, 5, 7), "linear", "border", channel_last=True)
    assert set(rows) == {with_rows("linear", 3)}
    affine = gridsample.affine_grid(theta, (2, channels, 6, 5, 7))
    assert_same_bits(warped, sample(monkeypatch, "gather", xl, affine, "linear", "border",
                                    channel_last=True))


#: Taps of a row, by mode (2-D).
ROW_TAPS_OF = {"linear": 2, "cubic": 4}


@pytest.mark.parametrize("mode, rank", KERNELS)
def test_rows_through_affine_warp(rng, monkeypatch, mode, rank):
    shape = (2, 3) + ((16, 20), (9, 8, 10))[rank - 2]
    theta = rng.uniform(-0.3, 0.3, (2, rank, rank + 1)) + np.eye(rank, rank + 1)
    theta = theta.astype(np.float32)
    x = rng.standard_normal(shape).astype(np.float32)
    out = ((21, 17), (7, 9, 11))[rank - 2]
    for loads in ("rows", "gather"):
        monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", loads)
        rows = table_rows(monkeypatch)
        got = gridsample.affine_warp(x, theta, out, mode, "border")
        want = {with_rows(mode, rank)} if loads == "rows" else {PLAN_ROWS[(mode, rank)]}
        assert rows and set(rows) == want
        grid = gridsample.affine_grid(theta, shape[:2] + out)
        # against the other form through the grid
        other = "gather" if loads == "rows" else "rows"
        assert_same_bits(got, sample(monkeypatch, other, x, grid, mode, "border"))


@pytest.mark.parametrize("case", ["narrow", "strided-rows", "channel-last", "float64",
                                  "float16", "nearest"])
def test_rows_only_where_they_apply(rng, monkeypatch, case):
    """X's rows must be contiguous and at least a row of taps wide, the output
    channel-first float32, the kernel one with row loads: elsewhere the plan has no
    row-load rows (and the results are the general kernels')."""
    x = rng.standard_normal((1, 2, 6, 9)).astype(np.float32)
    mode, kw = "cubic", {}
    if case == "narrow":
        x = x[..., :3]
    elif case == "strided-rows":
        x = rng.standard_normal((1, 2, 6, 18)).astype(np.float32)[..., ::2]
    elif case == "channel-last":  # (5 channels: 2 to 4 read runs, channel-last rows below)
        x = rng.standard_normal((1, 5, 6, 9)).astype(np.float32)
        x, kw = np.ascontiguousarray(np.moveaxis(x, 1, -1)), {"channel_last": True}
    elif case == "float64":
        x = x.astype(np.float64)
    elif case == "float16":
        x = x.astype(np.float16)
    else:
        mode = "nearest"
    grid = nasty_grid(rng, (1, 5, 7, 2), np.float32)
    rows = table_rows(monkeypatch)
    got = sample(monkeypatch, "rows", x, grid, mode, "border", **kw)
    assert rows and set(rows) <= GATHER_ROWS
    np.testing.assert_array_equal(got, general(x, grid, mode, "border", **kw))
    # linear reads rows of 2: a width of 1 is too narrow for it
    x1 = rng.standard_normal((1, 2, 6, 1)).astype(np.float32)
    rows.clear()
    got = sample(monkeypatch, "rows", x1, grid, "linear", "border")
    assert rows == [4]
    np.testing.assert_array_equal(got, general(x1, grid, "linear", "border"))


def test_the_default_and_a_bad_setting(monkeypatch):
    monkeypatch.delenv("GRIDSAMPLE_ROW_LOADS", raising=False)
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    assert _row_loads.row_loads(2, MODE_CUBIC) == ("rows" if x86 else "gather")
    # AVX2, and AVX-512 where its gathers are slow (Zen 4), but not Intel's AVX-512
    linear = ("rows" if x86 and (_row_loads.LANES == 8 or not wide_gathers_beat_row_loads())
              else "gather")
    assert _row_loads.row_loads(2, MODE_LINEAR) == _row_loads.row_loads(3, MODE_LINEAR) == linear
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", " Gather ")
    assert _row_loads.row_loads(2, MODE_CUBIC) == "gather"
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", "fast")
    x, grid = np.ones((1, 1, 5, 5), np.float32), np.zeros((1, 2, 2, 2), np.float32)
    with pytest.raises(GridSampleError, match="GRIDSAMPLE_ROW_LOADS='fast'.*auto, rows, gather"):
        gridsample.grid_sample(x, grid, "cubic")


ROW_FUNCTIONS = {("cubic", 2): ("cubic_2d", _row_loads._CUBIC_2D),
                 ("linear", 2): ("linear_2d", _row_loads._LINEAR_2D),
                 ("linear", 3): ("linear_3d", _row_loads._LINEAR_3D)}


def _point_sums(kernel, plane, off, wts, nb, zero):
    """Each point's sum by the gathering sweep's rule, point by point: ``w * tap`` over the
    rows, then the taps, in float32; a tap with any part of its offset below 0 reads
    ``zero``."""
    sums = np.zeros(nb, np.float32)
    for j in range(nb):
        acc = None
        for x_rows, parts in kernel.rows:
            for x in x_rows:
                w = wts[x, j]
                for part in parts:
                    w = w * wts[part, j]
                pieces = [int(off[k, j]) for k in (x, *parts)]
                tap = plane[sum(pieces)] if min(pieces) >= 0 else zero
                acc = w * tap if acc is None else acc + w * tap
        sums[j] = acc
    return sums


@pytest.mark.parametrize("mode, rank", KERNELS)
def test_group_plans_and_sums_by_hand(rng, mode, rank):
    """The compiled group plan marks exactly the points of the block that do not qualify
    (a mask made here from the plan's rows; the points past the block's end neither) and
    gives the others their rows' first taps; the compiled group sums, misses gathered in
    the group, equal each point's sum by the gathering rule bit for bit, and the
    interpreted twins do the same; nothing past the block is written."""
    name, kernel = ROW_FUNCTIONS[(mode, rank)]
    plan_rows, group_sums, pair_sums = (getattr(_row_loads, f"{what}_{name}")
                                        for what in ("plan_rows", "group", "pair"))
    plan = numba.njit(lambda off, j0, nb: plan_rows(off, j0, nb))
    lanes, groups = _row_loads.LANES, 3
    nb = lanes * groups - 3  # the last group ends with the block, 3 points early
    assert _row_loads.table_width(nb) == lanes * groups
    width = 40
    off = np.zeros((kernel.plan_rows + len(kernel.rows) + 1, lanes * groups), np.int32)
    # Offsets as a planner makes them: each row's x taps contiguous from a start, the rows
    # whole multiples of the width apart (per-axis plans: in rows of their own; the fused
    # 2-D linear plan: in each tap's offset); then some points spoiled.
    starts = rng.integers(0, width - kernel.taps, off.shape[1])
    x_rows = sorted({x for xs, _ in kernel.rows for x in xs})
    parts = sorted({p for _, ps in kernel.rows for p in ps})
    for p in parts:
        off[p] = rng.integers(0, 30, off.shape[1]) * width
    for xs, ps in kernel.rows:
        base = starts if ps else starts + rng.integers(0, 30, off.shape[1]) * width
        for t, x in enumerate(xs):
            off[x] = base + t
    spoil = rng.choice(nb, size=nb // 2, replace=False)
    outside = -1 if not parts else -2 ** 31
    for k, j in enumerate(spoil):
        how = k % 4
        if how == 0:
            off[x_rows[-1], j] = outside  # a tap outside
        elif how == 1:
            off[x_rows[1], j] = off[x_rows[0], j]  # padded: a repeated tap (border)
        elif how == 2:
            off[(parts or x_rows)[-1], j] = outside  # a row outside
        else:  # void: no tap inside (every x tap out, or for per-axis plans every row)
            for row in (parts if parts and k % 8 == 3 else x_rows):
                off[row, j] = outside
    # Stale entries past the block, far out yet looking as if they qualified: never read.
    for xs, _ in kernel.rows:
        for t, x in enumerate(xs):
            off[x, nb:] = 2 ** 28 + t
    for p in parts:
        off[p, nb:] = 2 ** 28
    expected = np.ones(nb, bool)
    void = np.ones(nb, bool)  # no tap inside, by the gathering rule
    for xs, ps in kernel.rows:
        row_in = np.ones(nb, bool)
        for p in ps:
            row_in &= off[p, :nb] >= 0
        for x in xs:
            void &= ~((off[x, :nb] >= 0) & row_in)
    for xs, ps in kernel.rows:
        x0 = off[xs[0], :nb].astype(np.int64)
        expected &= x0 >= 0
        for t, x in enumerate(xs[1:], 1):
            expected &= off[x, :nb] == x0 + t
        for p in ps:
            expected &= off[p, :nb] >= 0
    interpreted = off.copy()
    last = off.shape[0] - 1
    for g in range(groups):
        j0 = g * lanes
        mask = plan(off, j0, nb)
        bits = np.array([(mask >> p) & 1 for p in range(lanes)], bool)
        voids = np.array([(mask >> (lanes + p)) & 1 for p in range(lanes)], bool)
        live = np.arange(j0, j0 + lanes) < nb
        missed, empty = ~expected[j0:j0 + lanes], void[j0:j0 + lanes]
        np.testing.assert_array_equal(bits[live], (missed & ~empty)[live[live]])
        np.testing.assert_array_equal(voids[live], (missed & empty)[live[live]])
        assert not bits[~live].any() and not voids[~live].any()
        assert mask == _row_loads._plan_interpreted(kernel, interpreted, j0, nb)
        off[last, j0] = interpreted[last, j0] = mask  # as the sweep stores it
    assert (~expected & ~void).any() and void.any() and expected.any()
    np.testing.assert_array_equal(off[:, :nb], interpreted[:, :nb])  # the same row starts
    for r, (xs, ps) in enumerate(kernel.rows):  # a qualifying point's row: its first tap
        row = off[kernel.plan_rows + r, :nb]
        first = off[xs[0], :nb].astype(np.int64) + sum(off[p, :nb].astype(np.int64)
                                                       for p in ps)
        np.testing.assert_array_equal(row[expected], first[expected])
        assert (row[~expected] == 0).all() and (off[kernel.plan_rows + r, nb:] == 0).all()
    # the sums: compiled, interpreted and point by point, one channel and two
    plane = rng.standard_normal(100 * width).astype(np.float32)  # every row start inside
    other = rng.standard_normal(plane.size).astype(np.float32)
    wts = rng.standard_normal((kernel.plan_rows, off.shape[1])).astype(np.float32)
    za, zb = np.float32(0.0), np.float32(2.5)
    want, want_b = (_point_sums(kernel, p, off, wts, nb, z) for p, z in ((plane, za),
                                                                        (other, zb)))
    group = numba.njit(lambda xc, off, wts, j0, oc, nb, z: group_sums(xc, off, wts, j0, oc,
                                                                       nb, z))
    pair = numba.njit(lambda xa, xb, off, wts, j0, oa, ob, nb, za, zb: pair_sums(
        xa, xb, off, wts, j0, oa, ob, nb, za, zb))
    sentinel = np.float32(-7.0)
    got, got_b, twin, twin_b = (np.full(nb + 5, sentinel) for _ in range(4))
    for g in range(groups):
        group(plane, off, wts, g * lanes, got, nb, za)
        _row_loads._group_interpreted(kernel, plane, off, wts, g * lanes, twin, nb, za)
    for sums in (got, twin):
        assert_same_bits(sums[:nb], want)
        assert (sums[nb:] == sentinel).all()
    got[:] = twin[:] = sentinel
    for g in range(groups):
        pair(plane, other, off, wts, g * lanes, got, got_b, nb, za, zb)
        _row_loads._group_interpreted(kernel, plane, off, wts, g * lanes, twin, nb, za)
        _row_loads._group_interpreted(kernel, other, off, wts, g * lanes, twin_b, nb, zb)
    for sums, sums_b in ((got, got_b), (twin, twin_b)):
        assert_same_bits(sums[:nb], want)
        assert_same_bits(sums_b[:nb], want_b)
        assert (sums[nb:] == sentinel).all() and (sums_b[nb:] == sentinel).all()


def test_gridsample_info_names_what_reads_rows(monkeypatch):
    """``gridsample info``'s strategy line follows the CPU's choice and the variable, and
    reports a bad value instead of failing."""
    from gridsample.cli._info import _strategy_line

    monkeypatch.delenv("GRIDSAMPLE_ROW_LOADS", raising=False)
    want = [name for name, rank, mode in (("2-D cubic", 2, MODE_CUBIC),
                                          ("2-D linear", 2, MODE_LINEAR),
                                          ("3-D linear", 3, MODE_LINEAR))
            if _row_loads.row_loads(rank, mode) == "rows"]
    # (every kernel with row loads has channel-last runs)
    assert (f"a row at a time: {', '.join(want) or 'none'}; channel-last, 2-4 channels: "
            f"{', '.join(want) or 'none'} (") in _strategy_line()
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", "rows")
    line = _strategy_line()
    assert ("a row at a time: 2-D cubic, 2-D linear, 3-D linear; channel-last, 2-4 channels: "
            "2-D cubic, 2-D linear, 3-D linear (") in line
    if fast_gathers():  # the single channel's one pass yields to rows where wide gathers lose
        assert ("a single linear channel in one pass" in line) == wide_gathers_beat_row_loads()
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", "gather")
    line = _strategy_line()
    assert "a row at a time: none; channel-last, 2-4 channels: none (" in line
    assert ("a single linear channel in one pass" in line) == fast_gathers()
    monkeypatch.setenv("GRIDSAMPLE_ROW_LOADS", "fast")
    assert "GRIDSAMPLE_ROW_LOADS='fast' is not allowed" in _strategy_line()


@pytest.mark.parametrize("channels", [2, 3, 4])
def test_channel_last_row_sweep_by_hand(rng, channels):
    """sweep_linear_2d_cl_rows called on a plan made by hand: it does the work (returns
    ``nb``; a fallback would give the same bits unseen) and gives each channel's float32 sums
    in the gathering sweep's order, a tap outside reading the channel's outside value; it
    refuses (returns 0, writes nothing) a layout it does not serve."""
    C, H, W, nb = channels, 5, 6, _row_loads.LANES + 5  # a whole group and a partial one
    x = rng.standard_normal(H * W * C).astype(np.float32)
    width = _row_loads.table_width(nb)
    off = np.zeros((4 + _row_loads.ROW_LOAD_ROWS[(2, MODE_LINEAR)], width), np.int32)
    wts = np.zeros((4, width), np.float32)
    wts[:, :nb] = rng.uniform(-1, 1, (4, nb))
    ys, xs = rng.integers(0, H - 1, nb), rng.integers(0, W - 1, nb)
    base = (ys * W + xs) * C
    off[:4, :nb] = [base, base + C, base + W * C, base + W * C + C]
    off[1, 3] = -1  # point 3's second tap outside: a miss
    outside = np.arange(1, C + 1, dtype=np.float32) * 10
    want = np.empty((nb, C), np.float32)
    for j in range(nb):
        for c in range(C):
            taps = [x[q + c] if q >= 0 else outside[c] for q in off[:4, j]]
            acc = wts[0, j] * taps[0]
            for k in (1, 2, 3):
                acc = acc + wts[k, j] * taps[k]
            want[j, c] = acc

    @numba.njit
    def sweep(xn, xs_c, C, off, wts, nb, on, os_c, os_p, azero):
        return _row_loads.sweep_linear_2d_cl_rows(xn, xs_c, C, off, wts, nb, on, os_c, os_p,
                                                  azero)

    out = np.full(nb * C, np.nan, np.float32)
    assert sweep(x, 1, C, off.copy(), wts, nb, out, 1, C, outside) == nb
    assert_same_bits(out.reshape(nb, C), want)
    for layout in ((2, C, 1, C), (1, C, 2, C), (1, C, 1, C + 1)):  # xs_c, C, os_c, os_p
        untouched = np.full(nb * C, np.nan, np.float32)
        xs_c, count, os_c, os_p = layout
        assert sweep(x, xs_c, count, off.copy(), wts, nb, untouched, os_c, os_p, outside) == 0
        assert np.isnan(untouched).all()
