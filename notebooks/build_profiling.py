"""Builds notebooks/07_profiling.ipynb (without outputs): `python notebooks/build_profiling.py`.

The lesson: a softmax whose rows are 16384 wide, one program per row, made fast step by step, each step
justified by what `%%tilekernel --profile` measures (Nsight Compute counters per source line). On a GPU
with ncu the cells profile live; elsewhere they show the profiles recorded on a GPU in
notebooks/data/07_profiling.json (written by `tileworkbench profile --json` there) and say so. The
claim-check cells assert what the text says, from the live profile or the recorded one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_notebook

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from build_notebooks import SETUP, claim_check, code, md  # noqa: E402

NAME = "07_profiling"
WARPS = (1, 4, 16)  # the three steps: warps per program (one program per row)

KERNEL = """@tw.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    y = num / den
    tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)"""

STEP = """rows, cols = (2048, 16384) if GPU else (4, 16384)
x = xp.asarray(np.random.default_rng(7).standard_normal((rows, cols), dtype=np.float32))
out = xp.full_like(x, np.nan)
softmax_kernel[(rows,)](out, x, cols, cols, cols, BLOCK=cols, num_warps=WARPS)"""

SHOW = """# live under ncu where there is a GPU and ncu; else the profile recorded on a GPU
from tileworkbench.workbench.ncu import find_ncu
from tileworkbench.workbench.profile_view import recorded_profiles

if GPU and find_ncu():
    get_ipython().run_cell_magic("tilekernel", "--profile --ref ref_softmax(x)", STEP.replace("WARPS", "{warps}"))
    profiles[{step}] = _tilekernel_reports[0].sections[0]
else:
    recorded = recorded_profiles("07_profiling")
    print("no GPU with ncu here: the profile recorded on a GPU" if recorded else "no recorded profile yet")
    if recorded:
        profiles[{step}] = recorded[{step}]
        print("\\n".join(recorded[{step}].text()))"""


def lesson():
    cells = [
        md("""
# 07 · Profiling: why a kernel runs at its speed, line by line

`%%tilekernel --profile` runs the launch under **Nsight Compute** (`ncu --clock-control none`, in a child
process that relaunches the kernel) and attributes its per-instruction counters to *your* Python lines
through the line table of the cubin that ran: instructions executed, warp-stall samples by reason, global
and shared memory traffic, bank conflicts. It names the three largest stall reasons in words and places the
kernel on the roofline from **measured** bytes and FLOPs.

The lesson: a row softmax over 16384 columns, one program per row. We change one thing per step and let the
profile say why. Without a GPU (or without ncu) each step shows the profile recorded on a GPU, and says so.
"""),
        code(SETUP + "\nprofiles = {}\nSTEP = " + repr(STEP)),
        code(KERNEL),
        code("""def ref_softmax(a):
    a = np.asarray(a.get() if hasattr(a, "get") else a, dtype=np.float64)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)"""),
        md("""
## Step 0 · Before measuring: what the compiler says

A row of 16384 floats held by **one warp** is 512 values per thread, but a thread has at most 255 registers.
ptxas must *spill*: keep values in local memory (per-thread, but in DRAM/L1) with `STL`/`LDL`. Compile it for
sm_90 at 1, 4 and 16 warps and count (no GPU needed):
"""),
        code("""from tileworkbench.workbench.sass_summary import mnemonics

SIG = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32", "n_cols": "i32"}
static = {}
for warps in (1, 4, 16):
    c = tw.compile(softmax_kernel, signature=SIG, constexprs={"BLOCK": 16384}, target="sm_90",
                   num_warps=warps)
    ops = mnemonics(c.asm["sass"]) if "sass" in c.asm else []
    static[warps] = (c.n_regs, c.n_spills, ops.count("STL"), ops.count("LDL"))
    print(f"num_warps={warps:2}: {c.n_regs} registers/thread, spills {c.n_spills}, "
          f"{ops.count('STL')} STL and {ops.count('LDL')} LDL in the SASS")"""),
        md("The report of the version we will end with (16 warps), compiled only: its source and SASS."),
        code("""%%tilekernel --signature "out_ptr=*fp32,in_ptr=*fp32,in_stride=i32,out_stride=i32,n_cols=i32" --constexprs BLOCK=16384 --kernel softmax_kernel --target sm_90 --num-warps 16 --stages source,sass
pass"""),
        claim_check("""# claim check: one warp per 16384-wide row spills (local memory in the SASS), 16 warps do not
if static[1][2] or static[1][3]:
    assert static[1][2] > 100 and static[1][3] > 100, static[1]
    assert static[16][2] == 0 and static[16][3] == 0, static[16]
    print("checked: one warp spills:", static[1][2], "STL and", static[1][3], "LDL; 16 warps: none")
else:
    print("no SASS here (nvdisasm missing): spill check skipped")"""),
    ]
    notes = {
        1: """
## Step 1 · One warp per row: measure it

The profile's top stall tells what the spills cost: warps wait on **local memory** (`long_scoreboard` on the
`LDL` that reloads a spilled value, `lg_throttle` when the local/global queue is full).
""",
        4: """
## Step 2 · Four warps per row

128 threads share the row: 128 values per thread fit in registers (step 0: no spills), but at well
over 100 registers per thread few warps fit on a multiprocessor. Compare the per-line table, the
achieved occupancy and the top stall with step 1: where did the stall samples go?
""",
        16: """
## Step 3 · Sixteen warps per row

512 threads: 32 values per thread, far fewer registers, more warps per multiprocessor. The kernel should
now be limited by what a softmax must do, read and write each element once: compare its DRAM bandwidth
with the ceiling.
""",
    }
    for step, warps in enumerate(WARPS):
        cells.append(md(notes[warps]))
        cells.append(code(SHOW.replace("{warps}", str(warps)).replace("{step}", str(step))))
    cells.append(md("""
## What the steps show

Step 1's table has a **local sectors** column: the spills' traffic, on almost every line, and its DRAM
traffic is several times the two arrays a softmax must move. Its top stall is waiting on memory at the
line whose values were spilled. Four warps remove the spills (no local sectors; DRAM traffic drops to about
the two arrays) but leave occupancy low; sixteen warps raise the achieved occupancy and the DRAM bandwidth.
The claim check below reads the three profiles (live or recorded) and asserts each of these sentences.
"""))
    cells.append(claim_check("""# claim check: from the three profiles (live or recorded)
if len(profiles) == 3:
    p = [profiles[i].profile for i in range(3)]
    local = [q.column_total("L2 Theoretical Sectors Local") for q in p]
    assert local[0] > 0 and local[1] == 0 and local[2] == 0, local
    assert p[0].dram_bytes > 3 * p[2].dram_bytes, [q.dram_bytes for q in p]
    assert p[0].stalls[0].reason in ("long_scoreboard", "lg_throttle"), p[0].stalls[0].words()
    assert p[0].seconds > p[1].seconds > p[2].seconds, [q.seconds for q in p]
    occupancy = [q.summary()["achieved_occupancy_pct"] for q in p]
    assert occupancy[2] > occupancy[1], occupancy
    assert all(q.unmatched == 0 for q in p)
    print("checked:", ", ".join(f"{q.seconds * 1e6:.0f} us" for q in p),
          f"| DRAM bytes {p[0].dram_bytes / p[2].dram_bytes:.1f}x at one warp",
          "| step 1 top stall:", p[0].stalls[0].words())
else:
    print("no profiles to check (no GPU with ncu, no recorded data)")"""))
    cells.append(md("""
## Exercises

1. Profile step 3 with `BLOCK=16384` but rows of 8192 columns: which line's samples grow, and why?
2. Use `--profile --sweep "num_warps=1,2,4,8,16"`: the sweep table has one row per config with its top stall.
3. In the profile's PTX/SASS panel of the hottest line, follow a `ld.global` to its `LDG` and back.
"""))
    return cells


def build(out_dir: Path = HERE) -> Path:
    nb = new_notebook(cells=lesson())
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:02d}"
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    path = out_dir / f"{NAME}.ipynb"
    nbformat.write(nb, path)
    return path


if __name__ == "__main__":
    print("wrote", build())
