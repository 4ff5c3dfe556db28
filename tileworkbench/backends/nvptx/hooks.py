"""The target hooks of the shared `tile-gpu -> LLVM` lowering (`lower.Lowering`), and NVIDIA's.

The lowering rules in `lowering/` are target-independent; every target fact they need goes through the
`TargetHooks` object the `Lowering` holds: the module's triple and data layout, how the kernel function is
declared and annotated, thread and program ids, barriers, warp shuffles, shared memory, approximate
math and libdevice calls, predicated global accesses, atomics, and inline assembly. `NvptxHooks` gives
the PTX answers; the cpu backend's `CpuHooks` (backends/cpu/hooks.py) the host's.
"""

from __future__ import annotations

from llvmlite import ir

from .llvm_types import I8, I32, SHARED_PTR

DATA_LAYOUT = "e-p3:32:32-p4:32:32-p5:32:32-p6:32:32-p7:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"
TRIPLE = "nvptx64-nvidia-cuda"


class TargetHooks:
    """What the shared lowering asks of a target. Methods take the `Lowering` (`lw`) first."""

    triple = ""
    data_layout = ""
    fp8_hardware_min_sm = 10**9  # fp8 conversions in hardware from this sm on (never, by default)
    tree_reductions = False  # combine a thread's registers pairwise (vector units) instead of in a chain

    def declare_kernel(self, lw, module: ir.Module, name: str, params: list[ir.Type]) -> ir.Function:
        return ir.Function(module, ir.FunctionType(ir.VoidType(), params), name)

    def annotate(self, lw) -> None:
        """Module-level facts once the kernel is lowered."""

    def special_register(self, lw, name: str) -> ir.Value:
        """`tid.x`, `ctaid.{x,y,z}`, `nctaid.{x,y,z}`, built in the entry block."""
        raise NotImplementedError

    def barrier(self, lw) -> None:
        raise NotImplementedError

    def shuffle_xor_i32(self, lw, value: ir.Value, lane_mask: int) -> ir.Value:
        raise NotImplementedError

    def shared_memory(self, lw) -> ir.Value:
        """The base of the dynamic shared memory (a `ptr addrspace(3)`), made once."""
        raise NotImplementedError

    def private_shared_memory(self, lw, offset: int, nbytes: int) -> ir.Value:
        raise NotImplementedError

    def approx_math(self, lw, instruction: str, x: ir.Value) -> ir.Value:
        """An fp32 approximate instruction (`ex2.approx.f32`, `lg2.approx.f32`, ...)."""
        raise NotImplementedError

    def fast_divide(self, lw, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
        """fp32 division as Triton's (`div.full.f32`: 2 ulp)."""
        raise NotImplementedError

    def libdevice(self, lw, symbol: str, ret: ir.Type, args: list[ir.Value]) -> ir.Value:
        """A call of libdevice's `__nv_<name>` (or the target's function of the same meaning)."""
        raise NotImplementedError

    def predicated_access(self, etype: ir.Type, vec: int) -> bool:
        """Whether `global_load`/`global_store` take a masked access of `vec` x `etype` (else a branch)."""
        return False

    def global_load(self, lw, ptr, pred, etype, vec: int, other, quals: str) -> ir.Value:
        raise NotImplementedError

    def global_store(self, lw, ptr, data, pred, etype, vec: int, quals: str) -> None:
        raise NotImplementedError

    def atomic_rmw(self, lw, op, ptr, val, pred, t) -> ir.Value:
        raise NotImplementedError

    def atomic_cas(self, lw, op, ptr, cmp, val, pred, t) -> ir.Value:
        raise NotImplementedError

    def inline_asm(self, lw, text: str, constraints: str, ret: ir.Type, args: list[ir.Value],
                   side_effect: bool) -> ir.Value:
        raise lw.error(lw.current_op, "inline assembly cannot run on this target")

    def threads(self, lw) -> int:
        """Threads that run one program (loops that spread work over them: sort, histogram)."""
        return 32 * lw.num_warps

    # -- how a tensor's registers are held (the cpu target packs them into one LLVM vector) ---------
    def own_rule(self, op):
        """The target's own lowering of `op` (it may return NotImplemented: the shared rule runs)."""
        return None

    def carried_registers(self, lw, tval) -> list:
        """The LLVM values a phi carries for a tensor (control.py): one per register here."""
        return tval.vals

    def carried_types(self, lw, layout, element: ir.Type) -> list[ir.Type]:
        return [element] * layout.num_regs

    def tensor_of_registers(self, lw, registers: list, layout):
        from .lower import TVal

        return TVal(registers, layout)


class NvptxHooks(TargetHooks):
    """PTX: `ptx_kernel`, `nvvm.annotations`, NVVM special registers, `bar.sync`, `shfl.sync.bfly`,
    `extern .shared`, `.approx` instructions, libdevice, predicated `ld/st.global` and `atom.global`."""

    triple = TRIPLE
    data_layout = DATA_LAYOUT
    fp8_hardware_min_sm = 89

    def declare_kernel(self, lw, module, name, params) -> ir.Function:
        function = super().declare_kernel(lw, module, name, params)
        function.calling_convention = "ptx_kernel"
        return function

    def annotate(self, lw) -> None:
        from ...ir.ops.ttg import WARP_SIZE

        threads = ir.Constant(I32, WARP_SIZE * lw.num_warps)
        annotations = lw.module.add_named_metadata("nvvm.annotations")
        # the exact block size (Triton's `.reqntid`): ptxas may rely on tid.x < threads
        annotations.add(lw.module.add_metadata([lw.function, "reqntidx", threads]))
        if lw.maxnreg is not None:  # `.maxnreg N` on the kernel's `.entry` only (Triton's maxnreg)
            limit = ir.Constant(I32, lw.maxnreg)
            annotations.add(lw.module.add_metadata([lw.function, "maxnreg", limit]))
        if lw.uses_libdevice and lw.reflect_ftz:
            # libdevice's __nvvm_reflect("__CUDA_FTZ") answers 1 (LLVM's NVVMReflect reads this
            # flag, as Triton sets it): its flush-to-zero paths (Triton's enable_reflect_ftz)
            module = lw.module
            flags = module.get_named_metadata("llvm.module.flags") if "llvm.module.flags" in \
                module.namedmetadata else module.add_named_metadata("llvm.module.flags")
            one, override = ir.Constant(I32, 1), ir.Constant(I32, 4)
            flags.add(module.add_metadata([override, "nvvm-reflect-ftz", one]))

    def special_register(self, lw, name) -> ir.Value:
        fn = lw.intrinsic(f"llvm.nvvm.read.ptx.sreg.{name}", I32, [])
        return lw.entry_builder.call(fn, [])

    def barrier(self, lw) -> None:
        lw.call_intrinsic("llvm.nvvm.barrier0", ir.VoidType(), [])

    def shuffle_xor_i32(self, lw, value, lane_mask) -> ir.Value:
        args = [ir.Constant(I32, -1), value, ir.Constant(I32, lane_mask), ir.Constant(I32, 0x1F)]
        return lw.call_intrinsic("llvm.nvvm.shfl.sync.bfly.i32", I32, args)

    def shared_memory(self, lw) -> ir.Value:
        smem = ir.GlobalVariable(lw.module, ir.ArrayType(I8, 0), "global_smem", addrspace=3)
        smem.linkage = "external"
        smem.align = getattr(lw, "smem_align", 16)  # 1024 under wgmma tiles (lowering/shared.py)
        # Give the global the opaque `ptr addrspace(3)` type, which stores of any type accept.
        smem.type = SHARED_PTR
        return smem

    def private_shared_memory(self, lw, offset, nbytes) -> ir.Value:
        array = ir.GlobalVariable(lw.module, ir.ArrayType(I8, max(nbytes, 1)), f"scratch_smem_{offset}",
                                  addrspace=3)
        array.linkage = "internal"
        array.align = 16
        array.initializer = ir.Constant(array.value_type, ir.Undefined)
        array.type = SHARED_PTR
        return array

    def approx_math(self, lw, instruction, x) -> ir.Value:
        from .llvm_types import F32

        return lw.asm(f"{instruction} $0, $1;", "=f,f", F32, [x])

    def fast_divide(self, lw, lhs, rhs) -> ir.Value:
        from .llvm_types import F32

        return lw.asm("div.full.f32 $0, $1, $2;", "=f,f,f", F32, [lhs, rhs])

    def libdevice(self, lw, symbol, ret, args) -> ir.Value:
        lw.uses_libdevice = True
        return lw.call_intrinsic(symbol, ret, args)

    def predicated_access(self, etype, vec) -> bool:
        from .lowering import global_access

        return global_access.supports(etype, vec)

    def global_load(self, lw, ptr, pred, etype, vec, other, quals) -> ir.Value:
        from .lowering import global_access

        return global_access.load(lw, ptr, pred, etype, vec, other, quals)

    def global_store(self, lw, ptr, data, pred, etype, vec, quals) -> None:
        from .lowering import global_access

        global_access.store(lw, ptr, data, pred, etype, vec, quals)

    def atomic_rmw(self, lw, op, ptr, val, pred, t) -> ir.Value:
        from .lowering.memory import ptx_atomic_rmw

        return ptx_atomic_rmw(lw, op, ptr, val, pred, t)

    def atomic_cas(self, lw, op, ptr, cmp, val, pred, t) -> ir.Value:
        from .lowering.memory import ptx_atomic_cas

        return ptx_atomic_cas(lw, op, ptr, cmp, val, pred, t)

    def inline_asm(self, lw, text, constraints, ret, args, side_effect) -> ir.Value:
        from .lower import _llvm_string

        ftype = ir.FunctionType(ret, [a.type for a in args])
        return lw.builder.call(ir.InlineAsm(ftype, _llvm_string(text), constraints, side_effect), args)


NVPTX_HOOKS = NvptxHooks()
