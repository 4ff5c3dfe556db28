"""Builds the puzzle notebook (without outputs): `python notebooks/build_puzzles.py`.

Puzzles in the style of the Triton puzzles: each has a spec (NumPy), a kernel to write, a test that says
PASS or FAIL at once (with the memory access picture of one program and, on a failure, where the output
is wrong), hints, and a folded solution. Everything runs in the interpreter, so no GPU is needed.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
OUT = HERE / "puzzles" / "puzzles.ipynb"

SETUP = """import numpy as np
import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.workbench.puzzles import check_puzzle"""

INTRO = """# Tile puzzles

Small kernels to write, in the style of the Triton puzzles. Each puzzle gives a **spec** in NumPy and a
kernel to fill in. Run the test cell: it says **PASS** or **FAIL** at once, draws which elements the
loads and stores of program 0 touched (masked-off lanes in grey, out-of-bounds in red), and on a
failure shows where the output is wrong. A hint is under each puzzle; a solution is folded below it.

Everything runs in the interpreter (NumPy), so no GPU is needed. The kernels use the same `tl` as
Triton: `tl.program_id`, `tl.arange`, `tl.load`, `tl.store`, `tl.sum`."""

# (title, spec text, stub kernel, solution kernel, test call, hint)
PUZZLES = [
    (
        "Puzzle 1: constant add",
        "Add 10 to each element of `x` (32 elements, one program of `B0 = 32` lanes).\n\n"
        "`z[i] = x[i] + 10`",
        """@tw.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    # your code here: offsets 0..B0-1, load x, add 10, store into z
    pass""",
        """@tw.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.arange(0, B0)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + offs, x + 10.0)""",
        """check_puzzle(add_kernel, lambda x: x + 10, {"x": (32,)}, (32,), grid=(1,),
             scalars={"N0": 32}, constexprs={"B0": 32},
             hint="tl.arange(0, B0) gives the offsets; tl.load(x_ptr + offs) reads a tile")""",
        "`tl.arange(0, B0)` gives the offsets 0..31; `x_ptr + offs` is a tile of pointers.",
    ),
    (
        "Puzzle 2: constant add, many blocks",
        "Now `x` has `N0 = 200` elements and each program handles `B0 = 32` of them, so the grid has\n"
        "`cdiv(200, 32) = 7` programs and the last one runs past the end.\n\n`z[i] = x[i] + 10`",
        """@tw.jit
def add_mask_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    # your code here: this program's block of offsets, and a mask for the last block
    pass""",
        """@tw.jit
def add_mask_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offs < N0
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(z_ptr + offs, x + 10.0, mask=mask)""",
        """check_puzzle(add_mask_kernel, lambda x: x + 10, {"x": (200,)}, (200,), grid=(7,),
             scalars={"N0": 200}, constexprs={"B0": 32}, pid=(6, 0, 0),
             hint="offsets start at program_id(0) * B0; mask=offs < N0 keeps the last block inside")""",
        "Program `pid` starts at `pid * B0`; `mask = offs < N0` switches off the lanes past the end "
        "(the picture of program 6 shows them in grey).",
    ),
    (
        "Puzzle 3: outer vector add",
        "Add a row vector and a column vector: `x` has `N0 = 32` elements, `y` has `N1 = 32`, one "
        "program computes the whole `32 x 32` output.\n\n`z[j, i] = x[i] + y[j]`",
        """@tw.jit
def outer_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    # your code here: load x and y as 1-D tiles, broadcast with [None, :] and [:, None]
    pass""",
        """@tw.jit
def outer_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.arange(0, B0)
    j = tl.arange(0, B1)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + j)
    z = x[None, :] + y[:, None]
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], z)""",
        """check_puzzle(outer_kernel, lambda x, y: x[None, :] + y[:, None],
             {"x": (32,), "y": (32,)}, (32, 32), grid=(1,),
             scalars={"N0": 32, "N1": 32}, constexprs={"B0": 32, "B1": 32},
             hint="z's element (j, i) is at z_ptr + j * N0 + i")""",
        "Row `j`, column `i` of `z` is at `z_ptr + j * N0 + i`: build that offset tile from "
        "`j[:, None]` and `i[None, :]`.",
    ),
    (
        "Puzzle 4: row sums",
        "Sum each row of a `4 x 32` matrix `x`; program `p` handles row `p`.\n\n"
        "`z[p] = sum_j x[p, j]`",
        """@tw.jit
def row_sum_kernel(x_ptr, z_ptr, N0, T, B0: tl.constexpr):
    # your code here: load row program_id(0) (T elements), tl.sum it, store one value
    pass""",
        """@tw.jit
def row_sum_kernel(x_ptr, z_ptr, N0, T, B0: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, B0)
    x = tl.load(x_ptr + row * T + cols, mask=cols < T)
    tl.store(z_ptr + row, tl.sum(x, axis=0))""",
        """check_puzzle(row_sum_kernel, lambda x: x.sum(axis=1), {"x": (4, 32)}, (4,), grid=(4,),
             scalars={"N0": 4, "T": 32}, constexprs={"B0": 32}, pid=(2, 0, 0),
             hint="row p starts at x_ptr + p * T; tl.sum(x, axis=0) reduces the tile")""",
        "Row `p` starts at `x_ptr + p * T`; `tl.sum(tile, axis=0)` gives one number to store.",
    ),
]


def md(text: str):
    return new_markdown_cell(text.strip("\n"))


def code(text: str, hidden: bool = False, tags: tuple[str, ...] = ()):
    cell = new_code_cell(text.strip("\n"))
    if hidden:
        cell.metadata["jupyter"] = {"source_hidden": True}
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def build() -> nbformat.NotebookNode:
    cells = [md(INTRO), code(SETUP)]
    for title, spec, stub, solution, test, hint in PUZZLES:
        cells += [
            md(f"## {title}\n\n{spec}"),
            code(stub, tags=("puzzle-stub",)),
            code(test, tags=("puzzle-test",)),
            md(f"<details><summary>Hint</summary>\n\n{hint}\n\n</details>\n\n"
               "The solution is folded in the next cell (click it to unfold)."),
            code(solution + "\n\n" + test, hidden=True, tags=("puzzle-solution",)),
        ]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def main() -> None:
    OUT.parent.mkdir(exist_ok=True)
    nbformat.write(build(), OUT)
    print(f"wrote {OUT.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
