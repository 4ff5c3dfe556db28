"""Triton's tutorials 01-06 (python/tutorials of triton-lang/triton), with only their imports changed,
run in the interpreter on CPU torch tensors and (marked gpu) compiled for the GPU on CUDA torch
tensors, and match torch.

The tutorial files are not in this repository: set TRITON_TUTORIALS_DIR to a folder holding
01-vector-add.py ... 06-fused-attention.py (e.g. a Triton 3.6 checkout's python/tutorials). Without it
these tests skip. tools/run_triton_tutorials.py runs the same checks and prints a table.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tutorial_checks import gpu_missing, run_tutorial
from tutorial_loader import ENV_VAR, TUTORIALS, tutorials_dir


@pytest.mark.parametrize("on_gpu", [False, pytest.param(True, marks=pytest.mark.gpu)],
                         ids=["interpreter", "gpu"])
@pytest.mark.parametrize("name", TUTORIALS)
def test_tutorial_matches_torch(name, on_gpu):
    pytest.importorskip("torch", reason="Triton's tutorials use torch tensors")
    if on_gpu and gpu_missing():
        pytest.skip(gpu_missing())
    folder = tutorials_dir()
    if folder is None:
        pytest.skip(
            f"{ENV_VAR} is not set to a folder of Triton's tutorials (they are not in this repo)"
        )
    if not (folder / name).is_file():
        pytest.skip(f"{name} is not in {ENV_VAR}={folder}")
    result = run_tutorial(folder, name, interpret=not on_gpu)
    assert result.passed, f"{name} failed:\n" + "\n".join(result.failures())
    assert result.comparisons, f"{name}: the check compared nothing"
