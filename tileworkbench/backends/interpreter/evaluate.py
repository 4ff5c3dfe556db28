"""The interpreter's dispatch table: op class -> `eval_*` factory, merged from one module per op family.

A factory `eval_x(op, program)` runs once per launch and returns a closure over the op's attributes and
types that takes the operand values and returns the result (a tuple for several results), so the per-
program cost of an op is one Python call into NumPy.
"""

from __future__ import annotations

from collections.abc import Callable

from . import eval_arith, eval_descriptors, eval_math, eval_memory, eval_reduce, eval_scf, eval_tt

EVALUATORS: dict[type, Callable] = {}
for _family in (
    eval_arith,
    eval_math,
    eval_tt,
    eval_memory,
    eval_descriptors,
    eval_reduce,
    eval_scf,
):
    EVALUATORS.update(_family.EVALUATORS)
