"""`tl.device_print` and `tl.device_assert` on the cpu target: the lowering calls CUDA's `vprintf` and
`__assertfail`; on the host those names are bound to Python callbacks here (libc's `vprintf` takes a
va_list, not CUDA's packed argument buffer). A failed assert is recorded and raised after the launch."""

from __future__ import annotations

import ctypes
import re
import struct
import sys
import threading

from ...errors import LaunchError

# the lowering's names -> the symbols the JIT binds to the callbacks below
RENAMES = {"vprintf": "tileworkbench_cpu_vprintf", "__assertfail": "tileworkbench_cpu_assertfail"}
_SPEC = re.compile(r"%(%|ll[dux]|[duxfap])")
_PRINTF = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
_ASSERT = ctypes.CFUNCTYPE(
    None, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_char_p, ctypes.c_int64
)
_FAILURES: list[str] = []
_LOCK = threading.Lock()


def _argument(spec: str, buffer: int, offset: int) -> tuple[str, int]:
    """The text of one argument of CUDA's packed buffer (fields at their natural alignment)."""
    wide = spec in ("f", "a", "p") or spec.startswith("ll")
    size = 8 if wide else 4
    offset = (offset + size - 1) // size * size
    code = (
        "d"
        if spec in ("f", "a")
        else ("Q" if wide else "I")
        if spec[-1] in "uxp"
        else ("q" if wide else "i")
    )
    value = struct.unpack(code, ctypes.string_at(buffer + offset, size))[0]
    if spec == "a":
        return float.hex(value), offset + size
    if spec == "p":
        return hex(value), offset + size
    return ("%" + spec[-1].replace("u", "d")) % value, offset + size


def _vprintf(fmt: int, buffer: int) -> int:
    text = ctypes.string_at(fmt).decode(errors="replace")
    out, position, offset = [], 0, 0
    for match in _SPEC.finditer(text):
        out.append(text[position : match.start()])
        position = match.end()
        if match.group(1) == "%":
            out.append("%")
            continue
        piece, offset = _argument(match.group(1), buffer, offset)
        out.append(piece)
    out.append(text[position:])
    with _LOCK:
        sys.stdout.write("".join(out))
        sys.stdout.flush()
    return 0


def _assertfail(message: bytes, file: bytes, line: int, function: bytes, _size: int) -> None:
    with _LOCK:
        _FAILURES.append(
            f"{file.decode()}:{line}: device_assert failed in {function.decode()}: "
            f"{message.decode()}"
        )


_CALLBACKS = {RENAMES["vprintf"]: _PRINTF(_vprintf), RENAMES["__assertfail"]: _ASSERT(_assertfail)}


def bind_symbols(llvm) -> None:
    """Tell the JIT where the callbacks are (once per process; the callbacks live as long)."""
    for name, callback in _CALLBACKS.items():
        llvm.add_symbol(name, ctypes.cast(callback, ctypes.c_void_p).value)


def raise_failed_asserts(kernel_name: str) -> None:
    """After a launch: a LaunchError for the first failed device_assert, if any."""
    if not _FAILURES:
        return
    with _LOCK:
        first, count = _FAILURES[0], len(_FAILURES)
        _FAILURES.clear()
    more = f" (and {count - 1} more)" if count > 1 else ""
    raise LaunchError(f"{first}{more} (kernel {kernel_name}, cpu target)")
