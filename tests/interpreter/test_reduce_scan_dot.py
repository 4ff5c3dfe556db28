"""tt.reduce and tt.scan (known combines as ufuncs, any other combine evaluated on whole slices), and
tt.dot (2-D and batched 3-D, f16/bf16/f32/int8)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from interp_kernels import KernelBuilder, bf16, f16, f32, i8, i32, poisoned, ptr, tensor, u32, run

from tileworkbench.ir import verify
from tileworkbench.ir.ops import arith, tt

RNG = np.random.default_rng(21)
M, N = 8, 32


def _offsets_2d(kb, m, n):
    rows = kb.broadcast(
        kb.expand_dims(kb.binary(arith.MulIOp, kb.arange(m), kb.const(n, tensor((m,), i32))), 1),
        (m, n),
    )
    cols = kb.broadcast(kb.expand_dims(kb.arange(n), 0), (m, n))
    return kb.binary(arith.AddIOp, rows, cols)


def _reduce_kernel(element, axis, combine, scan=False, reverse=False, m=M, n=N):
    """Load an (m, n) tile, reduce or scan it along `axis` with `combine`, store the result."""
    kb = KernelBuilder("reduce_kernel", [("x_ptr", ptr(element)), ("out_ptr", ptr(element))])
    x = kb.load(kb.addptr(kb["x_ptr"], _offsets_2d(kb, m, n)))
    if scan:
        result = kb.scan([x], axis, combine, reverse=reverse)[0]
        kb.store(kb.addptr(kb["out_ptr"], _offsets_2d(kb, m, n)), result)
    else:
        result = kb.reduce([x], axis, combine)[0]
        length = n if axis == 0 else m
        kb.store(kb.addptr(kb["out_ptr"], kb.arange(length)), result)
    func = kb.finish()
    verify(func)
    return func


def _add(k, a, b):
    return [k.binary(arith.AddFOp, a[0], b[0])]


def _sub_then_add(k, a, b):
    """a + b written as (a - 0) + b: not one known op, so the generic path runs it."""
    zero = k.const(0.0, f32)
    return [k.binary(arith.AddFOp, k.binary(arith.SubFOp, a[0], zero), b[0])]


def _first(k, a, b):
    """Keep the left operand: associative but not commutative, so the order must be kept."""
    return [a[0]]


@pytest.mark.parametrize("combine", [_add, _sub_then_add], ids=["ufunc", "generic"])
@pytest.mark.parametrize("axis", [0, 1])
def test_sum_along_each_axis(combine, axis):
    x = RNG.standard_normal((M, N)).astype(np.float32)
    out = poisoned(max(M, N))
    run(_reduce_kernel(f32, axis, combine), [x, out], (1,))
    ref = x.astype(np.float64).sum(axis)
    np.testing.assert_allclose(out[: len(ref)], ref, rtol=1e-5, atol=1e-6)


def test_non_commutative_combine_keeps_order():
    x = RNG.standard_normal((M, N)).astype(np.float32)
    out = poisoned(N)
    run(_reduce_kernel(f32, 0, _first), [x, out], (1,))
    np.testing.assert_array_equal(out, x[0])
    scanned = poisoned((M, N))
    run(_reduce_kernel(f32, 1, _first, scan=True, reverse=True), [x, scanned], (1,))
    np.testing.assert_array_equal(scanned, np.repeat(x[:, -1:], N, axis=1))


@pytest.mark.parametrize("combine", [_add, _sub_then_add], ids=["ufunc", "generic"])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_forward_and_reverse(combine, reverse):
    x = RNG.standard_normal((M, N)).astype(np.float32)
    out = poisoned((M, N))
    run(_reduce_kernel(f32, 1, combine, scan=True, reverse=reverse), [x, out], (1,))
    wide = x.astype(np.float64)
    ref = np.flip(np.cumsum(np.flip(wide, 1), 1), 1) if reverse else np.cumsum(wide, 1)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_integer_xor_and_unsigned_max_reductions():
    x = RNG.integers(0, 2**32, (M, N), dtype=np.uint32)
    out = poisoned(N, np.uint32)
    run(
        _reduce_kernel(u32, 0, lambda k, a, b: [k.binary(arith.XOrIOp, a[0], b[0])]), [x, out], (1,)
    )
    np.testing.assert_array_equal(out, np.bitwise_xor.reduce(x, axis=0))
    signed = x.view(np.int32)
    run(
        _reduce_kernel(i32, 0, lambda k, a, b: [k.binary(arith.MaxUIOp, a[0], b[0])]),
        [signed, out.view(np.int32)],
        (1,),
    )
    np.testing.assert_array_equal(out, x.max(axis=0))


def test_small_int_sum_wraps_in_its_type():
    x = RNG.integers(100, 127, (M, N), dtype=np.int8)
    out = poisoned(N, np.int8)
    run(_reduce_kernel(i8, 0, lambda k, a, b: [k.binary(arith.AddIOp, a[0], b[0])]), [x, out], (1,))
    np.testing.assert_array_equal(out, (x.astype(np.int64).sum(0) + 128) % 256 - 128)


def test_two_source_argmin_reduction():
    """(value, index) pairs combined by compare-and-select, the shape of tl.argmin."""
    kb = KernelBuilder("argmin", [("x_ptr", ptr(f32)), ("out_ptr", ptr(i32))])
    offs = kb.arange(64)
    x = kb.load(kb.addptr(kb["x_ptr"], offs))

    def argmin(k, a, b):
        less = k.cmpf("olt", a[0], b[0])
        tie = k.binary(arith.AndIOp, k.cmpf("oeq", a[0], b[0]), k.cmpi("slt", a[1], b[1]))
        pick = k.binary(arith.OrIOp, less, tie)
        return [k.select(pick, a[0], b[0]), k.select(pick, a[1], b[1])]

    _, index = kb.reduce([x, offs], 0, argmin)
    kb.store(kb["out_ptr"], index)
    func = kb.finish()
    verify(func)
    x = RNG.standard_normal(64).astype(np.float32)
    x[[9, 40]] = -10.0
    out = poisoned(1, np.int32)
    run(func, [x, out], (1,))
    assert out[0] == 9


def _dot_kernel(element, acc, shape_a, shape_b, precision="ieee"):
    shape_c = shape_a[:-1] + shape_b[-1:]
    kb = KernelBuilder(
        "dot", [("a_ptr", ptr(element)), ("b_ptr", ptr(element)), ("c_ptr", ptr(acc))]
    )

    def tile(name, shape, elem):
        size = int(np.prod(shape))
        flat = kb.addptr(kb[name], kb.arange(size))
        return kb.op(tt.ReshapeOp, [tensor(shape, ptr(elem))], src=flat)

    a = kb.load(tile("a_ptr", shape_a, element))
    b = kb.load(tile("b_ptr", shape_b, element))
    c_ptrs = tile("c_ptr", shape_c, acc)
    c = kb.load(c_ptrs)
    d = kb.op(tt.DotOp, [tensor(shape_c, acc)], a=a, b=b, c=c, input_precision=precision)
    kb.store(c_ptrs, d)
    return kb.finish()


@pytest.mark.parametrize(
    "element, dtype, tol",
    [(f32, np.float32, 1e-5), (f16, np.float16, 1e-2), (bf16, ml_dtypes.bfloat16, 1e-2)],
)
@pytest.mark.parametrize("batched", [False, True])
def test_dot_accumulates_in_float32(element, dtype, tol, batched):
    shape_a, shape_b = ((2, 16, 32), (2, 32, 8)) if batched else ((16, 32), (32, 8))
    a = RNG.standard_normal(shape_a).astype(dtype)
    b = RNG.standard_normal(shape_b).astype(dtype)
    c = RNG.standard_normal(shape_a[:-1] + shape_b[-1:]).astype(np.float32)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64)) + c
    # fp32 inputs at ieee precision: tf32 (Triton's default, and the GPU's) would round them to 10 bits
    precision = "ieee" if element == f32 else "tf32"
    run(_dot_kernel(element, f32, shape_a, shape_b, precision), [a, b, c], (1,))
    np.testing.assert_allclose(c, ref, rtol=tol, atol=tol)


def test_int8_dot_accumulates_in_int32():
    a = RNG.integers(-128, 128, (16, 64), dtype=np.int8)
    b = RNG.integers(-128, 128, (64, 16), dtype=np.int8)
    c = RNG.integers(-1000, 1000, (16, 16), dtype=np.int32)
    ref = a.astype(np.int64) @ b.astype(np.int64) + c
    run(_dot_kernel(i8, i32, (16, 64), (64, 16)), [a, b, c], (1,))
    np.testing.assert_array_equal(c, ref)
