"""Exceptions users may catch. Names follow Triton's (`CompilationError`, `OutOfResources`), so users'
`except` clauses carry over; all derive from `TileworkbenchError` (Triton's `TritonError`)."""

from __future__ import annotations


class TileworkbenchError(Exception):
    """Base of every error tileworkbench raises on purpose."""


TritonError = TileworkbenchError  # the name Triton users catch


class CompilationError(TileworkbenchError):
    """The kernel cannot be compiled: the message gives file:line:col, the line with carets and a hint."""

    def __init__(self, message: str, *, loc=None, hint: str | None = None):
        super().__init__(message)
        self.loc = loc
        self.hint = hint

    @property
    def error_message(self) -> str:
        """The message (Triton's `CompilationError.error_message`, which code reads)."""
        return str(self)


class TileTypeError(CompilationError):
    """A language-level type or shape error, raised without a place; the frontend adds the location."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message, hint=hint)


class CompileTimeAssertionFailure(TileTypeError):
    """A `tl.static_assert` failed (Triton's name); raised when the kernel compiles, debug mode or not."""


class OptionError(CompilationError, AssertionError):
    """A compile option no target takes (num_warps that is not a power of two); an AssertionError too,
    as Triton checks its options with `assert` and code catches that."""


class TargetOptionError(OptionError, ValueError):
    """A compile option the target cannot take: an architecture the backend does not know, num_ctas
    > 1 before Hopper; a ValueError too, as Triton raises for these."""


class OutOfResources(TileworkbenchError):
    """The kernel needs more of a resource (shared memory, registers, grid size) than the device has."""

    def __init__(self, required: int, limit: int, name: str):
        self.required, self.limit, self.name = required, limit, name
        super().__init__(
            f"out of resource: {name}, required {required}, hardware limit {limit}. "
            "Reduce block sizes or num_stages."
        )


class InterpreterError(TileworkbenchError):
    """A kernel failed while running in the interpreter (bad access, failed device_assert, ...)."""


class OutOfBoundsError(InterpreterError):
    """An unmasked load or store fell outside the array its pointer came from (in the interpreter, or on
    the GPU in debug mode)."""


class DeviceAssertionError(InterpreterError):
    """A `tl.device_assert` failed on the GPU in a kernel compiled with `debug=True`."""


class LaunchError(TileworkbenchError):
    """A launch was refused before it ran (bad argument, grid or resources) or failed on the device."""


class HostArrayError(LaunchError, ValueError):
    """A pointer argument of a GPU launch lives in host memory (or is no array); a ValueError too, as
    Triton's "cannot be accessed from Triton (cpu tensor?)"."""


class ArgumentOverflowError(LaunchError, OverflowError):
    """An integer argument fits in no 64-bit kind (i64, u64); an OverflowError, as in Triton."""


class ArgumentBindingError(LaunchError, TypeError):
    """The call's arguments do not match the kernel's parameters (too many, missing, unknown, given
    twice). A TypeError too, as for any Python call: the warm launcher's own binding raises CPython's
    TypeError for an argument given twice, and both are caught alike."""


# The words of a bad access: the interpreter's (backends/interpreter/memory.py) and, for the same
# access, a debug-mode launch's (runtime/debug_checks.py); here so neither imports the other.
def out_of_bounds_message(
    kind: str,
    kernel: str,
    where: str,
    name: str,
    described: str,
    offset: int,
    dtype,
    elements: int,
    pid: tuple,
) -> str:
    """An out-of-bounds access, in the interpreter's words (which debug-mode launches repeat)."""
    return (
        f"out-of-bounds {kind} in kernel '{kernel}' at {where}\n"
        f"  argument '{name}' ({described}) accessed at element offset "
        f"{offset} ({dtype} elements; the array has {elements}), program id {pid}\n"
        f"  hint: mask the {kind} (mask=offsets < n) or check the offset arithmetic"
    )


def misaligned_message(
    kind: str,
    kernel: str,
    where: str,
    name: str,
    described: str,
    byte_offset: int,
    dtype,
    pid: tuple,
) -> str:
    """A misaligned access, in the interpreter's words (which debug-mode launches repeat)."""
    return (
        f"misaligned {kind} in kernel '{kernel}' at {where}\n"
        f"  argument '{name}' ({described}) accessed at byte offset "
        f"{byte_offset}, which is not a multiple of the {dtype} element size {dtype.itemsize}, "
        f"program id {pid}"
    )
