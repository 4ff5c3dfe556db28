"""End-to-end interpreter runs of hand-built kernels: elementwise, grids, strided views, loops, branches."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from interp_kernels import (
    run,
    KernelBuilder,
    bf16,
    f16,
    f32,
    i1,
    i32,
    poisoned,
    ptr,
    softmax_kernel,
    tensor,
)

from tileworkbench.ir import verify
from tileworkbench.ir.ops import arith, scf

RNG = np.random.default_rng(1234)


def _vector_add(element, block: int):
    kb = KernelBuilder(
        "add_kernel",
        [("x_ptr", ptr(element)), ("y_ptr", ptr(element)), ("out_ptr", ptr(element)), ("n", i32)],
    )
    start = kb.binary(arith.MulIOp, kb.pid(0), kb.const(block, i32))
    offs = kb.binary(arith.AddIOp, kb.splat(start, (block,)), kb.arange(block))
    mask = kb.cmpi("slt", offs, kb.splat(kb["n"], (block,)))
    x = kb.load(kb.addptr(kb["x_ptr"], offs), mask)
    y = kb.load(kb.addptr(kb["y_ptr"], offs), mask)
    kb.store(kb.addptr(kb["out_ptr"], offs), kb.binary(arith.AddFOp, x, y), mask)
    func = kb.finish()
    verify(func)
    return func


@pytest.mark.parametrize(
    "element, dtype, tol",
    [(f32, np.float32, 1e-6), (f16, np.float16, 1e-3), (bf16, ml_dtypes.bfloat16, 1e-2)],
)
def test_vector_add_matches_numpy(element, dtype, tol):
    n = 1000
    x = RNG.standard_normal(n).astype(dtype)
    y = RNG.standard_normal(n).astype(dtype)
    out = np.full(n, np.nan, dtype)
    run(_vector_add(element, 128), [x, y, out, n], (8, 1, 1))
    ref = x.astype(np.float64) + y.astype(np.float64)
    assert out.dtype == dtype
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=tol, atol=tol)


def test_masked_tail_leaves_the_rest_untouched():
    n = 300
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    out = poisoned(n + 20)
    run(_vector_add(f32, 128), [x, y, out, n], (3,), ["x_ptr", "y_ptr", "out_ptr", "n"])
    np.testing.assert_allclose(out[:n], x + y, rtol=1e-6)
    assert np.isnan(out[n:]).all()


def test_softmax_rows_with_masked_columns():
    x = RNG.standard_normal((64, 1000)).astype(np.float32) * 4
    out = poisoned(x.shape)
    run(softmax_kernel(1024), [out, x, x.shape[1], x.shape[1]], (x.shape[0], 1, 1))
    wide = x.astype(np.float64)
    ref = np.exp(wide - wide.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-7)


def _copy_2d(block_m: int, block_n: int):
    """out[i, j] = x[i, j] through row/column strides; program (pid0, pid1) copies one tile."""
    kb = KernelBuilder(
        "copy2d",
        [
            ("x_ptr", ptr(f32)),
            ("out_ptr", ptr(f32)),
            ("sx0", i32),
            ("sx1", i32),
            ("so0", i32),
            ("so1", i32),
        ],
    )
    rows = kb.binary(
        arith.AddIOp,
        kb.splat(kb.binary(arith.MulIOp, kb.pid(0), kb.const(block_m, i32)), (block_m,)),
        kb.arange(block_m),
    )
    cols = kb.binary(
        arith.AddIOp,
        kb.splat(kb.binary(arith.MulIOp, kb.pid(1), kb.const(block_n, i32)), (block_n,)),
        kb.arange(block_n),
    )
    shape = (block_m, block_n)

    def offsets(s0, s1):
        r = kb.broadcast(
            kb.expand_dims(kb.binary(arith.MulIOp, rows, kb.splat(s0, (block_m,))), 1), shape
        )
        c = kb.broadcast(
            kb.expand_dims(kb.binary(arith.MulIOp, cols, kb.splat(s1, (block_n,))), 0), shape
        )
        return kb.binary(arith.AddIOp, r, c)

    x = kb.load(kb.addptr(kb["x_ptr"], offsets(kb["sx0"], kb["sx1"])))
    kb.store(kb.addptr(kb["out_ptr"], offsets(kb["so0"], kb["so1"])), x)
    return kb.finish()


def test_2d_grid_on_strided_views_reads_and_writes_the_callers_memory():
    base = RNG.standard_normal((64, 96)).astype(np.float32)
    view = base[::2, 1::3]  # 32 x 32, non-contiguous
    out_base = poisoned((32, 64))
    out = out_base[:, ::-2]  # negative stride: the kernel writes through the view
    steps = [s // 4 for s in view.strides] + [s // 4 for s in out.strides]
    run(_copy_2d(16, 8), [view, out, *steps], (2, 4, 1))
    np.testing.assert_array_equal(out, view)
    assert np.isnan(out_base[:, -2::-2]).all()  # the columns between the view's stay poisoned


def test_for_loop_accumulates_and_if_picks_a_branch():
    """acc = sum over k < n of x[k*4:(k+1)*4]; then out = acc if flag else -acc."""
    kb = KernelBuilder(
        "loop", [("x_ptr", ptr(f32)), ("out_ptr", ptr(f32)), ("n", i32), ("flag", i32)]
    )
    offs = kb.arange(4)
    zero = kb.const(0.0, tensor((4,), f32))

    def body(k, iv, carried):
        base = k.binary(arith.MulIOp, iv, k.const(4, i32))
        tile = k.load(k.addptr(k.addptr(k["x_ptr"], base), offs))
        return [k.binary(arith.AddFOp, carried[0], tile)]

    acc = kb.for_loop(kb.const(0, i32), kb["n"], kb.const(1, i32), [zero], body)[0]
    cond = kb.cmpi("ne", kb["flag"], kb.const(0, i32))
    kb.store(kb.addptr(kb["out_ptr"], offs), _if_negate(kb, cond, acc))
    func = kb.finish()
    verify(func)
    x = RNG.standard_normal(40).astype(np.float32)
    for flag, sign in ((1, 1.0), (0, -1.0)):
        out = poisoned(4)
        run(func, [x, out, 7, flag], (1,))
        ref = sign * x[:28].astype(np.float64).reshape(7, 4).sum(0)
        np.testing.assert_allclose(out, ref, rtol=1e-5)


def _if_negate(kb, cond, acc):
    """scf.if cond -> acc else -acc."""
    from tileworkbench.ir import Block, Region

    then_block, else_block = Block(), Block()
    result = kb.op(
        scf.IfOp,
        [acc.type],
        condition=cond,
        then_region=Region([then_block]),
        else_region=Region([else_block]),
    )
    with kb.builder.at_end(then_block):
        kb.builder.create(scf.YieldOp, [], values=[acc])
    with kb.builder.at_end(else_block):
        neg = kb.unary(arith.NegFOp, acc)
        kb.builder.create(scf.YieldOp, [], values=[neg])
    return result


def test_while_loop_counts_collatz_steps():
    from tileworkbench.ir import Block, Region

    kb = KernelBuilder("collatz", [("out_ptr", ptr(i32)), ("start", i32)])
    before, after = Block([i32, i32]), Block([i32, i32])
    loop = kb.op(
        scf.WhileOp,
        [i32, i32],
        init_args=[kb["start"], kb.const(0, i32)],
        before=Region([before]),
        after=Region([after]),
    )
    with kb.builder.at_end(before):
        going = kb.cmpi("ne", before.args[0], kb.const(1, i32))
        kb.builder.create(scf.ConditionOp, [], condition=going, args=list(before.args))
    with kb.builder.at_end(after):
        value, steps = after.args
        odd = kb.cmpi("ne", kb.binary(arith.AndIOp, value, kb.const(1, i32)), kb.const(0, i32))
        up = kb.binary(
            arith.AddIOp, kb.binary(arith.MulIOp, value, kb.const(3, i32)), kb.const(1, i32)
        )
        down = kb.binary(arith.DivSIOp, value, kb.const(2, i32))
        nxt = kb.select(odd, up, down)
        kb.builder.create(
            scf.YieldOp, [], values=[nxt, kb.binary(arith.AddIOp, steps, kb.const(1, i32))]
        )
    kb.store(kb["out_ptr"], loop[1])
    func = kb.finish()
    verify(func)
    out = poisoned(1, np.int32)
    run(func, [out, 27], (1,))
    assert out[0] == 111  # 27 takes 111 steps to reach 1


def test_program_ids_and_counts_over_a_3d_grid():
    kb = KernelBuilder("ids", [("out_ptr", ptr(i32))])
    x, y, z = kb.pid(0), kb.pid(1), kb.pid(2)
    nx, ny = kb.num_programs(0), kb.num_programs(1)
    linear = kb.binary(
        arith.AddIOp,
        x,
        kb.binary(arith.MulIOp, nx, kb.binary(arith.AddIOp, y, kb.binary(arith.MulIOp, ny, z))),
    )
    kb.store(kb.addptr(kb["out_ptr"], linear), linear)
    out = poisoned(3 * 4 * 5, np.int32)
    run(kb.finish(), [out], (3, 4, 5))
    np.testing.assert_array_equal(out, np.arange(60))


def test_bool_pointer_stores_bytes_and_loads_booleans():
    kb = KernelBuilder("flags", [("x_ptr", ptr(f32)), ("flag_ptr", ptr(i1)), ("out_ptr", ptr(f32))])
    offs = kb.arange(16)
    x = kb.load(kb.addptr(kb["x_ptr"], offs))
    positive = kb.cmpf("ogt", x, kb.const(0.0, tensor((16,), f32)))
    kb.store(kb.addptr(kb["flag_ptr"], offs), positive)
    back = kb.load(kb.addptr(kb["flag_ptr"], offs))
    kb.store(kb.addptr(kb["out_ptr"], offs), kb.select(back, x, kb.const(0.0, tensor((16,), f32))))
    x = RNG.standard_normal(16).astype(np.float32)
    flags, out = np.zeros(16, np.bool_), poisoned(16)
    run(kb.finish(), [x, flags, out], (1,))
    np.testing.assert_array_equal(flags, x > 0)
    np.testing.assert_array_equal(out, np.where(x > 0, x, 0))
