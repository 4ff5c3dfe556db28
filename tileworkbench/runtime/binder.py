"""The warm launch's binder: one Python function per kernel, generated from its parameter list, that
turns a call's arguments into (specialization key, runtime values) in a single pass.

CPython binds positional, keyword and default arguments natively when the generated function has the
kernel's own signature, so the warm path does no dict building and no per-call introspection. Each
runtime argument goes through `SPECIALIZE[type(value)]`, which returns its part of the key (kind,
multiple of 16, equal to 1) and the value to pack (an array's device address, a scalar itself).
Anything unusual (a type not in the table, a host tensor, an unhashable constexpr, an unknown
keyword) raises, and the caller takes the full path, which gives the proper error or compiles.
"""

from __future__ import annotations

import sys
from typing import Callable

import numpy as np


class NotFast(Exception):
    """This call needs the full launch path."""


def _kinds(dtype, framework: str) -> tuple[tuple, tuple]:
    """(key when the address is 16-byte aligned, key otherwise) for arrays of `dtype`; the framework is
    part of the key because torch tensors launch on torch's stream."""
    from .jit import dtype_name

    kind = "*" + dtype_name(dtype)
    return sys.intern(f"{kind}:16@{framework}"), sys.intern(f"{kind}@{framework}")


class _ArrayKinds(dict):
    def __init__(self, framework: str):
        super().__init__()
        self.framework = framework

    def __missing__(self, dtype):
        value = self[dtype] = _kinds(dtype, self.framework)
        return value


TORCH_KINDS, CUPY_KINDS = _ArrayKinds("torch"), _ArrayKinds("cupy")
# Key parts are interned strings, "kind[:16|:1][@framework]": a string caches its hash, so the warm
# path's dict lookup hashes a flat tuple cheaply (nested tuples were rehashed at every launch).
_I32, _I32_16, _I32_ONE, _I1, _FP32 = "i32", "i32:16", "i32:1", "i1", "fp32"


def _part(spec: tuple) -> str:
    """The key part of an `arg_spec_key` tuple (kind, multiple of 16, equal to 1)."""
    return sys.intern(spec[0] + (":16" if spec[1] else "") + (":1" if spec[2] else ""))


def _int(value):
    if -0x80000000 <= value <= 0x7FFFFFFF:
        return (_I32_ONE if value == 1 else _I32_16 if value & 15 == 0 else _I32), value
    from .jit import arg_spec_key

    return _part(arg_spec_key(value)), value


def _bool(value):
    return _I1, value


def _float(value):
    return _FP32, value


def _numpy_scalar(value):
    from .jit import arg_spec_key

    return _part(arg_spec_key(value)), value


def _torch(value):
    if not value.is_cuda:
        raise NotFast  # the full path says "move it to the GPU" (or runs it in the interpreter)
    address = value.data_ptr()
    return TORCH_KINDS[value.dtype][address & 15 != 0], address


def _cupy(value):
    address = value.data.ptr
    return CUPY_KINDS[value.dtype][address & 15 != 0], address


def _none(value):
    return "None", None


class _Table(dict):
    """type -> specializer; a subclass (torch's Parameter, an IntEnum) uses its nearest listed base."""

    def __missing__(self, cls):
        for base in cls.__mro__[1:]:
            if dict.__contains__(self, base):
                value = self[cls] = dict.__getitem__(self, base)
                return value
        raise KeyError(cls)


SPECIALIZE: dict[type, Callable] = _Table({int: _int, bool: _bool, float: _float, type(None): _none})
for _t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
           np.float16, np.float32, np.float64):
    SPECIALIZE[_t] = _numpy_scalar


def register_array_types() -> None:
    """Add torch's and CuPy's array types once they are imported (the binder never imports them)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        SPECIALIZE.setdefault(torch.Tensor, _torch)
    cupy = sys.modules.get("cupy")
    if cupy is not None and hasattr(cupy, "ndarray"):
        SPECIALIZE.setdefault(cupy.ndarray, _cupy)


def _no_alignment(part: str) -> str:
    return part.replace(":16", "")


def _no_specialization(part: str) -> str:
    return part.replace(":16", "").replace(":1", "")


def make_binder(arg_names: list[str], constexprs: set[str], defaults: dict, do_not_specialize: set[str],
                no_align: set[str]) -> tuple[Callable, list[str]]:
    """The generated binder and the names of the runtime parameters, in the order of its values.

    `binder(*args, **kwargs) -> (key, values)`; it raises (TypeError, KeyError, NotFast) where the full
    path must decide.
    """
    from .jit import BACKEND_OPTIONS

    runtime = [n for n in arg_names if n not in constexprs]
    params, lines, key, values = [], [], [], []
    # the kernel's own parameter names (keywords bind by name); the binder's names start with _tw_
    torch = sys.modules.get("torch")
    scope = {"_tw_SPECIALIZE": SPECIALIZE, "_tw_OPTIONS": BACKEND_OPTIONS, "_tw_na": _no_alignment,
             "_tw_ns": _no_specialization, "_tw_TORCH": TORCH_KINDS, "_tw_I32": _I32, "_tw_I32_16": _I32_16,
             "_tw_I32_ONE": _I32_ONE, "_tw_Tensor": torch.Tensor if torch is not None else NotFast}
    for i, name in enumerate(arg_names):
        if name in defaults:
            scope[f"_tw_d{i}"] = defaults[name]
            params.append(f"{name}=_tw_d{i}")
        else:
            params.append(name)
        if name in constexprs:
            key += [name, f"{name}.__class__"]  # 1 and True are equal but specialize apart
            continue
        # the two commonest kinds inline (a call per argument is a good part of the warm path's cost)
        lines += [f"    if {name}.__class__ is _tw_Tensor and {name}.is_cuda:",
                  f"        _tw_v{i} = {name}.data_ptr()",
                  f"        _tw_k{i} = _tw_TORCH[{name}.dtype][_tw_v{i} & 15 != 0]",
                  f"    elif {name}.__class__ is int and -0x80000000 <= {name} <= 0x7FFFFFFF:",
                  f"        _tw_v{i} = {name}",
                  f"        _tw_k{i} = _tw_I32_ONE if {name} == 1 else _tw_I32_16 if {name} & 15 == 0 else _tw_I32",
                  "    else:",
                  f"        _tw_k{i}, _tw_v{i} = _tw_SPECIALIZE[{name}.__class__]({name})"]
        if name in do_not_specialize:
            lines.append(f"    _tw_k{i} = _tw_ns(_tw_k{i})")
        elif name in no_align:
            lines.append(f"    _tw_k{i} = _tw_na(_tw_k{i})")
        key.append(f"_tw_k{i}")
        values.append(f"_tw_v{i}")
    source = "\n".join([
        f"def bind({', '.join(params + ['**_tw_extra'])}):",
        "    if _tw_extra and not _tw_extra.keys() <= _tw_OPTIONS:",
        "        raise TypeError('unknown keyword')",
        *lines,
        f"    return ({', '.join(key)},), ({', '.join(values)},)",
    ])
    exec(compile(source, "<tileworkbench binder>", "exec"), scope)
    return scope["bind"], runtime
