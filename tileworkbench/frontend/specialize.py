"""Kernel signatures: parameter types written as strings ("*fp32", "i32", "fp16"), with the specializations
a launch detected (`:16` for 16-byte-aligned pointers or multiples of 16, `:1` for integers equal to 1)."""

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

    @property
    def key(self) -> str:
        """The specialization as text, "*fp32:16" (`key_text`)."""
        return key_text(self.type, self.divisible_16, self.equal_1)

    @classmethod
    def from_key(cls, name: str, text: str) -> ArgSpec:
        """The ArgSpec whose `key` is `text` ("*fp32:16"), unchecked: the launch made the text."""
        kind, *flags = text.split(":")
        return cls(name, kind, "16" in flags, "1" in flags)


def key_text(kind: str, divisible_16: bool, equal_1: bool) -> str:
    """A parameter's specialization as text, the one spelling of it: its kind, then `:16` where the
    launch saw a 16-byte aligned pointer or a multiple of 16, `:1` where it saw the integer 1."""
    return kind + (":16" if divisible_16 else "") + (":1" if equal_1 else "")


def parse_type(text: str) -> dtype:
    """`*fp32` -> pointer to float32, `i32` -> int32, `u8`, `bf16`, `fp8e4nv`, `i1` ..."""
    text = text.strip()
    if text.startswith("*"):
        return pointer_type(parse_type(text[1:]))
    try:
        return dtype(text)
    except ValueError:
        raise CompilationError(f"unknown type {text!r} in the signature: use e.g. '*fp32', 'i32', 'fp16', "
                               "'u64', 'i1'") from None


def parse_arg(name: str, text: str) -> ArgSpec:
    """`"*fp32:16"` -> ArgSpec(name, "*fp32", divisible_16=True)."""
    parts = str(text).split(":")
    type_text = parts[0].strip()
    parse_type(type_text)
    flags = {p.strip() for p in parts[1:]}
    unknown = flags - {"16", "1"}
    if unknown:
        raise CompilationError(f"unknown specialization {':'.join(unknown)!r} for {name}; use ':16' or ':1'")
    return ArgSpec(name, type_text, "16" in flags, "1" in flags)


def is_constexpr_annotation(annotation) -> bool:
    if annotation is core.constexpr:
        return True
    return isinstance(annotation, str) and annotation.replace(" ", "").endswith("constexpr")


def constexpr_names(fn: Callable) -> list[str]:
    params = inspect.signature(fn).parameters
    return [name for name, p in params.items() if is_constexpr_annotation(p.annotation)]
