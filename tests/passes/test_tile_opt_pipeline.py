"""`run_passes` and `TILE_OPT`: names and snapshots per pass, verification between passes, and real
`@tw.jit` kernels whose interpreter results are bit-identical before and after the pipeline."""

from __future__ import annotations

import numpy as np
import pytest
from passes_testing import binary, const, finish, new_func, store

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.backends.interpreter import run
from tileworkbench.frontend import generate
from tileworkbench.ir import IRVerificationError, Loc, PointerType
from tileworkbench.ir.ops import arith
from tileworkbench.ir.types import i32
from tileworkbench.passes import TILE_OPT, canonicalize, cse, dce, licm, pass_name, run_passes
from tileworkbench.passes.unroll import unroll
from tileworkbench.runtime.compiler import _parse_signature

RNG = np.random.default_rng(20261130)


def small_func():
    f, b = new_func([("out", PointerType(i32)), ("x", i32)])
    with b.at_loc(Loc("k.py", 3)):
        y = binary(b, arith.AddIOp, f.args[1], const(b, 0, i32), "y")
        store(b, f.args[0], binary(b, arith.MulIOp, y, y, "z"))
    return finish(f, b)


def test_pipeline_order_and_names():
    assert TILE_OPT == [canonicalize, cse, licm, unroll, cse, dce]
    assert [pass_name(p) for p in TILE_OPT] == ["canonicalize", "cse", "licm", "unroll", "cse", "dce"]


def test_run_passes_records_each_pass_with_locations():
    snapshots = run_passes(small_func(), TILE_OPT)
    assert [name for name, _ in snapshots] == ["canonicalize", "cse", "licm", "unroll", "cse", "dce"]
    canonicalized = snapshots[0][1]
    assert "arith.addi" not in canonicalized
    assert '%z = arith.muli %x, %x : i32  loc("k.py":3)' in canonicalized


def test_a_pass_that_breaks_the_ir_is_named():
    def breaker(func) -> bool:
        """Erases the definition of a used value."""
        op = next(op for op in func.walk() if isinstance(op, arith.MulIOp))
        op.erase()
        return True

    breaker.pass_name = "breaker"
    with pytest.raises(IRVerificationError, match="after pass `breaker`"):
        run_passes(small_func(), [canonicalize, breaker])
    # Without verification the runner trusts the pass.
    assert [n for n, _ in run_passes(small_func(), [breaker], verify=False)] == ["breaker"]


@tw.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        base = x_ptr + row * stride
        x = tl.load(base + offs, mask=offs < n_cols, other=0.0)
        acc += x * 1.0
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


ROW_SUM_SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32", "stride": "i32"}


def test_real_kernel_through_compile_hoists_and_folds():
    compiled = tw.compile(
        row_sum_kernel, signature=ROW_SUM_SIG, constexprs={"BLOCK": 16}, target="interpreter"
    )
    names = [name for name, _ in compiled.passes]
    assert names == ["tile", "canonicalize", "cse", "licm", "unroll", "cse", "dce"]
    lines = compiled.asm["tile-opt"].splitlines()
    loop = next(i for i, line in enumerate(lines) if "scf.for" in line)
    assert next(i for i, line in enumerate(lines) if "tt.make_range" in line) < loop
    assert next(i for i, line in enumerate(lines) if "arith.muli" in line) < loop
    assert not any("arith.mulf" in line for line in lines)  # x * 1.0 is gone
    rows, cols = 3, 40
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    out = np.full(rows, np.nan, np.float32)
    run(compiled.ir, [x, out, cols, cols], (rows,), list(ROW_SUM_SIG))
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=1), rtol=1e-5)


@tw.jit
def int_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    k = (BLOCK * 3 - 7) // 2 % 5
    y = (x * 0 + x) // 3 - x % (k + 1) + (x << 1) - (x - x)
    z = tl.where(x > 0, y, -y) if BLOCK > 1 else y
    tl.store(out_ptr + offs, z ^ (x & 0) | 0, mask=mask)


@tw.jit
def float_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for _ in range(4):
        s += x * 1.0 + 0.0 - x * x * 0.5
    y = tl.maximum(s, 0.0) + tl.where(x != x, 1.0, x - 0.0)  # noqa: PLR0124 (a NaN test)
    tl.store(out_ptr + offs, y, mask=mask)


@pytest.mark.parametrize(
    "kernel, dtype, sig_type",
    [
        (int_kernel, np.int32, "*i32"),
        (float_kernel, np.float32, "*fp32"),
    ],
)
def test_real_kernels_give_identical_bits_before_and_after_tile_opt(kernel, dtype, sig_type):
    signature = {"x_ptr": sig_type, "out_ptr": sig_type, "n": "i32"}
    func = generate(kernel.fn, _parse_signature(kernel.fn, signature), {"BLOCK": 32})
    n = 70
    if dtype == np.int32:
        x = RNG.integers(-(2**31), 2**31 - 1, size=n, dtype=np.int64).astype(np.int32)
        x[:4] = [0, -1, 2**31 - 1, -(2**31)]
    else:
        x = RNG.standard_normal(n).astype(np.float32)
        x[:4] = [0.0, -0.0, np.inf, np.nan]

    def execute():
        out = np.full(n, 7 if dtype == np.int32 else np.nan, dtype)
        run(func, [x.copy(), out, n], (3,), list(signature))
        return out

    before = execute()
    run_passes(func, TILE_OPT)
    after = execute()
    assert before.tobytes() == after.tobytes()
    assert sum(1 for _ in func.walk()) < 60  # the pipeline did shrink it
