"""Bound kernels and the warm launch: a compiled kernel with what its launches need (`BoundKernel`),
its warm-path entry (`FastLaunch`), and the generated binder and launcher of a kernel, one Python
function each, generated from its parameter list, that turn a call's arguments into (specialization
key, runtime values) in a single pass.

CPython binds positional, keyword and default arguments natively when the generated function has the
kernel's own signature, so the warm path does no dict building and no per-call introspection. Each
runtime argument goes through runtime/specialize.py's `SPECIALIZE[type(value)]` (the table the full
path's key is made with too), which returns its part of the key and the value to pack (an array's
device address, a scalar itself); torch tensors and 32-bit ints take that table's functions written
out inline. Generated code is the one exception to "no generated code" in the package: a call layer
cost 0.1-0.3 us of a 1-7 us launch. Anything unusual (a type not in the table yet, an unhashable
constexpr, an unknown keyword) raises one of `specialize.KEY_MISSES`, and the caller takes the full
path, which gives the proper error or compiles.
"""

from __future__ import annotations

import functools
import operator
import sys
import threading
from typing import Callable

from ..backends import backend_for
from ..frontend import ArgSpec
from ..frontend.descriptor_args import (
    expand_arg,
    flatten_descriptor,
    has_tensor_map,
    parse_descriptor_type,
)
from ..target import TMAFallback
from . import specialize as spec
from .tensor_map import tensor_map

MISSING = object()  # a parameter the call did not give (the launcher's default for required ones)


class _NoTorch:
    """The generated code's `torch.Tensor` while torch is not imported: no argument is one."""


def _argument_code(
    arg_names: list[str],
    constexprs: set[str],
    do_not_specialize: set[str],
    no_align: set[str],
    scope: dict,
) -> tuple[list[str], list[str], list[str]]:
    """The per-argument lines shared by the binder and the launcher: each runtime argument `name`
    sets `_tw_k<i>` (its key part) and `_tw_v<i>` (the value to pack); a constexpr is its own key
    part. Returns (lines, key parts, values); `scope` gets the names the lines use."""
    torch = sys.modules.get("torch")
    scope.update(
        {
            "_tw_SPECIALIZE": spec.SPECIALIZE,
            "_tw_na": spec.without_alignment,
            "_tw_ns": spec.without_specialization,
            "_tw_TORCH": spec.TORCH_KINDS,
            "_tw_I32": spec.I32,
            "_tw_I32_16": spec.I32_16,
            "_tw_I32_ONE": spec.I32_ONE,
            "_tw_I32_8": spec.I32_8,
            "_tw_I32_4": spec.I32_4,
            "_tw_Tensor": torch.Tensor if torch is not None else _NoTorch,
        }
    )
    lines, key, values = [], [], []
    for i, name in enumerate(arg_names):
        if name in constexprs:
            key += [name, f"{name}.__class__"]  # 1 and True are equal but specialize apart
            continue
        # the two commonest kinds inline, as spec._torch and spec._int (on the GPU, in 32 bits) give
        # them: a call per argument is a good part of the warm path's cost
        lines += [
            f"if {name}.__class__ is _tw_Tensor and {name}.is_cuda:",
            f"    _tw_v{i} = {name}.data_ptr()",
            f"    _tw_k{i} = _tw_TORCH[{name}.dtype][_tw_v{i} & 15 != 0]",
            f"elif {name}.__class__ is int and -0x80000000 <= {name} <= 0x7FFFFFFF:",
            f"    _tw_v{i} = {name}",
            (
                f"    _tw_k{i} = _tw_I32_ONE if {name} == 1 else _tw_I32_16 if {name} & 15 == 0 "
                f"else _tw_I32_8 if {name} & 7 == 0 else _tw_I32_4 if {name} & 3 == 0 else _tw_I32"
            ),
            "else:",
            f"    _tw_k{i}, _tw_v{i} = _tw_SPECIALIZE[{name}.__class__]({name})",
        ]
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


def _parameters(
    arg_names: list[str], defaults: dict, scope: dict, missing: object = None
) -> list[str]:
    """The kernel's own parameter list (keywords bind by name); defaults come from `scope`. With
    `missing`, a parameter without a default defaults to it, so the caller can report the
    omission."""
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


def make_binder(
    arg_names: list[str],
    constexprs: set[str],
    defaults: dict,
    do_not_specialize: set[str],
    no_align: set[str],
) -> tuple[Callable, list[str]]:
    """The generated binder and the names of the runtime parameters, in the order of its values.

    `binder(*args, **kwargs) -> (key, values)`; it raises one of `spec.KEY_MISSES` where the full
    path must decide (an unknown keyword is a TypeError, as CPython's binding gives).
    """
    scope = {"_tw_OPTIONS": spec.BACKEND_OPTIONS}
    lines, key, values = _argument_code(arg_names, constexprs, do_not_specialize, no_align, scope)
    source = "\n".join(
        [
            f"def bind({', '.join(_parameters(arg_names, defaults, scope) + ['**_tw_extra'])}):",
            "    if _tw_extra and not _tw_extra.keys() <= _tw_OPTIONS:",
            "        raise TypeError('unknown keyword')",
            *_indent(lines, 1),
            f"    return {_tuple(key)}, {_tuple(values)}",
        ]
    )
    exec(compile(source, "<tileworkbench binder>", "exec"), scope)
    return scope["bind"], [n for n in arg_names if n not in constexprs]


def make_launcher(
    kernel_name: str,
    arg_names: list[str],
    constexprs: set[str],
    defaults: dict,
    do_not_specialize: set[str],
    no_align: set[str],
    table: dict,
    slow: Callable,
    config,
    record,
) -> Callable:
    """The warm launch as one generated function, `launcher(grid, *args, **kwargs)`, which
    `kernel[grid]` binds to its grid. It does the binder's work, looks the key up in `table` (filled
    by the JIT with `FastLaunch` entries), checks the globals it read and the grid, packs the values
    into the entry's own parameter block and calls the driver, with no Python call in between: each
    call layer cost 0.1-0.3 us of a 5-7 us launch.

    A kernel with global scratch (an entry whose `scratch` is set, and then `pick` too) asks the
    allocator for each launch's buffer and packs its address last.

    Anything else goes to `slow(grid, named, extra, more)`: `named` the arguments by parameter name
    (an omitted one is MISSING), `extra` the other keywords (Triton backend options, which are
    ignored, stay on the warm path), `more` surplus positional arguments. So do calls while
    `config.interpret`, `config.debug`, `config.override_arch` or `record.ACTIVE` is set (or
    `config.default_fp_fusion` is off: warm entries are keyed by the options given, not defaults),
    calls from a thread other than the entry's `owner` (only the owner writes the entry's parameter
    block, so no lock is needed), and calls whose key or launch raises what `spec.KEY_MISSES` and
    `spec.LAUNCH_REFUSALS` name; any other exception is a bug, and propagates.
    """
    scope = {
        "_tw_OPTIONS": spec.BACKEND_OPTIONS,
        "_tw_table": table,
        "_tw_slow": slow,
        "_tw_grid3": spec.normalize_grid,
        "_tw_unchanged": spec.globals_unchanged,
        "_tw_KEY_MISSES": spec.KEY_MISSES,
        "_tw_LAUNCH_REFUSALS": spec.LAUNCH_REFUSALS,
        "_tw_config": config,
        "_tw_record": record,
        "_tw_MISSING": MISSING,
        "_tw_get_ident": threading.get_ident,
    }
    lines, key, values = _argument_code(arg_names, constexprs, do_not_specialize, no_align, scope)
    params = _parameters(arg_names, defaults, scope, missing=MISSING)
    named = "{" + ", ".join(f"{n!r}: {n}" for n in arg_names) + "}"
    required = [n for n in arg_names if n not in defaults]
    omitted = " or ".join(f"{n} is _tw_MISSING" for n in required) or "False"
    slow_call = f"return _tw_slow(_tw_grid, {named}, _tw_extra, _tw_more)"
    source = "\n".join(
        [
            f"def {kernel_name}({', '.join(['_tw_grid', *params, '*_tw_more', '**_tw_extra'])}):",
            f"    if ((_tw_extra and not _tw_extra.keys() <= _tw_OPTIONS) or _tw_more or {omitted}",
            "            or _tw_config.interpret or _tw_config.debug or _tw_record.ACTIVE",
            "            or _tw_config.override_arch or not _tw_config.default_fp_fusion):",
            f"        {slow_call}",
            "    try:",
            *_indent(lines, 2),
            f"        _tw_e = _tw_table[{_tuple(key)}]",
            "    except _tw_KEY_MISSES:",
            f"        {slow_call}",
            "    if _tw_e.globals and not _tw_unchanged(_tw_e.globals):  # a changed global",
            f"        {slow_call}",
            "    if _tw_grid.__class__ is tuple and len(_tw_grid) == 1:",
            "        _tw_gx = _tw_grid[0]",
            "        _tw_gy = _tw_gz = 1",
            "    else:",
            f"        _tw_gx, _tw_gy, _tw_gz = _tw_grid3(_tw_grid, {named})",
            (
                "    if not (0 < _tw_gx <= _tw_e.max_x and 0 < _tw_gy <= _tw_e.max_y"
                " and 0 < _tw_gz <= _tw_e.max_z):"
            ),
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
            (
                "        _tw_e.launch(_tw_e.function, _tw_gx, _tw_gy, _tw_gz, _tw_e.threads, 1, 1,"
                " _tw_e.shared,"
            ),
            "                     _tw_e.stream(), _tw_e.params, 0)",
            "        return _tw_e.compiled",
            "    except _tw_LAUNCH_REFUSALS:",
            "        pass",
            f"    {slow_call}  # the full path explains, or retries through CuPy",
        ]
    )
    exec(compile(source, f"<tileworkbench launcher of {kernel_name}>", "exec"), scope)
    return scope[kernel_name]


# -- bound kernels ---------------------------------------------------------------------------------
def launch_parameters(specs: list[ArgSpec], md) -> tuple[dict[str, str], list[ArgSpec]]:
    """The host descriptors a launch of the kernel compiled as `md` passes a tensor map for (name ->
    element type), and every runtime parameter in order. A descriptor takes one where the target has
    TMA, the launch met TMA's rules, and the compiler did not keep it on pointers for shared memory
    (`md.tma_fallback`, runtime/compiler.py)."""
    tma = backend_for(md.target).has_tma(md.target)
    fallback = TMAFallback.from_dict(md.tma_fallback)
    descriptors = [s for s in specs if parse_descriptor_type(s.type) is not None]
    tensor_maps = {
        s.name: parse_descriptor_type(s.type)[0]
        for s in descriptors
        if has_tensor_map(s, tma, fallback)
    }
    return tensor_maps, [part for s in specs for part in expand_arg(s, tma, fallback)]


class BoundKernel:
    """A compiled kernel plus what it needs to launch: the runtime parameter names and the loaded
    module."""

    def __init__(self, compiled, specs: list[ArgSpec], used_globals, load: bool = True):
        self.compiled = compiled
        self.names = [s.name for s in specs]
        # host tensor descriptors are several runtime parameters each (frontend/descriptor_args.py)
        self.descriptors = {s.name for s in specs if parse_descriptor_type(s.type) is not None}
        # ... and one more, its CUtensorMap, where the kernel copies its tiles with TMA
        self.tensor_maps, flat = launch_parameters(specs, compiled.launch_metadata)
        self.flat_names = [s.name for s in flat]
        self.used_globals = used_globals
        md = compiled.launch_metadata
        kinds, names = [s.type for s in flat], list(self.flat_names)
        # in-kernel tensor maps: each launch's global scratch, a hidden parameter after the kernel's
        # own
        self.scratch_bytes = getattr(md, "global_scratch", 0)
        self.scratch = None  # the last launch's buffer, held until the next launch
        if self.scratch_bytes:
            kinds, names = kinds + ["u64"], names + ["global_scratch"]
        self.checks = None  # debug mode on the GPU: hidden arguments and the error buffer
        if getattr(md, "debug_checks", None):
            from .debug_checks import DebugChecks

            self.checks = DebugChecks(md.debug_checks, md.name, self.flat_names)
            kinds, names = kinds + self.checks.hidden_kinds(), names + self.checks.hidden_names()
        # the backend's launcher (a CudaKernel on the GPU); the warm path takes those it can. Not
        # loaded (None) for a `warmup`: the first launch loads it
        self._load = functools.partial(backend_for(md.target).load, compiled, kinds, names)
        self.cuda = self._load() if load else None

    def globals_unchanged(self) -> bool:
        return spec.globals_unchanged(self.used_globals)

    def _flatten(self, name: str, value) -> list:
        kind = self.tensor_maps.get(name)
        if kind is None:
            return flatten_descriptor(value, name=name)
        return flatten_descriptor(
            value, lambda v: tensor_map(v, kind, name, self.compiled.name), name
        )

    def _scratch_address(self, grid, args: list, stream) -> int:
        """This launch's global scratch from the allocator (runtime/allocation.py): its address."""
        from ..cuda.launcher import _stream_address, torch_stream

        if stream is None:
            stream = torch_stream(args)
        if stream is None and hasattr(self.cuda, "current_stream_address"):
            stream = self.cuda.current_stream_address()
        handle = stream if stream is None or isinstance(stream, int) else _stream_address(stream)
        return self.scratch_for(*grid, handle)

    def scratch_for(self, gx: int, gy: int, gz: int, stream: int | None) -> int:
        """The address of a launch's global scratch for a grid of gx x gy x gz programs on stream
        handle `stream`, from the allocator; the buffer is held until the next launch (the warm
        path calls this too)."""
        from .allocation import launch_scratch

        md = self.compiled.launch_metadata
        self.scratch, address = launch_scratch(
            md.name, self.scratch_bytes, md.global_scratch_align, (gx, gy, gz), stream
        )
        return address

    def launch(self, grid: tuple[int, int, int], bound: dict, stream=None) -> None:
        if self.cuda is None:
            self.cuda = self._load()
        args = [bound[name] for name in self.names]
        if self.descriptors:
            args = [
                part
                for name in self.names
                for part in (
                    self._flatten(name, bound[name]) if name in self.descriptors else [bound[name]]
                )
            ]
        if self.scratch_bytes and min(grid) > 0:  # an empty grid launches nothing, a bad one raises
            args = [*args, self._scratch_address(grid, args, stream)]
        if self.checks is not None:
            self.checks.launch(
                self.cuda, grid, args, stream
            )  # synchronizes; raises what it recorded
        else:
            self.cuda.launch(grid, args, stream)


class FastLaunch:
    """What the warm paths need of one bound kernel: its CUDA kernel, which of the binder's values
    (one per runtime parameter) are this specialization's parameters (a None argument is not one),
    and the launch's parts as plain attributes for the generated launcher (`make_launcher`).

    The launcher fills a parameter block of its own, and only in the thread that filed the entry
    (`owner`): with no other writer, it needs no lock (a lock cost 0.16 us of a 1.1 us launch path).
    Other threads take `launch_values`, which locks the kernel's shared block."""

    __slots__ = (
        "compiled",
        "cuda",
        "pick",
        "globals",
        "stream",
        "launch",
        "function",
        "threads",
        "shared",
        "max_x",
        "max_y",
        "max_z",
        "pack",
        "block",
        "buffer",
        "params",
        "owner",
        "scratch",
    )

    def __init__(
        self, kernel: BoundKernel, positions: list[int], runtime_count: int, torch_stream=None
    ):
        self.compiled = kernel.compiled
        self.cuda = kernel.cuda
        self.globals = tuple(
            kernel.used_globals
        )  # (scope, name, value) the kernel read at compile time
        if positions == list(range(runtime_count)):
            self.pick = None  # every runtime argument is a parameter, in order
        elif len(positions) == 1:
            index = positions[0]
            self.pick = lambda values: (values[index],)
        else:
            self.pick = operator.itemgetter(*positions) if positions else (lambda values: ())
        # a kernel with global scratch (in-kernel tensor maps): `scratch(gx, gy, gz, stream handle)`
        # gives each launch's buffer address, the hidden last parameter. The launcher appends it
        # where `pick` is set, so such a kernel always has one: the plain case stays branch-free
        self.scratch = kernel.scratch_for if kernel.scratch_bytes else None
        if self.scratch is not None and self.pick is None:
            self.pick = _same_values
        # the stream launches go to: torch's current one where the arguments are torch tensors,
        # else CuPy's
        self.stream = torch_stream or kernel.cuda.current_stream_address
        self.launch, self.function, self.threads, self.shared, max_grid, params = (
            kernel.cuda.launch_parts()
        )
        self.max_x, self.max_y, self.max_z = max_grid
        self.pack = params.pack_into
        self.block = params.new_block()
        self.buffer, self.params = self.block.buffer, self.block.params_address
        self.owner = threading.get_ident()


def _same_values(values: tuple) -> tuple:
    return values


def warm_stream(args: tuple, kwargs: dict) -> Callable | None:
    """torch's current-stream getter where a torch tensor is among the arguments, else None (CuPy's
    stream). The key tells torch tensors (`@torch`) from other arrays, so this holds for the key."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            from ..cuda.launcher import torch_stream_getter

            return torch_stream_getter(value.device.index)
    return None
