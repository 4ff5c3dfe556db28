"""The resource panel's figures (`compiled.resources`, the workbench report): the shared-memory plan
checked against the `tile-gpu` IR's memdesc types and the PTX's shared arrays, and the tensor-core
instruction counts against what the block shape and the IR's `warpsPerCTA` imply (and, where a
disassembler exists, the SASS against the PTX)."""

from __future__ import annotations

import functools
import re

import pytest
from tensor_core_kernels import matmul_kernel, matmul_signature

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.backends.nvptx.archs import ARCHS

CONFIGS = [  # (BM, BN, BK, num_warps, num_stages)
    (128, 128, 32, 4, 4),
    (64, 128, 64, 8, 3),
]


@functools.cache
def _matmul(config, dtype="fp16", out="*fp32", arch="sm_90"):
    bm, bn, bk, warps, stages = config
    return tw.compile(matmul_kernel, signature=matmul_signature(dtype, out, sizes=(4096,) * 3),
                      constexprs={"BM": bm, "BN": bn, "BK": bk, "PRECISION": "tf32",
                                  "OUT_F16": False},
                      target=arch, num_warps=warps, num_stages=stages, use_cache=False)


def _memdescs(tile_gpu: str) -> list[tuple[list[int], str]]:
    """(shape, element type) of every `ttg.local_alloc` result in the IR text."""
    found = re.findall(r"= ttg\.local_alloc.*?!ttg\.memdesc<([\dx]+)x(\w+),", tile_gpu)
    return [([int(d) for d in dims.split("x")], element) for dims, element in found]


BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1}


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "x".join(map(str, c)))
def test_shared_plan_matches_the_ir_and_the_launch_size(config):
    bm, bn, bk, warps, stages = config
    compiled = _matmul(config)
    plan = compiled.metadata.shared_plan
    allocs = _memdescs(compiled.asm["tile-gpu"])
    assert len(plan) == len(allocs) and allocs
    rings = [e for e in plan if e["use"] == "cp.async ring"]
    assert sorted(e["slot_bytes"] for e in rings) == sorted([bm * bk * 2, bk * bn * 2])
    for entry, (shape, element) in zip(plan, allocs):
        numel = 1
        for d in shape:
            numel *= d
        assert entry["shape"] == shape and entry["bytes"] >= numel * BYTES[element]
        if entry["use"] == "cp.async ring":
            assert entry["slots"] == shape[0] == stages
            assert entry["slots"] * entry["slot_bytes"] == numel * BYTES[element]
    staging = [e for e in plan if e["use"] == "epilogue staging"]
    assert [e["shape"] for e in staging] == [[bm, bn]] and staging[0]["dtype"] == "f32"
    # the staging tile is written after the loop's last async wait: it reuses the rings' bytes
    assert staging[0]["offset"] == 0
    rings_end = max(e["offset"] + e["bytes"] for e in rings)
    assert compiled.metadata.shared == max(rings_end, staging[0]["bytes"])
    summary = compiled.resources
    assert summary.plan_total == compiled.metadata.shared  # the bytes a launch asks for
    assert summary.shared_limit == ARCHS["sm_90a"].shared_per_block
    # regions overlap only where the epilogue's tile reuses the rings' bytes after the loop
    dynamic = [e for e in plan if e["space"] == "dynamic"]
    for i, a in enumerate(dynamic):
        for b in dynamic[i + 1:]:
            overlap = a["offset"] < b["offset"] + b["bytes"] and b["offset"] < a["offset"] + a["bytes"]
            assert not overlap or "epilogue staging" in (a["use"], b["use"])


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "x".join(map(str, c)))
def test_instruction_counts_follow_the_block_shape(config):
    bm, bn, bk, warps, stages = config
    compiled = _matmul(config)
    counts = compiled.resources.instructions["ptx"]
    wm, wn = map(int, re.search(r"#ttg\.mma<\{[^}]*warpsPerCTA=\[(\d+), (\d+)\]",
                                compiled.asm["tile-gpu"]).groups())
    assert wm * wn == warps
    # the loop body once: each warp's (BM/wm) x (BN/wn) share in m16n8k16 tiles
    mma = counts["mma.sync.m16n8k16 (f32.f16.f16.f32)"]
    assert mma == (bm // wm // 16) * (bn // wn // 8) * (bk // 16)
    # ldmatrix.x4 moves 4 8x8 matrices of 2-byte elements (512 B) per warp; .x2 half that
    per_warp = (bm // wm) * bk * 2 + bk * (bn // wn) * 2
    loaded = sum(n * (512 if ".x4" in k else 256) for k, n in counts.items()
                 if k.startswith("ldmatrix"))
    assert loaded == per_warp
    # every slot is filled by 16-byte copies, once per prologue stage and once in the loop
    slot_bytes = (bm * bk + bk * bn) * 2
    assert counts["cp.async 16 B"] == stages * slot_bytes // (16 * 32 * warps)
    assert counts["cp.async commit"] == 2 * stages  # a group per load (A and B), as Triton
    sass = compiled.resources.instructions.get("sass")
    if sass:  # a disassembler made SASS: one HMMA per mma, one LDSM per ldmatrix, LDGSTS per copy
        assert sum(n for k, n in sass.items() if k.startswith("HMMA.16816")) == \
            counts["mma.sync.m16n8k16 (f32.f16.f16.f32)"]
        assert sum(n for k, n in sass.items() if k.startswith("LDSM")) == \
            sum(n for k, n in counts.items() if k.startswith("ldmatrix"))
        assert sass["LDGSTS"] == counts["cp.async 16 B"]


@tw.jit
def _row_sums(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr, tl.sum(x, axis=0))
    tl.store(out_ptr + 1, tl.max(x, axis=0))


def test_static_arrays_match_the_ptx_declarations():
    compiled = tw.compile(_row_sums, signature={"x_ptr": "*fp32:16", "out_ptr": "*fp32:16"},
                          constexprs={"BLOCK": 1024}, target="sm_90", num_warps=8, use_cache=False)
    declared = [int(n) for n in re.findall(r"^\s*\.shared \.align \d+ \.b8 \S+\[(\d+)\];",
                                           compiled.asm["ptx"], re.M)]
    static = [e for e in compiled.metadata.shared_plan if e["space"] == "static"]
    assert declared and len(static) == len(declared)
    assert sum(e["bytes"] for e in static) >= sum(declared)
    assert all(e["use"] == "reduction partials" and e["line"] for e in static)
    assert compiled.resources.plan_total == compiled.metadata.shared


def test_summary_text_and_the_report_show_the_plan_and_counts():
    from tileworkbench.workbench.build import inspect

    compiled = _matmul(CONFIGS[0])
    text = str(compiled.resources)
    stages = CONFIGS[0][4]
    assert "cp.async ring `a`" in text and f"{stages} slots x 8 KB (128x32 f16)" in text
    assert "epilogue staging `" in text and "of 227 KB a block may have" in text
    mma = compiled.resources.instructions["ptx"]["mma.sync.m16n8k16 (f32.f16.f16.f32)"]
    assert f"mma.sync.m16n8k16 (f32.f16.f16.f32): {mma}" in text
    report = inspect(compiled)
    assert report.resources.shared_plan == compiled.metadata.shared_plan
    summary = "\n".join(report.summary_lines())
    assert "shared memory:" in summary and f"{stages} slots x 8 KB" in summary
    assert f"mma.sync.m16n8k16 (f32.f16.f16.f32): {mma}" in summary
    html = report._repr_html_()
    assert "<b>Shared memory</b>" in html and "cp.async ring `a`" in html


def test_the_plan_survives_the_cache(wait_for_cache_entries):
    args = dict(signature=matmul_signature("fp16", "*fp32", sizes=(4096,) * 3),
                constexprs={"BM": 64, "BN": 64, "BK": 32, "PRECISION": "tf32", "OUT_F16": False},
                target="sm_90", num_warps=4, num_stages=2)
    first = tw.compile(matmul_kernel, **args)
    wait_for_cache_entries(1)
    again = tw.compile(matmul_kernel, **args)
    assert again.metadata.cache_hit
    assert again.metadata.shared_plan == first.metadata.shared_plan and first.metadata.shared_plan
