"""What a fuzzing run did, for its summary: examples run per test (each test one strategy) and
target, the targets that could not run an example, and every disagreement with the program that
showed it (source, launch, and the input arrays' exact bits, enough to write the named regression
test that test_found.py keeps for each). The differential conftest writes it as JSON to
$FUZZ_SUMMARY.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import time
from pathlib import Path

import numpy as np
from fuzz_programs import Program

MAX_RECORDED = 25  # disagreements kept with their programs; the rest are counted
MAX_ARRAY_BYTES = 1 << 16  # inputs larger than this are recorded by shape only


class Tally:
    def __init__(self):
        self.start = time.time()
        # test -> {"strategy", "examples", "targets": {target -> Counter of `target`'s outcomes}}
        self.tests: dict[str, dict] = {}
        self.disagreements: list[dict] = []
        self.count = 0
        self.seconds: dict[str, collections.Counter] = {}  # test -> target -> seconds of its runs

    def _entry(self, test: str, strategy: str) -> dict:
        return self.tests.setdefault(
            test,
            {
                "strategy": strategy,
                "examples": 0,
                "targets": collections.defaultdict(collections.Counter),
            },
        )

    def example(self, test: str, strategy: str) -> None:
        self._entry(test, strategy)["examples"] += 1

    def target(self, test: str, strategy: str, target: str, outcome: str) -> None:
        """`outcome`: "agreed" (with the oracle and the others), "disagreed" (it raised, or was
        wrong against the oracle, or, where there is none, differed from another target), or
        "unsupported"."""
        self._entry(test, strategy)["targets"][target][outcome] += 1

    @contextlib.contextmanager
    def timed(self, test: str, target: str):
        """Adds the block's seconds to `target`'s in `test`."""
        start = time.perf_counter()
        try:
            yield
        finally:
            seconds = self.seconds.setdefault(test, collections.Counter())
            seconds[target] += time.perf_counter() - start

    def disagreement(
        self, test: str, strategy: str, program: Program, problems: list[str], outputs: dict
    ) -> None:
        """Record one; `outputs`: each target's output array (fuzz_replay.py runs it again)."""
        self.count += 1
        if len(self.disagreements) < MAX_RECORDED:
            self.disagreements.append(
                {
                    "test": test,
                    "strategy": strategy,
                    "problems": problems[:8],
                    "program": program.describe(),
                    "launch": {
                        "name": program.name,
                        "source": program.source,
                        "grid": list(program.grid),
                        "num_warps": program.num_warps,
                        "constexprs": program.constexprs,
                    },
                    "inputs": _inputs(program),
                    "outputs": {target: _bits(array) for target, array in outputs.items()},
                }
            )

    def as_json(self) -> dict:
        return {
            "examples_per_test": int(os.environ.get("FUZZ_EXAMPLES", "6")),
            "seed": os.environ.get("FUZZ_SEED") or "derandomized (CI's fixed sample)",
            "wall_s": round(time.time() - self.start, 1),
            "tests": {
                name: {
                    "strategy": t["strategy"],
                    "examples": t["examples"],
                    "targets": {k: dict(v) for k, v in t["targets"].items()},
                    "seconds": {k: round(v, 1) for k, v in self.seconds.get(name, {}).items()},
                }
                for name, t in self.tests.items()
            },
            "disagreements_found": self.count,
            "disagreements": self.disagreements,
            "regression_tests": _regression_tests(),
        }

    def write(self, path: str | os.PathLike) -> None:
        Path(path).write_text(json.dumps(self.as_json(), indent=1) + "\n")


def _inputs(program: Program) -> list[dict]:
    """Each argument: a scalar's value, or an array's dtype, shape and (small) its bits in hex."""
    out = []
    for arg in program.args:
        if not isinstance(arg.data, np.ndarray):
            out.append({"name": arg.name, "value": int(arg.data)})
            continue
        data = arg.data
        record = {
            "name": arg.name,
            "dtype": arg.dtype.name,  # fuzz_oracle.DTYPES' key
            "shape": list(data.shape),
            "output": arg.output,
            "hex": _bits(data),
        }
        out.append(record)
    return out


def _bits(data: np.ndarray) -> str | None:
    """The array's bytes in hex; None when it is larger than MAX_ARRAY_BYTES."""
    if data.nbytes > MAX_ARRAY_BYTES:
        return None
    return np.ascontiguousarray(data).tobytes().hex()


def _regression_tests() -> list[str]:
    """The named tests test_found.py holds for earlier disagreements."""
    text = (Path(__file__).resolve().parent / "test_found.py").read_text()
    return [
        line.split("(")[0].removeprefix("def ")
        for line in text.splitlines()
        if line.startswith("def test_")
    ]


TALLY = Tally()
