"""Real `@tw.jit` kernels, compiled by `tw.compile(..., target="interpreter")` or launched with
`kernel[grid](...)` under TILEWORKBENCH_INTERPRET, run by the interpreter and checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from canonical_kernels import add_kernel  # the tests' one vector add (tests/kernels)

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.backends.interpreter import run
from tileworkbench.config import config
from tileworkbench.errors import InterpreterError, OutOfBoundsError

RNG = np.random.default_rng(17)


@pytest.fixture(autouse=True)
def interpret(monkeypatch):
    """`kernel[grid](...)` runs in the interpreter even where a GPU is visible."""
    monkeypatch.setattr(config, "interpret", True)


def launch(fn, signature, constexprs, args, grid):
    """Compile through the public driver for the interpreter target and run the tile-opt IR."""
    compiled = tw.compile(fn, signature=signature, constexprs=constexprs, target="interpreter")
    assert compiled.target == "interpreter" and "tile-opt" in compiled.asm
    run(compiled.ir, args, grid, list(signature))


ADD_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32"}


def test_vector_add_through_compile():
    n = 1000
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    launch(add_kernel, ADD_SIG, {"BLOCK_SIZE": 256}, [x, y, out, n], (4,))
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_vector_add_through_a_launch(dtype):
    n = 3000
    x, y = RNG.standard_normal(n).astype(dtype), RNG.standard_normal(n).astype(dtype)
    out = np.full(n, np.nan, dtype)
    add_kernel[lambda meta: (tw.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n, BLOCK_SIZE=1024)
    np.testing.assert_allclose(
        out.astype(np.float64), x.astype(np.float64) + y, rtol=1e-3 if dtype == np.float16 else 1e-6
    )


@tw.jit
def unmasked_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x + tl.load(y_ptr + offs))


@pytest.mark.only_on("interpreter")  # its bounds checks; the GPU's (debug mode) in tests/nvptx
def test_unmasked_kernel_reports_the_source_line():
    n = 1000
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        launch(
            unmasked_add_kernel, ADD_SIG, {"BLOCK": 256}, [x, y, np.zeros(n, np.float32), n], (4,)
        )
    message = str(info.value)
    assert "x = tl.load(x_ptr + offs)" in message and "'x_ptr'" in message
    assert "element offset 1000" in message and "program id (3, 0, 0)" in message
    assert "test_frontend_kernels.py:" in message and "'unmasked_add_kernel'" in message


@tw.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + offs, y, mask=mask)


def test_softmax_on_a_strided_input():
    x = RNG.standard_normal((32, 200)).astype(np.float32) * 3
    view = x[:, :150]
    out = np.full((32, 150), np.nan, np.float32)
    sig = {
        "out_ptr": "*fp32",
        "in_ptr": "*fp32",
        "in_stride": "i32",
        "out_stride": "i32",
        "n_cols": "i32",
    }
    launch(softmax_kernel, sig, {"BLOCK": 256}, [out, view, 200, 150, 150], (32,))
    wide = view.astype(np.float64)
    ref = np.exp(wide - wide.max(1, keepdims=True))
    np.testing.assert_allclose(out, ref / ref.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


@tw.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(
            a_ptr + rm[:, None] * K + (k + rk)[None, :],
            mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + (k + rk)[:, None] * N + rn[None, :],
            mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b)
    tl.store(
        c_ptr + rm[:, None] * N + rn[None, :],
        acc.to(tl.float16),
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def test_matmul_with_a_k_loop():
    m, n, k = 40, 48, 70
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
    launch(matmul_kernel, sig, {"BM": 16, "BN": 32, "BK": 32}, [a, b, c, m, n, k], (3, 2))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-2, atol=2e-2)


@tw.jit
def int_kernel(a_ptr, b_ptr, q_ptr, r_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(q_ptr + offs, a // b)
    tl.store(r_ptr + offs, a % b)


def test_integer_floor_division_follows_c():
    a = RNG.integers(-1000, 1000, 64, dtype=np.int32)
    b = RNG.integers(1, 30, 64, dtype=np.int32) * RNG.choice([-1, 1], 64).astype(np.int32)
    q, r = np.zeros(64, np.int32), np.zeros(64, np.int32)
    sig = {"a_ptr": "*i32", "b_ptr": "*i32", "q_ptr": "*i32", "r_ptr": "*i32"}
    launch(int_kernel, sig, {"BLOCK": 64}, [a, b, q, r], (1,))
    ref_q = np.trunc(a / b).astype(np.int32)
    np.testing.assert_array_equal(q, ref_q)
    np.testing.assert_array_equal(r, a - b * ref_q)


@tw.jit
def argmax_cumsum_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr, tl.argmax(x, axis=0))
    tl.store(out_ptr + 1 + offs, tl.cumsum(offs, axis=0))


def test_argmax_ties_break_left_and_cumsum():
    x = RNG.standard_normal(128).astype(np.float32)
    x[[17, 90]] = 10.0
    out = np.full(129, -1, np.int32)
    launch(
        argmax_cumsum_kernel, {"x_ptr": "*fp32", "out_ptr": "*i32"}, {"BLOCK": 128}, [x, out], (1,)
    )
    assert out[0] == 17
    np.testing.assert_array_equal(out[1:], np.cumsum(np.arange(128)))


@tw.jit(debug=True)  # tl.device_assert is compiled in only in debug mode, as in Triton
def assert_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x >= 0, "x must be non-negative")


# `launch` runs the tile-opt IR without debug mode: on cuda its assert is `__assertfail`, a trap
@pytest.mark.only_on("interpreter", "cpu")
def test_device_assert_from_a_kernel():
    x = np.abs(RNG.standard_normal(32)).astype(np.float32)
    x[7] = -1
    with pytest.raises(InterpreterError, match="x must be non-negative") as info:
        launch(assert_kernel, {"x_ptr": "*fp32"}, {"BLOCK": 32}, [x], (1,))
    assert "first failing index (7,)" in str(info.value)


@tw.jit
def histogram_kernel(x_ptr, bins_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.atomic_add(bins_ptr + x, 1, mask=offs < n)


def test_histogram_with_atomics():
    x = RNG.integers(0, 16, 1000, dtype=np.int32)
    bins = np.zeros(16, np.int32)
    launch(
        histogram_kernel,
        {"x_ptr": "*i32", "bins_ptr": "*i32", "n": "i32"},
        {"BLOCK": 128, "BINS": 16},
        [x, bins, 1000],
        (8,),
    )
    np.testing.assert_array_equal(bins, np.bincount(x, minlength=16))


@tw.jit
def _product(a, b):
    return a * b


@tw.jit
def reduce_scan_kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(o_ptr + rm, tl.reduce(x, 1, _product))
    tl.store(
        o_ptr + M + rm[:, None] * N + rn[None, :], tl.associative_scan(x, 1, _product, reverse=True)
    )
    tl.store(o_ptr + M + M * N + rm, tl.argmin(x, axis=1).to(tl.float32))


def test_user_combine_functions_and_argmin_on_2d_tiles():
    m, n = 8, 16
    x = (RNG.random((m, n)) + 0.5).astype(np.float32)
    out = np.full(m + m * n + m, np.nan, np.float32)
    reduce_scan_kernel[(1,)](x, out, M=m, N=n)
    wide = x.astype(np.float64)
    np.testing.assert_allclose(out[:m], wide.prod(1), rtol=1e-5)
    scanned = np.flip(np.cumprod(np.flip(wide, 1), 1), 1)
    np.testing.assert_allclose(out[m : m + m * n].reshape(m, n), scanned, rtol=1e-5)
    np.testing.assert_array_equal(out[m + m * n :], x.argmin(1))


@tw.jit
def while_print_kernel(o_ptr, n):
    i = 0
    acc = 0
    while i < n:
        if i % 3 == 0:
            acc += i
        else:
            acc -= 1
        i += 1
    tl.store(o_ptr, acc)
    tl.device_print("acc ", acc)


@pytest.mark.gpu_isolated  # on cuda: vprintf, in a process of its own
def test_while_if_and_device_print(device_stdout):
    out = np.zeros(1, np.int32)
    while_print_kernel[(2,)](out, 10)
    assert out[0] == sum(i if i % 3 == 0 else -1 for i in range(10))
    # a GPU prints a scalar from every thread (as Triton's does), its programs in any order
    printed = device_stdout().splitlines()
    assert sorted(set(printed)) == ["pid (0, 0, 0) idx () acc 12", "pid (1, 0, 0) idx () acc 12"]


@tw.jit
def atomic_minmax_kernel(x_ptr, hi_ptr, lo_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.atomic_max(hi_ptr + tl.arange(0, BLOCK) % 4, x)
    tl.atomic_min(lo_ptr + tl.arange(0, BLOCK) % 4, x)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32])
def test_atomic_max_min_from_a_kernel(dtype):
    if dtype == np.float32:
        x = RNG.standard_normal(64).astype(dtype)
    else:
        x = RNG.integers(-1000 if dtype == np.int32 else 0, 1000, 64).astype(dtype)
    info = np.finfo(dtype) if dtype == np.float32 else np.iinfo(dtype)
    hi, lo = np.full(4, info.min, dtype), np.full(4, info.max, dtype)
    atomic_minmax_kernel[(1,)](x, hi, lo, BLOCK=64)
    np.testing.assert_array_equal(hi, x.reshape(16, 4).max(0))
    np.testing.assert_array_equal(lo, x.reshape(16, 4).min(0))
