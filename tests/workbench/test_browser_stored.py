"""The shipped notebooks as a newcomer first meets them, in headless Chromium with no network: opened
in JupyterLab BEFORE Run All (untrusted: JupyterLab's sanitizer drops each report's <style> and
<script>), and exported with an offline `nbconvert --to html`. Each report must show its sections one
at a time (the overview open, every other section folded under its own title) with a readable
panel: no bare radio buttons, no tab names run together, no stack of every panel. Screenshots go to
tests/workbench/artifacts/stored/ (ignored). Needs `.ci/browser-setup.sh`.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import subprocess
import sys

import pytest
from test_browser import ARTIFACTS, CHROMIUM, ROOT, _free_port, _wait_http

NOTEBOOKS = sorted((ROOT / "notebooks").glob("0*.ipynb"))
SHOTS = ARTIFACTS / "stored"

# Every report (`.twr`) of the page: its sections, which are open, what shows. A panel "shows" when
# it is rendered with a size; a radio "shows" the same way (JupyterLab keeps <input>: inline styles must hide it).
REPORTS = """roots => roots.map(root => {
    const tabs = [...root.querySelectorAll(':scope > .twpanels > details.twtab')];
    // checkVisibility: a closed <details>' content is laid out but skipped (content-visibility)
    const shown = e => e.checkVisibility() && e.getBoundingClientRect().height > 0;
    return {
        titles: tabs.map(t => t.querySelector(':scope > summary').innerText.trim()),
        tops: tabs.map(t => t.querySelector(':scope > summary').getBoundingClientRect().top),
        open: tabs.filter(t => t.open).length,
        shownPanels: tabs.filter(t => shown(t.querySelector(':scope > .twpanel'))).length,
        panelText: tabs.filter(t => t.open).map(t => t.innerText.length)[0] || 0,
        radiosShown: [...root.querySelectorAll('input')].filter(shown).length,
        styles: root.querySelectorAll('style').length,
    };
})"""


def _check_reports(reports: list[dict], where: str, sanitized: bool) -> None:
    assert reports, f"{where}: no report"
    for i, report in enumerate(reports):
        name = f"{where}, report {i}"
        assert len(report["titles"]) >= 3 and report["titles"][0] == "overview", (name, report)
        assert report["open"] == 1 and report["shownPanels"] == 1, (name, report)
        assert report["panelText"] > 40, (name, report)  # a panel with something to read
        assert report["radiosShown"] == 0, (name, report)
        # one title a line, not run together
        tops = report["tops"]
        assert all(b - a >= 10 for a, b in itertools.pairwise(tops)), (name, tops)
        if sanitized:  # proof the page is the untrusted view: the sanitizer took the <style>
            assert report["styles"] == 0, (name, report)


def _offline(context, allowed: str) -> list[str]:
    """Abort every request that does not start with `allowed`; the aborted URLs."""
    blocked: list[str] = []

    def route(request_route):
        url = request_route.request.url
        if url.startswith(allowed):
            request_route.continue_()
        else:
            blocked.append(url)
            request_route.abort()

    context.route("**/*", route)
    return blocked


@pytest.fixture
def stored_lab(tmp_path):
    """JupyterLab serving a fresh copy of the shipped notebooks (as `tileworkbench lab` makes it),
    with its own empty trust database: nothing is trusted."""
    if importlib.util.find_spec("jupyterlab") is None or not os.path.exists(CHROMIUM):
        pytest.skip("needs jupyterlab and chromium (.ci/browser-setup.sh)")
    pytest.importorskip("playwright")
    from tileworkbench.workbench.lab import copy_notebooks

    folder = tmp_path / "notebooks"
    copy_notebooks(folder)
    port = _free_port()
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    # every cell in the page, not only those scrolled to: each report can be checked
    notebook_settings = tmp_path / "settings" / "@jupyterlab" / "notebook-extension"
    notebook_settings.mkdir(parents=True)
    (notebook_settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    env = dict(
        os.environ,
        PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
        JUPYTER_DATA_DIR=str(tmp_path / "data"),  # the notary's database: empty, nothing trusted
        TILEWORKBENCH_CACHE_DIR=str(tmp_path / "cache"),
    )
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
        "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
        f"--ServerApp.root_dir={folder}", "--allow-root", "--LabApp.news_url=None",
    ]
    with open(tmp_path / "jupyter.log", "w") as log:
        server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_http(f"http://127.0.0.1:{port}/api")
            yield f"http://127.0.0.1:{port}"
        finally:
            server.terminate()
            server.wait(timeout=20)


@pytest.mark.browser
def test_stored_notebooks_read_well_untrusted_before_run_all(stored_lab):
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1300, "height": 1000})
        _offline(context, stored_lab)
        for path in NOTEBOOKS:
            page = context.new_page()  # `?reset`: a fresh workspace, this notebook's tab alone
            page.goto(f"{stored_lab}/lab/tree/{path.name}?reset", wait_until="domcontentloaded")
            notebook = page.locator(".jp-NotebookPanel", has_text=path.stem[:2]).last
            notebook.locator(".jp-Cell").first.wait_for(timeout=60_000)
            first = notebook.locator(".jp-OutputArea .twr").first
            first.wait_for(timeout=60_000)
            page.wait_for_timeout(500)  # the other outputs render
            reports = notebook.locator(".jp-OutputArea .twr")
            _check_reports(reports.evaluate_all(REPORTS), path.name, sanitized=True)
            first.scroll_into_view_if_needed()
            first.screenshot(path=str(SHOTS / f"lab-{path.stem}.png"))
            # a folded section opens on a click, with a readable panel
            ptx = first.locator("details.twtab > summary", has_text="ptx")
            if ptx.count():
                ptx.first.click()
                panel = first.locator("details.twp-ptx > .twpanel")
                assert panel.is_visible() and ".entry" in panel.inner_text()
            page.close()
        browser.close()


@pytest.mark.browser
def test_offline_nbconvert_export_shows_one_section_at_a_time(tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.skip("needs chromium (.ci/browser-setup.sh)")
    pytest.importorskip("playwright")
    pytest.importorskip("nbconvert")
    from playwright.sync_api import sync_playwright

    out = tmp_path / "html"
    done = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--output-dir", str(out)]
        + [str(p) for p in NOTEBOOKS],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1300, "height": 1000})
        blocked = _offline(context, "file://")
        page = context.new_page()
        for path in NOTEBOOKS:
            page.goto((out / f"{path.stem}.html").as_uri())
            reports = page.locator(".twr")
            _check_reports(reports.evaluate_all(REPORTS), f"{path.stem}.html", sanitized=False)
            first = reports.first
            first.screenshot(path=str(SHOTS / f"nbconvert-{path.stem}.png"))
            # another section opened: the one open before folds (one at a time)
            second = first.locator(":scope > .twpanels > details.twtab > summary").nth(1)
            second.click()
            state = reports.evaluate_all(REPORTS)[0]
            assert state["open"] == 1 and state["shownPanels"] == 1, state
            assert first.locator(":scope > .twpanels > details.twtab").nth(1).get_attribute(
                "open") is not None
        assert blocked, "the export asked for nothing online (its CDN scripts): not offline?"
        browser.close()
