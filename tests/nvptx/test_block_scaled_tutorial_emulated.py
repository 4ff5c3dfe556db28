"""Tutorial 10's block-scaled matmul compiled for sm_90a and run on the CPU emulator (wgmma, TMA and
mbarrier stand-ins), each of its four formats, on the path the compiler chooses for an H200: TMA
where a descriptor takes it and the kernel fits in shared memory, pointers for what does not fit
(runtime/compiler.py `_compile_fitting`). Fresh random inputs, C poisoned with NaN, float64
reference, relative error.

In CI the kernel is tests/frontend/block_scaled_kernel.py's `tutorial_block_scaled_matmul` (ours,
written as the tutorial writes its kernel) at 128 x 128 tiles with the tutorial's BLOCK_K and
NUM_STAGES, and once with C kept on pointers (launched without its tensor map), as the compiler
chooses where C's TMA staging does not fit. Where the tutorial files are (TRITON_TUTORIALS_DIR), the
tutorial's own kernel at its own configs: each format fits, and mxfp4 emulated.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
from cpu_emulator import Emulator
from tma_standin import host_tensor_map

import tileworkbench as tw
from tileworkbench.backends.nvptx import archs
from tileworkbench.frontend import ArgSpec
from tileworkbench.frontend.descriptor_args import TMAFallback, flatten_descriptor
from tileworkbench.runtime.binder import launch_parameters
from tileworkbench.runtime.specialize import arg_spec, key_part


from block_scaled_kernel import (  # noqa: E402
    TUTORIAL_STAGES, make_inputs, tutorial_block_scaled_matmul, tutorial_blocks,
)

NAMES = ["a_desc", "a_scale_desc", "b_desc", "b_scale_desc", "c_desc"]
FORMATS = ["mxfp8", "mxfp4", "nvfp4", "mixed"]
H200_SHARED = 232448
# e4m3/e2m1 products are exact in bf16 and summed in fp32; C is fp16 (2^-11 relative)
TOLERANCE = 2e-3


@pytest.fixture(autouse=True)
def tma_on(monkeypatch):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)


def compiler_choice(monkeypatch, fn, signature, constexprs, limit: int = H200_SHARED):
    """The launch metadata of `fn` compiled for sm_90a with `limit` bytes of shared memory: its
    shared bytes and `tma_fallback`. Both are settled when the lowering places shared memory, before
    LLVM, so LLVM's optimizer, its PTX emission and ptxas are skipped (minutes for these kernels)."""
    from tileworkbench.backends.nvptx import codegen
    from tileworkbench.backends.nvptx.backend import NvptxBackend

    _limit_shared(monkeypatch, limit)
    with monkeypatch.context() as patch:
        patch.setattr(codegen, "optimize", lambda text, *args: "")
        patch.setattr(codegen, "emit_ptx", lambda *args: "")
        patch.setattr(NvptxBackend, "finish", lambda self, kernel, recompile: None)
        kernel = tw.compile(fn, signature=signature, constexprs=constexprs, target="sm_90a",
                            num_warps=4, use_cache=False)
    return kernel.launch_metadata


def host_signature(descriptors) -> list[ArgSpec]:
    """The ArgSpecs a launch on GPU arrays would see: NumPy bases never go to TMA at launch, but
    the emulator's TMA stand-in copies from host memory, so 16-byte aligned ones may."""
    specs = []
    for name, desc in zip(NAMES, descriptors):
        kind = arg_spec(name, key_part(desc)).type
        aligned = desc.base.ctypes.data % 16 == 0 and all(
            s * desc.base.itemsize % 16 == 0 for s in desc.strides[:-1])
        specs.append(ArgSpec(name, kind, aligned and desc.shape[-1] * desc.base.itemsize % 16 == 0))
    return specs


def run_emulated(fn, descriptors, signature, constexprs, fallback: TMAFallback, grid) -> None:
    """Launch `fn` on the emulator with the parameters the launcher passes for `fallback`'s choice:
    a host tensor map for each descriptor that takes one, base/shape/strides for the others."""
    emulator = Emulator(fn, signature, constexprs, num_warps=4, wgmma=True, tma=True,
                        tma_fallback=fallback)
    md = SimpleNamespace(target="sm_90a", tma_fallback=fallback.as_dict())
    tensor_maps, _ = launch_parameters(signature, md)
    args = []
    for name, desc in zip(NAMES, descriptors):
        host_map = (lambda d: host_tensor_map(d.base, d.block_shape)) if name in tensor_maps else None
        args += flatten_descriptor(desc, host_map)
    args = [a.view(np.uint8) if isinstance(a, np.ndarray) and a.dtype.itemsize == 1 and
            a.dtype != np.uint8 and a.ndim else a for a in args]
    emulator.launch(grid, *args)
    return tensor_maps


def relative_error(c: np.ndarray, reference: np.ndarray) -> float:
    return float((np.abs(c.astype(np.float64) - reference) / np.maximum(np.abs(reference), 1.0)).max())


def _fallback(md) -> TMAFallback:
    return TMAFallback.from_dict(md.tma_fallback)


def _off_tma(md) -> list[str]:
    """The host descriptors the compiler kept off TMA for shared memory."""
    return list((md.tma_fallback or {}).get("host", []))


@pytest.mark.parametrize("scale_type", FORMATS)
def test_tutorial_shaped_kernel_on_the_h200_path(monkeypatch, scale_type):
    """128 x 128 tiles (two programs on the 1-D grid), the tutorial's BLOCK_K, two K steps through
    its 4-stage loop: C stored by TMA. The operands' K offsets, carried through the loop, are known
    multiples of BLOCK_K, so A and B take TMA as far as shared memory allows (the compiler keeps
    the rest on pointers, never C's store here); the scales' 5-D blocks are no TMA box."""
    _, _, block_k = tutorial_blocks(scale_type)
    m, n, k = 128, 256, 2 * block_k
    descriptors, constexprs, c, reference = make_inputs(scale_type, m, n, k, (128, 128, block_k),
                                                        seed=11 + FORMATS.index(scale_type))
    constexprs.update(M=m, N=n, NUM_STAGES=TUTORIAL_STAGES)
    signature = host_signature(descriptors)
    md = compiler_choice(monkeypatch, tutorial_block_scaled_matmul, signature, constexprs)
    assert md.shared <= H200_SHARED and "c_desc" not in _off_tma(md)
    tensor_maps = run_emulated(tutorial_block_scaled_matmul, descriptors, signature, constexprs,
                               _fallback(md), (2, 1))
    assert "c_desc" in tensor_maps
    assert relative_error(c, reference) < TOLERANCE


def test_c_kept_on_pointers_emulated():
    """mxfp4 with C kept on pointers, as the compiler chooses where C's TMA staging does not fit
    (the choice itself: test_tma_fallback.py): launched without C's tensor map, still right."""
    m, n, k = 128, 256, 512
    descriptors, constexprs, c, reference = make_inputs("mxfp4", m, n, k, (128, 128, 256), seed=3)
    constexprs.update(M=m, N=n, NUM_STAGES=TUTORIAL_STAGES)
    signature = host_signature(descriptors)
    fallback = TMAFallback(("c_desc",), True, "C's TMA staging does not fit (test)")
    tensor_maps = run_emulated(tutorial_block_scaled_matmul, descriptors, signature, constexprs,
                               fallback, (2, 1))
    assert tensor_maps == {"a_desc": "u8", "b_desc": "u8"}  # their loads are pointer loads anyway
    assert relative_error(c, reference) < TOLERANCE


# -- the tutorial's own kernel at its own configs (where the tutorial files are) ---------------------


def _tutorial_module():
    from tutorial_loader import load_tutorial, tutorial_or_skip

    return load_tutorial(tutorial_or_skip("10-block-scaled-matmul.py"))


def _tutorial_launch(module, scale_type: str, m: int, n: int, k: int):
    """(kernel, descriptors, signature, constexprs, C, float64 reference, grid) as the tutorial's
    `block_scaled_matmul` would launch, its inputs from its own `initialize_block_scaled`."""
    import torch
    from tutorial_checks import cuda_stand_ins, interpreted

    torch.manual_seed(11 + FORMATS.index(scale_type))
    matmul = torch.matmul
    # the tutorial's "cuda" tensors on the CPU; its reference matmul (of the decoded operands times
    # their scales) in float64
    with interpreted(True), cuda_stand_ins(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch, "matmul", lambda a, b: matmul(a.double(), b.double()))
        results = module.initialize_block_scaled(m, n, k, scale_type, compute_reference=True)
    a_desc, a_scale_desc, b_desc, b_scale_desc, rep_m, rep_n, rep_k, configs, reference = results[:9]
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    block_m, block_n = configs["BLOCK_SIZE_M"], configs["BLOCK_SIZE_N"]
    c_desc = module.TensorDescriptor.from_tensor(c, [block_m, block_n])
    torch_descriptors = [a_desc, a_scale_desc, b_desc, b_scale_desc, c_desc]
    descriptors = [_numpy_descriptor(d) for d in torch_descriptors]
    constexprs = dict(M=m, N=n, K=k, output_type=1, ELEM_PER_BYTE_A=configs["ELEM_PER_BYTE_A"],
                      ELEM_PER_BYTE_B=configs["ELEM_PER_BYTE_B"], VEC_SIZE=configs["VEC_SIZE"],
                      BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=configs["BLOCK_SIZE_K"],
                      rep_m=rep_m, rep_n=rep_n, rep_k=rep_k, NUM_STAGES=configs["num_stages"])
    grid = (-(-m // block_m) * -(-n // block_n), 1)
    return (module.block_scaled_matmul_kernel, descriptors, host_signature(descriptors), constexprs,
            descriptors[-1].base, reference.numpy(), grid)


def _numpy_descriptor(desc):
    """The tutorial's torch-based descriptor over the same memory as NumPy (fp8 as its bytes' ml_dtypes
    type, so the emulator and host_signature read addresses and item sizes alike)."""
    import ml_dtypes
    import torch

    from tileworkbench.tools.tensor_descriptor import TensorDescriptor

    base = desc.base
    if base.dtype == torch.float8_e4m3fn:
        array = base.view(torch.uint8).numpy().view(ml_dtypes.float8_e4m3fn)
    else:
        array = base.numpy()
    return TensorDescriptor(array, list(desc.shape), list(desc.strides), list(desc.block_shape))


@pytest.mark.parametrize("scale_type", FORMATS)
def test_the_tutorials_kernel_fits_an_h200(monkeypatch, scale_type):
    """The tutorial's kernel at its configs (128 x 256 tiles, 4 stages) fits 227 KB on sm_90a with
    C's TMA store (its staging lies over the rings: before that, mxfp4 and nvfp4 needed 263168
    bytes and the compiler kept C on pointers); the operands that do not fit on TMA besides it
    stay on pointers."""
    module = _tutorial_module()
    kernel, _, signature, constexprs, _, _, _ = _tutorial_launch(module, scale_type, 128, 256, 512)
    md = compiler_choice(monkeypatch, kernel, signature, constexprs)
    assert md.shared <= H200_SHARED
    assert "c_desc" not in _off_tma(md)


def test_the_tutorials_kernel_emulated_mxfp4(monkeypatch):
    """mxfp4 at the tutorial's configs on the compiler's path (C by TMA store), against the
    tutorial's own reference (its torch matmul of the decoded operands times their scales), taken
    in float64."""
    module = _tutorial_module()
    kernel, descriptors, signature, constexprs, c, reference, grid = _tutorial_launch(
        module, "mxfp4", 128, 256, 512)
    md = compiler_choice(monkeypatch, kernel, signature, constexprs)
    assert reference.dtype == np.float64
    tensor_maps = run_emulated(kernel, descriptors, signature, constexprs, _fallback(md), grid)
    assert "c_desc" in tensor_maps
    assert relative_error(np.asarray(c), reference) < TOLERANCE


def _limit_shared(monkeypatch, limit: int) -> None:
    """Hopper's rows of the architecture table with `limit` bytes of shared memory per block."""
    for name in ("sm_90", "sm_90a"):
        row = archs.ARCHS[name]
        monkeypatch.setitem(archs.ARCHS, name, dataclasses.replace(row, shared_per_block=limit))
