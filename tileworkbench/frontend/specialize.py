"""Kernel signatures: parameter types written as strings ("*fp32", "i32", "fp16"), with the specializations
a launch detected (`:16` for 16-byte-aligned pointers or multiples of 16, `:8` and `:4` for integers that
are multiples of 8 or 4 but not of 16, `:1` for integers equal to 1)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

from ..errors import CompilationError
from ..language import core
from ..language.core import dtype, pointer_type


@dataclass(frozen=True)
class ArgSpec:
    """One runtime parameter of a kernel: its name, type string, and what the launch guaranteed."""

    name: str
    type: str
    divisible_16: bool = False
    equal_1: bool = False
    # an integer that is a multiple of 8 or 4 but not of 16 (`SMALL_DIVISORS`); 1 otherwise
    divisible_by: int = 1

    @property
    def key(self) -> str:
        """The specialization as text, "*fp32:16" (`key_text`)."""
        return key_text(self.type, self.divisible_16, self.equal_1, self.divisible_by)

    @classmethod
    def from_key(cls, name: str, text: str) -> ArgSpec:
        """The ArgSpec whose `key` is `text` ("*fp32:16"), unchecked: the launch made the text."""
        kind, *flags = text.split(":")
        small = [int(flag) for flag in flags if flag in _SMALL_FLAGS]
        return cls(name, kind, "16" in flags, "1" in flags, small[0] if small else 1)


# Integer divisors below 16 a launch specializes on: a row stride that is a multiple of 8 elements is
# whole 16-byte chunks for 2-byte elements (fp16, bf16), one of 4 for 4-byte elements (fp32, i32); so
# a pointer moved by row * stride stays 16-byte aligned and cp.async / TMA keep it (a tutorial-03
# matmul at N = 4104). 2 is left out: only 8-byte elements (fp64, i64) would gain, and their tiles
# are rarely on the asynchronous path; each divisor is one more compile of a kernel.
SMALL_DIVISORS = (8, 4)
_SMALL_FLAGS = frozenset(str(d) for d in SMALL_DIVISORS)


def small_divisor(value: int) -> int:
    """The largest of `SMALL_DIVISORS` dividing `value`, an integer not a multiple of 16; else 1."""
    return 8 if value & 7 == 0 else 4 if value & 3 == 0 else 1


def key_text(kind: str, divisible_16: bool, equal_1: bool, divisible_by: int = 1) -> str:
    """A parameter's specialization as text, the one spelling of it: its kind, then `:16` where the
    launch saw a 16-byte aligned pointer or a multiple of 16, `:8` or `:4` where it saw an integer
    that is a multiple of 8 or 4 (not of 16), `:1` where it saw the integer 1."""
    small = f":{divisible_by}" if divisible_by > 1 and not divisible_16 else ""
    return kind + (":16" if divisible_16 else "") + small + (":1" if equal_1 else "")


def parse_type(text: str) -> dtype:
    """`*fp32` -> pointer to float32, `i32` -> int32, `u8`, `bf16`, `fp8e4nv`, `i1` ..."""
    text = text.strip()
    if text.startswith("*"):
        return pointer_type(parse_type(text[1:]))
    try:
        return dtype(text)
    except ValueError:
        raise CompilationError(
            f"unknown type {text!r} in the signature: use e.g. '*fp32', 'i32', 'fp16', 'u64', 'i1'"
        ) from None


def parse_arg(name: str, text: str) -> ArgSpec:
    """`"*fp32:16"` -> ArgSpec(name, "*fp32", divisible_16=True); `"i32:8"` -> divisible_by=8."""
    parts = str(text).split(":")
    type_text = parts[0].strip()
    ty = parse_type(type_text)
    flags = {p.strip() for p in parts[1:]}
    unknown = flags - {"16", "1"} - _SMALL_FLAGS
    if unknown:
        raise CompilationError(
            f"unknown specialization {':'.join(sorted(unknown))!r} for {name}; "
            "use ':16', ':8', ':4' or ':1'"
        )
    small = sorted((int(f) for f in flags & _SMALL_FLAGS), reverse=True)
    if small and not ty.is_int():
        raise CompilationError(
            f"specialization ':{small[0]}' for {name} needs an integer parameter, "
            f"not {type_text!r}: pointers and floats take ':16' only"
        )
    if len(small) + ("16" in flags) + ("1" in flags) > 1 and small:
        raise CompilationError(
            f"{name}: ':{small[0]}' goes with none of ':16', ':8', ':4', ':1' "
            f"(an integer's largest divisor among them) in {text!r}"
        )
    return ArgSpec(name, type_text, "16" in flags, "1" in flags, small[0] if small else 1)


def is_constexpr_annotation(annotation) -> bool:
    if annotation is core.constexpr:
        return True
    return isinstance(annotation, str) and annotation.replace(" ", "").endswith("constexpr")


def constexpr_names(fn: Callable) -> list[str]:
    params = inspect.signature(fn).parameters
    return [name for name, p in params.items() if is_constexpr_annotation(p.annotation)]
