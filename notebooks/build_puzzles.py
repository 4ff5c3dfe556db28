"""Builds the puzzle notebook (without outputs): `python notebooks/build_puzzles.py`.

Twelve puzzles at the depth of the Triton puzzles, from tileworkbench/workbench/puzzle_set.py: each
has a statement, a spec (NumPy), a kernel to write, a test that says PASS or FAIL at once (with the
memory access picture of one program and, on a failure, where the output is wrong and which
programs wrote it), a hint, and a folded cell that shows and checks the reference solution
(puzzle_solutions.py).
Everything runs in the interpreter, so no GPU is needed.
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
from tileworkbench.workbench.puzzle_set import check, solution, solution_source"""

INTRO = """# Tile puzzles

Twelve kernels to write, from a constant add to a matmul, a long softmax, flash attention and a
quantized matmul. Each puzzle states what to compute, gives the answer as a NumPy **spec** and a
kernel skeleton to fill in. Run the test cell under it: it says **PASS** or **FAIL** at once,
draws which elements the loads and stores of one program touched (masked-off lanes in grey,
out-of-bounds in red) and, on a failure, where the output is wrong and which program wrote (or
missed, or wrote twice) each output element. A hint is under each puzzle; the reference solution
is in the folded cell below it.

Everything runs in the interpreter (NumPy), so no GPU is needed; the same kernels run on a GPU
unchanged. The kernels use the same `tl` as Triton: `tl.program_id`, `tl.arange`, `tl.load`,
`tl.store`, `tl.sum`, `tl.max`, `tl.exp`, `tl.where`, `tl.dot`."""


def launch_text(puzzle) -> str:
    """The launch a puzzle is checked with, as the statement shows it."""
    sizes = ", ".join(f"`{k} = {v}`" for k, v in {**puzzle.scalars, **puzzle.constexprs}.items())
    inputs = ", ".join(
        f"`{name}` {'x'.join(map(str, shape)) if isinstance(shape, tuple) else '(see above)'}"
        for name, shape in puzzle.inputs.items()
    )
    return f"Inputs: {inputs}; grid `{puzzle.grid}`; {sizes}."


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
    from tileworkbench.workbench.puzzle_set import PUZZLES

    cells = [md(INTRO), code(SETUP)]
    for p in PUZZLES:
        name = p.solution_name
        cells += [
            md(f"## Puzzle {p.number}: {p.title}\n\n{p.statement}\n\n{launch_text(p)}\n\n"
               f"The spec, in float64 NumPy:\n\n```python\n{p.spec_source()}\n```"),
            code(p.stub, tags=("puzzle-stub",)),
            code(f"check({p.number}, {name})", tags=("puzzle-test",)),
            md(f"<details><summary>Hint</summary>\n\n{p.hint}\n\n</details>\n\n"
               "The reference solution is in the next cell (folded: click it to unfold)."),
            code(f"print(solution_source({p.number}))\ncheck({p.number}, solution({p.number}))",
                 hidden=True, tags=("puzzle-solution",)),
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
