"""README.md's code runs as written: its ```python blocks in a fresh process, then (in one IPython shell,
as in a notebook) the python blocks and its ```ipython cells, `%%tilekernel` among them, whose report must
pass its check and print nothing after it. Its links to files of the repository lead somewhere."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", README, flags=re.DOTALL | re.MULTILINE)


def test_the_python_blocks_run_as_written(tmp_path):
    code = blocks("python")
    assert code and "@tw.jit" in code[0]
    script = tmp_path / "readme.py"
    script.write_text("\n".join(code))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600, check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TILEWORKBENCH_CACHE_DIR":
             str(tmp_path / "cache"), "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "'ptx'" in done.stdout and ".entry add_kernel" in done.stdout, done.stdout[-2000:]


def test_the_tilekernel_cells_use_defined_names_and_print_no_return_value(capfd):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    cells = blocks("ipython")
    assert any(c.startswith("%%tilekernel") for c in cells)
    shell = InteractiveShell.instance()
    try:
        for cell in blocks("python")[:1] + cells:
            result = shell.run_cell(cell)
            assert result.success, (cell, result.error_in_exec or result.error_before_exec)
        out = capfd.readouterr().out
        assert "check: PASS" in out, out[-3000:]
        # the launch's return value (a CompiledKernel) is not printed under the report
        assert "CompiledKernel" not in out and not re.search(r"^Out\[", out, flags=re.MULTILINE), out[-2000:]
    finally:
        InteractiveShell.clear_instance()


def test_relative_links_lead_to_files():
    links = re.findall(r"\[[^\]\n]+\]\(((?!https?:|#)[^)\s]+)\)", README)
    assert "binder/README.md" in links
    for link in links:
        assert (ROOT / link).exists(), link
    assert "mybinder.org" not in README and "USER/" not in README  # no placeholder links
