"""LLVM module -> optimized LLVM IR and PTX with llvmlite's NVPTX target. llvmlite's native library is
initialized on first use only, and libdevice is linked only into kernels that call `__nv_*`
functions, with every function but the kernel internalized so O3 drops what is not called."""

from __future__ import annotations

import os
import shutil
from functools import cache
from pathlib import Path

from ...config import config
from ...errors import CompilationError
from . import archs


@cache
def _binding():
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    # The NVPTX back end's settings Triton compiles with (process-wide LLVM options that no other target
    # reads): 32-bit shared-memory addresses, as our data layout (p3:32) already declares, and
    # mad.wide.s32 for base + index * size, which LLVM turned off by default in 2025. The kernel's
    # row address then fits ptxas's uniform datapath (ULEA) instead of two IMAD.WIDE per thread.
    llvm.set_option("tileworkbench", "--nvptx-short-ptr")
    llvm.set_option("tileworkbench", "--nvptx-mad-wide-opt")
    return llvm


@cache
def target_machine(arch: str):
    llvm = _binding()
    row = archs.arch(arch)
    target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    return target.create_target_machine(cpu=row.llvm_cpu, features=row.ptx, opt=3)


def find_libdevice() -> Path | None:
    """libdevice.10.bc from TILEWORKBENCH_LIBDEVICE, CUDA_HOME, /usr/local/cuda, or NVIDIA's nvcc wheel."""
    candidates = []
    if config.libdevice:
        candidates.append(Path(config.libdevice))
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            candidates.append(Path(os.environ[env]) / "nvvm" / "libdevice" / "libdevice.10.bc")
    candidates.append(Path("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"))
    ptxas = shutil.which("ptxas")
    if ptxas:
        candidates.append(
            Path(ptxas).resolve().parent.parent / "nvvm" / "libdevice" / "libdevice.10.bc"
        )
    candidates += _wheel_candidates()
    for path in candidates:
        if path.is_file():
            return path
    return None


def _wheel_candidates() -> list[Path]:
    """libdevice inside NVIDIA's pip wheels (`nvidia/cuda_nvcc/nvvm/...` or `nvidia/cu13/nvvm/...`)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    out: list[Path] = []
    for root in (spec.submodule_search_locations or []) if spec else []:
        for pattern in ("*/nvvm/libdevice/libdevice.10.bc", "*/*/nvvm/libdevice/libdevice.10.bc"):
            out += sorted(Path(root).glob(pattern))
    return out


@cache
def _libdevice_bitcode() -> bytes:
    path = find_libdevice()
    if path is None:
        raise CompilationError(
            "this kernel calls libdevice (math on f64, erf, or a __nv_* function) but libdevice.10.bc "
            "was not found; set TILEWORKBENCH_LIBDEVICE to its path"
        )
    return path.read_bytes()


def optimize(module_text: str, arch: str, kernel_name: str, uses_libdevice: bool):
    """Parse, link libdevice if needed, verify and run LLVM's O3; return the llvmlite module."""
    llvm = _binding()
    try:
        module = llvm.parse_assembly(module_text)
        module.verify()
    except RuntimeError as exc:
        raise CompilationError(f"internal: invalid LLVM IR for {kernel_name}: {exc}") from None
    if uses_libdevice:
        library = llvm.parse_bitcode(_libdevice_bitcode())
        library.triple = module.triple
        library.data_layout = module.data_layout
        module.link_in(library)
        missing = sorted(
            fn.name for fn in module.functions if fn.is_declaration and fn.name.startswith("__nv_")
        )
        if missing:  # else ptxas, or the driver at load, fails later with a less clear message
            raise CompilationError(
                f"kernel '{kernel_name}' calls {', '.join(missing)}, which "
                "libdevice does not have (check the extern_elementwise symbol)"
            )
        for fn in module.functions:
            if not fn.is_declaration and fn.name != kernel_name:
                fn.linkage = llvm.Linkage.internal
    tm = target_machine(arch)
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    builder = llvm.create_pass_builder(tm, options)
    builder.getModulePassManager().run(module, builder)
    return module


def emit_ptx(module, arch: str) -> str:
    return target_machine(arch).emit_assembly(module)
