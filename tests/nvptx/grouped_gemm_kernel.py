"""A grouped GEMM in the shape of Triton's tutorial 08 (our own code): the A, B and C of each problem
are addresses stored in int64 arrays, loaded and cast to pointers; a fixed grid of programs walks
the tiles of every problem in a runtime `while` inside a runtime `for`, each tile a runtime K loop.
Loads and stores are unmasked, as the tutorial's: the sizes must be whole tiles. `arena` lays the
arrays out in one buffer, as a caching allocator does, so what an unmasked tile writes past a
matrix lands in the next one (session 6's illegal address on the GPU, reproduced)."""

from __future__ import annotations

import numpy as np

import tileworkbench as tw
import tileworkbench.language as tl

SIGNATURE = {"a_ptrs": "*i64", "b_ptrs": "*i64", "c_ptrs": "*i64", "sizes": "*i32",
             "strides": "*i32", "group_size": "i32"}


@tw.jit
def grouped_matmul(a_ptrs, b_ptrs, c_ptrs, sizes, strides, group_size, NUM_PROGRAMS: tl.constexpr,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    tile = tl.program_id(0)
    first_tile = 0
    for g in range(group_size):
        m = tl.load(sizes + g * 3)
        n = tl.load(sizes + g * 3 + 1)
        k = tl.load(sizes + g * 3 + 2)
        tiles_n = tl.cdiv(n, BN)
        tiles = tl.cdiv(m, BM) * tiles_n
        while tile >= first_tile and tile < first_tile + tiles:
            lda = tl.load(strides + g * 3)
            ldb = tl.load(strides + g * 3 + 1)
            ldc = tl.load(strides + g * 3 + 2)
            a_ptr = tl.load(a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(c_ptrs + g).to(tl.pointer_type(tl.float16))
            rows = (tile - first_tile) // tiles_n * BM + tl.arange(0, BM)
            cols = (tile - first_tile) % tiles_n * BN + tl.arange(0, BN)
            offs_k = tl.arange(0, BK)
            a_block = a_ptr + rows[:, None] * lda + offs_k[None, :]
            b_block = b_ptr + offs_k[:, None] * ldb + cols[None, :]
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for _ in range(0, tl.cdiv(k, BK)):
                acc += tl.dot(tl.load(a_block), tl.load(b_block))
                a_block += BK
                b_block += BK * ldb
            tl.store(c_ptr + rows[:, None] * ldc + cols[None, :], acc.to(tl.float16))
            tile += NUM_PROGRAMS
        first_tile += tiles


class Arena:
    """Arrays carved one after another from one byte buffer (256-byte aligned), so a write past the
    end of one lands in the next, as in a caching allocator's segment; a guard region ends it."""

    def __init__(self, nbytes: int, guard: int = 1 << 16):
        self.buffer = np.zeros(nbytes + guard, np.uint8)
        self.used = 0
        self.limit = nbytes

    def array(self, values: np.ndarray) -> np.ndarray:
        start = -(-self.used // 256) * 256
        if start + values.nbytes > self.limit:
            raise ValueError("the arena is full")
        self.used = start + values.nbytes
        view = self.buffer[start:self.used].view(values.dtype).reshape(values.shape)
        view[...] = values
        return view


def grouped_inputs(sizes, seed: int, arena: Arena):
    """Random fp16 A (M x K) and B (K x N) per problem, NaN C, then (as 08's wrapper makes them after
    the C's) the address, size and stride tables, all in `arena`."""
    rng = np.random.default_rng(seed)
    a = [arena.array(rng.random((m, k)).astype(np.float16) - np.float16(0.5)) for m, n, k in sizes]
    b = [arena.array(rng.random((k, n)).astype(np.float16) - np.float16(0.5)) for m, n, k in sizes]
    c = [arena.array(np.full((m, n), np.nan, np.float16)) for m, n, k in sizes]
    tables = [arena.array(np.array([x.ctypes.data for x in xs], np.int64)) for xs in (a, b, c)]
    tables.append(arena.array(np.array([v for size in sizes for v in size], np.int32)))
    tables.append(arena.array(np.array([v for x, y, z in zip(a, b, c) for v in
                                        (x.shape[1], y.shape[1], z.shape[1])], np.int32)))
    return a, b, c, tables
