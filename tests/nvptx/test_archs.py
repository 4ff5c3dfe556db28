"""The NVPTX architecture table (backends/nvptx/archs.py) and the typed target the passes get: every
row compiles and assembles, its facts reach the passes, the lowering and the resource panel, and no
backend leaves target facts on the `tt.func`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from nvptx_support import needs_ptxas, run_ptxas

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.backends import backend_for
from tileworkbench.backends.nvptx.archs import ARCHS, DEFAULT_ARCH
from tileworkbench.passes.pipeline import TILE_GPU, run_passes
from tileworkbench.runtime.compiler import _parse_signature, tile_opt_ir
from tileworkbench.target import TargetInfo
from tileworkbench.workbench.resources import limits_for

PACKAGE = Path(tw.__file__).parent


@tw.jit
def scale_add(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 2.0 + 1.0, mask=mask)


@tw.jit
def dot_tile(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    x = tl.load(a + rm[:, None] * K + rk[None, :])
    y = tl.load(b + rk[:, None] * N + rn[None, :])
    tl.store(c + rm[:, None] * N + rn[None, :], tl.dot(x, y))


SCALE_SIG = {"x": "*fp32", "out": "*fp32", "n": "i32"}
DOT_SIG = {"a": "*fp16", "b": "*fp16", "c": "*fp32"}
DOT_CONSTS = {"M": 64, "N": 64, "K": 32}


@needs_ptxas
@pytest.mark.parametrize("arch", list(ARCHS))
def test_every_row_compiles_and_assembles_a_trivial_kernel(arch, tmp_path):
    kernel = tw.compile(scale_add, signature=SCALE_SIG, constexprs={"BLOCK": 256}, target=arch,
                        use_cache=False)
    assert f".target {arch}" in kernel.asm["ptx"]
    assert f".version {int(ARCHS[arch].ptx[4:]) // 10}.{int(ARCHS[arch].ptx[4:]) % 10}" \
        in kernel.asm["ptx"]
    proc = run_ptxas(kernel.asm["ptx"], arch, tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("arch", list(ARCHS))
def test_the_row_decides_the_tensor_core_instruction(arch):
    ptx = tw.compile(dot_tile, signature=DOT_SIG, constexprs=DOT_CONSTS, target=arch,
                     use_cache=False).asm["ptx"]
    row = ARCHS[arch]
    assert ("wgmma.mma_async" in ptx) == row.wgmma
    assert ("mma.sync" in ptx) == (not row.wgmma)
    assert ("stmatrix" in ptx) <= row.stmatrix  # only where the row has it


def test_rows_are_what_the_registry_and_the_resource_panel_read():
    backend = backend_for("sm_90")
    assert backend.architectures() == tuple(ARCHS)
    assert backend.default_arch == DEFAULT_ARCH in ARCHS
    for name, row in ARCHS.items():
        assert backend.architecture(name) is row
        limits = limits_for(name)
        assert (limits.smem_per_block_max, limits.smem_per_sm, limits.threads_per_sm,
                limits.blocks_per_sm) == (row.shared_per_block, row.shared_per_sm,
                                          row.threads_per_sm, row.blocks_per_sm)
        assert backend.shared_limit(name) == row.shared_per_block
        assert backend.has_tma(name) <= row.tma
        assert backend.triton_target(name) == f"cuda:{row.sm}"
    assert limits_for("interpreter") == limits_for(DEFAULT_ARCH)  # a GPU model for the CPU targets
    assert ARCHS["sm_90a"].target_info().wgmma and not ARCHS["sm_90"].target_info().wgmma
    assert [n for n, r in ARCHS.items() if r.fp8_mma] == ["sm_89", "sm_90", "sm_90a", "sm_100",
                                                          "sm_100a"]


def test_target_info_carries_the_compile_options():
    info = ARCHS["sm_80"].target_info(num_warps=8, num_stages=4)
    assert (info.name, info.sm, info.tensor_cores, info.num_warps, info.num_stages) == \
        ("sm_80", 80, "mma.sync", 8, 4)
    assert info.shared_per_block == 163 * 1024 and not info.tma and not info.one_thread
    with pytest.raises(ValueError, match="tensor_cores"):
        TargetInfo(tensor_cores="tcgen05")


def _tile_opt(fn, signature, constexprs):
    return tile_opt_ir(fn.fn, _parse_signature(fn, signature), constexprs)[0]


@pytest.mark.parametrize("target", ["sm_90a", "sm_80", "cpu"])
def test_no_backend_leaves_an_attribute_on_the_func(target):
    func = _tile_opt(dot_tile, DOT_SIG, DOT_CONSTS)
    before = dict(vars(func))
    backend_for(target).lower(func, target, 4, 3, True)
    assert set(vars(func)) == set(before), sorted(set(vars(func)) - set(before))


def test_the_gpu_passes_refuse_to_run_without_a_target():
    func = _tile_opt(scale_add, SCALE_SIG, {"BLOCK": 256})
    with pytest.raises(TypeError, match="`lower_descriptors` reads the target"):
        run_passes(func, TILE_GPU)


def test_no_pass_or_backend_reads_target_facts_off_the_func():
    """The target reaches passes and the lowering as an argument (`TargetInfo`), never as a
    `getattr(func, ...)` or `func.<fact> = ...` on the IR."""
    found = []
    for path in sorted((PACKAGE / "passes").rglob("*.py")) + sorted(
            (PACKAGE / "backends").rglob("*.py")) + [PACKAGE / "ir" / "ops" / "ttg.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and \
                    node.args and ast.unparse(node.args[0]) in ("func", "self.func", "lw.func"):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(node)}")
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and ast.unparse(target.value) == "func" \
                            and target.attr != "loc":
                        where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
                        found.append(f"{where} {ast.unparse(node)}")
    assert not found, "\n".join(found)
