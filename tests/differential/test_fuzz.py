"""Differential fuzzing (issue 14): hypothesis-generated kernels run on every target available
(fuzz_targets.TARGETS: the interpreter and the NVPTX lowering run on the host today, the `cpu` backend
when it is registered, CUDA marked `gpu`), each checked against the NumPy float64 oracle with an
error bound and against the others.

CI runs a bounded, derandomized sample (FUZZ_EXAMPLES, default 6 per family); a longer run, with
another sample each FUZZ_SEED:

    FUZZ_EXAMPLES=2000 FUZZ_SEED=1 pytest tests/differential -m gpu -p no:cacheprovider

A disagreement prints the kernel's source; each one found becomes a named test in test_found.py.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from fuzz_compare import against_reference, between
from fuzz_generate import dot_programs, tile_programs
from hypothesis import HealthCheck, Phase, given, seed, settings
from fuzz_programs import Program
from fuzz_targets import TARGETS, Unsupported, host_targets

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "6"))
SEED = os.environ.get("FUZZ_SEED")  # another sample than CI's fixed one, reproducible by its number
# No shrinking: every example compiles kernels, and the failure message prints the kernel source.
_SETTINGS = settings(max_examples=EXAMPLES, derandomize=SEED is None, deadline=None, database=None,
                     print_blob=True, suppress_health_check=list(HealthCheck),
                     phases=[Phase.explicit, Phase.reuse, Phase.generate])


def fuzz(test):
    test = _SETTINGS(test)
    return seed(int(SEED))(test) if SEED is not None else test


def run_everywhere(program: Program, targets) -> None:
    """Run `program` on `targets` and fail with every disagreement found."""
    kernel = program.kernel()
    outputs, problems = {}, []
    out_index = next(i for i, a in enumerate(program.args) if a.output)
    poison = program.args[out_index].data
    for target in targets:
        arrays = [a.data.copy() if isinstance(a.data, np.ndarray) else a.data for a in program.args]
        try:
            target.run(program, kernel, arrays)
        except Unsupported:
            continue
        got = arrays[out_index]
        outputs[target.name] = got
        problems += [f"{target.name}: {p}" for p in against_reference(program, got, poison)]
    names = list(outputs)
    for other in names[1:]:
        problems += [f"{names[0]} vs {other}: {p}" for p in between(program, outputs[names[0]],
                                                                     outputs[other])]
    assert not problems, "\n".join(problems) + "\n" + program.describe()


@fuzz
@given(program=tile_programs())
def test_tile_programs_agree(program):
    run_everywhere(program, host_targets())


@fuzz
@given(program=dot_programs())
def test_dots_agree(program):
    run_everywhere(program, host_targets())


@pytest.mark.gpu
@fuzz
@given(program=tile_programs())
def test_tile_programs_agree_on_the_gpu(program):
    if not TARGETS["cuda"].available():
        pytest.skip("no GPU visible")
    run_everywhere(program, [TARGETS["interpreter"], TARGETS["cuda"]])


@pytest.mark.gpu
@fuzz
@given(program=dot_programs())
def test_dots_agree_on_the_gpu(program):
    if not TARGETS["cuda"].available():
        pytest.skip("no GPU visible")
    run_everywhere(program, [TARGETS["interpreter"], TARGETS["cuda"]])
