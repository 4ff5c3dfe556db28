"""The epilogue through `stmatrix` (sm_90): a 16-bit tensor-core result (`wgmma` or `mma.sync`
registers) stored to its staging tile four 8x8 matrices per `stmatrix.x4`, the PTX assembled by
ptxas, the stand-in's stores the inverse of `ldmatrix`'s loads, and matmuls with fp16 and bf16 outputs
run by the CPU emulator against NumPy float64 (with a check that a wrong matrix order is caught).
"""

from __future__ import annotations

import shutil
import subprocess

import ml_dtypes
import numpy as np
import pytest
from cpu_emulator import Emulator
from mma_standin import ldmatrix_rows, stmatrix_writes

import tileworkbench as tw

import kernels  # noqa: E402

MATMUL = kernels.load("tileworkbench").matmul_kernel  # tutorial 03's: fp32 acc, cast on store
RNG = np.random.default_rng(78)
NP = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16}


def _signature(dtype: str, m: int, n: int, k: int) -> dict:
    sig = {"a_ptr": f"*{dtype}:16", "b_ptr": f"*{dtype}:16", "c_ptr": f"*{dtype}:16"}
    for name, value in (("M", m), ("N", n), ("K", k), ("stride_am", k), ("stride_bk", n),
                        ("stride_cm", n)):
        sig[name] = "i32:16" if value % 16 == 0 else "i32"
    return sig | {"stride_ak": "i32:1", "stride_bn": "i32:1", "stride_cn": "i32:1"}


def _ptx(dtype="fp16", arch="sm_90a", block=(128, 256), warps=8, stages=3) -> str:
    bm, bn = block
    compiled = tw.compile(MATMUL, signature=_signature(dtype, 4096, 4096, 4096), target=arch,
                          num_warps=warps, num_stages=stages, use_cache=False,
                          constexprs={"BM": bm, "BN": bn, "BK": 64, "GROUP_M": 8})
    return compiled.asm["ptx"]


@pytest.mark.parametrize("dtype,block,warps,count", [("fp16", (128, 256), 8, 16),
                                                     ("bf16", (128, 128), 4, 16),
                                                     ("fp16", (64, 64), 4, 4)])
def test_wgmma_epilogue_stores_by_stmatrix(dtype, block, warps, count, tmp_path):
    """One stmatrix.x4 per 4 x 8x8 matrices of a thread's accumulators (128 x 256 over 256 threads:
    128 values, 64 pairs, 16 instructions), and no scalar shared store left in the epilogue."""
    ptx = _ptx(dtype, block=block, warps=warps)
    assert ptx.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == count
    assert "st.shared.b32" not in ptx and "st.shared.b16" not in ptx
    if shutil.which("ptxas"):
        (tmp_path / "k.ptx").write_text(ptx)
        result = subprocess.run(["ptxas", "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o",
                                 str(tmp_path / "k.o")], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[:2000]


def test_mma_sync_keeps_scalar_stores_before_sm_90_and_uses_stmatrix_on_sm_90():
    """sm_80 has no stmatrix: the mma.sync epilogue stores pairs by st.shared; sm_90 (mma.sync, no
    wgmma) stores its version-2 fragments by stmatrix."""
    ptx80 = _ptx(arch="sm_80", block=(128, 128), warps=4, stages=3)
    assert "stmatrix" not in ptx80 and "mma.sync" in ptx80 and "st.shared" in ptx80
    ptx90 = _ptx(arch="sm_90", block=(128, 128), warps=4, stages=3)
    assert "mma.sync" in ptx90 and "stmatrix.sync.aligned.m8n8.x4" in ptx90


def test_stand_in_stores_what_ldmatrix_loads():
    """The stand-in's stmatrix is the inverse of the (GPU-checked) ldmatrix stand-in: words stored by
    each lane through the same 32 row addresses are read back by each lane unchanged."""
    memory = np.zeros(4 * 8 * 16 * 2, dtype=np.uint8)
    rows = RNG.permutation(4 * 8 * 2)[:32] * 16  # 32 distinct 16-byte rows, in any order
    words = RNG.integers(0, 2**32, (32, 4), dtype=np.uint64).astype(np.uint32)
    for lane in range(32):
        for at, word in stmatrix_writes(rows, lane, words[lane]):
            memory[at:at + 4] = np.frombuffer(np.uint32(word).tobytes(), np.uint8)

    def read(at):
        return int(memory[at]) | int(memory[at + 1]) << 8

    for lane in range(32):
        assert (ldmatrix_rows(rows, lane, 4, False, read) == words[lane]).all()


def _emulate(dtype: str, m: int, n: int, k: int, block, warps: int, wgmma: bool = True) -> float:
    a = RNG.standard_normal((m, k)).astype(NP[dtype])
    b = RNG.standard_normal((k, n)).astype(NP[dtype])
    c = np.full((m, n), np.nan, dtype=NP[dtype])
    bm, bn, bk = block
    emulator = Emulator(MATMUL, _signature(dtype, m, n, k),
                        {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8}, num_warps=warps,
                        num_stages=2, wgmma=wgmma)
    assert emulator.text.count("@\"emu_stmatrix_x4\"(") >= 1  # the epilogue ran on the stand-in
    grid = (-(-m // bm) * -(-n // bn),)
    emulator.launch(grid, a, b, c, m, n, k, k, 1, n, 1, n, 1)
    want = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.abs(c.astype(np.float64) - want).max() / np.abs(want).max())


@pytest.mark.parametrize("dtype,m,n,block,warps", [("fp16", 96, 80, (64, 64, 32), 4),
                                                   ("bf16", 64, 128, (64, 128, 32), 8),
                                                   ("fp16", 64, 64, (64, 64, 32), 2)])
def test_emulated_epilogue_matches_float64(dtype, m, n, block, warps):
    """Masked tails (96 x 80 over 64 x 64 tiles), two warp groups on N, and 2 warps (mma.sync's
    version-2 fragments on sm_90); the error is the output's rounding (fp16 2^-11, bf16 2^-8 of the
    largest value)."""
    err = _emulate(dtype, m, n, 64, block, warps)
    assert err <= {"fp16": 2e-3, "bf16": 1e-2}[dtype]


def test_emulated_epilogue_catches_a_wrong_matrix_order(monkeypatch):
    """The check can fail: with lanes 8-15 and 16-23 giving each other's row addresses (matrices 1
    and 2 swapped), the stored tile is wrong."""
    from tileworkbench.backends.llvm.lowering import stmatrix

    linear = stmatrix._linear
    monkeypatch.setattr(stmatrix, "_linear",
                        lambda lw, bit0, bit1, values: linear(lw, bit1, bit0, values))
    assert _emulate("fp16", 64, 64, 64, (64, 64, 32), 4) > 0.1
