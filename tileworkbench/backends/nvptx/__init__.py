"""The NVIDIA back end: `tile-opt` IR -> GPU passes (`tile-gpu`) -> LLVM IR (`llvm`) -> PTX (`ptx`) ->
cubin and SASS (`sass`, where NVIDIA's tools are installed).

Kernel ABI: one kernel parameter per `tt.func` block argument, in order. Pointers are
`ptr addrspace(1)` (a u64 address), integers and floats go by their own type (f16/bf16 as 2-byte
values, fp8 as a byte), and `i1` travels as an i32 (nonzero is true). Launch with
block=(32*(num_warps + producer_warps), 1, 1) (`producer_warps`: warp specialization's, else 0), the
user's grid, and `shared` bytes of dynamic shared memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...ir.ops import tt
from ..llvm.tile_gpu import check_shapes, run_gpu_passes
from ...target import NO_FALLBACK, TMAFallback
from .archs import DEFAULT_ARCH


@dataclass
class NvptxResult:
    """Everything the NVIDIA back end produced for one kernel."""

    passes: list[tuple[str, str]]
    tile_gpu: str
    llvm: str
    ptx: str
    cubin: bytes | None
    sass: str | None
    kernel_name: str
    shared: int
    n_regs: int | None
    n_spills: int | None
    resources: dict = field(default_factory=dict)
    line_maps: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    static_shared: int = 0  # bytes of static shared arrays (reduction scratch), beside `shared`
    debug_checks: dict | None = (
        None  # debug mode: hidden parameters and check sites (lowering/bounds.py)
    )
    shared_plan: list[dict] = field(default_factory=list)  # every shared region (inventory.py)
    global_scratch: int = 0  # bytes of global scratch per program (lowering/tensormap_device.py)
    producer_warps: int = 0  # warps beside num_warps: a warp-specialized loop's producer


def compile_nvptx(
    func: tt.FuncOp,
    *,
    arch: str = DEFAULT_ARCH,
    num_warps: int = 4,
    num_stages: int = 3,
    enable_fp_fusion: bool = True,
    assemble: bool = True,
    debug: bool = False,
    maxnreg: int | None = None,
    reflect_ftz: bool = True,
    tma_fallback: TMAFallback = NO_FALLBACK,
) -> NvptxResult:
    """Compile `tile-opt` IR for an NVIDIA GPU.

    Args:
        func: the kernel after the target-independent passes; changed in place by the GPU passes.
        arch: a row of `archs.ARCHS`: "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100",
            "sm_100a".
        num_warps: warps per program (a power of two); the block has 32*num_warps threads.
        num_stages: software-pipelining depth of the loads that feed tensor-core dots in loops.
        enable_fp_fusion: let float `a * b + c` contract into one FMA (Triton's default); False keeps
            every multiply and add rounded on its own, as the interpreter computes them.
        assemble: run ptxas (cubin, resource report) and nvdisasm/cuobjdump (SASS) where installed.
        debug: check every load, store and atomic against its array and lower `tl.device_assert` to
            the error buffer (lowering/bounds.py); adds hidden kernel parameters.
        maxnreg: at most this many registers per thread (`.maxnreg` on the kernel's `.entry`, as
            Triton's option); None leaves the choice to ptxas.
        reflect_ftz: libdevice's `__nvvm_reflect("__CUDA_FTZ")` answers 1 and `exp2` on fp32 takes
            `ex2.approx.ftz.f32` (Triton's `enable_reflect_ftz`, on by default); False keeps
            subnormals (`ex2.approx.f32`, libdevice's non-ftz paths).
        tma_fallback: descriptors kept off TMA because its shared memory did not fit (the
            compiler's retry; passes/descriptors.py reads it from the TargetInfo).

    Returns:
        An NvptxResult with every stage's text, the cubin, resources and the source-line maps.

    Raises:
        CompilationError: an op the back end cannot lower (named, with its source line), or a bad arch.
    """
    from ...errors import OptionError
    from .. import TargetOptions
    from ...ir.printer import print_ir_lines
    from ...passes.axis_info import axis_info
    from . import archs, codegen
    from ..llvm.debuginfo import llvm_line_map, tile_line_map
    from .debuginfo import ptx_line_map
    from .hooks import NVPTX_HOOKS
    from .inventory import shared_plan
    from ..llvm.lower import Lowering
    from ..llvm.lowering.tensormap_device import scratch_slots

    row = archs.arch(arch)
    TargetOptions(maxnreg, reflect_ftz)  # checks maxnreg
    if num_warps < 1 or num_warps & (num_warps - 1) or num_warps > 32:
        raise OptionError(f"num_warps must be a power of 2 from 1 to 32, not {num_warps}")
    check_shapes(func)
    # tensor cores (mma.sync, wgmma for fitting dots), shared memory per block (room for a spare
    # ring slot, staged epilogues) and per SM (whether the spare slot costs a resident block)
    target = row.target_info(num_warps, num_stages, tma_fallback)
    passes = run_gpu_passes(func, target)
    lines = print_ir_lines(func, locs=True)
    tile_gpu = "\n".join(text for text, _ in lines) + "\n"
    lowering = Lowering(
        func,
        arch,
        num_warps,
        axis_info(func),
        fp_fusion=enable_fp_fusion,
        debug=debug,
        hooks=NVPTX_HOOKS,
        maxnreg=maxnreg,
        reflect_ftz=reflect_ftz,
        target=target,
    )
    module = lowering.run()
    check_shared_memory(
        func,
        lowering.smem_bytes + lowering.static_smem_bytes,
        arch,
        num_stages,
        shared_plan(lowering),
    )
    optimized = codegen.optimize(str(module), arch, func.sym_name, lowering.uses_libdevice)
    llvm_text = str(optimized)
    ptx = codegen.emit_ptx(optimized, arch)
    line_maps = {
        "tile-gpu": tile_line_map(lines),
        "llvm": llvm_line_map(llvm_text),
        "ptx": ptx_line_map(ptx),
    }
    result = NvptxResult(
        passes=passes,
        tile_gpu=tile_gpu,
        llvm=llvm_text,
        ptx=ptx,
        cubin=None,
        sass=None,
        kernel_name=func.sym_name,
        shared=lowering.smem_bytes,
        n_regs=None,
        n_spills=None,
        line_maps=line_maps,
        static_shared=lowering.static_smem_bytes,
        debug_checks=lowering.bounds.metadata() if lowering.bounds else None,
        shared_plan=shared_plan(lowering),
        global_scratch=scratch_slots(func)[1],
        producer_warps=lowering.producer_warps,
    )
    if assemble:
        assembly = assemble_ptx(ptx, arch)
        result.cubin, result.sass, result.resources = (
            assembly.cubin,
            assembly.sass,
            assembly.resources,
        )
        result.n_regs, result.n_spills = assembly.n_regs, assembly.n_spills
        result.line_maps.update(assembly.line_maps)
    return result


def check_shared_memory(
    func: tt.FuncOp, nbytes: int, arch: str, num_stages: int, plan: list[dict] | None = None
) -> None:
    """Raise OutOfResources (at compile time, naming what to lower) when the kernel needs more shared
    memory than a block of `arch` can have: the kernel and its line, and each shared region of
    `plan` (inventory.shared_plan) with its source line and bytes, largest first."""
    from ...errors import OutOfResources
    from .archs import arch as arch_row

    limit = arch_row(arch).shared_per_block
    if nbytes > limit:
        if plan is None:
            rings = [op.result.type for op in func.walk() if op.name == "ttg.local_alloc"]
            detail = ", ".join(f"{'x'.join(map(str, t.shape))} {t.element}" for t in rings)
        else:
            detail = ", ".join(
                _region_text(entry) for entry in sorted(plan, key=lambda entry: -entry["bytes"])
            )
        where = f" ({func.loc.file}:{func.loc.line})" if func.loc is not None else ""
        name = (
            f"shared memory of {func.sym_name}{where} on {arch} ({detail or 'scratch'}; "
            f"num_stages={num_stages})"
        )
        raise OutOfResources(nbytes, limit, name)


def _region_text(entry: dict) -> str:
    """One shared region of the plan in an error: `TMA ring 3x128x64 fp16 (line 20): 49152 B`."""
    shape = "x".join(map(str, entry.get("shape", ())))
    what = " ".join(part for part in (entry["use"], shape, entry.get("dtype", "")) if part)
    line = f" (line {entry['line']})" if entry.get("line") else ""
    return f"{what}{line}: {entry['bytes']} B"


@dataclass
class Assembly:
    """What NVIDIA's tools made of the PTX: the cubin, the resource report and the SASS."""

    cubin: bytes | None
    sass: str | None
    resources: dict
    n_regs: int | None
    n_spills: int | None
    line_maps: dict[str, dict[int, list[int]]]


def assemble_ptx(ptx: str, arch: str) -> Assembly:
    """ptxas (cubin, registers, spills) and nvdisasm/cuobjdump (SASS) where installed."""
    return disassemble_into(assemble_cubin(ptx, arch))


def assemble_cubin(ptx: str, arch: str) -> Assembly:
    """ptxas alone: the cubin and the resource report (no SASS yet)."""
    from . import ptxas

    cubin, resources = ptxas.assemble(ptx, arch)
    spills = None
    if "spill_stores" in resources:
        spills = resources["spill_stores"] + resources["spill_loads"]
    return Assembly(cubin, None, resources, resources.get("registers"), spills, {})


def disassemble_into(assembly: Assembly) -> Assembly:
    """`assembly` with the SASS of its cubin and the SASS line map, where a disassembler exists."""
    from . import ptxas
    from .debuginfo import sass_line_map

    if assembly.cubin is not None:
        assembly.sass = ptxas.disassemble(assembly.cubin)
        if assembly.sass:
            assembly.line_maps = {"sass": sass_line_map(assembly.sass)}
    return assembly
