"""`%%tilekernel` and `%tilekernel_peaks`: a thin IPython `Magics` subclass over cellrun.py.

`%load_ext tileworkbench` calls `load_ipython_extension`, which registers them (again, harmlessly,
on `%reload_ext`). The options are declared with `magic_arguments`, so `%%tilekernel?` documents them.
"""

from __future__ import annotations

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .cellrun import CellFailed, MagicOptions, run_tilekernel, unquote


@magics_class
class TileKernelMagics(Magics):
    """The workbench magics. `recorder` (a context-manager factory yielding the launch list) can be
    replaced, which is how tests feed it launches; by default it is the runtime's `record_launches`."""

    recorder = None

    def __init__(self, shell=None, **kwargs):
        super().__init__(shell, **kwargs)
        from .session import WorkbenchSession

        self.session = WorkbenchSession()  # wbB: history of the cells, for "what changed"

    @magic_arguments()
    @argument(
        "--signature",
        "-s",
        default=None,
        help="compile only, no launch (needs no GPU): parameter types, e.g. "
        '"x_ptr=*fp32,y_ptr=*fp32,n=i32"',
    )
    @argument(
        "--constexprs", "-c", default=None, help="compile only: constexpr values, e.g. BLOCK=1024"
    )
    @argument(
        "--kernel",
        "-k",
        default=None,
        help="compile only: the kernel's name (default: the one @jit kernel the cell defines)",
    )
    @argument(
        "--target",
        "-t",
        default=None,
        help="the GPU arch whose stages (tile-gpu, llvm, ptx, sass) the report shows: sm_80, "
        "sm_90, ...; default: the local GPU, else sm_90 (a launch in the interpreter is compiled "
        "for it too, not run); `interpreter` runs the cell's launches on the CPU",
    )
    @argument("--num-warps", type=int, default=None, help="compile only: warps per program")
    @argument("--num-stages", type=int, default=None, help="compile only: pipeline stages")
    @argument(
        "--no-fp-fusion",
        action="store_true",
        help="compile only: keep float a*b+c as two rounded ops (no FMA contraction)",
    )
    @argument(
        "--stages",
        default=None,
        help="the tabs to show, e.g. source,tile-opt,ptx (default: every stage)",
    )
    @argument(
        "--ref",
        default=None,
        help="an expression giving the expected output, evaluated after the cell "
        "(quote it when it has spaces: --ref 'x + y')",
    )
    @argument(
        "--out",
        default=None,
        help="the variable the kernel wrote (default: the launch's last pointer stored to)",
    )
    @argument(
        "--bench",
        "-b",
        nargs="?",
        const=100,
        type=int,
        default=None,
        help="time with do_bench for about N ms (default 100)",
    )
    @argument("--flops", default=None, help="an expression overriding the counted FLOPs")
    @argument("--bytes", default=None, help="an expression overriding the counted bytes")
    @argument("--no-roofline", action="store_true", help="leave out the roofline")
    @argument("--force", action="store_true", help="recompile, ignoring the compile cache")
    @argument(
        "--compare",
        default=None,
        choices=["triton"],
        help="also compile and time the kernel with Triton (needs Triton and a GPU)",
    )
    # -- wbB: views beyond the stages (session.py) --
    @argument(
        "--sweep",
        default=None,
        help='run the cell once per config and compare them, e.g. "BLOCK=256,512 num_warps=4,8"',
    )
    @argument(
        "--export",
        default=None,
        help="write each report as one HTML file and a reproducer script into this folder",
    )
    @argument(
        "--profile",
        action="store_true",
        help="run the launch under Nsight Compute (ncu) and show its counters per source line: "
        "instructions, stall reasons, memory traffic, bank conflicts, the top stalls in words",
    )
    @cell_magic
    def tilekernel(self, line: str, cell: str):
        """Run the cell, record every tileworkbench kernel it launches, and show a report for each:
        every compiler stage, pass by pass, source-line linking, resources, timing, a correctness
        check and the roofline. With --signature, compile the cell's kernel without launching it.
        When the cell raises (a compile error, an out-of-bounds access), the reports are shown and
        then the cell fails, so Run All stops there."""
        args = parse_argstring(self.tilekernel, line)
        options = MagicOptions(**{k: unquote(v) for k, v in vars(args).items()})
        self.session.validate(options)  # a bad --sweep is refused (the cell fails) before it runs
        from IPython.display import display

        try:
            reports = run_tilekernel(self.shell, options, cell, self.recorder)
        except CellFailed as failed:
            # the reports first, then the error, so Run All / nbclient stop at this cell
            for report in failed.reports:
                display(report)
            self.shell.user_ns["_tilekernel_reports"] = failed.reports
            raise failed.error_to_raise() from None
        # sweep, what changed since the last run, export (session.py)
        reports = self.session.finish(self.shell, options, cell, reports, self.recorder)
        for report in reports:
            display(report)
        self.shell.user_ns["_tilekernel_reports"] = reports

    @magic_arguments()
    @argument("--force", action="store_true", help="measure again even if cached")
    @argument("--device", default=None, help="show a device's datasheet ceilings (e.g. H100 SXM)")
    @argument(  # wbB: the host CPU's measured ceilings (hostbench.py)
        "--host", action="store_true", help="measure the host CPU instead (no GPU needed)"
    )
    @line_magic
    def tilekernel_peaks(self, line: str):
        """Measure (once, then cached) and show this GPU's ceilings: DRAM and L2 bandwidth, FP32 FMA
        and tensor-core rates; without a GPU, the datasheet values of --device (default H200), or with
        --host the host CPU's measured memory, cache and BLAS rates."""
        from .peaks import get_peaks, host_peaks

        args = parse_argstring(self.tilekernel_peaks, line)
        if args.host:
            return host_peaks(force=args.force)
        return get_peaks(unquote(args.device), measure=True, force=args.force)


def load_ipython_extension(ipython) -> None:
    """`%load_ext tileworkbench`: register the magics (safe to call again)."""
    ipython.register_magics(TileKernelMagics)


def unload_ipython_extension(ipython) -> None:
    """`%unload_ext`: nothing to undo beyond what IPython does; kept so %reload_ext is harmless."""
