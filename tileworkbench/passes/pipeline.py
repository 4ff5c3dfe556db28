"""The pass pipelines, as plain lists, and the one runner that verifies and records the IR after
each pass.

`TILE_OPT` takes the `tile` stage to `tile-opt`. The GPU passes (axis info, layouts, coalescing,
...) that take `tile-opt` to `tile-gpu` get their own list, `TILE_GPU`, defined beside it; those
that read the target (`target_pass`) get the backend's `TargetInfo` from the runner as an
argument."""

from __future__ import annotations

from collections.abc import Callable

from ..ir import IRVerificationError, print_ir
from ..ir import verify as verify_ir
from ..ir.ops.tt import FuncOp
from ..target import TargetInfo, takes_target
from .canonicalize import canonicalize
from .coalesce import coalesce
from .combine import combine_broadcast_mul_reduce, combine_dot_add
from .cse import cse
from .dce import dce
from .descriptors import lower_descriptors
from .licm import licm
from .prefetch_tiles import prefetch_next_tile, prefetch_next_tma_tile
from .remove_layout_conversions import remove_layout_conversions
from .software_pipeline import pipeline
from .stage_operands import stage_dot_operands
from .wgmma import wgmma, wgmma_pipeline
from .tma import fold_tma_transpose
from .thread_locality import optimize_thread_locality
from .tma_operand_tiles import tma_operand_tiles
from .tma_pipeline import pipeline_tma
from .unroll import unroll

Pass = Callable[[FuncOp], bool]  # or, marked by `target.target_pass`, (FuncOp, TargetInfo) -> bool

TILE_OPT: list[Pass] = [  # tile -> tile-opt
    # Folding first: equal constants, and constants moved to the right of commutative ops, let cse
    # merge more, and folded branches and zero-trip loops shrink what the later passes look at.
    canonicalize,
    # cse before licm, so an invariant computed twice in a loop body is hoisted once.
    cse,
    # licm after cse; it only moves ops, so it leaves nothing for canonicalize to redo.
    licm,
    # loop_unroll_factor copies after licm, so what licm hoisted is not copied
    unroll,
    # cse again: what licm hoisted may equal ops already outside the loop (the same tl.arange
    # hoisted out of two loops, or a mask rebuilt after the loop), which the first cse could not
    # merge while one of them was inside the loop.
    cse,
    # dce last: unused loop-carried values, loops and ifs that only compute, anything left unused.
    dce,
]

TILE_GPU: list[Pass] = [
    # descriptors become TMA copies or pointer tiles as the target allows (its TargetInfo, and the
    # compiler's shared-memory fallback) first: every pass after it sees `ttng` ops or pointers.
    lower_descriptors,
    # TMA loads read transposed tiles themselves (before layouts: the fold changes result shapes).
    fold_tma_transpose,
    # sum(a[:, :, None] * b[None], axis=1) -> dot(a, b), then acc + dot(a, b) -> dot(a, b, acc)
    # first, so the accumulator takes the dot's layout.
    combine_broadcast_mul_reduce,
    combine_dot_add,
    # coalesce first: it runs axis info itself and gives every tensor a layout encoding, anchored at
    # global loads/stores/atomics; everything after it needs encodings. It reads the target's
    # num_warps and tensor cores.
    coalesce,
    # then remove, fold or rematerialize the ttg.convert_layout ops coalesce had to insert.
    remove_layout_conversions,
    # a reduction accumulated over a loop's iterations combines across threads once, after the loop
    # (it reads the layouts coalesce chose, as they are once the conversions are settled).
    optimize_thread_locality,
    # tensor-core operands that still need a conversion go through shared memory explicitly
    # (local_alloc + local_load), after the conversions that move no data are gone.
    stage_dot_operands,
    # dots with a version-3 #mma layout (sm_90a) read their staged tiles by wgmma descriptors; before
    # `pipeline`, which then fills those tiles with cp.async and fences them for the async proxy.
    wgmma,
    # then the staged loads of loops become cp.async copies into rings of `num_stages` slots,
    pipeline,
    # a tile loop around a pipelined k loop issues the next tile's first copies before this tile's
    # epilogue (after `pipeline`, whose prologue it moves),
    prefetch_next_tile,
    # and the TMA loads of loops TMA copies into rings of slots with an mbarrier each.
    pipeline_tma,
    # then a wgmma reading rings with a spare slot stays in flight for one iteration (wait(1)),
    wgmma_pipeline,
    # a tile loop around a TMA-pipelined k loop issues the next tile's first copies after the k
    # loop's drain (which `wgmma_pipeline` placed), before this tile's epilogue,
    prefetch_next_tma_tile,
    # and last, the TMA loads left out of rings that only feed wgmma operands land in shared tiles
    # of their own, read by descriptor (not shared -> registers -> shared).
    tma_operand_tiles,
]


def pass_name(fn: Pass) -> str:
    """The name a pass prints as (`canonicalize`, `cse`, ...): its `pass_name`, else `__name__`."""
    return getattr(fn, "pass_name", fn.__name__)


def run_passes(
    func: FuncOp, passes: list[Pass], *, target: TargetInfo | None = None, verify: bool = True
) -> list[tuple[str, str]]:
    """Run `passes` in order on `func`, in place.

    Args:
        func: the kernel's `tt.func`, changed in place.
        passes: pass functions, e.g. `TILE_OPT`.
        target: what the backend compiles for, handed to each pass marked `target_pass` (every
            list with one, such as `TILE_GPU`, needs it).
        verify: check the IR after each pass.

    Returns:
        One `(pass name, print_ir(func, locs=True))` per pass, in order: the pass-by-pass view.

    Raises:
        IRVerificationError: a pass left invalid IR (a tileworkbench bug); the message names it.
        TypeError: a pass reads the target and none was given (a tileworkbench bug).
    """
    snapshots: list[tuple[str, str]] = []
    for fn in passes:
        name = pass_name(fn)
        if not takes_target(fn):
            fn(func)
        elif target is None:
            raise TypeError(f"pass `{name}` reads the target: run_passes(..., target=TargetInfo)")
        else:
            fn(func, target)
        if verify:
            try:
                verify_ir(func)
            except IRVerificationError as error:
                raise IRVerificationError(f"after pass `{name}`: {error}") from None
        snapshots.append((name, print_ir(func, locs=True)))
    return snapshots
