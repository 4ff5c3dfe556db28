"""Golden-IR tests of `canonicalize`: folding, identities, shapes and control flow."""

from __future__ import annotations

import pytest
from passes_testing import assert_ir, binary, const, finish, for_loop, if_op, new_func, store

from tileworkbench.ir import PointerType, TensorType
from tileworkbench.ir.ops import arith, tt
from tileworkbench.ir.types import f32, i1, i8, i32, u32
from tileworkbench.passes import canonicalize

T4 = TensorType((4,), i32)
F4 = TensorType((4,), f32)


def test_folds_a_chain_and_moves_constants_right():
    f, b = new_func([("out", PointerType(i32)), ("x", i32)])
    c3, c4 = const(b, 3, i32), const(b, 4, i32)
    z = binary(b, arith.MulIOp, c3, c4, "z")
    w = binary(b, arith.AddIOp, z, f.args[1], "w")
    store(b, f.args[0], w)
    finish(f, b)
    assert canonicalize(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>, %x: i32) {
          %z = arith.constant 12 : i32
          %w = arith.addi %x, %z : i32
          tt.store %out, %w : !tt.ptr<i32>, i32
          tt.return
        }
    """,
    )
    assert not canonicalize(f)


def test_unsigned_wraparound_and_truncating_division():
    f, b = new_func([("out", PointerType(u32)), ("out2", PointerType(i32))])
    u = binary(b, arith.SubIOp, const(b, 1, u32), const(b, 2, u32), "u")
    s = binary(b, arith.DivSIOp, const(b, -7, i32), const(b, 2, i32), "s")
    store(b, f.args[0], u)
    store(b, f.args[1], s)
    finish(f, b)
    canonicalize(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<u32>, %out2: !tt.ptr<i32>) {
          %u = arith.constant 4294967295 : u32
          %s = arith.constant -3 : i32
          tt.store %out, %u : !tt.ptr<u32>, u32
          tt.store %out2, %s : !tt.ptr<i32>, i32
          tt.return
        }
    """,
    )


def test_division_by_zero_is_kept():
    f, b = new_func([("out", PointerType(i32))])
    q = binary(b, arith.DivSIOp, const(b, 1, i32), const(b, 0, i32), "q")
    store(b, f.args[0], q)
    finish(f, b)
    assert not canonicalize(f)


def test_integer_identities():
    f, b = new_func([("out", PointerType(i32)), ("x", i32)])
    x = f.args[1]
    zero, one, ones = const(b, 0, i32), const(b, 1, i32), const(b, -1, i32)
    a = binary(b, arith.AddIOp, x, zero)
    a = binary(b, arith.MulIOp, a, one)
    a = binary(b, arith.SubIOp, a, zero)
    a = binary(b, arith.AndIOp, a, ones)
    a = binary(b, arith.OrIOp, a, zero)
    a = binary(b, arith.ShLIOp, a, zero)
    a = binary(b, arith.DivSIOp, a, one)
    a = binary(b, arith.MaxSIOp, a, a, "a")
    d = binary(b, arith.SubIOp, a, a, "d")  # x - x -> 0
    m = binary(b, arith.MulIOp, x, zero, "m")  # x * 0 -> 0
    r = binary(b, arith.AddIOp, d, m, "r")
    store(b, f.args[0], a)
    store(b, f.args[0], r)
    finish(f, b)
    canonicalize(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>, %x: i32) {
          %r = arith.constant 0 : i32
          tt.store %out, %x : !tt.ptr<i32>, i32
          tt.store %out, %r : !tt.ptr<i32>, i32
          tt.return
        }
    """,
    )


def test_float_identities_respect_signed_zero_and_nan():
    f, b = new_func([("out", PointerType(f32)), ("x", f32)])
    x = f.args[1]
    plus_zero, minus_zero, one = const(b, 0.0, f32), const(b, -0.0, f32), const(b, 1.0, f32)
    keep_add = binary(b, arith.AddFOp, x, plus_zero, "keep_add")  # -0.0 + 0.0 is +0.0
    keep_mul = binary(b, arith.MulFOp, x, plus_zero, "keep_mul")  # inf * 0.0 is NaN
    keep_sub = binary(b, arith.SubFOp, x, x, "keep_sub")  # inf - inf is NaN
    gone = binary(b, arith.AddFOp, x, minus_zero)
    gone = binary(b, arith.MulFOp, gone, one)
    gone = binary(b, arith.SubFOp, gone, plus_zero)
    for value in (keep_add, keep_mul, keep_sub, gone):
        store(b, f.args[0], value)
    finish(f, b)
    canonicalize(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<f32>, %x: f32) {
          %0 = arith.constant 0.0 : f32
          %keep_add = arith.addf %x, %0 : f32
          %keep_mul = arith.mulf %x, %0 : f32
          %keep_sub = arith.subf %x, %x : f32
          tt.store %out, %keep_add : !tt.ptr<f32>, f32
          tt.store %out, %keep_mul : !tt.ptr<f32>, f32
          tt.store %out, %keep_sub : !tt.ptr<f32>, f32
          tt.store %out, %x : !tt.ptr<f32>, f32
          tt.return
        }
    """,
    )


def test_float_folding_and_double_negation():
    f, b = new_func([("out", PointerType(f32)), ("x", f32)])
    s = binary(b, arith.AddFOp, const(b, 0.1, f32), const(b, 0.2, f32), "s")
    n = b.value(arith.NegFOp, f32, operand=f.args[1])
    n = b.value(arith.NegFOp, f32, operand=n)
    z = b.value(arith.NegFOp, f32, name="z", operand=const(b, 0.0, f32))
    for value in (s, n, z):
        store(b, f.args[0], value)
    finish(f, b)
    canonicalize(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<f32>, %x: f32) {
          %s = arith.constant 0.30000001192092896 : f32
          %z = arith.constant -0.0 : f32
          tt.store %out, %s : !tt.ptr<f32>, f32
          tt.store %out, %x : !tt.ptr<f32>, f32
          tt.store %out, %z : !tt.ptr<f32>, f32
          tt.return
        }
    """,
    )


def test_select_compare_and_casts():
    f, b = new_func([("out", PointerType(i32)), ("x", i32), ("y", i32), ("c", i1)])
    x, y, c = f.args[1], f.args[2], f.args[3]
    le = b.value(arith.CmpIOp, i1, predicate="sle", lhs=x, rhs=x)  # true
    s1 = b.value(arith.SelectOp, i32, name="s1", condition=le, true_value=x, false_value=y)
    s2 = b.value(arith.SelectOp, i32, name="s2", condition=c, true_value=y, false_value=y)
    small = b.value(arith.TruncIOp, i8, operand=x)
    wide = b.value(arith.ExtSIOp, i32, operand=small)
    back = b.value(arith.TruncIOp, i8, operand=wide)
    e = b.value(arith.ExtUIOp, i32, name="e", operand=back)
    k = b.value(arith.ExtSIOp, i32, name="k", operand=const(b, -1, i8))
    for value in (s1, s2, e, k):
        store(b, f.args[0], value)
    finish(f, b)
    canonicalize(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>, %x: i32, %y: i32, %c: i1) {
          %0 = arith.trunci %x : i8
          %e = arith.extui %0 : i32
          %k = arith.constant -1 : i32
          tt.store %out, %x : !tt.ptr<i32>, i32
          tt.store %out, %y : !tt.ptr<i32>, i32
          tt.store %out, %e : !tt.ptr<i32>, i32
          tt.store %out, %k : !tt.ptr<i32>, i32
          tt.return
        }
    """,
    )


def test_splat_broadcast_expand_dims_and_addptr():
    f, b = new_func([("out", PointerType(f32)), ("x", f32)])
    offs = b.value(tt.MakeRangeOp, T4, name="offs", start=0, end=4)
    zero = b.value(tt.SplatOp, T4, operand=const(b, 0, i32))
    offs = binary(b, arith.AddIOp, offs, zero)
    base = b.value(tt.SplatOp, TensorType((4,), PointerType(f32)), name="base", operand=f.args[0])
    ptrs = b.value(tt.AddPtrOp, base.type, name="ptrs", ptr=base, offset=offs)
    ptrs = b.value(tt.AddPtrOp, base.type, ptr=ptrs, offset=zero)
    row = b.value(tt.SplatOp, TensorType((1, 4), f32), operand=f.args[1])
    wide = b.value(tt.BroadcastOp, TensorType((2, 4), f32), operand=row)
    same = b.value(tt.BroadcastOp, TensorType((2, 4), f32), operand=wide)
    col = b.value(tt.ExpandDimsOp, TensorType((2, 4, 1), f32), name="col", src=same, axis=2)
    flat = b.value(tt.ReshapeOp, TensorType((8,), f32), src=col)
    val = b.value(tt.ReshapeOp, TensorType((4,), f32), name="val", src=flat)  # a (bad) stand-in
    b.create(tt.StoreOp, ptr=ptrs, value=val)
    finish(f, b)
    canonicalize(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<f32>, %x: f32) {
          %offs = tt.make_range {start = 0, end = 4} : tensor<4xi32>
          %base = tt.splat %out : tensor<4x!tt.ptr<f32>>
          %ptrs = tt.addptr %base, %offs : tensor<4x!tt.ptr<f32>>
          %val = tt.splat %x : tensor<4xf32>
          tt.store %ptrs, %val : tensor<4x!tt.ptr<f32>>, tensor<4xf32>
          tt.return
        }
    """,
    )


def test_splat_constants_fold_as_tensors():
    f, b = new_func([("out", PointerType(i32))])
    c = b.value(tt.SplatOp, T4, operand=const(b, 6, i32))
    d = b.value(tt.SplatOp, T4, operand=const(b, 7, i32))
    p = binary(b, arith.MulIOp, c, d, "p")
    gt = b.value(arith.CmpIOp, TensorType((4,), i1), predicate="sgt", lhs=p, rhs=c)
    s = b.value(arith.SelectOp, T4, name="s", condition=gt, true_value=c, false_value=d)
    base = b.value(tt.SplatOp, TensorType((4,), PointerType(i32)), name="base", operand=f.args[0])
    b.create(tt.StoreOp, ptr=base, value=s)
    finish(f, b)
    canonicalize(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>) {
          %0 = arith.constant 6 : tensor<4xi32>
          %base = tt.splat %out : tensor<4x!tt.ptr<i32>>
          tt.store %base, %0 : tensor<4x!tt.ptr<i32>>, tensor<4xi32>
          tt.return
        }
    """,
    )


@pytest.mark.parametrize("condition", [True, False])
def test_if_with_constant_condition_is_inlined(condition):
    f, b = new_func([("out", PointerType(i32)), ("x", i32)])
    x = f.args[1]
    cond = const(b, condition, i1)

    def then():
        return [binary(b, arith.MulIOp, x, x, "sq")]

    def otherwise():
        return [binary(b, arith.AddIOp, x, x, "twice")]

    op = if_op(b, cond, [i32], then, otherwise)
    op.results[0].name_hint = "r"
    store(b, f.args[0], op.results[0])
    finish(f, b)
    canonicalize(f)
    kept = "%sq = arith.muli %x, %x" if condition else "%twice = arith.addi %x, %x"
    name = "%sq" if condition else "%twice"
    assert_ir(
        f,
        f"""
        tt.func @k(%out: !tt.ptr<i32>, %x: i32) {{
          {kept} : i32
          tt.store %out, {name} : !tt.ptr<i32>, i32
          tt.return
        }}
    """,
    )


def test_for_with_zero_trips_gives_its_init_args():
    f, b = new_func([("out", PointerType(i32)), ("x", i32)])
    lo, hi, step = const(b, 8, i32), const(b, 8, i32), const(b, 1, i32)
    loop = for_loop(
        b,
        lo,
        hi,
        step,
        [f.args[1]],
        lambda iv, acc: [binary(b, arith.AddIOp, acc[0], iv)],
        names=["acc"],
    )
    store(b, f.args[0], loop.results[0])
    finish(f, b)
    canonicalize(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>, %x: i32) {
          tt.store %out, %x : !tt.ptr<i32>, i32
          tt.return
        }
    """,
    )


def test_for_with_trips_is_kept():
    f, b = new_func([("out", PointerType(i32)), ("x", i32)])
    lo, hi, step = const(b, -1, i32), const(b, 0, i32), const(b, 1, i32)  # signed: one trip
    loop = for_loop(
        b,
        lo,
        hi,
        step,
        [f.args[1]],
        lambda iv, acc: [binary(b, arith.AddIOp, acc[0], iv)],
        names=["acc"],
    )
    store(b, f.args[0], loop.results[0])
    finish(f, b)
    canonicalize(f)
    assert any(op.name == "scf.for" for op in f.walk())


def test_double_negations():
    f, b = new_func([("out", PointerType(i32)), ("x", i32), ("c", i1)])
    x, c = f.args[1], f.args[2]
    neg = binary(b, arith.SubIOp, const(b, 0, i32), x)
    back = binary(b, arith.SubIOp, const(b, 0, i32), neg)
    inverted = binary(b, arith.XOrIOp, x, const(b, -1, i32))
    restored = binary(b, arith.XOrIOp, const(b, -1, i32), inverted)  # constant moves right first
    negated = binary(b, arith.XOrIOp, c, const(b, True, i1))
    again = binary(b, arith.XOrIOp, negated, const(b, True, i1))
    chosen = b.value(
        arith.SelectOp, i32, name="chosen", condition=again, true_value=back, false_value=restored
    )
    store(b, f.args[0], chosen)
    finish(f, b)
    canonicalize(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>, %x: i32, %c: i1) {
          tt.store %out, %x : !tt.ptr<i32>, i32
          tt.return
        }
    """,
    )


def test_constants_reassociate_through_wrapping_int_ops():
    f, b = new_func([("out", PointerType(i8)), ("x", i8)])
    s = binary(b, arith.AddIOp, const(b, 100, i8), f.args[1])
    s = binary(b, arith.AddIOp, s, const(b, 100, i8), "s")  # 200 wraps to -56
    m = binary(
        b, arith.MulIOp, binary(b, arith.MulIOp, f.args[1], const(b, 16, i8)), const(b, 16, i8), "m"
    )  # 256 wraps to 0
    store(b, f.args[0], s)
    store(b, f.args[0], m)
    finish(f, b)
    canonicalize(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i8>, %x: i8) {
          %0 = arith.constant -56 : i8
          %s = arith.addi %x, %0 : i8
          %1 = arith.constant 0 : i8
          tt.store %out, %s : !tt.ptr<i8>, i8
          tt.store %out, %1 : !tt.ptr<i8>, i8
          tt.return
        }
    """,
    )


def test_a_transpose_of_a_transpose_is_one_or_none():
    """tl.dot_scaled upcasts `b.T` as N x K by transposing it back: the two fold away."""
    f, b = new_func([("out", PointerType(i32))])
    r = b.value(tt.MakeRangeOp, TensorType((24,), i32), name="r", start=0, end=24)
    x = b.value(tt.ReshapeOp, TensorType((2, 3, 4), i32), name="x", src=r)
    y = b.value(tt.TransOp, TensorType((3, 4, 2), i32), name="y", src=x, order=(1, 2, 0))
    back = b.value(tt.TransOp, TensorType((2, 3, 4), i32), name="back", src=y, order=(2, 0, 1))
    turned = b.value(tt.TransOp, TensorType((4, 3, 2), i32), name="turned", src=y, order=(1, 0, 2))
    for value in (back, turned):
        b.create(tt.PrintOp, prefix="", hex=False, args=[value])
    finish(f, b)
    assert canonicalize(f)
    assert_ir(
        f,
        """
        tt.func @k(%out: !tt.ptr<i32>) {
          %r = tt.make_range {start = 0, end = 24} : tensor<24xi32>
          %x = tt.reshape %r : tensor<2x3x4xi32>
          %turned = tt.trans %x {order = [2, 1, 0]} : tensor<4x3x2xi32>
          tt.print %x : tensor<2x3x4xi32>
          tt.print %turned : tensor<4x3x2xi32>
          tt.return
        }
    """,
    )
