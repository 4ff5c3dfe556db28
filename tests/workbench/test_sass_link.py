"""PTX <-> SASS linking on real kernels: compiled here, assembled by ptxas and disassembled by nvdisasm
(the `sass` extra), each tensor-core, async-copy and global-memory PTX instruction must land on the
SASS instruction it became, on the same source line, in order, and back."""

from __future__ import annotations

import inspect

import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.backends.nvptx.tools import find_tool
from tileworkbench.workbench.sass_link import (
    link,
    parse_ptx,
    parse_sass,
    pc_lines,
    with_ptx_lines,
)

pytestmark = pytest.mark.skipif(
    find_tool("ptxas") is None or find_tool("nvdisasm") is None,
    reason="needs ptxas and nvdisasm (pip install 'tileworkbench[sass]')")


@tw.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@tw.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, K, stride_am, stride_bk, stride_cm,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(tl.cdiv(K, BK)):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16))


MM_SIG = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "K": "i32:16",
          "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}


def _line_of(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _compiled(arch):
    c = tw.compile(mm_kernel, signature=MM_SIG, constexprs={"BM": 128, "BN": 128, "BK": 32},
                   target=arch, num_warps=4, num_stages=3, use_cache=False)
    return parse_ptx(c.asm["ptx"]), parse_sass(c.asm["sass"]), c


def _check_family(ptx, sass, links, family, mnemonic):
    ps = [p for p in ptx if p.family == family]
    ss = [s for s in sass if s.mnemonic == mnemonic]
    assert ps and ss, f"the kernel has no {family} / {mnemonic}"
    for p in ps:
        targets = links.ptx_to_sass.get(p.index)
        assert targets, f"{p.text} links to no SASS"
        for t in targets:
            assert sass[t].mnemonic == mnemonic
            assert p.index in links.sass_to_ptx[t]  # and back
        if any(s.line == p.line for s in ss):  # its line has such SASS: it links there
            assert any(sass[t].line == p.line for t in targets), p.text
    for s in ss:
        assert links.sass_to_ptx.get(s.index), f"{s.text} links to no PTX"
    # in order: the k-th PTX instruction of the family on a line reaches SASS no earlier than the
    # (k-1)-th did
    for line in {p.line for p in ps}:
        firsts = [links.ptx_to_sass[p.index][0] for p in ps if p.line == line]
        assert firsts == sorted(firsts)


def test_mma_sync_cp_async_and_ldmatrix_link_on_sm80():
    ptx, sass, _ = _compiled("sm_80")
    links = link(ptx, sass)
    _check_family(ptx, sass, links, "mma", "HMMA")
    _check_family(ptx, sass, links, "cp.async", "LDGSTS")
    _check_family(ptx, sass, links, "ldmatrix", "LDSM")
    _check_family(ptx, sass, links, "st.global", "STG")


def test_wgmma_links_to_hgmma_on_sm90a():
    ptx, sass, _ = _compiled("sm_90a")
    links = link(ptx, sass)
    _check_family(ptx, sass, links, "wgmma", "HGMMA")
    _check_family(ptx, sass, links, "cp.async", "LDGSTS")
    dot_line = _line_of(mm_kernel, "acc = tl.dot(")
    assert {p.line for p in ptx if p.family == "wgmma"} == {dot_line}
    # nvdisasm's line table may give HGMMAs the loop's line (ptxas schedules the loop counter's
    # uniform adds among them); the workbench's lines, through their PTX, put all on the dot's
    hgmma = [s for s in with_ptx_lines(sass, ptx) if s.mnemonic == "HGMMA"]
    assert hgmma and all(s.line == dot_line for s in hgmma)


def test_global_loads_link_to_ldg_and_every_sass_has_a_line():
    c = tw.compile(add_kernel, signature={"x_ptr": "*fp32:16", "y_ptr": "*fp32:16",
                                          "out_ptr": "*fp32:16", "n": "i32"},
                   constexprs={"BLOCK": 1024}, target="sm_90", use_cache=False)
    ptx, sass = parse_ptx(c.asm["ptx"]), parse_sass(c.asm["sass"])
    links = link(ptx, sass)
    _check_family(ptx, sass, links, "ld.global", "LDG")
    _check_family(ptx, sass, links, "st.global", "STG")
    table = pc_lines(sass)
    assert len(table) == len(sass) and [s.pc for s in sass] == sorted(table)
    assert all(s.pc == 16 * s.index for s in sass)  # 16-byte instructions from offset 0
    loads = {s.line for s in sass if s.mnemonic == "LDG"}
    assert loads == {_line_of(add_kernel, "tl.store(out_ptr")}  # loads inside the store's line


def _attention_kernel(folder):
    """The `--profile` GPU test's attention kernel, from a module file (tw.jit reads its source)."""
    import importlib.util

    from attention_source import ATTENTION_KERNEL

    path = folder / "attention_module.py"
    path.write_text("import tileworkbench as tw\nimport tileworkbench.language as tl\n" + ATTENTION_KERNEL)
    spec = importlib.util.spec_from_file_location("attention_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.attn_kernel


def test_moved_hgmma_is_attributed_to_its_dot_line(tmp_path):
    """ptxas schedules the register-A p @ v wgmma among the softmax's sums and nvdisasm's line table
    gives its HGMMAs that line (`l_i = ...`); `with_ptx_lines` puts them back on the dot's line,
    as the PTX has them, so a profile shows tensor work on both `tl.dot` lines."""
    sig = {"q_ptr": "*fp16:16", "k_ptr": "*fp16:16", "v_ptr": "*fp16:16", "o_ptr": "*fp16:16",
           "N": "i32:16", "scale": "fp32"}
    attention_kernel = _attention_kernel(tmp_path)
    c = tw.compile(attention_kernel, signature=sig, constexprs={"D": 64, "BM": 128, "BN": 64},
                   target="sm_90a", num_warps=8, num_stages=2, use_cache=False)
    ptx, sass = parse_ptx(c.asm["ptx"]), parse_sass(c.asm["sass"])
    moved = with_ptx_lines(sass, ptx)
    for text in ("s = tl.dot(", "acc = tl.dot("):
        line = _line_of(attention_kernel, text)
        wgmma = sum(p.line == line and p.family == "wgmma" for p in ptx)
        assert wgmma == 4, (text, wgmma)
        assert sum(s.line == line and s.mnemonic == "HGMMA" for s in moved) == wgmma, text
    own = {"HGMMA", "LDGSTS", "LDSM", "STSM"}  # only these may move
    assert [(s.pc, s.line) for s in moved if s.mnemonic not in own] == [
        (s.pc, s.line) for s in sass if s.mnemonic not in own]
    assert len(moved) == len(sass) and [s.pc for s in moved] == [s.pc for s in sass]
