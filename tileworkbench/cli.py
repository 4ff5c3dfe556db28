"""The `tileworkbench` command.

    tileworkbench lab [--dir tileworkbench-notebooks] [--no-browser] [--dry-run] [-- JUPYTER_ARGS]
                                          copy the teaching notebooks to a folder of yours and
                                          open them in JupyterLab
    tileworkbench compile FILE.py::kernel --signature "x_ptr=*fp32,n=i32" --constexprs BLOCK=1024 \\
        --stage ptx [--target sm_90]      print one stage (or `--stage all`, or `--stage passes`)
    tileworkbench demo [--out report.html] [--target interpreter]
                                          run, check and report the showcase kernels
    tileworkbench peaks [--device NAME] [--measure] [--force]
                                          the roofline ceilings (measured on this GPU, or datasheet)
    tileworkbench profile FILE.py [--kernel NAME] [--json OUT] [--html OUT]
                                          Nsight Compute counters of each launch, per source line
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any

DEFAULT_LAB_DIR = "tileworkbench-notebooks"  # workbench/lab.py's DEFAULT_DIR, without importing it
STAGE_CHOICES = (
    "source",
    "tile",
    "tile-opt",
    "tile-gpu",
    "llvm",
    "ptx",
    "sass",
    "asm",
    "all",
    "passes",
)


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Help that names a default once: only where the help text does not already say it, and never
    for a flag's False or an unset None (argparse's ArgumentDefaultsHelpFormatter doubles both)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            "default" in text
            or action.default in (None, False, argparse.SUPPRESS)
            or action.option_strings == []
        ):
            return text
        return text + " (default: %(default)s)"


def load_kernel(spec: str) -> Any:
    """`path/to/file.py::kernel_name` -> the kernel object defined in that file. A file that does not
    parse is reported in one line (file:line:col: message), not with the import's traceback."""
    path, sep, name = spec.partition("::")
    if not sep or not name:
        raise SystemExit(f"error: expected FILE.py::kernel, got {spec!r}")
    if not os.path.isfile(path):
        raise SystemExit(f"error: no such file: {path}")
    module_name = "_tileworkbench_cli_" + os.path.splitext(os.path.basename(path))[0]
    module_spec = importlib.util.spec_from_file_location(module_name, os.path.abspath(path))
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module  # dataclasses and inspect look the module up by name
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        module_spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(module_name, None)
        raise SystemExit(syntax_error_line(exc, path)) from None
    if not hasattr(module, name):
        raise SystemExit(f"error: {path} defines no {name!r}")
    return getattr(module, name)


def syntax_error_line(exc: SyntaxError, path: str) -> str:
    """`file:line:col: SyntaxError: message` (the column 1-based, as compilers and editors count)."""
    where = exc.filename if exc.filename and exc.filename != "<unknown>" else path
    place = ":".join(str(p) for p in (where, exc.lineno, exc.offset) if p is not None)
    return f"{place}: {type(exc).__name__}: {exc.msg}"


def format_stages(compiled: Any, stage: str) -> str:
    """The text of one stage, of every stage (`all`) or of every pass snapshot (`passes`)."""
    if stage == "passes":
        return "".join(f"// ----- after {name} -----\n{text}\n" for name, text in compiled.passes)
    if stage == "all":
        return "".join(f"// ===== {name} =====\n{text}\n" for name, text in compiled.asm.items())
    if stage not in compiled.asm:
        why = getattr(compiled.asm, "why_missing", None)
        reason = f": {why(stage)}" if why is not None else ""
        raise SystemExit(
            f"error: stage {stage!r} is not available for target "
            f"{compiled.metadata.target} (available: {', '.join(compiled.asm)}){reason}"
        )
    return compiled.asm[stage]


def cmd_compile(args: argparse.Namespace) -> int:
    from .errors import TileworkbenchError
    from .workbench.compile_only import compile_kernel

    kernel = load_kernel(args.kernel)
    try:
        compiled = compile_kernel(
            kernel,
            args.signature,
            args.constexprs,
            args.target,
            args.num_warps,
            args.num_stages,
            fp_fusion=not args.no_fp_fusion,
            debug=args.debug,
            maxnreg=args.maxnreg,
            reflect_ftz=not args.no_reflect_ftz,
        )
    except (TileworkbenchError, ValueError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(format_stages(compiled, args.stage))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .workbench.demo import main_demo

    return main_demo(args.out, args.target)


def cmd_lab(args: argparse.Namespace) -> int:
    from .workbench.lab import main_lab

    extra = [a for a in args.jupyter_args if a != "--"]
    return main_lab(args.dir, no_browser=args.no_browser, dry_run=args.dry_run, extra=extra)


def cmd_peaks(args: argparse.Namespace) -> int:
    from .workbench.peaks import get_peaks

    print(get_peaks(args.device, measure=args.measure or args.force, force=args.force))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tileworkbench",
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    defaults = {"formatter_class": DefaultsHelpFormatter}
    lab = sub.add_parser(
        "lab",
        help="copy the teaching notebooks to a folder of yours and open JupyterLab there",
        **defaults,
    )
    lab.add_argument(
        "--dir",
        default=DEFAULT_LAB_DIR,
        help="the folder for your copies (edited copies are never overwritten)",
    )
    lab.add_argument("--no-browser", action="store_true", help="start JupyterLab without a browser")
    lab.add_argument(
        "--dry-run",
        action="store_true",
        help="copy the notebooks and print the JupyterLab command, do not start it",
    )
    lab.add_argument(
        "jupyter_args",
        nargs=argparse.REMAINDER,
        help="after `--`: options for JupyterLab itself, e.g. -- --port 8899",
    )
    lab.set_defaults(func=cmd_lab)
    comp = sub.add_parser(
        "compile", help="compile a kernel and print a stage (no GPU needed)", **defaults
    )
    comp.add_argument("kernel", help="FILE.py::kernel_name")
    comp.add_argument("--signature", "-s", required=True, help='e.g. "x_ptr=*fp32,n=i32"')
    comp.add_argument("--constexprs", "-c", default=None, help="e.g. BLOCK=1024,NUM=2")
    comp.add_argument(
        "--stage",
        default="ptx",
        choices=STAGE_CHOICES,
        help="the stage to print (`all`: every stage, `passes`: the IR after each; `asm`: "
        "the cpu target's host assembly)",
    )
    comp.add_argument("--target", "-t", default="sm_90", help="sm_80, sm_90, ..., cpu, interpreter")
    comp.add_argument(
        "--num-warps",
        type=int,
        default=None,
        help="warps per program (default: the target's, 4 on GPUs)",
    )
    comp.add_argument(
        "--num-stages", type=int, default=None, help="software-pipelining stages (default: 3)"
    )
    comp.add_argument(
        "--no-fp-fusion",
        action="store_true",
        help="keep float a*b+c as two rounded ops (Triton's enable_fp_fusion=False)",
    )
    comp.add_argument(
        "--maxnreg",
        type=int,
        default=None,
        help="at most this many registers per thread (`.maxnreg` on the kernel entry)",
    )
    comp.add_argument(
        "--no-reflect-ftz",
        action="store_true",
        help="keep subnormals in approximate math and libdevice (Triton's "
        "enable_reflect_ftz=False)",
    )
    comp.add_argument(
        "--debug",
        action="store_true",
        help="debug mode: bounds-check every load, store and atomic; compile device asserts",
    )
    comp.set_defaults(func=cmd_compile)
    demo = sub.add_parser("demo", help="run, check and report the showcase kernels", **defaults)
    demo.add_argument("--out", default="tileworkbench-demo.html", help="the HTML report to write")
    demo.add_argument(
        "--target",
        default=None,
        choices=["interpreter", "cuda"],
        help="where to run; unset: the GPU where there is one, else the interpreter",
    )
    demo.set_defaults(func=cmd_demo)
    peaks = sub.add_parser("peaks", help="show the device's roofline ceilings", **defaults)
    peaks.add_argument("--device", default=None, help="a device name for datasheet values")
    peaks.add_argument("--measure", action="store_true", help="measure on this GPU if not cached")
    peaks.add_argument("--force", action="store_true", help="measure again")
    peaks.set_defaults(func=cmd_peaks)
    from .workbench.profile_cli import add_parser as add_profile  # issue 22 (profile_cli.py)

    add_profile(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
