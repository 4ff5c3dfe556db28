"""Where a benchmark writes its JSON when no `--out` is given: `bench/results/<device>-<benchmark>.json`,
one stable name per benchmark and device (`h200-tensor-cores.json`, `cpu-znver3.json`). A new run
replaces the file; git keeps the earlier results."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def device_tag(name: str) -> str:
    """A short lower-case tag of a device name: "NVIDIA H200" -> "h200", "NVIDIA H100 80GB HBM3" ->
    "h100", "NVIDIA GeForce RTX 4090" -> "rtx-4090"; a CPU's LLVM name ("znver3") stays as it is."""
    words = [w for w in re.split(r"[\s_-]+", name.strip().lower()) if w not in ("nvidia", "geforce")]
    if not words:
        raise ValueError(f"no device name to tag a result file with: {name!r}")
    if words[0] in ("rtx", "gtx", "tesla", "quadro") and len(words) > 1:
        return f"{words[0]}-{words[1]}"
    return words[0]


def default_path(device: str, benchmark: str) -> Path:
    """bench/results/<device tag>-<benchmark>.json."""
    return RESULTS / f"{device_tag(device)}-{benchmark}.json"
