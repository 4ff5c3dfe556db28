"""The fuzzer's bookkeeping: a target that writes nothing or raises is a disagreement, counted per
test and target, recorded with the program and its inputs' bits, written to the JSON summary, and
replayed from the JSON alone (fuzz_replay.py)."""

from __future__ import annotations

import json

import fuzz_replay
import numpy as np
import pytest
import test_fuzz
from fuzz_generate import tile_programs
from fuzz_summary import Tally
from fuzz_targets import TARGETS, Target
from hypothesis import HealthCheck, given, settings


def _silent(program, kernel, arrays) -> None:
    """Writes nothing: every element the program writes keeps its poison."""


def _raising(program, kernel, arrays) -> None:
    raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure")


FAKES = [Target("silent", _silent, lambda: True), Target("raising", _raising, lambda: True)]


def test_disagreements_are_counted_recorded_and_written(monkeypatch, tmp_path, capsys):
    tally = Tally()
    monkeypatch.setattr(test_fuzz, "TALLY", tally)
    seen = []

    @settings(
        max_examples=1,
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(program=tile_programs())
    def search(program):
        if program.written.any():
            seen.append(program)
            test_fuzz.run_everywhere(
                program, [TARGETS["interpreter"], *FAKES], "test_x", "tile_programs"
            )

    search()
    if not seen:
        pytest.skip("the one program drawn writes nothing")
    summary = tally.as_json()
    assert summary["tests"]["test_x"]["targets"] == {
        "interpreter": {"agreed": 1},
        "silent": {"disagreed": 1},
        "raising": {"disagreed": 1},
    }
    assert summary["disagreements_found"] == 1
    found = summary["disagreements"][0]
    assert any(
        p.startswith("raising: raised RuntimeError: CUDA_ERROR_LAUNCH_FAILED")
        for p in found["problems"]
    )
    assert any(p.startswith(("silent:", "interpreter vs silent:")) for p in found["problems"])
    assert found["program"] == seen[0].describe()
    first = next(a for a in seen[0].args if isinstance(a.data, np.ndarray) and not a.output)
    recorded = next(a for a in found["inputs"] if a["name"] == first.name)
    assert bytes.fromhex(recorded["hex"]) == first.data.tobytes()  # the exact bits, to replay it
    tally.write(tmp_path / "fuzz.json")
    record = json.loads((tmp_path / "fuzz.json").read_text())["disagreements"][0]
    # replayed from the JSON alone, the interpreter gives the output it recorded, bit for bit
    again = fuzz_replay.run(record, TARGETS["interpreter"])
    recorded = fuzz_replay.recorded_output(record, "interpreter")
    assert again.dtype == recorded.dtype and again.tobytes() == recorded.tobytes()
    fuzz_replay.main([str(tmp_path / "fuzz.json"), "0", "--targets", "interpreter"])
    shown = capsys.readouterr().out
    assert "interpreter (now) vs interpreter (recorded): same bits" in shown
    assert "interpreter (now) vs silent (recorded): " in shown and seen[0].source in shown


def test_expect_agreement_fails_with_what_the_search_found(monkeypatch):
    tally = Tally()
    monkeypatch.setattr(test_fuzz, "TALLY", tally)

    def search():
        tally.count += 1
        tally.disagreements.append(
            {"test": "t", "problems": ["cuda: 3 wrong at [(0,)]"], "program": "src"}
        )

    with pytest.raises(AssertionError, match=r"1 disagreement\(s\)[\s\S]*cuda: 3 wrong[\s\S]*src"):
        test_fuzz.expect_agreement(search, "t")
