"""The twelve puzzles: every reference solution passes its puzzle in the interpreter (fresh random
inputs, the output poisoned with NaN, a float64 NumPy spec) and on a GPU; every one compiles to PTX
that ptxas accepts; a kernel with a classic mistake fails with the picture that shows it."""

from __future__ import annotations

import numpy as np
import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.backends.nvptx.tools import find_tool
from tileworkbench.workbench.puzzle_set import PUZZLES, check, puzzle, solution, solution_source

NUMBERS = [p.number for p in PUZZLES]


def test_twelve_puzzles_from_constant_add_to_quantized_matmul():
    assert NUMBERS == list(range(1, 13))
    titles = [p.title for p in PUZZLES]
    for needed in (
        "constant add",
        "matrix multiplication",
        "long softmax",
        "flash attention",
        "quantized matrix multiplication",
        "convolution",
        "backward",
    ):
        assert any(needed in t for t in titles), needed
    with pytest.raises(ValueError, match="puzzles 1 to 12, not 13"):
        puzzle(13)


@pytest.mark.parametrize("number", NUMBERS)
def test_solution_passes_in_the_interpreter(number):
    result = check(number, solution(number))
    assert result.passed, repr(result)
    assert f"all {int(np.prod(puzzle(number).out_shape))} elements match" in result.summary
    assert "@jit" in solution_source(number) and "tl." in solution_source(number)


def _signature(p, kernel) -> dict[str, str]:
    arrays = p.make_inputs(np.random.default_rng(0))
    types = ["*i32:16" if a.dtype.kind == "i" else "*fp32:16" for a in arrays] + ["*fp32:16"]
    types += ["fp32" if isinstance(v, float) else "i32" for v in p.scalars.values()]
    return dict(zip(kernel.signature.parameters, types))


@pytest.mark.skipif(find_tool("ptxas") is None, reason="needs ptxas")
@pytest.mark.parametrize("number", NUMBERS)
def test_solution_compiles_to_ptx_that_ptxas_accepts(number):
    from tileworkbench.backends.nvptx import assemble_cubin

    p, kernel = puzzle(number), solution(number)
    compiled = tw.compile(
        kernel,
        signature=_signature(p, kernel),
        constexprs=p.constexprs,
        target="sm_90a",
        use_cache=False,
    )
    assert assemble_cubin(compiled.asm["ptx"], "sm_90a").cubin


@pytest.mark.gpu
@pytest.mark.parametrize("number", NUMBERS)
def test_solution_on_the_gpu(number):
    import cupy as cp

    p, kernel = puzzle(number), solution(number)
    arrays = p.make_inputs(np.random.default_rng())
    out = cp.full(p.out_shape, cp.nan, cp.float32)
    kernel[p.grid](*[cp.asarray(a) for a in arrays], out, *p.scalars.values(), **p.constexprs)
    expected = p.spec(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays])
    got = cp.asnumpy(out).astype(np.float64)
    assert not np.isnan(got).any()
    # tl.dot may use tf32 on the GPU: the matmul-like puzzles get a looser bound
    tolerance = 2e-2 if p.number in (9, 11, 12) else 1e-4
    error = np.abs(got - expected).max() / max(np.abs(expected).max(), 1e-30)
    assert error < tolerance, (number, error)


@tw.jit
def attention_without_key_mask(
    q_ptr, k_ptr, v_ptr, z_ptr, N0, T, scale, B0: tl.constexpr, B1: tl.constexpr, D: tl.constexpr
):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + rows[:, None] * D + d[None, :])
    row_max = tl.full((B0,), float("-inf"), tl.float32)
    total = tl.zeros((B0,), dtype=tl.float32)
    acc = tl.zeros((B0, D), dtype=tl.float32)
    for start in range(0, T, B1):
        keys = start + tl.arange(0, B1)
        k = tl.load(k_ptr + keys[:, None] * D + d[None, :])  # no mask: the last block runs past T
        v = tl.load(v_ptr + keys[:, None] * D + d[None, :])
        s = tl.dot(q, tl.trans(k)) * scale
        new_max = tl.maximum(row_max, tl.max(s, 1))
        p = tl.exp(s - new_max[:, None])
        total = total * tl.exp(row_max - new_max) + tl.sum(p, 1)
        acc = acc * tl.exp(row_max - new_max)[:, None] + tl.dot(p, v)
        row_max = new_max
    tl.store(z_ptr + rows[:, None] * D + d[None, :], acc / total[:, None])


def test_a_missing_mask_fails_with_the_out_of_bounds_picture():
    result = check(9, attention_without_key_mask)
    assert not result.passed and "out-of-bounds" in result.summary
    text = repr(result)
    assert "puzzle 9: FAIL" in text and "OUT OF BOUNDS" in text and "program (0, 0, 0)" in text


@tw.jit
def matmul_one_k_block(
    a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)  # forgets to walk along K
    a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=rows[:, None] < M, other=0.0)
    b = tl.load(b_ptr + ks[:, None] * N + cols[None, :], mask=cols[None, :] < N, other=0.0)
    tl.store(
        z_ptr + rows[:, None] * N + cols[None, :],
        tl.dot(a, b),
        mask=(rows[:, None] < M) & (cols[None, :] < N),
    )


def test_a_wrong_answer_fails_and_says_where():
    result = check(11, matmul_one_k_block)
    assert not result.passed and "of 3500 elements differ" in result.summary
    # a partial sum can match the full one within tolerance by chance, but hardly ever
    assert int(result.summary.split(" of ")[0]) > 3400, result.summary
    assert "where the check fails" in repr(result)
