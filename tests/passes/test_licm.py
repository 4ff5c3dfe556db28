"""Golden-IR tests of `licm`: invariant chains leave loops (nested ones too); trapping ops
and loop-variant or region-nested ops stay."""

from __future__ import annotations

from passes_testing import assert_ir, binary, const, finish, for_loop, if_op, new_func, store

from tileworkbench.ir import Block, PointerType, Region, TensorType
from tileworkbench.ir.ops import arith, scf, tt
from tileworkbench.ir.types import f32, i1, i32
from tileworkbench.passes import cse, licm


def test_hoists_an_invariant_chain_and_keeps_variant_ops():
    f, b = new_func([("out", PointerType(f32)), ("x", f32), ("n", i32)])
    x, n = f.args[1], f.args[2]
    lo, one = const(b, 0, i32), const(b, 1, i32)

    def body(iv, acc):
        two = const(b, 2.0, f32, "two")
        scaled = binary(b, arith.MulFOp, x, two, "scaled")
        b.value(tt.MakeRangeOp, TensorType((4,), i32), name="offs", start=0, end=4)
        fi = b.value(arith.SIToFPOp, f32, name="fi", operand=iv)
        return [binary(b, arith.AddFOp, acc[0], binary(b, arith.MulFOp, scaled, fi, "term"))]

    loop = for_loop(b, lo, n, one, [x], body, names=["acc"])
    store(b, f.args[0], loop.results[0])
    finish(f, b)
    assert licm(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<f32>, %x: f32, %n: i32) {
          %0 = arith.constant 0 : i32
          %1 = arith.constant 1 : i32
          %two = arith.constant 2.0 : f32
          %scaled = arith.mulf %x, %two : f32
          %offs = tt.make_range {start = 0, end = 4} : tensor<4xi32>
          %2 = scf.for %i = %0 to %n step %1 : i32 iter_args(%acc = %x) -> (f32) {
            %fi = arith.sitofp %i : f32
            %term = arith.mulf %scaled, %fi : f32
            %3 = arith.addf %acc, %term : f32
            scf.yield %3 : f32
          }
          tt.store %out, %2 : !tt.ptr<f32>, f32
          tt.return
        }
    """,
    )
    assert not licm(f)


def test_invariant_climbs_out_of_a_nest_only_as_far_as_its_operands_allow():
    f, b = new_func([("out", PointerType(i32)), ("x", i32), ("n", i32)])
    x, n = f.args[1], f.args[2]
    lo, one = const(b, 0, i32), const(b, 1, i32)

    def outer(i, acc):
        def inner(j, acc2):
            xx = binary(b, arith.MulIOp, x, x, "xx")  # invariant in both loops
            xi = binary(b, arith.AddIOp, x, i, "xi")  # invariant in the inner loop only
            return [binary(b, arith.AddIOp, acc2[0], binary(b, arith.AddIOp, xx, xi))]

        return [for_loop(b, lo, n, one, acc, inner).results[0]]

    loop = for_loop(b, lo, n, one, [x], outer, names=["acc"])
    store(b, f.args[0], loop.results[0])
    finish(f, b)
    licm(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>, %x: i32, %n: i32) {
          %0 = arith.constant 0 : i32
          %1 = arith.constant 1 : i32
          %xx = arith.muli %x, %x : i32
          %2 = scf.for %i = %0 to %n step %1 : i32 iter_args(%acc = %x) -> (i32) {
            %xi = arith.addi %x, %i : i32
            %3 = arith.addi %xx, %xi : i32
            %4 = scf.for %i_1 = %0 to %n step %1 : i32 iter_args(%5 = %acc) -> (i32) {
              %6 = arith.addi %5, %3 : i32
              scf.yield %6 : i32
            }
            scf.yield %4 : i32
          }
          tt.store %out, %2 : !tt.ptr<i32>, i32
          tt.return
        }
    """,
    )


def test_trapping_divisions_loads_and_ops_in_ifs_stay():
    f, b = new_func([("p", PointerType(i32)), ("x", i32), ("d", i32), ("n", i32), ("c", i1)])
    p, x, d, n, c = f.args
    lo, one = const(b, 0, i32), const(b, 1, i32)

    def body(iv, acc):
        q = binary(b, arith.DivSIOp, x, d, "q")  # d may be 0
        m = binary(b, arith.RemSIOp, x, const(b, -1, i32), "m")  # INT_MIN % -1
        ok = binary(b, arith.DivUIOp, x, const(b, 3, i32), "ok")  # safe: hoisted
        v = b.value(tt.LoadOp, i32, name="v", ptr=p)  # not pure
        g = if_op(b, c, [i32], lambda: [binary(b, arith.MulIOp, x, x, "sq")], lambda: [x])
        total = binary(
            b, arith.AddIOp, binary(b, arith.AddIOp, q, m), binary(b, arith.AddIOp, ok, v)
        )
        return [binary(b, arith.AddIOp, total, g.results[0])]

    loop = for_loop(b, lo, n, one, [x], body, names=["acc"])
    store(b, p, loop.results[0])
    finish(f, b)
    licm(f)
    hoisted = [op for op in f.body.block.ops if not isinstance(op, (scf.ForOp, tt.StoreOp))]
    names = [op.name for op in hoisted]
    assert names == ["arith.constant"] * 4 + ["arith.divui", "tt.return"]
    body_ops = [op.name for op in loop.body.block.ops]
    assert body_ops[:4] == ["arith.divsi", "arith.remsi", "tt.load", "scf.if"]


def test_hoists_from_both_regions_of_a_while():
    f, b = new_func([("out", PointerType(i32)), ("x", i32), ("n", i32)])
    x, n = f.args[1], f.args[2]
    before, after = Block([i32], ["v"]), Block([i32], ["w"])
    loop = b.create(
        scf.WhileOp, [i32], init_args=[x], before=Region([before]), after=Region([after])
    )
    with b.at_end(before):
        limit = binary(b, arith.MulIOp, n, n, "limit")
        more = b.value(arith.CmpIOp, i1, predicate="slt", lhs=before.args[0], rhs=limit)
        b.create(scf.ConditionOp, condition=more, args=[before.args[0]])
    with b.at_end(after):
        step = binary(b, arith.AddIOp, x, x, "step")
        b.create(scf.YieldOp, values=[binary(b, arith.AddIOp, after.args[0], step)])
    store(b, f.args[0], loop.results[0])
    finish(f, b)
    assert licm(f)
    assert [op.name for op in f.body.block.ops[:3]] == ["arith.muli", "arith.addi", "scf.while"]


def test_invariants_of_sibling_loops_are_hoisted_then_merged_by_cse():
    f, b = new_func([("out", PointerType(i32)), ("x", i32), ("n", i32)])
    x, n = f.args[1], f.args[2]
    lo, one = const(b, 0, i32), const(b, 1, i32)

    def body(iv, acc):
        b.value(tt.MakeRangeOp, TensorType((4,), i32), name="offs", start=0, end=4)
        store(b, f.args[0], binary(b, arith.MulIOp, x, x))
        return [binary(b, arith.AddIOp, acc[0], iv)]

    first = for_loop(b, lo, n, one, [x], body, names=["acc"])
    second = for_loop(b, lo, n, one, [first.results[0]], body, names=["acc"])
    store(b, f.args[0], second.results[0])
    finish(f, b)
    licm(f)
    assert [op.name for op in f.body.block.ops].count("tt.make_range") == 2
    cse(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>, %x: i32, %n: i32) {
          %0 = arith.constant 0 : i32
          %1 = arith.constant 1 : i32
          %offs = tt.make_range {start = 0, end = 4} : tensor<4xi32>
          %2 = arith.muli %x, %x : i32
          %3 = scf.for %i = %0 to %n step %1 : i32 iter_args(%acc = %x) -> (i32) {
            tt.store %out, %2 : !tt.ptr<i32>, i32
            %4 = arith.addi %acc, %i : i32
            scf.yield %4 : i32
          }
          %5 = scf.for %i_1 = %0 to %n step %1 : i32 iter_args(%acc_1 = %3) -> (i32) {
            tt.store %out, %2 : !tt.ptr<i32>, i32
            %6 = arith.addi %acc_1, %i_1 : i32
            scf.yield %6 : i32
          }
          tt.store %out, %5 : !tt.ptr<i32>, i32
          tt.return
        }
    """,
    )
