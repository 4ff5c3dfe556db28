"""Shared fixture of the NVPTX tests: kernels compiled once per (case, arch) for the whole session."""

from __future__ import annotations


import pytest

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


@pytest.fixture(scope="module")
def hopper_cp():
    """CuPy where the default target has TMA and wgmma (sm_90a, sm_100a); else the test skips."""
    from tileworkbench.runtime.compiler import resolve_target
    from tileworkbench.cuda.device import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible (CuPy or a CUDA device is missing)")
    if resolve_target(None) not in ("sm_90a", "sm_100a"):
        pytest.skip("TMA and wgmma need sm_90a")
    return pytest.importorskip("cupy")


@pytest.fixture
def tma_with_cupy_scratch(monkeypatch, hopper_cp):
    """TMA on; CuPy memory is the scratch of descriptors made in kernels (`tw.set_allocator`)."""
    import tileworkbench as tw
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)
    tw.set_allocator(lambda size, align, stream: hopper_cp.empty(size, dtype=hopper_cp.uint8))
    yield
    tw.set_allocator(None)
