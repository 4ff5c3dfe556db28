"""`set_allocator` and the global scratch of in-kernel tensor maps, without a GPU: what a launch asks
the allocator for, Triton's error when none is set, and in-kernel descriptors on the interpreter and
the cpu target (pointer semantics there: they build no maps and ask for no scratch)."""

from __future__ import annotations

import numpy as np
import pytest
from test_launcher_args import FakeDeviceArray

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import LaunchError
from tileworkbench.runtime.allocation import get_allocator, launch_scratch, set_allocator


@pytest.fixture(autouse=True)
def no_allocator():
    """Each test starts, and leaves, with no allocator set."""
    set_allocator(None)
    yield
    set_allocator(None)


class _Buffer:
    def __init__(self, address: int):
        self.address = address

    def data_ptr(self) -> int:
        return self.address


def test_a_launch_asks_for_its_programs_scratch():
    calls = []

    def allocator(size, align, stream):
        calls.append((size, align, stream))
        return _Buffer(0x7F0000)

    tw.set_allocator(allocator)
    assert get_allocator() is allocator
    buffer, address = launch_scratch("k", 256, 128, (3, 2, 1), 77)
    assert calls == [(256 * 6, 128, 77)] and address == 0x7F0000 and buffer.address == address


def test_a_gpu_array_from_the_allocator_is_taken_by_its_address():
    set_allocator(lambda size, align, stream: FakeDeviceArray(0x10000, (size,), "|u1"))
    assert launch_scratch("k", 128, 128, (1, 1, 1), None)[1] == 0x10000


def test_no_allocator_is_triton_s_error_naming_the_kernel():
    with pytest.raises(LaunchError) as info:
        launch_scratch("matmul_kernel", 384, 128, (4, 1, 1), None)
    message = str(info.value)
    assert "requires a runtime memory allocation" in message and "no allocator was set" in message
    assert "matmul_kernel" in message and "set_allocator" in message


def test_misaligned_scratch_is_refused():
    set_allocator(lambda size, align, stream: _Buffer(0x10040))
    with pytest.raises(LaunchError, match="not 128-byte aligned"):
        launch_scratch("k", 128, 128, (1, 1, 1), None)


@tw.jit
def _desc_copy(src_ptr, dst_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(src_ptr, shape=[M, N], strides=[stride, 1],
                                    block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(dst_ptr, shape=[M, N], strides=[stride, 1],
                                    block_shape=[BM, BN])
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    dst.store([row, col], src.load([row, col]) + 1.0)


@pytest.mark.only_on("interpreter", "cpu")
def test_in_kernel_descriptors_keep_pointer_semantics(target, monkeypatch):
    """With TMA on and no allocator, the host targets still run in-kernel descriptors (edge tiles
    clipped and zero-padded) and ask for no scratch."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)
    rng = np.random.default_rng(11)
    rows, cols, stride = 37, 50, 64
    x = rng.standard_normal((rows, stride)).astype(np.float32)
    out = np.full((rows, stride), np.nan, np.float32)
    compiled = _desc_copy[(3, 2)](x, out, rows, cols,
                                  stride, BM=16, BN=32)
    np.testing.assert_allclose(out[:, :cols], x[:, :cols].astype(np.float64) + 1.0, rtol=1e-6)
    assert np.isnan(out[:, cols:]).all()
    assert compiled.metadata.global_scratch == 0
