"""The wait after a wgmma k loop (`wgmma.wait_group 0`, the drain of the group kept in flight) is
reached from the loop's exit edge only: the k loop gets a guard, and its zero-trip path carries the
accumulator's init values around the drain. Reaching the drain with the init values' mov
instructions made ptxas serialize every wgmma of the kernel (info C7515) in descriptor matmuls
whose wgmma is m64n128. Checked with ptxas, in the LLVM IR, and by emulated runs whose k loop runs
zero times, once and several times."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest
from cpu_emulator import Emulator
from device_desc_kernels import device_desc_matmul
from nvptx_support import needs_ptxas
from tensor_core_kernels import matmul_kernel, matmul_signature, persistent_matmul_kernel

import tileworkbench as tw
from tileworkbench.frontend import ArgSpec

RNG = np.random.default_rng(7515)
DESC_ARGS = [ArgSpec(n, "*fp16", True) for n in ("a_ptr", "b_ptr", "c_ptr")] + [ArgSpec("M", "i32")]
DESC_ARGS += [ArgSpec(n, "i32", True) for n in ("N", "K", "stride_am", "stride_bk", "stride_cm")]


@pytest.fixture(autouse=True)
def tma_on(monkeypatch):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)


def _descriptor_matmul(block, warps, stages):
    bm, bn, bk = block
    return tw.compile(device_desc_matmul, signature=DESC_ARGS, constexprs={"BM": bm, "BN": bn, "BK": bk},
                      target="sm_90a", num_warps=warps, num_stages=stages, use_cache=False)


@needs_ptxas
@pytest.mark.parametrize("block, warps, stages", [((128, 128, 64), 4, 3), ((128, 128, 64), 8, 3),
                                                  ((64, 128, 64), 4, 4), ((128, 256, 64), 8, 3)])
def test_ptxas_does_not_serialize_the_descriptor_matmul(tmp_path, block, warps, stages):
    ptx = _descriptor_matmul(block, warps, stages).asm["ptx"]
    (tmp_path / "k.ptx").write_text(ptx)
    report = subprocess.run(["ptxas", "-v", "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o",
                             str(tmp_path / "k.cubin")], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert not re.search(r"\(C75\d\d\)|serialized", report.stdout + report.stderr), report.stderr


def test_the_drain_is_on_the_exit_edge_and_the_zero_trip_path_skips_it():
    """In the optimized LLVM IR: the drain sits in the loop's exit block, which joins the guard's
    zero-trip edge only after it (LLVM folds the empty `for.skip` block into that edge)."""
    llvm = _descriptor_matmul((128, 128, 64), 4, 3).asm["llvm"]
    blocks = re.findall(r"^([\w.]+):\s*; preds = ([^\n]*)\n(.*?)(?=^[\w.]+:|\Z)", llvm, re.M | re.S)
    drains = [name for name, _, body in blocks if "wgmma.wait_group.sync.aligned 0" in body]
    assert drains and all(name.startswith("for.exit") for name in drains), drains
    merged = [preds.split(", ") for name, preds, _ in blocks if name.startswith("for.merged")]
    assert any(len(preds) == 2 and f"%{drains[-1]}" in preds for preds in merged), merged


def _emulated_matmul(k: int) -> tuple[np.ndarray, np.ndarray]:
    """c = a[:, :k] @ b[:k] on the wgmma stand-in; a and b are 32 wide at K = 0 (never read)."""
    m, n = 80, 96
    width = max(k, 32)
    a = RNG.standard_normal((m, width)).astype(np.float16)
    b = RNG.standard_normal((width, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    emulator = Emulator(matmul_kernel, matmul_signature("fp16", sizes=(m, n, 64)),
                        {"BM": 64, "BN": 64, "BK": 32, "PRECISION": "tf32", "OUT_F16": False},
                        num_warps=4, num_stages=3, wgmma=True)
    assert "@emu_wgmma_wait(i32 0" in emulator.text  # the drain is there to skip
    emulator.launch((2, 2), a, b, c, m, n, k, width, 1, n, 1, n, 1)
    return c, a[:, :k].astype(np.float64) @ b[:k].astype(np.float64)


@pytest.mark.parametrize("k", [0, 32, 96])
def test_emulated_k_loop_of_zero_one_and_three_trips(k):
    """K = 0: the loop never runs and c is the zero init, written through the skip path."""
    c, want = _emulated_matmul(k)
    if k == 0:
        assert (c == 0).all()
    else:
        assert np.abs(c - want).max() / np.abs(want).max() <= 1e-5


def test_emulated_persistent_matmul_whose_k_loops_run_zero_times():
    """The drain of a k loop inside the tile loop: with K = 0 every tile takes the skip path."""
    m, n = 96, 128
    c = np.full((m, n), np.nan, np.float16)
    emulator = Emulator(persistent_matmul_kernel, matmul_signature("fp16", "*fp16", sizes=(m, n, 64)),
                        {"BM": 64, "BN": 64, "BK": 32, "PROGRAMS": 2}, num_warps=4, num_stages=3,
                        wgmma=True)
    a = RNG.standard_normal((m, 32)).astype(np.float16)  # never read at K = 0
    b = RNG.standard_normal((32, n)).astype(np.float16)
    emulator.launch((2,), a, b, c, m, n, 0, 32, 1, n, 1, n, 1)
    assert (c == 0).all()
