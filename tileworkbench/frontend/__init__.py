"""The frontend: a kernel's Python source -> Tile IR (`tile` stage), with a location on every op."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ..errors import CompilationError
from ..ir import tt
from ..ir.builder import Builder
from ..ir.location import Loc
from ..ir.values import Block
from ..language import core
from ..language.core import pointer_type, tensor
from ..language.descriptor import tensor_descriptor

# imported to register the builtins
from . import calls, descriptors, math_calls, reductions, scaled_dot, shape_calls  # noqa: F401
from .codegen import CodeGenerator
from .descriptor_args import expand_arg, parse_descriptor_type
from .descriptors import make_descriptor_op
from .source import get_source
from .specialize import ArgSpec, constexpr_names, parse_arg, parse_type

__all__ = ["ArgSpec", "generate", "parse_arg", "parse_type", "constexpr_names"]


def generate(
    fn: Callable,
    args: list[ArgSpec],
    constexprs: dict[str, Any],
    num_warps: int = 4,
    debug: bool = False,
) -> tt.FuncOp:
    """Lower `fn` to a `tt.func`. `args` lists the runtime parameters in order; every other parameter must
    be in `constexprs` or have a default. `num_warps` is what `tl.extra.cuda.num_warps()` reads;
    `tl.device_assert` makes a `tt.assert` only when `debug`. The IR is target-neutral: host
    descriptors are their base, shape and strides (descriptor_args.py) and a
    `tt.make_tensor_descriptor` of them; passes/descriptors.py picks TMA or pointers."""
    source = get_source(fn)
    params = inspect.signature(fn).parameters
    by_name = {a.name: a for a in args}
    unknown = [n for n in list(by_name) + list(constexprs) if n not in params]
    if unknown:
        raise CompilationError(
            f"{fn.__name__} has no parameter named {', '.join(map(repr, unknown))}; its "
            f"parameters are {', '.join(params)}"
        )
    # a host descriptor is several parameters (its tensor map, if any, is the descriptor pass's)
    flat = [part for a in args for part in expand_arg(a)]
    types = [_param_type(a.type) for a in flat]
    func = tt.FuncOp(sym_name=fn.__name__, arg_attrs=tuple(_arg_attrs(a) for a in flat))
    ir_types = [_param_ir_type(fn, a, t) for a, t in zip(flat, types)]
    func.body.add_block(Block(ir_types, [a.name for a in flat]))
    func.loc = Loc(source.display_file, source.first_line + source.tree.lineno - 1, 0)
    scope: dict[str, Any] = {}
    block_args = iter(zip(func.body.block.args, types))
    builder = Builder(func.body.block, func.loc)
    for name, param in params.items():
        if name in by_name and parse_descriptor_type(by_name[name].type) is not None:
            scope[name] = _descriptor_param(builder, by_name[name], block_args)
        elif name in by_name:
            arg, ty = next(block_args)
            if ty.is_ptr() and _is_const_annotation(param.annotation):  # `ptr: tl.const`: read-only
                ty = pointer_type(ty.element_ty, const=True)
            scope[name] = 1 if by_name[name].equal_1 else tensor(arg, ty)
        elif name in constexprs:
            scope[name] = constexprs[name]
        elif param.default is not inspect.Parameter.empty:
            scope[name] = param.default
        else:
            raise CompilationError(
                f"{fn.__name__}: parameter {name!r} has no value: give it in the "
                "signature (a runtime argument) or in constexprs"
            )
    generator = CodeGenerator(source, builder, scope, fn.__name__, num_warps=num_warps, debug=debug)
    generator.constexpr_names = {name for name in params if name not in by_name}
    try:
        generator.visit_body(source.tree.body)
    except CompilationError as exc:
        # the message has the place; frontend frames are noise; the unplaced cause stays (Triton's)
        raise exc.with_traceback(None) from exc.__cause__
    returned = generator.scope.get("__return__")
    if returned is not None:
        raise CompilationError(
            f"kernel {fn.__name__} returns a value; kernels write results with tl.store",
            loc=func.loc,
        )
    builder.loc = func.loc
    builder.create(tt.ReturnOp)
    return func


def _descriptor_param(builder: Builder, arg: ArgSpec, block_args) -> tensor_descriptor:
    """A host descriptor parameter as a `tl.tensor_descriptor` of its block arguments, made by a
    `tt.make_tensor_descriptor` at the kernel's start."""
    _, block, padding = parse_descriptor_type(arg.type)
    parts = [tensor(value, ty) for value, ty in (next(block_args) for _ in range(2 * len(block)))]
    rank = len(block)
    base, shape, strides = parts[0], parts[1 : rank + 1], parts[rank + 1 :]
    handle = make_descriptor_op(builder, base, shape, strides, block, padding, host=arg.name)
    return tensor_descriptor(base, shape, [*strides, 1], block, padding, handle)


def _param_type(text: str):
    """The language type of a runtime parameter."""
    return parse_type(text)


def _is_const_annotation(annotation) -> bool:
    return annotation is core.const or (
        isinstance(annotation, str)
        and annotation.replace(" ", "") in ("tl.const", "const", "triton.language.const")
    )


def _param_ir_type(fn: Callable, arg: ArgSpec, ty):
    """The IR type of a parameter; a dtype without one (tl.float8e4b15) is refused naming the argument."""
    try:
        return ty.to_ir()
    except CompilationError as exc:
        raise CompilationError(
            f"{fn.__name__}: argument {arg.name!r}: {exc}", hint=exc.hint
        ) from None


def _arg_attrs(arg: ArgSpec) -> dict:
    if arg.divisible_16:
        return {"tt.divisibility": 16}
    # an integer launched as a multiple of 8 or 4: axis_info scales it by the element size of the
    # pointer it moves, so an fp16 row stride of 8 keeps 16-byte aligned rows
    return {"tt.divisibility": arg.divisible_by} if arg.divisible_by > 1 else {}
