"""Helpers of the NVPTX tests: running ptxas, and skipping where it is not installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def run_ptxas(ptx: str, arch: str, tmp_path: Path) -> subprocess.CompletedProcess:
    src = tmp_path / f"kernel_{arch}.ptx"
    src.write_text(ptx)
    return subprocess.run(["ptxas", "-arch", arch, "-o", str(tmp_path / "k.cubin"), str(src)],
                          capture_output=True, text=True, check=False)


needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None,
                                 reason="ptxas (CUDA toolkit or NVIDIA's nvcc wheel) is not installed")
