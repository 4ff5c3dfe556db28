"""CompilationError for what the back end cannot do (naming the op and the kernel line), and the
source-line maps of the tile-gpu, llvm and ptx stages."""

from __future__ import annotations

import inspect
import re

import pytest
from nvptx_kernels import CASES, add_kernel

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import CompilationError


@tw.jit
def asm_pack_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=2)
    tl.store(x_ptr + offs, y)


@tw.jit
def fp8e4_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e4nv).to(tl.float32))


@tw.jit
def fp8e5_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e5).to(tl.float32))


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_unsupported_op_names_op_and_line():
    with pytest.raises(CompilationError) as info:
        tw.compile(asm_pack_kernel, signature={"x_ptr": "*i32:16"}, constexprs={"BLOCK": 128},
                   target="sm_90", use_cache=False)
    message = str(info.value)
    assert "pack" in message
    assert f":{_line_of(asm_pack_kernel, 'inline_asm_elementwise')}:" in message


def test_fp8_e4m3_uses_hardware_cvt_from_sm89_and_software_before():
    signature = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16"}
    ptx = {arch: tw.compile(fp8e4_kernel, signature=signature, constexprs={"BLOCK": 128}, target=arch,
                            use_cache=False).asm["ptx"] for arch in ("sm_80", "sm_90")}
    assert "cvt.rn.satfinite.e4m3x2.f32" in ptx["sm_90"] and "e4m3" not in ptx["sm_80"]


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_fp8_truncation_converts_two_values_per_instruction(kind):
    """A thread's eight values take four `cvt ... x2` (the instruction converts a pair), none with
    a constant stand-in for its other half."""
    kernel = fp8e4_kernel if kind == "e4m3" else fp8e5_kernel
    ptx = tw.compile(kernel, signature={"x_ptr": "*fp32:16", "y_ptr": "*fp32:16"},
                     constexprs={"BLOCK": 1024}, target="sm_90", use_cache=False).asm["ptx"]
    cvts = re.findall(rf"cvt\.rn\.satfinite\.{kind}x2\.f32 [^;]*;", ptx)
    assert len(cvts) == 4 and not any("0f00000000" in c for c in cvts), cvts


def test_unknown_arch_is_refused():
    from tileworkbench.backends.nvptx.archs import arch

    with pytest.raises(CompilationError, match="sm_75"):
        arch("sm_75")


@pytest.mark.parametrize("arch", ["sm_86", "sm_89", "sm_90a", "sm_100"])
def test_other_archs_compile(arch):
    fn, signature, constexprs, _ = CASES["add"]
    kernel = tw.compile(fn, signature=signature, constexprs=constexprs, target=arch, use_cache=False)
    assert f".target {arch}" in kernel.asm["ptx"]


def test_line_maps_point_at_the_load(compiled):
    kernel = compiled("add")
    load_line = _line_of(add_kernel, "x = tl.load")
    store_line = _line_of(add_kernel, "tl.store")
    maps = kernel.line_map
    for stage in ("tile-gpu", "llvm", "ptx"):
        assert load_line in maps[stage] and store_line in maps[stage], stage
    ptx = kernel.asm["ptx"].splitlines()
    assert any("ld.global.v4" in ptx[i - 1] for i in maps["ptx"][load_line])
    assert any("st.global.v4" in ptx[i - 1] for i in maps["ptx"][store_line])
    llvm = kernel.asm["llvm"].splitlines()
    # the masked load is one predicated PTX instruction in LLVM inline asm
    assert any("ld.global.v4.b32" in llvm[i - 1] for i in maps["llvm"][load_line])
    gpu = kernel.asm["tile-gpu"].splitlines()
    assert all("loc(" in gpu[i - 1] for i in maps["tile-gpu"][load_line])


def test_ptx_has_no_debug_sections_that_slow_ptxas(compiled):
    ptx = compiled("add").asm["ptx"]
    assert ".loc" in ptx and ".file" in ptx
    assert ", debug" not in ptx and ".debug_info" not in ptx


def test_libdevice_path_from_config(monkeypatch, tmp_path):
    from tileworkbench.backends.nvptx import codegen
    from tileworkbench.config import config

    fake = tmp_path / "libdevice.10.bc"
    fake.write_bytes(b"BC")
    monkeypatch.setattr(config, "libdevice", str(fake))
    assert codegen.find_libdevice() == fake
