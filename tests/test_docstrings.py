"""The examples in the public docstrings run and print exactly what they show (as
``python -m doctest`` and ``pytest --doctest-modules`` check them: no whitespace
normalization)."""

from __future__ import annotations

import doctest
import importlib

import pytest

import gridsample


def _public_modules() -> list:
    """Every module that defines a name of ``gridsample.__all__``, and the integrations."""
    names = {getattr(getattr(gridsample, name), "__module__", "") for name in gridsample.__all__}
    names = sorted(n for n in names if n.startswith("gridsample."))
    return names + ["gridsample.torch", "gridsample.cann", "gridsample.dask"]


@pytest.mark.parametrize("name", _public_modules())
def test_docstring_examples(name):
    try:
        module = importlib.import_module(name)
    except ImportError:  # an optional integration whose library is not installed
        pytest.skip(f"{name} needs an optional library")
    result = doctest.testmod(module)
    assert result.failed == 0


def test_the_public_functions_show_examples():
    for name in gridsample.__all__:
        obj = getattr(gridsample, name)
        if callable(obj) and not isinstance(obj, type):
            assert ">>> " in (obj.__doc__ or ""), name
