"""cubin, the resource report and SASS from NVIDIA's tools, where they are installed: `ptxas -v` gives
registers, spills and shared memory; `nvdisasm` (or `cuobjdump -sass`) gives SASS. Without them the
`sass` stage is skipped and the driver compiles the PTX when the kernel is loaded."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from ...errors import CompilationError
from .tools import find_tool

_USED = re.compile(r"Used (\d+) registers")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_STACK = re.compile(r"(\d+) bytes stack frame")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")
_BARRIERS = re.compile(r"used (\d+) barriers")


def parse_resources(text: str) -> dict:
    """Everything `ptxas -v` says about the kernel, as numbers."""
    out: dict = {"ptxas_output": text.strip()}
    for key, pattern in (
        ("registers", _USED),
        ("stack_frame", _STACK),
        ("static_shared", _SMEM),
        ("barriers", _BARRIERS),
    ):
        m = pattern.search(text)
        if m:
            out[key] = int(m.group(1))
    m = _SPILLS.search(text)
    if m:
        out["spill_stores"], out["spill_loads"] = int(m.group(1)), int(m.group(2))
    for m in _CMEM.finditer(text):
        out[f"cmem_{m.group(2)}"] = int(m.group(1))
    return out


def assemble(ptx: str, arch: str) -> tuple[bytes | None, dict]:
    """(cubin, resources) from ptxas, or (None, {}) where ptxas is not installed."""
    exe = find_tool("ptxas")
    if exe is None:
        return None, {}
    with tempfile.TemporaryDirectory(prefix="tileworkbench-") as tmp:
        src, out = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        src.write_text(ptx)
        proc = subprocess.run(
            [exe, "-v", "-lineinfo", "-arch", arch, "--output-file", str(out), str(src)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise CompilationError(f"internal: ptxas rejected the generated PTX:\n{proc.stderr}")
        return out.read_bytes(), parse_resources(proc.stderr + proc.stdout)


def disassemble(cubin: bytes) -> str | None:
    """SASS with line info from nvdisasm, else cuobjdump -sass, else None."""
    nvdisasm, cuobjdump = find_tool("nvdisasm"), find_tool("cuobjdump")
    if nvdisasm is None and cuobjdump is None:
        return None
    with tempfile.TemporaryDirectory(prefix="tileworkbench-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        cmd = [nvdisasm, "-c", "-g", str(path)] if nvdisasm else [cuobjdump, "-sass", str(path)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        return proc.stdout if proc.returncode == 0 else None
