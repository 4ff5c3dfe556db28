"""`@jit` kernels, the user-facing `JITFunction`: `kernel[grid](*args)` binds arguments, specializes
on them (runtime/specialize.py, the one table of what a launch specializes on), compiles once per
specialization (through the cache), and launches on the GPU (CuPy) or in the interpreter.

Warm launches go through the generated launcher of runtime/binder.py, which builds the same key from
the same table, finds the bound kernel in a dict, checks that the globals it read are unchanged, and
launches; calls it cannot take come back here (`_launch_unwarmed`) to the full path (`_run`).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from ..backends import DEFAULT_OPTIONS, TargetOptions, backend_for
from ..config import config
from ..errors import ArgumentBindingError, CompilationError, LaunchError, OptionError
from ..frontend import ArgSpec, constexpr_names
from . import binder as binder_module
from . import record as record_module
from . import specialize as spec
from ..cuda.arguments import argument_error
from .binder import BoundKernel, FastLaunch
from .compiler import CompiledKernel, compile
from .specialize import BACKEND_OPTIONS
from .tensor_wrapper import TensorWrapper, reinterpret  # noqa: F401  (Triton's triton.runtime.jit names)


class JITFunction:
    """A kernel (or device function) decorated with `@tw.jit`; `.fn` is the Python function."""

    __tile_jit__ = True

    def __init__(
        self,
        fn: Callable,
        do_not_specialize=(),
        do_not_specialize_on_alignment=(),
        debug: bool | None = None,
        noinline: bool | None = None,
        repr=None,
        launch_metadata=None,
    ):
        self.fn = fn
        functools.update_wrapper(self, fn)
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        self.constexpr_names = set(constexpr_names(fn))
        self.do_not_specialize = {self._param_name(p) for p in do_not_specialize}
        self.no_align = {self._param_name(p) for p in do_not_specialize_on_alignment}
        self.debug = debug
        self.repr = repr  # Triton's: specialization -> the compiled kernel's name
        self.defaults = {
            n: p.default
            for n, p in self.signature.parameters.items()
            if p.default is not inspect.Parameter.empty
        }
        self.cache: dict[tuple, BoundKernel] = {}
        # how each parameter enters the key: a constexpr, a runtime argument, or one of those
        # without its alignment or without any specialization (see _key)
        self._param_modes = [
            (
                n,
                _CONSTEXPR
                if n in self.constexpr_names
                else _NO_SPECIALIZATION
                if n in self.do_not_specialize
                else _NO_ALIGNMENT
                if n in self.no_align
                else _RUNTIME,
            )
            for n in self.arg_names
        ]
        # the warm path (binder.py): made at the first GPU launch; (key, options) -> FastLaunch,
        # where options are the call's record.LAUNCH_OPTIONS as given (None: not given)
        self._binder = None
        self._runtime_names: list[str] = []
        self._fast: dict[tuple, FastLaunch] = {}
        # the same for calls without launch options, keyed by the binder's key alone; the generated
        # launcher (binder.make_launcher) looks calls up here
        self._fast_plain: dict[tuple, FastLaunch] = {}
        self._launcher = None
        self._last_bound = None  # the launcher bound to the last grid
        # launch options that are also parameters (tutorial 02's `num_stages: tl.constexpr`)
        self.option_params = [
            n for n in ("num_warps", "num_stages") if n in self.signature.parameters
        ]

    def _param_name(self, p) -> str:
        return self.arg_names[p] if isinstance(p, int) else p

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"{self.fn.__name__} is a @jit function: launch it as {self.fn.__name__}[grid](...), "
            "or call it from another @jit kernel"
        )

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

    # -- binding -----------------------------------------------------------------------------------
    def _bind(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        bound = dict(zip(self.arg_names, args))
        if kwargs:
            bound.update(kwargs)
        if (
            len(bound) == len(self.arg_names)
            and len(args) + len(kwargs) == len(bound)
            and kwargs.keys() <= self.signature.parameters.keys()
        ):
            return bound  # the common case: every parameter given once, none unknown (a misspelt
            # keyword in place of a missing parameter has the right count, hence the key check)
        return self._bind_slow(args, kwargs)

    def _bind_slow(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        if len(args) > len(self.arg_names):
            raise ArgumentBindingError(
                f"{self.fn.__name__} takes {len(self.arg_names)} arguments, got {len(args)}"
            )
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
                    raise ArgumentBindingError(
                        f"{self.fn.__name__} is missing the argument {name!r}"
                    )
                bound[name] = self.defaults[name]
        return {name: bound[name] for name in self.arg_names}

    def _key(
        self, bound: dict[str, Any], target: str, num_warps: int, num_stages: int, fp_fusion: bool
    ) -> tuple:
        """The full path's specialization key: its first item holds the same parts, in the same
        order, as the generated binder's key (runtime/specialize.py), then the compile options."""
        parts = []
        append = parts.append
        try:
            for name, mode in self._param_modes:
                value = bound[name]
                if mode is _RUNTIME:
                    append(spec.key_part(value))
                elif mode is _CONSTEXPR:
                    parts += spec.constexpr_parts(value)
                elif mode is _NO_SPECIALIZATION:
                    append(spec.without_specialization(spec.key_part(value)))
                else:
                    append(spec.without_alignment(spec.key_part(value)))
        except LaunchError as error:
            raise argument_error(error, name, value, self.fn.__name__) from None
        return (tuple(parts), target, num_warps, num_stages, fp_fusion)

    def _specialization(
        self, key: tuple, bound: dict[str, Any]
    ) -> tuple[list[ArgSpec], dict[str, Any]]:
        """The compiler's signature and constexprs for `key` (`_key`'s); a None argument is a
        constexpr."""
        specs, constexprs = [], {}
        parts = iter(key[0])
        for name, mode in self._param_modes:
            part = next(parts)
            if mode is _CONSTEXPR:
                next(parts)  # the constexpr's class
                constexprs[name] = bound[name]
            elif part == spec.NONE:
                constexprs[name] = None
            else:
                specs.append(spec.arg_spec(name, part))
        return specs, constexprs

    # -- launch ------------------------------------------------------------------------------------
    def run(
        self,
        *args,
        grid,
        warmup: bool = False,
        num_warps: int | None = None,
        num_stages: int | None = None,
        enable_fp_fusion: bool | None = None,
        stream=None,
        debug: bool | None = None,
        maxnreg: int | None = None,
        enable_reflect_ftz: bool | None = None,
        arch: str | None = None,
        **kwargs,
    ):
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
        if (
            binder is None
            or config.interpret
            or record_module.ACTIVE
            or config.override_arch
            or not config.default_fp_fusion
        ):  # warm entries are keyed by the options given
            return None
        try:
            key, values = binder(*args, **kwargs)
            entry = self._fast[key, options]
        except spec.KEY_MISSES:
            return None
        if entry.globals and not spec.globals_unchanged(entry.globals):
            return None
        if type(grid) is tuple and len(grid) == 1:
            grid3 = (
                grid[0],
                1,
                1,
            )  # the common case without a call (as the generated launcher does)
        else:
            grid3 = spec.normalize_grid(grid, self._bind(args, kwargs) if callable(grid) else None)
        if stream is None:
            stream = entry.stream()
        if entry.pick is not None:
            values = entry.pick(values)
        if entry.scratch is not None:  # this launch's global scratch, from the allocator
            from ..cuda.launcher import _stream_address

            try:
                if min(grid3) <= 0:
                    return None  # an empty grid launches nothing (the full path), or is an error
                values = (*values, entry.scratch(*grid3, _stream_address(stream)))
            except spec.LAUNCH_REFUSALS:
                return None  # the full path explains (no allocator, a bad grid, ...)
        if entry.cuda.launch_values(grid3, values, stream):
            return entry.compiled
        return None

    def _record(self, kernel: BoundKernel, grid3, bound: dict, stream) -> None:
        record_module.record(
            record_module.LaunchRecord(
                kernel=self,
                compiled=kernel.compiled,
                grid=grid3,
                args=dict(bound),
                target=kernel.compiled.target,
                relaunch=functools.partial(kernel.launch, grid3, dict(bound), stream),
            )
        )

    def _run(self, args, kwargs, grid, warmup, options: tuple, stream, debug: bool = False):
        """The full launch path: bind and check the arguments, specialize, compile when new, launch."""
        if record_module.OVERRIDES:  # the workbench's --sweep imposes constexprs and launch options
            args, kwargs, options = record_module.apply_overrides(
                self.arg_names, self.constexpr_names, args, kwargs, options
            )
        num_warps, num_stages, fp_fusion, maxnreg, reflect_ftz, arch = options
        if (
            self.option_params
        ):  # a parameter named like a launch option gets its value too (Triton's rule)
            kwargs = self._option_arguments(
                args, kwargs, num_warps=num_warps, num_stages=num_stages
            )
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
            kernel = self._compile(
                key,
                bound,
                target,
                num_warps,
                num_stages,
                fp_fusion,
                debug,
                target_options,
                load=not warmup,
            )
            self.cache[key] = kernel
        if kernel.cuda is None and not warmup:
            kernel.cuda = kernel._load()
        if kernel.cuda is not None:
            self._file_fast(kernel, args, kwargs, options)
        if warmup:
            return kernel.compiled
        grid3 = spec.normalize_grid(grid, bound)
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

    def _file_fast(self, kernel: BoundKernel, args: tuple, kwargs: dict, options: tuple) -> None:
        """File `kernel` for the warm path under this call's binder key, when the warm path can
        launch it: one GPU (no per-array device check), no host tensor descriptors, no scalar
        converted bitwise, no array only the full path takes (a host array: its launch fails, and
        explains). A kernel with global scratch takes it too: each warm launch calls the allocator,
        as Triton's launcher does (`FastLaunch.scratch`)."""
        if self.option_params or not kernel.cuda.fast_launch_ok() or kernel.descriptors:
            return
        if kernel.checks is not None:
            return  # debug mode: each launch synchronizes and reads the error buffer (full path)
        if self._binder is None:
            self._binder, self._runtime_names = binder_module.make_binder(
                self.arg_names,
                self.constexpr_names,
                self.defaults,
                self.do_not_specialize,
                self.no_align,
            )
            self._launcher = binder_module.make_launcher(
                self.fn.__name__,
                self.arg_names,
                self.constexpr_names,
                self.defaults,
                self.do_not_specialize,
                self.no_align,
                self._fast_plain,
                self._launch_unwarmed,
                config,
                record_module,
            )
        try:
            key, _ = self._binder(*args, **kwargs)
        except spec.KEY_MISSES:
            return
        if not spec.warm_key(key):
            return
        positions = [self._runtime_names.index(name) for name in kernel.names]
        stream = binder_module.warm_stream(args, kwargs)
        entry = FastLaunch(kernel, positions, len(self._runtime_names), stream)
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

    def _compile(
        self,
        key,
        bound,
        target,
        num_warps,
        num_stages,
        fp_fusion,
        debug=False,
        options: TargetOptions = DEFAULT_OPTIONS,
        load: bool = True,
    ) -> BoundKernel:
        from .compiler import dependencies

        specs, constexprs = self._specialization(key, bound)
        try:
            compiled = compile(
                self.fn,
                specs,
                constexprs,
                target=target,
                num_warps=num_warps,
                num_stages=num_stages,
                enable_fp_fusion=fp_fusion,
                debug=debug,
                maxnreg=options.maxnreg,
                enable_reflect_ftz=options.reflect_ftz,
            )
        except CompilationError as exc:
            also = backend_for(target).compile_errors_also
            if also is not None and not isinstance(exc, also):
                exc.__class__ = _error_also(type(exc), also)
            raise
        compiled.jit_function = self
        if self.repr is not None:
            compiled.name = self.repr(_Specialization(specs, constexprs))
        _, used_globals = dependencies(self.fn)
        return BoundKernel(compiled, specs, used_globals, load=load)

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


def _default_target() -> str:
    from ..backends import default_target

    return default_target()


# how a parameter enters the key (JITFunction._param_modes)
_RUNTIME, _CONSTEXPR, _NO_SPECIALIZATION, _NO_ALIGNMENT = (
    "runtime",
    "constexpr",
    "nospec",
    "noalign",
)
_RUN_OPTIONS = frozenset(
    {
        "warmup",
        "num_warps",
        "num_stages",
        "enable_fp_fusion",
        "stream",
        "debug",
        "maxnreg",
        "enable_reflect_ftz",
        "arch",
    }
)
_NO_OPTIONS = (None,) * len(record_module.LAUNCH_OPTIONS)  # a call that gives no launch option


def jit(fn: Callable | None = None, **options) -> JITFunction | Callable[[Callable], JITFunction]:
    """Decorate a kernel or device function written in the tile language (Triton's `@triton.jit`)."""
    if fn is None:
        return lambda f: JITFunction(f, **options)
    return JITFunction(fn, **options)
