"""Shared fixture of the NVPTX tests: kernels compiled once per (case, arch) for the whole session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from nvptx_kernels import compile_case

_COMPILED: dict[tuple[str, str], object] = {}


@pytest.fixture(scope="session")
def compiled():
    """`compiled(name, arch)`: the CompiledKernel of nvptx_kernels.CASES[name] for `arch`, cached."""
    def get(name: str, arch: str = "sm_90"):
        key = (name, arch)
        if key not in _COMPILED:
            _COMPILED[key] = compile_case(name, arch)
        return _COMPILED[key]
    return get
