"""Every op class of the Tile IR dialects has an NVPTX lowering rule, or is lowered by its parent, or is
listed as unsupported with a reason (the STYLE.md rule that every backend table covers every op)."""

from __future__ import annotations

import inspect

import pytest

from tileworkbench.backends.llvm.lowering import LOWERINGS, STRUCTURAL, UNSUPPORTED
from tileworkbench.ir.ops import arith, math, scf, tt, ttg, ttng, wgmma
from tileworkbench.ir.ops.base import Op


def _op_classes():
    for module in (arith, math, scf, tt, ttg, ttng, wgmma):
        for cls in vars(module).values():
            if inspect.isclass(cls) and issubclass(cls, Op) and cls.__module__ == module.__name__ \
                    and cls.name != "<op>":
                yield pytest.param(cls, id=cls.name)


@pytest.mark.parametrize("cls", list(_op_classes()))
def test_op_has_a_lowering(cls):
    covered = [table for table in (LOWERINGS, STRUCTURAL, UNSUPPORTED) if cls in table]
    assert len(covered) == 1, f"{cls.name}: not in LOWERINGS, STRUCTURAL or UNSUPPORTED (or in several)"
    if cls in UNSUPPORTED or cls in STRUCTURAL:
        reason = {**STRUCTURAL, **UNSUPPORTED}[cls]
        assert isinstance(reason, str) and len(reason) > 10
