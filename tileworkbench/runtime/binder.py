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
import threading
from typing import Callable

import numpy as np


class NotFast(Exception):
    """This call needs the full launch path."""


MISSING = object()  # a parameter the call did not give (the launcher's default for required ones)


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


def _argument_code(arg_names: list[str], constexprs: set[str], do_not_specialize: set[str],
                   no_align: set[str], scope: dict) -> tuple[list[str], list[str], list[str]]:
    """The per-argument lines shared by the binder and the launcher: each runtime argument `name` sets
    `_tw_k<i>` (its key part) and `_tw_v<i>` (the value to pack); a constexpr is its own key part.
    Returns (lines, key parts, values); `scope` gets the names the lines use."""
    torch = sys.modules.get("torch")
    scope.update({"_tw_SPECIALIZE": SPECIALIZE, "_tw_na": _no_alignment, "_tw_ns": _no_specialization,
                  "_tw_TORCH": TORCH_KINDS, "_tw_I32": _I32, "_tw_I32_16": _I32_16, "_tw_I32_ONE": _I32_ONE,
                  "_tw_Tensor": torch.Tensor if torch is not None else NotFast})
    lines, key, values = [], [], []
    for i, name in enumerate(arg_names):
        if name in constexprs:
            key += [name, f"{name}.__class__"]  # 1 and True are equal but specialize apart
            continue
        # the two commonest kinds inline (a call per argument is a good part of the warm path's cost)
        lines += [f"if {name}.__class__ is _tw_Tensor and {name}.is_cuda:",
                  f"    _tw_v{i} = {name}.data_ptr()",
                  f"    _tw_k{i} = _tw_TORCH[{name}.dtype][_tw_v{i} & 15 != 0]",
                  f"elif {name}.__class__ is int and -0x80000000 <= {name} <= 0x7FFFFFFF:",
                  f"    _tw_v{i} = {name}",
                  f"    _tw_k{i} = _tw_I32_ONE if {name} == 1 else _tw_I32_16 if {name} & 15 == 0 else _tw_I32",
                  "else:",
                  f"    _tw_k{i}, _tw_v{i} = _tw_SPECIALIZE[{name}.__class__]({name})"]
        if name in do_not_specialize:
            lines.append(f"_tw_k{i} = _tw_ns(_tw_k{i})")
        elif name in no_align:
            lines.append(f"_tw_k{i} = _tw_na(_tw_k{i})")
        key.append(f"_tw_k{i}")
        values.append(f"_tw_v{i}")
    return lines, key, values


def _tuple(items: list[str]) -> str:
    """Python source of a tuple of `items` (also for none or one)."""
    return "(" + "".join(f"{item}, " for item in items) + ")"


def _indent(lines: list[str], depth: int) -> list[str]:
    return [" " * (4 * depth) + line for line in lines]


def _parameters(arg_names: list[str], defaults: dict, scope: dict, missing: object = None) -> list[str]:
    """The kernel's own parameter list (keywords bind by name); defaults come from `scope`. With
    `missing`, a parameter without a default defaults to it, so the caller can report the omission."""
    params = []
    for i, name in enumerate(arg_names):
        if name in defaults:
            scope[f"_tw_d{i}"] = defaults[name]
            params.append(f"{name}=_tw_d{i}")
        elif missing is not None:
            params.append(f"{name}=_tw_MISSING")
        else:
            params.append(name)
    return params


def make_binder(arg_names: list[str], constexprs: set[str], defaults: dict, do_not_specialize: set[str],
                no_align: set[str]) -> tuple[Callable, list[str]]:
    """The generated binder and the names of the runtime parameters, in the order of its values.

    `binder(*args, **kwargs) -> (key, values)`; it raises (TypeError, KeyError, NotFast) where the full
    path must decide.
    """
    from .jit import BACKEND_OPTIONS

    scope = {"_tw_OPTIONS": BACKEND_OPTIONS}
    lines, key, values = _argument_code(arg_names, constexprs, do_not_specialize, no_align, scope)
    source = "\n".join([
        f"def bind({', '.join(_parameters(arg_names, defaults, scope) + ['**_tw_extra'])}):",
        "    if _tw_extra and not _tw_extra.keys() <= _tw_OPTIONS:",
        "        raise TypeError('unknown keyword')",
        *_indent(lines, 1),
        f"    return {_tuple(key)}, {_tuple(values)}",
    ])
    exec(compile(source, "<tileworkbench binder>", "exec"), scope)
    return scope["bind"], [n for n in arg_names if n not in constexprs]


def make_launcher(kernel_name: str, arg_names: list[str], constexprs: set[str], defaults: dict,
                  do_not_specialize: set[str], no_align: set[str], table: dict, slow: Callable,
                  grid3: Callable, config, record) -> Callable:
    """The warm launch as one generated function, `launcher(grid, *args, **kwargs)`, which
    `kernel[grid]` binds to its grid. It does the binder's work, looks the key up in `table` (filled
    by the JIT with `_FastLaunch` entries), checks the grid, packs the values into the entry's own
    parameter block and calls the driver, with no Python call in between: each call layer cost
    0.1-0.3 us of a 5-7 us launch.

    A kernel with global scratch (an entry whose `scratch` is set, and then `pick` too) asks the
    allocator for each launch's buffer and packs its address last.

    Anything else goes to `slow(grid, named, extra, more)`: `named` the arguments by parameter name
    (an omitted one is MISSING), `extra` the other keywords (Triton backend options, which are
    ignored, stay on the warm path), `more` surplus positional arguments. So do calls while
    `config.interpret`, `config.debug`, `config.override_arch` or `record.ACTIVE` is set (or
    `config.default_fp_fusion` is off: warm entries are keyed by the options given, not defaults),
    and calls from a thread other than the entry's `owner` (only the owner writes the entry's
    parameter block, so no lock is needed).
    """
    from .jit import BACKEND_OPTIONS

    scope = {"_tw_OPTIONS": BACKEND_OPTIONS, "_tw_table": table, "_tw_slow": slow, "_tw_grid3": grid3,
             "_tw_config": config, "_tw_record": record, "_tw_MISSING": MISSING, "_tw_dict_get": dict.get,
             "_tw_get_ident": threading.get_ident}
    lines, key, values = _argument_code(arg_names, constexprs, do_not_specialize, no_align, scope)
    params = _parameters(arg_names, defaults, scope, missing=MISSING)
    named = "{" + ", ".join(f"{n!r}: {n}" for n in arg_names) + "}"
    required = [n for n in arg_names if n not in defaults]
    omitted = " or ".join(f"{n} is _tw_MISSING" for n in required) or "False"
    slow_call = f"return _tw_slow(_tw_grid, {named}, _tw_extra, _tw_more)"
    source = "\n".join([
        f"def {kernel_name}({', '.join(['_tw_grid', *params, '*_tw_more', '**_tw_extra'])}):",
        f"    if ((_tw_extra and not _tw_extra.keys() <= _tw_OPTIONS) or _tw_more or {omitted}",
        "            or _tw_config.interpret or _tw_config.debug or _tw_record.ACTIVE",
        "            or _tw_config.override_arch or not _tw_config.default_fp_fusion):",
        f"        {slow_call}",
        "    try:",
        *_indent(lines, 2),
        f"        _tw_e = _tw_table[{_tuple(key)}]",
        "    except Exception:",
        f"        {slow_call}",
        "    for _tw_scope, _tw_name, _tw_value in _tw_e.globals:  # a global the kernel read has changed",
        "        if _tw_dict_get(_tw_scope, _tw_name, _tw_MISSING) is not _tw_value:",
        f"            {slow_call}",
        "    if _tw_grid.__class__ is tuple and len(_tw_grid) == 1:",
        "        _tw_gx = _tw_grid[0]",
        "        _tw_gy = _tw_gz = 1",
        "    else:",
        f"        _tw_gx, _tw_gy, _tw_gz = _tw_grid3(_tw_grid, {named})",
        "    if not (0 < _tw_gx <= _tw_e.max_x and 0 < _tw_gy <= _tw_e.max_y and 0 < _tw_gz <= _tw_e.max_z):",
        f"        {slow_call}  # it launches nothing for an empty grid, or explains",
        "    if _tw_get_ident() != _tw_e.owner:",
        f"        {slow_call}  # another thread: the parameter block is the owner's",
        "    try:  # a float grid or an out-of-range scalar raises here, before the launch",
        "        if _tw_e.pick is None:",
        f"            _tw_e.pack(_tw_e.buffer, 0, {''.join(v + ', ' for v in values)})",
        "        elif _tw_e.scratch is None:",
        f"            _tw_e.pack(_tw_e.buffer, 0, *_tw_e.pick({_tuple(values)}))",
        "        else:  # global scratch from the allocator, the hidden last parameter",
        f"            _tw_e.pack(_tw_e.buffer, 0, *_tw_e.pick({_tuple(values)}),",
        "                       _tw_e.scratch(_tw_gx, _tw_gy, _tw_gz, _tw_e.stream()))",
        "        _tw_e.launch(_tw_e.function, _tw_gx, _tw_gy, _tw_gz, _tw_e.threads, 1, 1, _tw_e.shared,",
        "                     _tw_e.stream(), _tw_e.params, 0)",
        "        return _tw_e.compiled",
        "    except Exception:",
        "        pass",
        f"    {slow_call}  # the full path explains, or retries through CuPy",
    ])
    exec(compile(source, f"<tileworkbench launcher of {kernel_name}>", "exec"), scope)
    return scope[kernel_name]

