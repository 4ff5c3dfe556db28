"""Resources of a compiled kernel and the occupancy they allow: blocks (programs) and warps per SM.

Occupancy is computed, as CUDA's occupancy calculator does, from registers per thread, shared memory per
block and threads per block, against the per-SM limits of the device's architecture.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

KB = 1024


@dataclass(frozen=True)
class SMLimits:
    """Per-SM limits of one architecture, as its backend's architecture table gives them (CUDA C
    Programming Guide, 'Compute Capabilities' table)."""

    arch: str
    regs_per_sm: int = 65536
    smem_per_sm: int = 228 * KB
    smem_per_block_max: int = 227 * KB
    threads_per_sm: int = 2048
    blocks_per_sm: int = 32
    regs_per_thread_max: int = 255
    reg_alloc_unit: int = 256  # registers are allocated per warp in chunks of this many
    smem_reserved_per_block: int = 1 * KB  # the driver keeps 1 KB per block on sm_80 and newer


def limits_for(target: str | None) -> SMLimits:
    """Limits for a target like `sm_90`, from the row its backend has for it (the registry's
    `architecture`); unknown or CPU targets get the GPU back end's default architecture's (sm_90:
    H100/H200)."""
    from ..backends import backends

    name = str(target or "").split(":")[-1]
    for backend in backends():
        row = backend.architecture(name)
        if row is not None:
            return _limits(row)
    gpu = next(b for b in backends() if b.is_gpu and b.default_arch)
    return _limits(gpu.architecture(gpu.default_arch))


def _limits(row) -> SMLimits:
    return SMLimits(
        row.name,
        regs_per_sm=row.regs_per_sm,
        smem_per_sm=row.shared_per_sm,
        smem_per_block_max=row.shared_per_block,
        threads_per_sm=row.threads_per_sm,
        blocks_per_sm=row.blocks_per_sm,
        regs_per_thread_max=row.regs_per_thread_max,
        reg_alloc_unit=row.reg_alloc_unit,
        smem_reserved_per_block=row.shared_reserved_per_block,
    )


@dataclass
class Resources:
    """What a kernel uses and the occupancy that allows. `None` means unknown (no ptxas, interpreter)."""

    n_regs: int | None
    n_spills: int | None
    shared: int | None
    local: int | None
    num_warps: int
    limits: SMLimits
    blocks_per_sm: int | None = None
    limiter: str | None = None
    # the backend's view (runtime/resource_summary.py): each shared region against the block limit,
    # and the tensor-core instruction counts of the PTX and SASS
    shared_plan: list[dict] = field(default_factory=list)
    shared_limit: int | None = None
    instructions: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def threads_per_block(self) -> int:
        return 32 * self.num_warps

    @property
    def occupancy(self) -> float | None:
        """Resident warps over the maximum warps per SM (0..1)."""
        if self.blocks_per_sm is None:
            return None
        return self.blocks_per_sm * self.num_warps * 32 / self.limits.threads_per_sm


def occupancy(
    n_regs: int | None, shared: int | None, num_warps: int, limits: SMLimits
) -> tuple[int | None, str | None]:
    """Blocks per SM and the resource that limits them, from registers, shared memory and threads."""
    threads = 32 * num_warps
    by = {"threads": limits.threads_per_sm // threads, "blocks": limits.blocks_per_sm}
    if n_regs:
        per_warp = math.ceil(n_regs * 32 / limits.reg_alloc_unit) * limits.reg_alloc_unit
        by["registers"] = (limits.regs_per_sm // per_warp) // num_warps
    if shared is not None:
        if shared > limits.smem_per_block_max:
            return 0, "shared memory (more than a block may use)"
        by["shared memory"] = limits.smem_per_sm // (shared + limits.smem_reserved_per_block)
    limiter = min(by, key=lambda k: by[k])
    return by[limiter], limiter


def resources_of(
    metadata: dict, target: str | None, asm: dict[str, str] | None = None
) -> Resources:
    """Resources from a compiled kernel's metadata dict (`n_regs`, `n_spills`, `shared`, its shared
    plan) and, given its stage texts, the tensor-core instruction counts its backend finds there."""
    limits = limits_for(target)
    ptxas = metadata.get("resources") or {}
    res = Resources(
        n_regs=metadata.get("n_regs"),
        n_spills=metadata.get("n_spills"),
        shared=metadata.get("shared"),
        local=metadata.get("local", ptxas.get("stack_frame")),
        # the block's warps: a warp-specialized kernel's producer warp group too
        num_warps=int(metadata.get("num_warps") or 4) + int(metadata.get("producer_warps") or 0),
        limits=limits,
    )
    backend = _backend(target)
    if backend is not None and backend.is_gpu:  # occupancy: blocks per SM
        res.blocks_per_sm, res.limiter = occupancy(res.n_regs, res.shared, res.num_warps, limits)
    res.shared_plan = list(metadata.get("shared_plan") or [])
    if backend is not None:
        res.shared_limit = backend.shared_limit(target) if res.shared_plan else None
        res.instructions = backend.instruction_counts(asm or {})
    return res


def _backend(target: str | None):
    """The backend of `target`, or None for an empty or unknown one (a report built by hand)."""
    from ..backends import backend_for
    from ..errors import CompilationError

    if not target:
        return None
    try:
        return backend_for(str(target))
    except CompilationError:
        return None
