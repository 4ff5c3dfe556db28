"""Golden-IR tests of `cse`: pure ops only, commutative operands, constants by bits, region
scoping."""

from __future__ import annotations

from passes_testing import assert_ir, binary, const, finish, for_loop, if_op, new_func, store

from tileworkbench.ir import Block, PointerType, Region, TensorType
from tileworkbench.ir.ops import arith, tt
from tileworkbench.ir.types import f32, i1, i32
from tileworkbench.passes import cse


def test_merges_pure_ops_commutative_ops_and_equal_constants():
    f, b = new_func([("out", PointerType(i32)), ("x", i32), ("y", i32)])
    x, y = f.args[1], f.args[2]
    a = binary(b, arith.AddIOp, x, y, "a")
    a2 = binary(b, arith.AddIOp, y, x, "a2")  # commutative: same as a
    s = binary(b, arith.SubIOp, x, y, "s")
    s2 = binary(b, arith.SubIOp, y, x, "s2")  # not commutative: kept
    c = const(b, 5, i32)
    c2 = const(b, 5, i32, "c2")
    for value in (a, a2, s, s2, c, c2):
        store(b, f.args[0], value)
    finish(f, b)
    assert cse(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>, %x: i32, %y: i32) {
          %a = arith.addi %x, %y : i32
          %s = arith.subi %x, %y : i32
          %s2 = arith.subi %y, %x : i32
          %c2 = arith.constant 5 : i32
          tt.store %out, %a : !tt.ptr<i32>, i32
          tt.store %out, %a : !tt.ptr<i32>, i32
          tt.store %out, %s : !tt.ptr<i32>, i32
          tt.store %out, %s2 : !tt.ptr<i32>, i32
          tt.store %out, %c2 : !tt.ptr<i32>, i32
          tt.store %out, %c2 : !tt.ptr<i32>, i32
          tt.return
        }
    """,
    )
    assert not cse(f)


def test_constants_differ_by_sign_of_zero_type_and_bool():
    f, b = new_func([("out", PointerType(f32)), ("o2", PointerType(i32))])
    values = [
        const(b, 0.0, f32),
        const(b, -0.0, f32),
        const(b, float("nan"), f32),
        const(b, float("nan"), f32),
    ]
    ints = [const(b, 1, i32), const(b, True, i1)]
    tensor = b.value(arith.ConstantOp, TensorType((4,), f32), value=0.0)
    for value in values + [tensor]:
        b.create(tt.StoreOp, ptr=f.args[0], value=value)
    for value in ints:
        b.create(tt.StoreOp, ptr=f.args[1], value=value)
    finish(f, b)
    cse(f)
    text = [op for op in f.walk() if isinstance(op, arith.ConstantOp)]
    assert len(text) == 6  # only the two NaNs (same bits) merged


def test_loads_and_side_effects_are_never_merged():
    f, b = new_func([("p", PointerType(f32))])
    l1 = b.value(tt.LoadOp, f32, ptr=f.args[0])
    store(b, f.args[0], const(b, 1.0, f32))
    l2 = b.value(tt.LoadOp, f32, ptr=f.args[0])
    store(b, f.args[0], binary(b, arith.AddFOp, l1, l2))
    finish(f, b)
    assert not cse(f)
    assert sum(isinstance(op, tt.LoadOp) for op in f.walk()) == 2


def test_outer_value_replaces_nested_one_but_siblings_stay_apart():
    f, b = new_func([("out", PointerType(i32)), ("x", i32), ("c", i1)])
    x, c = f.args[1], f.args[2]
    outer = binary(b, arith.MulIOp, x, x, "outer")
    lo, hi, one = const(b, 0, i32), const(b, 4, i32), const(b, 1, i32)

    def body(iv, acc):
        inner = binary(b, arith.MulIOp, x, x, "inner")  # same as outer: replaced
        op = if_op(
            b,
            c,
            [i32],
            lambda: [binary(b, arith.AddIOp, inner, iv, "t")],
            lambda: [binary(b, arith.AddIOp, inner, iv, "e")],
        )  # siblings: both kept
        after = binary(b, arith.AddIOp, inner, iv, "after")  # not replaced by t or e
        return [binary(b, arith.AddIOp, op.results[0], after)]

    loop = for_loop(b, lo, hi, one, [x], body, names=["acc"])
    store(b, f.args[0], binary(b, arith.AddIOp, loop.results[0], outer))
    finish(f, b)
    cse(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>, %x: i32, %c: i1) {
          %outer = arith.muli %x, %x : i32
          %0 = arith.constant 0 : i32
          %1 = arith.constant 4 : i32
          %2 = arith.constant 1 : i32
          %3 = scf.for %i = %0 to %1 step %2 : i32 iter_args(%acc = %x) -> (i32) {
            %4 = scf.if %c -> (i32) {
              %t = arith.addi %outer, %i : i32
              scf.yield %t : i32
            } else {
              %e = arith.addi %outer, %i : i32
              scf.yield %e : i32
            }
            %after = arith.addi %outer, %i : i32
            %5 = arith.addi %4, %after : i32
            scf.yield %5 : i32
          }
          %6 = arith.addi %3, %outer : i32
          tt.store %out, %6 : !tt.ptr<i32>, i32
          tt.return
        }
    """,
    )


def test_nested_op_is_replaced_and_its_uses_renamed_deep_inside():
    f, b = new_func([("out", PointerType(i32)), ("x", i32), ("c", i1)])
    x, c = f.args[1], f.args[2]
    first = binary(b, arith.AddIOp, x, x, "first")

    def then():
        again = binary(b, arith.AddIOp, x, x, "again")
        inner = if_op(
            b, c, [i32], lambda: [binary(b, arith.MulIOp, again, again, "sq")], lambda: [again]
        )
        return [inner.results[0]]

    op = if_op(b, c, [i32], then, lambda: [first])
    store(b, f.args[0], op.results[0])
    finish(f, b)
    assert cse(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>, %x: i32, %c: i1) {
          %first = arith.addi %x, %x : i32
          %0 = scf.if %c -> (i32) {
            %1 = scf.if %c -> (i32) {
              %sq = arith.muli %first, %first : i32
              scf.yield %sq : i32
            } else {
              scf.yield %first : i32
            }
            scf.yield %1 : i32
          } else {
            scf.yield %first : i32
          }
          tt.store %out, %0 : !tt.ptr<i32>, i32
          tt.return
        }
    """,
    )


def test_combine_regions_do_not_capture_outer_values():
    f, b = new_func([("out", PointerType(f32)), ("x", f32)])
    one = const(b, 1.0, f32, "one")
    row = b.value(tt.SplatOp, TensorType((4,), f32), name="row", operand=f.args[1])
    block = Block([f32, f32])
    reduce = b.create(tt.ReduceOp, [f32], axis=0, srcs=[row], combine=Region([block]))
    with b.at_end(block):
        inner_one = const(b, 1.0, f32, "inner_one")
        scaled = binary(b, arith.MulFOp, block.args[1], inner_one)
        b.create(tt.ReduceReturnOp, values=[binary(b, arith.AddFOp, block.args[0], scaled)])
    store(b, f.args[0], binary(b, arith.AddFOp, reduce.results[0], one))
    finish(f, b)
    assert not cse(f)
    assert inner_one.op.parent is block and scaled.op.rhs is inner_one
