"""The target hooks of the shared `tile-gpu -> LLVM` lowering (`lower.Lowering`).

The lowering rules in `lowering/` are target-independent; every target fact they need goes through the
`TargetHooks` object the `Lowering` holds: the module's triple and data layout, how the kernel function is
declared and annotated, thread and program ids, barriers, warp shuffles, shared memory, approximate
math and libdevice calls, predicated global accesses, atomics, and inline assembly. `NvptxHooks`
(backends/nvptx/hooks.py) gives the PTX answers; the cpu backend's `CpuHooks` (backends/cpu/hooks.py)
the host's.
"""

from __future__ import annotations

from typing import NamedTuple

from llvmlite import ir


class RegisterSplit(NamedTuple):
    """A warp-specialized program's registers per thread (`hooks.register_split`)."""

    launch: int
    producer: int
    consumer: int


class TargetHooks:
    """What the shared lowering asks of a target. Methods take the `Lowering` (`lw`) first."""

    triple = ""
    data_layout = ""
    tree_reductions = (
        False  # combine a thread's registers pairwise (vector units) instead of in a chain
    )

    def declare_kernel(
        self, lw, module: ir.Module, name: str, params: list[ir.Type]
    ) -> ir.Function:
        return ir.Function(module, ir.FunctionType(ir.VoidType(), params), name)

    def annotate(self, lw) -> None:
        """Module-level facts once the kernel is lowered."""

    def register_split(self, lw, producer_warps: int) -> RegisterSplit | None:
        """Registers per thread at launch, for a producer warp group after `setmaxnreg.dec` and for
        the consumers after `setmaxnreg.inc` (lowering/warp_specialize.py); None: no setmaxnreg."""
        return None

    def fp8_convert(self, lw) -> bool:
        """fp8 <-> f16/f32 conversions in hardware (else a few lines of integer IR)."""
        return False

    def bf16_atomic_add(self, lw) -> bool:
        """An atomic add on bf16 in one instruction (else a compare-and-swap loop)."""
        return False

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

    def inline_asm(
        self, lw, text: str, constraints: str, ret: ir.Type, args: list[ir.Value], side_effect: bool
    ) -> ir.Value:
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
        from .values import TVal

        return TVal(registers, layout)
