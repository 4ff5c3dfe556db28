"""Kernels of Triton's tutorials 07, 08, 09 and 11 compiled for sm_90 with the tutorials' own tile
sizes (09's persistent kernel with its `tl.range(..., flatten=True)` loop, 08's loads through
device-side pointer arrays, 08's and 09's in-kernel descriptors, 11's griddepcontrol), and the PTX
assembled by ptxas: the GPU path is checked to compile without a GPU. 09's host-descriptor kernels
are left to the GPU tests (tw.compile takes no descriptor types in a signature). Skips without
TRITON_TUTORIALS_DIR (CI has no copy)."""

from __future__ import annotations

import shutil
import subprocess

import pytest


from tutorial_loader import load_tutorial, tutorial_or_skip

import tileworkbench as tw

MATMUL = {name: "i32" for name in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk",
                                   "stride_bn", "stride_cm", "stride_cn")}
MATMUL_POINTERS = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16"}
SIZES = {"M": "i32", "N": "i32", "K": "i32"}
TILES = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}

# (tutorial, kernel, signature, constexprs, PTX that must appear)
KERNELS = [
    ("07-extern-functions.py", "asin_kernel",
     {"x_ptr": "*fp32", "y_ptr": "*fp32", "n_elements": "i32"}, {"BLOCK_SIZE": 1024}, "asin"),
    ("08-grouped-gemm.py", "grouped_matmul_kernel",
     {"group_a_ptrs": "*i64", "group_b_ptrs": "*i64", "group_c_ptrs": "*i64",
      "group_gemm_sizes": "*i32", "g_lds": "*i32", "group_size": "i32"},
     {"NUM_SM": 132, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32}, "mma"),
    ("09-persistent-matmul.py", "matmul_kernel", {**MATMUL_POINTERS, **MATMUL}, TILES, "mma"),
    ("09-persistent-matmul.py", "matmul_kernel_persistent", {**MATMUL_POINTERS, **MATMUL},
     {**TILES, "NUM_SMS": 132}, "mma"),
    ("08-grouped-gemm.py", "grouped_matmul_tma_kernel",
     {"group_a_ptrs": "*i64", "group_b_ptrs": "*i64", "group_c_ptrs": "*i64",
      "group_gemm_sizes": "*i32", "g_lds": "*i32", "group_size": "i32"},
     {"NUM_SM": 132, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "FP8": False},
     "mma"),
    ("09-persistent-matmul.py", "matmul_kernel_descriptor_persistent",
     {**MATMUL_POINTERS, **SIZES},
     {**TILES, "EPILOGUE_SUBTILE": False, "NUM_SMS": 132, "WARP_SPECIALIZE": False,
      "FLATTEN": True}, "mma"),
    ("11-programmatic-dependent-launch.py", "add_kernel",
     {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
     {"BLOCK_SIZE": 1024, "USE_GDC": True}, "griddepcontrol.wait"),
]


@pytest.mark.parametrize(("name", "kernel", "signature", "constexprs", "expected"), KERNELS,
                         ids=[f"{k[0][:2]}-{k[1]}" for k in KERNELS])
def test_tutorial_kernel_assembles_for_sm_90(name, kernel, signature, constexprs, expected,
                                             tmp_path):
    path = tutorial_or_skip(name)
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not installed")
    jitted = getattr(load_tutorial(path), kernel)
    jitted = getattr(jitted, "fn", jitted)  # an Autotuner wraps the kernel
    compiled = tw.compile(jitted, signature=signature, constexprs=constexprs, target="sm_90",
                          num_warps=8 if "matmul" in kernel else 4, use_cache=False)
    ptx = compiled.asm["ptx"]
    assert expected in ptx, f"{kernel}: no {expected!r} in its PTX"
    (tmp_path / "k.ptx").write_text(ptx)
    result = subprocess.run(["ptxas", "-arch=sm_90", str(tmp_path / "k.ptx"), "-o",
                             str(tmp_path / "k.o")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[:2000]
