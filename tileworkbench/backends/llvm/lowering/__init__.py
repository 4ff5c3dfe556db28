"""Lowering rules of the NVPTX back end, one module per op family, joined in two tables:
`LOWERINGS` (op class -> `lower_<op>(lowering, op)`) and `ELEMENTWISE` (op class -> a rule that maps
the LLVM values of one element of each operand to the result element). `STRUCTURAL` names the ops
their parent lowers (terminators, the function); `UNSUPPORTED` names op classes with no rule and why,
and `PARTIAL` the cases of supported ops that still raise CompilationError."""

from __future__ import annotations

LOWERINGS: dict[type, object] = {}
ELEMENTWISE: dict[type, object] = {}
UNSUPPORTED: dict[type, str] = {}


def lowers(*classes):
    """Register `fn(lowering, op)` as the lowering of `classes`."""

    def register(fn):
        for cls in classes:
            LOWERINGS[cls] = fn
        return fn

    return register


def elementwise(*classes):
    """Register `fn(lowering, op, *element_values) -> value` for `classes` (applied per register)."""
    from .common import lower_elementwise

    def register(fn):
        for cls in classes:
            ELEMENTWISE[cls] = fn
            LOWERINGS[cls] = lower_elementwise
        return fn

    return register


# after the registries and decorators above, which the rule modules use as they are imported
from ....ir.ops import scf as _scf  # noqa: E402
from ....ir.ops import tt as _tt  # noqa: E402
from . import arith, control, dot, math, memory, misc, reduce, scan, shape, shared, sort, wgmma  # noqa: E402, F401
from . import tma  # noqa: E402, F401  (sm_90+ descriptor copies)
from . import tensormap_device  # noqa: E402, F401  (sm_90a tensor maps built in the kernel)
from . import warp_specialize  # noqa: E402, F401  (sm_90a producer and consumer warps)

STRUCTURAL: dict[type, str] = {
    _scf.YieldOp: "lowered by its scf.for / scf.if / scf.while (phi incoming values)",
    _scf.ConditionOp: "lowered by its scf.while (the loop's exit branch)",
    _tt.ReduceReturnOp: "lowered by its tt.reduce (the combine region's results)",
    _tt.ScanReturnOp: "lowered by its tt.scan (the combine region's results)",
    _tt.FuncOp: "the kernel itself (lower.Lowering)",
}

# target-neutral descriptor ops: the descriptor pass (first in TILE_GPU) turns every one into TMA
# copies or pointer tiles, so none reaches the lowering
_BY_DESCRIPTOR_PASS = "lowered by passes/descriptors.py before the LLVM lowering (TMA or pointers)"
UNSUPPORTED.update(
    {
        cls: _BY_DESCRIPTOR_PASS
        for cls in (_tt.MakeTensorDescOp, _tt.DescriptorLoadOp, _tt.DescriptorStoreOp)
    }
)

PARTIAL: dict[type, str] = {
    _tt.AtomicRMWOp: "8/16-bit integer atomics; fmax/fmin on f16/bf16",
    _tt.DotOp: "runs on CUDA cores (FMA) only; tf32/fp8 precisions compute in full fp32",
}
