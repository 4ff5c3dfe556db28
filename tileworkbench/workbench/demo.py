"""`tileworkbench demo`: run the showcase kernels (GPU, else interpreter), check them against NumPy and
write one HTML report with every stage and the roofline.

Without a GPU the kernels run in the interpreter, and each launch is also compiled for sm_90 (no GPU
needed, `gpu_stages.py`) so the report still shows the GPU stages: tile-gpu, LLVM, PTX (and SASS
where ptxas and nvdisasm exist).
"""

from __future__ import annotations

import html
import sys

from ..backends import is_gpu
from .build import ReportOptions, report_for_launch
from .gpu_stages import add_gpu_stages, gpu_target

# On a GPU the kernels run at sizes where the roofline means something (small ones measure launches).
GPU_SIZES = {
    "vector add": {"n": 1 << 24},
    "fused softmax": {"rows": 4096, "cols": 4096},
    "matmul": {"m": 2048, "n": 2048, "k": 2048},
    "layer norm": {"rows": 4096, "cols": 4096},
}


def gpu_available() -> bool:
    try:
        from ..cuda.device import gpu_available as available

        return bool(available())
    except Exception:  # no CuPy or no driver
        return False


def run_demo(
    out_path: str | None = "tileworkbench-demo.html",
    target: str | None = None,
    bench_ms: int = 100,
    log=print,
) -> tuple[list, bool]:
    """Run, check and report every showcase kernel. Returns (reports, all checks passed)."""
    from ..config import config
    from ..runtime.record import record_launches
    from .showcase import RUNNERS

    on_gpu = (target is None or is_gpu(target)) and gpu_available()
    saved = config.interpret
    config.interpret = not on_gpu
    reports, ok = [], True
    try:
        for title, runner in RUNNERS.items():
            with record_launches() as launches:
                run = runner(on_gpu, **(GPU_SIZES[title] if on_gpu else {}))
            record = launches[-1]
            opts = ReportOptions(bench=bench_ms if on_gpu else None, ref=run.ref, out=run.out)
            report = report_for_launch(record, opts)
            if not on_gpu:
                add_gpu_stages(report, record)
            reports.append(report)
            ok = ok and bool(report.check and report.check.passed)
            log(f"{title:14} {report.check.summary() if report.check else 'not checked'}")
    finally:
        config.interpret = saved
    if out_path:
        write_page(reports, out_path, on_gpu)
        log(f"report written to {out_path}")
    return reports, ok


def write_page(reports: list, out_path: str, on_gpu: bool) -> None:
    from .html_view import page

    if on_gpu:
        what = "run on the GPU and checked against NumPy float64"
    else:
        what = (
            "run in the interpreter (no GPU found) and checked against NumPy float64; their GPU "
            f"stages are compiled for {gpu_target(None)} without launching"
        )
    intro = (
        f"<p>The showcase kernels, {html.escape(what)}. Each report has a tab per compiler stage, "
        "the passes one by one, and (click a source line) the lines it became in every stage.</p>"
    )
    extra = intro + _combined_roofline(reports)
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(page(reports, "tileworkbench demo", extra))


def _combined_roofline(reports: list) -> str:
    import base64

    from .roofline import roofline

    points = [r for r in reports if r.point is not None]
    if not points:
        return ""
    png = base64.b64encode(roofline(points).to_bytes("png")).decode()
    return f'<img alt="roofline of all kernels" src="data:image/png;base64,{png}">'


def main_demo(out: str | None, target: str | None) -> int:
    try:
        _, ok = run_demo(out, target)
    except ImportError as exc:
        print(f"demo needs the tileworkbench compiler and runtime: {exc}", file=sys.stderr)
        return 2
    return 0 if ok else 1


__all__ = ["main_demo", "run_demo"]
