"""The compile driver: source -> `tile` -> `tile-opt` -> (GPU targets) `tile-gpu` -> `llvm` -> `ptx` -> `sass`,
recording every stage and pass snapshot in a `CompiledKernel`, with the on-disk cache for GPU targets.

`tw.compile(fn, signature=..., constexprs=..., target=...)` is the public entry; `@jit` launches call it.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import itertools
import json
import math
import os
import threading
import types
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from ..backends import DEFAULT_OPTIONS, TargetOptions, backend_for
from ..config import config
from ..errors import LaunchError, OptionError, OutOfResources
from ..frontend import ArgSpec, generate, parse_arg
from ..frontend.source import get_source
from ..ir import print_ir_lines
from ..ir.clone import clone
from ..ir.ops import tt
from ..language import core
from ..target import NO_FALLBACK, TMAFallback
from .stage_texts import StageTexts, ttgir_module

CACHE_FORMAT = 6  # 2: metadata.dynamic_shared; 3: metadata.shared_plan; 4: metadata.global_scratch;
# 5: metadata.tma_fallback; 6: metadata.producer_warps


@dataclass
class KernelMetadata:
    """What a launch and the workbench need to know about a compiled kernel."""

    name: str
    target: str
    num_warps: int = 4
    num_stages: int = 3
    enable_fp_fusion: bool = True
    shared: int = 0  # bytes of shared memory per block, static and dynamic (Triton's `shared`)
    dynamic_shared: int = 0  # the part a launch asks for
    n_regs: int | None = None
    n_spills: int | None = None
    resources: dict = field(default_factory=dict)
    signature: list = field(default_factory=list)
    constexprs: dict = field(default_factory=dict)
    cache_hit: bool = False
    debug: bool = False  # compiled with `debug=True` (device asserts on; GPU: checked accesses)
    maxnreg: int | None = None  # registers per thread the kernel was capped at (`.maxnreg`)
    enable_reflect_ftz: bool = True  # libdevice's __CUDA_FTZ and ftz approximate math (GPU targets)
    debug_checks: dict | None = (
        None  # GPU debug mode: hidden parameters and check sites (bounds.py)
    )
    # each shared-memory region: cp.async rings (slots x bytes), staged tiles, scratch, static arrays
    shared_plan: list = field(default_factory=list)
    # bytes of global scratch each program needs (in-kernel tensor maps), which each launch gets from
    # the allocator given to `set_allocator` (runtime/allocation.py); 0: none
    global_scratch: int = 0
    global_scratch_align: int = 128
    # the compiler kept descriptors that TMA's rules allow on pointers, as TMA's rings did not fit in
    # shared memory: {"host": [parameter names, passed with no tensor map], "device": bool,
    # "reason": str} (target.TMAFallback); None: no such choice
    tma_fallback: dict | None = None
    # warps the compiler added to the block beside `num_warps`: a warp-specialized loop's producer
    # warp group (passes/warp_specialize.py); a launch runs 32 * (num_warps + producer_warps) threads
    producer_warps: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


class CompiledKernel:
    """One kernel compiled for one target and specialization.

    Attributes:
        asm: stage name -> text (`source`, `tile`, `tile-opt`, and for GPU targets `tile-gpu`, `llvm`,
            `ptx`, `sass` where ptxas exists).
        passes: (pass name, IR text after it), starting with ("tile", ...).
        metadata: a KernelMetadata.
        line_map: stage -> kernel source line -> 1-based line numbers in that stage's text.
        cubin: the backend's binary: ptxas's cubin (NVPTX), the host object file (cpu).
    """

    def __init__(
        self,
        fn: Callable,
        metadata: KernelMetadata,
        asm: dict[str, str],
        passes: list[tuple[str, str]],
        line_map: dict[str, dict[int, list[int]]],
        ir=None,
        cubin: bytes | None = None,
        regenerate: Callable | None = None,
    ):
        source = get_source(fn)
        self.fn = fn
        self.name = metadata.name
        self._metadata = metadata
        backend = backend_for(metadata.target)
        module = ttgir_module(backend.triton_target(metadata.target), metadata.num_warps)
        self._asm = StageTexts(asm, metadata.target, backend.stages, module)
        self.passes = passes
        self._line_map = line_map
        self._cubin = cubin
        self.source_file = source.file
        self.source_first_line = source.first_line
        self._ir = ir
        self._regenerate = regenerate
        # stages made only when `.asm` is read (the cpu target's host assembly: a second codegen)
        self._deferred: dict[str, Callable[[], str]] = {}
        self._gpu_model: Callable[[], CompiledKernel] | None = None
        self._assembly: Future | None = None
        self._cubin_future: Future | None = None
        self._lock = threading.Lock()
        self.jit_function = (
            None  # the JITFunction whose launch compiled this, for compiled[grid](...)
        )

    # -- ptxas and the disassembler run in the background; these wait for them when it matters ------
    def _assemble_in_background(self, arch: str, assemble: Callable, disassemble: Callable) -> None:
        """Run the backend's `assemble(text, arch)` (ptxas) and then `disassemble(assembly)` on the
        assembler thread (the backend's `finish` passes them: the runtime names no backend)."""
        pool = _assembler()
        self._cubin_future = pool.submit(assemble, self._asm["ptx"], arch)
        self._assembly = pool.submit(lambda: disassemble(self._cubin_future.result()))

    def _wait(self) -> None:
        """ptxas and the disassembler: the cubin, resources, SASS and its line map."""
        if self._assembly is None:
            return
        with self._lock:  # the cache writer's thread and the user's may both get here
            future = self._assembly
            if future is None:
                return
            assembly = future.result()  # re-raises a ptxas failure
            self._take_ptxas(assembly)
            if assembly.sass:
                self._asm["sass"] = assembly.sass
            self._line_map.update(assembly.line_maps)
            self._assembly = self._cubin_future = None

    def _wait_ptxas(self) -> None:
        """ptxas alone: the cubin and its resource report (registers, spills), not the SASS,
        which nvdisasm may be making still (it took longer than ptxas on attention kernels)."""
        future = self._cubin_future
        if future is None:
            return
        assembly = future.result()  # re-raises a ptxas failure
        with self._lock:
            if self._cubin_future is future:
                self._take_ptxas(assembly)

    def _take_ptxas(self, assembly) -> None:
        self._cubin = assembly.cubin
        md = self._metadata
        md.n_regs, md.n_spills = assembly.n_regs, assembly.n_spills
        md.resources = dict(assembly.resources)

    def _wait_cubin(self) -> bytes | None:
        """The cubin, waiting for ptxas but not for the disassembler."""
        self._wait_ptxas()
        return self._cubin

    @property
    def asm(self) -> dict[str, str]:
        self._wait()
        while self._deferred:
            self._make(next(iter(self._deferred)))
        return self._asm

    @property
    def line_map(self) -> dict[str, dict[int, list[int]]]:
        """stage -> kernel source line -> line numbers in that stage's text; a stage made on
        demand that maps lines (SASS disassembled late) is made first."""
        self._wait()
        if "sass" in self._deferred:
            self._make("sass")
        return self._line_map

    def _make(self, stage: str) -> None:
        """Make a deferred stage; a maker that finds it cannot (no disassembler) gives None."""
        text = self._deferred.pop(stage)()
        if text is not None:
            self._asm[stage] = text

    @property
    def asm_made(self) -> dict[str, str]:
        """The stages made so far (deferred ones left out): what the cache stores."""
        self._wait()
        return self._asm

    @property
    def metadata(self) -> KernelMetadata:
        self._wait_ptxas()
        return self._metadata

    @property
    def cubin(self) -> bytes | None:
        self._wait_ptxas()
        return self._cubin

    @property
    def ptx(self) -> str | None:
        """The PTX (GPU targets), available as soon as compile returns."""
        return self._asm.get("ptx")

    @property
    def launch_metadata(self) -> KernelMetadata:
        """The metadata a launch needs (name, warps, shared memory), without waiting for ptxas."""
        return self._metadata

    @property
    def launch_cubin(self) -> bytes | None:
        """The cubin a launch loads: ptxas's, waited for (SASS is not); None where ptxas is missing, and
        the driver then compiles the PTX."""
        return self._wait_cubin()

    @property
    def target(self) -> str:
        return self.metadata.target

    @property
    def ir(self):
        """The `tile-opt` IR, target-neutral (descriptors as `tt.descriptor_*` ops; the interpreter
        runs them as pointer tiles); rebuilt on demand where the backend's passes rewrote it."""
        if self._ir is None and self._regenerate is not None:
            self._ir = self._regenerate()
        return self._ir

    @property
    def resources(self):
        """Registers, spills, shared memory region by region against the device's limit, and the
        tensor-core instruction counts (PTX, and SASS where disassembled): a ResourceSummary; print it."""
        from .resource_summary import ResourceSummary

        return ResourceSummary.of(self)

    @property
    def n_regs(self) -> int | None:
        return self.metadata.n_regs

    @property
    def n_spills(self) -> int | None:
        return self.metadata.n_spills

    def __getitem__(self, grid) -> Callable:
        """`compiled[grid](*args)`: launch this kernel, as Triton's CompiledKernel does; `args` are all
        the kernel's parameters in order, constexprs included."""
        if self.jit_function is None:
            raise LaunchError(
                f"{self.name} was compiled by tw.compile, not by a @jit launch: launch the "
                "@jit function instead"
            )
        md = self.metadata
        return functools.partial(
            self.jit_function.run,
            grid=grid,
            num_warps=md.num_warps,
            num_stages=md.num_stages,
            enable_fp_fusion=md.enable_fp_fusion,
            debug=md.debug,
            maxnreg=md.maxnreg,
            enable_reflect_ftz=md.enable_reflect_ftz,
        )

    def _init_handles(self) -> None:
        """Triton loads the binary here and learns n_regs and n_spills. GPU kernels are loaded when
        compiled. An interpreter kernel gets the resources it would use on the GPU the interpreter
        models (`MODEL_ARCH`): n_regs, n_spills and shared come from compiling it for that GPU, so
        occupancy arithmetic written for Triton (tutorial 02's) works. Without ptxas n_regs stays None.
        """
        if self._gpu_model is None or self.metadata.shared:
            return
        model = self._gpu_model()
        self.metadata.n_regs = model.metadata.n_regs
        self.metadata.n_spills = model.metadata.n_spills
        self.metadata.shared = model.metadata.shared

    def __repr__(self) -> str:
        return f"<CompiledKernel {self.name} for {self.target}: stages {', '.join(self.asm)}>"


# -- targets ---------------------------------------------------------------------------------------------


def resolve_target(target: str | None) -> str:
    """The concrete target a kernel compiles for, as its backend resolves it: `None` -> the default
    target (`backends.default_target`), "cuda" -> the current GPU's arch; "interpreter", "cpu" and
    "sm_XX" as given.

    Raises:
        CompilationError: no backend claims `target`, or it needs a GPU and none is visible.
    """
    from ..backends import backend_for, default_target

    if target is None:
        target = default_target()
    return backend_for(target).resolve(target)


# -- the cache key -----------------------------------------------------------------------------------------

_COMPILER_HASH: str | None = None


def compiler_fingerprint() -> str:
    """A hash of tileworkbench's own sources: a changed compiler never reuses old cache entries."""
    global _COMPILER_HASH
    if _COMPILER_HASH is None:
        digest = hashlib.sha256()
        root = Path(__file__).resolve().parent.parent
        for path in sorted(root.rglob("*.py")):
            if "workbench" in path.parts:
                continue
            digest.update(path.as_posix().encode())
            digest.update(path.read_bytes())
        _COMPILER_HASH = digest.hexdigest()
    return _COMPILER_HASH


def dependencies(fn: Callable) -> tuple[str, list[tuple[dict, str, Any]]]:
    """A fingerprint of `fn`'s source, of every `@jit` function it reaches, and of the global values they
    read; plus the (globals dict, name, value) triples that a later launch checks for redefinition."""
    seen: set[int] = set()
    parts: list[str] = []
    used: list[tuple[dict, str, Any]] = []

    def visit(func: Callable) -> None:
        if id(func) in seen:
            return
        seen.add(id(func))
        source = get_source(func)
        parts.append(source.text)
        names = {node.id for node in ast.walk(source.tree) if isinstance(node, ast.Name)}
        closure = source.closure_vars()
        for name in sorted(names):
            scope = (
                closure
                if name in closure
                else func.__globals__
                if name in func.__globals__
                else None
            )
            if scope is None:
                continue
            value = scope[name]
            if isinstance(value, types.ModuleType):
                continue
            if scope is func.__globals__:
                used.append((scope, name, value))
            inner = getattr(value, "fn", None) if getattr(value, "__tile_jit__", False) else None
            if inner is not None:
                visit(inner)
            elif isinstance(value, core.constexpr):
                parts.append(f"{name}={value.value!r}")
            elif isinstance(value, (int, float, bool, str, core.dtype)):
                parts.append(f"{name}={value!r}")

    visit(fn)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest(), used


def _constexpr_repr(value: Any) -> str:
    return repr(value.value if isinstance(value, core.constexpr) else value)


# -- compile ----------------------------------------------------------------------------------------------


def _python_function(fn) -> Callable:
    return getattr(fn, "fn", fn) if getattr(fn, "__tile_jit__", False) else fn


def _line_map(op, locs_of: list) -> dict[int, list[int]]:
    mapping: dict[int, list[int]] = {}
    for number, loc in enumerate(locs_of, start=1):
        if loc is None or loc.line <= 0:
            continue
        for line in {loc.line, loc.outermost.line}:
            mapping.setdefault(line, []).append(number)
    return mapping


def _parse_signature(fn: Callable, signature) -> list[ArgSpec]:
    if signature is None:
        return []
    if isinstance(signature, (list, tuple)):
        return list(signature)
    if isinstance(signature, str):
        signature = dict(item.split("=", 1) for item in signature.split(",") if item.strip())
    specs = [parse_arg(name.strip(), text) for name, text in signature.items()]
    # bound by name: a signature in another order than the parameters means the same kernel (in
    # the given order its types went to the wrong parameters); unknown names go last, for the
    # frontend's error that names them
    order = {name: i for i, name in enumerate(inspect.signature(fn).parameters)}
    return sorted(specs, key=lambda spec: order.get(spec.name, len(order)))


def compile(
    fn,
    signature: dict[str, str] | list[ArgSpec] | str | None = None,
    constexprs: dict[str, Any] | None = None,
    target: str | None = None,
    num_warps: int = 4,
    num_stages: int = 3,
    enable_fp_fusion: bool = True,
    use_cache: bool = True,
    debug: bool | None = None,
    maxnreg: int | None = None,
    enable_reflect_ftz: bool = True,
) -> CompiledKernel:
    """Compile a kernel for one specialization.

    Args:
        fn: a `@jit` kernel (or its Python function).
        signature: runtime parameters and their types, e.g. {"x_ptr": "*fp32:16", "n": "i32"}
            (`:16` promises 16-byte alignment / a multiple of 16, `:1` the value 1).
        constexprs: values of the `tl.constexpr` parameters, e.g. {"BLOCK": 1024}.
        target: "interpreter", "cuda" (the current GPU), or an arch such as "sm_90" (no GPU needed).
        num_warps, num_stages: launch and pipelining options (GPU targets).
        enable_fp_fusion: float `a * b + c` may become one FMA on GPU targets (Triton's default);
            False rounds every multiply and add on its own, as the interpreter does.
        debug: `tl.device_assert` is compiled in (as Triton, it is dropped otherwise) and, on GPU
            targets, every load, store and atomic is checked against its array (hidden parameters;
            see backends/llvm/lowering/bounds.py). None: the `@jit(debug=...)` decorator's;
            `TILEWORKBENCH_DEBUG=1` turns it on everywhere.
        maxnreg: at most this many registers per thread (NVPTX: `.maxnreg` on the kernel entry);
            None: the assembler's choice. Other targets ignore it.
        enable_reflect_ftz: approximate fp32 math and libdevice flush subnormals to zero (Triton's
            CUDA default, True); False keeps them. Other targets than NVPTX ignore it.

    Returns:
        A CompiledKernel with every stage in `.asm` and the pass snapshots in `.passes`.

    Raises:
        CompilationError: the kernel is not valid (the message shows the line and a hint).
    """
    py_fn = _python_function(fn)
    args = _parse_signature(py_fn, signature)
    constexprs = dict(constexprs or {})
    target = resolve_target(target)
    enable_fp_fusion = bool(enable_fp_fusion)
    debug = bool(getattr(fn, "debug", None) if debug is None else debug) or config.debug
    try:
        options = TargetOptions(maxnreg, bool(enable_reflect_ftz))
    except OptionError as error:
        raise OptionError(f"{py_fn.__name__}: {error}") from None
    if num_warps <= 0 or num_warps & (num_warps - 1) or num_warps > 32:
        raise OptionError(f"num_warps must be a power of 2 from 1 to 32, got {num_warps}")
    key = None
    if backend_for(target).cacheable and use_cache:
        from .cache import KernelCache, cache_key

        fingerprint, _ = dependencies(py_fn)
        key = cache_key(
            "tileworkbench",
            CACHE_FORMAT,
            compiler_fingerprint(),
            backend_for(target).tools_identity(),
            fingerprint,
            [a.key for a in args],
            [a.name for a in args],
            sorted((k, _constexpr_repr(v)) for k, v in constexprs.items()),
            num_warps,
            num_stages,
            enable_fp_fusion,
            target,
            *(("debug",) if debug else ()),
            *(("tma",) if config.tma else ()),
            *(("spare_slot",) if config.spare_slot else ()),
            *(() if config.chained_wgmma_in_flight else ("chained_wgmma_waited",)),
            *(() if config.warp_specialize else ("no_warp_specialize",)),
            *(("tma_tile_prefetch",) if config.tma_tile_prefetch else ()),
            *options.key(),
        )
        entry = KernelCache().get(key)
        if entry is not None:
            cached = _from_cache(py_fn, entry, args, constexprs, debug)
            if cached is not None:
                return cached
    kernel = _compile_fresh(
        py_fn, args, constexprs, target, num_warps, num_stages, enable_fp_fusion, debug, options
    )
    if key is not None:
        if kernel._assembly is not None:  # written once ptxas is done, so the entry is complete
            kernel._assembly.add_done_callback(lambda _: _store(key, kernel))
        else:
            _store(key, kernel)
    return kernel


def _store(key: str, kernel: CompiledKernel) -> None:
    from .cache import KernelCache

    try:
        KernelCache().put(key, _to_cache(kernel))
    except (
        Exception
    ) as error:  # a kernel that failed to assemble is not cached; it raises when used
        kernel._cache_error = error


def tile_opt_ir(
    py_fn: Callable,
    args: list[ArgSpec],
    constexprs: dict[str, Any],
    num_warps: int = 4,
    debug: bool = False,
):
    """The frontend and the target-independent passes; returns (func, passes, tile lines, tile-opt
    lines). Target-neutral: which descriptors take TMA is the GPU passes' choice."""
    from ..passes.pipeline import TILE_OPT, run_passes

    func = generate(py_fn, args, constexprs, num_warps, debug=debug)
    tile_lines = print_ir_lines(func, locs=True)
    passes = [("tile", "\n".join(t for t, _ in tile_lines) + "\n")]
    passes += run_passes(func, TILE_OPT)
    return func, passes, tile_lines, print_ir_lines(func, locs=True)


def chosen_ir(py_fn: Callable, args: list[ArgSpec], constexprs: dict[str, Any], md: KernelMetadata):
    """The `tile-opt` IR with the target's descriptor choices made (TMA ops, `*.tensormap`
    parameters, `ttng.tma_fallback` notes): what `CompiledKernel.ir` shows of a compiled backend's
    kernel, whose own IR the GPU passes rewrote."""
    from ..passes.descriptors import lower_descriptors
    from ..passes.pipeline import run_passes

    func = tile_opt_ir(py_fn, args, constexprs, md.num_warps, md.debug)[0]
    target = backend_for(md.target).target_info(
        md.target, md.num_warps, md.num_stages, TMAFallback.from_dict(md.tma_fallback)
    )
    if target is not None:
        run_passes(func, [lower_descriptors], target=target)
    return func


def _compile_fresh(
    py_fn,
    args,
    constexprs,
    target,
    num_warps,
    num_stages,
    fp_fusion,
    debug: bool = False,
    options: TargetOptions = DEFAULT_OPTIONS,
) -> CompiledKernel:
    """The frontend and TILE_OPT once; then the backend, and where a kernel with descriptors does
    not fit in shared memory, the backend again on copies of the `tile-opt` IR with descriptors kept
    off TMA and their rings cut to fit (`_fallbacks`). Descriptor lowering is the compiler's choice,
    so TMA off or unavailable must not turn a config that fits into an error; hand-written pointer
    kernels get no retry (their OutOfResources stands, as in Triton)."""
    backend = backend_for(target)
    front = tile_opt_ir(py_fn, args, constexprs, num_warps, debug)
    func = front[0]
    retry = _has_descriptors(func)
    kept = clone(func) if retry else None  # the backend's passes rewrite `func` in place
    compile_with = functools.partial(
        _compile_with,
        py_fn,
        get_source(py_fn),
        args,
        constexprs,
        target,
        num_warps,
        num_stages,
        fp_fusion,
        debug,
        options,
        front,
    )
    try:
        return compile_with(func)
    except OutOfResources as error:
        if not (retry and _short_of_shared_memory(error)):
            raise
        plans = _fallbacks(args, backend.has_tma(target), backend.builds_tensor_maps(target), error)
        return _compile_fitting(compile_with, kept, plans, error)


def _has_descriptors(func: tt.FuncOp) -> bool:
    return any(isinstance(op, tt.MakeTensorDescOp) for op in func.walk())


def _short_of_shared_memory(error: OutOfResources) -> bool:
    return "shared memory" in error.name


def _compile_fitting(
    compile_with: Callable, kept: tt.FuncOp, plans: list[TMAFallback], error: OutOfResources
) -> CompiledKernel:
    """The kernel's rings and staged tiles did not fit in shared memory: run the backend again on a
    copy of the `tile-opt` IR with `plans` (`_fallbacks`, which the descriptor pass and the
    pipeliner read from the TargetInfo) until the kernel fits. The plans with one descriptor off TMA
    come first; then the last, which has the most off: where even it does not fit, none does, so a
    kernel too large for any stops there (a tune's configs that never fit cost a few tries, not
    one per plan); where it fits, the plans between are tried for one that keeps more on TMA, and
    it is kept where none does. The IR notes each descriptor kept off TMA (`ttng.tma_fallback`) and
    the metadata names them, so launches pass no tensor map for them. Where nothing fits, the last
    plan's OutOfResources (which names the kernel, its shared buffers and their lines) is
    raised."""
    failed: list[OutOfResources] = [error]

    def attempt(plan: TMAFallback) -> CompiledKernel | None:
        try:
            return compile_with(clone(kept), fallback=plan)
        except OutOfResources as again:
            if not _short_of_shared_memory(again):
                raise
            failed.append(again)
            return None

    alone = [plan for plan in plans[:-1] if len(plan.host) <= 1]
    between = [plan for plan in plans[:-1] if len(plan.host) > 1]
    for plan in alone:
        if (kernel := attempt(plan)) is not None:
            return kernel
    last = attempt(plans[-1])
    if last is None:
        raise failed[-1]
    for plan in between:
        if (kernel := attempt(plan)) is not None:
            return kernel
    return last


def _fallbacks(
    args: list[ArgSpec], tma: bool, device_tma: bool, error: OutOfResources
) -> list[TMAFallback]:
    """The plans to try: descriptors made in the kernel off TMA (where the target builds them) with
    one host descriptor off TMA, then two, and so on; among plans with as many, those that keep
    the most bytes of blocks on TMA first (the larger a block, the more its copies gain from it).
    The descriptor to take off need not be the largest: a tile read through registers (tutorial
    10's scaled operands) can cost more shared memory on TMA than its ring. A kernel with no host
    tensor maps has the one plan of all its descriptors on pointers. Every plan cuts
    the pointer rings to what fits (software_pipeline.py `_fitting`), so where nothing is on TMA
    (`tma` off, or TMA refused every descriptor) that is the one plan left."""
    from ..frontend.descriptor_args import parse_descriptor_type, takes_tensor_map

    host = [a for a in args if parse_descriptor_type(a.type) is not None and takes_tensor_map(a)]
    host = sorted(host, key=_block_bytes, reverse=True) if tma else []
    if not (host or device_tma):
        reason = (
            f"the rings of its pointer loads need {error.required} bytes of shared memory, more "
            f"than the {error.limit} a block may have: only the rings that fit"
        )
        return [TMAFallback((), False, reason)]
    reason = (
        f"TMA's rings and staged tiles need {error.required} bytes of shared memory, more "
        f"than the {error.limit} a block may have: pointer loads and stores instead"
    )
    plans = [
        tuple(a.name for a in plan)
        for count in range(1, len(host) + 1)
        for plan in sorted(
            itertools.combinations(host, count), key=lambda p: sum(map(_block_bytes, p))
        )
    ]
    return [TMAFallback(plan, device_tma, reason) for plan in plans or [()]]


def _block_bytes(arg: ArgSpec) -> int:
    """Bytes of one block of descriptor parameter `arg` (what each of its ring slots holds)."""
    from ..frontend.descriptor_args import parse_descriptor_type
    from ..frontend.specialize import parse_type

    element, block, _ = parse_descriptor_type(arg.type)
    return max(1, parse_type(element).primitive_bitwidth // 8) * math.prod(block)


def _compile_with(
    py_fn,
    source,
    args,
    constexprs,
    target,
    num_warps,
    num_stages,
    fp_fusion,
    debug,
    options: TargetOptions,
    front: tuple,
    func,
    fallback: TMAFallback = NO_FALLBACK,
) -> CompiledKernel:
    """The backend's stages from `func` (the `tile-opt` IR or a copy of it; `front`: what
    `tile_opt_ir` gave), with `fallback` handed to the descriptor pass."""
    _, front_passes, tile_lines, opt_lines = front
    passes = list(front_passes)
    asm = {
        "source": source.text,
        "tile": passes[0][1],
        "tile-opt": "\n".join(t for t, _ in opt_lines) + "\n",
    }
    line_map = {
        "source": {source.first_line + i: [i + 1] for i in range(source.text.count("\n") + 1)},
        "tile": _line_map(func, [loc for _, loc in tile_lines]),
        "tile-opt": _line_map(func, [loc for _, loc in opt_lines]),
    }
    metadata = KernelMetadata(
        name=py_fn.__name__,
        target=target,
        num_warps=num_warps,
        num_stages=num_stages,
        enable_fp_fusion=fp_fusion,
        signature=[a.key for a in args],
        constexprs={k: _constexpr_repr(v) for k, v in constexprs.items()},
        debug=debug,
        maxnreg=options.maxnreg,
        enable_reflect_ftz=options.reflect_ftz,
        tma_fallback=fallback.as_dict() if fallback != NO_FALLBACK else None,
    )
    ir = func
    binary = None
    backend = backend_for(target)
    result = backend.lower(
        func,
        target,
        num_warps,
        num_stages,
        fp_fusion,
        debug,
        replace(options, tma_fallback=fallback),
    )
    if result is not None:
        ir = None  # the backend's passes rewrite `func`; `.ir` rebuilds the tile-opt IR on demand
        passes += result.passes
        asm.update(result.asm)
        line_map.update(result.line_maps)
        metadata.name = result.kernel_name
        metadata.shared = result.shared + result.static_shared
        metadata.dynamic_shared = result.shared
        metadata.debug_checks = result.debug_checks
        metadata.shared_plan = result.shared_plan
        metadata.global_scratch = result.global_scratch
        metadata.producer_warps = result.producer_warps
        binary = result.binary

    def regenerate():
        return chosen_ir(py_fn, args, constexprs, metadata)

    kernel = CompiledKernel(
        py_fn, metadata, asm, passes, line_map, ir=ir, cubin=binary, regenerate=regenerate
    )
    backend.finish(
        kernel,
        functools.partial(
            _recompile,
            py_fn,
            args,
            constexprs,
            num_warps,
            num_stages,
            fp_fusion,
            debug,
            options=options,
        ),
    )
    return kernel


def _recompile(
    py_fn,
    args,
    constexprs,
    num_warps,
    num_stages,
    fp_fusion,
    debug,
    target,
    options: TargetOptions = DEFAULT_OPTIONS,
) -> CompiledKernel:
    return _compile_fresh(
        py_fn, args, constexprs, target, num_warps, num_stages, fp_fusion, debug, options
    )


_ASSEMBLER: list[ThreadPoolExecutor] = []


def _forget_assembler() -> None:
    """A forked child (a compile worker) has none of the parent's threads: its ptxas pool, whose
    threads it would wait for forever, starts afresh."""
    _ASSEMBLER.clear()


os.register_at_fork(after_in_child=_forget_assembler)


def _assembler() -> ThreadPoolExecutor:
    """The threads that run ptxas and nvdisasm (subprocesses, so they overlap with Python work)."""
    if not _ASSEMBLER:
        _ASSEMBLER.append(
            ThreadPoolExecutor(max_workers=4, thread_name_prefix="tileworkbench-ptxas")
        )
    return _ASSEMBLER[0]


def _to_cache(kernel: CompiledKernel) -> dict[str, bytes | str]:
    files: dict[str, bytes | str] = {
        "metadata.json": json.dumps(kernel.metadata.as_dict()),
        "asm.json": json.dumps({**kernel.asm_made}),
        "passes.json": json.dumps(kernel.passes),
        "line_map.json": json.dumps(
            {s: {str(k): v for k, v in m.items()} for s, m in kernel._line_map.items()}
        ),
    }
    if kernel.cubin is not None:
        files["kernel.cubin"] = bytes(kernel.cubin)
    return files


def _from_cache(py_fn, entry, args, constexprs, debug: bool = False) -> CompiledKernel | None:
    try:
        metadata = KernelMetadata(**json.loads(entry["metadata.json"]))
        asm = json.loads(entry["asm.json"])
        passes = [tuple(p) for p in json.loads(entry["passes.json"])]
        line_map = {
            s: {int(k): v for k, v in m.items()}
            for s, m in json.loads(entry["line_map.json"]).items()
        }
    except (KeyError, TypeError, ValueError):
        return None
    metadata.cache_hit = True
    cubin = entry.get("kernel.cubin")
    backend = backend_for(metadata.target)

    def regenerate():  # the IR the kernel was compiled from, TMA's choices as they were made
        return chosen_ir(py_fn, args, constexprs, metadata)

    kernel = CompiledKernel(
        py_fn, metadata, asm, passes, line_map, cubin=cubin, regenerate=regenerate
    )
    backend.finish_cached(kernel)
    return kernel
