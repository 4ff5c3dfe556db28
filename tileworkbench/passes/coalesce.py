"""`coalesce`: chooses a blocked layout for every global load, store and atomic so that consecutive lanes
touch consecutive addresses and each thread moves up to 16 bytes at a time, then lays out every other
tensor around those anchors (`layouts.assign_layouts`). Needs `axis_info`; reads the warp count
and, for `tt.dot`, the tensor cores from the target (`TargetInfo`; none: every dot on the FMA
path). After it, every tensor type has an encoding.
"""

from __future__ import annotations

from ..ir.ops import tt
from ..ir.ops.ttg import layout_chooser
from ..ir.types import PointerType, TensorType
from ..target import TargetInfo, target_pass
from .axis_info import axis_info
from .layouts import assign_layouts, dot_result_encoding, is_tensor
from .dot_layout import dot_encoding
from .wgmma import operand_order

_MEMORY = (tt.LoadOp, tt.StoreOp, tt.AtomicRMWOp, tt.AtomicCASOp)


def _order(contiguity: tuple[int, ...]) -> tuple[int, ...]:
    """Dimensions from most to least contiguous; ties keep the row-major preference (last dim fastest)."""
    rank = len(contiguity)
    return tuple(sorted(range(rank), key=lambda d: (-contiguity[d], -d)))


def _vector_width(op, info, order, num_threads: int) -> int:
    ptr = op.ptr
    elem_bytes = max(1, ptr.type.element.pointee.bitwidth // 8)
    fast = order[0]
    contig = info.contiguity[fast]
    div_elems = max(1, info.divisibility[fast] // elem_bytes)
    vec = min(contig, div_elems, max(1, 16 // elem_bytes))
    numel = ptr.type.numel
    vec = min(vec, max(1, numel // num_threads))
    if isinstance(op, (tt.AtomicRMWOp, tt.AtomicCASOp)):
        vec = 1
    return max(1, vec)


@target_pass
def coalesce(func: tt.FuncOp, target: TargetInfo) -> bool:
    """Assign layouts to all tensors, anchored at coalesced global-memory accesses. Returns True."""
    num_warps = target.num_warps
    one_thread = target.one_thread  # the cpu target: one thread holds everything
    blocked = layout_chooser(one_thread)
    analysis = axis_info(func)
    memory = [
        op
        for op in func.walk()
        if isinstance(op, _MEMORY)
        and is_tensor(op.ptr)
        and isinstance(op.ptr.type.element, PointerType)
    ]
    choices = {}
    for op in memory:
        info = analysis.info(op.ptr)
        order = _order(info.contiguity)
        vec = _vector_width(op, info, order, 32 * num_warps)
        key = (op.ptr.type.shape, order)
        choices[id(op)] = key
        choices[key] = max(choices.get(key, 1), vec)
    # tensor cores where the target has them
    tensor_cores = target.has_tensor_cores
    users: dict[int, list] = {}
    for op in func.walk():
        for v in op.operands:
            users.setdefault(id(v), []).append(op)
    load_orders = {key: choice[1] for key, choice in choices.items() if isinstance(key, int)}
    anchors = []
    for op in func.walk():
        if id(op) in choices:
            shape, order = choices[id(op)]
            anchors.append((op, blocked(shape, num_warps, choices[(shape, order)], order)))
        elif isinstance(op, tt.DotOp) and isinstance(op.result.type, TensorType):
            # wgmma (sm_90a): the operands' memory orders decide which descriptors fit
            orders = (
                (operand_order(op.a, load_orders), operand_order(op.b, load_orders))
                if target.wgmma
                else None
            )
            mma = (
                dot_encoding(op, num_warps, target.fp8_mma, users, orders) if tensor_cores else None
            )
            anchors.append(
                (op, mma or dot_result_encoding(op.result.type.shape, num_warps, one_thread))
            )
    assign_layouts(func, num_warps, anchors, one_thread)
    return True
