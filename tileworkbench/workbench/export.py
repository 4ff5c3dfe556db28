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


def reproducer(report, record: Any, npz_name: str) -> tuple[str, dict[str, np.ndarray]]:
    """The script text and the arrays it loads."""
    constexprs = _constexpr_names(record.compiled)
    arrays, lines = {}, []
    for name, value in record.args.items():
        if name in constexprs:
            continue
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            host = host_copy(value)
            if host.nbytes <= MAX_SAVED_BYTES:
                arrays[name] = host
                lines.append(f"    {name}=data[{name!r}].copy(),")
            else:
                lines.append(f"    {name}=random({host.shape}, {str(host.dtype)!r}),  # too big to save")
        else:
            lines.append(f"    {name}={value!r},")
    meta = record.compiled.metadata
    options = {k: record.args[k] for k in record.args if k in constexprs}
    launch = ", ".join(
        [f"{k}={v!r}" for k, v in options.items()]
        + [f"num_warps={getattr(meta, 'num_warps', 4)}", f"num_stages={getattr(meta, 'num_stages', 3)}"]
    )
    source = textwrap.dedent(report.asm.get("source", "")).strip()
    script = f'''"""Reproduce the launch of {report.name} shown in a tileworkbench report.

Run it with `python {Path(npz_name).stem.replace("_args", "")}_repro.py` beside {npz_name}; set
TILEWORKBENCH_INTERPRET=1 to run it without a GPU. Names the kernel reads from its module (helper
functions, global constexprs) must be defined above it, as they were in the notebook.
"""

import numpy as np

import tileworkbench as tw
import tileworkbench.language as tl

triton = tw  # kernels written against `triton.jit` / `triton.cdiv`


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
