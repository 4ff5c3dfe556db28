"""`tw.compile` and the on-disk cache: the same compile is served from the cache; a change of NVIDIA's
tools (ptxas installed or removed) is not, so an entry made without a cubin never stands in for one."""

from __future__ import annotations

import shutil

import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.config import config


@tw.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3.0, mask=offs < n)


SIGNATURE = {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32"}


def _compile():
    return tw.compile(scale_kernel, signature=SIGNATURE, constexprs={"BLOCK": 256}, target="sm_90")


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not installed")
def test_cache_entry_follows_the_tools(wait_for_cache_entries, monkeypatch, tmp_path):
    with_tools = _compile()
    assert not with_tools.metadata.cache_hit and with_tools.cubin is not None
    wait_for_cache_entries(1)
    again = _compile()
    assert again.metadata.cache_hit and again.cubin == with_tools.cubin
    assert again.metadata.n_regs == with_tools.metadata.n_regs

    empty = tmp_path / "no-tools"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # ptxas gone: the entry with a cubin is not this compile's
    without = _compile()
    assert not without.metadata.cache_hit and without.cubin is None and "sass" not in without.asm
    wait_for_cache_entries(2)
    assert _compile().metadata.cache_hit
    monkeypatch.undo()  # the tools are back: the first entry again, cubin and all
    monkeypatch.setattr(config, "cache_dir", tmp_path / "cache")
    back = _compile()
    assert back.metadata.cache_hit and back.cubin == with_tools.cubin


def _sass_tools_missing() -> bool:
    from tileworkbench.backends.nvptx.tools import missing_for

    return missing_for("sass") is not None


@pytest.mark.skipif(_sass_tools_missing(), reason="ptxas and nvdisasm (or cuobjdump) are needed")
def test_sass_left_for_later_is_disassembled_when_first_read_fresh_or_cached(
    wait_for_cache_entries, monkeypatch, tmp_path
):
    """With config.disassemble off (compile workers) a kernel is done, and cached, after ptxas;
    nvdisasm runs only when `.asm` or `.line_map` is read, in the process that reads it, and gives
    the SASS and line map an eager compile gives."""
    import json

    from tileworkbench.backends.nvptx import ptxas
    from tileworkbench.runtime.cache import KernelCache

    runs = []
    disassemble = ptxas.disassemble
    monkeypatch.setattr(ptxas, "disassemble", lambda cubin: runs.append(1) or disassemble(cubin))
    monkeypatch.setattr(config, "disassemble", False)
    later = _compile()
    assert later.cubin is not None and later.metadata.n_regs
    wait_for_cache_entries(1)
    (key,) = KernelCache().keys()
    assert "sass" not in json.loads(KernelCache().get(key)["asm.json"]) and not runs
    sass_lines = later.line_map["sass"]  # the line map first: it makes the stage
    assert len(runs) == 1 and sass_lines and "FMUL" in later.asm["sass"]
    assert later.asm["sass"] and len(runs) == 1  # made once

    hit = _compile()
    assert hit.metadata.cache_hit and not runs[1:]
    assert hit.asm["sass"] == later.asm["sass"] and len(runs) == 2
    assert hit.line_map["sass"] == sass_lines

    monkeypatch.setattr(config, "disassemble", True)
    monkeypatch.setattr(config, "cache_dir", tmp_path / "eager")
    eager = _compile()
    assert not eager.metadata.cache_hit
    assert eager.asm["sass"] == later.asm["sass"] and eager.line_map["sass"] == sass_lines
