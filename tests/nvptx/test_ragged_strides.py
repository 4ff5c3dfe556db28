"""Row strides that are whole 16-byte chunks but no multiple of 16 elements (issue 21): an integer
launched as a multiple of 8 or 4 specializes `:8` / `:4`, the IR's `tt.divisibility` says so, and
axis_info scales it by the element size, so the tutorial-03 matmul at N = 4104 fp16 (rows of 8208
bytes) keeps B on 16-byte cp.async copies instead of register loads. Checked in the signature
parser, in the Tile IR and PTX of that matmul, by an emulated run against float64 with a ragged N,
and in the interpreter (which ignores specializations)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from cpu_emulator import Emulator
from tensor_core_kernels import TOLERANCE, matmul_kernel, matmul_signature, random_operands

import tileworkbench as tw
from tileworkbench.errors import CompilationError
from tileworkbench.frontend.specialize import parse_arg

RNG = np.random.default_rng()
B_TILE = "tensor<{bk}x{bn}x!tt.ptr<f16>"  # B's async copies: a BK x BN tile of fp16 pointers
CP_ASYNC_16 = re.compile(r"cp\.async\.cg\.shared\.global(?:\.L2::\w+)? \[[^\]]+\], \[[^\]]+\], 16")


@pytest.mark.parametrize("text,by", [("i32:8", 8), ("i64:4", 4), (" i32 : 8 ", 8), ("u32:4", 4)])
def test_the_parser_takes_multiples_of_8_and_4_for_integers(text, by):
    arg = parse_arg("n", text)
    assert (arg.divisible_16, arg.equal_1, arg.divisible_by) == (False, False, by)
    assert arg.key == arg.type + f":{by}"


@pytest.mark.parametrize("text,says", [
    ("*fp16:8", "needs an integer parameter"), ("fp32:4", "needs an integer parameter"),
    ("i32:8:16", "goes with none of"), ("i32:4:1", "goes with none of"),
    ("i32:8:4", "goes with none of"), ("i32:2", "unknown specialization '2'"),
])
def test_the_parser_refuses_what_no_launch_makes(text, says):
    with pytest.raises(CompilationError, match=says):
        parse_arg("n", text)


def _ragged_signature(m, n, k, flag=":8"):
    """tutorial 03's signature with `flag` on N and the row strides of B and C (both N)."""
    sig = matmul_signature("fp16", sizes=(m, n, k))
    for name in ("N", "stride_bk", "stride_cm"):
        sig[name] = "i32" + flag
    return sig


def _compile(sig, block=(128, 128, 32), warps=8):
    bm, bn, bk = block
    return tw.compile(matmul_kernel, signature=sig, target="sm_90", num_warps=warps, num_stages=3,
                      constexprs={"BM": bm, "BN": bn, "BK": bk, "PRECISION": "tf32",
                                  "OUT_F16": False}, use_cache=False)


def _b_async_copies(compiled, bk=32, bn=128) -> int:
    tile = B_TILE.format(bk=bk, bn=bn)
    return sum("async_copy_global_to_local" in line and tile in line
               for line in compiled.asm["tile-gpu"].splitlines())


def test_n_4104_keeps_b_on_cp_async():
    """`:8` on N = 4104: B's copies are asynchronous as at N = 4096 (`:16`), with the same 16-byte
    cp.async count and no global loads into registers; unspecialized, B falls back to them."""
    ragged, aligned = _compile(_ragged_signature(4096, 4104, 4096)), _compile(
        matmul_signature("fp16", sizes=(4096,) * 3))
    plain = _compile(_ragged_signature(4096, 4104, 4096, flag=""))
    assert "%N: i32 {tt.divisibility = 8}" in ragged.asm["tile"]
    assert _b_async_copies(ragged) == _b_async_copies(aligned) >= 3  # prologue stages + loop
    assert _b_async_copies(plain) == 0
    copies = [len(CP_ASYNC_16.findall(c.asm["ptx"])) for c in (ragged, aligned, plain)]
    assert copies[0] == copies[1] > copies[2] > 0
    assert "ld.global" not in ragged.asm["ptx"] and "ld.global" in plain.asm["ptx"]
    assert ragged.metadata.n_spills in (0, None)


def test_n_4100_takes_4_and_no_16_byte_copies_of_b():
    """`:4` on fp16 rows is 8-byte alignment only: B is copied asynchronously 8 bytes at a time,
    never by a 16-byte cp.async (no false claim of alignment); A's 16-byte copies stay."""
    four = _compile(_ragged_signature(4096, 4100, 4096, flag=":4"))
    plain = _compile(_ragged_signature(4096, 4100, 4096, flag=""))
    assert _b_async_copies(four) > 0
    assert len(CP_ASYNC_16.findall(four.asm["ptx"])) == len(CP_ASYNC_16.findall(plain.asm["ptx"]))
    assert re.search(r"cp\.async\.ca\.shared\.global(?:\.L2::\w+)? \[[^\]]+\], \[[^\]]+\], 8",
                     four.asm["ptx"])


@pytest.mark.parametrize("m,n,k", [(40, 40, 64), (32, 56, 48)])
def test_emulated_ragged_n_matches_float64(m, n, k):
    """N a multiple of 8, not 16, with a masked N tail: the emulated cp.async run equals float64."""
    block = (32, 32, 16)
    sig = _ragged_signature(m, n, k)
    assert _b_async_copies(_compile(sig, block, warps=4), bk=16, bn=32) > 0
    a, b = random_operands("fp16", m, n, k, RNG)
    c = np.full((m, n), np.nan, dtype=np.float32)
    emulator = Emulator(matmul_kernel, sig, {"BM": 32, "BN": 32, "BK": 16, "PRECISION": "tf32",
                                             "OUT_F16": False},
                        num_warps=4, tensor_cores=True, num_stages=3)
    emulator.launch(((m + 31) // 32, (n + 31) // 32), a, b, c, m, n, k, k, 1, n, 1, n, 1)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert not np.isnan(c).any()
    assert np.abs(c - want).max() / np.abs(want).max() <= TOLERANCE["fp16"]


def test_interpreter_ragged_n():
    """The interpreter launch with N = 40 (now `:8`) computes the same product."""
    m, n, k = 24, 40, 48
    a, b = random_operands("fp16", m, n, k, RNG)
    c = np.full((m, n), np.nan, dtype=np.float32)
    matmul_kernel[(2, 2)](a, b, c, m, n, k, k, 1, n, 1, n, 1, BM=16, BN=32, BK=16,
                          PRECISION="tf32", OUT_F16=False)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - want).max() / np.abs(want).max() <= TOLERANCE["fp16"]
