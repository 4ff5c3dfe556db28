"""Kernels with global scratch (tensor maps made in the kernel, sm_90a) take the warm launch path,
without a GPU: the CUDA kernel is test_warm_launch's recording stand-in. Each warm launch asks the
allocator for its grid's scratch on the launch's stream and packs the address as the hidden last
parameter, after the same values the full path packs; without an allocator the warm path leaves the
launch to the full path, which gives Triton's error."""

from __future__ import annotations

import numpy as np
import pytest
from test_warm_launch import DeviceArray, RecordingKernel, stand_in_gpu

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.config import config
from tileworkbench.errors import LaunchError


@tw.jit
def scratch_copy(src_ptr, dst_ptr, M, N, stride, factor, BM: tl.constexpr, BN: tl.constexpr):
    """dst = src * factor through descriptors made here (two maps: 256 bytes of scratch each)."""
    src = tl.make_tensor_descriptor(src_ptr, shape=[M, N], strides=[stride, 1],
                                    block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(dst_ptr, shape=[M, N], strides=[stride, 1],
                                    block_shape=[BM, BN])
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    dst.store([row, col], src.load([row, col]) * factor)


class _Buffer:
    def __init__(self, address: int):
        self.address = address

    def data_ptr(self) -> int:
        return self.address


@pytest.fixture
def fake_hopper(monkeypatch):
    """The warm-launch stand-ins on sm_90a with TMA on; returns the full path's runs."""
    monkeypatch.setattr(config, "tma", True)
    full_runs = stand_in_gpu(monkeypatch, "sm_90a")
    scratch_copy.clear_cache()
    yield full_runs
    tw.set_allocator(None)


@pytest.fixture
def allocations():
    """An allocator that records (size, alignment, stream) and gives a fresh buffer each time."""
    calls, rng = [], np.random.default_rng()

    def allocator(size, align, stream):
        calls.append((size, align, stream, _Buffer(128 * int(rng.integers(1 << 10, 1 << 30)))))
        return calls[-1][3]

    tw.set_allocator(allocator)
    return calls


def _args():
    rng = np.random.default_rng()
    src, dst = (DeviceArray(4096 * int(rng.integers(1, 1 << 20))) for _ in range(2))
    return [src, dst, 100, 64, 64, float(rng.standard_normal())], {"BM": 32, "BN": 32}


def _cuda(compiled) -> RecordingKernel:
    entries = [e for e in scratch_copy._fast.values() if e.compiled is compiled]
    assert entries, "the kernel was not filed for the warm path"
    return entries[0].cuda


def test_warm_launch_asks_the_allocator_and_packs_the_scratch_last(fake_hopper, allocations):
    args, consts = _args()
    compiled = scratch_copy[(4, 2)](*args, **consts)
    per_program = compiled.metadata.global_scratch
    assert per_program == 256 and fake_hopper == ["scratch_copy"]
    cuda = _cuda(compiled)
    full = cuda.launches[-1][1]
    assert allocations[-1][:3] == (8 * per_program, 128, 0)
    assert full[-1] == allocations[-1][3].address
    for grid in [(4, 2), (3, 5, 2), (7,)]:
        again = scratch_copy[grid](*args, **consts)
        assert again is compiled and fake_hopper == ["scratch_copy"]  # warm: no second full run
        size, align, stream, buffer = allocations[-1]
        grid3 = grid + (1,) * (3 - len(grid))
        assert (size, align, stream) == (per_program * int(np.prod(grid3)), 128, 0)
        launched_grid, values = cuda.launches[-1]
        assert launched_grid == grid3
        assert values[:-1] == full[:-1] and values[-1] == buffer.address
    assert len(allocations) == 4 and len(cuda.launches) == 4


def test_launch_options_take_the_warm_path_too(fake_hopper, allocations):
    args, consts = _args()
    compiled = scratch_copy.run(*args, grid=(2, 2), num_warps=4, **consts)
    cuda = _cuda(compiled)
    again = scratch_copy.run(*args, grid=(2, 3), num_warps=4, **consts)
    assert again is compiled and fake_hopper == ["scratch_copy"]
    assert allocations[-1][0] == 6 * compiled.metadata.global_scratch
    assert cuda.launches[-1][1][-1] == allocations[-1][3].address


def test_without_an_allocator_the_warm_path_gives_the_full_paths_error(fake_hopper, allocations):
    args, consts = _args()
    scratch_copy[(1, 1)](*args, **consts)
    tw.set_allocator(None)
    with pytest.raises(LaunchError, match="no allocator was set"):
        scratch_copy[(1, 1)](*args, **consts)
    with pytest.raises(LaunchError, match="no allocator was set"):
        scratch_copy.run(*args, grid=(1, 1), num_warps=4, **consts)


def test_an_empty_grid_asks_for_no_scratch(fake_hopper, allocations):
    args, consts = _args()
    compiled = scratch_copy[(1, 1)](*args, **consts)
    count = len(allocations)
    scratch_copy[(0, 1)](*args, **consts)
    assert len(allocations) == count and len(_cuda(compiled).launches) == 1
