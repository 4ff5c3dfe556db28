"""Differential fuzzing (issue 14): hypothesis-generated kernels run on every target available
(fuzz_targets.TARGETS: the interpreter and the NVPTX lowering run on the host today, the `cpu` backend
when it is registered, CUDA marked `gpu`), each checked against the NumPy float64 oracle with an
error bound and against the others.

CI runs a bounded, derandomized sample (FUZZ_EXAMPLES, default 6 per family); a longer run, with
another sample each FUZZ_SEED, and at most FUZZ_SECONDS per test:

    FUZZ_EXAMPLES=2000 FUZZ_SEED=1 FUZZ_SECONDS=100 pytest -m gpu tests/differential

Each test runs its whole sample and then fails with the disagreements found (the kernels' sources);
with FUZZ_SUMMARY=path the counts per test and target and every disagreement's program and inputs
are written there as JSON (fuzz_summary.py). Each one found becomes a named test in test_found.py.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
from cuda_guard import context_error
from fuzz_compare import against_reference, between
from fuzz_generate import dot_programs, tile_programs
from hypothesis import HealthCheck, Phase, given, seed, settings
from fuzz_programs import Program
from fuzz_summary import TALLY
from fuzz_targets import TARGETS, Unsupported, host_targets

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "6"))
SECONDS = float(os.environ.get("FUZZ_SECONDS", "0"))  # > 0: each test draws examples this long
SEED = os.environ.get("FUZZ_SEED")  # another sample than CI's fixed one, reproducible by its number
# No shrinking: every example compiles kernels, and the failure message prints the kernel source.
_SETTINGS = settings(max_examples=EXAMPLES, derandomize=SEED is None, deadline=None, database=None,
                     print_blob=True, suppress_health_check=list(HealthCheck),
                     phases=[Phase.explicit, Phase.reuse, Phase.generate])


def fuzz(test):
    test = _SETTINGS(test)
    return seed(int(SEED))(test) if SEED is not None else test


class _TimeUp(BaseException):
    """FUZZ_SECONDS are spent: ends a test's search (a BaseException, so hypothesis passes it on at
    once instead of replaying the example as a failure)."""


_DEADLINE: list[float] = []  # the running test's, when FUZZ_SECONDS is set
_LOST: list[str] = []  # why the CUDA context of this process is lost, once it is


class CudaContextLost(Exception):
    """A kernel stopped the GPU: every later launch in this process would fail for that reason."""


def run_everywhere(program: Program, targets, test: str, strategy: str) -> list[str]:
    """Run `program` on `targets`; the disagreements found, each recorded in the tally. An exception
    on one target (a compile error, a fault) is a disagreement too."""
    if _DEADLINE and time.monotonic() > _DEADLINE[0]:
        raise _TimeUp
    TALLY.example(test, strategy)
    kernel = program.kernel()
    outputs, problems, wrong, ran = {}, [], set(), []
    out_index = next(i for i, a in enumerate(program.args) if a.output)
    poison = program.args[out_index].data
    lost = None
    for target in targets:
        arrays = [a.data.copy() if isinstance(a.data, np.ndarray) else a.data for a in program.args]
        try:
            with TALLY.timed(test, target.name):
                target.run(program, kernel, arrays)
        except Unsupported:
            TALLY.target(test, strategy, target.name, "unsupported")
            continue
        except Exception as exc:  # noqa: BLE001 - reported with the program, as a wrong answer is
            problems.append(f"{target.name}: raised {type(exc).__name__}: {str(exc).strip()[:400]}")
            wrong.add(target.name)
            ran.append(target.name)
            lost = context_error() if target.gpu else None
            continue
        ran.append(target.name)
        got = arrays[out_index]
        outputs[target.name] = got
        found = against_reference(program, got, poison)
        wrong.update([target.name] if found else [])
        problems += [f"{target.name}: {p}" for p in found]
    names = list(outputs)
    for other in names[1:]:
        found = between(program, outputs[names[0]], outputs[other])
        if found and not {names[0], other} & wrong:  # no oracle told which one is wrong
            wrong.update([names[0], other])
        problems += [f"{names[0]} vs {other}: {p}" for p in found]
    for name in ran:
        TALLY.target(test, strategy, name, "disagreed" if name in wrong else "agreed")
    if problems:
        TALLY.disagreement(test, strategy, program, problems, outputs)
    if lost is not None:
        _LOST[:] = [f"{test}: {lost}"]
        raise CudaContextLost(f"the CUDA context is lost ({lost}) after:\n{program.describe()}")
    return problems


def expect_agreement(search, test: str) -> None:
    """Run the hypothesis `search` to the end (every example, not only up to the first disagreement,
    so a long run counts them all), then fail with the disagreements it found."""
    recorded, count = len(TALLY.disagreements), TALLY.count
    _DEADLINE[:] = [time.monotonic() + SECONDS] if SECONDS > 0 else []
    try:
        search()
    except _TimeUp:
        pass
    found = TALLY.disagreements[recorded:]
    assert TALLY.count == count, f"{TALLY.count - count} disagreement(s), the first ones:\n" + \
        "\n\n".join("\n".join(d["problems"]) + "\n" + d["program"] for d in found[:5])


def _on_host(strategy, test: str, name: str):
    @fuzz
    @given(program=strategy)
    def search(program):
        run_everywhere(program, host_targets(), test, name)

    return search


def _gpu_or_skip() -> None:
    if not TARGETS["cuda"].available():
        pytest.skip("no GPU visible")
    if _LOST:
        pytest.skip(f"the CUDA context was lost in an earlier test ({_LOST[0]})")


def _on_gpu(strategy, test: str, name: str):
    @fuzz
    @given(program=strategy)
    def search(program):
        run_everywhere(program, [TARGETS["interpreter"], TARGETS["cuda"]], test, name)

    return search


def test_tile_programs_agree():
    expect_agreement(_on_host(tile_programs(), "test_tile_programs_agree", "tile_programs"),
                     "test_tile_programs_agree")


def test_dots_agree():
    expect_agreement(_on_host(dot_programs(), "test_dots_agree", "dot_programs"), "test_dots_agree")


@pytest.mark.gpu
def test_tile_programs_agree_on_the_gpu():
    _gpu_or_skip()
    test = "test_tile_programs_agree_on_the_gpu"
    expect_agreement(_on_gpu(tile_programs(), test, "tile_programs"), test)


@pytest.mark.gpu
def test_dots_agree_on_the_gpu():
    _gpu_or_skip()
    test = "test_dots_agree_on_the_gpu"
    expect_agreement(_on_gpu(dot_programs(), test, "dot_programs"), test)
