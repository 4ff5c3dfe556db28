"""What the GPU passes may know about the machine a kernel is compiled for: a frozen `TargetInfo`
that each backend builds (NVPTX from its architecture table, the cpu target for its one thread) and
hands to the pass runner (`passes.pipeline.run_passes(func, TILE_GPU, target=...)`) and to the
lowering.

It lives below `passes/` and `backends/` so data flows one way: passes read it and never import a
backend; nothing is stored on the `tt.func`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

TensorCores = Literal["wgmma", "mma.sync", "none"]


@dataclass(frozen=True)
class TMAFallback:
    """The compiler's choice to keep descriptors that TMA's rules allow on the pointer path, because
    their rings and staged tiles do not fit in shared memory: the host descriptor parameters named
    in `host` take no tensor map, and (`device`) descriptors made in the kernel build none. Any
    plan but NO_FALLBACK also cuts the pointer rings to what fits (where TMA takes no descriptor,
    that is all it does). `reason` is what each `ttng.tma_fallback` note says. The descriptor pass
    and the pipeliner read it from the TargetInfo; the kernel's metadata keeps it (`as_dict`) for
    the launcher."""

    host: tuple[str, ...] = ()
    device: bool = False
    reason: str = ""

    def as_dict(self) -> dict:
        return {"host": list(self.host), "device": self.device, "reason": self.reason}

    @classmethod
    def from_dict(cls, values: dict | None) -> TMAFallback:
        """From `as_dict`'s form (a kernel's metadata); None: no fallback."""
        if not values:
            return NO_FALLBACK
        return cls(tuple(values["host"]), values["device"], values["reason"])


NO_FALLBACK = TMAFallback()


@dataclass(frozen=True)
class TargetInfo:
    """One compile's target: the architecture's facts and the per-compile options passes read.

    Attributes:
        name: the architecture ("sm_90a") or target ("cpu") it describes.
        sm: the compute capability as a number (90); 0 where there is none.
        tensor_cores: the newest tensor-core instruction `tl.dot` may use: "wgmma" (sm_90a),
            "mma.sync" (sm_80+) or "none" (every dot on the FMA path).
        fp8_mma: `mma.sync` takes fp8 operands (sm_89+).
        stmatrix: `stmatrix` stores tensor-core results to shared memory (sm_90+).
        tma: descriptor tiles may be copied by the TMA engine (`cp.async.bulk.tensor`, sm_90+,
            unless `TILEWORKBENCH_TMA=0`): host descriptors that fit take a tensor map.
        tensormap_create: descriptors made in the kernel may build their tensor map on the device
            (`tensormap.replace`, the sm_90a family; only with `tma`).
        tma_fallback: descriptors TMA's rules allow but that stay on pointers, as their rings did
            not fit in shared memory, and pointer rings cut to fit (the compiler's retry,
            runtime/compiler.py).
        shared_per_block: the most shared memory one block may opt in to (bytes); 0: no limit known,
            so passes that need room take none.
        shared_per_sm: shared memory per SM (bytes), for how many blocks stay resident.
        shared_reserved_per_block: shared memory the driver keeps for each resident block.
        warp_size: threads per warp.
        one_thread: one thread runs a whole program (the cpu target): layouts give it every element.
        num_warps: warps per program (the launch option).
        num_stages: software-pipelining depth of loads in loops (the launch option; 1: none).
    """

    name: str = "generic"
    sm: int = 0
    tensor_cores: TensorCores = "none"
    fp8_mma: bool = False
    stmatrix: bool = False
    tma: bool = False
    tensormap_create: bool = False
    tma_fallback: TMAFallback = NO_FALLBACK
    shared_per_block: int = 0
    shared_per_sm: int = 0
    shared_reserved_per_block: int = 1024
    warp_size: int = 32
    one_thread: bool = False
    num_warps: int = 4
    num_stages: int = 1

    def __post_init__(self) -> None:
        if self.tensor_cores not in ("wgmma", "mma.sync", "none"):
            raise ValueError(
                f"tensor_cores must be 'wgmma', 'mma.sync' or 'none', not {self.tensor_cores!r}"
            )

    @property
    def has_tensor_cores(self) -> bool:
        """Whether dots that fit may take an `#mma` layout (mma.sync, or wgmma where it fits)."""
        return self.tensor_cores != "none" and not self.one_thread

    @property
    def wgmma(self) -> bool:
        """Whether dots that fit run on Hopper's warp-group MMA."""
        return self.tensor_cores == "wgmma"


GENERIC = TargetInfo()  # no tensor cores, no shared-memory room known, 4 warps, no pipelining

F = TypeVar("F", bound=Callable)


def target_pass(fn: F) -> F:
    """Mark a pass that reads the target: the runner calls it as `fn(func, target)`."""
    fn.takes_target = True
    return fn


def takes_target(fn: Callable) -> bool:
    """Whether `fn` is a pass marked by `target_pass`."""
    return getattr(fn, "takes_target", False)
