"""NVIDIA's tools are found on the PATH or inside NVIDIA's pip wheels (`nvidia/cu13/bin/`, not on the
PATH), and a missing one is named with the install that brings it."""

from __future__ import annotations

import os
import sys

import pytest

from tileworkbench.backends.nvptx import tools
from tileworkbench.runtime.stage_texts import MissingStageError, StageTexts


@pytest.fixture
def wheel_site(tmp_path, monkeypatch):
    """A site folder laid out as NVIDIA's nvdisasm wheel installs it, first on sys.path."""
    exe = tmp_path / "nvidia" / "cu13" / "bin" / "nvdisasm"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\necho fake nvdisasm\n")
    exe.chmod(0o755)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "nvidia" or m.startswith("nvidia.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setenv("PATH", os.defpath)
    tools._wheel_tool.cache_clear()
    yield exe
    tools._wheel_tool.cache_clear()


def test_a_tool_inside_nvidias_wheel_is_found(wheel_site):
    assert tools.find_tool("nvdisasm") == str(wheel_site)


def test_a_missing_tool_is_named_with_its_install(monkeypatch):
    monkeypatch.setattr(
        tools, "find_tool", lambda name: "/usr/bin/ptxas" if name == "ptxas" else None
    )
    why = tools.missing_for("sass")
    assert "`nvdisasm` was not found" in why and 'pip install "tileworkbench[sass]"' in why
    assert "nvidia-cuda-nvdisasm" in why
    assert tools.missing_for("ptx") is None


def test_asm_says_why_a_stage_is_missing(monkeypatch):
    monkeypatch.setattr(tools, "find_tool", lambda name: None)
    gpu_stages = ("source", "tile", "tile-opt", "tile-gpu", "llvm", "ptx", "sass")
    asm = StageTexts({"source": "", "ptx": ""}, "sm_90", gpu_stages)
    with pytest.raises(MissingStageError, match="`ptxas` was not found") as info:
        asm["sass"]
    assert isinstance(info.value, KeyError)
    with pytest.raises(KeyError, match="compiled for interpreter, whose stages are source, tile, tile-opt"):
        StageTexts({"source": ""}, "interpreter", ("source", "tile", "tile-opt"))["ptx"]
    with pytest.raises(KeyError, match="no stage 'PTX'"):
        asm["PTX"]
    assert asm.get("sass") is None and "sass" not in asm


@pytest.mark.skipif(
    tools.find_tool("nvdisasm") is None or tools.find_tool("ptxas") is None,
    reason="needs ptxas and nvdisasm (pip install 'tileworkbench[sass]')",
)
def test_sass_with_source_lines_without_a_gpu():
    import tileworkbench as tw
    from tests.kernels.canonical_kernels import add_kernel

    signature = "x_ptr=*fp32:16,y_ptr=*fp32:16,out_ptr=*fp32:16,n_elements=i32:16"
    compiled = tw.compile(
        add_kernel,
        signature=signature,
        constexprs={"BLOCK_SIZE": 1024},
        target="sm_90",
        use_cache=False,
    )
    assert "sass" in compiled.asm and '//## File "' in compiled.asm["sass"]
    assert compiled.line_map.get("sass"), "the SASS is linked to the source lines"
