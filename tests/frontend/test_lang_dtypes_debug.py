"""dtype objects (Triton's names and predicates), constexpr, static_range, range(num_stages), static_assert,
static_print, device_print, device_assert, debug_barrier, the compiler hints, assume and
inline_asm_elementwise."""

from __future__ import annotations

import numpy as np
import pytest
from fe_util import assert_close, compile_tile, poisoned, randn

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import CompilationError, InterpreterError

ALL = {"int1": tl.int1, "int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
       "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32, "uint64": tl.uint64,
       "fp16": tl.float16, "bf16": tl.bfloat16, "fp32": tl.float32, "fp64": tl.float64,
       "fp8e4nv": tl.float8e4nv, "fp8e5": tl.float8e5}
BITS = {"int1": 1, "fp8e4nv": 8, "fp8e5": 8, "fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64}


@pytest.mark.parametrize("name", list(ALL))
def test_dtype_objects(name):
    dt = ALL[name]
    assert isinstance(dt, tl.dtype) and dt.name == name and str(dt) == name
    assert tl.dtype(name) == dt and hash(tl.dtype(name)) == hash(dt)
    is_float = name.startswith(("fp", "bf"))
    assert dt.is_floating() == is_float and dt.is_int() == (not is_float)
    assert dt.is_int_signed() == (name in tl.dtype.SINT_TYPES)
    assert dt.is_int_unsigned() == (name in tl.dtype.UINT_TYPES)
    assert dt.is_standard_floating() == (name in tl.dtype.STANDARD_FP_TYPES)
    assert dt.primitive_bitwidth == (BITS[name] if name in BITS else int(name.lstrip("uint")))
    assert dt.is_fp8() == name.startswith("fp8") and dt.is_bf16() == (name == "bf16")
    assert dt.is_fp16() == (name == "fp16") and dt.is_fp32() == (name == "fp32")
    assert dt.is_int1() == (name == "int1") and dt.is_bool() == (name == "int1")
    assert not dt.is_ptr() and not dt.is_block()


def test_dtype_sets_and_aliases():
    assert tl.dtype.SINT_TYPES == ("int8", "int16", "int32", "int64")
    assert set(tl.dtype.UINT_TYPES) == {"int1", "uint8", "uint16", "uint32", "uint64"}
    assert set(tl.dtype.STANDARD_FP_TYPES) == {"fp16", "bf16", "fp32", "fp64"}
    assert tl.dtype("float32") == tl.float32 and tl.dtype("bfloat16") == tl.bfloat16
    assert tl.float32 != tl.float16 and tl.int32 != tl.uint32
    assert tl.float32.fp_mantissa_width == 23 and tl.bfloat16.fp_mantissa_width == 7
    assert repr(tl.float32) == "triton.language.float32"
    ptr = tl.pointer_type(tl.float16)
    assert ptr.is_ptr() and ptr.element_ty == tl.float16 and ptr == tl.pointer_type(tl.float16)
    block = tl.block_type(tl.int8, [4, 8])
    assert block.is_block() and block.shape == (4, 8) and block.numel == 32 and block.scalar == tl.int8
    with pytest.raises(ValueError, match="unknown dtype"):
        tl.dtype("fp12")


@tw.jit
def dtype_attr_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.static_assert(x.dtype == tl.float16 and x.dtype.is_floating() and x.dtype.primitive_bitwidth == 16)
    tl.static_assert(x.shape == (N,) and x.numel == N)
    y = x.to(tl.dtype("fp32"))
    tl.static_assert(y.dtype.is_fp32())
    tl.store(out_ptr + offs, y * 2)


def test_dtypes_inside_a_kernel(rng):
    x = randn(rng, 16, np.float16)
    out = poisoned(16, np.float32)
    dtype_attr_kernel[(1,)](x, out, N=16)
    assert_close(out, x.astype(np.float64) * 2, rtol=0)


SCALE = tl.constexpr(3)


@tw.jit
def static_loops_kernel(x_ptr, out_ptr, K: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    acc = tl.zeros((N,), tl.float32)
    for i in tl.static_range(K):
        acc += tl.load(x_ptr + i * N + offs) * (i + 1)  # i is a Python int here
    for j in tl.static_range(K - 1, -1, -2):  # negative steps unroll too
        acc -= tl.load(x_ptr + j * N + offs)
    for k in tl.range(0, K, 1, num_stages=2, loop_unroll_factor=1):
        acc += SCALE
    tl.store(out_ptr + offs, acc)


def test_static_range_and_range_options(rng):
    k, n = 5, 16
    x = randn(rng, (k, n))
    out = poisoned(n, np.float32)
    static_loops_kernel[(1,)](x, out, K=k, N=n)
    x64 = x.astype(np.float64)
    want = sum(x64[i] * (i + 1) for i in range(k)) - sum(x64[j] for j in range(k - 1, -1, -2)) + 3 * k
    assert_close(out, want, rtol=1e-5, atol=1e-4)  # the sums may cancel
    tile = compile_tile(static_loops_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"K": k, "N": n})
    assert tile.count("scf.for") == 1  # the static loops are unrolled; tl.range stays a loop


@tw.jit
def static_checks_kernel(out_ptr, N: tl.constexpr):
    tl.static_print("N is", N)
    tl.static_assert(N % 2 == 0, "N must be even")
    tl.store(out_ptr + tl.arange(0, N), tl.full((N,), N, tl.int32))


def test_static_print_and_static_assert(capsys):
    out = poisoned(8, np.int32)
    static_checks_kernel[(1,)](out, N=8)
    assert "N is 8" in capsys.readouterr().out
    np.testing.assert_array_equal(out, 8)
    with pytest.raises(CompilationError, match="static_assert failed: N must be even"):
        static_checks_kernel[(1,)](poisoned(1, np.int32), N=1)


@tw.jit
def print_kernel(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.device_print("x: ", x)
    tl.debug_barrier()


@pytest.mark.gpu_isolated  # on cuda: vprintf, in a process of its own
def test_device_print(device_stdout):
    x = np.array([1.5, -2.25, 3.0, 4.125], np.float32)
    print_kernel[(2,)](x, N=4)
    printed = device_stdout()
    for value in ("1.5", "-2.25", "3", "4.125"):
        assert value in printed
    assert printed.count("x: ") >= 8  # each program prints every element
    assert "pid (1, 0, 0)" in printed or "(1, 0, 0)" in printed


@tw.jit
def assert_kernel(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.device_assert(x > 0, "x must be positive")


@pytest.mark.gpu_isolated  # on cuda: the failure travels through debug mode's error buffer
def test_device_assert_raises_in_debug_mode():
    assert_kernel[(1,)](np.ones(8, np.float32), N=8, debug=True)
    x = np.ones(8, np.float32)
    x[3] = -1
    with pytest.raises(InterpreterError, match="x must be positive"):
        assert_kernel[(1,)](x, N=8, debug=True)


def test_device_assert_is_compiled_out_without_debug_as_in_triton():
    x = np.ones(8, np.float32)
    x[3] = -1
    assert_kernel[(1,)](x, N=8)  # no check, no cost: Triton drops tl.device_assert unless debug
    assert "tt.assert" not in assert_kernel.warmup(x, N=8, grid=(1,)).asm["tile"]
    assert "tt.assert" in assert_kernel.warmup(x, N=8, grid=(1,), debug=True).asm["tile"]


@tw.jit
def hints_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    start = tl.multiple_of(tl.program_id(0) * BLOCK, 16)
    offs = tl.max_contiguous(tl.multiple_of(start + tl.arange(0, BLOCK), BLOCK), BLOCK)
    same = tl.max_constancy(offs // BLOCK, BLOCK)
    tl.assume(n > 0)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x + same.to(tl.float32), mask=offs < n)


def test_compiler_hints_and_assume(rng):
    n, block = 100, 32
    x = randn(rng, n)
    out = poisoned(n, np.float32)
    hints_kernel[(4,)](x, out, n, BLOCK=block)
    assert_close(out, x.astype(np.float64) + np.arange(n) // block, rtol=1e-6)
    tile = compile_tile(hints_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": block})
    assert "tt.divisibility" in tile or "divisibility" in tile


@pytest.mark.only_on("interpreter")  # compiled, a false tl.assume is undefined behaviour
def test_a_false_assume_is_caught_by_the_interpreter(rng):
    x, out = randn(rng, 100), poisoned(100, np.float32)
    with pytest.raises(InterpreterError, match="tl.assume condition is false"):  # checked when interpreted
        hints_kernel[(1,)](x, out, -1, BLOCK=32)


@tw.jit
def inline_asm_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y)


@pytest.mark.only_on("interpreter")  # its own refusal
def test_inline_asm_compiles_but_the_interpreter_refuses_it():
    tile = compile_tile(inline_asm_kernel, {"x_ptr": "*i32", "out_ptr": "*i32"}, {"N": 8})
    assert "mov.b32" in tile
    with pytest.raises(InterpreterError, match="inline_asm_elementwise runs only on the GPU"):
        inline_asm_kernel[(1,)](np.arange(8, dtype=np.int32), poisoned(8, np.int32), N=8)


@pytest.mark.only_on("cuda")
def test_inline_asm_runs_on_the_gpu(rng):
    x = rng.integers(-2**31, 2**31 - 1, 64, dtype=np.int64).astype(np.int32)
    out = poisoned(64, np.int32)
    inline_asm_kernel[(1,)](x, out, N=64)
    np.testing.assert_array_equal(out, x)


@tw.jit
def static_assert_kernel(x_ptr, N: tl.constexpr):
    tl.static_assert(N % 8 == 0, "N must be a multiple of 8")  # STATIC ASSERT
    tl.store(x_ptr + tl.arange(0, N), tl.zeros((N,), tl.float32))


@pytest.mark.parametrize("debug", [False, True])
def test_static_assert_fails_at_compile_time_in_either_mode(debug):
    from tileworkbench.errors import CompilationError, CompileTimeAssertionFailure

    static_assert_kernel.warmup(np.ones(16, np.float32), N=16, grid=(1,), debug=debug)
    with pytest.raises(CompileTimeAssertionFailure) as info:  # Triton's class, a CompilationError
        static_assert_kernel.warmup(np.ones(4, np.float32), N=4, grid=(1,), debug=debug)
    assert isinstance(info.value, CompilationError)
    message = str(info.value)
    assert "static_assert failed: N must be a multiple of 8" in message and "# STATIC ASSERT" in message


@tw.jit
def python_assert_kernel(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    assert x > 0, "x must be positive"


@pytest.mark.gpu_isolated  # on cuda: the failure travels through debug mode's error buffer
def test_a_python_assert_on_run_time_values_is_a_device_assert():
    x = np.ones(8, np.float32)
    x[5] = -2
    python_assert_kernel[(1,)](x, N=8)  # compiled out without debug, as in Triton
    with pytest.raises(InterpreterError, match="x must be positive") as info:
        python_assert_kernel[(1,)](x, N=8, debug=True)
    assert "failing index (5,)" in str(info.value)  # the interpreter's says "first": it knows
