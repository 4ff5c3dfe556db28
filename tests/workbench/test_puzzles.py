"""The puzzle notebook as stored: every stub of the twelve says FAIL at once, every solution PASS,
each test draws the memory access picture; and `check_puzzle` itself on a right, a wrong and an
out-of-bounds kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.workbench.puzzles import check_puzzle

ROOT = Path(__file__).resolve().parents[2]


@tw.jit
def shifted(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=offs < N0) + SHIFT, mask=offs < N0)


@tw.jit
def unmasked(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs) + 10.0)


SHIFT = tl.constexpr(10.0)


def test_check_puzzle_passes_fails_and_explains():
    ok = check_puzzle(shifted, lambda x: x + 10, {"x": (100,)}, (100,), (4,), {"N0": 100}, {"B0": 32})
    assert ok.passed and "PASS" in ok._repr_html_() and 'alt="access map"' in ok._repr_html_()
    wrong = check_puzzle(
        shifted, lambda x: x + 11, {"x": (100,)}, (100,), (3,), {"N0": 100}, {"B0": 32}
    )
    assert not wrong.passed and "100 of 100" in wrong.summary
    assert "where the check fails" in repr(wrong)
    oob = check_puzzle(unmasked, lambda x: x + 10, {"x": (100,)}, (100,), (4,), {"N0": 100}, {"B0": 32})
    assert not oob.passed and "out-of-bounds" in oob.summary
    assert "program (3, 0, 0)" in repr(oob) and "OUT OF BOUNDS" in repr(oob)


def test_builder_is_in_sync_with_the_notebook():
    import build_puzzles

    stored = __import__("nbformat").read(build_puzzles.OUT, as_version=4)
    assert [c.source for c in stored.cells] == [c.source for c in build_puzzles.build().cells]


def test_puzzle_notebook_says_pass_or_fail():
    """What the stored puzzle notebook shows (tests/workbench/test_notebooks.py runs it again and
    compares what it displays with these outputs)."""
    nbformat = pytest.importorskip("nbformat")
    path = ROOT / "notebooks" / "puzzles" / "puzzles.ipynb"
    nb = nbformat.read(path, as_version=4)

    def said(tag: str) -> list[str]:
        return [
            o["data"]["text/plain"]
            for cell in nb.cells
            if tag in cell.metadata.get("tags", [])
            for o in cell.get("outputs", [])
            if "data" in o
        ]

    errors = [o for c in nb.cells for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors, errors[0]
    tests, solutions = said("puzzle-test"), said("puzzle-solution")
    assert len(tests) == len(solutions) == 12
    assert all(": FAIL - " in t for t in tests), tests  # the stubs fail at once ...
    assert all("never written" in t for t in tests)  # ... writing nothing, which coverage shows
    assert all(": PASS - " in s for s in solutions), solutions  # ... and the solutions pass
    assert all("memory accesses of program" in s for s in solutions)
    masked = next(s for s in solutions if s.startswith("puzzle 2:"))
    assert "lanes masked off" in masked  # program 6 runs past the end: its masked lanes are shown
    sources = [o["text"] for c in nb.cells if "puzzle-solution" in c.metadata.get("tags", [])
               for o in c.get("outputs", []) if o.get("name") == "stdout"]
    assert len(sources) == 12 and all("@jit" in text for text in sources)  # shown on request
