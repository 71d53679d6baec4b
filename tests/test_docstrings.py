"""The examples in the public docstrings run and print what they show."""

from __future__ import annotations

import doctest

import pytest

import gridsample._affine
import gridsample._api
import gridsample._backward
import gridsample._splines

MODULES = [gridsample._api, gridsample._affine, gridsample._backward, gridsample._splines]
try:
    import gridsample.torch
    MODULES.append(gridsample.torch)
except ImportError:  # torch is an optional integration
    pass


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
