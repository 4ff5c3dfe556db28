"""Every op class of the arith, math, scf and tt dialects has an interpreter evaluator (STYLE.md)."""

from __future__ import annotations

import inspect

import pytest

from tileworkbench.backends.interpreter.evaluate import EVALUATORS
from tileworkbench.ir.ops import arith, math, scf, tt
from tileworkbench.ir.ops.base import Op

pytestmark = pytest.mark.only_on("interpreter")  # about the interpreter itself


def _op_classes(module):
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if issubclass(cls, Op) and cls.__module__ == module.__name__ and cls.name != "<op>":
            yield cls


@pytest.mark.parametrize("module", [arith, math, scf, tt], ids=lambda m: m.__name__.rsplit(".")[-1])
def test_every_op_has_an_evaluator(module):
    classes = list(_op_classes(module))
    assert len(classes) >= 5  # the discovery itself works
    missing = [cls.__name__ for cls in classes if cls not in EVALUATORS]
    assert missing == []


def test_evaluators_are_callable_factories():
    assert all(callable(factory) for factory in EVALUATORS.values())
