"""The pure-Python core never imports compiled code; integrations never leak into it.

Checked on the source (import statements), so the rule holds for every
path through the code, not only the ones a test happens to run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gridsample

PACKAGE = Path(gridsample.__file__).parent

#: The pure-Python core: validation, the registry, dtypes and plans.
CORE = ("_registry", "_options", "_errors", "_dtypes", "_plan")
#: What the core may import: itself, NumPy and the standard library.
ALLOWED_OUTSIDE = {"numpy", "__future__", "dataclasses", "functools", "numbers", "math",
                   "typing", "itertools"}


def _imports(module: str) -> set:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: a module of the package
                found.add("." + (node.module or ""))
            else:
                found.add(node.module.split(".")[0])
    return found


def test_core_imports_only_core_numpy_and_stdlib():
    for module in CORE:
        for name in _imports(module):
            if name.startswith("."):
                assert name[1:] in CORE, f"{module} imports {name}"
            else:
                assert name in ALLOWED_OUTSIDE, f"{module} imports {name}"


def test_the_kernel_cache_key_covers_the_core():
    from gridsample import _jit

    names = {p.stem for p in _jit.kernel_source_files()}
    assert set(CORE) <= names  # kernels read the core's constants (codes, kinds)
