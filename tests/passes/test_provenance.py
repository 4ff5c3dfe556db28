"""Pointer provenance (passes/provenance.py): which pointer arguments each load's and store's pointer may
come from, through pointer arithmetic, loops, branches, block pointers and tensor descriptors."""

from __future__ import annotations

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.ir.ops import tt
from tileworkbench.passes.descriptors import lower_descriptors
from tileworkbench.passes.provenance import Origin, pointer_provenance
from tileworkbench.runtime.compiler import _parse_signature, tile_opt_ir
from tileworkbench.target import GENERIC

F32 = "*fp32:16"


def access_origins(kernel, signature: dict, **constexprs) -> list[tuple[str, Origin]]:
    """(op name, origin of its pointer) of every load, store and atomic, in program order."""
    func = tile_opt_ir(kernel.fn, _parse_signature(kernel.fn, signature), constexprs)[0]
    lower_descriptors(func, GENERIC)  # descriptors as pointer tiles, as the bounds checks see them
    provenance = pointer_provenance(func)
    memory = (tt.LoadOp, tt.StoreOp, tt.AtomicRMWOp, tt.AtomicCASOp)
    return [(op.name, provenance.origin(op.ptr)) for op in func.walk() if isinstance(op, memory)]


def only(*args: int) -> Origin:
    return Origin(frozenset(args))


@tw.jit
def loop_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = x_ptr
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in range(n):
        acc += tl.load(p + offs)
        p += BLOCK  # a loop-carried pointer
    tl.store(out_ptr + offs, acc)


def test_a_loop_carried_pointer_keeps_its_argument():
    assert access_origins(loop_kernel, {"x_ptr": F32, "out_ptr": F32, "n": "i32"}, BLOCK=32) == [
        ("tt.load", only(0)), ("tt.store", only(1))]


@tw.jit
def branch_kernel(a_ptr, b_ptr, out_ptr, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if flag > 0:
        p = a_ptr
    else:
        p = b_ptr + 1
    q = tl.where(flag > 1, out_ptr, a_ptr)
    tl.store(q + offs, tl.load(p + offs))


def test_branches_and_select_give_the_union():
    origins = access_origins(branch_kernel, {"a_ptr": F32, "b_ptr": F32, "out_ptr": F32, "flag": "i32"},
                             BLOCK=32)
    assert origins == [("tt.load", only(0, 1)), ("tt.store", only(0, 2))]


@tw.jit
def block_pointer_kernel(a_ptr, c_ptr, M, K, stride_m, BM: tl.constexpr, BK: tl.constexpr):
    a = tl.make_block_ptr(a_ptr, (M, K), (stride_m, 1), (0, 0), (BM, BK), (1, 0))
    acc = tl.zeros((BM, BK), tl.float32)
    for _ in range(0, K, BK):
        acc += tl.load(a, boundary_check=(0, 1))
        a = tl.advance(a, (0, BK))
    desc = tl.make_tensor_descriptor(c_ptr, [M, K], [stride_m, 1], [BM, BK])
    desc.store([0, 0], acc)


def test_block_pointers_and_descriptors_keep_their_base():
    origins = access_origins(block_pointer_kernel, {"a_ptr": F32, "c_ptr": F32, "M": "i32", "K": "i32",
                                                    "stride_m": "i32"}, BM=16, BK=16)
    assert origins == [("tt.load", only(0)), ("tt.store", only(1))]


@tw.jit
def int_pointer_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = x_ptr.to(tl.int64).to(tl.pointer_type(tl.float32))
    tl.store(out_ptr + offs, tl.load(p + offs))


def test_a_pointer_made_from_an_integer_is_unknown():
    origins = access_origins(int_pointer_kernel, {"x_ptr": F32, "out_ptr": F32}, BLOCK=32)
    assert origins[0][0] == "tt.load" and origins[0][1].unknown and not origins[0][1].checkable
    assert origins[1] == ("tt.store", only(1))


@tw.jit
def while_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = x_ptr
    i = 0
    while i < n:
        tl.store(out_ptr + i * BLOCK + offs, tl.load(p + offs))
        p += BLOCK
        i += 1


def test_a_pointer_carried_by_a_while_loop():
    assert access_origins(while_kernel, {"x_ptr": F32, "out_ptr": F32, "n": "i32"}, BLOCK=32) == [
        ("tt.load", only(0)), ("tt.store", only(1))]
