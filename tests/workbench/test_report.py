"""The report's views: widget tabs, pass view, source-line linking, static HTML and text."""

from __future__ import annotations

import re

import numpy as np
import pytest
from fakes import FIRST_LINE, PTX, fake_add_compiled, fake_add_launch

from tileworkbench.workbench import inspect
from tileworkbench.workbench.highlight import render_stage


def _widgets():
    pytest.importorskip("ipywidgets")


LOAD_X_LINE = FIRST_LINE + 5  # `x = tl.load(x_ptr + offs, mask=mask)`


@pytest.fixture
def report():
    return inspect(fake_add_compiled("sm_90"))


def test_widget_has_a_tab_per_stage_holding_that_stage(report):
    _widgets()
    view = report.widget().report_widget
    assert view.tabs.titles == ("overview", "source", "tile", "tile-opt", "ptx", "passes")
    ptx_index = view.stage_index("ptx")
    assert view.tabs.children[ptx_index].value == ""  # rendered on first view only
    view.tabs.selected_index = ptx_index
    html = view.tabs.children[ptx_index].value
    assert "ld" in html and ".global" in html and "tt.load" not in html
    view.tabs.selected_index = view.stage_index("tile-opt")
    tile_html = view.tabs.children[view.stage_index("tile-opt")].value
    assert "tt.load" in tile_html and "ld.global" not in tile_html


def test_line_linking_highlights_every_stage(report):
    _widgets()
    view = report.widget().report_widget
    lines = view.select_line(LOAD_X_LINE)
    tile = report.asm["tile-opt"].splitlines()
    assert lines["tile-opt"] and all("y_ptr" not in tile[i - 1] for i in lines["tile-opt"])
    assert any("tt.load" in tile[i - 1] for i in lines["tile-opt"])
    ptx = PTX.split("\n")
    assert [ptx[i - 1].strip() for i in lines["ptx"]] == ["ld.global.f32 %f1, [%rd1];"]
    assert f".s{LOAD_X_LINE} " in view.style.value
    # the stage HTML carries the class on exactly the mapped lines
    stage = render_stage(report.asm["tile-opt"], "tile-opt", report.line_map["tile-opt"])
    marked = [n for n, row in enumerate(stage.split("\n"), 1) if f"s{LOAD_X_LINE}" in row]
    assert marked == lines["tile-opt"]
    view.line_picker.value = LOAD_X_LINE + 1  # the picker drives the same style
    assert f".s{LOAD_X_LINE + 1} " in view.style.value
    view.line_picker.value = None
    assert ".s" + str(LOAD_X_LINE) not in view.style.value.split("*/")[-1]


def test_pass_view_shows_ir_and_diff(report):
    _widgets()
    report.passes = [("tile", "a = 1\nb = 2\n"), ("cse", "a = 1\n")]
    view = report.widget().report_widget
    view.pass_picker.value = 1
    assert "-b = 2" in view.pass_diff.value and "after" not in view.pass_diff.value.lower()
    view.pass_picker.value = 0
    assert "(nothing)" in view.pass_diff.value


def test_static_html_folds_every_stage_and_reads_without_a_stylesheet(report):
    page = report._repr_html_()
    uid = re.search(r'<div class="twr" id="(twr\d+)"', page).group(1)
    opened = re.findall(r'<details class="twtab twp-([\w-]+)" name="' + uid + r'-tab"( open)?>', page)
    assert [key for key, _ in opened][:1] == ["overview"] and [o for _, o in opened].count(" open") == 1
    assert {"source", "tile", "tile-opt", "ptx", "passes"} <= {key for key, _ in opened}
    ptx_panel = page.split('class="twtab twp-ptx"')[1].split('class="twtab')[0]
    assert "ld" in ptx_panel and "tt.func" not in ptx_panel
    assert "max-height: 520px" in ptx_panel  # inline: the sanitizer keeps it, drops <style>
    # what a sanitizer leaves (no <style>, no <script>): the radios stay hidden (attribute, style)
    bare = re.sub(r"<(style|script)>.*?</\1>", "", page, flags=re.DOTALL)
    radios = re.findall(r"<input [^>]*>", bare)
    assert radios and all('hidden style="display: none"' in r for r in radios)
    assert f"#{uid}-src-{LOAD_X_LINE}:checked ~ .twpanels .s{LOAD_X_LINE}" in page
    assert f'for="{uid}-src-{LOAD_X_LINE}"' in page  # the source line is its clickable label
    assert page.count("<script") == 1  # progressive enhancement: scrolling; CSS alone links lines


def test_launch_report_html_embeds_roofline_png():
    launch = fake_add_launch(n=4096)
    report = inspect(launch, bench=5, ref=launch.args["x_ptr"] + launch.args["y_ptr"])
    page = report._repr_html_()
    assert "data:image/png;base64," in page and "PASS" in page
    text = repr(report)
    assert "grid=(4, 1, 1)" in text and "check: PASS" in text and "time:" in text


def test_mimebundle_outside_a_kernel_is_html_and_text(report):
    bundle = report._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert bundle["text/plain"].startswith("add_kernel [sm_90]")


def test_long_ir_is_capped():
    text = "\n".join(f"%{i} = arith.addf %a, %b : f32" for i in range(20000))
    html = render_stage(text, "tile", max_lines=1000)
    assert html.count('class="twl') == 1000 and "first 1000 of 20000 lines" in html


def test_fp32_error_of_tf32_size_gets_a_hint():
    from tileworkbench.workbench.check import compare

    rng = np.random.default_rng(3)
    ref = rng.standard_normal((64, 64))
    out = (ref * (1 + rng.uniform(-1e-3, 1e-3, ref.shape))).astype(np.float32)
    result = compare(out, ref, dot_dtype="tf32")
    assert not result.passed and "tf32" in result.hint
    assert compare(out, ref).hint is None, "no tl.dot: the tf32 hint is not earned"
    out_exact = ref.astype(np.float32)
    assert compare(out_exact, ref).passed


def test_autotune_table_rows():
    from tileworkbench.workbench.build import autotune_rows

    rows = autotune_rows(
        {
            "BLOCK=64": {"ms": 0.5},
            "BLOCK=128": {"ms": 0.3, "compile_s": 1.25, "bench_s": 0.5, "notes": ["attempt 2"],
                          "where": {"compiled": "pid 4711@node2", "timed": "GPU 1"}},
            "BLOCK=4096": {"error": "out of resource: shared memory"},
            "BLOCK=8": {"pruned": "early_config_prune"},
            "BLOCK=32": {"screen_ms": 0.9, "screen_s": 0.03, "load_s": 0.01, "finalist": False},
        }
    )
    assert [r.config for r in rows[:2]] == ["BLOCK=128", "BLOCK=64"] and rows[0].status == "best"
    screened = rows[2]  # screened out (not a finalist): after the timed configs, before failures
    assert screened.status == "screened" and "screen 0.9 ms" in screened.reason
    assert screened.cost() == "load 0.01 s, screen 0.03 s"
    assert {r.status for r in rows[3:]} == {"failed", "pruned"}
    assert rows[0].cost() == "compile 1.25 s, bench 0.50 s" and rows[1].cost() == ""
    assert rows[0].where == "compiled pid 4711@node2, timed GPU 1, attempt 2"
    from tileworkbench.workbench.html_view import autotune_html

    page = autotune_html(rows)
    assert "<th>cost</th><th>where</th>" in page and "compiled pid 4711@node2" in page
