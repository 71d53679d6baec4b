"""The generated kernel variants are current with their generator and the registry."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_vector_entries",
                                                  ROOT / "tools" / "gen_vector_entries.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_vector_entries_are_current():
    gen = _generator()
    for target, render in gen.OUTPUTS:
        assert target.read_text() == render(), (
            f"{target.name} is stale: run python tools/gen_vector_entries.py")


def test_every_registered_vector_kernel_has_entries():
    from gridsample import _engine
    from gridsample._options import MODE_LINEAR, MODE_NEAREST
    from gridsample._registry import MODES, PADDINGS

    want = {(r, m.code, p.code, family) for m in MODES for r in m.vector_ranks
            for p in PADDINGS if p.vector for family in ("native", "f16", "bf16", "int")}
    assert set(_engine.VECTOR_ENTRIES) == want
    assert set(_engine.CHANNEL_LAST_ENTRIES) == want  # a form per layout
    # 2-D cubic and linear, 3-D linear, float32 (the native family), from rows of taps
    from gridsample._row_loads import ROW_LOAD_ROWS

    assert set(_engine.ROW_LOAD_ENTRIES) == {key for key in want if key[:2] in ROW_LOAD_ROWS
                                             and key[3] == "native"}
    # a point at a time on channel-last memory: the kernels the engine has counts for
    assert set(_engine.INTERLEAVED_ENTRIES) == {key for key in want
                                                if key[:2] in _engine.INTERLEAVED_MIN_CHANNELS}
    # 2-D linear and nearest in one pass, the native family
    assert set(_engine.ONE_PASS_ENTRIES) == {key for key in want
                                             if key[:2] in ((2, MODE_LINEAR), (2, MODE_NEAREST))
                                             and key[3] == "native"}


def test_every_registered_grid_gradient_kernel_has_entries():
    from gridsample._grad_vector_entries import (
        GRID_GRAD_ENTRIES,
        GRID_GRAD_INTERLEAVED_ENTRIES,
        INPUT_GRAD_ENTRIES,
        INPUT_GRAD_INTERLEAVED_ENTRIES,
    )
    from gridsample._registry import MODES, PADDINGS

    want = {(r, m.code, p.code) for m in MODES for r in m.grid_grad_vector_ranks
            for p in PADDINGS if p.vector}
    assert set(GRID_GRAD_ENTRIES) == want
    assert set(GRID_GRAD_INTERLEAVED_ENTRIES) == want  # a form per layout
    scatters = {(r, m.code, p.code) for m in MODES for r in m.vector_ranks
                for p in PADDINGS if p.vector}
    assert set(INPUT_GRAD_ENTRIES) == set(INPUT_GRAD_INTERLEAVED_ENTRIES) == scatters


def test_the_other_kinds_tables_are_in_the_grid_kinds_order():
    """``vector_entry`` takes a kind's five tables by position: each must hold the twins of
    the grid kind's table in the same place (the same keys; each entry named as the grid's,
    with the kind's suffix)."""
    from gridsample import _engine
    from gridsample._affine_entries import AFFINE_TABLES
    from gridsample._planar_entries import PLANAR_TABLES

    grid_tables = (_engine.VECTOR_ENTRIES, _engine.CHANNEL_LAST_ENTRIES,
                   _engine.ROW_LOAD_ENTRIES, _engine.ONE_PASS_ENTRIES,
                   _engine.INTERLEAVED_ENTRIES)
    for suffix, tables in (("_affine", AFFINE_TABLES), ("_planar", PLANAR_TABLES)):
        assert len(tables) == len(grid_tables)
        for table, grid_table in zip(tables, grid_tables):
            assert set(table) == set(grid_table)
            for key, entry in table.items():
                assert entry.__name__ == grid_table[key].__name__ + suffix
