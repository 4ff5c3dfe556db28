"""The descriptor pass (passes/descriptors.py) picks TMA or pointers from the TargetInfo: the
frontend's IR is target-neutral, a TMA target whose alignment facts allow it gets `ttng` copies
(and host descriptors a `*.tensormap` parameter), anything else masked pointer tiles with a
`ttng.tma_fallback` saying why. The neutral ops run on the interpreter and the cpu target against
NumPy float64, with random inputs and poisoned outputs; the compiler's shared-memory retry runs
the frontend once."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.frontend import ArgSpec
from tileworkbench.ir import print_ir
from tileworkbench.passes.descriptors import lower_descriptors
from tileworkbench.passes.pipeline import run_passes
from tileworkbench.runtime.compiler import _parse_signature, tile_opt_ir
from tileworkbench.target import TargetInfo, TMAFallback
from tileworkbench.tools.tensor_descriptor import TensorDescriptor

RNG = np.random.default_rng(2512)
HOPPER = TargetInfo("sm_90a", 90, "wgmma", tma=True, tensormap_create=True)
AMPERE = TargetInfo("sm_80", 80, "mma.sync")


@tw.jit
def host_copy(src, dst, factor, BM: tl.constexpr, BN: tl.constexpr):
    """dst's tile = src's tile * factor (edge tiles run past the shape)."""
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    dst.store([row, col], src.load([row, col]) * factor)


@tw.jit
def device_copy(src_ptr, dst_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    """The same copy through descriptors made in the kernel (scale 2)."""
    src = tl.make_tensor_descriptor(src_ptr, shape=[M, N], strides=[stride, 1],
                                    block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(dst_ptr, shape=[M, N], strides=[stride, 1],
                                    block_shape=[BM, BN])
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    dst.store([row, col], src.load([row, col]) * 2.0)


def _host_signature(aligned: bool) -> list[ArgSpec]:
    desc = "tensordesc<fp32,16x32,zero>"
    return [ArgSpec("src", desc, aligned), ArgSpec("dst", desc, aligned), ArgSpec("factor", "fp32")]


def _device_signature(aligned: bool) -> list[ArgSpec]:
    return [ArgSpec("src_ptr", "*fp32", True), ArgSpec("dst_ptr", "*fp32", True),
            ArgSpec("M", "i32"), ArgSpec("N", "i32", True), ArgSpec("stride", "i32", aligned)]


def _chosen(fn, signature, target: TargetInfo) -> str:
    func = tile_opt_ir(fn.fn, _parse_signature(fn, signature), {"BM": 16, "BN": 32})[0]
    text = print_ir(func)
    assert "tt.descriptor_load" in text and "ttng." not in text  # the frontend is target-neutral
    run_passes(func, [lower_descriptors], target=target)
    return print_ir(func)


def test_host_descriptors_take_tma_where_the_launch_is_aligned():
    ir = _chosen(host_copy, _host_signature(True), HOPPER)
    assert "ttng.tma_load" in ir and "ttng.tma_store" in ir and "tt.descriptor" not in ir
    assert "%src.tensormap: !tt.ptr<i8> {tt.tensormap = 128}" in ir
    # the launch ABI: each map right after its descriptor's strides
    assert ir.index("%src.stride0") < ir.index("%src.tensormap") < ir.index("%dst: ")


@pytest.mark.parametrize("target, aligned, why", [
    (AMPERE, True, None), (HOPPER, False, "not whole 16-byte chunks")])
def test_host_descriptors_take_pointers_otherwise(target, aligned, why):
    ir = _chosen(host_copy, _host_signature(aligned), target)
    assert "tt.load" in ir and "tt.store" in ir and "ttng.tma_load" not in ir
    assert "tensormap" not in ir
    assert ("ttng.tma_fallback" in ir) == (why is not None) and (why is None or why in ir)


def test_the_fallback_keeps_named_host_descriptors_on_pointers():
    target = TargetInfo("sm_90a", 90, "wgmma", tma=True, tensormap_create=True,
                        tma_fallback=TMAFallback(("dst",), False, "no room"))
    ir = _chosen(host_copy, _host_signature(True), target)
    assert "ttng.tma_load" in ir and "ttng.tma_store" not in ir and "tt.store" in ir
    assert "%dst.tensormap" not in ir and "descriptor dst: no room" in ir


@pytest.mark.parametrize("target, aligned, tma", [
    (HOPPER, True, True), (HOPPER, False, False), (AMPERE, True, False),
    (TargetInfo("sm_90", 90, "mma.sync", tma=True), True, False)])
def test_device_descriptors_build_a_map_only_where_proven(target, aligned, tma):
    ir = _chosen(device_copy, _device_signature(aligned), target)
    assert ("ttng.tensormap_create" in ir) == tma and ("ttng.tma_load" in ir) == tma
    assert ("tt.load" in ir) != tma


def _poisoned(shape) -> np.ndarray:
    return np.full(shape, np.nan, np.float32)


@pytest.fixture(params=["interpreter", "cpu"])
def host_target(request, monkeypatch, kernel_cache_dir) -> str:
    """The targets without a GPU, both of which run the neutral ops (the cpu one lowered by the
    pass to pointers, the interpreter directly)."""
    from tileworkbench.backends import backend_for
    from tileworkbench.config import config

    monkeypatch.setattr(config, "interpret", request.param == "interpreter")
    monkeypatch.setattr(config, "target", request.param)
    monkeypatch.setattr(config, "cache_dir", kernel_cache_dir)
    if request.param == "cpu":
        monkeypatch.setattr(backend_for("cpu"), "vectorize", False)
    return request.param


def test_host_descriptors_run_against_float64(host_target):
    m, n = 40, 72  # edge tiles past the shape: padding read, nothing written outside
    src = RNG.standard_normal((m, n)).astype(np.float32)
    dst = _poisoned((m, n + 8))  # the poisoned columns past the descriptor's shape stay NaN
    grid = (tw.cdiv(m, 16), tw.cdiv(n, 32))
    host_copy[grid](TensorDescriptor(src, [m, n], [n, 1], [16, 32]),
                    TensorDescriptor(dst, [m, n], [n + 8, 1], [16, 32]), 1.5, BM=16, BN=32)
    np.testing.assert_allclose(dst[:, :n], src.astype(np.float64) * 1.5, rtol=1e-6)
    assert np.isnan(dst[:, n:]).all()


def test_device_descriptors_run_against_float64(host_target):
    m, n, stride = 33, 64, 80
    src = RNG.standard_normal((m, stride)).astype(np.float32)
    dst = _poisoned((m, stride))
    device_copy[(tw.cdiv(m, 16), tw.cdiv(n, 32))](src, dst, m, n, stride, BM=16, BN=32)
    np.testing.assert_allclose(dst[:, :n], src[:, :n].astype(np.float64) * 2.0, rtol=1e-6)
    assert np.isnan(dst[:, n:]).all()


def test_the_shared_memory_retry_runs_the_frontend_once(monkeypatch):
    """Where TMA's rings do not fit, only the backend runs again, on a copy of the tile-opt IR."""
    from tileworkbench.backends.nvptx import archs
    from tileworkbench.config import config
    from tileworkbench.runtime import compiler

    monkeypatch.setattr(config, "tma", True)
    calls = []
    generate = compiler.generate
    monkeypatch.setattr(compiler, "generate", lambda *a, **k: calls.append(1) or generate(*a, **k))
    row = archs.ARCHS["sm_90a"]
    monkeypatch.setitem(archs.ARCHS, "sm_90a", dataclasses.replace(row, shared_per_block=2048))
    kernel = tw.compile(host_copy, signature=_host_signature(True), constexprs={"BM": 16, "BN": 32},
                        target="sm_90a", use_cache=False)
    assert kernel.launch_metadata.tma_fallback is not None  # it did retry
    assert calls == [1]
