"""Fixtures for workbench tests: an IPython shell with the extension loaded and a fake recorder."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "notebooks: runs a teaching notebook with nbclient (slow-ish)"
    )


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
