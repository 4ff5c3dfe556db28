"""`ld.global` / `st.global` written as PTX inline asm, as Triton writes them: a masked access is one
predicated instruction (`@p ld.global.v4.b32`) instead of a branch around it, and cache modifiers and
eviction policies become instruction qualifiers. The data travels as 32-bit words (16 or 8 bits for
accesses narrower than a word) and is bitcast to and from the elements' type.

Branching around each masked access, as plain LLVM loads need, cost registers (the phi's default
values live across the branch) and ptxas cannot schedule across the blocks: layer norm used 48
registers where Triton's predicated form used 40.
"""

from __future__ import annotations

from llvmlite import ir

from ....dtypes import LLVM_FLOAT_BITS
from ....errors import CompilationError
from ..llvm_types import GLOBAL_PTR, I1, I16, I32

LOAD_CACHE = {"": "", ".ca": ".ca", ".cg": ".cg", ".cs": ".cs", ".cv": ".cv"}
STORE_CACHE = {"": "", ".wb": ".wb", ".cg": ".cg", ".cs": ".cs", ".wt": ".wt"}
EVICTION = {
    "": "",
    "evict_normal": ".L1::evict_normal",
    "evict_first": ".L1::evict_first",
    "evict_last": ".L1::evict_last",
}


def qualifiers(op, store: bool) -> str:
    """The PTX qualifiers of `op`'s cache modifier, eviction policy and volatility. PTX takes a cache
    operator (`.cg`, `.cs`, ...) or an L1 eviction priority, not both: the cache operator, which says
    more (it also sets how L1 is used), wins."""
    if not store and getattr(op, "is_volatile", False):
        return ".volatile"  # ld.volatile takes no cache operator or eviction priority
    table = STORE_CACHE if store else LOAD_CACHE
    try:
        cache, eviction = table[op.cache_modifier], EVICTION[op.eviction_policy]
        return cache or eviction
    except KeyError:
        raise CompilationError(
            f"{op.loc}: unsupported cache modifier {op.cache_modifier!r} or eviction "
            f"policy {op.eviction_policy!r} on {op.name}",
            loc=op.loc,
        ) from None


def supports(etype: ir.Type, vec: int) -> bool:
    """Whether an access of `vec` elements of `etype` travels as words (pointers do not)."""
    return etype != GLOBAL_PTR and _bits(etype) * vec in (8, 16, 32, 64, 128)


def _bits(t: ir.Type) -> int:
    if isinstance(t, ir.IntType):
        return t.width
    return LLVM_FLOAT_BITS[str(t)]


def _words(etype: ir.Type, vec: int) -> tuple[int, int]:
    """(word bits, word count) for `vec` elements: 32-bit words, or one narrower word."""
    total = _bits(etype) * vec
    return (32, total // 32) if total >= 32 else (total, 1)


def _word_type(bits: int) -> ir.IntType:
    return I32 if bits == 32 else I16  # an 8-bit access uses a 16-bit register


def _to_words(b, value: ir.Value, etype: ir.Type, vec: int) -> list[ir.Value]:
    """A vector (or scalar) of `vec` elements as its words."""
    bits, count = _words(etype, vec)
    packed = (
        b.bitcast(value, ir.IntType(bits * count))
        if count == 1
        else b.bitcast(value, ir.VectorType(ir.IntType(bits), count))
    )
    if count == 1:
        return [b.zext(packed, I16) if bits == 8 else packed]
    return [b.extract_element(packed, ir.Constant(I32, i)) for i in range(count)]


def _from_words(b, words: list[ir.Value], etype: ir.Type, vec: int) -> ir.Value:
    bits, count = _words(etype, vec)
    target = etype if vec == 1 else ir.VectorType(etype, vec)
    if count == 1:
        word = b.trunc(words[0], ir.IntType(8)) if bits == 8 else words[0]
        return b.bitcast(word, target)
    packed = ir.Constant(ir.VectorType(ir.IntType(bits), count), ir.Undefined)
    for i, w in enumerate(words):
        packed = b.insert_element(packed, w, ir.Constant(I32, i))
    return b.bitcast(packed, target)


def _suffix(bits: int, count: int, load: bool) -> str:
    if bits == 8:
        return ".u8" if load else ".b8"
    return (f".v{count}" if count > 1 else "") + f".b{bits}"


def load(
    lw,
    ptr: ir.Value,
    pred: ir.Value | None,
    etype: ir.Type,
    vec: int,
    other: ir.Value | None,
    quals: str,
) -> ir.Value:
    """`vec` elements from `ptr` (a vector when vec > 1); where `pred` is false, `other` (or zeros)."""
    b = lw.builder
    bits, count = _words(etype, vec)
    reg = "r" if bits == 32 else "h"
    outs = ", ".join(f"${i}" for i in range(count))
    args, constraints = [], [f"={reg}"] * count
    lines = []
    if pred is not None:
        fills = _to_words(b, other, etype, vec) if other is not None else None
        for i in range(count):
            if fills is None:
                lines.append(f"mov.u{max(bits, 16)} ${i}, 0x0;")
            else:
                args.append(fills[i])
                constraints.append(reg)
                lines.append(f"mov.u{max(bits, 16)} ${i}, ${count + len(args) - 1};")
        args.append(pred)
        constraints.append("b")
        guard = f"@${count + len(args) - 1} "
    else:
        guard = ""
    args.append(ptr)
    constraints.append("l")
    address = f"${count + len(args) - 1}"
    target = f"{{ {outs} }}" if count > 1 else "$0"
    lines.append(
        f"{guard}ld.global{quals}{_suffix(bits, count, True)} {target}, [ {address} + 0 ];"
    )
    word = _word_type(bits)
    ret = word if count == 1 else ir.LiteralStructType([word] * count)
    result = lw.asm("\n\t".join(lines), ",".join(constraints), ret, args, side_effect=True)
    words = [result] if count == 1 else [b.extract_value(result, i) for i in range(count)]
    return _from_words(b, words, etype, vec)


def store(
    lw, ptr: ir.Value, data: ir.Value, pred: ir.Value | None, etype: ir.Type, vec: int, quals: str
) -> None:
    """`data` (`vec` elements) to `ptr` where `pred` holds."""
    bits, count = _words(etype, vec)
    reg = "r" if bits == 32 else "h"
    words = _to_words(lw.builder, data, etype, vec)
    args, constraints = [], []
    guard = ""
    if pred is not None:
        args.append(pred)
        constraints.append("b")
        guard = "@$0 "
    args.append(ptr)
    constraints.append("l")
    address = f"${len(args) - 1}"
    first = len(args)
    args += words
    constraints += [reg] * count
    values = ", ".join(f"${first + i}" for i in range(count))
    source = f"{{ {values} }}" if count > 1 else values
    text = f"{guard}st.global{quals}{_suffix(bits, count, False)} [ {address} + 0 ], {source};"
    lw.asm(text, ",".join(constraints), ir.VoidType(), args, side_effect=True)


def is_constant_true(v) -> bool:
    return isinstance(v, ir.Constant) and v.type == I1 and v.constant in (1, True, -1)
