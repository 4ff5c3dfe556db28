"""Capture what the C level writes to stdout (fd 1) while a cell runs, and re-emit it to `sys.stdout`.

`tl.device_print` on a GPU prints through the CUDA driver's printf buffer with C stdio, straight to fd 1,
which a Jupyter kernel does not show. We point fd 1 at a temporary file around the cell, synchronize the
device (which flushes the printf buffer), flush C stdio, and write what was captured to `sys.stdout`.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


def _flush_c_stdio() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no libc symbols (Windows, static builds): nothing buffered
        pass


def synchronize_device() -> None:
    """Wait for the GPU (which flushes device printf) if CuPy is loaded and a device is in use."""
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return
    try:
        cupy.cuda.runtime.deviceSynchronize()
    except Exception:  # no device or no context: nothing to flush
        pass


def _fd_usable(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


@contextmanager
def capture_c_stdout(echo_to=None) -> Iterator[None]:
    """Redirect fd 1 into a temporary file for the duration, then write its text to `echo_to`
    (default: the `sys.stdout` of the time of exit)."""
    if not _fd_usable(1):
        yield
        return
    sys.stdout.flush()
    _flush_c_stdio()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            yield
        finally:
            synchronize_device()
            _flush_c_stdio()
            try:
                sys.stdout.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", errors="replace")
            if text:
                (echo_to or sys.stdout).write(text)
