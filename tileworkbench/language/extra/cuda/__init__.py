"""`tl.extra.cuda` (Triton's `triton.language.extra.cuda`): libdevice, and reads of the GPU's special
registers and launch configuration: `globaltimer()`, `smid()`, `num_threads()`, `num_warps()`;
grid dependence control for programmatic dependent launch: `gdc_wait()`,
`gdc_launch_dependents()`."""

from __future__ import annotations

from ...core import builtin
from . import libdevice  # noqa: F401


@builtin
def globaltimer():
    """The GPU's nanosecond global timer (`%globaltimer`) as an int64 scalar; the interpreter reads the
    host's `time.time_ns()`."""


@builtin
def smid():
    """The id of the streaming multiprocessor running this program (`%smid`), an int32 scalar; 0 in the
    interpreter."""


@builtin
def num_threads():
    """The number of threads of a program (32 * num_warps), a compile-time constant."""


@builtin
def num_warps():
    """The launch's `num_warps`, a compile-time constant."""


@builtin
def gdc_wait():
    """Wait until every program of the grid this launch depends on has finished and its memory
    writes are visible (PTX `griddepcontrol.wait`, sm_90 and newer). Without `launch_pdl=True`
    there is no such grid and it returns at once; in the interpreter launches run one after
    another, so it does nothing."""


@builtin
def gdc_launch_dependents():
    """Let the grid launched after this one with `launch_pdl=True` start early (PTX
    `griddepcontrol.launch_dependents`, sm_90 and newer): a hint, with no memory ordering. Nothing
    in the interpreter."""
