"""Fixtures for workbench tests: an IPython shell with the extension loaded (with a fake recorder,
or the runtime's real one), `tilekernel(line, cell)` to run a cell in it, and the one GPU check: a
test marked `gpu` skips where no GPU is visible.
"""

from __future__ import annotations

import functools

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "notebooks: runs a teaching notebook with nbclient (slow-ish)"
    )


@functools.cache
def _gpu_visible() -> bool:
    try:
        from tileworkbench.cuda.device import gpu_available

        return gpu_available()
    except Exception:  # noqa: BLE001 - no CuPy, no driver: no GPU
        return False


def pytest_runtest_setup(item):
    if item.get_closest_marker("gpu") is not None and not _gpu_visible():
        pytest.skip("needs an NVIDIA GPU and CuPy")


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    """Each test gets an empty cache folder (peaks, compiled kernels)."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "cache_dir", tmp_path / "cache")


@pytest.fixture
def shell():
    """A fresh-ish InteractiveShell with `%load_ext`'s magics and a FakeRecorder as `_rec`."""
    from fakes import FakeRecorder
    from IPython.core.interactiveshell import InteractiveShell

    from tileworkbench.workbench import load_ipython_extension

    ip = InteractiveShell.instance()
    load_ipython_extension(ip)
    recorder = FakeRecorder()
    ip.magics_manager.registry["TileKernelMagics"].recorder = recorder
    ip.user_ns["_rec"] = recorder
    yield ip
    ip.magics_manager.registry["TileKernelMagics"].recorder = None


@pytest.fixture
def real_shell(shell):
    """The shell with the runtime's real recorder instead of the fake one."""
    shell.magics_manager.registry["TileKernelMagics"].recorder = None
    return shell


@pytest.fixture
def tilekernel(real_shell):
    """`tilekernel(line, cell)`: run `%%tilekernel line` on `cell` in the real shell; returns the
    cell's reports (None where it made none)."""

    def run(line: str, cell: str):
        real_shell.user_ns.pop("_tilekernel_reports", None)
        real_shell.run_cell_magic("tilekernel", line, cell)
        return real_shell.user_ns.get("_tilekernel_reports")

    return run
