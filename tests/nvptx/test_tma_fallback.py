"""Where TMA's rings and staged tiles do not fit in shared memory, the compiler keeps descriptors on
pointers, as few as fit, of those the ones that leave the most bytes on TMA (runtime/compiler.py
`_fallbacks`, `_compile_fitting`):
host descriptors among them take no tensor map, each choice is a `ttng.tma_fallback` note in the IR
and `metadata.tma_fallback` names them, so the launcher passes base, shape and strides only. The
limit is lowered here (monkeypatched) so that small kernels show each case in a second; the
emulated run checks a kernel with one descriptor on TMA and one on pointers against float64."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest
from cpu_emulator import Emulator
from device_desc_kernels import device_desc_copy
from tma_standin import host_tensor_map

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.backends.nvptx import archs
from tileworkbench.errors import OutOfResources
from tileworkbench.frontend import ArgSpec
from tileworkbench.target import TMAFallback
from tileworkbench.runtime.binder import launch_parameters

BM, BN = 32, 64
# src: 32 x 64 fp16 (4 KB a block), dst: 32 x 64 fp32 (8 KB): with both on TMA the kernel stages
# 9232 bytes; with dst on pointers 5136; with neither 0
SIGNATURE = [ArgSpec("src", f"tensordesc<fp16,{BM}x{BN},zero>", True),
             ArgSpec("dst", f"tensordesc<fp32,{BM}x{BN},zero>", True)]


@tw.jit
def widen_copy(src, dst, BM: tl.constexpr, BN: tl.constexpr):
    """dst's tile = 2 * src's tile, widened from fp16 to fp32."""
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    dst.store([row, col], src.load([row, col]).to(tl.float32) * 2.0)


@pytest.fixture(autouse=True)
def tma_on(monkeypatch):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)


def _compile(monkeypatch, limit: int | None, fn=widen_copy, signature=SIGNATURE, constexprs=None):
    if limit is not None:
        _limit_shared(monkeypatch, limit)
    return tw.compile(fn, signature=signature, constexprs=constexprs or dict(BM=BM, BN=BN),
                      target="sm_90a", use_cache=False)


def _notes(kernel) -> list[str]:
    lines = kernel.asm["tile-gpu"].splitlines()
    return [line.strip() for line in lines if "ttng.tma_fallback" in line]


def test_a_kernel_that_fits_keeps_every_tensor_map(monkeypatch):
    kernel = _compile(monkeypatch, None)
    assert kernel.launch_metadata.tma_fallback is None
    assert kernel.ptx.count("cp.async.bulk.tensor") == 3  # the load, the store as 2 column boxes
    tensor_maps, flat = launch_parameters(SIGNATURE, kernel.launch_metadata)
    assert tensor_maps == {"src": "fp16", "dst": "fp32"}
    assert [s.name for s in flat][-1] == "dst.tensormap"


def test_one_descriptor_goes_to_pointers_where_that_fits(monkeypatch):
    """At 9000 bytes the store's 8 KB staging goes and the load keeps TMA (the load alone off TMA
    leaves more bytes on it, and is tried first, but does not fit)."""
    kernel = _compile(monkeypatch, 9000)
    md = kernel.launch_metadata
    assert md.tma_fallback["host"] == ["dst"]
    assert md.shared <= 9000
    assert kernel.ptx.count("cp.async.bulk.tensor") == 1
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in kernel.ptx  # a load, not a store
    notes = _notes(kernel)
    assert len(notes) == 1 and "descriptor dst: TMA's rings and staged tiles need 9232 bytes" in notes[0]
    assert "more than the 9000 a block may have" in notes[0]
    tensor_maps, flat = launch_parameters(SIGNATURE, md)
    assert tensor_maps == {"src": "fp16"}
    assert [s.name for s in flat] == ["src", "src.shape0", "src.shape1", "src.stride0",
                                      "src.tensormap", "dst", "dst.shape0", "dst.shape1",
                                      "dst.stride0"]
    assert kernel.ptx.count(".param .align 64 .b8") == 1  # one 128-byte tensor map parameter
    if shutil.which("ptxas"):  # and ptxas assembles it
        assert kernel.cubin is not None and kernel.metadata.n_spills == 0


def test_every_descriptor_on_pointers_when_only_that_fits(monkeypatch):
    kernel = _compile(monkeypatch, 2000)
    assert kernel.launch_metadata.tma_fallback["host"] == ["dst", "src"]
    assert "cp.async.bulk.tensor" not in kernel.ptx and ".b8" not in kernel.ptx.split("{")[0]
    assert launch_parameters(SIGNATURE, kernel.launch_metadata)[0] == {}
    assert len(_notes(kernel)) == 2


@tw.jit
def staged_dot(a_desc, b_desc, c_desc, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """One tile of a @ b: its operands are staged in shared memory on the pointer path too."""
    c = tl.dot(a_desc.load([0, 0]), b_desc.load([0, 0]))
    c_desc.store([0, 0], c.to(tl.float16))


def test_where_nothing_fits_the_error_names_the_kernel_and_lines(monkeypatch):
    signature = [ArgSpec("a_desc", "tensordesc<fp16,64x64,zero>", True),
                 ArgSpec("b_desc", "tensordesc<fp16,64x64,zero>", True),
                 ArgSpec("c_desc", "tensordesc<fp16,64x64,zero>", True)]
    with pytest.raises(OutOfResources) as caught:
        _compile(monkeypatch, 1024, staged_dot, signature, dict(BM=64, BN=64, BK=64))
    message = str(caught.value)
    assert "shared memory of staged_dot (" in message and "test_tma_fallback.py:" in message
    assert "(line " in message and "hardware limit 1024" in message


def test_descriptors_made_in_the_kernel_keep_pointers_with_a_note(monkeypatch):
    signature = {"src_ptr": "*fp32:16", "dst_ptr": "*fp32:16", "M": "i32:16", "N": "i32:16",
                 "stride_src": "i32:16", "stride_dst": "i32:16", "factor": "fp32"}
    kernel = _compile(monkeypatch, 2000, device_desc_copy, signature, dict(BM=16, BN=32))
    assert kernel.launch_metadata.tma_fallback == {
        "host": [], "device": True, "reason": kernel.launch_metadata.tma_fallback["reason"]}
    assert "tensormap" not in kernel.ptx and "cp.async.bulk.tensor" not in kernel.ptx
    notes = _notes(kernel)
    assert len(notes) == 2 and all("descriptor made in the kernel: TMA's rings" in n for n in notes)


def test_the_choice_survives_the_cache(monkeypatch, wait_for_cache_entries):
    """A kernel loaded from the cache launches as compiled: same tensor maps, same IR notes."""
    from tileworkbench.ir import print_ir

    _limit_shared(monkeypatch, 9000)
    compile_args = dict(signature=SIGNATURE, constexprs=dict(BM=BM, BN=BN), target="sm_90a")
    first = tw.compile(widen_copy, **compile_args)
    wait_for_cache_entries(1)
    again = tw.compile(widen_copy, **compile_args)
    assert again.metadata.cache_hit
    assert again.launch_metadata.tma_fallback == first.launch_metadata.tma_fallback
    assert launch_parameters(SIGNATURE, again.launch_metadata)[0] == {"src": "fp16"}
    assert "descriptor dst: TMA's rings" in print_ir(again.ir)


def test_one_descriptor_on_tma_one_on_pointers_emulated(monkeypatch):
    """The kernel as `test_one_descriptor_goes_to_pointers_where_that_fits` compiled it, run on the
    emulator with the parameters the launcher passes: src through its tensor map, dst as base,
    shape and strides. Edge tiles: 70 x 150 is not whole 32 x 64 blocks."""
    fallback = TMAFallback(("dst",), True, "shared memory (test)")
    emulator = Emulator(widen_copy, SIGNATURE, dict(BM=BM, BN=BN), num_warps=4, tma=True,
                        tma_fallback=fallback)
    rng = np.random.default_rng(11)
    rows, cols = 70, 152  # rows of 304 (fp16) and 608 (fp32) bytes: whole 16-byte chunks
    src = rng.standard_normal((rows, cols)).astype(np.float16)
    dst = np.full((rows, cols), np.nan, np.float32)
    grid = (-(-rows // BM), -(-cols // BN))
    emulator.launch(grid, src, rows, cols, cols, host_tensor_map(src, (BM, BN)),
                    dst, rows, cols, cols)
    reference = src.astype(np.float64) * 2.0
    error = np.abs(dst - reference) / np.maximum(np.abs(reference), 1.0)
    assert error.max() <= 1e-7


@pytest.mark.gpu
@pytest.mark.parametrize("limit, on_pointers", [(9000, ["dst"]), (2000, ["dst", "src"])])
def test_launches_pass_no_tensor_map_for_what_stays_on_pointers(monkeypatch, tmp_path, limit,
                                                               on_pointers):
    """On the GPU, through the JIT on CuPy arrays: the launcher passes the tensor maps the compiled
    kernel takes and base, shape and strides for the rest; edge tiles, dst poisoned, float64."""
    from tileworkbench.cuda.device import device_properties, gpu_available
    from tileworkbench.tools.tensor_descriptor import TensorDescriptor

    if not gpu_available() or int(device_properties().arch[3:5]) < 90:
        pytest.skip("needs an sm_90+ GPU with CuPy")
    cp = pytest.importorskip("cupy")
    from tileworkbench.config import config

    monkeypatch.setattr(config, "cache_dir", tmp_path)  # the lowered limit is no part of the key
    _limit_shared(monkeypatch, limit)
    widen_copy.clear_cache()
    rows, cols = 70, 152
    host = np.random.default_rng(12).standard_normal((rows, cols)).astype(np.float16)
    src = cp.asarray(host)
    dst = cp.full((rows, cols), np.nan, np.float32)
    grid = (-(-rows // BM), -(-cols // BN))
    widen_copy[grid](TensorDescriptor.from_tensor(src, [BM, BN]),
                     TensorDescriptor.from_tensor(dst, [BM, BN]), BM=BM, BN=BN)
    compiled = next(iter(widen_copy.cache.values())).compiled
    assert compiled.launch_metadata.tma_fallback["host"] == on_pointers
    reference = host.astype(np.float64) * 2.0
    error = np.abs(dst.get() - reference) / np.maximum(np.abs(reference), 1.0)
    assert error.max() <= 1e-7
    widen_copy.clear_cache()


def _limit_shared(monkeypatch, limit: int) -> None:
    """Hopper's rows of the architecture table with `limit` bytes of shared memory per block."""
    for name in ("sm_90", "sm_90a"):
        row = archs.ARCHS[name]
        monkeypatch.setitem(archs.ARCHS, name, dataclasses.replace(row, shared_per_block=limit))
