"""Recorded GPU figures tied to the code that produced them: each row of notebooks/data/*.json carries
the sha256 of the PTX its kernel was timed with and how to compile that kernel again (kernel, signature,
constexprs, arch, warps, stages). Compiling it today (no GPU needed) tells whether the figure is still
the current compiler's: the notebooks then say "re-record" instead of showing old numbers as current,
and tests/workbench/test_recorded_ptx.py fails in CI when the PTX changes.

A row whose kernel or config cannot be reproduced from its record carries `"stale": "<why>"` and no
invented hash; `python -m tileworkbench.workbench.record_ptx [--mark-stale]` lists (and marks) the
rows whose PTX changed.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RERECORD = "run `PYTHONPATH=. python bench/record_notebook_data.py` on a GPU"
_FILE_PATH = re.compile(r'^(\s*\.file\s+\d+\s+")[^"]*/([^"/]*")', re.MULTILINE)


def ptx_sha256(ptx: str) -> str:
    """The hash of PTX text, with the folders of its `.file` lines dropped (they name the checkout the
    kernel was compiled in, which says nothing about the code)."""
    return hashlib.sha256(_FILE_PATH.sub(r"\1\2", ptx).encode()).hexdigest()


def ptx_entry(
    kernel,
    signature: dict[str, str],
    constexprs: dict[str, Any],
    target: str,
    num_warps: int = 4,
    num_stages: int = 3,
    ptx: str | None = None,
) -> dict:
    """What a record keeps of a timed kernel: how to compile it again and the hash of its PTX (of
    `ptx` when given: the very text that ran; else compiled here)."""
    fn = getattr(kernel, "fn", kernel)
    entry = {
        "kernel": f"{fn.__module__}:{fn.__name__}",
        "signature": dict(signature),
        "constexprs": dict(constexprs),
        "target": target,
        "num_warps": num_warps,
        "num_stages": num_stages,
    }
    entry["sha256"] = ptx_sha256(ptx if ptx is not None else compile_entry(entry))
    return entry


def launch_entry(kernel, compiled, constexprs: dict[str, Any], target: str | None = None) -> dict:
    """The entry of a kernel as a launch compiled it (`kernel.warmup(...)`): the launch's own
    specialization, and the PTX that ran. With `target` (an arch), that specialization compiled for
    it instead: what an interpreter launch would have run on that GPU."""
    names = [n for n in kernel.arg_names if n not in constexprs]
    signature = dict(zip(names, compiled.metadata.signature, strict=True))
    meta = compiled.metadata
    if target is not None:
        return ptx_entry(kernel, signature, constexprs, target, meta.num_warps, meta.num_stages)
    return ptx_entry(
        kernel,
        signature,
        constexprs,
        meta.target,
        meta.num_warps,
        meta.num_stages,
        ptx=compiled.asm["ptx"],
    )


def compile_entry(entry: dict) -> str:
    """Today's PTX of the kernel a record names, at its recorded config (a cache hit is today's
    compiler's too: the cache key holds the compiler's fingerprint)."""
    from .. import compile as tw_compile

    module, _, name = entry["kernel"].partition(":")
    kernel = getattr(importlib.import_module(module), name)
    compiled = tw_compile(
        kernel,
        signature=entry["signature"],
        constexprs=entry["constexprs"],
        target=entry["target"],
        num_warps=entry["num_warps"],
        num_stages=entry["num_stages"],
    )
    return compiled.asm["ptx"]


@dataclass(frozen=True)
class PtxCheck:
    """Whether a recorded row is still the current compiler's: "current", "changed" (today's PTX
    differs), "stale" (the record has no hash: its config could not be reproduced) or "untied" (it
    names no PTX at all)."""

    status: str
    detail: str = ""

    @property
    def current(self) -> bool:
        return self.status == "current"

    def note(self, label: str) -> str:
        """One line for the notebook; empty for a current row."""
        if self.current:
            return ""
        return f"re-record {label}: {self.detail}; {RERECORD}"


def check_row(row: dict) -> PtxCheck:
    """Compare a recorded row's PTX hash with today's compile of the same kernel and config. A row
    marked `"stale"` with a hash is still compared (the mark only says the record knows)."""
    entry = row.get("ptx")
    if not entry:
        return PtxCheck("untied", "the record does not say which PTX was timed")
    if "sha256" not in entry:
        return PtxCheck("stale", entry.get("stale") or "the record has no PTX hash")
    today = ptx_sha256(compile_entry(entry))
    if today != entry["sha256"]:
        return PtxCheck(
            "changed",
            f"today's compiler emits different PTX for {entry['kernel'].split(':')[-1]} at "
            f"{entry['target']} (sha256 {today[:12]}, recorded {entry['sha256'][:12]}): the "
            "figures are of older code",
        )
    return PtxCheck("current")


def check_records(folder: str | Path, mark_stale: bool = False) -> list[tuple[str, str, PtxCheck]]:
    """(file, label, check) for every row of the records in `folder`, a changed row's status
    "changed, marked stale" where the record knows; with `mark_stale`, a changed row gets that mark
    (its hash kept), so CI passes and the notebook says re-record until someone re-records."""
    out = []
    for path in sorted(Path(folder).glob("*.json")):
        data = json.loads(path.read_text())
        changed = False
        for row in data.get("rows", []):
            check = check_row(row)
            entry = row.get("ptx")
            if mark_stale and check.status == "changed" and not entry.get("stale"):
                entry["stale"] = "today's compiler emits different PTX for this kernel and config"
                changed = True
            if check.status == "changed" and entry.get("stale"):
                check = PtxCheck("changed, marked stale", check.detail)
            out.append((path.name, row.get("label", "?"), check))
        if changed:
            path.write_text(json.dumps(data, indent=1))
    return out


def main(argv: list[str] | None = None) -> int:
    """`python -m tileworkbench.workbench.record_ptx [--mark-stale] [FOLDER]`: which recorded rows
    are still the current compiler's (exit 1 when a row not marked stale has changed)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", default="notebooks/data")
    parser.add_argument(
        "--mark-stale",
        action="store_true",
        help="mark rows whose PTX changed as stale (then re-execute the notebooks)",
    )
    args = parser.parse_args(argv)
    failing = 0
    for name, label, check in check_records(args.folder, args.mark_stale):
        print(f"{name}: {label}: {check.status}" + (f" ({check.detail})" if check.detail else ""))
        failing += check.status == "changed"
    return 1 if failing else 0


if __name__ == "__main__":
    raise SystemExit(main())
