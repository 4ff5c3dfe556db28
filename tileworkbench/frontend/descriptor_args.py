"""Host tensor descriptors as kernel arguments (Triton's `TensorDescriptor` passed to a `@jit` kernel).

A descriptor parameter specializes on its element type, block shape and padding, written as the type
`tensordesc<fp16,64x64,zero>`. It reaches the kernel as several runtime parameters: the base pointer,
the shape (i64 each) and every stride but the last (i64 each; the last is 1 by construction). The
frontend rebuilds a `tl.tensor_descriptor` from them; the runtime flattens the host object alike.
"""

from __future__ import annotations

from typing import Any

from ..errors import CompilationError, LaunchError
from .specialize import ArgSpec

PREFIX = "tensordesc<"


def descriptor_type(element: str, block_shape, padding: str) -> str:
    """The type text of a descriptor parameter, e.g. `tensordesc<fp16,64x64,zero>`."""
    return f"{PREFIX}{element},{'x'.join(str(int(b)) for b in block_shape)},{padding}>"


def parse_descriptor_type(text: str) -> tuple[str, tuple[int, ...], str] | None:
    """(element type, block shape, padding) of a descriptor type text; None for any other type."""
    if not text.startswith(PREFIX) or not text.endswith(">"):
        return None
    try:
        element, block, padding = text[len(PREFIX) : -1].split(",")
        return element, tuple(int(b) for b in block.split("x")), padding
    except ValueError:
        raise CompilationError(
            f"bad tensor descriptor type {text!r}: expected e.g. 'tensordesc<fp16,64x64,zero>'"
        ) from None


def expand_arg(arg: ArgSpec) -> list[ArgSpec]:
    """The runtime parameters one kernel parameter becomes: itself, or a descriptor's parts."""
    parsed = parse_descriptor_type(arg.type)
    if parsed is None:
        return [arg]
    element, block, _ = parsed
    rank = len(block)
    parts = [ArgSpec(arg.name, "*" + element, arg.divisible_16)]
    parts += [ArgSpec(f"{arg.name}.shape{i}", "i64") for i in range(rank)]
    parts += [ArgSpec(f"{arg.name}.stride{i}", "i64") for i in range(rank - 1)]
    return parts


def is_host_descriptor(value: Any) -> bool:
    """Duck-typed: Triton's TensorDescriptor and ours both have these attributes."""
    return all(hasattr(value, a) for a in ("base", "shape", "strides", "block_shape"))


def flatten_descriptor(value: Any) -> list[Any]:
    """A host descriptor's runtime parameter values, in `expand_arg`'s order."""
    strides = [int(s) for s in value.strides]
    if strides[-1] != 1:
        raise LaunchError(f"the last stride of a tensor descriptor must be 1, got {strides}")
    return [value.base, *(int(s) for s in value.shape), *strides[:-1]]
