"""Causes of test_core.py cases that failed compiled on the GPU and pass in Triton's interpreter, one
test per cause, without a GPU: the PTX text those cases read (vector widths, cp.async group counts),
and the kernels run on the CPU emulator against NumPy where the fix changed generated code."""

from __future__ import annotations

import re

import numpy as np
import pytest
from cpu_emulator import Emulator
from nvptx_support import needs_ptxas, run_ptxas

import tileworkbench as tw
import tileworkbench.language as tl

RNG = np.random.default_rng(1407)


@tw.jit
def permute_kernel(X, stride_xm, stride_xn, Z, stride_zm, stride_zn, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr):
    off_m = tl.arange(0, BLOCK_M)
    off_n = tl.arange(0, BLOCK_N)
    Xs = X + off_m[:, None] * stride_xm + off_n[None, :] * stride_xn
    Zs = Z + off_m[:, None] * stride_zm + off_n[None, :] * stride_zn
    tl.store(Zs, tl.load(Xs))


# the load runs along rows, the store along columns (strides of 1 are specialized, as at launch)
PERMUTE_SIGNATURE = {"X": "*fp32:16", "stride_xm": "i32:16", "stride_xn": "i32:1", "Z": "*fp32:16",
                     "stride_zm": "i32:1", "stride_zn": "i32:16"}


def test_transposing_copy_keeps_both_sides_vectorized():
    """test_permute: a store whose addresses run along the other dimension than the loaded value's
    threads keeps its own coalesced layout (a conversion through shared memory between them), so both
    the loads and the stores move 16 bytes per thread; the store used to take the load's layout and
    write one element per instruction."""
    compiled = tw.compile(permute_kernel, signature=PERMUTE_SIGNATURE,
                          constexprs={"BLOCK_M": 64, "BLOCK_N": 64}, target="sm_90a", use_cache=False)
    ptx = compiled.asm["ptx"]
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx
    assert not re.search(r"st\.global\.b32", ptx)
    assert "ttg.convert_layout" in compiled.asm["tile-gpu"]


def test_transposing_copy_emulated():
    emu = Emulator(permute_kernel, PERMUTE_SIGNATURE, {"BLOCK_M": 32, "BLOCK_N": 32}, num_warps=4)
    x = RNG.standard_normal((32, 32)).astype(np.float32)
    z = np.full((32, 32), np.nan, np.float32)
    emu.launch((1,), x, 32, 1, z, 1, 32)  # z[n, m] = x[m, n]
    assert np.array_equal(z, x.T)


@tw.jit
def hinted_copy_kernel(dst, src, off, N, BLOCK_SIZE: tl.constexpr, HINT: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    offsets = offsets + tl.load(off)
    if HINT:
        tl.max_contiguous(tl.multiple_of(offsets, 1024), 1024)  # a statement: its value unused
    x = tl.load(src + offsets, mask=offsets < N)
    tl.store(dst + offsets, x, mask=offsets < N)


HINTED_SIGNATURE = {"dst": "*fp32:16", "src": "*fp32:16", "off": "*i32:16", "N": "i32:16"}


@pytest.mark.parametrize("hint", [False, True])
def test_hint_as_a_statement_marks_the_value(hint):
    """test_vectorization_hints: as in Triton, `tl.multiple_of(x, ...)` marks x itself, so the hint
    reaches the later loads and stores of x although the call's value is thrown away."""
    compiled = tw.compile(hinted_copy_kernel, signature=HINTED_SIGNATURE,
                          constexprs={"BLOCK_SIZE": 1024, "HINT": hint}, target="sm_90a",
                          use_cache=False)
    assert ("ld.global.v4.b32" in compiled.asm["ptx"]) == hint


@tw.jit
def hint_in_branch_kernel(x_ptr, out_ptr, flag, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    if flag > 0:
        tl.multiple_of(offsets, 16)  # x defined outside the branch: the hint stays in the branch
        y = tl.load(x_ptr + offsets) * 2.0
    else:
        y = tl.load(x_ptr + offsets) + 1.0
    tl.store(out_ptr + offsets, y)


@pytest.mark.parametrize("flag", [1, 0])
def test_hint_inside_a_branch_on_an_outer_value(target, flag):
    """A hint in one branch of a runtime `if` on a value from before the `if` must not leak the
    branch's value into the other branch or after the `if` (the IR verifies, the results are right)."""
    x = RNG.standard_normal(64).astype(np.float32)
    out = target.put(np.full(64, np.nan, np.float32))
    hint_in_branch_kernel[(1,)](target.put(x), out, flag, BLOCK=64)
    out = target.get(out)
    want = x.astype(np.float64) * 2.0 if flag else x.astype(np.float64) + 1.0
    assert np.allclose(out, want, rtol=1e-6)
    tw.compile(hint_in_branch_kernel, signature={"x_ptr": "*fp32:16", "out_ptr": "*fp32:16",
                                                 "flag": "i32"},
               constexprs={"BLOCK": 64}, target="sm_90a", use_cache=False)


@tw.jit
def hinted_carried_pointers_kernel(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr,
                                   BLOCK_K: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * BLOCK + offs[None, :]
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        tl.multiple_of(a_ptrs, [16, 16])  # tutorial 08: hints on the loop's carried pointers
        tl.multiple_of(b_ptrs, [16, 16])
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * BLOCK
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)


def test_hint_statement_on_loop_carried_pointers(target):
    """Tutorial 08 hints its loop-carried pointers with statements: the kernel compiles for sm_90a
    (re-pointing the carried value put the loop's `tt.addptr` operands in two layouts) and is right."""
    block, bk, k = 32, 16, 64
    a = RNG.standard_normal((block, k)).astype(np.float16)
    b = RNG.standard_normal((k, block)).astype(np.float16)
    c = target.put(np.full((block, block), np.nan, np.float32))
    hinted_carried_pointers_kernel[(1,)](target.put(a), target.put(b), c, k, BLOCK=block,
                                         BLOCK_K=bk)
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = target.get(c)
    assert np.max(np.abs(got - want)) / np.max(np.abs(want)) < 1e-2
    tw.compile(hinted_carried_pointers_kernel,
               signature={"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp32:16", "K": "i32"},
               constexprs={"BLOCK": 128, "BLOCK_K": 32}, target="sm_90a", use_cache=False)


@tw.jit
def pipelined_matmul_kernel(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr,
                            STAGES: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * BLOCK + offs[None, :]
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for _ in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=STAGES):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * BLOCK
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)


@pytest.mark.parametrize("stages, wait", [(5, 6), (3, 2)])
def test_each_pipelined_load_is_its_own_cp_async_group(stages, wait):
    """test_tl_range_num_stages: as Triton, each pipelined load commits its own cp.async group, so
    iteration i waits for all but (stages - 2) * loads groups (5 stages, 2 loads: wait_group 6)."""
    compiled = tw.compile(pipelined_matmul_kernel,
                          signature={"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp32:16",
                                     "K": "i32:16"},
                          constexprs={"BLOCK": 64, "BLOCK_K": 64, "STAGES": stages},
                          num_stages=stages, target="sm_90a", use_cache=False)
    ptx = compiled.asm["ptx"]
    assert f"cp.async.wait_group \t{wait};" in ptx
    per_iteration = ptx.count("cp.async.commit_group")
    assert per_iteration >= 2 * stages  # one per load in the prologue's S-1 and the loop's issue


@tw.jit
def loop_reduce_kernel(X, Y, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, OP: tl.constexpr):
    start_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    num_pid_n = tl.num_programs(1)
    if OP == "sum":
        local = tl.zeros([BLOCK_M], dtype=tl.float32)
    elif OP == "max":
        local = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    else:
        local = tl.full([BLOCK_M], float("inf"), dtype=tl.float32)
    off_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    for start_n in range(pid_n, tl.cdiv(N, BLOCK_N), num_pid_n):
        off_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
        x = tl.load(X + off_m[:, None] * N + off_n[None, :])
        if OP == "sum":
            local = local + tl.sum(x, axis=1)
        elif OP == "max":
            local = tl.maximum(local, tl.max(x, axis=1))
        else:
            local = tl.minimum(local, tl.min(x, axis=1))
    tl.store(Y + off_m * num_pid_n + pid_n, local)


LOOP_REDUCE_SIGNATURE = {"X": "*fp32:16", "Y": "*fp32:16", "N": "i32:16"}
NUMPY_REDUCE = {"sum": np.sum, "max": np.max, "min": np.min}


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_loop_accumulated_reduction_combines_threads_after_the_loop(op):
    """test_optimize_thread_locality: a reduction accumulated over the loop reduces only each thread's
    own elements inside the loop and across threads once after it, so TTGIR has two "tt.reduce" (in
    MLIR's generic form, as Triton prints it); the emulated kernel matches NumPy."""
    constexprs = {"BLOCK_M": 32, "BLOCK_N": 64, "OP": op}
    compiled = tw.compile(loop_reduce_kernel, signature=LOOP_REDUCE_SIGNATURE, constexprs=constexprs,
                          target="sm_90a", use_cache=False)
    ttgir = compiled.asm["ttgir"]
    assert ttgir.count('"tt.reduce"') == 2
    loop_body = ttgir[ttgir.index("scf.for"):ttgir.index("scf.yield")]
    assert "tt.reshape" in loop_body and "axis = 2 : i32" in loop_body
    emu = Emulator(loop_reduce_kernel, LOOP_REDUCE_SIGNATURE, constexprs)
    n, programs = 448, 2  # 7 column blocks: the two programs take 4 and 3
    x = RNG.standard_normal((32, n)).astype(np.float32)
    y = np.full((32, programs), np.nan, np.float32)
    emu.launch((1, programs), x, y, n)
    blocks = x.astype(np.float64).reshape(32, n // 64, 64)
    for pid in range(programs):
        want = NUMPY_REDUCE[op](blocks[:, pid::programs].reshape(32, -1), axis=1)
        assert np.allclose(y[:, pid], want, rtol=1e-5, atol=1e-5)


@tw.jit
def reduce_used_in_loop_kernel(X, sums, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    offs = tl.arange(0, BLOCK)
    for i in range(4):
        row_sum = tl.sum(tl.load(X + i * BLOCK * BLOCK + offs[:, None] * BLOCK + offs[None, :]), axis=1)
        tl.store(sums + i * BLOCK + offs, row_sum)  # the per-iteration value is used: no rewrite
        acc = acc + row_sum
    tl.store(sums + 4 * BLOCK + offs, acc)


def test_reduction_used_in_the_loop_is_left_alone():
    """test_no_rematerialization_op: one "tt.reduce" where the loop also uses each iteration's sum."""
    compiled = tw.compile(reduce_used_in_loop_kernel, signature={"X": "*fp32:16", "sums": "*fp32:16"},
                          constexprs={"BLOCK": 32}, target="sm_90a", use_cache=False)
    assert compiled.asm["ttgir"].count('"tt.reduce"') == 1


def test_triton_stage_names_print_reduce_and_scan_as_triton_does():
    """`asm["ttgir"]` / `asm["ttir"]` write the ops MLIR prints generically as Triton's text has them
    (test_core counts '"tt.reduce"'); the tile-* stages keep their own form."""
    from tileworkbench.runtime.stage_texts import triton_text

    ours = ("    %m, %i = tt.reduce %x, %idx {axis = 1} : tensor<8xf32, #slice>, tensor<8xi32, #slice> ({"
            "  loc(\"k.py\":3)\n    })\n  %s = tt.scan %v {axis = 0, reverse = true} : tensor<64xf32> ({\n")
    assert triton_text(ours) == (
        '    %m, %i = "tt.reduce"(%x, %idx) <{axis = 1 : i32}> ({  loc("k.py":3)\n    })\n'
        '  %s = "tt.scan"(%v) <{axis = 0 : i32, reverse = true}> ({\n')
    compiled = tw.compile(reduce_used_in_loop_kernel, signature={"X": "*fp32:16", "sums": "*fp32:16"},
                          constexprs={"BLOCK": 32}, target="sm_90a", use_cache=False)
    assert "tt.reduce %" in compiled.asm["tile-gpu"] and '"tt.reduce"(' in compiled.asm["ttgir"]
    assert '"tt.reduce"(' in compiled.asm["ttir"]


@tw.jit
def dot_scaled_kernel(a_base, a_scale, b_base, out, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, TYPE_B: tl.constexpr):
    # a: e2m1, two values per byte along K, column-major; b: TYPE_B, column-major
    a = tl.load(a_base + tl.arange(0, BLOCK_M)[:, None] + tl.arange(0, BLOCK_K // 2)[None, :] * BLOCK_M)
    b = tl.load(b_base + tl.arange(0, BLOCK_K)[:, None] + tl.arange(0, BLOCK_N)[None, :] * BLOCK_K)
    scale = tl.load(a_scale + tl.arange(0, BLOCK_M)[:, None] * (BLOCK_K // 32)
                    + tl.arange(0, BLOCK_K // 32)[None, :])
    c = tl.dot_scaled(a, scale, "e2m1", b, None, TYPE_B)
    tl.store(out + tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :],
             c.to(tl.bfloat16))


@pytest.mark.parametrize("type_b, operand", [("bf16", "bf16"), ("fp16", "f16"), ("e4m3", "bf16")])
def test_dot_scaled_runs_on_16_bit_tensor_cores(type_b, operand):
    """test_scaled_dot: as Triton on GPUs without MX tensor cores, the operands are upcast to fp16
    (with an fp16 operand) or bf16 and multiplied on f16/bf16 tensor cores, and the 32x32 result is
    stored 16 bytes per thread (the fp32 FMA dot it replaced did neither)."""
    b_kind = {"bf16": "*bf16", "fp16": "*fp16", "e4m3": "*u8"}[type_b]
    compiled = tw.compile(dot_scaled_kernel,
                          signature={"a_base": "*u8:16", "a_scale": "*u8:16", "b_base": b_kind + ":16",
                                     "out": "*bf16:16"},
                          constexprs={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 64, "TYPE_B": type_b},
                          target="sm_90a", use_cache=False)
    ptx = compiled.asm["ptx"]
    assert re.search(rf"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.{operand}\.{operand}", ptx)
    assert "st.global.v4" in ptx and "ld.global.v4" in ptx


@tw.jit
def while_licm_kernel(out_ptr, n, DISABLE: tl.constexpr):
    i = 0
    while tl.condition(i < n, disable_licm=DISABLE):
        tl.store(out_ptr + i, i)  # a body LLVM cannot fold away
        i = i + 1


@tw.jit
def for_licm_kernel(out_ptr, n, DISABLE: tl.constexpr):
    for i in tl.range(0, n, disable_licm=DISABLE):
        tl.store(out_ptr + i, i)


@pytest.mark.parametrize("kernel", [while_licm_kernel, for_licm_kernel])
@pytest.mark.parametrize("disable", [True, False])
def test_disable_licm_reaches_the_llvm_loop(kernel, disable):
    """test_disable_licm: `tl.range(..., disable_licm=True)` and `tl.condition(c, disable_licm=True)`
    put `llvm.licm.disable` in the loop's metadata; without it the loop has none."""
    compiled = tw.compile(kernel, signature={"out_ptr": "*i32", "n": "i32"},
                          constexprs={"DISABLE": disable}, target="sm_90a", use_cache=False)
    assert ("llvm.licm.disable" in compiled.asm["llir"]) == disable


@tw.jit
def packed_asm_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; shl.b32 $0, $0, 3;", "=r,r", [x],
                                  dtype=tl.int8, is_pure=True, pack=4)
    tl.store(Y + tl.arange(0, BLOCK), y)


@tw.jit
def packed_two_outputs_kernel(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    c, d = tl.inline_asm_elementwise(
        "{ .reg .b8 t<2>; mov.b16 {t0, t1}, $4; cvt.u32.u8 $0, t0; cvt.u32.u8 $1, t1; }"
        " cvt.rn.f32.s32 $2, $0; cvt.rn.f32.s32 $3, $1; max.f32 $2, $2, $5; max.f32 $3, $3, $6;",
        "=r,=r,=r,=r,h,r,r", [a, b], dtype=(tl.int32, tl.float32), is_pure=True, pack=2)
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@needs_ptxas
def test_packed_inline_asm_takes_narrow_operands_in_one_register(tmp_path):
    """test_inline_asm_packed (_multiple_outputs): with `pack=k` the asm runs once per k elements of
    a thread; four int8 travel in one 32-bit register (two in a 16-bit one), wider operands and
    results as k registers. The PTX assembles and has one asm copy per group."""
    compiled = tw.compile(packed_asm_kernel, signature={"X": "*u8:16", "Y": "*u8:16"},
                          constexprs={"BLOCK": 2048}, target="sm_90a", use_cache=False)
    ptx = compiled.asm["ptx"]
    assert ptx.count("shl.b32") == 2048 // 128 // 4  # 16 int8 per thread, 4 per asm
    assert run_ptxas(ptx, "sm_90a", tmp_path).returncode == 0
    two = tw.compile(packed_two_outputs_kernel, signature={"A": "*u8:16", "B": "*fp32:16", "C": "*i32:16",
                                                           "D": "*fp32:16"},
                     constexprs={"BLOCK": 1024}, target="sm_90a", use_cache=False)
    assert two.asm["ptx"].count("max.f32") == 2 * (1024 // 128 // 2)
    result = run_ptxas(two.asm["ptx"], "sm_90a", tmp_path)
    assert result.returncode == 0, result.stderr


@tw.jit
def too_packed_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True,
                                  pack=4)
    tl.store(Y + tl.arange(0, BLOCK), y)


def test_a_pack_larger_than_a_threads_elements_names_the_line():
    from tileworkbench.errors import CompilationError

    with pytest.raises(CompilationError, match=r"pack=4 does not divide the 1 elements"):
        tw.compile(too_packed_kernel, signature={"X": "*i32:16", "Y": "*i32:16"},
                   constexprs={"BLOCK": 128}, target="sm_90a", use_cache=False)


@tw.jit
def mul_broadcast_kernel(Z, X, Y, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                         BK: tl.constexpr):
    pidn = tl.program_id(1)
    pidm = tl.program_id(0)
    offm = tl.arange(0, BM)[:, None]
    offn = tl.arange(0, BN)[None, :]
    acc = tl.full((BM, BN), 0.0, tl.float32)
    for k in range(0, K // BK):
        x = tl.load(X + pidm * K * BM + offm * K + k * BK + tl.arange(0, BK)[None, :])
        y = tl.load(Y + pidn * BN + tl.arange(0, BK)[:, None] * N + k * N * BK + offn)
        acc = tl.sum(tl.expand_dims(x, axis=2) * tl.expand_dims(y, axis=0), axis=1) + acc
    tl.store(Z + pidm * BM * N + pidn * BN + offm * N + offn, acc)


MUL_BROADCAST_SIGNATURE = {"Z": "*fp32:16", "X": "*fp32:16", "Y": "*fp32:16"}


def test_broadcast_multiply_sum_is_a_dot():
    """test_dot_mulbroadcasted: sum(x[:, :, None] * y[None], axis=1) becomes a tt.dot on the GPU (as
    Triton's combine), so the 128 x 32 x 32 fp32 product (512 KB) is never materialized; it ran out of
    shared memory before. The emulated kernel matches NumPy."""
    compiled = tw.compile(mul_broadcast_kernel, signature=MUL_BROADCAST_SIGNATURE,
                          constexprs={"N": 192, "K": 160, "BM": 128, "BN": 32, "BK": 32},
                          target="sm_90a", use_cache=False)
    assert "tt.dot" in compiled.asm["tile-gpu"] and "tt.reduce" not in compiled.asm["tile-gpu"]
    assert "tt.reduce" in compiled.asm["tile-opt"]  # the interpreter keeps the sum as written
    emu = Emulator(mul_broadcast_kernel, MUL_BROADCAST_SIGNATURE,
                   {"N": 32, "K": 48, "BM": 32, "BN": 16, "BK": 16})
    x = RNG.standard_normal((64, 48)).astype(np.float32)
    y = RNG.standard_normal((48, 32)).astype(np.float32)
    z = np.full((64, 32), np.nan, np.float32)
    emu.launch((2, 2), z, x, y)
    assert np.allclose(z, x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)


@tw.jit
def split_dot_kernel(a_ptr, b_ptr, c_ptr, PRECISION: tl.constexpr, M: tl.constexpr):
    r = tl.arange(0, M)
    a = tl.load(a_ptr + r[:, None] * M + r[None, :])
    b = tl.load(b_ptr + r[:, None] * M + r[None, :])
    tl.store(c_ptr + r[:, None] * M + r[None, :], tl.dot(a, b, input_precision=PRECISION))


# not on cpu: there its 3 (6) bf16 dots of 64 x 64 x 64 ran for minutes (compile or run, not found yet)
@pytest.mark.only_on("interpreter", "cuda")
@pytest.mark.parametrize("precision, bound", [("bf16x3", 2e-5), ("bf16x6", 1e-6)])
def test_bf16_split_precisions_run_on_bf16_tensor_cores(target, precision, bound):
    """test_dot[...bf16x3...]: an fp32 dot with input_precision bf16x3 (bf16x6) is Triton's sum of 3 (6)
    products of bf16 parts, on bf16 tensor cores (it was a full fp32 FMA dot); as exact as that."""
    signature = {"a_ptr": "*fp32:16", "b_ptr": "*fp32:16", "c_ptr": "*fp32:16"}
    compiled = tw.compile(split_dot_kernel, signature=signature,
                          constexprs={"PRECISION": precision, "M": 64}, target="sm_90a",
                          use_cache=False)
    assert re.search(r"mma_async\.sync\.aligned\.m64n64k16\.f32\.bf16\.bf16", compiled.asm["ptx"])
    a = RNG.standard_normal((64, 64)).astype(np.float32)
    b = RNG.standard_normal((64, 64)).astype(np.float32)
    out = target.put(np.full((64, 64), np.nan, np.float32))
    split_dot_kernel[(1,)](target.put(a), target.put(b), out, PRECISION=precision, M=64)
    want = a.astype(np.float64) @ b
    assert np.abs(target.get(out) - want).max() <= bound * np.abs(want).max()
