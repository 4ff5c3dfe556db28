"""The step both LLVM backends (NVPTX, cpu) take from `tile-opt` to `tile-gpu`: the shape check
their layouts need, then the GPU passes (`passes.pipeline.TILE_GPU`). Each backend hands them its
TargetInfo."""

from __future__ import annotations

from ...ir.ops import tt
from ...target import TargetInfo


def check_shapes(func: tt.FuncOp) -> None:
    """Layouts split dimensions into bits: every tensor dimension must be a power of two (as Triton)."""
    from ...errors import CompilationError
    from ...ir.types import TensorType

    for op in func.walk():
        for value in op.results:
            t = value.type
            if isinstance(t, TensorType) and any(d < 1 or d & (d - 1) for d in t.shape):
                where = f"{op.loc}: " if op.loc.line > 0 else ""
                raise CompilationError(
                    f"{where}`{op.name}` makes a tensor of shape {list(t.shape)}; the NVPTX back end "
                    "needs power-of-two dimensions",
                    loc=op.loc,
                )


def run_gpu_passes(func: tt.FuncOp, target: TargetInfo) -> list[tuple[str, str]]:
    """The `tile-opt` -> `tile-gpu` passes (`TILE_GPU`) for `target`, verified, with a snapshot
    after each."""
    from ...passes.pipeline import TILE_GPU, run_passes

    return run_passes(func, TILE_GPU, target=target)
