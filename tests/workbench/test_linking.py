"""Linking that lands: the passes view diffs modulo SSA renaming, opens on the first pass that changed
something and marks the others; code lines of every view carry the `sN` classes the scroller uses."""

from __future__ import annotations

import re

import pytest

from tileworkbench.workbench.ssa_diff import (
    changed,
    diff_rows,
    first_changed_pass,
    ir_line_map,
    pass_changes,
)

BEFORE = """\
tt.func @k(%x: !tt.ptr<f32>) {  loc("k.py":3)
  %0 = arith.constant 1 : i32  loc("k.py":4)
  %1 = arith.constant 1 : i32  loc("k.py":5)
  %2 = arith.addi %0, %1 : i32  loc("k.py":6)
  %3 = arith.muli %2, %2 : i32  loc("k.py":7)
  tt.return  loc("k.py":3)
}"""

# cse merged the two constants: every later value is renumbered
AFTER = """\
tt.func @k(%x: !tt.ptr<f32>) {  loc("k.py":3)
  %0 = arith.constant 1 : i32  loc("k.py":4)
  %1 = arith.addi %0, %0 : i32  loc("k.py":6)
  %2 = arith.muli %1, %1 : i32  loc("k.py":7)
  tt.return  loc("k.py":3)
}"""


def test_renumbering_alone_is_no_change():
    renamed = BEFORE.replace("%3", "%9").replace("%2", "%7")
    assert not changed(BEFORE, renamed)
    assert changed(BEFORE, AFTER)


def test_only_real_changes_show():
    rows = [r for r in diff_rows(BEFORE, AFTER) if r.kind != "="]
    removed = [r.text for r in rows if r.kind == "-"]
    added = [r.text for r in rows if r.kind == "+"]
    # the dropped constant and the add whose operands changed; the renumbered muli is not a change
    assert any("arith.constant" in t for t in removed)
    assert any("arith.addi %0, %0" in t for t in added)
    assert not any("muli" in t for t in removed + added)


def test_swapped_operands_are_a_change():
    swapped = BEFORE.replace("arith.addi %0, %1", "arith.addi %1, %0")
    assert changed(BEFORE, swapped)


def test_passes_view_opens_on_first_change_and_marks_the_rest():
    passes = [("tile", BEFORE), ("canonicalize", BEFORE), ("cse", AFTER), ("dce", AFTER)]
    assert pass_changes(passes) == [True, False, True, False]
    assert first_changed_pass(passes) == 2


def test_ir_line_map_reads_locs():
    assert ir_line_map(BEFORE)[3] == [1, 6]
    assert ir_line_map(BEFORE)[7] == [5]


@pytest.fixture
def report():
    from fakes import fake_add_compiled

    from tileworkbench.workbench import inspect

    return inspect(fake_add_compiled())


def test_static_html_passes_panel_links_lines_and_opens_on_a_change(report):
    report.passes = [("tile", BEFORE), ("canonicalize", BEFORE), ("cse", AFTER)]
    page = report._repr_html_()
    uid = re.search(r'id="(twr\d+)"', page).group(1)
    assert f'<details class="twpass twpp-2" name="{uid}-pass" open>' in page
    assert f'<details class="twpass twpp-1 twsame" name="{uid}-pass">' in page
    assert page.count(f'name="{uid}-pass" open') == 1
    passes = page.split("twpp-0")[1]
    assert 'class="twl  s7"' in passes or re.search(r'class="twl[^"]* s7"', passes)
    assert "twScrollAll" in page  # the scroller, which only looks the `sN` classes up


def test_widget_opens_passes_on_first_change_and_clicks_select_lines(report):
    pytest.importorskip("ipywidgets")
    report.passes = [("tile", BEFORE), ("canonicalize", BEFORE), ("cse", AFTER)]
    view = report.widget().report_widget
    assert view.pass_picker.value == 2
    assert "changed nothing" in view.pass_picker.options[1][0]
    line = report.linked_lines()[0]
    lines = view.select_line(line)  # what a click on a code line (through the linker) does
    assert lines and f".s{line} " in view.style.value
    assert view.line_picker.value == line
    if view.linker is not None:  # anywidget installed: the browser scrolls on this value
        assert view.linker.line == line
        view.linker.line = None
        assert view.line_picker.value is None


def test_debug_locations_are_not_changes():
    moved = BEFORE.replace('"k.py"', '"3352607288.py"').replace(":7)", ":8)")
    assert not changed(BEFORE, moved)
    ptx = '.file 1 "/tmp/ipykernel_1/2260777261.py"\n.loc 1 11 30\nadd.f32 %f3, %f1, %f2;'
    assert not changed(ptx, ptx.replace("2260777261", "99").replace("11 30", "12 30"))
    assert changed(ptx, ptx.replace("add.f32", "mul.f32"))
