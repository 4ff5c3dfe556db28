"""Layout encodings, their linear layouts, axis info, and the layouts `coalesce` chooses."""

from __future__ import annotations

import re

from nvptx_kernels import CASES

from tileworkbench.ir.ops.ttg import BlockedEncoding, DotOperandEncoding, SliceEncoding, blocked_for
from tileworkbench.passes.axis_info import axis_info
from tileworkbench.runtime.compiler import _parse_signature, tile_opt_ir


def test_blocked_prints_like_triton():
    enc = BlockedEncoding((4,), (32,), (4,), (0,))
    assert str(enc) == "#blocked<{sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]}>"
    assert hash(enc) == hash(BlockedEncoding((4,), (32,), (4,), (0,)))  # frozen: usable as a key


def test_blocked_linear_layout_of_vector_add():
    layout = BlockedEncoding((4,), (32,), (4,), (0,)).linear((1024,))
    # 4 contiguous elements, then a repeat 512 further; lanes step by 4, warps by 128
    assert layout.regs == ((1,), (2,), (512,))
    assert layout.lanes == ((4,), (8,), (16,), (32,), (64,))
    assert layout.warps == ((128,), (256,))
    assert [layout.reg_coords(r)[0] for r in range(8)] == [0, 1, 2, 3, 512, 513, 514, 515]


def test_small_shapes_wrap_and_broadcast():
    layout = BlockedEncoding((4,), (32,), (4,), (0,)).linear((64,))
    assert layout.num_regs == 4
    # lanes 16..31 and all warps hold copies: their bases are zero
    assert layout.lanes[-1] == (0,) and layout.warps == ((0,), (0,))


def test_slice_of_a_2d_layout_drops_the_reduced_dimension():
    parent = blocked_for((32, 64), 4, vec=4)
    assert parent == BlockedEncoding((1, 4), (2, 16), (4, 1), (1, 0))
    rows = SliceEncoding(1, parent).linear((32,))
    assert rows.regs == ((8,), (16,))  # 32 rows over 2 lanes x 4 warps: 4 rows per thread
    assert rows.lanes == ((0,), (0,), (0,), (0,), (1,))  # the 16 column lanes broadcast
    assert rows.warps == ((2,), (4,))


def test_dot_operand_holds_all_of_k():
    parent = BlockedEncoding((1, 4), (4, 8), (4, 1), (1, 0))
    a = DotOperandEncoding(0, parent).linear((32, 16))
    assert {c[1] for c in a.all_reg_coords()} == set(range(16))
    assert a.lanes == parent.linear((32, 1)).lanes


def test_axis_info_of_vector_add(compiled):
    text = compiled("add").asm["tile-gpu"]
    assert "sizePerThread=[4]" in text
    half = compiled("layer_norm").asm["tile-gpu"]
    assert "sizePerThread=[8]" in half  # fp16: 8 elements make 16 bytes


def test_axis_info_facts():
    fn, signature, constexprs, _ = CASES["add"]
    func = tile_opt_ir(fn.fn, _parse_signature(fn, signature), constexprs)[0]
    facts = axis_info(func)
    by_name = {}
    for op in func.walk():
        for r in op.results:
            by_name[r.name_hint or id(r)] = facts.info(r)
    assert by_name["offsets"].contiguity == (1024,) and by_name["offsets"].divisibility == (1024,)
    assert by_name["mask"].constancy == (16,)  # n % 16 == 0: the mask is constant in runs of 16
    x_ptr = next(op for op in func.walk() if op.name == "tt.load").ptr
    assert facts.info(x_ptr).divisibility == (16,)  # bytes


def test_matmul_pointer_math_needs_no_conversions(compiled):
    text = compiled("matmul").asm["tile-gpu"]
    # only the two dot operands move, through shared memory (local_alloc + ldmatrix's local_load);
    # index math is rematerialized
    assert "ttg.convert_layout" not in text
    loads = re.findall(r"ttg\.local_load .* : tensor<[^,]*, (#[a-z_]+)\d*", text)
    # the two operands, then the accumulator read back in the store's coalesced layout
    assert loads == ["#dot_op", "#dot_op", "#blocked"], text


def test_no_conversions_in_row_kernels(compiled):
    for name in ("add", "softmax", "layer_norm", "control"):
        assert "ttg.convert_layout" not in compiled(name).asm["tile-gpu"], name
