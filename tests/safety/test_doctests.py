"""The docstring examples of punctuated.safety run as tests."""
import doctest
import importlib

import pytest

MODULES = ["model", "graph", "tree", "verdict", "suggest", "plans", "plan_cost", "bruteforce", "report", "draw"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(f"punctuated.safety.{name}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_package_docstring_examples():
    import punctuated.safety as pkg
    assert doctest.testmod(pkg).failed == 0
