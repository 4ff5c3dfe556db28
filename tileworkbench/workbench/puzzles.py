"""Puzzles in the style of the Triton puzzles: a spec in NumPy, a kernel to write, and a test that says
pass or fail at once, with the memory access picture of one program and, on a failure, where it
fails and which programs wrote (or missed) each output element.

`check_puzzle(kernel, spec, inputs, ...)` runs the kernel in the interpreter on fresh random inputs
(the output poisoned with NaN first), compares it with the spec in float64 and returns a `PuzzleResult`,
which shows itself in a notebook (HTML) and in a terminal (text).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .access_map import AccessSection, record_launch_program
from .coverage import coverage
from .mismatch import MismatchSection


@dataclass
class PuzzleResult:
    """Pass or fail, the numbers behind it, and the pictures that explain it."""

    name: str
    passed: bool
    summary: str
    hint: str | None = None
    sections: list[Any] = field(default_factory=list)

    def __repr__(self) -> str:
        lines = [f"{self.name}: {'PASS' if self.passed else 'FAIL'} - {self.summary}"]
        if self.hint and not self.passed:
            lines.append("hint: " + self.hint)
        for section in self.sections:
            lines += [section.title + ":"] + ["  " + line for line in section.text()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        color, word = ("#060", "PASS") if self.passed else ("#b00", "FAIL")
        parts = [
            (
                f'<div style="font-family:system-ui,sans-serif;font-size:13px">'
                f'<b style="color:{color};font-size:15px">{word}</b> {html.escape(self.name)}: '
                f"{html.escape(self.summary)}"
            )
        ]
        if self.hint and not self.passed:
            parts.append(f'<div style="color:#666">hint: {html.escape(self.hint)}</div>')
        for section in self.sections:
            parts.append(
                f"<details open><summary><b>{html.escape(section.title)}</b></summary>"
                f"{section.html()}</details>"
            )
        return "".join(parts) + "</div>"


def _launch(kernel, grid: tuple[int, ...], args: list, constexprs: dict) -> tuple[list, Any]:
    """Launch in the interpreter with the launch recorded; returns the records and the
    out-of-bounds error that stopped it, if one did."""
    from ..config import config
    from ..errors import OutOfBoundsError
    from ..runtime.record import record_launches

    saved, error = config.interpret, None
    config.interpret = True  # puzzles run on any machine, and the access picture needs NumPy arrays
    try:
        with record_launches() as launches:
            kernel[grid](*args, **constexprs)
    except OutOfBoundsError as exc:
        error = exc
    finally:
        config.interpret = saved
    return launches, error


def check_puzzle(
    kernel,
    spec: Callable[..., np.ndarray],
    inputs: dict[str, tuple[int, ...]],
    out_shape: tuple[int, ...],
    grid: tuple[int, ...],
    scalars: dict[str, int] | None = None,
    constexprs: dict[str, int] | None = None,
    hint: str | None = None,
    pid: tuple[int, ...] = (0, 0, 0),
    rtol: float = 1e-5,
    title: str | None = None,
) -> PuzzleResult:
    """Run `kernel(*inputs, out, *scalars, **constexprs)` on `grid` and compare with `spec(*inputs)`.

    Args:
        spec: the answer in NumPy, computed in float64 from the inputs.
        inputs: input name -> shape (fresh standard-normal float32 data) or a function of a NumPy
            random generator that makes the array (integer inputs, scales).
        out_shape: the output's shape; it is filled with NaN before the launch.
        grid, scalars, constexprs: the launch (scalars follow the output in the argument list).
        hint: shown when the kernel fails.
        pid: the program whose memory accesses are drawn.
        rtol: the relative (and absolute) tolerance of the comparison.
        title: what the verdict names (default: the kernel's name).
    """
    name = title or getattr(getattr(kernel, "fn", kernel), "__name__", "kernel")
    rng = np.random.default_rng()
    arrays = [
        make(rng) if callable(make) else rng.standard_normal(make).astype(np.float32)
        for make in inputs.values()
    ]
    out = np.full(out_shape, np.nan, np.float32)
    # integer inputs (packed weights) reach the spec as they are: it unpacks their bits
    expected = spec(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays])
    args = [*arrays, out, *(scalars or {}).values()]
    launches, error = _launch(kernel, grid, args, dict(constexprs or {}))
    if error is not None:
        from .launch_views import failure_view

        result = PuzzleResult(name, False, str(error).splitlines()[0], hint)
        view = failure_view(error, launches)
        result.sections += [view] if view is not None else []
        return result
    record = launches[-1] if launches else None
    bad = ~np.isclose(out, expected, rtol=rtol, atol=rtol)
    n_bad, n_nan = int(bad.sum()), int(np.isnan(out).sum())
    if not n_bad:
        summary = f"all {out.size} elements match the spec"
    else:
        summary = f"{n_bad} of {out.size} elements differ from the spec"
        summary += f" ({n_nan} never written)" if n_nan else ""
    result = PuzzleResult(name, n_bad == 0, summary, hint)
    if n_bad:
        result.sections.append(MismatchSection(bad, (constexprs or {}).get("B0")))
        if record is not None:  # which program wrote what: a missing or doubled block shows here
            result.sections.append(coverage(record))
    if record is not None:
        result.sections.append(AccessSection(record_launch_program(record, pid)))
    return result
