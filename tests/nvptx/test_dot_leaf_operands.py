"""Issue 15: `tl.dot` of operands that were not loaded (`tl.full`, ranges, one value as both operands).
CSE makes `tl.dot(tl.full(c), tl.full(c))` a dot of one constant with itself; the layout pass gave that
value operand A's layout and then, converting it for operand B, moved both uses to B's layout, and the
NVPTX lowering failed with `KeyError: (0, 4)` (Triton's test_dot_without_load)."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_emulator import Emulator
from nvptx_support import needs_ptxas, run_ptxas

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.ir.ops import tt
from tileworkbench.ir.ops.ttg import DotOperandEncoding
from tileworkbench.passes.pipeline import TILE_GPU, run_passes
from tileworkbench.runtime.compiler import _parse_signature, tile_opt_ir
from tileworkbench.target import TargetInfo

RNG = np.random.default_rng()
N = 32


@tw.jit
def full_dot(out, A: tl.constexpr, B: tl.constexpr, DT: tl.constexpr):
    a = tl.full((32, 32), A, DT)
    b = tl.full((32, 32), B, DT)
    c = tl.dot(a, b)
    tl.store(out + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :], c)


@tw.jit
def self_dot(x_ptr, out):
    offs = tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out + offs, tl.dot(x, x))


@tw.jit
def range_dot(out, SCALE: tl.constexpr):
    rows = tl.arange(0, 32)[:, None]
    cols = tl.arange(0, 32)[None, :]
    a = ((rows * 7 + cols * 3) % 11).to(tl.float32) * SCALE
    tl.store(out + rows * 32 + cols, tl.dot(a, a))


def _dot_operand_encodings(fn, signature, constexprs):
    func = tile_opt_ir(fn.fn, _parse_signature(fn, signature), constexprs)[0]
    run_passes(func, TILE_GPU, target=TargetInfo(num_warps=4))  # no tensor cores: FMA operands
    dots = [op for op in func.walk() if isinstance(op, tt.DotOp)]
    return [(op.a.type.encoding, op.b.type.encoding) for op in dots]


def _range_matrix(scale: float) -> np.ndarray:
    rows, cols = np.arange(N)[:, None], np.arange(N)[None, :]
    return ((rows * 7 + cols * 3) % 11).astype(np.float64) * scale


def test_one_value_as_both_operands_gets_both_layouts():
    value = float(RNG.uniform(0.5, 2))
    [(a, b)] = _dot_operand_encodings(full_dot, {"out": "*fp32"}, {"A": value, "B": value,
                                                                  "DT": tl.float32})
    assert isinstance(a, DotOperandEncoding) and a.op_idx == 0
    assert isinstance(b, DotOperandEncoding) and b.op_idx == 1


@pytest.mark.parametrize("same", [True, False], ids=["same-constant", "two-constants"])
def test_full_dot_emulated(same):
    a_val = float(np.float32(RNG.uniform(-2, 2)))
    b_val = a_val if same else float(np.float32(RNG.uniform(-2, 2)))
    emu = Emulator(full_dot, {"out": "*fp32"}, {"A": a_val, "B": b_val, "DT": tl.float32})
    out = np.full((N, N), np.nan, np.float32)
    emu.launch((1,), out)
    want = np.full((N, N), a_val, np.float64) @ np.full((N, N), b_val, np.float64)
    assert np.allclose(out, want, rtol=1e-5, atol=1e-6)


def test_self_and_range_dots_emulated():
    x = RNG.standard_normal((N, N)).astype(np.float32)
    out = np.full((N, N), np.nan, np.float32)
    Emulator(self_dot, {"x_ptr": "*fp32", "out": "*fp32"}, {}).launch((1,), x, out)
    d = x.astype(np.float64)
    assert np.allclose(out, d @ d, rtol=1e-4, atol=1e-4)
    scale = float(np.float32(RNG.uniform(0.1, 1)))
    out = np.full((N, N), np.nan, np.float32)
    Emulator(range_dot, {"out": "*fp32"}, {"SCALE": scale}).launch((1,), out)
    m = _range_matrix(scale)
    assert np.allclose(out, m @ m, rtol=1e-5, atol=1e-5)


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_full_dot_assembles(arch, dtype, tmp_path):
    dt = tl.float32 if dtype == "fp32" else tl.float16
    compiled = tw.compile(full_dot, signature={"out": f"*{dtype}"},
                          constexprs={"A": 1.0, "B": 1.0, "DT": dt}, target=arch)
    done = run_ptxas(compiled.asm["ptx"], arch, tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_full_dot_on_the_gpu(dtype):
    from tileworkbench.cuda.device import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible")
    import cupy as cp

    a_val, b_val = float(RNG.integers(1, 4)) / 2, float(RNG.integers(1, 4)) / 4  # exact in fp16
    for a, b in ((a_val, a_val), (a_val, b_val)):
        out = cp.full((N, N), np.nan, dtype=dtype)
        full_dot[(1,)](out, A=a, B=b, DT=getattr(tl, dtype))
        assert np.array_equal(out.get().astype(np.float64), np.full((N, N), N * a * b))
    x = RNG.standard_normal((N, N)).astype(np.float32)
    out = cp.full((N, N), np.nan, dtype=np.float32)
    self_dot[(1,)](cp.asarray(x), out)
    d = x.astype(np.float64)
    assert np.allclose(out.get(), d @ d, rtol=2e-2, atol=2e-2)  # tf32 on tensor cores
