"""What the TMA engine (`cp.async.bulk.tensor`, sm_90+) can take, from the CUDA driver API's rules
for `cuTensorMapEncodeTiled`, the PTX ISA and what the H200 showed: the one place the descriptor
pass (passes/descriptors.py: which descriptors and accesses lower to TMA), the runtime (encoding the
tensor map, which parameters a launch passes), the back end (the copies of one box) and the tests
read them. Anything outside these rules keeps the pointer
lowering of descriptors, so TMA is never asked for something it would fault on or write past.
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_BOX = 256  # elements per box dimension
MAX_DIM = 2**32  # elements per global dimension
MAX_STRIDE = 2**40  # bytes per global stride
SWIZZLES = (32, 64, 128)  # the swizzle spans in bytes (CU_TENSOR_MAP_SWIZZLE_32B/64B/128B)
WIDEST_SWIZZLE = 128
SWIZZLE_ROWS = 8  # rows of one swizzle pattern
CHUNK = 16  # bytes: TMA moves 16-byte chunks of the innermost dimension
# the back end lowers rank-2 boxes only (its shared-tile machinery is 2-D)
TMA_RANK = 2


def box_fits(block_shape: Sequence[int], element_bytes: int) -> bool:
    """Whether a block of `block_shape` can be copied by TMA: rank 2, each dimension at most 256
    elements, and its contiguous row a multiple of 16 bytes."""
    if len(block_shape) != TMA_RANK or not all(1 <= b <= MAX_BOX for b in block_shape):
        return False
    return block_shape[-1] * element_bytes % CHUNK == 0


def tma_box(block_shape: Sequence[int], element_bytes: int) -> tuple[int, int]:
    """(inner box elements, swizzle bytes) of the copies that move one block: a row of 32 or 64
    bytes is one box swizzled by its own width; a row of a multiple of 128 bytes is split into
    128-byte column blocks, one box each, swizzled by 128 (TMA needs a box row to fit the span; the
    blocks land one after another, which is the `#nvmma_shared` layout wgmma reads); any other row,
    and any block of fewer than a multiple of 8 rows, is one unswizzled box. (The swizzle is on
    address bits and repeats every 8 rows: a column block or ring slot of other row counts would
    start in the middle of the pattern.)"""
    row = block_shape[-1] * element_bytes
    if block_shape[0] % SWIZZLE_ROWS:
        return block_shape[-1], 0
    if row in SWIZZLES[:2]:
        return block_shape[-1], row
    if row % WIDEST_SWIZZLE == 0:
        return WIDEST_SWIZZLE // element_bytes, WIDEST_SWIZZLE
    return block_shape[-1], 0


def swizzle_bytes(block_shape: Sequence[int], element_bytes: int) -> int:
    """The swizzle span of the shared tile a block lands in (`tma_box`): 32, 64, 128 or 0."""
    return tma_box(block_shape, element_bytes)[1]


def host_fits(
    address: int, shape: Sequence[int], strides: Sequence[int], element_bytes: int
) -> bool:
    """Whether a host descriptor's tensor can be described to TMA: a 16-byte aligned base, each
    dimension below 2^32 elements, every stride but the last (1) a multiple of 16 bytes below 2^40,
    and an innermost extent of whole 16-byte chunks: TMA stores write whole chunks, so a 45-column
    fp32 row (180 bytes) at a stride of 48 would get columns 45..47 written (seen on the H200;
    Triton issue 11583)."""
    if address % CHUNK or len(shape) != len(strides) or strides[-1] != 1:
        return False
    if not all(1 <= int(s) < MAX_DIM for s in shape) or int(shape[-1]) * element_bytes % CHUNK:
        return False
    return all(
        int(s) * element_bytes % CHUNK == 0 and 0 < int(s) * element_bytes < MAX_STRIDE
        for s in strides[:-1]
    )


def inner_offset_aligned(multiple: int, element_bytes: int) -> bool:
    """Whether an innermost box coordinate known to be a multiple of `multiple` elements starts on a
    16-byte chunk: TMA traps (cudaErrorIllegalInstruction on the H200) on one that does not."""
    return multiple * element_bytes % CHUNK == 0


def nan_refusal(padding: str, is_float: bool, bits: int) -> str | None:
    """Why TMA cannot fill the padding of a block of this element type, or None."""
    if padding == "nan" and (not is_float or bits < 16):
        return "TMA fills NaN for 16- to 64-bit floats only"
    return None


def box_refusal(block_shape: Sequence[int], element: str, bits: int) -> str | None:
    """Why TMA cannot copy a block of `block_shape` elements of `element` (`bits` wide), or None."""
    if box_fits(block_shape, max(1, bits // 8)):
        return None
    return (
        f"TMA cannot copy a {'x'.join(map(str, block_shape))} block of {element} (rank 2, at "
        "most 256 per dimension, rows of whole 16-byte chunks)"
    )


def host_refusal(
    block_shape: Sequence[int], element: str, is_float: bool, bits: int, padding: str, aligned: bool
) -> str | None:
    """Why a host descriptor parameter cannot take a tensor map on a target with TMA, or None:
    `aligned` is its launch's `:16` (base, strides and innermost extent whole 16-byte chunks,
    `host_fits`). The runtime (which parameters a launch passes) and the descriptor pass (which
    descriptors lower to TMA) both ask this."""
    reason = nan_refusal(padding, is_float, bits)
    if reason is None and not aligned:
        reason = (
            "the launch's base, strides or innermost extent are not whole 16-byte chunks "
            "(tma_rules.host_fits)"
        )
    return reason or box_refusal(block_shape, element, bits)
