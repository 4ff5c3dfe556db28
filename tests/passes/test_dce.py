"""Golden-IR tests of `dce`: chains of dead pure ops, dead ops in loops, dead loops and carried
values."""

from __future__ import annotations

from passes_testing import assert_ir, binary, const, finish, for_loop, if_op, new_func, store

from tileworkbench.ir import PointerType
from tileworkbench.ir.ops import arith, tt
from tileworkbench.ir.types import f32, i1, i32
from tileworkbench.passes import dce


def test_removes_a_dead_chain_but_keeps_effects():
    f, b = new_func([("p", PointerType(f32)), ("x", f32)])
    x = f.args[1]
    dead = binary(b, arith.MulFOp, x, x)
    binary(b, arith.AddFOp, dead, dead)
    b.value(tt.LoadOp, f32, name="unused_load", ptr=f.args[0])  # a load is not pure: kept
    b.value(tt.AtomicRMWOp, f32, kind="fadd", ptr=f.args[0], val=x)
    b.create(tt.PrintOp, args=[x], prefix="x=")
    finish(f, b)
    assert dce(f)
    assert_ir(
        f,
        """
        tt.func @k(%p: !tt.ptr<f32>, %x: f32) {
          %unused_load = tt.load %p : f32
          %0 = tt.atomic_rmw %p, %x {kind = "fadd"} : f32
          tt.print %x {prefix = "x="} : f32
          tt.return
        }
    """,
    )
    assert not dce(f)


def test_dead_ops_inside_a_loop_and_unused_carried_value():
    f, b = new_func([("out", PointerType(i32)), ("x", i32)])
    x = f.args[1]
    lo, hi, one = const(b, 0, i32), const(b, 4, i32), const(b, 1, i32)

    def body(iv, carried):
        acc, junk = carried
        binary(b, arith.MulIOp, iv, iv, "dead")
        return [binary(b, arith.AddIOp, acc, iv, "next"), binary(b, arith.XOrIOp, junk, iv)]

    loop = for_loop(b, lo, hi, one, [x, x], body, names=["acc", "junk"])
    store(b, f.args[0], loop.results[0])
    finish(f, b)
    assert dce(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>, %x: i32) {
          %0 = arith.constant 0 : i32
          %1 = arith.constant 4 : i32
          %2 = arith.constant 1 : i32
          %3 = scf.for %i = %0 to %1 step %2 : i32 iter_args(%acc = %x) -> (i32) {
            %next = arith.addi %acc, %i : i32
            scf.yield %next : i32
          }
          tt.store %out, %3 : !tt.ptr<i32>, i32
          tt.return
        }
    """,
    )


def test_carried_value_read_by_another_is_kept():
    f, b = new_func([("out", PointerType(i32)), ("x", i32)])
    x = f.args[1]
    lo, hi, one = const(b, 0, i32), const(b, 4, i32), const(b, 1, i32)

    def body(iv, carried):
        acc, other = carried
        return [binary(b, arith.AddIOp, acc, other), binary(b, arith.AddIOp, other, iv)]

    loop = for_loop(b, lo, hi, one, [x, x], body, names=["acc", "other"])
    store(b, f.args[0], loop.results[0])
    finish(f, b)
    dce(f)
    assert len(loop.init_args) == 2 and len(loop.results) == 2


def test_pure_loop_and_if_with_unused_results_go_but_effectful_ones_stay():
    f, b = new_func([("out", PointerType(i32)), ("x", i32), ("c", i1)])
    x, c = f.args[1], f.args[2]
    lo, hi, one = const(b, 0, i32), const(b, 4, i32), const(b, 1, i32)
    for_loop(b, lo, hi, one, [x], lambda iv, acc: [binary(b, arith.AddIOp, acc[0], iv)])
    if_op(b, c, [i32], lambda: [binary(b, arith.MulIOp, x, x)], lambda: [x])

    def storing(iv, acc):
        store(b, f.args[0], iv)
        return [acc[0]]

    for_loop(b, lo, hi, one, [x], storing)
    finish(f, b)
    dce(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>, %x: i32, %c: i1) {
          %0 = arith.constant 0 : i32
          %1 = arith.constant 4 : i32
          %2 = arith.constant 1 : i32
          scf.for %i = %0 to %1 step %2 : i32 {
            tt.store %out, %i : !tt.ptr<i32>, i32
            scf.yield
          }
          tt.return
        }
    """,
    )


def test_carried_value_read_by_a_store_is_kept():
    f, b = new_func([("out", PointerType(i32)), ("x", i32)])
    lo, hi, one = const(b, 0, i32), const(b, 4, i32), const(b, 1, i32)

    def body(iv, carried):
        store(b, f.args[0], carried[0])
        return [binary(b, arith.AddIOp, carried[0], iv)]

    loop = for_loop(b, lo, hi, one, [f.args[1]], body, names=["acc"])
    finish(f, b)
    dce(f)
    assert len(loop.results) == 1 and len(loop.body.block.args) == 2
