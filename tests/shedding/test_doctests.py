"""The examples in the shedding modules' documentation run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["trace", "workloads", "online", "flow", "static"]


@pytest.mark.parametrize("name", MODULES)
def test_module_examples(name):
    mod = importlib.import_module(f"punctuated.shedding.{name}")
    res = doctest.testmod(mod)
    assert res.attempted > 0 and res.failed == 0
