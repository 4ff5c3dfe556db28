"""Host tensor descriptors as kernel arguments (Triton's `TensorDescriptor` passed to a `@jit` kernel).

A descriptor parameter specializes on its element type, block shape and padding, written as the type
`tensordesc<fp16,64x64,zero>`. It reaches the kernel as several runtime parameters: the base pointer,
the shape (i64 each) and every stride but the last (i64 each; the last is 1 by construction). The
frontend rebuilds a `tl.tensor_descriptor` from them; the runtime flattens the host object alike.

On targets with TMA (sm_90+), a descriptor whose launch guaranteed the TMA rules (`:16` here means
a 16-byte aligned base, strides and innermost extent, `tma_rules.host_fits`) and whose block TMA
can copy (`tma_rules.box_fits`) gets one more parameter, `<name>.tensormap`: the 128-byte
CUtensorMap the launcher encodes, passed by value (`runtime/tensor_map.py`). The frontend leaves it
out; the descriptor pass (passes/descriptors.py) adds it where it picks TMA, by the same rule
(`tma_rules.host_refusal`). Where TMA's rings do not fit in shared memory, the compiler keeps some
of those descriptors on pointers after all (`target.TMAFallback`, runtime/compiler.py): they get no
tensor map, and the launch passes none.
"""

from __future__ import annotations

from typing import Any

from ..errors import CompilationError, LaunchError
from ..target import NO_FALLBACK, TMAFallback
from ..tma_rules import CHUNK, host_refusal
from .specialize import ArgSpec, parse_type

PREFIX = "tensordesc<"
TENSOR_MAP = "tensormap"  # the kind of a tensor map parameter (128 bytes, by value)


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


def expand_arg(
    arg: ArgSpec, tma: bool = False, fallback: TMAFallback = NO_FALLBACK
) -> list[ArgSpec]:
    """The runtime parameters one kernel parameter becomes: itself, or a descriptor's parts (with
    its tensor map last where `has_tensor_map`; `tma`: the target has TMA)."""
    parsed = parse_descriptor_type(arg.type)
    if parsed is None:
        return [arg]
    element, block, _ = parsed
    rank = len(block)
    chunk = _chunk_parts(element) if arg.divisible_16 else {}
    parts = [ArgSpec(arg.name, "*" + element, arg.divisible_16)]
    parts += [
        ArgSpec(f"{arg.name}.shape{i}", "i64", **(chunk if i == rank - 1 else {}))
        for i in range(rank)
    ]
    parts += [ArgSpec(f"{arg.name}.stride{i}", "i64", **chunk) for i in range(rank - 1)]
    if has_tensor_map(arg, tma, fallback):
        parts.append(ArgSpec(f"{arg.name}.{TENSOR_MAP}", TENSOR_MAP))
    return parts


def _chunk_parts(element: str) -> dict:
    """The divisibility of a `:16` descriptor's innermost extent and strides: whole 16-byte chunks
    (`tma_rules.host_fits`), so its pointer tiles (passes/descriptors.py, where TMA is off or
    refused) keep 16-byte vectors and cp.async; as ArgSpec fields, in elements."""
    elements = max(1, CHUNK // max(1, parse_type(element).primitive_bitwidth // 8))
    return {"divisible_16": True} if elements == CHUNK else {"divisible_by": elements}


def has_tensor_map(arg: ArgSpec, tma: bool, fallback: TMAFallback = NO_FALLBACK) -> bool:
    """Whether descriptor parameter `arg` comes with a tensor map on a target with (`tma`) or
    without TMA, once the compiler made its `fallback` choice."""
    return tma and takes_tensor_map(arg) and arg.name not in fallback.host


def takes_tensor_map(arg: ArgSpec) -> bool:
    """Whether descriptor parameter `arg` lowers to TMA on a target that has it: the launch saw a
    base and strides TMA takes (`:16`), TMA can copy its block, and NaN padding has a float type."""
    return tensor_map_refusal(arg) is None


def tensor_map_refusal(arg: ArgSpec) -> str | None:
    """Why descriptor parameter `arg` cannot take TMA on a target that has it, or None."""
    element, block, padding = parse_descriptor_type(arg.type)
    dtype = parse_type(element)
    return host_refusal(
        block, element, dtype.is_floating(), dtype.primitive_bitwidth, padding, arg.divisible_16
    )


def is_host_descriptor(value: Any) -> bool:
    """Duck-typed: Triton's TensorDescriptor and ours both have these attributes."""
    return all(hasattr(value, a) for a in ("base", "shape", "strides", "block_shape"))


def flatten_descriptor(value: Any, tensor_map=None, name: str = "") -> list[Any]:
    """A host descriptor's runtime parameter values, in `expand_arg`'s order; `tensor_map(value)`
    gives the encoded map where the kernel takes one. Its extents must be below 2**31, as
    Triton's (int32 shapes): the pointer form of its blocks computes positions in 32 bits."""
    strides = [int(s) for s in value.strides]
    what = f"tensor descriptor {name!r}" if name else "a tensor descriptor"
    if strides[-1] != 1:
        raise LaunchError(f"the last stride of {what} must be 1, got {strides}")
    shape = [int(s) for s in value.shape]
    if any(not 0 <= s < 2**31 for s in shape):
        raise LaunchError(
            f"{what} has shape {shape}: each extent must be in [0, 2**31) (descriptor shapes are "
            "int32, as in Triton); split the tensor or use pointers"
        )
    parts = [value.base, *shape, *strides[:-1]]
    if tensor_map is not None:
        parts.append(tensor_map(value))
    return parts
