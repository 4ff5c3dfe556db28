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
* **source / tile / tile-opt / tile-gpu / llvm / ptx / sass**: one tab per compiler stage.
* **passes**: choose a pass and see the IR after it, with a diff against the pass before.
* **source line**: choose a line of your kernel and the lines it became are highlighted in every stage.
  (In the static HTML view, click a line in the *source* tab.)
"""),
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
on a tensor of pointers; in **ptx** it becomes predicated `ld.global` instructions (vectorized when the
compiler can prove 16-byte alignment, which the `:16` in the signature promises).
"""),
        code("""%%tilekernel --signature "x_ptr=*fp32:16,y_ptr=*fp32:16,out_ptr=*fp32:16,n_elements=i32" --constexprs BLOCK_SIZE=1024 --kernel add_kernel --target sm_90 --stages source,tile-opt,ptx
pass"""),
        md(
            "## Recorded on an H200\nBandwidth of our kernel and Triton's for 2^24 and 2^28 elements, measured with `do_bench`."
        ),
        code('show_recorded("01_vector_add")'),
        md("""
## Exercises

1. Without the `:16` hints, does the PTX still use `ld.global.v4`? Why might it not?
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
        md(
            "## Recorded on an H200\nOur fused softmax beside Triton's and torch's, fp32, 4096 rows."
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
    configs=[tw.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4),
             tw.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4)],
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
the arithmetic intensity until the kernel is **compute-bound**. `tl.dot` on fp16 tiles becomes tensor-core
instructions (`mma.sync` on sm_80, `wgmma` on sm_90). `tw.autotune` times each `Config` and keeps the fastest.
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

Compile one config for sm_80 and look for `mma.sync` in the PTX (pick the `acc += tl.dot(a, b)` line).
"""),
        code("""report = tw.inspect(matmul_kernel.fn,
                    signature="a_ptr=*fp16:16,b_ptr=*fp16:16,c_ptr=*fp16:16,M=i32,N=i32,K=i32,"
                              "stride_am=i32,stride_ak=i32,stride_bk=i32,stride_bn=i32,stride_cm=i32,stride_cn=i32",
                    constexprs={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, target="sm_80",
                    stages=["source", "tile-gpu", "ptx"])
report"""),
        code("""ptx = report.asm.get("ptx", "")
print("mma instructions in the PTX:", sum("mma" in line for line in ptx.splitlines()))"""),
        md(
            "## Recorded on an H200\nfp16 matmul, 4096^3 and 8192^3: our kernel, Triton and cuBLAS (TFLOP/s)."
        ),
        code('show_recorded("03_matmul")'),
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

The same kernel on fp16 arrays: the loads become 16-bit, the `.to(tl.float32)` an `arith.extf`, and the store
an `arith.truncf` back to fp16. The check uses fp16's tolerance.
"""),
        code("""%%tilekernel --ref "ref_layer_norm(x16, w16, b16)"
x16, w16, b16 = x.astype(np.float16), w.astype(np.float16), b.astype(np.float16)
y16 = xp.full_like(x16, np.nan)
layer_norm_kernel[(rows,)](x16, y16, w16, b16, cols, cols, 1e-5, BLOCK_SIZE=tw.next_power_of_2(cols));"""),
        md("## Recorded on an H200"),
        code('show_recorded("04_layer_norm")'),
        md("""
## Exercises

1. Remove the `tl.where(mask, ...)`: which rows go wrong, and why only when `n_cols` is not a power of two?
2. Compute the variance as `E[x²] - E[x]²` instead. Compare the error on rows with a large mean (add 1000).
3. Store `mean` and `rstd` per row too (a backward pass needs them). How many bytes does that add?
"""),
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
computations, `licm` hoists loop-invariant code, `dce` deletes what nothing uses. The GPU passes then attach
**layouts** (which thread holds which element: `#blocked`, `#slice`, `#mma`), **coalesce** memory accesses and
remove layout conversions. Pick a pass in the report's *passes* tab to see its diff.
"""),
        code('tw.inspect(compiled, stages=["source", "tile", "tile-opt", "tile-gpu"])'),
        code("""import difflib
names = [name for name, _ in compiled.passes]
before, after = compiled.passes[0][1], compiled.passes[-1][1]
changed = list(difflib.unified_diff(before.splitlines(), after.splitlines(), names[0], names[-1], lineterm="", n=0))
print(f"{len(changed)} diff lines from {names[0]!r} to {names[-1]!r}; the first 25:")
print("\\n".join(changed[:25]))"""),
        md("""
## Layouts

In **tile-gpu** every tensor type carries an encoding such as
`#blocked<{sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]}>`: each thread owns
`sizePerThread` consecutive elements (4 would allow one 16-byte vector load), 32 threads form a warp, and
4 warps the program; the layout repeats until the tile is covered. A reduction's result has a `#slice` layout.
"""),
        code("""gpu_ir = compiled.asm.get("tile-gpu", "")
print("\\n".join(line for line in gpu_ir.splitlines() if "#" in line)[:1500] or "(no tile-gpu stage)")"""),
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
        md("""
## The command line

The same stages from a shell, no notebook needed:

```
tileworkbench compile my_kernels.py::softmax_kernel --signature "out_ptr=*fp32,in_ptr=*fp32,..." \\
    --constexprs BLOCK_SIZE=1024 --stage ptx --target sm_90
tileworkbench compile ... --stage passes      # the IR after every pass
tileworkbench demo --out report.html          # the showcase kernels, checked, in one HTML report
```

## Exercises

1. Which pass removes the most lines from softmax's IR? Count them from `compiled.passes`.
2. Compile with `num_warps=8`. How does the `#blocked` layout change?
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
so each is drawn as a dotted vertical line at its intensity: both sit far left of the ridge, **memory-bound**.

## Checking the numbers by hand

`add_kernel` on n = 65,536 fp32: 65,536 additions; it reads x twice here (we passed `x, x`) and writes out:
3 × 262,144 bytes, so I = 65,536 / 786,432 ≈ 0.083 FLOP/B. At 4.8 TB/s the best possible time is 786,432 B /
4.8e12 B/s ≈ 0.16 µs — far below the ~5 µs launch overhead, which is why small kernels never reach the roof.
"""),
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
