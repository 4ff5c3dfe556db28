"""Compile-only use (no launch, no GPU): parse `--signature` / `--constexprs` text and compile.

Shared by the magic's `--signature` mode, `tw.inspect(kernel, signature=...)` and the CLI.
"""

from __future__ import annotations

import ast
from typing import Any


def parse_pairs(text: str | dict | None, what: str) -> dict[str, str]:
    """`"a=1, b=*fp32"` -> {"a": "1", "b": "*fp32"}; a dict passes through."""
    if text is None:
        return {}
    if isinstance(text, dict):
        return dict(text)
    out: dict[str, str] = {}
    for part in str(text).replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ValueError(
                f"{what}: expected NAME=VALUE, got {part!r} (e.g. 'x_ptr=*fp32,n=i32')"
            )
        out[name.strip()] = value.strip()
    return out


def parse_signature(text: str | dict | None) -> dict[str, str]:
    return parse_pairs(text, "--signature")


def parse_constexprs(text: str | dict | None) -> dict[str, Any]:
    """Constexpr values: Python literals (1024, 0.5, True, 'ieee'); anything else stays a string."""
    if isinstance(text, dict):
        return dict(text)
    out: dict[str, Any] = {}
    for name, value in parse_pairs(text, "--constexprs").items():
        try:
            out[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[name] = value
    return out


def compile_kernel(
    kernel: Any,
    signature: str | dict | None,
    constexprs: str | dict | None = None,
    target: str | None = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
    force: bool = False,
    fp_fusion: bool = True,
    debug: bool = False,
    maxnreg: int | None = None,
    reflect_ftz: bool = True,
) -> Any:
    """`tileworkbench.compile` with parsed options; `force` bypasses the compile cache, `fp_fusion`
    False compiles with `enable_fp_fusion=False`, `debug` in debug mode (bounds checks, asserts);
    `maxnreg` and `reflect_ftz` False: Triton's `maxnreg` and `enable_reflect_ftz=False`."""
    kwargs: dict[str, Any] = {
        "signature": parse_signature(signature),
        "constexprs": parse_constexprs(constexprs),
    }
    if target:
        kwargs["target"] = target
    if num_warps:
        kwargs["num_warps"] = num_warps
    if num_stages:
        kwargs["num_stages"] = num_stages
    if force:
        kwargs["use_cache"] = False
    if not fp_fusion:
        kwargs["enable_fp_fusion"] = False
    if debug:
        kwargs["debug"] = True
    if maxnreg is not None:
        kwargs["maxnreg"] = maxnreg
    if not reflect_ftz:
        kwargs["enable_reflect_ftz"] = False
    return _compile_function()(kernel, **kwargs)


def _compile_function():
    """`tileworkbench.compile` (the runtime's compile driver where the package does not export it)."""
    import tileworkbench

    compile_fn = getattr(tileworkbench, "compile", None)
    if compile_fn is None:
        from ..runtime.compiler import compile as compile_fn
    return compile_fn


class fresh_cache:
    """Point the compile cache at an empty temporary folder (for `--force`), then restore it."""

    def __enter__(self):
        import tempfile

        from ..config import config

        self._tmp = tempfile.TemporaryDirectory(prefix="tw-force-")
        self._saved = config.cache_dir
        config.cache_dir = type(self._saved)(self._tmp.name)
        return self

    def __exit__(self, *exc):
        from ..config import config

        config.cache_dir = self._saved
        self._tmp.cleanup()
        return False
