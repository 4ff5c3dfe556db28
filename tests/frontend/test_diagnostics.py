"""Compile errors: one test per error, each asserting file:line:col, the message, the hint, the caret line,
and that no frame or path of the frontend leaks into the message."""

from __future__ import annotations

import contextlib
import inspect

import numpy as np
import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import CompilationError
from tileworkbench.language.extra import libdevice

RUNTIME_GLOBAL = 3  # a plain int: kernels may not read it


@contextlib.contextmanager
def tw_interpreter():
    """Launches inside run in the interpreter (on NumPy arrays), also on a GPU machine."""
    from tileworkbench.config import config

    saved, config.interpret = config.interpret, True
    try:
        yield
    finally:
        config.interpret = saved


def plain_python(x):
    return x + 1


def place(kernel, snippet: str) -> str:
    """`file:line:col` (1-based column) of the first line of `kernel` containing `snippet`."""
    lines, first = inspect.getsourcelines(kernel.fn)
    header = next(i for i, text in enumerate(lines) if text.startswith("def "))
    for number, text in enumerate(lines[header + 1:], start=first + header + 1):
        if snippet in text:
            return f"{__file__}:{number}:{text.index(snippet) + 1}"
    raise AssertionError(f"{snippet!r} not found")


def compile_error(kernel, signature, constexprs=None) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        tw.compile(kernel, signature=signature, constexprs=constexprs or {}, target="interpreter")
    info.value.kernel = kernel
    return info.value


def check(error: CompilationError, snippet: str, message: str, hint: str | None, kernel=None) -> None:
    text = str(error)
    assert text.startswith(f"{place(kernel or error.kernel, snippet)}: error: "), text
    assert message in text.splitlines()[0], text
    assert "^" in text and snippet.split("(")[0] in text  # the source line and carets under it
    if hint is not None:
        assert f"hint: {hint}" in text, text
    assert "tileworkbench/frontend" not in text and "Traceback" not in text
    assert error.__traceback__ is None or all(
        "tileworkbench/frontend" not in str(frame) for frame in [error.__cause__, error.__context__] if frame)


@tw.jit
def break_kernel(n):
    for i in range(n):
        break


@tw.jit
def lambda_kernel(x_ptr):
    f = lambda v: v + 1
    tl.store(x_ptr, f(1))


@tw.jit
def try_kernel(x_ptr):
    try:
        tl.store(x_ptr, 1)
    except Exception:  # noqa: BLE001, S110  (the syntax under test)
        pass


@pytest.mark.parametrize("kernel,snippet,syntax,hint", [
    (break_kernel, "break", "Break", "kernels cannot `break`; put the exit test in a `while` condition"),
    (lambda_kernel, "lambda v", "Lambda", "define a @tw.jit function instead"),
    (try_kernel, "try:", "Try", "kernels cannot catch exceptions"),
], ids=["break", "lambda", "try"])
def test_unsupported_syntax(kernel, snippet, syntax, hint):
    signature = {"n": "i32"} if kernel is break_kernel else {"x_ptr": "*i32"}
    error = compile_error(kernel, signature)
    check(error, snippet, f"Python syntax `{syntax}` is not supported in a kernel", hint)


@tw.jit
def shape_mismatch_kernel(x_ptr, M: tl.constexpr, N: tl.constexpr):
    a = tl.arange(0, M)
    b = tl.arange(0, N)
    tl.store(x_ptr + a, a + b)


def test_shape_mismatch_in_a_binary_op():
    error = compile_error(shape_mismatch_kernel, {"x_ptr": "*i32"}, {"M": 128, "N": 64})
    check(error, "a + b", "shapes (128,) and (64,) do not broadcast",
          "index one side with [:, None] or [None, :], or make the block sizes equal")
    assert "in shape_mismatch_kernel" in str(error)


@tw.jit
def arange_kernel(x_ptr, N: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, N), 1)


def test_non_power_of_two_arange():
    error = compile_error(arange_kernel, {"x_ptr": "*i32"}, {"N": 100})
    check(error, "tl.arange(0, N)", "arange's range must be a power of 2, got 100",
          "use the next power of two, tw.next_power_of_2(n), and mask the tail")


@tw.jit
def tanh_kernel(x_ptr):
    tl.store(x_ptr, tl.tanh(tl.load(x_ptr)))


def test_libdevice_function_on_tl_points_at_libdevice():
    error = compile_error(tanh_kernel, {"x_ptr": "*fp32"})
    check(error, "tl.tanh", "module has no attribute `tanh`",
          "`tanh` is a libdevice function, not part of tl (as in Triton): `from "
          "tileworkbench.language.extra import libdevice` (Triton: `from triton.language.extra "
          "import libdevice`), then `libdevice.tanh(x)`")


@tw.jit
def libdevice_tanh_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, libdevice.tanh(tl.load(x_ptr + offs)))


def test_the_hinted_libdevice_call_works():
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    out = np.full_like(x, np.nan)
    with tw_interpreter():
        libdevice_tanh_kernel[(1,)](x, out, BLOCK=64)
    np.testing.assert_allclose(out, np.tanh(x.astype(np.float64)), rtol=1e-6, atol=1e-7)


@tw.jit
def runtime_bound_kernel(x_ptr, n):
    tl.store(x_ptr + tl.arange(0, n), 1)


def test_runtime_value_where_a_constexpr_is_needed():
    error = compile_error(runtime_bound_kernel, {"x_ptr": "*i32", "n": "i32"})
    check(error, "tl.arange(0, n)", "must be a tl.constexpr, but it is only known at run time",
          "annotate the kernel parameter with `: tl.constexpr`")


@tw.jit
def plain_call_kernel(x_ptr):
    tl.store(x_ptr, plain_python(tl.load(x_ptr)))


def test_calling_a_plain_python_function():
    error = compile_error(plain_call_kernel, {"x_ptr": "*i32"})
    check(error, "plain_python(tl.load", "cannot call the plain Python function `plain_python`",
          "decorate `plain_python` with @tw.jit to make it a device function")


@tw.jit
def builtin_arity_kernel(x_ptr):
    tl.store(x_ptr, tl.maximum(tl.load(x_ptr)))


def test_wrong_number_of_arguments_to_a_builtin():
    error = compile_error(builtin_arity_kernel, {"x_ptr": "*i32"})
    check(error, "tl.maximum(", "wrong arguments for tl.maximum", "the signature is tl.maximum(x, y, propagate_nan=0)")
    assert "'y'" in str(error)  # names the missing parameter


@tw.jit
def two_args(a, b):
    return a + b


@tw.jit
def jit_arity_kernel(x_ptr):
    tl.store(x_ptr, two_args(1, 2, 3))


def test_wrong_number_of_arguments_to_a_jit_helper():
    error = compile_error(jit_arity_kernel, {"x_ptr": "*i32"})
    check(error, "two_args(1, 2, 3)", "wrong arguments for `two_args`", "the signature is two_args(a, b)")
    assert "too many positional arguments" in str(error)


@tw.jit
def loop_type_kernel(x_ptr, n):
    acc = 0
    for i in range(n):
        acc = acc + tl.load(x_ptr + i)
    tl.store(x_ptr, acc)


def test_loop_carried_variable_changing_type():
    error = compile_error(loop_type_kernel, {"x_ptr": "*fp32", "n": "i32"})
    check(error, "for i in range(n)", "loop-carried variable `acc` is", "give `acc` its final dtype")
    assert "int32 before the for loop" in str(error) and "float32 after one iteration" in str(error)


@tw.jit
def global_kernel(x_ptr):
    tl.store(x_ptr, RUNTIME_GLOBAL)


def test_non_constexpr_global():
    error = compile_error(global_kernel, {"x_ptr": "*i32"})
    check(error, "RUNTIME_GLOBAL)", "cannot access global variable `RUNTIME_GLOBAL`",
          "define it as `RUNTIME_GLOBAL = tl.constexpr(3)`")


@tw.jit
def mismatched_dot_kernel(a_ptr, out_ptr, M: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * M + tl.arange(0, M)[None, :]
    a = tl.load(a_ptr + offs)
    b = tl.reshape(a, (M // 2, M * 2))
    tl.store(out_ptr + offs, tl.dot(a, b))


def test_dot_with_mismatched_inner_dims():
    # (dimensions under 16 are fine: tests/nvptx/test_small_dot.py)
    error = compile_error(mismatched_dot_kernel, {"a_ptr": "*fp16", "out_ptr": "*fp32"}, {"M": 8})
    check(error, "tl.dot(a, b)", "tl.dot shapes do not match: (8, 8) @ (4, 16)",
          "the first tile is M x K and the second K x N")


@tw.jit
def helper_with_error(x):
    return x + tl.arange(0, 64)


@tw.jit
def inlined_error_kernel(x_ptr):
    tl.store(x_ptr + tl.arange(0, 32), helper_with_error(tl.arange(0, 32)))


def test_errors_in_inlined_helpers_name_the_call_site():
    error = compile_error(inlined_error_kernel, {"x_ptr": "*i32"})
    check(error, "x + tl.arange(0, 64)", "shapes (32,) and (64,) do not broadcast", None,
          kernel=helper_with_error)
    assert f"inlined from {place(inlined_error_kernel, 'helper_with_error(tl.arange')}" in str(error)


def test_launch_errors_are_compilation_errors_too():
    with pytest.raises(CompilationError, match="must be a power of 2"):
        arange_kernel[(1,)](np.zeros(100, np.int32), N=100)


@tw.jit
def scalar_pointer_store_kernel(x_ptr, N: tl.constexpr):
    tile = tl.load(x_ptr + tl.arange(0, N))
    tl.store(x_ptr, tile)


def test_store_of_a_tile_through_a_scalar_pointer():
    """Every lane would write one address (Triton refuses this too); it used to store silently."""
    error = compile_error(scalar_pointer_store_kernel, {"x_ptr": "*fp32"}, {"N": 8})
    check(error, "tl.store(x_ptr, tile)", "tl.store of a tile of shape (8,) through a scalar pointer",
          "add offsets to the pointer (x_ptr + tl.arange(0, BLOCK)), or reduce the tile to a scalar first")


@tw.jit
def scalar_pointer_masked_load_kernel(x_ptr, N: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, N), tl.load(x_ptr, mask=tl.arange(0, N) < 3))


def test_masked_load_through_a_scalar_pointer():
    error = compile_error(scalar_pointer_masked_load_kernel, {"x_ptr": "*fp32"}, {"N": 8})
    check(error, "tl.load(x_ptr, mask", "tl.load of a scalar pointer with a mask of shape (8,)",
          "add offsets to the pointer, e.g. x_ptr + tl.arange(0, BLOCK)")


@tw.jit
def nested_def_kernel(x_ptr):
    def inner(a):
        return a + 1

    tl.store(x_ptr, inner(1))


def test_nested_function_definition():
    """It used to run the nested body in place ("name `a` is not defined")."""
    error = compile_error(nested_def_kernel, {"x_ptr": "*i32"})
    check(error, "def inner", "a function defined inside a kernel (`inner`) is not supported",
          "define `inner` at module level with @tw.jit and call it")
