"""Errors that Triton's own tests catch by their Python type (test_core's test_num_warps_pow2 and
test_pointer_arguments): ours keep their place and wording and are those types too; a pinned host
torch tensor is a pointer argument the GPU reads directly, as in Triton."""

from __future__ import annotations

import numpy as np
import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import CompilationError, HostArrayError, LaunchError
from tileworkbench.cuda.launcher import make_arg_packer


@tw.jit
def copy_kernel(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs) + 1.0)


@pytest.mark.parametrize("num_warps", [3, 0, 64])
def test_num_warps_not_a_power_of_two_is_an_assertion_error(num_warps):
    with pytest.raises(AssertionError, match="must be a power of 2") as info:
        tw.compile(copy_kernel, signature={"src": "*fp32", "dst": "*fp32"}, constexprs={"BLOCK": 64},
                   target="sm_90", num_warps=num_warps)
    assert isinstance(info.value, CompilationError)


def test_host_array_for_a_pointer_is_a_value_error():
    pack = make_arg_packer(["*fp32"], ["x"], "kernel")
    host = np.random.default_rng(3).standard_normal(4).astype(np.float32)
    with pytest.raises(ValueError, match="'x' of kernel is a host array") as info:
        pack((host,))
    assert isinstance(info.value, (LaunchError, HostArrayError))
    with pytest.raises(ValueError, match="is not a GPU array"):
        pack((object(),))


@pytest.mark.gpu
def test_pinned_host_tensor_is_read_by_the_kernel():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA torch")
    src = torch.randn(64).pin_memory()
    dst = torch.full((64,), float("nan"), device="cuda")
    copy_kernel[(1,)](src, dst, BLOCK=64)
    assert torch.allclose(dst.cpu().double(), src.double() + 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match="host array"):
        copy_kernel[(1,)](torch.randn(64), dst, BLOCK=64)  # pageable host memory: refused
