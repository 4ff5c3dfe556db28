"""The backend registry: every execution target is a `Backend` registered here, and code outside
`backends/` asks the registry (`backend_for(target)`) instead of comparing target strings.

A backend answers which target names it claims and which architectures it has, which stages it adds
after `tile-opt`, how it lowers a kernel (`lower`), how it finishes a compiled kernel (`finish`: start
ptxas, attach a GPU model), how it loads one for launching (`load`), which arrays it takes, and, for
compiled targets, the lowering hooks the shared LLVM lowering calls. Backends are imported lazily, so
asking the registry costs nothing until a target is used. See docs/BACKENDS.md for adding one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from ..target import NO_FALLBACK, TargetInfo, TMAFallback

# name -> "module:attribute" of the Backend instance; imported on first use
_BUILTIN = {
    "interpreter": "tileworkbench.backends.interpreter.backend:BACKEND",
    "nvptx": "tileworkbench.backends.nvptx.backend:BACKEND",
    "cpu": "tileworkbench.backends.cpu.backend:BACKEND",
}
_LOADED: dict[str, Backend] = {}


@dataclass(frozen=True)
class TargetOptions:
    """Compile options that only some backends read (Triton's CUDA options; others ignore them).

    Attributes:
        maxnreg: the most 32-bit registers one thread may use (`.maxnreg N` on the kernel's
            `.entry`); None: ptxas chooses.
        reflect_ftz: libdevice's `__nvvm_reflect("__CUDA_FTZ")` is 1 and approximate fp32 math takes
            its flush-to-zero forms (`ex2.approx.ftz.f32`); Triton's `enable_reflect_ftz`, on by
            default on CUDA.
        tma_fallback: descriptors kept off TMA as its rings did not fit in shared memory (the
            compiler's retry picks it; no part of the cache key, as the compile decides it).
    """

    maxnreg: int | None = None
    reflect_ftz: bool = True
    tma_fallback: TMAFallback = NO_FALLBACK

    def __post_init__(self) -> None:
        m = self.maxnreg
        if m is not None and (isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= 255):
            from ..errors import OptionError

            # PTX: at most 255 registers a thread (ptxas raises a smaller cap to what the ABI needs)
            raise OptionError(
                f"maxnreg must be an integer from 1 to 255 (registers per thread), got {m!r}"
            )

    def key(self) -> tuple:
        """What the cache keys add for these options (nothing for the defaults)."""
        return ((("maxnreg", self.maxnreg),) if self.maxnreg is not None else ()) + (
            () if self.reflect_ftz else ("no-reflect-ftz",)
        )


DEFAULT_OPTIONS = TargetOptions()


@dataclass
class Lowered:
    """What a compiled backend made past `tile-opt`: stage texts, pass snapshots and line maps."""

    kernel_name: str
    asm: dict[str, str]
    passes: list[tuple[str, str]] = field(default_factory=list)
    line_maps: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    shared: int = 0  # dynamic shared memory a launch asks for, in bytes
    static_shared: int = 0
    binary: bytes | None = (
        None  # what launches load, where made at compile time (cpu: an object file)
    )
    debug_checks: dict | None = None  # debug mode: the checked accesses and hidden parameters
    shared_plan: list[dict] = field(
        default_factory=list
    )  # each shared-memory region (nvptx/inventory.py)
    global_scratch: int = 0  # bytes of global scratch per program (runtime/allocation.py)
    producer_warps: int = 0  # warps added beside num_warps (warp specialization's producer)


@dataclass(frozen=True)
class HostDevice:
    """The host CPU a backend's compiled kernels run on: what the workbench needs to measure its
    roofline ceilings with kernels of that target (workbench/target_ceilings.py)."""

    name: str  # e.g. "CPU znver4 x2": names the measured ceilings and their cache file
    threads: int  # threads a launch spreads its programs over


class Backend:
    """One family of execution targets. Subclasses set the class attributes and override the methods.

    Attributes:
        name: the registry key ("interpreter", "nvptx", "cpu").
        stages: the stages its compiled kernels carry, in pipeline order.
        is_gpu: launches run on a GPU (CUDA-event timing, GPU roofline ceilings, GPU arrays).
        cacheable: compiled kernels are stored in the on-disk cache.
        models_gpu: its kernels report the resources of a model GPU (the interpreter's do).
        hooks: the target hooks object the shared LLVM lowering calls (None: no LLVM lowering).
        compile_errors_also: an exception class that a launch's compile errors also are (the
            interpreter's: Triton's interpreter reports them as InterpreterError), or None.
        default_arch: the architecture compile-only use takes where no GPU decides ("" if none).
    """

    name = "backend"
    default_name = ""  # the target string that launches on it ("cuda" for nvptx); "" means `name`
    aliases: tuple[str, ...] = ()
    stages: tuple[str, ...] = ("source", "tile", "tile-opt")
    is_gpu = False
    cacheable = False
    models_gpu = False
    hooks: Any = None
    compile_errors_also: type | None = None
    default_arch = ""  # the architecture compile-only use takes ("sm_90"); "" where none

    def claims(self, target: str) -> bool:
        """Whether `target` (a user's spelling: "cuda", "sm_90", "cpu", ...) names this backend."""
        return target == self.name or target in self.aliases or target in self.architectures()

    @property
    def target(self) -> str:
        """The target string that selects this backend for launches."""
        return self.default_name or self.name

    def architectures(self) -> tuple[str, ...]:
        """The architectures it compiles for (empty when it has no notion of one)."""
        return ()

    def architecture(self, target: str) -> Any:
        """The row of its architecture table for `target` (the NVPTX `archs.Arch`: shared memory,
        occupancy limits, what the architecture can do), or None where it has none."""
        return None

    def available(self) -> bool:
        """Whether kernels for it can be launched on this machine."""
        return True

    def resolve(self, target: str) -> str:
        """The concrete target a kernel is compiled for ("cuda" -> "sm_90a"); raises CompilationError."""
        return target

    def has_tma(self, target: str) -> bool:
        """Whether kernels for `target` (resolved) copy descriptor tiles with the TMA engine, so host
        tensor descriptors pass a tensor map (passes/descriptors.py picks them)."""
        return False

    def builds_tensor_maps(self, target: str) -> bool:
        """Whether kernels for `target` build TMA tensor maps on the device (`tensormap.replace`), so
        in-kernel `tl.make_tensor_descriptor` copies with TMA through the launch's global scratch."""
        return False

    def target_info(
        self,
        target: str,
        num_warps: int = 4,
        num_stages: int = 1,
        tma_fallback: TMAFallback = NO_FALLBACK,
    ) -> TargetInfo | None:
        """The TargetInfo the GPU passes get for `target`; None where none run (the interpreter
        runs the `tile-opt` IR itself)."""
        return None

    def arch_target(self, arch: str) -> str:
        """The target a kernel compiles for under Triton's `arch=` option or override-arch setting
        ("sm90", "sm_90a"); backends without architectures ignore it (as Triton's interpreter does).

        Raises:
            TargetOptionError: `arch` is not one of this backend's architectures.
        """
        return self.target

    def check_num_ctas(self, target: str, num_ctas: int) -> None:
        """Raise TargetOptionError if Triton's `num_ctas` launch option (accepted and ignored: one
        CTA per program) is one that Triton refuses for `target`."""

    def triton_target(self, target: str) -> str | None:
        """Triton's name of `target` (resolved) as its TTGIR's `ttg.target` shows it ("cuda:90");
        None where Triton has none."""
        return None

    def lower(
        self,
        func,
        target: str,
        num_warps: int,
        num_stages: int,
        fp_fusion: bool,
        debug: bool = False,
        options: TargetOptions = DEFAULT_OPTIONS,
    ) -> Lowered | None:
        """Lower `tile-opt` IR `func` (changed in place) past `tile-opt`; None: run the IR as it is.
        `debug`: compile bounds checks (backends that have them); `options`: the TargetOptions this
        backend reads."""
        return None

    def finish(self, kernel, recompile: Callable[[str], Any]) -> None:
        """Called on each freshly compiled kernel; `recompile(target)` compiles it again for another."""

    def finish_cached(self, kernel) -> None:
        """Called on a kernel loaded from the on-disk cache."""

    def load(self, compiled, kinds: list[str], names: list[str]):
        """A launcher for `compiled`: `.launch(grid3, args, stream)` and `.fast_launch_ok()`."""
        raise NotImplementedError

    def takes(self, value: object) -> bool:
        """Whether `value` is an array this backend's kernels accept as a pointer argument."""
        return False

    def shared_limit(self, target: str) -> int | None:
        """The most shared memory (bytes) one block of `target` may have; None: no such limit."""
        return None

    def record_program(self, func, args: list, grid: tuple, pid: tuple, names: list[str]):
        """Run program `pid` of `func` alone on `args` and return what each load and store touched
        (the workbench's access picture); None where this backend cannot (only the interpreter
        can)."""

    def record_coverage(self, func, args: list, grid: tuple, names: list[str]):
        """Run every program of `func` on `args` (copies: it writes to them) and return which
        programs wrote each element (the workbench's coverage view); None where this backend cannot
        (only the interpreter can)."""

    def missing_tools(self, stage: str) -> str | None:
        """Why this machine cannot make `stage` of this backend's kernels (the missing tool and how
        to get it); None when it can, or when no outside tool makes it."""
        return None

    def tools_identity(self) -> tuple:
        """What identifies the outside tools its compiles run ((path, size, mtime) each, None where
        missing), a part of the on-disk cache key; () where it runs none."""
        return ()

    def instruction_counts(self, asm: dict[str, str]) -> dict[str, dict[str, int]]:
        """Stage -> {instruction kind: static count} of the instructions the resource panel shows
        (tensor-core math, their operand loads, async copies); empty where the backend has none."""
        return {}

    def host_device(self) -> HostDevice | None:
        """The host CPU its compiled kernels run on, whose roofline ceilings the workbench measures
        with kernels of this target; None: the workbench's GPU peaks (GPU targets), or no timed
        placement (the interpreter)."""
        return None


def register(backend: Backend) -> Backend:
    """Add (or replace) a backend under its name."""
    _LOADED[backend.name] = backend
    return backend


def _load(name: str) -> Backend:
    backend = _LOADED.get(name)
    if backend is None:
        module, attribute = _BUILTIN[name].split(":")
        backend = register(getattr(importlib.import_module(module), attribute))
    return backend


def backends() -> list[Backend]:
    """Every registered backend (the built-in ones imported on the way)."""
    for name in _BUILTIN:
        _load(name)
    return list(_LOADED.values())


def backend_for(target: str) -> Backend:
    """The backend that claims `target`.

    Raises:
        CompilationError: no backend claims it (the message lists the known targets).
    """
    hit = _CLAIMED.get(target)
    if hit is not None:
        return hit
    for backend in backends():
        if backend.claims(target):
            _CLAIMED[target] = backend
            return backend
    from ..errors import CompilationError

    raise CompilationError(f"unknown target {target!r}: use one of {', '.join(target_names())}")


_CLAIMED: dict[str, Backend] = {}


def target_names() -> list[str]:
    """What a user may write as a target: each backend's name and its architectures."""
    names = []
    for backend in backends():
        names += [backend.name, *getattr(backend, "aliases", ()), *backend.architectures()]
    return names


def is_gpu(target: str | None) -> bool:
    """Whether launches for `target` run on a GPU (None: the default target)."""
    return backend_for(target or default_target()).is_gpu


def default_target() -> str:
    """The target launches use: `TILEWORKBENCH_INTERPRET=1` -> the interpreter; `TILEWORKBENCH_TARGET`
    (or `config.target`) as set; else the GPU where one is visible, else the bounds-checking
    interpreter."""
    from ..config import config

    if config.interpret:
        return "interpreter"
    if config.target:
        return config.target
    return "cuda" if _load("nvptx").available() else "interpreter"


def available_targets() -> list[str]:
    """The launchable targets on this machine, one per backend (the tests' `target` fixture)."""
    return [b.target for b in backends() if b.available()]
