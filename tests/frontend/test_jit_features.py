"""@tw.jit features: grids (tuple, int, function of the meta-parameters), constexpr keyword arguments,
defaults, launch options, warmup, do_not_specialize, @jit calling @jit (tuples returned), globals,
tw.cdiv / next_power_of_2 / reinterpret, `.fn`, specialization, recompilation on redefinition and the
exception hierarchy."""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
import pytest
from fe_util import assert_close, poisoned, randn

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import CompilationError, TileworkbenchError, TritonError

THIS = sys.modules[__name__]


@tw.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr, OFFSET: tl.constexpr = 0.5):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor + OFFSET, mask=mask)


@pytest.mark.parametrize("grid_kind", ["tuple", "int", "function"])
def test_grids_constexpr_kwargs_and_defaults(rng, grid_kind):
    n, block = 300, 64
    x = randn(rng, n)
    out = poisoned(n, np.float32)
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return (tw.cdiv(meta["n"], meta["BLOCK"]),)

    g = {"tuple": (tw.cdiv(n, block),), "int": tw.cdiv(n, block), "function": grid}[grid_kind]
    scale_kernel[g](x, out, n, 2.0, BLOCK=block)
    assert_close(out, x.astype(np.float64) * 2 + 0.5, rtol=2e-6, atol=1e-6)  # x*2+0.5 may cancel
    if grid_kind == "function":
        assert seen[0]["BLOCK"] == block and seen[0]["n"] == n and seen[0]["OFFSET"] == 0.5


def test_launch_options_and_warmup(rng):
    n = 128
    x = randn(rng, n)
    out = poisoned(n, np.float32)
    compiled = scale_kernel.warmup(x, out, n, 1.0, BLOCK=32, OFFSET=1.0, grid=(4,))
    assert isinstance(compiled, tw.CompiledKernel)
    assert np.isnan(out).all()  # warmup compiles without launching
    assert "tt.func" in compiled.asm["tile"] and compiled.passes[0][0] == "tile"
    scale_kernel[(4,)](x, out, n, 3.0, BLOCK=32, OFFSET=1.0, num_warps=8, num_stages=2)
    assert_close(out, x.astype(np.float64) * 3 + 1, rtol=2e-6, atol=1e-6)


def test_fn_attribute_and_direct_call():
    assert callable(scale_kernel.fn) and scale_kernel.fn.__name__ == "scale_kernel"
    assert scale_kernel.__name__ == "scale_kernel"
    with pytest.raises(RuntimeError, match="launch it"):
        scale_kernel(1, 2, 3)


@tw.jit
def spec_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * stride, mask=offs < n)
    tl.store(out_ptr + offs, x, mask=offs < n)


def _func_header(compiled) -> str:
    return compiled.asm["tile"].splitlines()[0]


def test_specialization_divisibility_and_equal_1(rng):
    x = randn(rng, 64)
    out = poisoned(32, np.float32)
    header = _func_header(spec_kernel.warmup(x, out, 32, 1, BLOCK=32, grid=(1,)))
    for name in ("x_ptr", "out_ptr", "n"):
        assert f"%{name}: " in header and header.split(f"%{name}: ")[1].split(",")[0].endswith(
            "{tt.divisibility = 16}"), header
    assert "%stride: i32," in header or "%stride: i32)" in header  # == 1: not divisible, but folded
    compiled = spec_kernel.warmup(x, out, 32, 1, BLOCK=32, grid=(1,))
    assert "arith.muli" not in compiled.asm["tile-opt"]  # offs * 1 folded away
    # a misaligned pointer and n = 30 get no divisibility; stride 2 is a runtime multiply
    header = _func_header(spec_kernel.warmup(x[1:], out, 30, 2, BLOCK=32, grid=(1,)))
    assert "%x_ptr: !tt.ptr<f32>," in header and "%n: i32," in header
    spec_kernel[(1,)](x[1:], out, 30, 2, BLOCK=32)
    assert_close(out[:30], x[1:61:2], dtype=np.float32)
    assert np.isnan(out[30:]).all()


@tw.jit(do_not_specialize=["n"])
def no_spec_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=-1.0))


def test_do_not_specialize(rng):
    # the in-memory cache is keyed by target too: an earlier target's entry would count (it did on
    # cpu, after the interpreter's run of this test)
    no_spec_kernel.cache.clear()
    x = randn(rng, 32)
    out = poisoned(32, np.float32)
    header = _func_header(no_spec_kernel.warmup(x, out, 16, BLOCK=32, grid=(1,)))
    assert "%n: i32," in header or "%n: i32)" in header
    no_spec_kernel[(1,)](x, out, 16, BLOCK=32)
    no_spec_kernel[(1,)](x, out, 1, BLOCK=32)
    assert len(no_spec_kernel.cache) == 1  # 16, and 1, share the warmup's specialization
    assert_close(out, np.r_[x[:1], -np.ones(31)], dtype=np.float32)


@tw.jit
def min_max_pair(a, b):
    return tl.minimum(a, b), tl.maximum(a, b)


@tw.jit
def sorted_pair_sum(a, b, SCALE: tl.constexpr = 1):
    lo, hi = min_max_pair(a, b)  # @jit calling @jit, a tuple back
    return lo * SCALE, (hi, lo + hi)


@tw.jit
def nested_kernel(x_ptr, y_ptr, lo_ptr, hi_ptr, sum_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    lo, (hi, total) = sorted_pair_sum(tl.load(x_ptr + offs), tl.load(y_ptr + offs), SCALE=2)
    tl.store(lo_ptr + offs, lo)
    tl.store(hi_ptr + offs, hi)
    tl.store(sum_ptr + offs, total)


def test_jit_calls_jit_with_tuples(rng):
    x, y = randn(rng, 16), randn(rng, 16)
    lo, hi, total = (poisoned(16, np.float32) for _ in range(3))
    nested_kernel[(1,)](x, y, lo, hi, total, N=16)
    assert_close(lo, np.minimum(x, y) * 2.0, dtype=np.float32)
    assert_close(hi, np.maximum(x, y), dtype=np.float32)
    assert_close(total, x.astype(np.float64) + y, dtype=np.float32)


FACTOR = tl.constexpr(3)
OUT_DTYPE = tl.float16


@tw.jit
def helper(x):
    return x * FACTOR


@tw.jit
def globals_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, helper(tl.load(x_ptr + offs)).to(OUT_DTYPE))


@tw.jit
def other_helper(x):
    return x - 1.0


def test_globals_and_recompilation_on_redefinition(rng, monkeypatch):
    x = randn(rng, 16)
    out = poisoned(16, np.float16)
    globals_kernel[(1,)](x, out, N=16)
    assert_close(out, x.astype(np.float64) * 3, dtype=np.float16)
    monkeypatch.setattr(THIS, "FACTOR", tl.constexpr(5))  # a new constexpr value: recompiled
    globals_kernel[(1,)](x, out, N=16)
    assert_close(out, x.astype(np.float64) * 5, dtype=np.float16)
    monkeypatch.setattr(THIS, "helper", other_helper)  # a redefined helper: recompiled
    globals_kernel[(1,)](x, out, N=16)
    assert_close(out, x.astype(np.float64) - 1, dtype=np.float16)


def test_host_helpers():
    assert [tw.cdiv(n, 16) for n in (1, 16, 17, 32, 33)] == [1, 1, 2, 2, 3]
    assert [tw.next_power_of_2(n) for n in (1, 2, 3, 5, 64, 65, 1000)] == [1, 2, 4, 8, 64, 128, 1024]
    x = np.arange(8, dtype=np.uint16)
    bf = tw.reinterpret(x, tl.bfloat16)
    assert bf.dtype == ml_dtypes.bfloat16 and bf.ctypes.data == x.ctypes.data
    f8 = tw.reinterpret(np.zeros(4, np.uint8), tl.float8e5)
    assert f8.dtype == ml_dtypes.float8_e5m2
    with pytest.raises(ValueError):
        tw.reinterpret(np.zeros(4, np.uint8), tl.float16)


@tw.jit
def reinterpret_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.float32))


def test_reinterpreted_arrays_launch(rng):
    values = randn(rng, 16, ml_dtypes.bfloat16)
    raw = values.view(np.uint16)
    out = poisoned(16, np.float32)
    reinterpret_kernel[(1,)](tw.reinterpret(raw, tl.bfloat16), out, N=16)
    np.testing.assert_array_equal(out, values.astype(np.float32))


def test_exception_hierarchy():
    assert TritonError is TileworkbenchError
    assert issubclass(CompilationError, TileworkbenchError)
    assert tw.CompilationError is CompilationError and tw.TritonError is TritonError


@tw.jit
def to_on_specialized_kernel(x_ptr, out_ptr, stride, N: tl.constexpr):
    offs = tl.arange(0, N)
    s = stride.to(tl.int64)  # stride == 1 is folded into a constant; .to must still work (Triton #2939)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * s))


@pytest.mark.parametrize("stride", [1, 2])
def test_to_on_an_argument_specialized_to_1(rng, stride):
    x = randn(rng, 32)
    out = poisoned(16, np.float32)
    to_on_specialized_kernel[(1,)](x, out, stride, N=16)
    np.testing.assert_array_equal(out, x[:32:stride][:16])


@tw.jit
def optional_bias_kernel(x_ptr, bias_ptr, out_ptr, n, scale, flag, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if bias_ptr is not None:  # a None argument is a compile-time constant: this folds
        x += tl.load(bias_ptr + offs)
    if flag:  # a bool argument is a runtime int1
        x = x * scale
    tl.store(out_ptr + offs, x, mask=offs < n)


def test_none_pointer_numpy_scalars_and_bools(rng):
    x, b = randn(rng, 8), randn(rng, 8)
    out = poisoned(8, np.float32)
    optional_bias_kernel[(1,)](x, None, out, np.int32(6), np.float32(2.5), True, N=8)
    assert_close(out[:6], x[:6].astype(np.float64) * 2.5, dtype=np.float32)
    assert np.isnan(out[6:]).all()
    optional_bias_kernel[(1,)](x, b, out, 8, 2.5, False, N=8)
    assert_close(out, x.astype(np.float64) + b, dtype=np.float32)
    tile = optional_bias_kernel.warmup(x, None, out, 8, 2.5, True, N=8, grid=(1,)).asm["tile"]
    assert "%bias_ptr" not in tile and tile.count("tt.load") == 1
