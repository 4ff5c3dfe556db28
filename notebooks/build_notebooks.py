"""Builds the teaching notebooks (without outputs) from the cells below: `python notebooks/build_notebooks.py`.

Every notebook runs top to bottom without a GPU (kernels run in the interpreter, compile-only cells still
show PTX); GPU-only cells are guarded by `GPU`, and recorded H200 results from notebooks/data/ are shown
in their place (or "no recorded data yet").
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

SETUP = """%load_ext tileworkbench
import numpy as np
import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.runtime.device import gpu_available
from tileworkbench.workbench.recorded import show_recorded

GPU = gpu_available()
if GPU:
    import cupy as xp          # kernels run on the GPU, arrays live there
else:
    xp = np                    # kernels run in the interpreter, on NumPy arrays
print("GPU:", GPU, "- kernels run", "on the GPU" if GPU else "in the interpreter (NumPy)")"""


def md(text: str):
    return new_markdown_cell(text.strip("\n"))


def code(text: str):
    return new_code_cell(text.strip("\n"))


def claim_check(text: str):
    """A collapsed cell that asserts what the text around it claims (what the PTX holds, which layouts
    appear), so a notebook that stops telling the truth fails when it runs (tests/workbench runs them
    all with nbclient)."""
    cell = new_code_cell(text.strip("\n"))
    cell.metadata["tags"] = ["claim-check"]
    cell.metadata["jupyter"] = {"source_hidden": True}
    return cell


ADD_KERNEL = """@tw.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)                      # which block of the vector am I?
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements                      # the last block may run past the end
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)"""


def start_here():
    return [
        md("""
# 00 · Start here: the workbench in five minutes

`tileworkbench` compiles kernels written in **Triton's language** (`tl.load`, `tl.arange`, `tl.sum`, `tl.dot`, ...)
and shows you what they become at every stage: Tile IR, optimized IR, GPU IR with layouts, LLVM IR, PTX and SASS.

Everything here runs **without a GPU**: kernels then run in the *interpreter* (NumPy), and the GPU stages are
still compiled (PTX needs no GPU). On a GPU machine the same cells run on the device.
"""),
        code(SETUP),
        md("""
## A first kernel

A kernel works on *tiles*: each **program** (a GPU thread block) handles `BLOCK_SIZE` elements.
`%%tilekernel` runs the cell, records every kernel launched in it and shows a report after the cell.
`--ref` gives the expected result (an expression evaluated after the cell), `--bench` times it.
"""),
        code(f"""%%tilekernel --ref "x.astype(np.float64) + y" --bench 20
{ADD_KERNEL}

n = 10_000
rng = np.random.default_rng(0)
x = xp.asarray(rng.standard_normal(n, dtype=np.float32))
y = xp.asarray(rng.standard_normal(n, dtype=np.float32))
out = xp.full(n, np.nan, dtype=np.float32)   # poisoned: an element the kernel misses stays NaN
grid = (tw.cdiv(n, 1024),)
add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024);   # `;` hides the returned CompiledKernel"""),
        md("""
## Reading the report

* **overview**: resources (registers, shared memory, occupancy), the work (FLOPs counted from the IR, bytes from
  the arrays), the time, the **check** against `--ref`, and the kernel on the **roofline**.
* **source / tile / tile-opt / tile-gpu / llvm / ptx / sass**: one tab per compiler stage. Without a GPU the
  kernel ran in the interpreter, and the report also compiled the same launch (its argument types, which
  arguments are multiples of 16, `BLOCK_SIZE`) for sm_90, so **tile-gpu**, **llvm** and **ptx** are there on
  any machine. **sass** needs NVIDIA's `ptxas` and `nvdisasm` (`pip install "tileworkbench[sass]"`, no GPU
  needed); where they are missing, the report's notes name the missing tool.
* **passes**: choose a pass and see the IR after it, with a diff against the pass before.
* **source line**: choose a line of your kernel and the lines it became are highlighted in every stage.
  (In the static HTML view, click a line in the *source* tab.)

A cell whose kernel does not compile, or reads or writes out of bounds, shows its report and the error, and
then fails: "Run All" stops there instead of carrying on with stale arrays.
"""),
        claim_check("""# claim check: the report above has every stage the list names (sass where the tools are)
from tileworkbench.backends.nvptx.tools import missing_for
_r = _tilekernel_reports[0]
assert all(s in _r.asm for s in ("source", "tile", "tile-opt", "tile-gpu", "llvm", "ptx")), list(_r.asm)
assert ("sass" in _r.asm) == (missing_for("sass") is None)
assert "sass" in _r.asm or any("no sass" in note and "tileworkbench[sass]" in note for note in _r.notes)
assert GPU or any("compiled for sm_90" in note for note in _r.notes)
print("checked: every stage tab is there", "" if "sass" in _r.asm else "(sass: see the note on tools)")"""),
        md("""
## Compile only: look at PTX without a GPU

With `--signature` the magic compiles the kernel defined in the cell and does not launch it.
`*fp32` is a pointer to float32; `:16` would promise 16-byte alignment.
"""),
        code(f"""%%tilekernel --signature "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n_elements=i32" --constexprs BLOCK_SIZE=1024 --target sm_90 --stages source,tile-opt,ptx
{ADD_KERNEL}"""),
        md("""
## The same thing from Python

`tw.inspect` returns the report object; `report.asm[stage]` is the raw text of a stage.
"""),
        code("""report = tw.inspect(add_kernel, signature="x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n_elements=i32",
                    constexprs={"BLOCK_SIZE": 256}, target="interpreter")
print(report)
print(report.asm["tile-opt"][:600])"""),
        md("""
## Exercises

1. Change `BLOCK_SIZE` to 256 in the launch. How does the grid change? Does the check still pass?
2. Remove `mask=mask` from the store and run again with `n = 10_000`. What does the interpreter tell you?
   (The cell fails on purpose: put the mask back to go on.)
3. In the compile-only cell, choose the line `mask = offsets < n_elements` in the source-line picker.
   Which PTX instruction does it become?
"""),
    ]


def vector_add():
    return [
        md("""
# 01 · Vector add: programs, blocks and masks

The simplest kernel shows the programming model: a **grid** of programs, each handling one **block** of
`BLOCK_SIZE` elements; `tl.arange` builds the block's offsets, a **mask** guards the ragged end.
It does one addition per 12 bytes moved, so its speed is set by memory bandwidth alone: it is
**memory-bound**, and the roofline shows how close it gets to the DRAM ceiling.
"""),
        code(SETUP),
        code(ADD_KERNEL),
        md(
            "## Run and check it\n`--out out` names the array the kernel writes (by default: the last pointer it stores to)."
        ),
        code("""%%tilekernel --ref "x.astype(np.float64) + y" --out out --bench 20
n = 98_432
rng = np.random.default_rng(1)
x = xp.asarray(rng.standard_normal(n, dtype=np.float32))
y = xp.asarray(rng.standard_normal(n, dtype=np.float32))
out = xp.full(n, np.nan, dtype=np.float32)
add_kernel[(tw.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024);"""),
        claim_check("""# claim check: one addition per 12 bytes; the launch (n = 98,432, a multiple of 16) specialized
# on :16, so its PTX loads four floats at a time
_r = _tilekernel_reports[0]
# (FLOPs are counted per program: the last, partly masked block adds 1% here)
assert abs(_r.counts.flops * 12 / _r.counts.bytes - 1) < 0.02, (_r.counts.flops, _r.counts.bytes)
assert "ld.global.v4" in _r.asm["ptx"] and "n_elements=i32:16" in " ".join(_r.notes + [""]) or GPU
assert "ld.global.v4" in _r.asm["ptx"]
print("checked: 1 FLOP per 12 bytes; the launch's PTX has ld.global.v4")"""),
        md("""
## The grid can be a function of the meta-parameters

As in Triton, `grid` may be a callable taking the launch's meta-parameters, so the block size is chosen in one place.
"""),
        code("""out2 = xp.full(n, np.nan, dtype=np.float32)
grid = lambda meta: (tw.cdiv(n, meta["BLOCK_SIZE"]),)
add_kernel[grid](x, y, out2, n, BLOCK_SIZE=512)
print("max error:", float(abs(out2 - (x + y)).max()))"""),
        md("""
## What a masked load becomes

In the compile-only view, pick `x = tl.load(...)` in the source-line picker: in **tile-opt** it is one `tt.load`
on a tensor of pointers; in **ptx** it becomes predicated (`@%p1`) `ld.global` instructions. They load four
floats at once (`ld.global.v4.b32`) when the compiler can prove two things: the pointers are 16-byte aligned
(`:16` on `x_ptr`, `y_ptr`, `out_ptr`) and `n_elements` is a multiple of 16 (`:16` on `n_elements`), so that the
mask is the same for each group of four elements. A launch checks both and specializes on them by itself:
the run above (n = 98,432) got the same vector loads.
"""),
        code("""%%tilekernel --signature "x_ptr=*fp32:16,y_ptr=*fp32:16,out_ptr=*fp32:16,n_elements=i32:16" --constexprs BLOCK_SIZE=1024 --kernel add_kernel --target sm_90 --stages source,tile-opt,ptx
pass"""),
        claim_check("""# claim check: predicated vector loads with every :16; without the :16 on n_elements, scalar loads
_ptx = _tilekernel_reports[0].asm["ptx"]
_loads = [line.strip() for line in _ptx.splitlines() if "ld.global" in line]
assert _loads and all(line.startswith("@%p") and "ld.global.v4.b32" in line for line in _loads), _loads
_scalar = tw.compile(add_kernel, signature="x_ptr=*fp32:16,y_ptr=*fp32:16,out_ptr=*fp32:16,n_elements=i32",
                     constexprs={"BLOCK_SIZE": 1024}, target="sm_90").asm["ptx"]
assert "ld.global.v4" not in _scalar and "ld.global.b32" in _scalar
print("checked: ld.global.v4.b32 with :16 everywhere, ld.global.b32 without it on n_elements")"""),
        md(
            "## Recorded on an H200\nBandwidth of our kernel and Triton's for 2^24 and 2^28 elements, measured with `do_bench`."
        ),
        code('show_recorded("01_vector_add")'),
        md("""
## Exercises

1. Drop the `:16` from `n_elements` only. Does the PTX still use `ld.global.v4`? Why not?
2. Write `scale_add(x, y, a)` computing `a * x + y` (SAXPY). How many FLOPs per byte is that?
3. Using the roofline: at 4.8 TB/s, what is the best time for 2^28 fp32 elements (3 arrays)?
"""),
    ]


SOFTMAX_KERNEL = """@tw.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)                               # one program per row
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)                            # subtract the max: exp cannot overflow
    numerator = tl.exp(x)
    denominator = tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, numerator / denominator, mask=mask)"""


def softmax():
    return [
        md("""
# 02 · Fused softmax: reductions in registers

A softmax in NumPy reads and writes the matrix several times (max, subtract, exp, sum, divide). The **fused**
kernel loads each row once, does everything on the tile in registers, and writes once: it moves the minimum
number of bytes, so on a GPU it runs at close to DRAM bandwidth.

Masked-off lanes load `-inf`, so they never win the max and contribute `exp(-inf) = 0` to the sum.
"""),
        code(SETUP),
        code(SOFTMAX_KERNEL),
        code("""%%tilekernel --ref "ref_softmax(x)" --bench 20
def ref_softmax(a):
    a = np.asarray(a.get() if hasattr(a, "get") else a, dtype=np.float64)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)

rows, cols = 128, 781
x = xp.asarray(np.random.default_rng(2).standard_normal((rows, cols), dtype=np.float32))
out = xp.full_like(x, np.nan)
softmax_kernel[(rows,)](out, x, x.shape[1], out.shape[1], cols, BLOCK_SIZE=tw.next_power_of_2(cols));"""),
        md("""
## How a reduction is written in the IR

In **tile-opt**, `tl.max(x, axis=0)` is a `tt.reduce` with a small *combine region* (`arith.maxnumf` or
`arith.maximumf`). Pick the line in the source-line picker; in **tile-gpu** you can see the layout the
reduction runs in, and in **ptx** the warp shuffles (`shfl.sync.bfly`) that combine values across threads.
"""),
        code("""%%tilekernel --signature "out_ptr=*fp32,in_ptr=*fp32,in_row_stride=i32,out_row_stride=i32,n_cols=i32" --constexprs BLOCK_SIZE=1024 --kernel softmax_kernel --target sm_90 --stages source,tile-opt,tile-gpu,ptx
pass"""),
        claim_check("""# claim check: tt.reduce with a max combine region, a layout in tile-gpu, warp shuffles in PTX
_r = _tilekernel_reports[0]
assert "tt.reduce" in _r.asm["tile-opt"]
assert "arith.maxnumf" in _r.asm["tile-opt"] or "arith.maximumf" in _r.asm["tile-opt"]
assert "#ttg.blocked" in _r.asm["tile-gpu"] and "tt.reduce" in _r.asm["tile-gpu"]
assert "shfl.sync.bfly" in _r.asm["ptx"]
print("checked: tt.reduce (maxnumf), #blocked layout, shfl.sync.bfly")"""),
        md(
            "## Recorded on an H200\nOur fused softmax beside Triton's (the same source) and, in records "
            "made since 2026-12-01, torch's `softmax`: fp32, 4096 rows."
        ),
        code('show_recorded("02_fused_softmax")'),
        md("""
## Exercises

1. Remove `- tl.max(x, axis=0)` and feed rows with values near 100. What does the check say?
2. Make the kernel work for `n_cols` larger than `BLOCK_SIZE` with a loop over column blocks (online softmax).
3. How many bytes does the fused kernel move per row? How many does NumPy's five-step version move?
"""),
    ]


MATMUL_KERNEL = """@tw.autotune(
    configs=tw.matmul_configs(),  # wgmma-sized tiles on a GPU (128x256x64, ...), small ones here
    key=["M", "N", "K"])
@tw.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] + k < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)                  # a tensor-core MMA on the GPU
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))"""


def matmul():
    return [
        md("""
# 03 · Matmul: tiling, tensor cores and autotuning

Each program computes one `BLOCK_M x BLOCK_N` tile of `C = A @ B`, walking along K in steps of `BLOCK_K`.
Every loaded element of A is reused `BLOCK_N` times and every element of B `BLOCK_M` times: **tiling** raises
the arithmetic intensity until the kernel is **compute-bound**. On a GPU target `tl.dot` on fp16 tiles becomes
tensor-core instructions: `mma.sync` (sm_80 and later, the H200 included), its operands read from shared memory
with `ldmatrix`, and the loads of the next tiles overlapped with the math by `cp.async` (`num_stages`). For
sm_90a, the default on an H200, a dot that fits (M of 64 or more per warp group of 4 warps) becomes Hopper's own
`wgmma.mma_async`, which reads both tiles straight from swizzled shared memory through matrix descriptors (as
Triton and cuBLAS do there); `target="sm_90"` keeps `mma.sync`. The recorded figures below say when and
on which GPU they were measured.
`tw.autotune` times each `Config` and keeps the fastest; `tw.matmul_configs()` is a default set: on a GPU
the `wgmma`-sized tiles (128x256x64 with 8 warps and 3 stages, 256x128x64, 128x128x64 with 4 warps and
4 stages, ...) and `mma.sync`-sized ones, in the interpreter two small tiles.
"""),
        code(SETUP),
        code(MATMUL_KERNEL),
        code("""%%tilekernel --ref "a.astype(np.float64) @ b.astype(np.float64)" --bench 20
M, N, K = 128, 128, 96
rng = np.random.default_rng(3)
a = xp.asarray(rng.standard_normal((M, K)).astype(np.float16))
b = xp.asarray(rng.standard_normal((K, N)).astype(np.float16))
c = xp.full((M, N), np.nan, dtype=np.float16)
grid = lambda meta: (tw.cdiv(M, meta["BLOCK_M"]), tw.cdiv(N, meta["BLOCK_N"]))
matmul_kernel[grid](a, b, c, M, N, K, a.strides[0] // 2, 1, b.strides[0] // 2, 1, c.strides[0] // 2, 1);"""),
        md("""
The report's overview shows the **autotuner table**: each config's time (or why it failed or was pruned).
In the interpreter the times measure NumPy, not a GPU: the ranking means something only on a GPU.

## Tensor cores in PTX

Compile one config for sm_80 with the specializations a launch on 4096 x 4096 matrices makes (sizes and row
strides divisible by 16, unit strides along rows), and pick the `acc += tl.dot(a, b)` line. In **tile-gpu**
the accumulator has the `#mma` layout (each warp owns 16 x 8 tiles of C), the operands `#dot_op` layouts
(the register fragments `mma.sync` reads) and the staged tiles `#shared` layouts (a swizzle that keeps
`ldmatrix` free of bank conflicts); the loop's loads became `ttg.async_copy_global_to_local` into a ring
of `num_stages` slots. In **ptx** each `tl.dot` is a run of `mma.sync.aligned.m16n8k16`.
"""),
        code("""report = tw.inspect(matmul_kernel.fn,
                    signature="a_ptr=*fp16:16,b_ptr=*fp16:16,c_ptr=*fp16:16,M=i32:16,N=i32:16,K=i32:16,"
                              "stride_am=i32:16,stride_ak=i32:1,stride_bk=i32:16,stride_bn=i32:1,"
                              "stride_cm=i32:16,stride_cn=i32:1",
                    constexprs={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, target="sm_80",
                    stages=["source", "tile-gpu", "ptx"])
report"""),
        code("""ptx = report.asm.get("ptx", "")
for instruction in ("mma.sync", "ldmatrix", "cp.async.cg", "cp.async.wait_group"):
    print(f"{instruction:<22}", sum(instruction in line for line in ptx.splitlines()))"""),
        claim_check("""# claim check: mma.sync, ldmatrix and cp.async in the PTX; #mma, #dot_op, #shared and the ring in tile-gpu
import re
_gpu = report.asm["tile-gpu"]
for _layout in ("#ttg.mma<", "#ttg.dot_op<", "#ttg.shared<"):
    assert _layout in _gpu, _layout
assert "ttg.async_copy_global_to_local" in _gpu and "!ttg.memdesc<3x64x32xf16" in _gpu
assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
assert "ldmatrix.sync.aligned" in ptx and "cp.async.cg.shared.global" in ptx
assert "wgmma" not in ptx
print("checked: tensor-core layouts, mma.sync, ldmatrix, cp.async; no wgmma")"""),
        md("""
The same config compiled for **sm_90a** (Hopper with its architecture-specific instructions): the accumulator's
`#mma` layout is version 3 (a warp group of 4 warps per 64 rows), the tiles have `#nvmma_shared` layouts, and
each `tl.dot` is a `wgmma.mma_async` between `wgmma.fence` and `wgmma.commit_group` / `wgmma.wait_group`.
"""),
        claim_check("""# claim check: wgmma for sm_90a, with its v3 #mma layout and NVMMA shared tiles
_h = tw.compile(matmul_kernel.fn,
                signature="a_ptr=*fp16:16,b_ptr=*fp16:16,c_ptr=*fp16:16,M=i32:16,N=i32:16,K=i32:16,"
                          "stride_am=i32:16,stride_ak=i32:1,stride_bk=i32:16,stride_bn=i32:1,"
                          "stride_cm=i32:16,stride_cn=i32:1",
                constexprs={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, target="sm_90a")
_hptx = _h.asm["ptx"]
assert "wgmma.mma_async.sync.aligned" in _hptx and "mma.sync" not in _hptx
assert "#ttg.mma<{versionMajor=3" in _h.asm["tile-gpu"] and "#ttg.nvmma_shared<" in _h.asm["tile-gpu"]
print("checked: sm_90a:", _hptx.count("wgmma.mma_async"), "wgmma.mma_async, no mma.sync")"""),
        md("""
## Tensor cores in SASS

`ptxas` turns each `mma.sync.aligned.m16n8k16` into one **`HMMA.16816.F32`** instruction of the GPU's own
machine code (SASS), `ldmatrix` into `LDSM` and `cp.async` into `LDGSTS`. The **sass** tab shows it where
NVIDIA's `nvdisasm` is installed (`pip install "tileworkbench[sass]"`, no GPU needed); without it, the cell
below says so and shows the SASS recorded on the GPU with the timings below.
"""),
        code("""from tileworkbench.backends.nvptx.tools import missing_for
from tileworkbench.workbench.recorded import load_recorded
from tileworkbench.workbench.sass_summary import count_instructions, tensor_core_excerpt

if missing_for("sass") is None:             # nvdisasm is here: the SASS of the sm_80 compile above
    sass_counts = count_instructions(report.asm["sass"])
    print("SASS of the compile above (sm_80, 64x64x32):", sass_counts)
    print(tensor_core_excerpt(report.asm["sass"], before=4, after=12))
else:                                       # the SASS recorded on the GPU, if the record has it
    print(missing_for("sass"))
    recorded_sass = (load_recorded("03_matmul").data or {}).get("sass")
    if recorded_sass and "excerpt" in recorded_sass:
        print(f"recorded SASS of {recorded_sass['kernel']} ({recorded_sass['arch']}):", recorded_sass["counts"])
        print(recorded_sass["excerpt"])
    else:
        print("the record in notebooks/data/03_matmul.json has no SASS yet")"""),
        claim_check("""# claim check: one HMMA.16816.F32 per mma.sync m16n8k16 (live), or HMMA/HGMMA in the recorded SASS
if missing_for("sass") is None:
    assert sass_counts["HMMA"] == ptx.count("mma.sync.aligned.m16n8k16") > 0, sass_counts
    assert sass_counts["LDSM"] > 0 and sass_counts["LDGSTS"] > 0, sass_counts
    assert "HMMA.16816.F32" in tensor_core_excerpt(report.asm["sass"])
elif recorded_sass and "counts" in recorded_sass:
    assert recorded_sass["counts"]["HMMA"] + recorded_sass["counts"]["HGMMA"] > 0, recorded_sass["counts"]
print("checked: the SASS runs the dot on tensor cores (HMMA, one per mma.sync)")"""),
        md("""
## Recorded on an H200

The notebook's matmul (fp16 in, fp32 accumulate) at 4096^3 and 8192^3, with the best of a few block configs,
beside cuBLAS (through CuPy) and Triton compiling the same source with its best config (TFLOP/s), measured with
`do_bench` by `bench/record_notebook_data.py`. The cell after the table says what the timed kernel ran on.
"""),
        code('show_recorded("03_matmul")'),
        code("""record = load_recorded("03_matmul")
timed_sass = (record.data or {}).get("sass", {}) if record.available else {}
if timed_sass.get("counts"):
    print(f"recorded {record.data['date']}: the timed kernel ({timed_sass['kernel']}, {timed_sass['arch']}) "
          f"runs on tensor cores: {timed_sass['counts']}")
    print(timed_sass["excerpt"])
elif record.available:
    print(f"this record ({record.data['date']}) predates tensor cores: the kernel then ran on CUDA-core FMAs; "
          "bench/record_notebook_data.py on a GPU records the tensor-core kernel and its SASS")"""),
        claim_check("""# claim check: a record with SASS ran on tensor cores, faster than CUDA cores can go; an older
# record is the 2026-11-30 CUDA-core one the cell above calls it
if timed_sass.get("counts"):
    assert timed_sass["counts"]["HMMA"] + timed_sass["counts"]["HGMMA"] > 0, timed_sass["counts"]
    _fp32_roof = record.data["peaks"]["fp32"] / 1e12
    assert all(r["check"] == "pass" and r["TFLOP/s"] > _fp32_roof for r in record.rows), _fp32_roof
elif record.available:
    assert record.data["date"] == "2026-11-30", record.data["date"]
print("checked: what the record says the timed kernel ran on")"""),
        md("""
## Exercises

1. Add a config with `BLOCK_K: 64`. Which config wins on a GPU, and why might a bigger tile lose?
2. Compute the arithmetic intensity of one program: (2·BM·BN·BK) FLOPs per (BM·BK + BK·BN)·2 bytes loaded.
3. Change the inputs to float32. What does `input_precision` do, and what does the check say (tf32 hint)?
"""),
    ]


LAYER_NORM_KERNEL = """@tw.jit
def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)         # masked lanes must not count in the variance
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * row_stride + cols, diff * rstd * w + b, mask=mask)"""


def layer_norm():
    return [
        md("""
# 04 · Layer norm: two reductions, fp16 storage, fp32 math

Layer norm normalizes each row to mean 0 and variance 1, then scales and shifts it. One program per row: load,
reduce twice (mean, variance), normalize, store. Inputs may be fp16; the math is done in fp32 (`.to(tl.float32)`)
because a sum of hundreds of fp16 values loses digits.
"""),
        code(SETUP),
        code(LAYER_NORM_KERNEL),
        code("""%%tilekernel --ref "ref_layer_norm(x, w, b)" --bench 20
def ref_layer_norm(x, w, b, eps=1e-5):
    host = lambda a: np.asarray(a.get() if hasattr(a, "get") else a, dtype=np.float64)
    x, w, b = host(x), host(w), host(b)
    mean = x.mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + eps) * w + b

rows, cols = 64, 700
rng = np.random.default_rng(4)
x = xp.asarray(rng.standard_normal((rows, cols), dtype=np.float32))
w = xp.asarray(rng.standard_normal(cols, dtype=np.float32))
b = xp.asarray(rng.standard_normal(cols, dtype=np.float32))
y = xp.full_like(x, np.nan)
layer_norm_kernel[(rows,)](x, y, w, b, cols, cols, 1e-5, BLOCK_SIZE=tw.next_power_of_2(cols));"""),
        md("""
## fp16 inputs

The same kernel on fp16 arrays: the `.to(tl.float32)` becomes an `arith.extf`, and the store an
`arith.truncf` back to fp16. `cols = 700` is a multiple of 4, so the launch specializes `row_stride` and
`n_cols` as `:4`: every row starts on 8 bytes, and each thread moves four fp16 values per access
(`ld.global.v2.b32`, two 32-bit words). The check uses fp16's tolerance.
"""),
        code("""%%tilekernel --ref "ref_layer_norm(x16, w16, b16)"
x16, w16, b16 = x.astype(np.float16), w.astype(np.float16), b.astype(np.float16)
y16 = xp.full_like(x16, np.nan)
layer_norm_kernel[(rows,)](x16, y16, w16, b16, cols, cols, 1e-5, BLOCK_SIZE=tw.next_power_of_2(cols));"""),
        claim_check("""# claim check: 8-byte loads and stores of four fp16 values, extf and truncf, fp16's tolerance
import re
_r = _tilekernel_reports[0]
assert set(re.findall(r"ld\\.global[.\\w]*", _r.asm["ptx"])) == {"ld.global.v2.b32"}
assert set(re.findall(r"st\\.global[.\\w]*", _r.asm["ptx"])) == {"st.global.v2.b32"}
assert "arith.extf" in _r.asm["tile-opt"] and "arith.truncf" in _r.asm["tile-opt"]
assert _r.check.passed and _r.check.dtype == "float16" and _r.check.rtol == 1e-2
print("checked: ld/st.global.v2.b32, extf and truncf, fp16 tolerance")"""),
        md("## Recorded on an H200"),
        code('show_recorded("04_layer_norm")'),
        md("""
## Exercises

1. Remove the `tl.where(mask, ...)`: which rows go wrong, and why only when `n_cols` is not a power of two?
2. Compute the variance as `E[x²] - E[x]²` instead. Compare the error on rows with a large mean (add 1000).
3. Store `mean` and `rstd` per row too (a backward pass needs them). How many bytes does that add?
"""),
    ]


TENSOR_CORE_LAYOUTS = [
    md("""
## Tensor-core layouts

A `tl.dot` that tensor cores can run (fp16 here, compiled for sm_80) brings three more layouts: **`#mma`** for the
accumulator (`versionMajor=2`: `mma.sync`; each warp owns 16 x 8 tiles, `warpsPerCTA` spreads the warps over
M and N), **`#dot_op`** for each operand (`opIdx=0` is A, `opIdx=1` is B, `kWidth=2` fp16 values per 32-bit
register: the fragments `mma.sync` reads), and **`#shared`** for the operand tiles staged in shared memory
(`vec`, `perPhase`, `maxPhase`: the XOR swizzle of 16-byte chunks that keeps `ldmatrix` free of bank conflicts).
The loaded tiles reach `#dot_op` through `ttg.local_alloc` (write to shared memory) and `ttg.local_load`
(`ldmatrix`).
"""),
    code("""import re

@tw.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    tl.store(c_ptr + m[:, None] * N + n[None, :], tl.dot(a, b))

dot = tw.compile(dot_kernel, signature="a_ptr=*fp16:16,b_ptr=*fp16:16,c_ptr=*fp32:16",
                 constexprs={"M": 64, "N": 64, "K": 32}, target="sm_80")
print("\\n".join(line for line in dot.asm["tile-gpu"].splitlines()
                if line.startswith("#") or "ttg.local" in line or "tt.dot" in line))"""),
    claim_check("""# claim check: #mma (v2), #dot_op with kWidth=2 for A and B, #shared, local_alloc/local_load, mma.sync
_gpu = dot.asm["tile-gpu"]
assert re.search(r"#mma = #ttg\\.mma<\\{versionMajor=2, versionMinor=0, warpsPerCTA=\\[\\d, \\d\\]", _gpu)
assert "#ttg.dot_op<{opIdx=0, parent=#mma, kWidth=2}>" in _gpu
assert "#ttg.dot_op<{opIdx=1, parent=#mma, kWidth=2}>" in _gpu
assert "#ttg.shared<{vec=8" in _gpu and "ttg.local_alloc" in _gpu and "ttg.local_load" in _gpu
assert "mma.sync.aligned" in dot.asm["ptx"] and "ldmatrix" in dot.asm["ptx"]
print("checked: #mma, #dot_op (kWidth=2), #shared, local_alloc/local_load, mma.sync and ldmatrix")"""),
]


def inside_compiler():
    return [
        md("""
# 05 · Inside the compiler: pass by pass, layouts, line maps

`tw.compile` returns a `CompiledKernel`: `.asm[stage]` for each stage, `.passes` for the IR after every pass,
`.line_map` from your source lines to each stage's lines. The workbench shows all three; here we use them directly.
"""),
        code(SETUP),
        code(SOFTMAX_KERNEL),
        code("""compiled = tw.compile(softmax_kernel,
                      signature={"out_ptr": "*fp32", "in_ptr": "*fp32", "in_row_stride": "i32",
                                 "out_row_stride": "i32", "n_cols": "i32"},
                      constexprs={"BLOCK_SIZE": 1024}, target="sm_90")
print("stages:", list(compiled.asm))
print("passes:", [name for name, _ in compiled.passes])"""),
        md("""
## Pass by pass

Each pass is a small function that rewrites the IR: `canonicalize` folds constants, `cse` merges identical
computations, `licm` hoists loop-invariant code, `unroll` copies the bodies of loops written with
`tl.range(..., loop_unroll_factor=k)`, `dce` deletes what nothing uses. The GPU passes then attach
**layouts** (which thread holds which element), **coalesce** memory accesses and remove layout conversions.
Pick a pass in the report's *passes* tab to see its diff.
"""),
        claim_check("""# claim check: the passes named above, in order
_names = [name for name, _ in compiled.passes]
assert _names[:7] == ["tile", "canonicalize", "cse", "licm", "unroll", "cse", "dce"], _names
assert "coalesce" in _names and "remove_layout_conversions" in _names
assert list(compiled.asm)[:6] == ["source", "tile", "tile-opt", "tile-gpu", "llvm", "ptx"]
print("checked: the pass list")"""),
        code('tw.inspect(compiled, stages=["source", "tile", "tile-opt", "tile-gpu"])'),
        code("""import difflib
names = [name for name, _ in compiled.passes]
before, after = compiled.passes[0][1], compiled.passes[-1][1]
changed = list(difflib.unified_diff(before.splitlines(), after.splitlines(), names[0], names[-1], lineterm="", n=0))
print(f"{len(changed)} diff lines from {names[0]!r} to {names[-1]!r}; the first 25:")
print("\\n".join(changed[:25]))"""),
        md("""
## Layouts

In **tile-gpu** every tensor type carries an encoding. Softmax's rows are 1-D tiles with one layout,
`#ttg.blocked<{sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]}>`: each thread owns
`sizePerThread` consecutive elements, 32 threads form a warp, and 4 warps the program; the layout repeats until
the tile is covered. Its reductions (`tl.max`, `tl.sum` over the whole row) give scalars, which have no layout.
"""),
        code("""gpu_ir = compiled.asm.get("tile-gpu", "")
print("\\n".join(line for line in gpu_ir.splitlines() if "#" in line)[:1500] or "(no tile-gpu stage)")"""),
        claim_check("""# claim check: softmax's tile-gpu has exactly the one #blocked layout shown in the text
import re
_layouts = sorted(set(re.findall(r"^(#\\w+) = (#ttg\\.\\w+<.*>)$", gpu_ir, re.M)))
assert _layouts == [("#blocked", "#ttg.blocked<{sizePerThread=[1], threadsPerWarp=[32], "
                     "warpsPerCTA=[4], order=[0]}>")], _layouts
print("checked: one #blocked layout")"""),
        md("""
A 2-D tile shows more. `row_sum_kernel` sums each row of a `ROWS x COLS` tile (`tl.sum(x, axis=1)`): the
tile's layout gives each thread 4 consecutive elements of a row (`sizePerThread=[1, 4]`, so its loads are
16-byte vectors), and the reduction's result, one value per row, has a **`#slice`** layout: the 2-D layout with
dimension 1 (the one summed away) removed. `rows`, built by `tl.arange` before it is expanded to 2-D, has it too.
"""),
        code("""@tw.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :])
    tl.store(out_ptr + rows, tl.sum(x, axis=1))

row_sum = tw.compile(row_sum_kernel, signature="x_ptr=*fp32:16,out_ptr=*fp32:16,n_cols=i32:16",
                     constexprs={"ROWS": 16, "COLS": 64}, target="sm_90")
print("\\n".join(line for line in row_sum.asm["tile-gpu"].splitlines()
                if line.startswith("#") or "tt.reduce" in line or "tt.load" in line))"""),
        claim_check("""# claim check: sizePerThread=[1, 4] and vector loads; the reduction's result has #slice (dim=1)
_gpu = row_sum.asm["tile-gpu"]
assert "#slice = #ttg.slice<{dim=1, parent=#blocked}>" in _gpu
assert re.search(r"#blocked = #ttg\\.blocked<\\{sizePerThread=\\[1, 4\\]", _gpu)
assert re.search(r"tt\\.reduce %x \\{axis = 1\\} : tensor<16xf32, #slice>", _gpu)
assert "ld.global.v4" in row_sum.asm["ptx"]
print("checked: #slice result, sizePerThread=[1, 4], ld.global.v4")"""),
        *TENSOR_CORE_LAYOUTS,
        md("""
## Line maps

`compiled.line_map[stage][source_line]` lists the lines of that stage made from one line of your kernel.
For PTX it comes from the `.loc` directives the LLVM debug info produces.
"""),
        code("""import inspect as pyinspect
source, first = pyinspect.getsourcelines(softmax_kernel.fn)
exp_line = first + next(i for i, text in enumerate(source) if "tl.exp" in text)
for stage in ("tile-opt", "ptx"):
    lines = compiled.line_map.get(stage, {}).get(exp_line, [])
    text = compiled.asm.get(stage, "").splitlines()
    print(f"--- {stage}: line {exp_line} became {len(lines)} lines")
    print("\\n".join(text[i - 1] for i in lines[:8]))"""),
        claim_check("""# claim check: the PTX line map comes from .loc directives, and tl.exp has PTX lines
assert ".loc" in compiled.asm["ptx"] and compiled.line_map["ptx"].get(exp_line)
print("checked: .loc lines map tl.exp to PTX")"""),
        md("""
## The command line

The same stages from a shell, no notebook needed:

```
tileworkbench compile my_kernels.py::softmax_kernel --signature "out_ptr=*fp32,in_ptr=*fp32,..." \\
    --constexprs BLOCK_SIZE=1024 --stage ptx --target sm_90
tileworkbench compile ... --stage passes      # the IR after every pass
tileworkbench demo --out /tmp/report.html     # the showcase kernels, checked, in one HTML report
```

## Exercises

1. Which pass removes the most lines from softmax's IR? Count them from `compiled.passes`.
2. Compile softmax with `num_warps=8`. How does the `#blocked` layout change?
3. Find the PTX lines for `tl.sum`: how many `shfl.sync` instructions does a 1024-wide reduction need?
"""),
    ]


def roofline_nb():
    return [
        md("""
# 06 · The roofline: how fast could it be?

A kernel is limited either by **memory** (bytes moved / bandwidth) or by **compute** (FLOPs / peak rate).
Its **arithmetic intensity** I = FLOPs / bytes decides which: below the *ridge point* peak/bandwidth it is
memory-bound and the best it can do is `bandwidth × I`; above, it is compute-bound.

The workbench counts a kernel's FLOPs from its **tile-opt IR** (one walk: elementwise float ops count one per
element, math functions one, `tl.dot` 2·M·N·K, loops times their trip count) and its bytes from the
**launch's arrays** (each read once, each written once: the algorithmic minimum). Both can be overridden
with `--flops` / `--bytes`.
"""),
        code(SETUP),
        md("""
## The device's ceilings

`%tilekernel_peaks` measures them on a GPU (DRAM copy, an FP32 FMA kernel, cuBLAS for tensor cores) and caches
them; without a GPU it shows datasheet values. Datasheet ceilings are drawn dashed, measured ones solid.
"""),
        code("%tilekernel_peaks"),
        code('%tilekernel_peaks --device "H100 SXM"'),
        md(
            "## Several kernels on one plot\nWe launch two kernels of very different intensity and put them on one roofline."
        ),
        code(ADD_KERNEL + "\n\n" + SOFTMAX_KERNEL),
        code("""%%tilekernel --no-roofline
n = 1 << 16
x = xp.asarray(np.random.default_rng(5).standard_normal(n, dtype=np.float32))
out = xp.empty_like(x)
add_kernel[(tw.cdiv(n, 1024),)](x, x, out, n, BLOCK_SIZE=1024)
s_in = x.reshape(64, 1024)
s_out = xp.empty_like(s_in)
softmax_kernel[(64,)](s_out, s_in, 1024, 1024, 1024, BLOCK_SIZE=1024);"""),
        code("""reports = _tilekernel_reports          # the magic leaves its reports here
for r in reports:
    print(f"{r.name:16} {r.counts.flops:>12,.0f} FLOP {r.counts.bytes:>12,.0f} B  I = {r.counts.intensity:.3f} FLOP/B")
plot = tw.roofline(reports)
plot"""),
        md("""
Without a GPU the kernels are not timed against GPU ceilings (an interpreter's time would mean nothing there),
so each is drawn as a dashed vertical line at its intensity, with its name: both sit far left of the ridge
(where the DRAM slope meets the fp32 roof), **memory-bound**.

## Checking the numbers by hand

`add_kernel` on n = 65,536 fp32: 65,536 additions; it reads x twice here (we passed `x, x`) and writes out:
3 × 262,144 bytes, so I = 65,536 / 786,432 ≈ 0.083 FLOP/B. At 4.8 TB/s the best possible time is 786,432 B /
4.8e12 B/s ≈ 0.16 µs — far below the ~5 µs launch overhead, which is why small kernels never reach the roof.
"""),
        claim_check("""# claim check: the intensities and bounds the text states
_add, _softmax = reports
assert _add.counts.flops == 65_536 and _add.counts.bytes == 786_432
assert abs(_add.point.intensity - 65_536 / 786_432) < 1e-12
_ridge = plot.peaks.best("fp32").value / plot.peaks.best("dram").value
assert _add.point.intensity < _ridge / 8 and _softmax.point.intensity < _ridge / 8, _ridge
assert GPU or (_add.point.achieved is None and _softmax.point.achieved is None)
assert abs(786_432 / 4.8e12 * 1e6 - 0.16) < 0.01
print(f"checked: I = {_add.point.intensity:.3f} FLOP/B, ridge at {_ridge:.1f} FLOP/B")"""),
        code("""point = reports[0].point
print(f"intensity {point.intensity:.4f} FLOP/B; best time at 4.8 TB/s: {point.bytes / 4.8e12 * 1e6:.3f} us")
import os, tempfile
print("saved", plot.save(os.path.join(tempfile.gettempdir(), "roofline.svg")))   # or .png"""),
        md("""
## Recorded on an H200

The showcase kernels measured on an H200, on its measured ceilings. A memory-bound kernel can land slightly
*above* 100% of the DRAM ceiling: the ceiling is what a 1 GiB copy achieved, a good practical limit but not a
law of nature (the datasheet's 4.8 TB/s, dashed, is the real one). The matmul point shows how far the
kernel's code generation is from the tensor-core roof at the time of recording.
"""),
        code('show_recorded("06_roofline")'),
        md("""
## Exercises

1. What intensity does a 4096³ fp16 matmul have (count A, B and C once)? Is it compute-bound on an H200?
2. A kernel reaches 3.9 TB/s at I = 0.25. What % of its roofline bound is that?
3. Override the counts with `--flops` for a kernel doing `tl.exp` on every element: should exp count as 1 FLOP?
"""),
    ]


NOTEBOOKS = {
    "00_start_here": start_here,
    "01_vector_add": vector_add,
    "02_fused_softmax": softmax,
    "03_matmul": matmul,
    "04_layer_norm": layer_norm,
    "05_inside_the_compiler": inside_compiler,
    "06_roofline": roofline_nb,
}


def build(out_dir: Path = HERE) -> list[Path]:
    paths = []
    for name, cells in NOTEBOOKS.items():
        nb = new_notebook(cells=cells())
        for i, cell in enumerate(nb.cells):
            cell.id = f"cell-{i:02d}"  # stable ids: rebuilding changes only what the text changes
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nb.metadata["language_info"] = {"name": "python"}
        path = out_dir / f"{name}.ipynb"
        nbformat.write(nb, path)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in build():
        print("wrote", p)
