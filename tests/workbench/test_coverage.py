"""The whole-grid coverage view: elements no program wrote, elements two programs wrote and which
ones, as text and picture; from the interpreter's recording hook, the puzzles' checker and a
`%%tilekernel` report."""

from __future__ import annotations

import numpy as np
import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.backends.interpreter.coverage import record_coverage
from tileworkbench.workbench.coverage import NEVER, TWICE, CoverageSection, coverage_image

SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


@tw.jit
def strided_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr, STEP: tl.constexpr):
    offs = tl.program_id(0) * STEP + tl.arange(0, BLOCK)  # STEP < BLOCK: blocks overlap
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@tw.jit
def copy_2d(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    rows = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = rows[:, None] * n + cols[None, :]
    mask = (rows[:, None] < n) & (cols[None, :] < n)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def _coverage(kernel, n, grid, shape, **constexprs):
    compiled = tw.compile(kernel, SIG, constexprs, target="interpreter")
    x = np.random.default_rng().standard_normal(shape).astype(np.float32)
    out = np.full(shape, np.nan, np.float32)
    cover = record_coverage(compiled.ir, [x, out, n], grid, ["x_ptr", "out_ptr", "n"])
    written = cover.written["out_ptr"].count > 0
    # the run is a real one: what it counts as written is exactly what it wrote
    assert np.array_equal(out[written], x[written]) and np.isnan(out[~written]).all()
    return cover


def test_a_short_grid_leaves_the_tail_unwritten():
    cover = _coverage(strided_copy, 100, (3,), (100,), BLOCK=32, STEP=32)  # needs 4 programs
    out = cover.written["out_ptr"]
    assert list(cover.written) == ["out_ptr"] and cover.error is None  # loads are not writes
    assert (out.count[:96] == 1).all() and (out.count[96:] == 0).all()
    assert out.first[40] == 1 and out.pid_of(int(out.first[95])) == (2, 0, 0)
    text = CoverageSection(cover).text()
    assert (
        text[0]
        == "out_ptr[100]: 100 elements: 96 written by one program, 4 by none, 0 by two or more"
    )
    assert text[1] == "  never written: out_ptr[96]..out_ptr[99]"
    assert not CoverageSection(cover).complete


def test_overlapping_blocks_name_both_programs():
    cover = _coverage(strided_copy, 100, (4,), (100,), BLOCK=32, STEP=30)
    out = cover.written["out_ptr"]
    assert (out.count[[30, 31, 60, 61, 90, 91]] == 2).all() and out.count.sum() == 100 + 6
    text = CoverageSection(cover).text()
    assert "0 by none, 6 by two or more" in text[0]
    assert "  out_ptr[30] written by programs (0, 0, 0) and (1, 0, 0)" in text
    assert "  out_ptr[91] written by programs (2, 0, 0) and (3, 0, 0)" in text


def test_two_dimensional_grid_names_programs_as_x_y():
    cover = _coverage(copy_2d, 40, (2, 1), (40, 40), BLOCK=32)  # rows 32..39 have no program
    out = cover.written["out_ptr"]
    assert (
        out.count.shape == (40, 40) and (out.count[:32] == 1).all() and (out.count[32:] == 0).all()
    )
    assert out.pid_of(int(out.first[5, 35])) == (1, 0, 0)
    text = CoverageSection(cover).text()
    assert "1280 written by one program, 320 by none" in text[0]
    assert "never written: out_ptr[32, 0]..out_ptr[39, 39]" in text[1]


def test_picture_marks_unwritten_dark_and_overlaps_red_even_when_binned():
    cover = _coverage(strided_copy, 100, (4,), (100,), BLOCK=32, STEP=30)
    image, bins = coverage_image(cover.written["out_ptr"])
    assert bins == (1, 1) and tuple(image[0, 30]) == TWICE and tuple(image[0, 0]) != TWICE
    n = 100_003  # binned: one cell holds many elements; a single missing element still shows
    cover = _coverage(strided_copy, n, (tw.cdiv(n, 1024),), (n,), BLOCK=1024, STEP=1024)
    out = cover.written["out_ptr"]
    out.count[777] = 0
    image, (bin_r, bin_c) = coverage_image(out)
    assert bin_r > 1 and tuple(image[777 // 64 // bin_r, 777 % 64 // bin_c]) == NEVER
    assert (image == NEVER).all(axis=2).sum() == 1
    page = CoverageSection(cover)._repr_html_()
    assert 'alt="coverage map"' in page and "written by none" not in page


def test_puzzle_checker_shows_coverage_on_a_failure():
    from tileworkbench.workbench.puzzle_set import check

    @tw.jit
    def forgets_last_row_block(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
        i = tl.program_id(0) * B0 + tl.arange(0, B0)
        j = tl.program_id(1) * B1 + tl.arange(0, B1)
        x = tl.load(x_ptr + i, mask=i < N0)
        y = tl.load(y_ptr + j, mask=j < N1)
        mask = (j[:, None] < N1 - 26) & (i[None, :] < N0)  # drops the last 26 rows
        tl.store(z_ptr + j[:, None] * N0 + i[None, :], x[None, :] + y[:, None], mask=mask)

    result = check(4, forgets_last_row_block)
    assert not result.passed and "2600 never written" in result.summary
    text = repr(result)
    assert "which programs wrote each output element" in text
    assert "z_ptr[90, 100]: 9000 elements: 6400 written by one program, 2600 by none" in text
    assert "never written: z_ptr[64, 0]..z_ptr[89, 99]" in text


CELL = """
import numpy as np
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

n = 1000
x = np.random.default_rng().standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, np.float32)
copy_kernel[(tw.cdiv(n, 256) - 1,)](x, out, n, BLOCK=256)
"""


def test_workbench_report_shows_coverage_of_a_failed_check(tilekernel):
    pytest.importorskip("IPython")
    report = tilekernel("--target interpreter --ref x", CELL)[0]
    section = next(s for s in report.sections if isinstance(s, CoverageSection))
    assert "768 written by one program, 232 by none" in section.text()[0]
    assert "never written: out_ptr[768]..out_ptr[999]" in section.text()[1]
    assert "coverage map" in report._repr_html_()
    again = report.coverage()  # on request, also for a launch whose check passed
    assert again.text() == section.text()
