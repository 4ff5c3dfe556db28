"""Export: a report as one self-contained HTML file (styles, plots and the linking script inline),
and for a launch a reproducer: a Python script with the kernel's source, its arguments (as the launch left them) saved beside
it (`.npz`), the grid, constexprs and launch options, that launches it again outside the notebook.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from .access_map import host_copy

MAX_SAVED_BYTES = 64 << 20  # larger arguments are remade as random data of the same shape and dtype


def export_report(report, folder: str | Path) -> dict[str, str]:
    """Write `<name>.html` (and for a launch `<name>_repro.py` with `<name>_args.npz`) to `folder`."""
    from .html_view import page

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_]", "_", report.name)
    written = {"html": str(folder / f"{stem}.html")}
    Path(written["html"]).write_text(page([report], title=f"{report.name}: tileworkbench report"))
    record = getattr(report, "record", None)
    if record is not None:
        script, arrays = reproducer(report, record, f"{stem}_args.npz")
        np.savez(folder / f"{stem}_args.npz", **arrays)
        written["script"] = str(folder / f"{stem}_repro.py")
        Path(written["script"]).write_text(script)
    return written


def _constexpr_names(compiled: Any) -> set[str]:
    meta = getattr(compiled, "metadata", None)
    return set(getattr(meta, "constexprs", {}) or {})


def _written_only(report) -> set[str]:
    """Pointer parameters the kernel stores to but never loads: the reproducer remakes them poisoned
    (NaN), so the rerun has to write them; the others keep the data the launch left."""
    ir = getattr(report.compiled, "ir", None)
    if ir is None:
        return set()
    from .counts import memory_params

    loads, stores = memory_params(ir)
    return set(stores) - set(loads)


def _array_line(name: str, host: np.ndarray, written: bool, saved: dict) -> str:
    shape, dtype = tuple(host.shape), str(host.dtype)
    if written:
        fill = "xp.nan" if host.dtype.kind == "f" else "0"
        return f"    {name}=xp.full({shape}, {fill}, {dtype!r}),  # output: poisoned, the kernel writes it"
    if host.nbytes > MAX_SAVED_BYTES:
        return f"    {name}=xp.asarray(random({shape}, {dtype!r})),  # too big to save: random data"
    saved[name] = host
    return f"    {name}=xp.asarray(data[{name!r}]),"


def reproducer(report, record: Any, npz_name: str) -> tuple[str, dict[str, np.ndarray]]:
    """The script text and the arrays it loads."""
    constexprs = _constexpr_names(record.compiled)
    written = _written_only(report)
    arrays: dict[str, np.ndarray] = {}
    lines = []
    for name, value in record.args.items():
        if name in constexprs:
            continue
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            lines.append(_array_line(name, host_copy(value), name in written, arrays))
        else:
            lines.append(f"    {name}={value!r},")
    meta = record.compiled.metadata
    options = {k: record.args[k] for k in record.args if k in constexprs}
    launch = ", ".join(
        [f"{k}={v!r}" for k, v in options.items()]
        + [
            f"num_warps={getattr(meta, 'num_warps', 4)}",
            f"num_stages={getattr(meta, 'num_stages', 3)}",
        ]
    )
    source = textwrap.dedent(report.asm.get("source", "")).strip()
    stem = Path(npz_name).stem.replace("_args", "")
    script = f'''"""Reproduce the launch of {report.name} shown in a tileworkbench report.

Run `python {stem}_repro.py` beside {npz_name}: on the GPU where there is one, else (or with
TILEWORKBENCH_INTERPRET=1) in the interpreter. Inputs are the arrays as the launch left them; outputs
are remade full of NaN, so the kernel has to write them again. Names the kernel reads from its module
(helper functions, global constexprs) must be defined above it, as they were in the notebook.
"""

import os

import numpy as np

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.cuda.device import gpu_available

triton = tw  # kernels written against `triton.jit` / `triton.cdiv`
if gpu_available() and os.environ.get("TILEWORKBENCH_INTERPRET", "0") in ("", "0"):
    import cupy as xp
else:
    xp = np


def random(shape, dtype):
    return np.random.default_rng(0).standard_normal(shape).astype(dtype)


{source}


data = np.load({npz_name!r})
args = dict(
{chr(10).join(lines)}
)
{report.name}[{tuple(record.grid)!r}](**args, {launch})
print("launched {report.name} on grid {tuple(record.grid)}")
'''
    return script, arrays
