"""Runs a disagreement recorded in a fuzz summary (fuzz_summary.py's JSON) again, on the targets of
this machine, and shows where each one's output differs from every recorded output: the step from a
GPU run's report to a named regression test in test_found.py (through the CPU emulator where it
shows the same bug).

    PYTHONPATH=. python tests/differential/fuzz_replay.py fuzz.json [INDEX] [--targets a,b]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

# run as a script, outside pytest (whose pythonpath in pyproject.toml lists tests/nvptx): the emulator
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "nvptx"))

from fuzz_oracle import DTYPES  # noqa: E402
from fuzz_programs import Array, Program  # noqa: E402


def program_of(record: dict) -> Program:
    """The recorded program with its inputs (outputs poisoned as they were)."""
    launch = record["launch"]
    args = []
    for arg in record["inputs"]:
        if "value" in arg:
            args.append(Array(arg["name"], None, arg["value"]))
            continue
        dtype = DTYPES[arg["dtype"]]
        if arg["hex"] is None:
            raise ValueError(f"argument {arg['name']} was too large to record")
        data = np.frombuffer(bytes.fromhex(arg["hex"]), dtype.numpy).reshape(arg["shape"]).copy()
        args.append(Array(arg["name"], dtype, data, output=arg["output"]))
    return Program(
        launch["name"],
        launch["source"],
        args,
        launch["constexprs"],
        tuple(launch["grid"]),
        launch["num_warps"],
    )


def run(record: dict, target) -> np.ndarray:
    """The output of `record`'s program on `target` (a fuzz_targets.Target)."""
    program = program_of(record)
    arrays = [a.data.copy() if isinstance(a.data, np.ndarray) else a.data for a in program.args]
    target.run(program, program.kernel(), arrays)
    return arrays[next(i for i, a in enumerate(program.args) if a.output)]


def recorded_output(record: dict, target: str) -> np.ndarray | None:
    out = next(a for a in record["inputs"] if a.get("output"))
    bits = record["outputs"].get(target)
    if bits is None:
        return None
    return np.frombuffer(bytes.fromhex(bits), DTYPES[out["dtype"]].numpy).reshape(out["shape"])


def _differences(a: np.ndarray, b: np.ndarray) -> str:
    bits = f"u{a.dtype.itemsize}"
    bad = np.argwhere(a.view(bits) != b.view(bits))
    if not len(bad):
        return "same bits"
    where = [tuple(int(i) for i in ix) for ix in bad[:6]]
    return f"{len(bad)} differ, at {where}: {[a[w] for w in where]} vs {[b[w] for w in where]}"


def main(argv: list[str] | None = None) -> int:
    from fuzz_targets import TARGETS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("summary")
    parser.add_argument("index", nargs="?", type=int, default=0)
    parser.add_argument("--targets", default="interpreter,nvptx-emulated,cpu")
    args = parser.parse_args(argv)
    record = json.loads(Path(args.summary).read_text())["disagreements"][args.index]
    print(record["program"], "\n" + "\n".join(record["problems"]), sep="\n")
    for name in args.targets.split(","):
        target = TARGETS[name]
        if not target.available():
            print(f"{name}: not available here")
            continue
        got = run(record, target)
        for other in record["outputs"]:
            print(
                f"{name} (now) vs {other} (recorded): "
                f"{_differences(got, recorded_output(record, other))}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
