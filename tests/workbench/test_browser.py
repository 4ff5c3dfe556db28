"""A real browser: JupyterLab serves a notebook with `%%tilekernel` cells, headless Chromium (Playwright)
runs them: the widget report renders, a click on a source line scrolls the PTX panel to its highlighted
lines, a sweep cell shows its table, an edited and rerun cell shows what changed; screenshots are saved
to tests/workbench/artifacts/. Needs `.ci/browser-setup.sh` (apt chromium, pip jupyterlab playwright).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = os.environ.get("TILEWORKBENCH_CHROMIUM", "/usr/bin/chromium")

CELLS = [
    "%load_ext tileworkbench",
    """%%tilekernel --signature "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32" --constexprs BLOCK=1024 --target sm_90
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)""",
]
SWEEP_CELL = """%%tilekernel --target interpreter --sweep "BLOCK=256,1024 num_warps=4,8" --ref 'x + y'
import numpy as np
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def sweep_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)

n = 2000
x = np.random.default_rng().standard_normal(n).astype(np.float32)
y = np.random.default_rng().standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, np.float32)
sweep_kernel[lambda meta: (tw.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=1024)"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_notebook(folder: Path) -> Path:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell(c) for c in CELLS + [SWEEP_CELL]])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = folder / "report.ipynb"
    nbformat.write(nb, path)
    return path


def _wait_http(url: str, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"JupyterLab did not answer at {url}")


@pytest.fixture
def jupyterlab(tmp_path):
    if importlib.util.find_spec("jupyterlab") is None or not os.path.exists(CHROMIUM):
        pytest.skip("needs jupyterlab and chromium (.ci/browser-setup.sh)")
    pytest.importorskip("playwright")
    _write_notebook(tmp_path)
    port = _free_port()
    env = dict(
        os.environ,
        PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        TILEWORKBENCH_CACHE_DIR=str(tmp_path / "cache"),
        MPLBACKEND="Agg",
    )
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        "--ServerApp.token=",
        "--ServerApp.password=",
        "--ServerApp.disable_check_xsrf=True",
        f"--ServerApp.root_dir={tmp_path}",
        "--allow-root",
        "--LabApp.news_url=None",
    ]
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # no "get notified about news?" toast over the output
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    env["JUPYTERLAB_SETTINGS_DIR"] = str(tmp_path / "settings")
    log = open(tmp_path / "jupyter.log", "w")
    server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_http(f"http://127.0.0.1:{port}/api")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()


def _dismiss_news_toast(page) -> None:
    """JupyterLab asks about news in a toast that covers the output; answer it if it is there."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.locator("button", has_text="No").first.click(timeout=1500)
    except PlaywrightTimeout:
        pass


@pytest.mark.browser
def test_report_renders_and_ptx_tab_shows_ptx(jupyterlab):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{jupyterlab}/lab/tree/report.ipynb", wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        # the kernel has started when the status bar says Idle
        page.wait_for_function("document.body.innerText.includes('Idle')", timeout=60_000)
        page.click(".jp-Notebook .jp-Cell >> nth=0")
        page.keyboard.press("Shift+Enter")
        page.keyboard.press("Shift+Enter")
        tab = page.locator(".jupyter-widgets .lm-TabBar-tab", has_text="ptx").first
        tab.wait_for(timeout=90_000)
        page.screenshot(path=str(ARTIFACTS / "report-overview.png"), full_page=False)
        tab.click()
        panel = page.locator(".jupyter-widgets pre.twhl", has_text=".entry").first
        panel.wait_for(timeout=30_000)
        text = panel.inner_text()
        assert ".visible .entry add_kernel" in text or ".entry" in text
        assert "ld.global" in text
        # source-line linking: choose the `x = tl.load` line; its PTX lines get a background
        select = page.locator(".jupyter-widgets select").first
        options = [o.replace("\xa0", " ") for o in select.locator("option").all_inner_texts()]
        index = next((i for i, o in enumerate(options) if "x = tl.load" in o), None)
        assert index is not None, options
        select.select_option(index=index)
        line = options[index].split(":")[0]
        marked = page.locator(f".jupyter-widgets pre.twhl .s{line}").first
        marked.wait_for(timeout=10_000)
        # the <style> widget updates asynchronously, through the kernel
        page.wait_for_function(
            "e => getComputedStyle(e).backgroundColor === 'rgb(255, 229, 138)'",
            arg=marked.element_handle(),
            timeout=10_000,
        )
        marked_text = page.locator(f".jupyter-widgets pre.twhl .s{line}").all_inner_texts()
        assert any("ld.global" in t for t in marked_text), marked_text
        marked.scroll_into_view_if_needed()
        _dismiss_news_toast(page)
        page.screenshot(path=str(ARTIFACTS / "report-ptx.png"), full_page=False)
        browser.close()


@pytest.mark.browser
def test_static_html_tabs_and_line_links_work_without_javascript(tmp_path):
    """A saved page with JavaScript disabled: folded sections, one open at a time, and CSS-only
    source-line links."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("needs chromium (.ci/browser-setup.sh)")
    pytest.importorskip("playwright")
    from playwright.sync_api import sync_playwright

    from tileworkbench.workbench import inspect
    from tileworkbench.workbench.compile_only import compile_kernel

    namespace: dict = {}
    exec(compile(CELLS[1].split("\n", 1)[1], str(tmp_path / "k.py"), "exec"), namespace)
    (tmp_path / "k.py").write_text(CELLS[1].split("\n", 1)[1])
    compiled = compile_kernel(
        namespace["add_kernel"],
        "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32",
        "BLOCK=1024",
        "sm_90",
    )
    page_file = tmp_path / "report.html"
    inspect(compiled).save_html(str(page_file))
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(java_script_enabled=False, viewport={"width": 1200, "height": 900})
        page.goto(page_file.as_uri())
        ptx_panel = page.locator(".twp-ptx > .twpanel")
        assert not ptx_panel.is_visible()
        page.locator("details.twtab > summary", has_text="ptx").click()
        assert ptx_panel.is_visible() and "ld.global" in ptx_panel.inner_text()
        page.locator("details.twtab > summary", has_text="source").click()
        assert not ptx_panel.is_visible()  # one section at a time (`name` groups them)
        page.locator("label.twline", has_text="x = tl.load").click()
        page.locator("details.twtab > summary", has_text="ptx").click()
        line = (
            page.locator("label.twline", has_text="x = tl.load").get_attribute("for").split("-")[-1]
        )
        marked = page.locator(f".twp-ptx .s{line}").first
        color = marked.evaluate("e => getComputedStyle(e).backgroundColor")
        assert color == "rgb(255, 229, 138)", color
        marked.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "static-ptx.png"))
        browser.close()


def _run_cell(page, index: int) -> None:
    page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-InputArea-prompt").click()
    page.keyboard.press("Shift+Enter")


SCROLLED_TO_HIGHLIGHT = """([pre, line]) => {
    const hit = pre.querySelector('.s' + line);
    if (!hit || pre.scrollTop <= 0) return false;
    const box = pre.getBoundingClientRect(), row = hit.getBoundingClientRect();
    const inside = row.top >= box.top && row.bottom <= box.bottom;
    return inside && getComputedStyle(hit).backgroundColor === 'rgb(255, 229, 138)';
}"""


@pytest.mark.browser
def test_click_scrolls_ptx_sweep_table_and_rerun_diff(jupyterlab):
    """Click a source line: the PTX panel scrolls to its highlighted lines. A sweep cell shows its
    table. An edited, rerun cell shows what changed since its last run."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.goto(f"{jupyterlab}/lab/tree/report.ipynb", wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        page.wait_for_function("document.body.innerText.includes('Idle')", timeout=60_000)
        _run_cell(page, 0)
        _run_cell(page, 1)
        report = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea")
        report.locator(".lm-TabBar-tab", has_text="source").first.click(timeout=90_000)
        source_line = report.locator("pre.twhl .twl", has_text="x = tl.load").first
        source_line.wait_for(timeout=30_000)
        classes = source_line.get_attribute("class").split()
        line = next(c[1:] for c in classes if c[0] == "s" and c[1:].isdigit())
        source_line.click()  # the click chooses the line: no dropdown needed
        report.locator(".lm-TabBar-tab", has_text="ptx").first.click()
        ptx = report.locator("pre.twhl", has_text=".entry").first
        ptx.wait_for(timeout=30_000)
        page.wait_for_function(
            SCROLLED_TO_HIGHLIGHT, arg=[ptx.element_handle(), line], timeout=20_000
        )
        assert ptx.evaluate("e => e.scrollTop") > 0
        _dismiss_news_toast(page)
        report.screenshot(path=str(ARTIFACTS / "linked-ptx-scrolled.png"))

        # a sweep: one row per config, in the report's table
        _run_cell(page, 2)
        sweep = page.locator(".jp-Notebook .jp-Cell").nth(2).locator("table.twsweep")
        sweep.wait_for(timeout=240_000)
        rows = sweep.locator("tr").all_inner_texts()
        assert len(rows) == 5 and all("ok" in r for r in rows[1:]), rows
        assert "interpreter, CPU time" in rows[0]
        sweep_cell = page.locator(".jp-Notebook .jp-Cell").nth(2)
        sweep_cell.locator("div.twr", has=page.locator("table.twsweep")).first.screenshot(
            path=str(ARTIFACTS / "sweep-table.png")
        )
        # open one config's stages from the sweep
        picker = sweep_cell.locator("select", has=page.locator("option", has_text="open its stages"))
        picker.select_option(label="BLOCK=256 num_warps=8")
        opened = sweep_cell.locator(".lm-TabBar-tab", has_text="tile-opt")
        opened.nth(1).wait_for(timeout=60_000)  # the cell's own report, then the opened config's

        # edit the compile-only cell (x + y -> x * y) and run it again: the diff appears
        editor = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(CELLS[1].replace("x + y", "x * y"))
        page.keyboard.press("Shift+Enter")
        changes = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(
            "details", has_text="changed since the last run of this cell"
        )
        changes.first.wait_for(timeout=90_000)
        text = changes.first.inner_text()
        assert "mul.f32" in text or "mul.rn.f32" in text, text
        assert "add.f32" in text, text
        changes.first.scroll_into_view_if_needed()
        changes.first.screenshot(path=str(ARTIFACTS / "rerun-diff.png"))
        browser.close()


BUGGY_CELL = """
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def buggy_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n - 100
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
"""


def _launch_report(tmp_path):
    """An interpreter launch that misses its last 100 elements: a report with the mismatch map and
    the access picture of program 0."""
    import numpy as np

    from tileworkbench.config import config
    from tileworkbench.runtime.record import record_launches
    from tileworkbench.workbench.build import ReportOptions, report_for_launch
    from tileworkbench.workbench.access_map import access_map
    from tileworkbench.workbench.launch_views import add_launch_sections

    (tmp_path / "buggy.py").write_text(BUGGY_CELL)
    namespace: dict = {}
    exec(compile(BUGGY_CELL, str(tmp_path / "buggy.py"), "exec"), namespace)
    rng = np.random.default_rng()
    n = 1000
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    out = np.full(n, np.nan, np.float32)
    saved, config.interpret = config.interpret, True
    try:
        with record_launches() as launches:
            namespace["buggy_add"][(4,)](x, y, out, n, BLOCK=256)
    finally:
        config.interpret = saved
    ref = x.astype(np.float64) + y
    report = report_for_launch(launches[-1], ReportOptions(ref=ref))
    add_launch_sections(report, launches[-1], out, ref)
    # the last program is the one whose lanes the mask switches off
    report.sections.append(access_map(launches[-1], (3, 0, 0)))
    return report


@pytest.mark.browser
def test_static_html_scrolls_with_javascript_and_shows_the_new_views(tmp_path):
    """The exported page with its script: a click on a source line scrolls the PTX panel; the passes
    view opens on the first change; the access picture and mismatch map are there."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("needs chromium (.ci/browser-setup.sh)")
    pytest.importorskip("playwright")
    from playwright.sync_api import sync_playwright

    from tileworkbench.workbench import inspect
    from tileworkbench.workbench.compile_only import compile_kernel
    from tileworkbench.workbench.html_view import page as html_page

    namespace: dict = {}
    source = CELLS[1].split("\n", 1)[1]
    (tmp_path / "k.py").write_text(source)
    exec(compile(source, str(tmp_path / "k.py"), "exec"), namespace)
    compiled = compile_kernel(
        namespace["add_kernel"], "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32", "BLOCK=1024", "sm_90"
    )
    linked, launched = inspect(compiled), _launch_report(tmp_path)
    page_file = tmp_path / "views.html"
    page_file.write_text(html_page([linked, launched]))
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(page_file.as_uri())
        first = page.locator(".twr").first
        first.locator("details.twtab > summary", has_text="source").click()
        first.locator("label.twline", has_text="x = tl.load").click()
        line = first.locator("label.twline", has_text="x = tl.load").get_attribute("for")
        line = line.split("-")[-1]
        first.locator("details.twtab > summary", has_text="ptx").click()
        ptx = first.locator(".twp-ptx pre.twhl")
        page.wait_for_function(SCROLLED_TO_HIGHLIGHT, arg=[ptx.element_handle(), line], timeout=5000)
        first.locator("details.twtab > summary", has_text="passes").click()
        shown = first.locator("details.twpass[open] h4").inner_text()
        assert shown == "after coalesce", shown  # the first pass that changed the IR
        assert first.locator("details.twpass.twsame").count() >= 4
        box = first.locator(".twp-passes").bounding_box()  # its head: the list and the diff
        clip = {"x": box["x"], "y": box["y"], "width": min(box["width"], 1000), "height": 520}
        page.screenshot(path=str(ARTIFACTS / "passes-first-change.png"), clip=clip, full_page=True)
        second = page.locator(".twr").nth(1)
        access = second.locator("details.twsection", has_text="memory accesses of program (3")
        assert "lanes masked off" in access.inner_text()
        access.screenshot(path=str(ARTIFACTS / "access-map.png"))
        mismatch = second.locator("details.twsection", has_text="where the check fails")
        assert "program ids): 3" in mismatch.inner_text()
        mismatch.screenshot(path=str(ARTIFACTS / "mismatch-map.png"))
        puzzle_file = tmp_path / "puzzle.html"
        failed = _failed_puzzle(tmp_path)._repr_html_()
        puzzle_file.write_text(f"<!doctype html><body>{failed}</body>")
        page.goto(puzzle_file.as_uri())
        assert "FAIL" in page.locator("body").inner_text()
        page.locator("body > div").screenshot(path=str(ARTIFACTS / "puzzle-fail.png"))
        _sass_and_roofline_views(page, tmp_path)
        browser.close()


DOT_SOURCE = """
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    tl.store(c_ptr + m[:, None] * N + n[None, :], tl.dot(a, b))
"""


def _sass_and_roofline_views(page, tmp_path) -> None:
    """The sass tab of a tensor-core dot (HMMA lines, linked to the tl.dot line), where nvdisasm is
    installed; and the roofline of the recorded GPU results (notebook 06)."""
    from tileworkbench.backends.nvptx.tools import missing_for
    from tileworkbench.workbench import inspect
    from tileworkbench.workbench.html_view import page as html_page
    from tileworkbench.workbench.recorded import load_recorded

    load_recorded("06_roofline", ROOT / "notebooks" / "data").roofline().save(
        str(ARTIFACTS / "roofline-recorded.png")
    )
    if missing_for("sass") is not None:
        return
    import tileworkbench as tw

    (tmp_path / "dot.py").write_text(DOT_SOURCE)
    namespace: dict = {}
    exec(compile(DOT_SOURCE, str(tmp_path / "dot.py"), "exec"), namespace)
    compiled = tw.compile(namespace["dot_kernel"], signature="a_ptr=*fp16:16,b_ptr=*fp16:16,"
                          "c_ptr=*fp32:16", constexprs={"M": 64, "N": 64, "K": 32}, target="sm_80")
    (tmp_path / "sass.html").write_text(html_page([inspect(compiled)]))
    page.goto((tmp_path / "sass.html").as_uri())
    report = page.locator(".twr").first
    report.locator("details.twtab > summary", has_text="source").click()
    report.locator("label.twline", has_text="tl.dot").click()
    report.locator("details.twtab > summary", has_text="sass").click()
    sass = report.locator(".twp-sass pre.twhl")
    assert "HMMA.16816.F32" in sass.inner_text()
    line = report.locator("label.twline", has_text="tl.dot").get_attribute("for").split("-")[-1]
    page.wait_for_function(SCROLLED_TO_HIGHLIGHT, arg=[sass.element_handle(), line], timeout=5000)
    linked = sass.evaluate(SHOW_FIRST_HMMA, line)  # the tl.dot line's HMMA, in view for the picture
    assert linked, "the first HMMA line is not linked to the tl.dot line"
    report.screenshot(path=str(ARTIFACTS / "sass-hmma.png"))


SHOW_FIRST_HMMA = """(pre, line) => {
    const row = [...pre.querySelectorAll('.twl')].find(e => e.textContent.includes('HMMA'));
    pre.scrollTop = row.offsetTop - pre.offsetTop - 80;
    return row.classList.contains('s' + line);
}"""


def _failed_puzzle(folder):
    """Puzzle 2 with the classic slip: no mask on the last block's store."""
    from tileworkbench.workbench.puzzles import check_puzzle

    source = (
        "import tileworkbench as tw\nimport tileworkbench.language as tl\n"
        "@tw.jit\ndef add_mask_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):\n"
        "    offs = tl.program_id(0) * B0 + tl.arange(0, B0)\n"
        "    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=offs < N0) + 10.0)\n"
    )
    (folder / "puzzle.py").write_text(source)
    namespace: dict = {}
    exec(compile(source, str(folder / "puzzle.py"), "exec"), namespace)
    return check_puzzle(
        namespace["add_mask_kernel"], lambda x: x + 10, {"x": (200,)}, (200,), (7,),
        {"N0": 200}, {"B0": 32}, hint="mask the store too: mask=offs < N0",
    )
