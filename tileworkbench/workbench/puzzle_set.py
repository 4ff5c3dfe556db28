"""The twelve tile puzzles, from a constant add to flash attention and a quantized matmul: for each
a statement, a NumPy spec (float64), the launch it is checked with, a skeleton to fill in, a hint.

`check(number, kernel)` runs a learner's kernel in the interpreter on fresh random inputs and says
PASS or FAIL with the pictures (puzzles.check_puzzle); `solution(number)` is the reference kernel
(puzzle_solutions.py), kept out of the notebook. notebooks/build_puzzles.py builds the notebook from
this list.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import cdiv
from .puzzles import PuzzleResult, check_puzzle


@dataclass(frozen=True)
class Puzzle:
    """One puzzle: what to compute, on which launch, and what the learner starts from."""

    number: int
    title: str
    statement: str  # markdown
    spec: Callable[..., np.ndarray]  # float64 NumPy, one argument per input
    inputs: dict[str, tuple[int, ...] | Callable]  # name -> shape (standard normal) or rng -> array
    out_shape: tuple[int, ...]
    grid: tuple[int, ...]
    scalars: dict[str, float]
    constexprs: dict[str, int]
    solution_name: str  # the reference kernel's name in puzzle_solutions.py
    stub: str  # the skeleton the learner fills in
    hint: str
    pid: tuple[int, ...] = (0, 0, 0)  # the program whose accesses are drawn
    tolerance: float = 1e-5

    def check(self, kernel) -> PuzzleResult:
        """Run `kernel` on this puzzle's launch and compare with the spec."""
        return check_puzzle(
            kernel,
            self.spec,
            self.inputs,
            self.out_shape,
            self.grid,
            self.scalars,
            self.constexprs,
            hint=self.hint,
            pid=self.pid,
            rtol=self.tolerance,
            title=f"puzzle {self.number}",
        )

    def make_inputs(self, rng: np.random.Generator) -> list[np.ndarray]:
        """Fresh inputs, as `check` makes them (float32 standard normal unless a maker is given)."""
        return [
            make(rng) if callable(make) else rng.standard_normal(make).astype(np.float32)
            for make in self.inputs.values()
        ]

    def spec_source(self) -> str:
        return inspect.getsource(self.spec).strip()


# -- the specs: what each kernel must compute, in float64 NumPy ------------------------------------


def spec_add(x):
    return x + 10


def spec_outer_add(x, y):
    return x[None, :] + y[:, None]


def spec_outer_relu(x, y):
    return np.maximum(x[None, :] * y[:, None], 0)


def spec_outer_relu_backward(x, y, dz):
    return np.where(x * y[None, :] > 0, dz * y[None, :], 0)


def spec_long_sum(x):
    return x.sum(axis=1)


def spec_long_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def spec_flash_attention(q, k, v):
    s = q @ k.T / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


def spec_conv2d(x, k):
    images, h, w = x.shape
    padded = np.zeros((images, h + k.shape[0], w + k.shape[1]))
    padded[:, :h, :w] = x
    z = np.zeros(x.shape)
    for a in range(k.shape[0]):
        for c in range(k.shape[1]):
            z += padded[:, a : a + h, c : c + w] * k[a, c]
    return z


def spec_matmul(a, b):
    return a @ b


def unpack_int4(packed):
    """(K / 8, N) int32 words -> (K, N) values 0..15: weight k is nibble k % 8 of word k // 8."""
    words = packed.view(np.uint32)
    nibbles = [(words >> (4 * i)) & 0xF for i in range(8)]
    return np.stack(nibbles, axis=1).reshape(-1, packed.shape[1]).astype(np.float64)


def spec_quant_matmul(a, w, scale, zero):
    group = a.shape[1] // scale.shape[0]
    q = unpack_int4(w)
    dequant = np.repeat(scale, group, axis=0) * (q - np.repeat(zero, group, axis=0))
    return a @ dequant


def _int32_words(shape):
    return lambda rng: (
        rng.integers(0, 1 << 32, shape, dtype=np.uint64).astype(np.uint32).view(np.int32)
    )


def _nibbles(shape):
    return lambda rng: rng.integers(0, 16, shape).astype(np.int32)


def _scales(shape):
    return lambda rng: rng.uniform(0.01, 0.1, shape).astype(np.float32)


# -- the puzzles ----------------------------------------------------------------------------------


def _stub(signature: str, todo: str) -> str:
    return f"@tw.jit\n{signature}\n    # {todo}\n    pass"


PUZZLES: list[Puzzle] = [
    Puzzle(
        1,
        "constant add",
        "Add 10 to each element of `x`: 32 elements, one program of `B0 = 32` lanes.",
        spec_add,
        {"x": (32,)},
        (32,),
        (1,),
        {"N0": 32},
        {"B0": 32},
        "add_kernel",
        _stub(
            "def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):",
            "offsets 0..B0-1, load x, add 10, store into z",
        ),
        "`tl.arange(0, B0)` gives the offsets 0..31; `x_ptr + offs` is a tile of pointers to load.",
    ),
    Puzzle(
        2,
        "constant add, many blocks",
        "Now `x` has `N0 = 200` elements and each program handles `B0 = 32` of them: the grid has "
        "`cdiv(200, 32) = 7` programs, and the last one runs past the end.",
        spec_add,
        {"x": (200,)},
        (200,),
        (7,),
        {"N0": 200},
        {"B0": 32},
        "add_mask_kernel",
        _stub(
            "def add_mask_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):",
            "this program's block of offsets, and a mask for the last block",
        ),
        "Program `pid` starts at `pid * B0`; `mask = offs < N0` switches off the lanes past the "
        "end (the picture of program 6 shows them in grey).",
        pid=(6, 0, 0),
    ),
    Puzzle(
        3,
        "outer vector add",
        "Add a row vector and a column vector: `x` has `N0 = 32` elements, `y` has `N1 = 32`, and "
        "one program computes the whole `32 x 32` output, `z[j, i] = x[i] + y[j]`.",
        spec_outer_add,
        {"x": (32,), "y": (32,)},
        (32, 32),
        (1,),
        {"N0": 32, "N1": 32},
        {"B0": 32, "B1": 32},
        "outer_kernel",
        _stub(
            "def outer_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):",
            "load x and y as 1-D tiles, broadcast them with [None, :] and [:, None]",
        ),
        "Row `j`, column `i` of `z` is at `z_ptr + j * N0 + i`: build that tile of offsets from "
        "`j[:, None]` and `i[None, :]`.",
    ),
    Puzzle(
        4,
        "outer vector add, many blocks",
        "The same sum on a `90 x 100` output (`N1 = 90` rows, `N0 = 100` columns) cut into "
        "`32 x 32` blocks: program `(p0, p1)` computes columns `p0 * B0 ...` and rows "
        "`p1 * B1 ...`. "
        "The grid is `(4, 3)`; the blocks on the right and bottom edges run past the output.",
        spec_outer_add,
        {"x": (100,), "y": (90,)},
        (90, 100),
        (cdiv(100, 32), cdiv(90, 32)),
        {"N0": 100, "N1": 90},
        {"B0": 32, "B1": 32},
        "outer_block_kernel",
        _stub(
            "def outer_block_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, "
            "B1: tl.constexpr):",
            "program_id(0) picks the columns, program_id(1) the rows; mask both edges",
        ),
        "A 2-D mask is the `&` of a column mask `i[None, :] < N0` and a row mask "
        "`j[:, None] < N1`.",
        pid=(3, 2, 0),
    ),
    Puzzle(
        5,
        "fused outer multiplication",
        "Multiply instead of add and apply a ReLU in the same kernel, so the product never goes to "
        "memory: `z[j, i] = max(x[i] * y[j], 0)` on the blocked `90 x 100` output of puzzle 4.",
        spec_outer_relu,
        {"x": (100,), "y": (90,)},
        (90, 100),
        (cdiv(100, 32), cdiv(90, 32)),
        {"N0": 100, "N1": 90},
        {"B0": 32, "B1": 32},
        "outer_relu_kernel",
        _stub(
            "def outer_relu_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, "
            "B1: tl.constexpr):",
            "as puzzle 4, with a product and tl.maximum(..., 0.0)",
        ),
        "`tl.maximum(tile, 0.0)` is a ReLU.",
    ),
    Puzzle(
        6,
        "fused outer multiplication, backward",
        "The gradient of `z = relu(x * y[None, :])` with respect to the matrix `x` (`90 x 100`), "
        "given `dz = dL/dz`: `dx[j, i] = dz[j, i] * y[i]` where `x[j, i] * y[i] > 0`, else 0. Read "
        "`x`, `y` and `dz`, write `dx`; blocks and grid as in puzzle 4.",
        spec_outer_relu_backward,
        {"x": (90, 100), "y": (100,), "dz": (90, 100)},
        (90, 100),
        (cdiv(100, 32), cdiv(90, 32)),
        {"N0": 100, "N1": 90},
        {"B0": 32, "B1": 32},
        "outer_relu_backward_kernel",
        _stub(
            "def outer_relu_backward_kernel(x_ptr, y_ptr, dz_ptr, dx_ptr, N0, N1, "
            "B0: tl.constexpr, B1: tl.constexpr):",
            "load the x and dz blocks and y's columns; tl.where picks the gradient",
        ),
        "`tl.where(x * y[None, :] > 0, dz * y[None, :], 0.0)`; `x`, `dz` and `dx` share one tile "
        "of offsets.",
    ),
    Puzzle(
        7,
        "long sum",
        "Sum each row of a `6 x 200` matrix. A row is longer than a tile: each program takes "
        "`B0 = 2` rows and walks along them `B1 = 32` columns at a time with a `for` loop, keeping "
        "a running total. `z[r] = sum_c x[r, c]`.",
        spec_long_sum,
        {"x": (6, 200)},
        (6,),
        (3,),
        {"N0": 6, "T": 200},
        {"B0": 2, "B1": 32},
        "long_sum_kernel",
        _stub(
            "def long_sum_kernel(x_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):",
            "acc = tl.zeros((B0,), tl.float32); for start in range(0, T, B1): ...",
        ),
        "Load with `other=0.0` so masked lanes add nothing, and `tl.sum(tile, 1)` sums along a "
        "row.",
        tolerance=1e-4,
    ),
    Puzzle(
        8,
        "long softmax",
        "The softmax of each row of a `6 x 200` matrix, again `B1 = 32` columns at a time: "
        "`z[r, c] = exp(x[r, c] - m_r) / sum_c' exp(x[r, c'] - m_r)` with `m_r` the row's maximum. "
        "Two passes over the row are enough: one for the maximum and the sum together (when the "
        "maximum grows, rescale the sum so far by `exp(old - new)`), one to write the output.",
        spec_long_softmax,
        {"x": (6, 200)},
        (6, 200),
        (3,),
        {"N0": 6, "T": 200},
        {"B0": 2, "B1": 32},
        "long_softmax_kernel",
        _stub(
            "def long_softmax_kernel(x_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):",
            "pass 1: running max and rescaled sum; pass 2: store exp(x - max) / sum",
        ),
        "Load masked lanes as `float('-inf')`: `exp(-inf) = 0` adds nothing, and they never win "
        "the maximum.",
        tolerance=1e-4,
    ),
    Puzzle(
        9,
        "simple flash attention",
        "One attention head: queries `q` (`64 x 16`), keys `k` and values `v` (`200 x 16`), "
        "`z = softmax(q @ k.T * scale) @ v` with `scale = 1 / sqrt(16)`. Each program takes "
        "`B0 = 16` queries and walks over the keys `B1 = 32` at a time, never holding the whole "
        "`64 x 200` score matrix: keep the running maximum, the running sum and the running "
        "output, rescaling the last two when the maximum grows (the long softmax's trick).",
        spec_flash_attention,
        {"q": (64, 16), "k": (200, 16), "v": (200, 16)},
        (64, 16),
        (4,),
        {"N0": 64, "T": 200, "scale": 0.25},
        {"B0": 16, "B1": 32, "D": 16},
        "flash_attention_kernel",
        _stub(
            "def flash_attention_kernel(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, scale, "
            "B0: tl.constexpr, B1: tl.constexpr, D: tl.constexpr):",
            "s = tl.dot(q, tl.trans(k)) * scale; then the online softmax and tl.dot(p, v)",
        ),
        "Give the keys past `T` a score of `float('-inf')` with `tl.where`; rescale with "
        "`exp(old_max - new_max)` before adding the new block.",
        tolerance=1e-4,
    ),
    Puzzle(
        10,
        "two-dimensional convolution",
        "Convolve each of 4 images (`8 x 16`) with a `4 x 4` kernel `k`: "
        "`z[b, i, j] = sum_{a, c} x[b, i + a, j + c] * k[a, c]`, where pixels past the bottom or "
        "right edge count as 0. One program per image; `tl.static_range` unrolls a loop over the "
        "kernel's 16 taps.",
        spec_conv2d,
        {"x": (4, 8, 16), "k": (4, 4)},
        (4, 8, 16),
        (4,),
        {"N0": 4, "H": 8, "W": 16},
        {"KH": 4, "KW": 4, "BH": 8, "BW": 16},
        "conv2d_kernel",
        _stub(
            "def conv2d_kernel(x_ptr, k_ptr, z_ptr, N0, H, W, KH: tl.constexpr, "
            "KW: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr):",
            "for a in tl.static_range(KH): for c in tl.static_range(KW): shifted tile * k[a, c]",
        ),
        "For tap `(a, c)` load the tile shifted by `a` rows and `c` columns, masked where it runs "
        "past the image (`other=0.0`), and add it times the scalar `k[a, c]`.",
        pid=(1, 0, 0),
    ),
    Puzzle(
        11,
        "matrix multiplication",
        "`z = a @ b` with `a` `70 x 40` and `b` `40 x 50`, in `32 x 32` output blocks (grid "
        "`(3, 2)`), walking along `K` `BK = 16` at a time and adding `tl.dot` of the two tiles "
        "into a float32 accumulator.",
        spec_matmul,
        {"a": (70, 40), "b": (40, 50)},
        (70, 50),
        (cdiv(70, 32), cdiv(50, 32)),
        {"M": 70, "N": 50, "K": 40},
        {"BM": 32, "BN": 32, "BK": 16},
        "matmul_kernel",
        _stub(
            "def matmul_kernel(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, "
            "BN: tl.constexpr, BK: tl.constexpr):",
            "acc = tl.zeros((BM, BN), tl.float32); for k in range(0, K, BK): acc += tl.dot(...)",
        ),
        "The `a` tile is `rows[:, None] * K + ks[None, :]`, the `b` tile `ks[:, None] * N + "
        "cols[None, :]`; mask all three edges (`M`, `N` and the last `K` block) with `other=0.0`.",
        pid=(2, 1, 0),
        tolerance=1e-4,
    ),
    Puzzle(
        12,
        "quantized matrix multiplication",
        "`z = a @ w` where `w` (`64 x 32`) is stored in 4 bits: `w_packed` (`8 x 32` int32) holds "
        "eight weights per word, weight `k` of column `n` in bits `4 * (k % 8)` ... of word "
        "`(k // 8, n)`. Groups of `G = 32` rows share a scale and a zero point: "
        "`w[k, n] = scale[k // G, n] * (q[k, n] - zero[k // G, n])`. `a` is `32 x 64`; blocks "
        "`16 x 16`, `BK = 32` (one group per step).",
        spec_quant_matmul,
        {
            "a": (32, 64),
            "w_packed": _int32_words((8, 32)),
            "scale": _scales((2, 32)),
            "zero": _nibbles((2, 32)),
        },
        (32, 32),
        (2, 2),
        {"M": 32, "N": 32, "K": 64},
        {"G": 32, "BM": 16, "BN": 16, "BK": 32},
        "quant_matmul_kernel",
        _stub(
            "def quant_matmul_kernel(a_ptr, w_ptr, scale_ptr, zero_ptr, z_ptr, M, N, K, "
            "G: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):",
            "unpack (word >> 4 * (k % 8)) & 0xF, dequantize, tl.dot into the accumulator",
        ),
        "Load word `(k // 8)` for every `k` of the tile (neighbouring rows load the same word), "
        "shift right by `((ks % 8) * 4)[:, None]` and mask with `& 0xF`; subtract the zero point "
        "before converting with `.to(tl.float32)`.",
        pid=(1, 1, 0),
        tolerance=1e-4,
    ),
]


def puzzle(number: int) -> Puzzle:
    """Puzzle `number` (1-12)."""
    if not 1 <= number <= len(PUZZLES):
        raise ValueError(f"there are puzzles 1 to {len(PUZZLES)}, not {number}")
    return PUZZLES[number - 1]


def check(number: int, kernel) -> PuzzleResult:
    """Check a kernel against puzzle `number`: PASS or FAIL, with the access and coverage
    pictures."""
    return puzzle(number).check(kernel)


def solution(number: int):
    """The reference kernel of puzzle `number`."""
    from . import puzzle_solutions

    return getattr(puzzle_solutions, puzzle(number).solution_name)


def solution_source(number: int) -> str:
    """The reference kernel's source, to read after trying."""
    return inspect.getsource(solution(number).fn).strip()
