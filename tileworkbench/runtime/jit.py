"""`@jit` kernels: `kernel[grid](*args)` binds arguments, specializes on their kinds, compiles once per
specialization (through the cache), and launches on the GPU (CuPy) or in the interpreter.

The warm path does no hashing of source and no compilation: it builds a small tuple key from the arguments,
finds the bound kernel in a dict, checks that the globals it read are unchanged, and launches.
"""

from __future__ import annotations

import functools
import inspect
import operator
import sys
import threading
from typing import Any, Callable

import numpy as np

from ..config import config
from ..dtypes import BY_ARRAY_NAME
from ..dtypes import TABLE as DTYPES
from ..errors import (
    ArgumentBindingError, ArgumentOverflowError, CompilationError, LaunchError, OptionError,
)
from ..frontend import ArgSpec, constexpr_names
from ..frontend.descriptor_args import (
    TMAFallback, descriptor_type, expand_arg, flatten_descriptor, has_tensor_map, is_host_descriptor,
    parse_descriptor_type,
)
from ..backends import DEFAULT_OPTIONS, TargetOptions, backend_for
from . import binder as binder_module
from . import record as record_module
from .arguments import argument_error
from .compiler import CompiledKernel, compile
from .tensor_map import descriptor_fits, tensor_map
from .tensor_wrapper import TensorWrapper, reinterpret  # noqa: F401  (Triton's triton.runtime.jit names)

# NumPy / torch / CuPy dtype names -> Triton's.
# array dtype names (NumPy, ml_dtypes, torch, CuPy) and tl dtypes' own names (a TensorWrapper's dtype)
_DTYPE_NAMES = {**{name: row.kind for name, row in BY_ARRAY_NAME.items()},
                **{row.triton: row.kind for row in DTYPES}, "fp8e4b15": "fp8e4b15"}


_NAME_CACHE: dict = {}


# Options Triton's CUDA/HIP backends take as launch keywords; accepted and ignored here (one CTA per
# program, no AMD matrix-instruction choice), so Triton code passes them unchanged. (`maxnreg`,
# `enable_reflect_ftz` and `arch` are compile options here: `run`'s keywords.)
BACKEND_OPTIONS = frozenset({
    "num_ctas", "matrix_instr_nonkdim", "waves_per_eu", "kpack", "allow_flush_denorm",
    "launch_cooperative_grid", "launch_pdl", "sanitize_overflow",
})


def dtype_name(dtype) -> str:
    """The Triton name of a NumPy, CuPy, ml_dtypes or torch dtype ("float32" -> "fp32")."""
    try:
        return _NAME_CACHE[dtype]
    except (KeyError, TypeError):
        pass
    name = str(dtype).removeprefix("torch.")
    if name not in _DTYPE_NAMES:
        raise LaunchError(f"arrays of dtype {dtype} cannot be passed to a kernel")
    try:
        _NAME_CACHE[dtype] = _DTYPE_NAMES[name]
    except TypeError:
        pass
    return _DTYPE_NAMES[name]


def _cupy_pointer(value) -> tuple[str, int]:
    return dtype_name(value.dtype), value.data.ptr


def _torch_pointer(value) -> tuple[str, int]:
    return dtype_name(value.dtype), value.data_ptr()


def _numpy_pointer(value) -> tuple[str, int]:
    return dtype_name(value.dtype), value.ctypes.data


def _interface_pointer(value) -> tuple[str, int]:
    interface = getattr(value, "__cuda_array_interface__", None) or value.__array_interface__
    return dtype_name(np.dtype(interface["typestr"])), interface["data"][0]


_POINTER_OF: dict[type, object] = {np.ndarray: _numpy_pointer}


def _pointer_reader(kind: type):
    """How to read (dtype, address) from arrays of this type, found once per type."""
    module = kind.__module__.split(".")[0]
    if module == "cupy":
        return _cupy_pointer
    if module == "torch" or getattr(kind, "__tile_tensor_wrapper__", False):
        return _torch_pointer
    if hasattr(kind, "__cuda_array_interface__") or hasattr(kind, "__array_interface__"):
        return _interface_pointer
    return None


def _array_pointer(value) -> tuple[str, int] | None:
    """(dtype name, data address) of an array argument, or None if `value` is not an array."""
    kind = type(value)
    reader = _POINTER_OF.get(kind)
    if reader is None:
        reader = _POINTER_OF[kind] = _pointer_reader(kind)
    return reader(value) if reader is not None else None


_READERS: dict[type, object] = {}


def arg_spec_key(value) -> tuple:
    """What a launch specializes on for one runtime argument: (kind, multiple of 16, equal to 1)."""
    kind = type(value)
    reader = _READERS.get(kind)
    if reader is not None:  # an array type seen before: the warm path
        pointer_kind, address = reader(value)
        return (pointer_kind, address % 16 == 0, False)
    if kind is int:
        if -(2**31) <= value < 2**31:
            return ("i32", value % 16 == 0, value == 1)
        if not -(2**63) <= value < 2**64:
            raise ArgumentOverflowError(f"the integer {value} fits in no 64-bit kind (i64 or u64)")
        return ("u64" if value >= 2**63 else "i64", value % 16 == 0, value == 1)
    if kind is bool:
        return ("i1", False, False)
    if kind is float:
        return ("fp32", False, False)
    if isinstance(value, np.generic):
        return (dtype_name(value.dtype), False, False)
    if _array_pointer(value) is not None:
        _READERS[kind] = _pointer_kind_reader(_POINTER_OF[kind])
        return arg_spec_key(value)
    if isinstance(value, int):
        return arg_spec_key(int(value))
    if is_host_descriptor(value):
        return _descriptor_key(value)
    raise LaunchError(f"cannot pass a {kind.__name__} to a kernel: expected an array, a number or "
                      "a tl.constexpr parameter")


class _PointerKinds(dict):
    """dtype object -> "*fp32", filled on first sight of each dtype."""

    def __missing__(self, dtype) -> str:
        kind = self[dtype] = "*" + dtype_name(dtype)
        return kind


_POINTER_KINDS = _PointerKinds()


def _pointer_kind_reader(reader):
    """`reader` returning ("*fp32", address) instead of ("fp32", address), without string work per call."""
    if reader is _cupy_pointer:
        return lambda value: (_POINTER_KINDS[value.dtype], value.data.ptr)
    if reader is _torch_pointer:
        return lambda value: (_POINTER_KINDS[value.dtype], value.data_ptr())

    def generic(value):
        name, address = reader(value)
        return "*" + name, address

    return generic


def _descriptor_key(value) -> tuple:
    """A host TensorDescriptor specializes on its dtype, block shape and padding, and on whether TMA
    can take it (a 16-byte aligned base and strides, `tensor_map.descriptor_fits`)."""
    base = _array_pointer(value.base)
    if base is None:
        raise LaunchError(f"a TensorDescriptor's base must be an array, got {type(value.base).__name__}")
    padding = getattr(value, "padding", "zero")
    # host memory never goes to TMA (a NumPy base is staged to the GPU by tests' launchers)
    fits = not isinstance(value.base, np.ndarray) and descriptor_fits(base[0], base[1], value)
    return (descriptor_type(base[0], value.block_shape, padding), fits, False)


class JITFunction:
    """A kernel (or device function) decorated with `@tw.jit`; `.fn` is the Python function."""

    __tile_jit__ = True

    def __init__(self, fn: Callable, do_not_specialize=(), do_not_specialize_on_alignment=(),
                 debug: bool | None = None, noinline: bool | None = None, repr=None, launch_metadata=None):
        self.fn = fn
        functools.update_wrapper(self, fn)
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        self.constexpr_names = set(constexpr_names(fn))
        self.do_not_specialize = {self._param_name(p) for p in do_not_specialize}
        self.no_align = {self._param_name(p) for p in do_not_specialize_on_alignment}
        self.debug = debug
        self.repr = repr  # Triton's: specialization -> the compiled kernel's name
        self.defaults = {n: p.default for n, p in self.signature.parameters.items()
                         if p.default is not inspect.Parameter.empty}
        self.cache: dict[tuple, _BoundKernel] = {}
        # (name, plain): plain runtime parameters take the fast path of _key.
        special = self.constexpr_names | self.do_not_specialize | self.no_align
        self._param_modes = [(n, n not in special) for n in self.arg_names]
        # the warm path (binder.py): made at the first GPU launch; (key, options) -> _FastLaunch, where
        # options are the call's record.LAUNCH_OPTIONS as given (None: not given)
        self._binder = None
        self._runtime_names: list[str] = []
        self._fast: dict[tuple, _FastLaunch] = {}
        # the same for calls without launch options, keyed by the binder's key alone; the generated
        # launcher (binder.make_launcher) looks calls up here
        self._fast_plain: dict[tuple, _FastLaunch] = {}
        self._launcher = None
        self._last_bound = None  # the launcher bound to the last grid
        # launch options that are also parameters (tutorial 02's `num_stages: tl.constexpr`)
        self.option_params = [n for n in ("num_warps", "num_stages") if n in self.signature.parameters]

    def _param_name(self, p) -> str:
        return self.arg_names[p] if isinstance(p, int) else p

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.fn.__name__} is a @jit function: launch it as {self.fn.__name__}[grid](...), "
                           "or call it from another @jit kernel")

    def __getitem__(self, grid) -> Callable:
        launcher = self._launcher
        if launcher is not None:  # the generated warm launcher, bound to this grid
            last = self._last_bound  # a loop launches with the same grid: reuse the binding
            if last is not None and last.args[0] is grid:
                return last
            last = self._last_bound = functools.partial(launcher, grid)
            return last
        launch = self._launch
        return lambda *args, **kwargs: launch(grid, args, kwargs)

    def clear_cache(self) -> None:
        """Forget every compiled specialization held in memory: the next launch compiles again."""
        self.cache.clear()
        self._fast.clear()
        self._fast_plain.clear()

    def warmup(self, *args, grid, **kwargs) -> CompiledKernel:
        """Compile for these arguments without launching; returns the compiled kernel."""
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    # -- binding ---------------------------------------------------------------------------------------------
    def _bind(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        bound = dict(zip(self.arg_names, args))
        if kwargs:
            bound.update(kwargs)
        if (len(bound) == len(self.arg_names) and len(args) + len(kwargs) == len(bound)
                and kwargs.keys() <= self.signature.parameters.keys()):
            return bound  # the common case: every parameter given once, none unknown (a misspelt
            # keyword in place of a missing parameter has the right count, hence the key check)
        return self._bind_slow(args, kwargs)

    def _bind_slow(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        if len(args) > len(self.arg_names):
            raise ArgumentBindingError(
                f"{self.fn.__name__} takes {len(self.arg_names)} arguments, got {len(args)}")
        bound = dict(zip(self.arg_names, args))
        for name, value in kwargs.items():
            if name in BACKEND_OPTIONS and name not in self.signature.parameters:
                continue  # a Triton backend option with no meaning here (see BACKEND_OPTIONS)
            if name not in self.signature.parameters:
                raise ArgumentBindingError(f"{self.fn.__name__} has no parameter {name!r}")
            if name in bound:
                raise ArgumentBindingError(f"{self.fn.__name__} got two values for {name!r}")
            bound[name] = value
        for name in self.arg_names:
            if name not in bound:
                if name not in self.defaults:
                    raise ArgumentBindingError(f"{self.fn.__name__} is missing the argument {name!r}")
                bound[name] = self.defaults[name]
        return {name: bound[name] for name in self.arg_names}

    def _key(self, bound: dict[str, Any], target: str, num_warps: int, num_stages: int,
             fp_fusion: bool) -> tuple:
        parts = []
        append = parts.append
        try:
            for name, plain in self._param_modes:
                value = bound[name]
                if plain and value is not None:
                    append(arg_spec_key(value))
                elif value is None or name in self.constexpr_names:
                    append(("c", _hashable(value)))
                else:
                    kind, div16, one = arg_spec_key(value)
                    if name in self.do_not_specialize:
                        div16 = one = False
                    append((kind, div16 and name not in self.no_align, one))
        except LaunchError as error:
            raise argument_error(error, name, value, self.fn.__name__) from None
        return (tuple(parts), target, num_warps, num_stages, fp_fusion)

    # -- launch ------------------------------------------------------------------------------------------------
    def run(self, *args, grid, warmup: bool = False, num_warps: int | None = None,
            num_stages: int | None = None, enable_fp_fusion: bool | None = None, stream=None,
            debug: bool | None = None, maxnreg: int | None = None,
            enable_reflect_ftz: bool | None = None, arch: str | None = None, **kwargs):
        """Launch on `grid` (compiling first if this specialization is new); returns the compiled kernel.
        `enable_fp_fusion` (default True, as Triton's; `config.default_fp_fusion`) lets float
        `a * b + c` become one FMA. `debug` (default: the decorator's) compiles device asserts and,
        on the GPU, bounds checks in. Triton's CUDA options: `maxnreg` caps registers per thread,
        `enable_reflect_ftz` (default True) flushes subnormals in approximate math and libdevice,
        `arch` ("sm90", or `config.override_arch`) compiles for that architecture; targets without
        these notions (the interpreter, cpu) ignore them."""
        options = (num_warps, num_stages, enable_fp_fusion, maxnreg, enable_reflect_ftz, arch)
        debug = self._debug_mode(debug)
        if not warmup and not debug:
            done = self._warm(grid, args, kwargs, options, stream)
            if done is not None:
                return done
        return self._run(args, kwargs, grid, warmup, options, stream, debug)

    def _debug_mode(self, debug: bool | None) -> bool:
        """Triton's rule: the launch's `debug=`, else the decorator's; TILEWORKBENCH_DEBUG=1 in any case."""
        return bool(self.debug if debug is None else debug) or config.debug

    def _launch(self, grid, args: tuple, kwargs: dict):
        """`kernel[grid](*args, **kwargs)` where the generated launcher does not take the call: launch
        options in the keywords go through `run`; a call from another thread than the launcher's takes
        the locked warm path; anything else the full path."""
        if kwargs and not kwargs.keys().isdisjoint(_RUN_OPTIONS):
            return self.run(*args, grid=grid, **kwargs)
        debug = self._debug_mode(None)
        done = None if debug else self._warm(grid, args, kwargs, _NO_OPTIONS, None)
        if done is not None:
            return done
        return self._run(args, kwargs, grid, False, _NO_OPTIONS, None, debug)

    def _launch_unwarmed(self, grid, named: dict, extra: dict, more: tuple):
        """Where the generated launcher hands a call over: the arguments as the caller gave them,
        as far as they can be told apart (leading ones positional, the rest by name)."""
        values = list(named.values())
        if more:  # every parameter was given positionally, and more besides
            return self._launch(grid, (*values, *more), extra)
        given = next((i for i, v in enumerate(values) if v is binder_module.MISSING), len(values))
        kwargs = {n: v for n, v in list(named.items())[given:] if v is not binder_module.MISSING}
        kwargs.update(extra)
        return self._launch(grid, tuple(values[:given]), kwargs)

    def _warm(self, grid, args: tuple, kwargs: dict, options: tuple, stream):
        """The warm path of `run` (calls with launch options), or None where it does not apply: the
        generated binder makes the key and the values in one pass; an argument it cannot take, a key
        not seen yet or a changed global leaves it to the full path, which files the kernel for next
        time."""
        binder = self._binder
        if (binder is None or config.interpret or record_module.ACTIVE or config.override_arch
                or not config.default_fp_fusion):  # warm entries are keyed by the options given
            return None
        try:
            key, values = binder(*args, **kwargs)
            entry = self._fast[key, options]
        except Exception:
            return None
        for scope, name, value in entry.globals:
            if scope.get(name, _MISSING) is not value:
                return None
        if type(grid) is tuple and len(grid) == 1:
            grid3 = (grid[0], 1, 1)
        else:
            grid3 = _grid(grid, self._bind(args, kwargs) if callable(grid) else None)
        if stream is None:
            stream = entry.stream()
        if entry.pick is not None:
            values = entry.pick(values)
        if entry.scratch is not None:  # this launch's global scratch, from the allocator
            from .launcher import _stream_address

            try:
                if min(grid3) <= 0:
                    return None  # an empty grid launches nothing (the full path), or is an error
                values = (*values, entry.scratch(*grid3, _stream_address(stream)))
            except Exception:
                return None  # the full path explains (no allocator, a bad grid, ...)
        if entry.cuda.launch_values(grid3, values, stream):
            return entry.compiled
        return None

    def _record(self, kernel: _BoundKernel, grid3, bound: dict, stream) -> None:
        record_module.record(record_module.LaunchRecord(
            kernel=self, compiled=kernel.compiled, grid=grid3, args=dict(bound), target=kernel.compiled.target,
            relaunch=functools.partial(kernel.launch, grid3, dict(bound), stream)))

    def _run(self, args, kwargs, grid, warmup, options: tuple, stream, debug: bool = False):
        """The full launch path: bind and check the arguments, specialize, compile when new, launch."""
        if record_module.OVERRIDES:  # the workbench's --sweep imposes constexprs and launch options
            args, kwargs, options = record_module.apply_overrides(
                self.arg_names, self.constexpr_names, args, kwargs, options)
        num_warps, num_stages, fp_fusion, maxnreg, reflect_ftz, arch = options
        if self.option_params:  # a parameter named like a launch option gets its value too (Triton's rule)
            kwargs = self._option_arguments(args, kwargs, num_warps=num_warps, num_stages=num_stages)
        bound = self._bind(args, kwargs)
        target = self._target(arch)
        if kwargs.get("num_ctas", 1) != 1 and "num_ctas" not in self.signature.parameters:
            self._check(backend_for(target).check_num_ctas, target, kwargs["num_ctas"])
        num_warps = num_warps or 4
        num_stages = num_stages or 3
        fp_fusion = config.default_fp_fusion if fp_fusion is None else bool(fp_fusion)
        target_options = self._target_options(maxnreg, reflect_ftz)
        key = self._key(bound, target, num_warps, num_stages, fp_fusion) + target_options.key()
        if debug:
            key += ("debug",)
        kernel = self.cache.get(key)
        if kernel is None or not kernel.globals_unchanged():
            # a warmup compiles without loading, as Triton's: it needs no GPU, and a kernel for
            # another architecture (arch="sm80" on an H200) would not load
            kernel = self._compile(key, bound, target, num_warps, num_stages, fp_fusion, debug,
                                   target_options, load=not warmup)
            self.cache[key] = kernel
        if kernel.cuda is None and not warmup:
            kernel.cuda = kernel._load()
        if kernel.cuda is not None:
            self._file_fast(kernel, args, kwargs, options)
        if warmup:
            return kernel.compiled
        grid3 = _grid(grid, bound)
        if record_module.ACTIVE:  # before the launch, so a launch that fails is reported too
            self._record(kernel, grid3, bound, stream)
        kernel.launch(grid3, bound, stream)
        return kernel.compiled

    def _target(self, arch: str | None) -> str:
        """The launch's target: the default one, or the architecture `arch=` (else
        `config.override_arch`, Triton's TRITON_OVERRIDE_ARCH) names, as its backend reads it."""
        target = _default_target()
        arch = arch or config.override_arch
        if not arch:
            return target
        return self._check(backend_for(target).arch_target, arch)

    def _target_options(self, maxnreg, reflect_ftz) -> TargetOptions:
        reflect_ftz = True if reflect_ftz is None else bool(reflect_ftz)
        return self._check(TargetOptions, maxnreg, reflect_ftz)

    def _check(self, check: Callable, *args):
        """`check(*args)`, its OptionError naming this kernel."""
        try:
            return check(*args)
        except OptionError as error:
            raise type(error)(f"{self.fn.__name__}: {error}") from None

    def _file_fast(self, kernel: _BoundKernel, args: tuple, kwargs: dict, options: tuple) -> None:
        """File `kernel` for the warm path under this call's binder key, when the warm path can launch
        it: one GPU (no per-array device check), no host tensor descriptors, no scalar converted
        bitwise. A kernel with global scratch takes it too: each warm launch calls the allocator,
        as Triton's launcher does (`_FastLaunch.scratch`)."""
        from .binder import NotFast, make_binder, make_launcher, register_array_types

        if self.option_params or not kernel.cuda.fast_launch_ok() or kernel.descriptors:
            return
        if kernel.checks is not None:
            return  # debug mode: each launch synchronizes and reads the error buffer (full path)
        register_array_types()
        if self._binder is None:
            self._binder, self._runtime_names = make_binder(
                self.arg_names, self.constexpr_names, self.defaults, self.do_not_specialize, self.no_align)
            self._launcher = make_launcher(
                self.fn.__name__, self.arg_names, self.constexpr_names, self.defaults, self.do_not_specialize,
                self.no_align, self._fast_plain, self._launch_unwarmed, _grid, config, record_module)
        try:
            key, values = self._binder(*args, **kwargs)
            positions = [self._runtime_names.index(name) for name in kernel.names]
        except (TypeError, KeyError, ValueError, NotFast):
            return
        torch = sys.modules.get("torch")
        tensors = [v for v in (*args, *kwargs.values()) if torch is not None and isinstance(v, torch.Tensor)]
        stream = None
        if tensors:  # the binder's key tells torch tensors from other arrays, so this holds for the key
            from .launcher import torch_stream_getter

            stream = torch_stream_getter(tensors[0].device.index)
        entry = _FastLaunch(kernel, positions, len(self._runtime_names), stream)
        self._fast[key, options] = entry
        if options == _NO_OPTIONS:
            self._fast_plain[key] = entry

    def _option_arguments(self, args: tuple, kwargs: dict, **options) -> dict:
        kwargs = dict(kwargs)
        for name in self.option_params:
            given = options[name]
            if given is not None and name not in kwargs and self.arg_names.index(name) >= len(args):
                kwargs[name] = given
        return kwargs

    def _compile(self, key, bound, target, num_warps, num_stages, fp_fusion, debug=False,
                 options: TargetOptions = DEFAULT_OPTIONS, load: bool = True) -> _BoundKernel:
        from .compiler import dependencies

        specs, constexprs = [], {}
        for (name, part) in zip(self.arg_names, key[0]):
            if part[0] == "c":
                constexprs[name] = bound[name]
            else:
                specs.append(ArgSpec(name, part[0], part[1], part[2]))
        try:
            compiled = compile(self.fn, specs, constexprs, target=target, num_warps=num_warps,
                               num_stages=num_stages, enable_fp_fusion=fp_fusion, debug=debug,
                               maxnreg=options.maxnreg, enable_reflect_ftz=options.reflect_ftz)
        except CompilationError as exc:
            also = backend_for(target).compile_errors_also
            if also is not None and not isinstance(exc, also):
                exc.__class__ = _error_also(type(exc), also)
            raise
        compiled.jit_function = self
        if self.repr is not None:
            compiled.name = self.repr(_Specialization(specs, constexprs))
        _, used_globals = dependencies(self.fn)
        return _BoundKernel(compiled, specs, used_globals, load=load)

    def __repr__(self) -> str:
        return f"JITFunction({self.fn.__module__}:{self.fn.__qualname__})"


class _Specialization:
    """What `@jit(repr=...)` is given, as in Triton: `signature` (runtime parameter -> its kind,
    "i32", "*fp32", ...) and `constants` (constexprs, and the integers specialized as equal to 1)."""

    def __init__(self, specs: list[ArgSpec], constexprs: dict[str, Any]):
        self.signature = {spec.name: spec.type for spec in specs}
        self.constants = {**constexprs, **{spec.name: 1 for spec in specs if spec.equal_1}}


@functools.cache
def _error_also(cls: type, also: type) -> type:
    """`cls` that is also an `also` (same name, so the message prints as before)."""
    return type(cls.__name__, (cls, also), {"__module__": cls.__module__})


def _hashable(value):
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def _default_target() -> str:
    from ..backends import default_target

    return default_target()


def _grid(grid, bound: dict) -> tuple[int, int, int]:
    if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int:
        return (grid[0], 1, 1)  # the common case
    if callable(grid):
        grid = grid(bound)
    if isinstance(grid, int):
        grid = (grid,)
    grid = tuple(int(g) for g in grid)
    if not 1 <= len(grid) <= 3:
        raise LaunchError(f"a grid has 1 to 3 dimensions, got {grid}")
    return grid + (1,) * (3 - len(grid))


def launch_parameters(specs: list[ArgSpec], md) -> tuple[dict[str, str], list[ArgSpec]]:
    """The host descriptors a launch of the kernel compiled as `md` passes a tensor map for (name ->
    element type), and every runtime parameter in order. A descriptor takes one where the target has
    TMA, the launch met TMA's rules, and the compiler did not keep it on pointers for shared memory
    (`md.tma_fallback`, runtime/compiler.py)."""
    tma = backend_for(md.target).has_tma(md.target)
    fallback = TMAFallback.from_dict(md.tma_fallback)
    descriptors = [s for s in specs if parse_descriptor_type(s.type) is not None]
    tensor_maps = {s.name: parse_descriptor_type(s.type)[0] for s in descriptors
                   if has_tensor_map(s, tma, fallback)}
    return tensor_maps, [part for s in specs for part in expand_arg(s, tma, fallback)]


class _BoundKernel:
    """A compiled kernel plus what it needs to launch: the runtime parameter names and the loaded module."""

    def __init__(self, compiled: CompiledKernel, specs: list[ArgSpec], used_globals,
                 load: bool = True):
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
        # in-kernel tensor maps: each launch's global scratch, a hidden parameter after the kernel's own
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
        for scope, name, value in self.used_globals:
            if scope.get(name, _MISSING) is not value:
                return False
        return True

    def _flatten(self, name: str, value) -> list:
        kind = self.tensor_maps.get(name)
        if kind is None:
            return flatten_descriptor(value)
        return flatten_descriptor(value, lambda v: tensor_map(v, kind, name, self.compiled.name))

    def _scratch_address(self, grid, args: list, stream) -> int:
        """This launch's global scratch from the allocator (runtime/allocation.py), as an address."""
        from .launcher import _stream_address, torch_stream

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
        self.scratch, address = launch_scratch(md.name, self.scratch_bytes, md.global_scratch_align,
                                               (gx, gy, gz), stream)
        return address

    def launch(self, grid: tuple[int, int, int], bound: dict, stream=None) -> None:
        if self.cuda is None:
            self.cuda = self._load()
        args = [bound[name] for name in self.names]
        if self.descriptors:
            args = [part for name in self.names for part in
                    (self._flatten(name, bound[name]) if name in self.descriptors else [bound[name]])]
        if self.scratch_bytes and min(grid) > 0:  # an empty grid launches nothing, a bad one raises
            args = [*args, self._scratch_address(grid, args, stream)]
        if self.checks is not None:
            self.checks.launch(self.cuda, grid, args, stream)  # synchronizes; raises what it recorded
        else:
            self.cuda.launch(grid, args, stream)


class _FastLaunch:
    """What the warm paths need of one bound kernel: its CUDA kernel, which of the binder's values (one
    per runtime parameter) are this specialization's parameters (a None argument is not one), and the
    launch's parts as plain attributes for the generated launcher (binder.make_launcher).

    The launcher fills a parameter block of its own, and only in the thread that filed the entry
    (`owner`): with no other writer, it needs no lock (a lock cost 0.16 us of a 1.1 us launch path).
    Other threads take `launch_values`, which locks the kernel's shared block."""

    __slots__ = ("compiled", "cuda", "pick", "globals", "stream", "launch", "function", "threads", "shared",
                 "max_x", "max_y", "max_z", "pack", "block", "buffer", "params", "owner", "scratch")

    def __init__(self, kernel: _BoundKernel, positions: list[int], runtime_count: int, torch_stream=None):
        self.compiled = kernel.compiled
        self.cuda = kernel.cuda
        self.globals = tuple(kernel.used_globals)  # (scope, name, value) the kernel read at compile time
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
        # the stream launches go to: torch's current one where the arguments are torch tensors, else CuPy's
        self.stream = torch_stream or kernel.cuda.current_stream_address
        self.launch, self.function, self.threads, self.shared, max_grid, params = kernel.cuda.launch_parts()
        self.max_x, self.max_y, self.max_z = max_grid
        self.pack = params.pack_into
        self.block = params.new_block()
        self.buffer, self.params = self.block.buffer, self.block.params_address
        self.owner = threading.get_ident()


def _same_values(values: tuple) -> tuple:
    return values


_MISSING = object()
_RUN_OPTIONS = frozenset({"warmup", "num_warps", "num_stages", "enable_fp_fusion", "stream",
                          "debug", "maxnreg", "enable_reflect_ftz", "arch"})
_NO_OPTIONS = (None,) * len(record_module.LAUNCH_OPTIONS)  # a call that gives no launch option


def jit(fn: Callable | None = None, **options) -> JITFunction | Callable[[Callable], JITFunction]:
    """Decorate a kernel or device function written in the tile language (Triton's `@triton.jit`)."""
    if fn is None:
        return lambda f: JITFunction(f, **options)
    return JITFunction(fn, **options)
