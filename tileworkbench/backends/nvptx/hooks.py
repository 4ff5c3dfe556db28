"""NVIDIA's answers to the shared lowering's target hooks (`backends/llvm/hooks.py`): the PTX triple
and data layout, `ptx_kernel`, NVVM special registers and annotations, `bar.sync`, `shfl.sync.bfly`,
`extern .shared`, `.approx` instructions, libdevice, predicated `ld/st.global` and `atom.global`.
"""

from __future__ import annotations

from llvmlite import ir

from ..llvm.hooks import RegisterSplit, TargetHooks
from ..llvm.llvm_types import I8, I32, SHARED_PTR
from .archs import ARCHS

DATA_LAYOUT = (
    "e-p3:32:32-p4:32:32-p5:32:32-p6:32:32-p7:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"
)
TRIPLE = "nvptx64-nvidia-cuda"


class NvptxHooks(TargetHooks):
    """PTX: `ptx_kernel`, `nvvm.annotations`, NVVM special registers, `bar.sync`, `shfl.sync.bfly`,
    `extern .shared`, `.approx` instructions, libdevice, predicated `ld/st.global` and `atom.global`."""

    triple = TRIPLE
    data_layout = DATA_LAYOUT

    def declare_kernel(self, lw, module, name, params) -> ir.Function:
        function = super().declare_kernel(lw, module, name, params)
        function.calling_convention = "ptx_kernel"
        return function

    def register_split(self, lw, producer_warps: int) -> RegisterSplit | None:
        """With two or more consumer warp groups (one would have the 255 registers a thread may have
        anyway): each thread starts with the launch's even share of the register file, the producer
        keeps 40 (CUTLASS's and Triton's figure for a warp group that only issues copies), the
        consumers share the rest; setmaxnreg counts in multiples of 8."""
        row = ARCHS.get(lw.arch)
        if row is None or not row.wgmma or lw.num_warps < 8:
            return None
        producer = 40
        threads = row.warp_size * (lw.num_warps + producer_warps)
        launch = min(row.regs_per_thread_max, row.regs_per_sm // threads) // 8 * 8
        spare = row.regs_per_sm - producer * row.warp_size * producer_warps
        consumer = min(256, spare // (row.warp_size * lw.num_warps) // 8 * 8)
        return RegisterSplit(launch, producer, consumer)

    def fp8_convert(self, lw) -> bool:
        return _arch_has(lw, "fp8_convert")

    def bf16_atomic_add(self, lw) -> bool:
        return _arch_has(lw, "bf16_atomic_add")

    def annotate(self, lw) -> None:
        from ...ir.ops.ttg import WARP_SIZE

        threads = ir.Constant(I32, WARP_SIZE * (lw.num_warps + lw.producer_warps))
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
            flags = (
                module.get_named_metadata("llvm.module.flags")
                if "llvm.module.flags" in module.namedmetadata
                else module.add_named_metadata("llvm.module.flags")
            )
            one, override = ir.Constant(I32, 1), ir.Constant(I32, 4)
            flags.add(module.add_metadata([override, "nvvm-reflect-ftz", one]))

    def special_register(self, lw, name) -> ir.Value:
        fn = lw.intrinsic(f"llvm.nvvm.read.ptx.sreg.{name}", I32, [])
        return lw.entry_builder.call(fn, [])

    def barrier(self, lw) -> None:
        if lw.barrier_threads is not None:  # the consumer warps of a warp-specialized program
            count = [ir.Constant(I32, 1), ir.Constant(I32, lw.barrier_threads)]
            lw.call_intrinsic("llvm.nvvm.barrier.cta.sync.aligned.count", ir.VoidType(), count)
            return
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
        array = ir.GlobalVariable(
            lw.module, ir.ArrayType(I8, max(nbytes, 1)), f"scratch_smem_{offset}", addrspace=3
        )
        array.linkage = "internal"
        array.align = 16
        array.initializer = ir.Constant(array.value_type, ir.Undefined)
        array.type = SHARED_PTR
        return array

    def approx_math(self, lw, instruction, x) -> ir.Value:
        from ..llvm.llvm_types import F32

        return lw.asm(f"{instruction} $0, $1;", "=f,f", F32, [x])

    def fast_divide(self, lw, lhs, rhs) -> ir.Value:
        from ..llvm.llvm_types import F32

        return lw.asm("div.full.f32 $0, $1, $2;", "=f,f,f", F32, [lhs, rhs])

    def libdevice(self, lw, symbol, ret, args) -> ir.Value:
        lw.uses_libdevice = True
        return lw.call_intrinsic(symbol, ret, args)

    def predicated_access(self, etype, vec) -> bool:
        from ..llvm.lowering import global_access

        return global_access.supports(etype, vec)

    def global_load(self, lw, ptr, pred, etype, vec, other, quals) -> ir.Value:
        from ..llvm.lowering import global_access

        return global_access.load(lw, ptr, pred, etype, vec, other, quals)

    def global_store(self, lw, ptr, data, pred, etype, vec, quals) -> None:
        from ..llvm.lowering import global_access

        global_access.store(lw, ptr, data, pred, etype, vec, quals)

    def atomic_rmw(self, lw, op, ptr, val, pred, t) -> ir.Value:
        from ..llvm.lowering.memory import ptx_atomic_rmw

        return ptx_atomic_rmw(lw, op, ptr, val, pred, t)

    def atomic_cas(self, lw, op, ptr, cmp, val, pred, t) -> ir.Value:
        from ..llvm.lowering.memory import ptx_atomic_cas

        return ptx_atomic_cas(lw, op, ptr, cmp, val, pred, t)

    def inline_asm(self, lw, text, constraints, ret, args, side_effect) -> ir.Value:
        from ..llvm.lower import llvm_string

        ftype = ir.FunctionType(ret, [a.type for a in args])
        asm = ir.InlineAsm(ftype, llvm_string(text), constraints, side_effect)
        return lw.builder.call(asm, args)


def _arch_has(lw, fact: str) -> bool:
    """A fact of the architecture's row (archs.ARCHS) the kernel is lowered for."""
    row = ARCHS.get(lw.arch)
    return row is not None and getattr(row, fact)


NVPTX_HOOKS = NvptxHooks()
