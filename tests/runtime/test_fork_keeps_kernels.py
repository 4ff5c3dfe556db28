"""A fork (a compile worker) keeps the parent's loaded CUDA kernels alive until it exits: freeing
one there would unload its module in a process without the parent's CUDA context
(CUDA_ERROR_NOT_INITIALIZED, a traceback per module on stderr, as tutorials 03 and 09 printed on
the GPU when their autotuning forked compile workers)."""

from __future__ import annotations

import gc
import os

import pytest

from tileworkbench.cuda import launcher


class _Loaded:
    """Stands in for a loaded CudaKernel: says on a pipe when it is freed."""

    def __init__(self, fd: int):
        self.fd = fd

    def __del__(self):
        if self.fd is not None:
            os.write(self.fd, b"freed;")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_holds_the_parents_kernels():
    read, write = os.pipe()
    kernel = _Loaded(write)
    launcher._LOADED.add(kernel)
    pid = os.fork()
    if pid == 0:  # the child drops its reference, as a worker drops what it inherited
        try:
            del kernel
            gc.collect()
            os.write(write, b"exit;")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    os.close(write)
    said = b""
    while chunk := os.read(read, 64):
        said += chunk
    os.close(read)
    kernel.fd = None
    assert said == b"exit;"  # not freed in the child, which ended without freeing anything
    assert kernel in launcher._LOADED and kernel not in launcher._INHERITED  # the parent's own
