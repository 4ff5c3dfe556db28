"""The README's first commands, as a new user types them, in a fresh virtual environment made from a
copy of this checkout: `pip install ".[lab]"` and `tileworkbench lab` (JupyterLab starts on the
copied notebooks), then `tileworkbench demo`. Slow (pip downloads JupyterLab and the rest, a few
minutes): run with TILEWORKBENCH_TEST_README=1 (`.ci/run` sets it). The README's test command is
what `.ci/run` runs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
OPEN = 'python3 -m venv .venv && . .venv/bin/activate && pip install ".[lab]" && tileworkbench lab'
DEMO = "tileworkbench demo --out /tmp/tileworkbench-demo.html"

pytestmark = pytest.mark.skipif(
    os.environ.get("TILEWORKBENCH_TEST_README") != "1",
    reason="slow (a fresh venv with JupyterLab): set TILEWORKBENCH_TEST_README=1",
)


def test_the_readme_still_says_these_commands():
    assert f"\n    {OPEN}\n" in README and f"\n    {DEMO}\n" in README


def _checkout_copy(folder: Path) -> Path:
    """The tracked files of this checkout (a clone's content), without its venv or build outputs."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if files.returncode != 0:
        pytest.skip("not a git checkout")
    for name in files.stdout.splitlines():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, folder / name)
    return folder


def test_install_open_the_workbench_and_run_the_demo(tmp_path):
    clone = _checkout_copy(tmp_path / "tileworkbench")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(BROWSER="true", JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter"))  # no browser opens
    lab = subprocess.Popen(
        ["bash", "-c", OPEN], cwd=clone, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    output = []
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            line = lab.stdout.readline()
            if not line and lab.poll() is not None:
                break
            output.append(line)
            if "http://127.0.0.1:" in line or "http://localhost:" in line:
                break
    finally:
        if lab.poll() is None:  # JupyterLab is serving: stop it (and its kernels)
            os.killpg(lab.pid, signal.SIGTERM)
        lab.wait(timeout=60)
    text = "".join(output)
    assert "http://" in text and "/lab" in text, text[-3000:]
    assert (clone / "tileworkbench-notebooks" / "00_start_here.ipynb").is_file()
    demo = DEMO.replace("/tmp/tileworkbench-demo.html", str(tmp_path / "demo.html"))
    done = subprocess.run(
        ["bash", "-c", f". .venv/bin/activate && {demo}"], cwd=clone, env=env,
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    page = (tmp_path / "demo.html").read_text()
    assert 'class="twr"' in page and "PASS" in page
