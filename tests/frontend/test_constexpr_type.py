"""A name bound as a constexpr (a constexpr parameter, `x: tl.constexpr = ...`) has Triton's
`constexpr_type` as its `.type`, while a number assigned plainly reads the tensor type it would lift
to, as in Triton (test_core's test_constexpr_assignment)."""

from __future__ import annotations

import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import CompileTimeAssertionFailure
from tileworkbench.language.core import constexpr_type


@tw.jit
def constexpr_types_kernel(LITERAL: tl.constexpr, TENSOR_TYPE: tl.constexpr):
    annotated: tl.constexpr = LITERAL
    tl.static_assert(LITERAL.type == constexpr_type(LITERAL))
    tl.static_assert(annotated.type == constexpr_type(LITERAL))
    tl.static_assert(annotated == LITERAL)
    if TENSOR_TYPE is not None:
        plain = LITERAL
        tl.static_assert(plain.type == TENSOR_TYPE)


@tw.jit
def wrong_type_kernel(LITERAL: tl.constexpr):
    tl.static_assert(LITERAL.type == tl.int32)


@pytest.mark.parametrize("literal, tensor_type", [(10, tl.int32), (32.1, tl.float32), ((5, 6), None)])
def test_constexpr_names_have_constexpr_type(literal, tensor_type):
    tw.compile(constexpr_types_kernel, signature={}, target="interpreter",
               constexprs={"LITERAL": literal, "TENSOR_TYPE": tensor_type})


def test_a_constexpr_parameter_is_not_a_tensor_type():
    with pytest.raises(CompileTimeAssertionFailure, match="static_assert failed"):
        tw.compile(wrong_type_kernel, signature={}, constexprs={"LITERAL": 3}, target="interpreter")
