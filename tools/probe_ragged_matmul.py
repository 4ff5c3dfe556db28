"""GPU probe: tutorial 03's matmul at a ragged N (4104 x 4104 x 4096, fp16). N is not a multiple of 16,
so B's rows have no known 16-byte alignment and B stays a register load in both compilers, while A
can take cp.async. Ours against Triton and torch, paired (bench/tensor_cores.py's `matmul`, each
compiler with its best of the bench's configs), every output checked against float64 first. Run
from the repository root, with the compiler to time first on PYTHONPATH:

    PYTHONPATH=. OUT=/tmp python3 tools/probe_ragged_matmul.py NAME    # writes $OUT/NAME.json

(Session 10 ran it with this tree and with the previous commit's `tileworkbench/` first on
PYTHONPATH: bench/results/h200-2026-12-02-s10-ragged-matmul-{new,before}.json.)
"""

import json
import os
import sys

import tileworkbench  # first, from PYTHONPATH's order (tensor_cores puts the repository root first)

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench")]
import tensor_cores

print("compiler from", tileworkbench.__file__, flush=True)
row = tensor_cores.matmul(4104, 4104, 4096, "fp16", {})
name = sys.argv[1] if len(sys.argv) > 1 else "ragged_matmul"
with open(os.path.join(os.environ.get("OUT", "."), name + ".json"), "w") as f:
    json.dump(row, f, indent=1)
