"""The NVIDIA architectures the back end compiles for: one row per architecture, the one place their
facts live. The lowering and codegen (LLVM cpu and PTX features), the GPU passes (through the
`TargetInfo` a row makes), the registry's answers (TMA, clusters) and the workbench's resource panel
(through `Backend.architecture`) all read this table.

Shared memory and occupancy limits are CUDA's (`sharedMemPerBlockOptin`, the Programming Guide's
"Compute Capabilities" table): A100 164 KiB per block, consumer Ampere and Ada 99 KiB, Hopper and
Blackwell 227 KiB. To add an architecture, add a row (and check that llvmlite and ptxas take it).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import CompilationError
from ...config import config
from ...target import NO_FALLBACK, TargetInfo, TMAFallback

KB = 1024


@dataclass(frozen=True)
class Arch:
    """One NVIDIA architecture.

    Attributes:
        name: the PTX target ("sm_90a"), also the LLVM cpu name.
        sm: the compute capability as a number (90 for sm_90 and sm_90a).
        ptx: the PTX ISA feature LLVM emits for it: the lowest with every instruction we emit there.
        wgmma: `tl.dot` may run on Hopper's warp-group MMA (needs the arch-specific "a" target).
        fp8_mma: `mma.sync` takes fp8 operands (Ada and newer).
        fp8_convert: `cvt` converts between fp8 (e4m3, e5m2) and f16/f32 in hardware (sm_89+).
        bf16_atomic_add: `atom.add` takes bf16 (sm_90+; before, a compare-and-swap loop).
        stmatrix: `stmatrix` exists (PTX ISA 7.8, sm_90+).
        tma: the TMA engine (`cp.async.bulk.tensor`) and thread-block clusters (sm_90+).
        tensormap_replace: PTX has `tensormap.replace`, so kernels build TMA tensor maps on the
            device (the arch-specific sm_90a family).
        shared_per_block: the most shared memory one block may opt in to (bytes).
        shared_per_sm: shared memory per SM (bytes).
        threads_per_sm, blocks_per_sm, regs_per_sm: resident limits per SM (occupancy).
    """

    name: str
    sm: int
    ptx: str
    wgmma: bool = False
    fp8_mma: bool = False
    fp8_convert: bool = False
    bf16_atomic_add: bool = False
    stmatrix: bool = False
    tma: bool = False
    tensormap_replace: bool = False
    shared_per_block: int = 227 * KB
    shared_per_sm: int = 228 * KB
    threads_per_sm: int = 2048
    blocks_per_sm: int = 32
    regs_per_sm: int = 65536
    regs_per_thread_max: int = 255
    reg_alloc_unit: int = 256  # registers are allocated per warp in chunks of this many
    shared_reserved_per_block: int = 1 * KB  # the driver keeps 1 KB per block on sm_80 and newer
    warp_size: int = 32

    @property
    def llvm_cpu(self) -> str:
        """LLVM's NVPTX cpu name (the PTX target)."""
        return self.name

    def target_info(
        self, num_warps: int = 4, num_stages: int = 1, tma_fallback: TMAFallback = NO_FALLBACK
    ) -> TargetInfo:
        """What the GPU passes and the lowering know of this architecture, with the compile's
        options (`TILEWORKBENCH_TMA=0` turns TMA off; `tma_fallback`: the compiler's retry)."""
        tma = self.tma and config.tma
        return TargetInfo(
            name=self.name,
            sm=self.sm,
            tensor_cores="wgmma" if self.wgmma else "mma.sync",
            fp8_mma=self.fp8_mma,
            stmatrix=self.stmatrix,
            tma=tma,
            tensormap_create=tma and self.tensormap_replace,
            tma_fallback=tma_fallback,
            shared_per_block=self.shared_per_block,
            shared_per_sm=self.shared_per_sm,
            shared_reserved_per_block=self.shared_reserved_per_block,
            warp_size=self.warp_size,
            num_warps=num_warps,
            num_stages=num_stages,
        )


_AMPERE = {"shared_per_block": 163 * KB, "shared_per_sm": 164 * KB}
_CONSUMER = {"shared_per_block": 99 * KB, "shared_per_sm": 100 * KB, "threads_per_sm": 1536}
_HOPPER_UP = {
    "fp8_mma": True,
    "fp8_convert": True,
    "bf16_atomic_add": True,
    "stmatrix": True,
    "tma": True,
}

ARCHS: dict[str, Arch] = {
    row.name: row
    for row in (
        Arch("sm_80", 80, "+ptx78", **_AMPERE),
        Arch("sm_86", 86, "+ptx78", **_CONSUMER, blocks_per_sm=16),
        Arch("sm_89", 89, "+ptx84", fp8_mma=True, fp8_convert=True, **_CONSUMER, blocks_per_sm=24),
        Arch("sm_90", 90, "+ptx84", **_HOPPER_UP),
        Arch("sm_90a", 90, "+ptx84", wgmma=True, tensormap_replace=True, **_HOPPER_UP),
        Arch("sm_100", 100, "+ptx86", **_HOPPER_UP),
        Arch("sm_100a", 100, "+ptx86", tensormap_replace=True, **_HOPPER_UP),
    )
}

# compile-only use, where no GPU says otherwise: the H100/H200 generation
DEFAULT_ARCH = "sm_90"


def arch(name: str) -> Arch:
    """The row of `name` ("sm_90a").

    Raises:
        CompilationError: not an architecture of this table (the message lists them).
    """
    row = ARCHS.get(name)
    if row is None:
        raise CompilationError(
            f"unsupported NVIDIA architecture {name!r}; use one of " + ", ".join(ARCHS)
        )
    return row


def has_wgmma(name: str) -> bool:
    """Whether `tl.dot` may run on `wgmma` for `name` (sm_90a; plain sm_90 keeps `mma.sync`)."""
    return arch(name).wgmma


def native_arch(major: int, minor: int) -> str:
    """The arch a launch on a GPU of compute capability major.minor compiles for: its arch-specific
    form where we use its arch-specific instructions (9.0 -> sm_90a, `wgmma`, as Triton does), else
    sm_<major><minor>."""
    plain = f"sm_{major}{minor}"
    specific = ARCHS.get(plain + "a")
    return specific.name if specific is not None and specific.wgmma else plain
