"""`tl.extra.cuda`: globaltimer/smid (PTX special registers; the interpreter reads the host clock and
gives SM 0), num_threads/num_warps as compile-time constants of the launch; PTX assembles."""

from __future__ import annotations

import time

import numpy as np
import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.language.extra import cuda
from tileworkbench.language.extra.cuda import libdevice


@tw.jit
def cuda_extras_kernel(out_ptr, stamps_ptr):
    start = cuda.globaltimer()
    offs = tl.arange(0, cuda.num_threads())  # a constexpr: usable as a tile size
    tl.store(out_ptr + offs, offs + cuda.num_warps() * 1000 + cuda.smid() + libdevice.popc(offs))
    tl.store(stamps_ptr, start)
    tl.store(stamps_ptr + 1, cuda.globaltimer())


@pytest.mark.parametrize("num_warps", [1, 2])
@pytest.mark.only_on("interpreter", "cpu")  # their host meanings (one "SM", the host's clock)
def test_cuda_extras_on_the_host(num_warps):
    threads = 32 * num_warps
    out, stamps = np.full(threads, -1, np.int32), np.zeros(2, np.int64)
    before = time.time_ns()
    cuda_extras_kernel[(1,)](out, stamps, num_warps=num_warps)
    offs = np.arange(threads)
    want = offs + num_warps * 1000 + np.array([bin(v).count("1") for v in offs])
    assert np.array_equal(out, want)
    assert before <= stamps[0] <= stamps[1] <= time.time_ns()


@pytest.mark.only_on("cuda")
def test_cuda_extras_on_the_gpu():
    out, stamps = np.full(64, -1, np.int32), np.zeros(2, np.int64)
    cuda_extras_kernel[(1,)](out, stamps, num_warps=2)
    offs = np.arange(64)
    sm = out - (offs + 2000 + np.array([bin(v).count("1") for v in offs]))
    assert np.all(sm == sm[0]) and 0 <= sm[0] < 1024  # one program: one SM id for every lane
    assert 0 < stamps[0] <= stamps[1]  # a nanosecond timer that does not run backwards


def test_cuda_extras_assemble(tmp_path):
    import subprocess
    import shutil

    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not installed")
    compiled = tw.compile(cuda_extras_kernel, signature={"out_ptr": "*i32", "stamps_ptr": "*i64"},
                          num_warps=2, target="sm_90")
    assert "%globaltimer" in compiled.asm["ptx"] and "%smid" in compiled.asm["ptx"]
    (tmp_path / "k.ptx").write_text(compiled.asm["ptx"])
    result = subprocess.run(["ptxas", "-arch=sm_90", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.o")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@tw.jit
def gdc_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    cuda.gdc_wait()  # grid dependence control (Triton tutorial 11): a no-op without launch_pdl
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    cuda.gdc_launch_dependents()
    tl.store(out_ptr + offs, x + y, mask=mask)


@pytest.mark.parametrize("launch_pdl", [False, True])
def test_gdc_kernel_adds(launch_pdl):
    rng = np.random.default_rng()
    x, y = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    out = np.full(300, np.nan, np.float32)
    gdc_add_kernel[(3,)](x, y, out, 300, BLOCK=128, launch_pdl=launch_pdl)
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)


def test_gdc_assembles_for_sm_90(tmp_path):
    import shutil
    import subprocess

    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not installed")
    compiled = tw.compile(gdc_add_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32",
                                                     "out_ptr": "*fp32", "n": "i32"},
                          constexprs={"BLOCK": 128}, target="sm_90")
    ptx = compiled.asm["ptx"]
    assert "griddepcontrol.wait" in ptx and "griddepcontrol.launch_dependents" in ptx
    (tmp_path / "k.ptx").write_text(ptx)
    result = subprocess.run(["ptxas", "-arch=sm_90", str(tmp_path / "k.ptx"), "-o",
                             str(tmp_path / "k.o")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
