"""Write ``src/gridsample/_vector_entries.py``: the vector kernels' compiled variants.

Run from the repository root::

    python tools/gen_vector_entries.py

Numba specialises a compiled function on argument *types*, not values, and a
function that receives a compiled function as an argument is not cached on
disk. So each variant -- an entry per (mode, rank, padding, element family),
one for all the index paddings -- is a compiled function of its own that
names its templates and constants: ``run_blocks`` with the planner template
``plan_<mode>_<rank>d`` under a padding code and the sweep template
``sweep_<mode>_<rank>d`` under an element kind, all inlined into the entry
(:mod:`gridsample._inline`), so that LLVM optimizes and emits each variant's
code once.  They are written out here from the registry
(``gridsample._registry``: which (mode, rank) have vector kernels, which
paddings have planners) and ``gridsample._vector``; the plan tables' rows are
:data:`PLAN_ROWS` below.  ``tests/test_generated.py`` checks that the file is
current. A call compiles only the variant it runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "src" / "gridsample" / "_vector_entries.py"
GRAD_TARGET = ROOT / "src" / "gridsample" / "_grad_vector_entries.py"
AFFINE_TARGET = ROOT / "src" / "gridsample" / "_affine_entries.py"
PLANAR_TARGET = ROOT / "src" / "gridsample" / "_planar_entries.py"

#: Rows of the plan table of each vector (mode, rank): taps for the fused
#: plans (2-D linear, nearest), 2 or 4 per axis for the per-axis tables.
PLAN_ROWS = {("linear", 2): 4, ("nearest", 2): 1, ("cubic", 2): 8, ("linear", 3): 6,
             ("nearest", 3): 1, ("cubic", 3): 12}

#: Every vector sweep has three forms, each an entry of its own: into contiguous output
#: points, channel-first (``sweep_<mode>_<rank>d``, channels in pairs where that pays);
#: into strided points, channel-last, a channel at a time (``sweep_<mode>_<rank>d_cl``, in
#: the tables ``*CHANNEL_LAST_ENTRIES``); and channel-last with many contiguous channels, a
#: point at a time (``sweep_<mode>_<rank>d_il``, tables ``*INTERLEAVED_ENTRIES``): a call
#: compiles only the loops its layout runs.
LAYOUTS = ("", "_cl", "_il")

#: Kernels without the point-at-a-time form: 3-D cubic (its 64 taps' offsets and weights
#: spill; measured: docs/kernels.md, "Channel-last with many channels").
NO_INTERLEAVED_KERNELS = (("cubic", 3),)

#: Kernels with a third form, into contiguous points from float32 X read a row of taps per
#: load (``sweep_<mode>_<rank>d_rows``, ``gridsample._row_loads``; tables
#: ``*ROW_LOAD_ENTRIES``, native element family only): entries of their own, so that no
#: other element type or layout compiles its loops.
ROW_LOAD_KERNELS = (("cubic", 2), ("linear", 2), ("linear", 3))

#: Kernels with a form that plans and sums each point in one loop, no plan table
#: (``sum_<mode>_<rank>d_one``: linear a single channel, nearest every channel of a point;
#: tables ``ONE_PASS_ENTRIES``, entries that read a grid, native element family only).
ONE_PASS_KERNELS = (("linear", 2), ("nearest", 2))

#: Element families: name suffix, family key, the element kind the sweep
#: fixes (None: the caller's ``kind``).  float16 and bfloat16 sweeps fix
#: their kind at compile time so the conversions vectorize; "native" serves
#: float32, float64 and uint8.
FAMILIES = (("", "native", None), ("_f16", "f16", "KIND_F16"), ("_bf16", "bf16", "KIND_BF16"),
            ("_int", "int", "KIND_INT"))


_ENTRY_ARGS = ("share, claims, xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, "
               "os_c, os_p, C, block, wconst, kind, azero, off, wts, coords")


def _import_block(module: str, names) -> list:
    """``from module import (...)`` lines, one name per line, sorted (ruff's isort style)."""
    return [f"from {module} import ("] + [f"    {n}," for n in sorted(names)] + [")"]


def _wrap(text: str, indent: str, width: int = 99) -> str:
    """Break a call or signature at commas so that no line passes ``width``."""
    lines, line = [], ""
    for part in text.split(", "):
        piece = part if not line else line + ", " + part
        if len(piece) > width and line:
            lines.append(line + ",")
            line = indent + part
        else:
            line = piece
    lines.append(line)
    return "\n".join(lines)


def _def(name: str, args: str, body: str, decorator: str = "function") -> list:
    return ["", f"@{decorator}", _wrap(f"def {name}({args}):", " " * (len(name) + 5)),
            _wrap(f"    {body}", " " * (body.index("(") + 5)), ""]


def _variants(paddings) -> list:
    """Padding variants ``(name, code constant, paddings served)``: one per padding that pads
    the coordinate or its taps in its own way, and one for all the index paddings (mirror,
    symmetric, wrap), which reads each axis's code at run time (``_vector._fold``) and is
    compiled with the first one's code (the templates only ask ``pad >= PAD_MIRROR``)."""
    own = [(p.name, f"PAD_{p.name.upper()}", [p]) for p in paddings if not p.index]
    index = [p for p in paddings if p.index]
    return own + ([("index", f"PAD_{index[0].name.upper()}", index)] if index else [])


def _load_registry():
    """``gridsample._registry`` alone (pure Python), without importing the package."""
    import importlib.util

    path = ROOT / "src" / "gridsample" / "_registry.py"
    spec = importlib.util.spec_from_file_location("_gridsample_registry", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


#: The kinds of forward entry: where the coordinates come from (a grid array; a grid held
#: planar, a flow field's components as planes, whose points each block interleaves; affine
#: maps whose grid each block makes for itself), the module, its driver skeleton, the
#: arguments that differ, its scratch beyond the plan tables and the table name.
_FORWARD_KINDS = {
    "grid": (TARGET, "run_blocks", "", "grid", "", "ENTRIES",
             "Each entry runs the blocks its share claims (``share``, ``claims``:\n"
             ":mod:`gridsample._claims`) with :func:`gridsample._vector.run_blocks`, its\n"
             "planner and sweep templates inlined;\n"
             ":data:`ENTRIES` is the table the engine reads, :data:`PLAN_ROWS` the rows of "
             "the plan\ntables it passes."),
    "planar": (PLANAR_TARGET, "run_planar_blocks", "_planar", "grid", ", points",
               "PLANAR_ENTRIES",
               "The entries for a grid held planar (a flow field (N, r, D1, ..., Dr) passed as\n"
               "the grid (N, D1, ..., Dr, r), its component axis moved last): each runs the\n"
               "blocks its share claims with :func:`gridsample._vector.run_planar_blocks`,\n"
               "which copies each block's points as a grid holds them, then plans and sweeps\n"
               "them as :data:`gridsample._vector_entries.ENTRIES` does; imported only where\n"
               "such a grid is sampled."),
    "affine": (AFFINE_TARGET, "run_affine_blocks", "_affine", "theta, bases, bsizes",
               ", points", "AFFINE_ENTRIES",
               "The entries of :func:`gridsample.affine_warp`: each runs the blocks its share\n"
               "claims with :func:`gridsample._vector.run_affine_blocks`, which\n"
               "makes each block's points from the affine maps (the grid is never made whole),\n"
               "then plans and sweeps them as :data:`gridsample._vector_entries.ENTRIES` does;\n"
               "imported by ``affine_warp`` only."),
}


def _render_forward(kind: str) -> str:
    target, driver, suffix_all, source, extra, table_name, doc = _FORWARD_KINDS[kind]
    registry = _load_registry()
    MODES, PADDINGS = registry.MODES, registry.PADDINGS

    kernels = [(m, r) for m in MODES for r in m.vector_ranks]
    paddings = [p for p in PADDINGS if p.vector]
    variants = _variants(paddings)
    templates = sorted({f"plan_{m.name}_{r}d" for m, r in kernels}
                       | {f"sweep_{m.name}_{r}d" for m, r in kernels}
                       | {f"sweep_{m.name}_{r}d_cl" for m, r in kernels}
                       | {f"sweep_{m.name}_{r}d_il" for m, r in kernels
                          if (m.name, r) not in NO_INTERLEAVED_KERNELS}
                       | {f"sweep_{m}_{r}d_rows" for m, r in ROW_LOAD_KERNELS}
                       | {f"sum_{m}_{r}d_one" for m, r in ONE_PASS_KERNELS})
    entry_args = _ENTRY_ARGS.replace(", grid,", f", {source},") + extra
    cl_table_name = table_name.replace("ENTRIES", "CHANNEL_LAST_ENTRIES")
    il_table_name = table_name.replace("ENTRIES", "INTERLEAVED_ENTRIES")
    rows_table_name = table_name.replace("ENTRIES", "ROW_LOAD_ENTRIES")
    one_table_name = table_name.replace("ENTRIES", "ONE_PASS_ENTRIES")
    tables_name = table_name.replace("ENTRIES", "TABLES")
    names = ([table_name, cl_table_name, il_table_name, rows_table_name, one_table_name]
             + (["PLAN_ROWS"] if kind == "grid" else [tables_name]))
    out = [
        "# Generated by tools/gen_vector_entries.py from the registry: do not edit by hand.",
        '"""The vector kernels\' variants: an entry per (mode, rank, padding, element family),',
        "one for all the index paddings.",
        "",
        *doc.split("\n"),
        '"""',
        "",
        "from ._convert import KIND_BF16, KIND_F16, KIND_INT",
        "from ._jit import function",
        *_import_block("._registry", {f"MODE_{m.name.upper()}" for m, _ in kernels}
                       | {f"PAD_{p.name.upper()}" for p in paddings}),
        "from ._vector import (",
    ]
    out += [f"    {name}," for name in sorted(templates + [driver])]
    out += [")", "", "__all__ = ["]
    out += [f'    "{n}",' for n in names]
    out += ["]", ""]
    table, cl_table, il_table, rows_table, one_table = [], [], [], [], []
    # The driver's last argument: whether the sweep template plans its points itself.
    one_pass = (", 0", ", 1")
    for m, r in kernels:
        stem = f"{m.name}_{r}d"
        out.append(f"\n# {stem}")
        layouts = list(zip(LAYOUTS, (table, cl_table, il_table)))
        if (m.name, r) in NO_INTERLEAVED_KERNELS:
            layouts = layouts[:2]
        for v, code, served in variants:
            for suffix, family, elem in FAMILIES:
                native = family == "native"
                forms = [(layout, rows, f"sweep_{stem}{layout}", one_pass[0])
                         for layout, rows in layouts]
                if (m.name, r) in ROW_LOAD_KERNELS and native:
                    forms.append(("_rows", rows_table, f"sweep_{stem}_rows", one_pass[0]))
                if (m.name, r) in ONE_PASS_KERNELS and native:
                    forms.append(("_one", one_table, f"sum_{stem}_one", one_pass[1]))
                for layout, rows, sweep, last in forms:
                    name = f"{stem}_{v}{suffix}{layout}{suffix_all}"
                    args = entry_args.replace("kind, ", f"{elem}, ") if elem else entry_args
                    out += _def(name, entry_args, f"{driver}({args}, {r}, plan_{stem}, {code}, "
                                                  f"{sweep}{last})")
                    rows += [f"    ({r}, MODE_{m.name.upper()}, PAD_{p.name.upper()}, "
                             f"{family!r}): {name}," for p in served]
    out += ["", "#: Entry of each (rank, mode code, padding code, element family).",
            f"{table_name} = {{"]
    out += table
    out += ["}", "", "#: The same for output with strided points (channel-last).",
            f"{cl_table_name} = {{"]
    out += cl_table
    out += ["}", "", "#: The same for channel-last output of many contiguous channels, a point "
            "at a time.", f"{il_table_name} = {{"]
    out += il_table
    out += ["}", "", "#: The same for contiguous points from float32 rows of taps, one load a row",
            "#: (gridsample._row_loads).", f"{rows_table_name} = {{"]
    out += rows_table
    out += ["}", "", "#: The same for contiguous points, each point planned and summed in one "
            "loop (a single",
            "#: linear channel: gridsample._vector.sum_linear_2d_one; nearest: "
            "sum_nearest_2d_one).", f"{one_table_name} = {{"]
    out += one_table
    out += ["}", ""]
    if kind == "grid":
        out[-1:] = ["", "#: Rows of the plan tables (``off``, ``wts``) of each (rank, mode code).",
                "PLAN_ROWS = {"]
        out += [f"    ({r}, MODE_{m.name.upper()}): {PLAN_ROWS[(m.name, r)]}," for m, r in kernels]
        out += ["}", ""]
    else:  # the five in the order gridsample._engine.vector_entry takes them
        out[-1:] = ["", "#: The five tables, as gridsample._engine.vector_entry takes them.",
                    f"{tables_name} = ("]
        out += [f"    {n}," for n in (table_name, cl_table_name, rows_table_name,
                                      one_table_name, il_table_name)]
        out += [")", ""]
    return "\n".join(out)


def render() -> str:
    """``_vector_entries.py``: the entries that read a grid."""
    return _render_forward("grid")


def render_planar() -> str:
    """``_planar_entries.py``: the entries that read a grid held planar."""
    return _render_forward("planar")


def render_affine() -> str:
    """``_affine_entries.py``: the entries that make each block's points from affine maps."""
    return _render_forward("affine")


_GRAD_PLAN_ARGS = "grid, nb, axc, kc, dk, sizes, strides, off, wts, dws, chain, coords"
_GRAD_SWEEP_ARGS = "xflat, xs_c, gflat, gs_c, gs_p, off, wts, dws, nb, C, acc, zero"
#: The grid gradients with an entry that plans and sums in one pass
#: (``_grad_vector.run_grad_{mode}_{rank}d_one``), by (mode, rank): the padding variants.
GRAD_ONE_PASS = {("linear", 2): ("zeros", "border")}
_GRAD_ENTRY_ARGS = ("share, claims, xflat, xs_n, xs_c, sizes, strides, axc, kc, dk, grid, gflat, "
                    "gs_n, gs_c, gs_p, ggrid, C, block")
#: Kernels whose grid-gradient plan holds the forward planner's offset and weight rows, so
#: that one plan per block serves both gradients of a channel
#: (``_grad_vector.run_both_grad_blocks``; tables ``BOTH_GRADS_ENTRIES``).
GRAD_BOTH_KERNELS = (("cubic", 2),)
#: Grid-gradient planners compiled as ``_jit.callee`` (optimized twice), by (mode, rank): the
#: padding variants whose loop one pass of LLVM leaves scalar, which the process compiling
#: the entry would run (docs/kernels.md, "Freshly compiled code can run slower").
GRAD_PLANNERS_OPTIMIZED_TWICE = {("linear", 2): ("reflection", "index")}
_BOTH_ENTRY_ARGS = ("share, claims, gxflat, gx_n, Q, xflat, xs_n, xs_c, sizes, strides, axc, kc, "
                    "dk, grid, gflat, gs_n, gs_c, gs_p, gx_q, ggrid, C, block")


#: The input-gradient scatter of each vector (mode, rank): the fused plans list full tap
#: offsets, the per-axis plans (cubic, 3-D linear) are combined in the scatter.
SCATTERS = {("linear", 2): "scatter_fused", ("nearest", 2): "scatter_fused",
            ("nearest", 3): "scatter_fused", ("cubic", 2): "scatter_cubic_2d",
            ("linear", 3): "scatter_linear_3d", ("cubic", 3): "scatter_cubic_3d"}
_PLAN_ARGS = "grid, nb, axc, kc, sizes, strides, one, nanw, off, wts, coords"
_SCATTER_ARGS = "gxflat, xs_c, gflat, gs_c, gs_p, off, wts, nb, c0, c1, K"
_INPUT_ENTRY_ARGS = ("share, claims, gxflat, G, Q, xs_n, xs_c, sizes, strides, axc, kc, grid, "
                     "gflat, gs_n, gs_c, gs_p, gx_q, C, block, wconst")


def render_grad() -> str:
    """``_grad_vector_entries.py``: grid-gradient planners per padding, a sweep per (mode,
    rank) and entries per (mode, rank, padding); input-gradient entries per vector (mode,
    rank, padding), planned by the forward's planner templates (compiled here per padding)
    and scattered in the general order (the backward computes in float32 or float64 only:
    native elements).  Unlike the forward's entries, these call planners and sweeps
    compiled on their own: inlined into the entry, the grid gradient ran 2-2.5x slower and
    the input gradient 1.05-1.12x (2-D linear, one thread, Zen 4)."""
    registry = _load_registry()
    MODES, PADDINGS = registry.MODES, registry.PADDINGS
    kernels = [(m, r) for m in MODES for r in m.grid_grad_vector_ranks]
    scatters = [(m, r) for m in MODES for r in m.vector_ranks]
    paddings = [p for p in PADDINGS if p.vector]
    variants = _variants(paddings)
    templates = sorted({f"plan_grad_{m.name}_{r}d" for m, r in kernels}
                       | {f"sweep_grad_{m.name}_{r}d" for m, r in kernels}
                       | {SCATTERS[(m.name, r)] for m, r in scatters})
    interleaved = sorted({f"sweep_grad_{m.name}_{r}d_il" for m, r in kernels}
                         | {f"{SCATTERS[(m.name, r)]}_il" for m, r in scatters})
    out = [
        "# Generated by tools/gen_vector_entries.py from the registry: do not edit by hand.",
        '"""The backward\'s vector-planned variants: grid-gradient and input-gradient entries',
        "per (mode, rank, padding), one for all the index paddings.",
        "",
        "Grid-gradient entries run the blocks their share claims (``share``, ``claims``:",
        ":mod:`gridsample._claims`) with",
        ":func:`gridsample._grad_vector.run_grid_grad_blocks`, input-gradient entries with",
        ":func:`gridsample._grad_vector.run_scatter_blocks`, each with its planner and sweep",
        "(or scatter) functions;",
        ":data:`GRID_GRAD_ENTRIES` and :data:`INPUT_GRAD_ENTRIES` are the tables the backward",
        "reads; the ``*INTERLEAVED_ENTRIES`` the same for channel-last memory of many contiguous",
        "channels, a point at a time (:mod:`gridsample._grad_interleaved`).",
        '"""',
        "",
        *_import_block("._grad_interleaved", interleaved),
        "from ._grad_vector import (",
    ]
    ones = [f"run_grad_{m}_{r}d_one" for m, r in GRAD_ONE_PASS]
    out += [f"    {name}," for name in sorted(templates + ones + ["run_grid_grad_blocks",
                                                                "run_scatter_blocks",
                                                                "run_both_grad_blocks"])]
    out += [")", "from ._jit import callee, function",
            *_import_block("._registry", {f"MODE_{m.name.upper()}" for m, _ in kernels + scatters}
                           | {f"PAD_{p.name.upper()}" for p in paddings}),
            *_import_block("._vector", {f"plan_{m.name}_{r}d" for m, r in scatters})]
    out += ["", '__all__ = ["GRID_GRAD_ENTRIES", "GRID_GRAD_ONE_PASS_ENTRIES", '
            '"GRID_GRAD_INTERLEAVED_ENTRIES",', '           "INPUT_GRAD_ENTRIES", '
            '"INPUT_GRAD_INTERLEAVED_ENTRIES", "BOTH_GRADS_ENTRIES"]', ""]
    table, one_pass, il_table = [], [], []
    for m, r in kernels:
        stem = f"{m.name}_{r}d"
        out.append(f"\n# {stem}")
        # The grid gradient's planners and sweep are compiled functions of their own
        # (see _grad_vector.run_grid_grad_blocks); GRAD_PLANNERS_OPTIMIZED_TWICE are callees.
        for v, code, _ in variants:
            args = _GRAD_PLAN_ARGS.replace("nb, ", f"nb, {code}, ")
            twice = v in GRAD_PLANNERS_OPTIMIZED_TWICE.get((m.name, r), ())
            out += _def(f"plan_grad_{stem}_{v}", _GRAD_PLAN_ARGS, f"plan_grad_{stem}({args})",
                        "callee" if twice else "function")
        for layout in ("", "_il"):
            out += _def(f"sweep_grad_{stem}{layout}_native", _GRAD_SWEEP_ARGS,
                        f"sweep_grad_{stem}{layout}({_GRAD_SWEEP_ARGS})")
        for v, code, served in variants:
            for layout, rows in (("", table), ("_il", il_table)):
                name = f"grid_grad_{stem}_{v}{layout}"
                out += _def(name, _GRAD_ENTRY_ARGS,
                            f"run_grid_grad_blocks({_GRAD_ENTRY_ARGS}, {PLAN_ROWS[(m.name, r)]}, "
                            f"{r}, plan_grad_{stem}_{v}, sweep_grad_{stem}{layout}_native)")
                rows += [f"    ({r}, MODE_{m.name.upper()}, PAD_{p.name.upper()}): {name},"
                         for p in served]
            name = f"grid_grad_{stem}_{v}"
            if v in GRAD_ONE_PASS.get((m.name, r), ()):
                out += _def(f"{name}_one", _GRAD_ENTRY_ARGS,
                            f"run_grad_{stem}_one({_GRAD_ENTRY_ARGS}, {code})")
                one_pass += [f"    ({r}, MODE_{m.name.upper()}, PAD_{p.name.upper()}): "
                             f"{name}_one," for p in served]
    inputs, il_inputs = [], []
    for m, r in scatters:
        stem = f"{m.name}_{r}d"
        out.append(f"\n# input gradient, {stem}")
        for v, code, _ in variants:
            args = _PLAN_ARGS.replace("nb, ", f"nb, {code}, ")
            out += _def(f"plan_{stem}_{v}", _PLAN_ARGS, f"plan_{stem}({args})")
        rows = PLAN_ROWS[(m.name, r)]
        for layout in ("", "_il"):
            out += _def(f"scatter_{stem}{layout}_native", _SCATTER_ARGS,
                        f"{SCATTERS[(m.name, r)]}{layout}"
                        f"({_SCATTER_ARGS.replace(', K', f', {rows}')})")
        for v, _, served in variants:
            for layout, table_rows in (("", inputs), ("_il", il_inputs)):
                name = f"input_grad_{stem}_{v}{layout}"
                out += _def(name, _INPUT_ENTRY_ARGS,
                            f"run_scatter_blocks({_INPUT_ENTRY_ARGS}, {rows}, {r}, "
                            f"plan_{stem}_{v}, scatter_{stem}{layout}_native)")
                table_rows += [f"    ({r}, MODE_{m.name.upper()}, PAD_{p.name.upper()}): "
                               f"{name}," for p in served]
    both = []
    for m, r in kernels:
        if (m.name, r) not in GRAD_BOTH_KERNELS:
            continue
        stem = f"{m.name}_{r}d"
        out.append(f"\n# both gradients of a channel, {stem}")
        for v, _, served in variants:
            name = f"both_grads_{stem}_{v}"
            out += _def(name, _BOTH_ENTRY_ARGS,
                        f"run_both_grad_blocks({_BOTH_ENTRY_ARGS}, {PLAN_ROWS[(m.name, r)]}, "
                        f"{r}, plan_grad_{stem}_{v}, sweep_grad_{stem}_native, "
                        f"scatter_{stem}_native)")
            both += [f"    ({r}, MODE_{m.name.upper()}, PAD_{p.name.upper()}): {name},"
                     for p in served]
    out += ["", "#: Grid-gradient entry of each (rank, mode code, padding code).",
            "GRID_GRAD_ENTRIES = {"]
    out += table
    out += ["}", "", "#: Grid-gradient entry planned and summed in one pass, where the backward",
            "#: takes one, of each (rank, mode code, padding code).",
            "GRID_GRAD_ONE_PASS_ENTRIES = {"]
    out += one_pass
    out += ["}", "", "#: The same for channel-last memory of many contiguous channels, a point "
            "at a time.", "GRID_GRAD_INTERLEAVED_ENTRIES = {"]
    out += il_table
    out += ["}", "", "#: Input-gradient entry of each (rank, mode code, padding code).",
            "INPUT_GRAD_ENTRIES = {"]
    out += inputs
    out += ["}", "", "#: The same for channel-last memory of many contiguous channels, a point "
            "at a time.", "INPUT_GRAD_INTERLEAVED_ENTRIES = {"]
    out += il_inputs
    out += ["}", "", "#: Entry of both gradients of one channel from one plan per block, of each",
            "#: (rank, mode code, padding code).", "BOTH_GRADS_ENTRIES = {"]
    out += both
    out += ["}", ""]
    return "\n".join(out)


#: Each generated file and the function that renders it.
OUTPUTS = ((TARGET, render), (PLANAR_TARGET, render_planar), (AFFINE_TARGET, render_affine),
           (GRAD_TARGET, render_grad))


def main() -> int:
    for target, render_file in OUTPUTS:
        target.write_text(render_file())
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
