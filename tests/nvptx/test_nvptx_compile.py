"""Every test kernel compiles for sm_80 and sm_90: the optimized LLVM IR parses and verifies, and ptxas
assembles the PTX. FileCheck-style checks on the code that matters for speed."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import pytest
from nvptx_kernels import CASES
from nvptx_support import needs_ptxas, run_ptxas


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_llvm_verifies(compiled, name, arch):
    kernel = compiled(name, arch)
    module = llvm.parse_assembly(kernel.asm["llvm"])
    module.verify()
    assert module.get_function(kernel.metadata.name) is not None
    assert f".target {arch}" in kernel.asm["ptx"]


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_ptxas_assembles(compiled, name, arch, tmp_path):
    proc = run_ptxas(compiled(name, arch).asm["ptx"], arch, tmp_path)
    assert proc.returncode == 0, proc.stderr


def _lines(ptx: str, pattern: str) -> list[str]:
    return [line for line in ptx.splitlines() if re.search(pattern, line)]


def test_vector_add_uses_16_byte_accesses(compiled):
    ptx = compiled("add").asm["ptx"]
    # LLVM 22 spells the untyped vector move `.b32`; Triton's PTX says `.f32`: the same instruction.
    loads = _lines(ptx, r"ld\.global\.v4\.(f32|b32)")
    stores = _lines(ptx, r"st\.global\.v4\.(f32|b32)")
    assert len(loads) == 4 and len(stores) == 2  # BLOCK 1024 over 128 threads: 2 vectors per array
    assert not _lines(ptx, r"ld\.global\.(f32|b32)\s")  # no scalar leftovers
    assert not _lines(ptx, r"\.shared")


def test_vector_add_unaligned_n_falls_back_to_scalar_masks(compiled):
    fn, signature, constexprs, _ = CASES["add"]
    import tileworkbench as tw

    kernel = tw.compile(fn, signature={**signature, "n_elements": "i32"}, constexprs=constexprs, target="sm_90",
                        use_cache=False)
    ptx = kernel.asm["ptx"]
    assert not _lines(ptx, r"ld\.global\.v4")  # the mask may change inside any 4 elements
    assert len(_lines(ptx, r"ld\.global\.(f32|b32)\s")) == 16


def test_softmax_reduces_with_shuffles_and_ex2(compiled):
    kernel = compiled("softmax")
    ptx = kernel.asm["ptx"]
    shuffles = _lines(ptx, r"shfl\.sync\.bfly\.b32")
    # max and sum: 5 butterfly steps over 32 lanes, then 2 over the 4 warps' partials (one per lane)
    assert len(shuffles) == 14
    assert len(_lines(ptx, r"ex2\.approx\.f32")) == 8
    assert len(_lines(ptx, r"div\.full\.f32")) == 8
    assert len(_lines(ptx, r"ld\.global\.v4")) == 2
    # one barrier per reduction: each has scratch of its own, so none waits for the other's readers
    assert len(_lines(ptx, r"bar\.sync")) == 2
    assert len(_lines(ptx, r"\.shared \.align 16 \.b8 scratch_smem_\d+\[16\]")) == 2  # 4 warps' fp32
    assert kernel.metadata.shared == 32 and kernel.metadata.dynamic_shared == 0
    # Triton's NVPTX settings: shared memory addressed with 32-bit registers, the row's base address
    # as one mad.wide (base + row * stride * 4), which ptxas keeps on the uniform datapath
    shared_accesses = _lines(ptx, r"(ld|st)\.shared")
    assert shared_accesses and all(re.search(r"\[%r\d+\]", line) for line in shared_accesses)
    assert len(_lines(ptx, r"mad\.wide\.s32")) == 2  # the input row and the output row


@pytest.mark.parametrize("name", ["add", "softmax"])
def test_thread_offset_is_one_shift_of_tid(compiled, name):
    """The lane and warp bits of a row-major blocked layout are tid.x's bits with doubling weights:
    the thread's first element is `tid.x << 2` (4 fp32 per thread and access), with no lane/warp
    split (and 31, shr 5) on the way to the first load."""
    ptx = compiled(name).asm["ptx"]
    before_load = ptx[:ptx.index("ld.global")]
    tid = re.search(r"mov\.u32\s+(%r\d+), %tid\.x;", before_load).group(1)
    users = [line.strip() for line in before_load.splitlines() if re.search(rf"{tid}\b", line)
             and "%tid.x" not in line]
    assert len(users) == 1 and re.fullmatch(rf"shl\.b32\s+%r\d+, {tid}, 2;", users[0]), users


def test_math_uses_approx_instructions(compiled):
    ptx = compiled("math").asm["ptx"]
    # tl.exp: ex2.approx.f32 of x * log2(e); tl.exp2: the ftz form, as Triton's default
    for instruction in ("ex2.approx.f32", "ex2.approx.ftz.f32", "lg2.approx.f32", "sqrt.approx.f32",
                        "rsqrt.approx.f32", "sin.approx.f32", "cos.approx.f32", "sqrt.rn.f32",
                        "div.rn.f32"):
        assert instruction in ptx, instruction


def test_libdevice_linked_only_when_called(compiled):
    assert "__nv_" not in compiled("add").asm["llvm"]
    f64 = compiled("f64_math").asm["llvm"]
    assert "define ptx_kernel void @f64_math_kernel" in f64 or "@f64_math_kernel" in f64
    # internalized and inlined: no libdevice function survives as its own definition
    assert not re.search(r"define .*@__nv_", f64)


def test_atomics_are_predicated_and_scoped(compiled):
    ptx = compiled("atomic").asm["ptx"]
    assert "atom.global.gpu.acq_rel.add.f32" in ptx  # Triton's order (test_atomic_qualifiers.py)
    assert "atom.global.gpu.acq_rel.max.s32" in ptx and "atom.global.gpu.acq_rel.min.u32" in ptx


def test_resources_reported(compiled):
    kernel = compiled("add")
    meta = kernel.metadata
    if meta.n_regs is None:
        pytest.skip("ptxas is not installed")
    assert 8 <= meta.n_regs <= 64 and meta.n_spills == 0
    assert "registers" in meta.resources


def test_masked_accesses_are_predicated_and_carry_cache_hints(compiled):
    ptx = compiled("masked_widths").asm["ptx"]
    assert _lines(ptx, r"@%p\d+ ld\.global\.cg\.u8 ")  # 1-byte loads into 16-bit registers
    assert _lines(ptx, r"@%p\d+ ld\.global\.L1::evict_last\.(v\d\.)?b(16|32) ")
    assert _lines(ptx, r"@%p\d+ ld\.global\.cv\.(v\d\.)?b32 ")  # fp64 as 32-bit words
    assert _lines(ptx, r"st\.global\.cs\.(v\d\.)?b32 ")  # PTX takes a cache operator or an eviction hint
    assert _lines(ptx, r"@%p\d+ st\.global\.L1::evict_first\.b8 ")
    assert not _lines(ptx, r"^\s*@%p\d+ bra")  # no branches around the accesses


def test_bad_cache_modifier_names_the_line():
    import tileworkbench as tw
    import tileworkbench.language as tl
    from tileworkbench.errors import CompilationError

    @tw.jit
    def bad(x_ptr):
        tl.store(x_ptr, tl.load(x_ptr, cache_modifier=".lu"))

    with pytest.raises(CompilationError) as info:
        tw.compile(bad, signature={"x_ptr": "*fp32"}, target="sm_90", use_cache=False)
    text = str(info.value)
    assert "cache_modifier '.lu'" in text and "tl.load" in text and "'.cg'" in text
    assert "x_ptr, cache_modifier" in text  # the source line is shown
