"""The greedy rewrite driver: registration by op class (and base class), the Rewriter's use map
across nested regions, new ops before an op, and termination when rewrites undo each other."""

from __future__ import annotations

import pytest
from passes_testing import assert_ir, binary, const, finish, if_op, new_func, store

from tileworkbench.ir import PointerType
from tileworkbench.ir.ops import arith
from tileworkbench.ir.types import i1, i32
from tileworkbench.passes.canonicalize import int_constant
from tileworkbench.passes.rewrite import Patterns, Rewriter, apply_patterns


def func_with_nested_use():
    f, b = new_func([("out", PointerType(i32)), ("x", i32), ("c", i1)])
    x, c = f.args[1], f.args[2]
    doubled = binary(b, arith.MulIOp, x, const(b, 2, i32))
    op = if_op(b, c, [i32], lambda: [binary(b, arith.AddIOp, doubled, x, "t")], lambda: [doubled])
    store(b, f.args[0], op.results[0])
    return finish(f, b)


def test_rewrite_creates_ops_and_updates_uses_in_nested_regions():
    patterns = Patterns("strength")

    @patterns.rewrite(arith.MulIOp)
    def mul_two_to_shift(op: arith.MulIOp, rw: Rewriter) -> bool:
        """%y = arith.muli %x, %c2  ->  %y = arith.shli %x, %c1"""
        if int_constant(op.rhs) != 2:
            return False
        one = rw.constant(1, op.rhs.type, before=op)
        shifted = rw.create(arith.ShLIOp, [op.result.type], before=op, lhs=op.lhs, rhs=one)
        rw.replace_op(op, [shifted.result])
        return True

    f = func_with_nested_use()
    assert apply_patterns(f, patterns)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>, %x: i32, %c: i1) {
          %0 = arith.constant 1 : i32
          %1 = arith.shli %x, %0 : i32
          %2 = scf.if %c -> (i32) {
            %t = arith.addi %1, %x : i32
            scf.yield %t : i32
          } else {
            scf.yield %1 : i32
          }
          tt.store %out, %2 : !tt.ptr<i32>, i32
          tt.return
        }
    """,
    )
    assert not apply_patterns(f, patterns)


def test_a_rewrite_on_a_base_class_applies_to_subclasses_and_names_carry_over():
    patterns = Patterns("test")
    seen = []

    @patterns.rewrite(arith.BinaryOp)
    def note(op, rw: Rewriter) -> bool:
        """Records every binary op; changes nothing."""
        seen.append(op.name)
        return False

    f = func_with_nested_use()
    apply_patterns(f, patterns)
    assert sorted(seen) == ["arith.addi", "arith.muli"]

    rw = Rewriter(f)
    mul = next(op for op in f.walk() if isinstance(op, arith.MulIOp))
    add = next(op for op in f.walk() if isinstance(op, arith.AddIOp))
    assert rw.users(mul.result) == [add, add.parent.parent_op.else_region.block.ops[-1]]
    with pytest.raises(ValueError, match="still used"):
        rw.erase(mul)
    rw.replace_all_uses(add.result, mul.result)  # mul is used elsewhere: it keeps its own (no) name
    assert mul.result.name_hint is None and not rw.has_uses(add.result)
    mul.result.name_hint = "m"
    fresh = rw.constant(9, mul.result.type, before=mul)
    rw.replace_all_uses(mul.result, fresh)  # a fresh value takes the name of what it replaces
    assert fresh.name_hint == "m" and rw.users(fresh)


def test_rewrites_that_undo_each_other_still_terminate():
    patterns = Patterns("ping-pong")

    @patterns.rewrite(arith.AddIOp)
    def swap(op: arith.AddIOp, rw: Rewriter) -> bool:
        """%z = arith.addi %a, %b  ->  %z = arith.addi %b, %a (forever)"""
        old = [op.lhs, op.rhs]
        op.lhs, op.rhs = op.rhs, op.lhs
        rw.changed_in_place(op, old)
        return True

    f, b = new_func([("out", PointerType(i32)), ("x", i32), ("y", i32)])
    store(b, f.args[0], binary(b, arith.AddIOp, f.args[1], f.args[2]))
    finish(f, b)
    assert apply_patterns(f, patterns)
