"""A real browser: JupyterLab serves a notebook with a `%%tilekernel` cell, headless Chromium (Playwright)
runs it, the widget report renders, a click on the PTX tab shows PTX, and a screenshot is saved to
tests/workbench/artifacts/. Needs `.ci/browser-setup.sh` (apt chromium, pip jupyterlab playwright).
"""

from __future__ import annotations

import os
import shutil
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_notebook(folder: Path) -> Path:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell(c) for c in CELLS])
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
    if shutil.which("jupyter") is None or not os.path.exists(CHROMIUM):
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
    """The nbconvert/GitHub view: CSS-only tabs and source-line links, JavaScript disabled."""
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
        ptx_panel = page.locator(".twp-ptx")
        assert not ptx_panel.is_visible()
        page.locator(".twtabs label", has_text="ptx").click()
        assert ptx_panel.is_visible() and "ld.global" in ptx_panel.inner_text()
        page.locator(".twtabs label", has_text="source").click()
        page.locator("label.twline", has_text="x = tl.load").click()
        page.locator(".twtabs label", has_text="ptx").click()
        line = (
            page.locator("label.twline", has_text="x = tl.load").get_attribute("for").split("-")[-1]
        )
        marked = page.locator(f".twp-ptx .s{line}").first
        color = marked.evaluate("e => getComputedStyle(e).backgroundColor")
        assert color == "rgb(255, 229, 138)", color
        marked.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "static-ptx.png"))
        browser.close()
