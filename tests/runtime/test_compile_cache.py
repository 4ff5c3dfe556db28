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
