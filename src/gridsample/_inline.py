"""Inline the kernels' skeletons top-down, cutting dead branches before they are copied.

The kernels are written once, as skeletons (:func:`gridsample._jit.skeleton`)
that take the padding code, the pass (``exact``) and the like as arguments;
the generated entries call them with constants.  Numba's own inliner
(``InlineInlinables``) works bottom-up: to inline a callee it first compiles
the callee's untyped IR *with all of its own skeletons inlined* (again, at
every call site: nothing is cached), copies it twice, and only then, in the
caller, do the constants reach the ``if pad == ...`` branches.  So every
variant paid for the IR of every padding's branch -- a 2-D linear zeros
entry copied the index paddings' and reflection's code a few thousand times,
and spent ~80% of an 18 s first call in ``copy.deepcopy`` (docs/kernels.md,
"Skeletons are inlined top-down").

:class:`InlineSkeletons` replaces that pass in gridsample's pipeline
(:class:`Compiler`).  It works one level at a time:

1. fold comparisons of integer and boolean constants (``PAD_ZEROS >=
   PAD_MIRROR`` once the argument is known) and prune the branches they
   decide (Numba's ``dead_branch_prune``); drop the blocks no longer reached;
2. inline every skeleton called from what is left, from its *raw* untyped IR
   (nothing inlined into it; made once per process and copied once per site);
3. repeat until no skeleton call remains.

A skeleton called in a dead branch is never copied.  The result is the same
program the bottom-up inliner produced, less its dead code.

The pipeline's lowering (:class:`TunedLowering`) also sets gridsample's LLVM
attributes on every function, and has LLVM optimize the functions of
:data:`OPTIMIZED_TWICE` (:func:`gridsample._jit.callee`) a second time.
"""

from __future__ import annotations

import copy
import operator

import llvmlite.binding as ll
from numba.core import ir, ir_utils, lowering, postproc
from numba.core.analysis import compute_cfg_from_blocks, dead_branch_prune
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, PassManager, register_pass
from numba.core.inline_closurecall import (
    InlineWorker,
    _created_inlined_var_name,
    _get_callee_args,
    _replace_args_with,
    _replace_returns,
    callee_ir_validator,
)
from numba.core.ir_utils import (
    GuardException,
    add_offset_to_labels,
    build_definitions,
    find_const,
    find_topo_order,
    guard,
    next_label,
    replace_vars,
    resolve_func_from_module,
    simplify_CFG,
)
from numba.core.typed_passes import NativeLowering
from numba.core.untyped_passes import InlineInlinables

from ._target import function_attributes

__all__ = ["Compiler", "InlineSkeletons", "OPTIMIZED_TWICE"]

#: The Python functions whose compiled module goes through LLVM's full pipeline twice
#: (:func:`gridsample._jit.callee`).
OPTIMIZED_TWICE: set = set()

#: Rounds of inlining before a compile gives up (the kernels nest about ten deep).
_MAX_DEPTH = 64

#: Comparisons folded when both sides are integer or boolean constants.
_FOLDED = {operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge}


def _raw_pipeline(state):
    """The untyped passes a callee gets before it is inlined: Numba's own untyped pipeline
    up to (not including) its inliner."""
    pm = PassManager("gridsample_skeleton")
    for cls, text in DefaultPassBuilder.define_untyped_pipeline(state).passes:
        if cls is InlineInlinables:
            break
        pm.add_pass(cls, text)
    pm.finalize()
    return pm


#: Raw untyped IR per (skeleton's Python function, rewrites flag), made once per process
#: (under Numba's compiler lock).  :func:`_inline` copies it before changing anything.
_RAW_IR: dict = {}


def _raw_ir(worker: InlineWorker, func):
    key = (func, worker.flags.no_rewrites)
    found = _RAW_IR.get(key)
    if found is None:
        found = worker.run_untyped_passes(func)
        callee_ir_validator(found)  # what Numba's inliner refuses (generators, ...)
        if len({id(block.scope) for block in found.blocks.values()}) != 1:
            raise NotImplementedError(f"skeleton {func.__qualname__}: more than one scope")
        _RAW_IR[key] = found
    return found


def _int_constant(func_ir, var):
    """The value of ``var`` if it is an integer or boolean constant, else None."""
    value = guard(find_const, func_ir, var)
    if isinstance(value, (bool, int)):  # bool is an int
        return value
    return None


def _fold_comparisons(func_ir) -> bool:
    """Replace each comparison of two integer or boolean constants by its result."""
    changed = False
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if not isinstance(stmt, ir.Assign):
                continue
            expr = stmt.value
            if not (isinstance(expr, ir.Expr) and expr.op == "binop" and expr.fn in _FOLDED):
                continue
            lhs, rhs = _int_constant(func_ir, expr.lhs), _int_constant(func_ir, expr.rhs)
            if lhs is None or rhs is None:
                continue
            stmt.value = ir.Const(bool(expr.fn(lhs, rhs)), loc=expr.loc)
            changed = True
    return changed


def _prune(func_ir, args) -> None:
    """Fold, prune and drop unreachable blocks until nothing changes."""
    while True:
        folded = _fold_comparisons(func_ir)
        if folded:
            func_ir._definitions = build_definitions(func_ir.blocks)
        count = len(func_ir.blocks)
        dead_branch_prune(func_ir, args)
        for label in compute_cfg_from_blocks(func_ir.blocks).dead_nodes():
            del func_ir.blocks[label]
        func_ir._definitions = build_definitions(func_ir.blocks)
        if not folded and len(func_ir.blocks) == count:
            return


def _skeleton_called(func_ir, expr):
    """The Python function of the skeleton that ``expr`` (a call) calls, or None."""
    try:
        target = func_ir.get_definition(expr.func)
    except (KeyError, GuardException):
        return None
    if isinstance(target, ir.Expr):  # only a module attribute can name a skeleton
        if target.op != "getattr":
            return None
        target = guard(resolve_func_from_module, func_ir, target)
    else:
        target = getattr(target, "value", None)  # a global or free variable
    options = getattr(target, "targetoptions", None)
    if options and options.get("inline") == "always":
        return target.py_func
    return None


def _predicate_sources(func_ir) -> set:
    """Names of the variables that branch predicates are computed from: each ``bool(v)``'s
    ``v``, and what ``v`` is copied or compared from (``if has_exact_pass(pad) == False``)."""
    todo = []
    for block in func_ir.blocks.values():
        last = block.body[-1]
        if isinstance(last, ir.Branch):
            test = guard(func_ir.get_definition, last.cond)  # bool(value)
            if getattr(test, "op", None) == "call" and test.args:
                todo.append(test.args[0].name)
    found = set()
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        for value in func_ir._definitions.get(name, ()):
            if isinstance(value, ir.Var):
                todo.append(value.name)
            elif isinstance(value, ir.Expr) and value.op in ("binop", "unary"):
                todo += [v.name for v in value.list_vars()]
    return found


def _call_sites(func_ir) -> list:
    """``(block, index, function)`` of every skeleton call, later statements first; only the
    calls whose result a branch's predicate is computed from (``if has_exact_pass(pad):``)
    if there are any, so that their branches are decided before the calls inside them are
    copied."""
    predicates = _predicate_sources(func_ir)
    sites, deciding = [], []
    for block in func_ir.blocks.values():
        for i in range(len(block.body) - 1, -1, -1):
            stmt = block.body[i]
            if (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr)
                    and stmt.value.op == "call"):
                func = _skeleton_called(func_ir, stmt.value)
                if func is not None:
                    sites.append((block, i, func))
                    if stmt.target.name in predicates:
                        deciding.append((block, i, func))
    return deciding or sites


def _inline(func_ir, block, i, raw, func) -> None:
    """Inline ``raw`` (the untyped IR of the skeleton ``func``) at statement ``i`` of
    ``block``, whose value is the call.

    As Numba's ``InlineWorker.inline_ir``, but copying the callee once, its blocks in one
    ``deepcopy`` (so their common scope is copied once, not once per block).
    """
    blocks = copy.deepcopy(raw.blocks)
    # Labels above every label of the caller, and of the IR made since.
    start = max(ir_utils._the_max_label.next(), max(func_ir.blocks)) + 1
    blocks = simplify_CFG(add_offset_to_labels(blocks, start))
    ir_utils._the_max_label.update(max(blocks))
    # The callee's variables become fresh variables of the caller's scope.
    scope, callee_scope = block.scope, next(iter(blocks.values())).scope
    names = {}
    free = func.__code__.co_freevars
    for var in tuple(callee_scope.localvars._con.values()):
        if var.name not in free:
            fresh = _created_inlined_var_name(raw.func_id.unique_name, var.name)
            names[var.name] = scope.redefine(fresh, loc=var.loc)
    replace_vars(blocks, names)
    call = block.body[i]
    _replace_args_with(blocks, _get_callee_args(call.value, func, call.loc, func_ir))
    # The caller's block ends with a jump into the callee; its rest follows the returns.
    rest = ir.Block(scope, block.loc)
    rest.body = block.body[i + 1:]
    rest_label = next_label()
    func_ir.blocks[rest_label] = rest
    block.body = block.body[:i] + [ir.Jump(min(blocks), call.loc)]
    order = find_topo_order(blocks)
    _replace_returns(blocks, call.target, rest_label)
    for label in order:
        blocks[label].scope = scope
        func_ir.blocks[label] = blocks[label]


@register_pass(mutates_CFG=True, analysis_only=False)
class InlineSkeletons(FunctionPass):
    """Numba pass: inline skeletons level by level, pruning dead branches first."""

    _name = "gridsample_inline_skeletons"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        # The worker's raw passes set flags of their own (enable_ssa): give them a copy, so
        # that a compile does not depend on which skeletons an earlier one made raw IR of.
        worker = InlineWorker(state.typingctx, state.targetctx, state.locals, state.pipeline,
                              state.flags.copy(), validator=callee_ir_validator)
        worker._compiler_pipeline = _raw_pipeline
        func_ir = state.func_ir
        func_ir._definitions = build_definitions(func_ir.blocks)
        prune = not state.flags.no_rewrites
        modified = False
        for _ in range(_MAX_DEPTH):
            if prune:
                _prune(func_ir, state.args)
            sites = _call_sites(func_ir)
            if not sites:
                break
            for block, i, func in sites:  # later statements of a block first: indices hold
                _inline(func_ir, block, i, _raw_ir(worker, func), func)
            func_ir._definitions = build_definitions(func_ir.blocks)
            modified = True
        else:
            raise NotImplementedError(f"{state.func_id.func_qualname}: skeletons nest deeper "
                                      f"than {_MAX_DEPTH} levels (a recursive skeleton?)")
        if modified:
            postproc.PostProcessor(func_ir).run()
            func_ir.blocks = simplify_CFG(func_ir.blocks)
            # As Numba's own inliner leaves it (its InlineWorker clears the caller's flag).
            state.flags.enable_ssa = False
        return True


def _optimize_twice(library) -> None:
    """Make ``library`` (a Numba ``CPUCodeLibrary`` not yet finalized) run LLVM's full
    module pipeline a second time on its own code, after Numba's optimization, and give
    callers the module they linked before.

    A function compiled on its own and called from other compiled code exists twice: its
    standalone code, which the JIT binds callers to in the process that compiled it, and a
    copy linked into each caller and optimized again there, which a process loading the
    caller from the disk cache runs.  Some loops vectorize only on a second pass (phase
    ordering), so the compiling process ran slower code (docs/kernels.md, "Freshly compiled
    code can run slower").  Callers keep their old copy (giving them the twice-optimized
    module made one of those copies slower)."""
    once = getattr(library, "_optimize_final_module", None)
    passes = getattr(getattr(library, "_codegen", None), "_module_pass_manager", None)
    machine = getattr(getattr(library, "_codegen", None), "_tm", None)
    timings = getattr(library, "_recorded_timings", None)
    if None in (once, passes, machine, timings) or not hasattr(library, "_shared_module"):
        return  # pragma: no cover - a Numba that moved them: compiled once, as Numba does
    if getattr(library, "_gridsample_twice", False):
        return
    library._gridsample_twice = True

    def twice():
        once()
        # What callers link: Numba hands them the library's module after the JIT's code
        # generation has compiled it, whose IR passes (loop strength reduction,
        # CodeGenPrepare) change the module in place.  Emitting its object code (dropped)
        # with the JIT's target machine does the same; its exported functions become
        # linkonce_odr, as Numba's _get_module_for_linking makes them.  The JIT compiles a
        # copy, optimized again.
        shared = library._final_module
        own = shared.clone()
        machine.emit_object(shared)
        for fn in shared.functions:
            if not fn.is_declaration and fn.linkage == ll.Linkage.external:
                fn.linkage = "linkonce_odr"
        library._shared_module = shared
        library._final_module = own
        full = passes()
        if isinstance(full, tuple):  # the new pass manager (Numba 0.62+): manager, builder
            manager, builder = full
            with timings.record("Module passes (full optimization, again)", builder):
                manager.run(own, builder)
        else:  # pragma: no cover - the legacy pass manager of older Numba
            full.run(own)
        del library._optimize_final_module  # (the instance's: no cycle left behind)

    library._optimize_final_module = twice


class _TunedLower(lowering.Lower):
    """Numba's lowering, then gridsample's attributes (:func:`gridsample._target.
    function_attributes`: the vector width, the tuning) on every function the module
    defines; the functions of :data:`OPTIMIZED_TWICE` are optimized twice
    (:func:`_optimize_twice`)."""

    def lower_normal_function(self, fndesc):
        super().lower_normal_function(fndesc)
        if self.func_ir.func_id.func in OPTIMIZED_TWICE:
            _optimize_twice(self.library)
        attributes = function_attributes()
        for fn in self.module.functions:
            if not fn.is_declaration:
                # llvmlite's attribute set accepts only enum attributes by name; a string
                # attribute is printed into the IR as given (set.add bypasses that check).
                for attribute in attributes:
                    set.add(fn.attributes, attribute)


@register_pass(mutates_CFG=True, analysis_only=False)
class TunedLowering(NativeLowering):
    """Numba's native lowering with :class:`_TunedLower`."""

    _name = "gridsample_native_lowering"

    @property
    def lowering_class(self):
        return _TunedLower


class Compiler(CompilerBase):
    """Numba's nopython pipeline with :class:`InlineSkeletons` in place of its inliner and
    :class:`TunedLowering` in place of its lowering."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        replace = {InlineInlinables: (InlineSkeletons, "inline skeletons, dead branches "
                                                       "pruned first"),
                   NativeLowering: (TunedLowering, "lowering with gridsample's vector width")}
        pm.passes = [replace.get(cls, (cls, text)) for cls, text in pm.passes]
        pm.finalize()
        return [pm]
