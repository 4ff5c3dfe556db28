"""Where NVIDIA's command-line tools are: `ptxas` (cubin, registers) and `nvdisasm` (SASS), on the
PATH or inside NVIDIA's pip wheels (`nvidia/cu13/bin/...`, which pip does not put on the PATH), and
what to tell a user whose machine lacks one.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from functools import cache
from pathlib import Path

# tool -> (the pip wheel that brings it, the tileworkbench extra that installs that wheel)
WHEELS = {
    "ptxas": ("nvidia-cuda-nvcc", "gpu"),
    "nvdisasm": ("nvidia-cuda-nvdisasm", "sass"),
    "cuobjdump": ("nvidia-cuda-cuobjdump", "gpu"),
}


def find_tool(name: str) -> str | None:
    """The path of `name` (ptxas, nvdisasm, cuobjdump): the PATH first, then NVIDIA's wheels."""
    return shutil.which(name) or _wheel_tool(name)


@cache
def _wheel_tool(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        for pattern in (f"*/bin/{name}", f"*/*/bin/{name}"):
            for path in sorted(Path(root).glob(pattern)):
                if path.is_file():
                    return str(path)
    return None


def how_to_get(name: str) -> str:
    """One sentence naming the missing tool and the install that brings it."""
    wheel, extra = WHEELS.get(name, (None, None))
    if wheel is None:
        return f"`{name}` was not found on the PATH"
    return (
        f"`{name}` was not found (on the PATH or in NVIDIA's wheels): "
        f'`pip install "tileworkbench[{extra}]"` (NVIDIA\'s {wheel} wheel) or a CUDA toolkit '
        "brings it"
    )


def missing_for(stage: str) -> str | None:
    """Why `stage` cannot be made on this machine (None when it can): `sass` needs ptxas and
    nvdisasm (or cuobjdump)."""
    if stage != "sass":
        return None
    if find_tool("ptxas") is None:
        return f"no sass: {how_to_get('ptxas')}"
    if find_tool("nvdisasm") is None and find_tool("cuobjdump") is None:
        return f"no sass: {how_to_get('nvdisasm')}"
    return None


def tools_identity() -> tuple:
    """Which ptxas, nvdisasm and cuobjdump would run: (path, size, mtime) each, None where missing.
    Part of the cache key, so an entry made without ptxas (no cubin, no SASS) or by another one is
    not served once the tools change (backend.tools_identity). Not in ptxas.py: a cache hit must
    not import subprocess."""
    out = []
    for tool in ("ptxas", "nvdisasm", "cuobjdump"):
        path = find_tool(tool)
        if path is None:
            out.append(None)
            continue
        stat = os.stat(path)
        out.append((os.path.realpath(path), stat.st_size, stat.st_mtime_ns))
    return tuple(out)
