"""What the TMA engine (`cp.async.bulk.tensor`, sm_90+) can take, from the CUDA driver API's rules for
`cuTensorMapEncodeTiled`: the one place the frontend (which descriptors lower to TMA), the runtime
(encoding the tensor map) and the tests read them. Anything outside these rules keeps the plain-load
lowering of descriptors, so TMA is never asked for something it would fault on.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..config import config

MAX_BOX = 256  # elements per box dimension
MAX_DIM = 2**32  # elements per global dimension
MAX_STRIDE = 2**40  # bytes per global stride
SWIZZLES = (32, 64, 128)  # the swizzle spans in bytes (CU_TENSOR_MAP_SWIZZLE_32B/64B/128B)
# the back end lowers rank-2 boxes only (its shared-tile machinery is 2-D)
TMA_RANK = 2


def box_fits(block_shape: Sequence[int], element_bytes: int, threads: int | None = None) -> bool:
    """Whether a block of `block_shape` can be one TMA box: rank 2, each dimension at most 256
    elements, and its contiguous row a multiple of 16 bytes; and, unless
    `config.tma_unverified`, a shape checked on the H200: a 128-byte row (128-byte swizzle) or
    one of 256 bytes or more (no swizzle), and at least 16 bytes per thread of `threads` (no
    thread holding a copy of another's part). The 32- and 64-byte swizzles gave wrong copies on the
    GPU (2026-12-01, small boxes; the cause is open), so those boxes keep the pointer lowering."""
    if len(block_shape) != TMA_RANK or not all(1 <= b <= MAX_BOX for b in block_shape):
        return False
    row = block_shape[-1] * element_bytes
    if row % 16:
        return False
    if config.tma_unverified:
        return True
    if row != 128 and row < 256:
        return False
    return threads is None or block_shape[0] * row >= 16 * threads


def swizzle_bytes(block_shape: Sequence[int], element_bytes: int) -> int:
    """The swizzle span of the shared tile a box lands in: the row's bytes when that is 32, 64 or 128
    (the 16-byte chunk index XORed with the row within the span's pattern), else 0 (no swizzle: rows
    dense in shared memory, as TMA allows only boxes whose row fits the span)."""
    row = block_shape[-1] * element_bytes
    return row if row in SWIZZLES else 0


def host_fits(address: int, shape: Sequence[int], strides: Sequence[int], element_bytes: int) -> bool:
    """Whether a host descriptor's tensor can be described to TMA: a 16-byte aligned base, each
    dimension below 2^32 elements, every stride but the last (1) a multiple of 16 bytes below 2^40."""
    if address % 16 or len(shape) != len(strides) or strides[-1] != 1:
        return False
    if not all(1 <= int(s) < MAX_DIM for s in shape):
        return False
    return all(int(s) * element_bytes % 16 == 0 and 0 < int(s) * element_bytes < MAX_STRIDE
               for s in strides[:-1])
