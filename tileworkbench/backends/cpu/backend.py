"""The `cpu` target: the same LLVM lowering as the GPU's, with one thread per program (layouts that
give that thread every element) and the host's hooks, JIT-compiled by llvmlite for this CPU; the grid
is spread over a thread pool. Stages `tile-gpu` (the one-thread layouts), `llvm` and `asm` (host
assembly). Takes NumPy arrays, CPU torch tensors and anything with `__array_interface__`. Unlike the
interpreter it does not bounds-check memory accesses (as the GPU does not)."""

from __future__ import annotations

from ...target import TargetInfo
from .. import DEFAULT_OPTIONS, Backend, HostDevice, Lowered, register

# one thread runs a program (coalesce gives it whole tensors: passes/layouts.py); no tensor cores,
# no shared-memory room for staging or rings, no pipelining
TARGET = TargetInfo(name="cpu", one_thread=True, num_warps=1)


class CpuBackend(Backend):
    name = "cpu"
    stages = ("source", "tile", "tile-opt", "tile-gpu", "llvm", "asm")
    cacheable = True
    # LLVM's loop and SLP vectorizers: the speed of launches, at about twice the compile time (test
    # suites that compile hundreds of small kernels turn them off)
    vectorize = True

    def target_info(self, target, num_warps=4, num_stages=1, tma_fallback=None):
        return TARGET

    def lower(
        self, func, target, num_warps, num_stages, fp_fusion, debug=False, options=DEFAULT_OPTIONS
    ) -> Lowered:
        from ...ir.printer import print_ir_lines
        from ...passes.axis_info import axis_info
        from ..llvm.tile_gpu import check_shapes, run_gpu_passes
        from ..llvm.debuginfo import llvm_line_map, tile_line_map
        from ..llvm.lower import Lowering
        from . import codegen
        from .chunks import chunk_lanes
        from .hooks import EXTRA_PARAMS, CpuHooks

        check_shapes(func)
        _check_dtypes(func)
        chunk_lanes(func, codegen.chunk_lanes())
        passes = run_gpu_passes(func, TARGET)
        _check_one_thread(func)
        lines = print_ir_lines(func, locs=True)
        machine = codegen.host_machine()
        hooks = CpuHooks(codegen.binding().get_process_triple(), str(machine.target_data))
        # debug mode: the GPU's bounds checks and error record (llvm/lowering/bounds.py), read
        # after the launch by runtime/debug_checks.py from a host buffer
        # maxnreg has no meaning on the host; reflect_ftz picks exp2's flushing form (hostmath.py)
        lowering = Lowering(
            func,
            "sm_80",
            1,
            axis_info(func),
            fp_fusion=fp_fusion,
            debug=debug,
            hooks=hooks,
            reflect_ftz=options.reflect_ftz,
            target=TARGET,
        )
        module = lowering.run()
        smem = lowering.smem_bytes
        params = len(lowering.function.args) - len(EXTRA_PARAMS)  # its own and the hidden ones
        codegen.add_grid_loop(module, lowering.function, params, smem)
        codegen.add_runtime_functions(module)
        optimized = codegen.optimize(str(module), func.sym_name, self.vectorize)
        llvm_text = str(optimized)
        asm = {"tile-gpu": "\n".join(text for text, _ in lines) + "\n", "llvm": llvm_text}
        line_maps = {"tile-gpu": tile_line_map(lines), "llvm": llvm_line_map(llvm_text)}
        binary = codegen.emit_object(optimized)  # the one codegen a launch needs
        checks = lowering.bounds.metadata() if lowering.bounds else None
        return Lowered(
            func.sym_name, asm, passes, line_maps, shared=smem, binary=binary, debug_checks=checks
        )

    def finish(self, kernel, recompile) -> None:
        self.finish_cached(kernel)

    def finish_cached(self, kernel) -> None:
        """The host assembly (`asm`) is a second codegen: made when `.asm` is first read."""
        from . import codegen

        llvm_text = kernel._asm["llvm"]
        kernel._deferred["asm"] = lambda: codegen.assembly_of(llvm_text)

    def load(self, compiled, kinds, names):
        from .launch import CpuKernel

        from .host_calls import bind_calls_in

        bind_calls_in(compiled.asm.get("llvm", ""))  # libdevice callbacks (a kernel from the cache)
        md = compiled.launch_metadata
        return CpuKernel(compiled.launch_cubin, md.name, kinds, names)

    def host_device(self) -> HostDevice:
        from . import codegen
        from .launch import workers

        return HostDevice(f"CPU {codegen.binding().get_host_cpu_name()} x{workers()}", workers())

    def takes(self, value) -> bool:
        return hasattr(value, "__array_interface__") or (
            hasattr(value, "data_ptr") and not getattr(value, "is_cuda", False)
        )


def _check_dtypes(func) -> None:
    """The cpu target lowers the fp8 formats the NVIDIA lowering does (e4nv, e5); AMD's fnuz ones
    and fp8e4b15 are the interpreter's only: refused here in the cpu target's own words."""
    from ...errors import CompilationError
    from ...ir.types import element_type
    from ..llvm.llvm_types import NOT_LOWERED

    for op in func.walk():
        for value in list(op.operands) + list(op.results):
            name = getattr(element_type(value.type), "name", None)
            if name in NOT_LOWERED:
                where = f"{op.loc}: " if op.loc.line > 0 else ""
                raise CompilationError(
                    f"{where}{name} is not supported on the cpu target (it has "
                    "tl.float8e4nv and tl.float8e5); run it in the interpreter",
                    loc=op.loc,
                )


def _check_one_thread(func) -> None:
    """Every blocked layout must give the one thread its whole tensor: a layout that spreads rows
    over threads would leave them unrun (a silent wrong answer; tl.flip's once did)."""
    from ...errors import CompilationError
    from ...ir.ops.ttg import BlockedEncoding
    from ...ir.types import TensorType

    for op in func.walk():
        for value in op.results:
            if not isinstance(value.type, TensorType):
                continue
            enc = value.type.encoding
            if isinstance(enc, BlockedEncoding) and any(
                size < dim for size, dim in zip(enc.size_per_thread, value.type.shape)
            ):
                raise CompilationError(
                    f"internal: {op.name} in {func.sym_name} got layout {enc}, "
                    "which the cpu target's one thread does not cover"
                )


BACKEND = register(CpuBackend())
