"""The `--profile` view in a real browser, without a GPU: a report of the vector add of
data/ncu_probe.py (compiled here for sm_90, so its PTX and line numbers are those of the launch that
was measured) with the profile an H100 recorded for it (data/ncu_add_*). Headless Chromium checks the
per-line table, the three stalls in words, the roofline picture, the PTX -> SASS -> PTX anchors and the
hottest lines marked in the source view; the screenshot goes to tests/workbench/artifacts/ (ignored).
The hot-line marking of the source view (static page and widget) is also checked without a browser.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from test_browser import ARTIFACTS, CHROMIUM

from tileworkbench.workbench.profile import SAMPLES, from_pages
from tileworkbench.workbench.profile_view import ProfileSection, hot_lines, mark_hot
from tileworkbench.workbench.sass_link import parse_ptx, parse_sass

DATA = Path(__file__).parent / "data"
PROBE = DATA / "ncu_probe.py"


def _read(name: str) -> str:
    with gzip.open(DATA / name, "rt") as f:
        return f.read()


def _line(text: str) -> int:
    return next(i for i, line in enumerate(PROBE.read_text().splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def report():
    """The add kernel's report with its recorded H100 profile as the first section."""
    from tileworkbench.workbench import inspect
    from tileworkbench.workbench.compile_only import compile_kernel
    from tileworkbench.workbench.peaks import Peaks, datasheet_peaks

    # the kernels of the probe, at their own line numbers (the probe imports torch: not here)
    lines = PROBE.read_text().splitlines()[: _line("def case_add") - 1]
    code = "\n".join("" if line.startswith("import torch") else line for line in lines)
    namespace: dict = {}
    exec(compile(code, str(PROBE), "exec"), namespace)  # noqa: S102 - the repository's own kernels
    compiled = compile_kernel(namespace["add_kernel"], "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32",
                              "BLOCK=1024", "sm_90")
    sass = parse_sass(_read("ncu_add.sass.gz"))
    prof = from_pages(_read("ncu_add_source.csv.gz"), _read("ncu_add_raw.csv.gz"), sass,
                      "add_kernel")
    rep = inspect(compiled)
    peaks = Peaks("H100 SXM", datasheet=datasheet_peaks("H100 SXM"))
    rep.sections.insert(0, ProfileSection(prof, rep.source_lines, sass,
                                          parse_ptx(compiled.asm["ptx"]), peaks))
    return rep


def test_hottest_lines_are_marked_in_the_source_view(report):
    from tileworkbench.workbench.html_view import render_report, stage_html

    prof = report.sections[0].profile
    marks = hot_lines(report)
    store = _line("tl.store(out_ptr + offs, x + y")
    assert list(marks) == prof.hottest() and list(marks)[0] == store  # the add waits on its loads
    share = prof.lines[store].get(SAMPLES) / prof.column_total(SAMPLES)
    assert marks[store].startswith(f"hot #1: {100 * share:.0f}% of stall samples")
    static = render_report(report)
    widget_source = mark_hot(stage_html(report, "source"), marks)
    for page in (static, widget_source):
        for number in marks:
            assert page.count(f'class="twl s{number} twhot"') == 1, number
        cold = _line("mask = offs < n")
        assert f'class="twl s{cold} twhot"' not in page
        # the note follows the line's own text, inside its row
        row = page[page.index(f'class="twl s{store} twhot"'):].split("\n")[0]
        assert row.index("store(out_ptr") < row.index("\u25c0 hot #1")
    # no profile: nothing marked, the view is what it was
    plain = [s for s in report.sections if not isinstance(s, ProfileSection)]
    assert hot_lines(type("R", (), {"sections": plain})()) == {}
    assert mark_hot(stage_html(report, "source"), {}) == stage_html(report, "source")


def test_the_profile_view_in_chromium(report, tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.skip("needs chromium (.ci/browser-setup.sh)")
    pytest.importorskip("playwright")
    from playwright.sync_api import sync_playwright

    section = report.sections[0]
    links = section.links
    page_file = tmp_path / "profile.html"
    report.save_html(str(page_file))
    ARTIFACTS.mkdir(exist_ok=True)
    store = _line("tl.store(out_ptr + offs, x + y")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(java_script_enabled=False, viewport={"width": 1200, "height": 900})
        page.goto(page_file.as_uri())
        prof = page.locator("details.twsection", has_text="profile (Nsight Compute")
        assert prof.is_visible()
        # the per-line table: one row per line with counters, the hottest first by samples
        rows = prof.locator("table.twprof tr")
        assert rows.count() == 1 + len(section.profile.lines)
        hot_row = prof.locator(f"table.twprof tr.s{store}")
        assert "long_scoreboard" in hot_row.inner_text() and "tl.store" in hot_row.inner_text()
        weight = hot_row.evaluate("e => getComputedStyle(e).fontWeight")
        assert int(weight) >= 600
        # the three stalls, in words, with their lines
        items = prof.locator("ul > li").all_inner_texts()
        stalls = [t for t in items if t.startswith("stall ")]
        assert len(stalls) == 3 and all(" at line " in t for t in stalls), stalls
        assert f"line {store}" in stalls[0]
        assert any("per-line sums equal ncu's kernel totals" in t for t in items)
        # the roofline picture: a decoded PNG of a useful size
        img = prof.locator('img[alt="roofline from measured bytes and FLOPs"]')
        size = img.evaluate("e => [e.naturalWidth, e.naturalHeight]")
        assert size[0] > 200 and size[1] > 150, size
        # PTX -> SASS: the store's first PTX instruction lands on the STG it became, and back
        uid = prof.locator("div[id^=twprof]").first.get_attribute("id")
        ptx = next(p for p in section.ptx if p.line == store and "st.global" in p.text)
        target = links.ptx_to_sass[ptx.index][0]
        page.locator(f"#{uid}-p{ptx.index} a").click()
        assert page.evaluate("location.hash") == f"#{uid}-s{target}"
        sass_row = page.locator(f"#{uid}-s{target}")
        assert "STG" in sass_row.inner_text() and sass_row.is_visible()
        marked = sass_row.evaluate("e => getComputedStyle(e).backgroundColor")
        assert marked == "rgb(255, 229, 138)", marked  # the row landed on is marked
        page.screenshot(path=str(ARTIFACTS / "profile-sass-target.png"))
        back = links.sass_to_ptx[target][0]
        sass_row.locator("a").click()
        assert page.evaluate("location.hash") == f"#{uid}-p{back}"
        assert "st.global" in page.locator(f"#{uid}-p{back}").inner_text()
        assert sass_row.evaluate("e => getComputedStyle(e).backgroundColor") != marked
        assert "NOPs of padding left out" in prof.inner_text()
        assert "NOP " not in prof.locator(f"#{uid}-l{store} + div").inner_text()
        # the headline reads as a learner would say it
        assert any(t.startswith("add_kernel: 62.5 \u00b5s,") for t in items), items[0]
        # the hot line marked in the source tab too
        page.locator("details.twtab > summary", has_text="source").click()
        src = page.locator(f".twp-source .twl.s{store}.twhot")
        assert src.is_visible() and "hot #1" in src.inner_text()
        src.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "profile-source.png"))
        prof.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "profile-view.png"), full_page=True)
        browser.close()


def test_the_widgets_source_tab_marks_the_hottest_lines(report):
    pytest.importorskip("ipywidgets")
    from tileworkbench.workbench.widgets import build_widget

    view = build_widget(report).report_widget
    index = view.stage_index("source")
    view.show_tab(index)
    shown = view.tabs.children[index].value
    for number, note in hot_lines(report).items():
        assert f'class="twl s{number} twhot"' in shown and note in shown
    view.show_tab(view.stage_index("ptx"))
    ptx = view.tabs.children[view.stage_index("ptx")].value
    store = _line("tl.store(out_ptr + offs, x + y")
    assert f"s{store}" in ptx and "twhot" not in ptx  # linked to line 20, yet not marked
