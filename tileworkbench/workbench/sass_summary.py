"""What a kernel's SASS (nvdisasm's text, the `sass` stage) holds, in a few numbers: instruction
counts by mnemonic and an excerpt around the first tensor-core instruction. Notebook 03 shows them,
live where nvdisasm is installed and from the GPU record (bench/record_notebook_data.py) elsewhere.
"""

from __future__ import annotations

import re
from collections import Counter

# Tensor-core MMAs (HMMA: mma.sync, HGMMA: Hopper's wgmma), ldmatrix (LDSM), cp.async (LDGSTS), TMA
# loads (UTMALDG) and the CUDA-core FMA (FFMA): what tells a tensor-core matmul from another.
COUNTED = ("HMMA", "HGMMA", "LDSM", "LDGSTS", "UTMALDG", "FFMA")
TENSOR_CORE = ("HMMA", "HGMMA")

# nvdisasm's line comment, `//## File "/home/me/checkout/kernels.py", line 9`: the path as compiled
_FILE_COMMENT = re.compile(r'(//## File ")([^"]*[/\\])([^"/\\]*")')
# `/*0c40*/  @!P0 HMMA.16816.F32 R52, R28, R24.reuse, R52 ;`: address, predicate, mnemonic
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)")


def mnemonics(sass: str) -> list[str]:
    """The base mnemonic (`HMMA` of `HMMA.16816.F32`) of every instruction line, in order."""
    return [m.group(1) for m in map(_INSTRUCTION.match, sass.splitlines()) if m]


def count_instructions(sass: str, names: tuple[str, ...] = COUNTED) -> dict[str, int]:
    """How many instructions of each mnemonic in `names` the SASS holds."""
    counts = Counter(mnemonics(sass))
    return {name: counts.get(name, 0) for name in names}


def without_folders(sass: str) -> str:
    """nvdisasm's line comments with the file's name only: a recorded excerpt holds no path of the
    checkout (or home folder) it was recorded in."""
    return _FILE_COMMENT.sub(r"\1\3", sass)


def tensor_core_excerpt(sass: str, before: int = 8, after: int = 24) -> str:
    """The SASS lines around the first tensor-core instruction (HMMA, HGMMA), or "" without one;
    file names in its line comments without their folders."""
    lines = without_folders(sass).splitlines()
    for i, line in enumerate(lines):
        match = _INSTRUCTION.match(line)
        if match and match.group(1) in TENSOR_CORE:
            return "\n".join(lines[max(0, i - before) : i + after])
    return ""
