"""The `tt` dialect: functions, program ids, tensor shape ops, pointers and memory, reductions, scans, dot,
atomics, debugging and extern calls. Names follow Triton's TTIR so a learner can read one beside the other."""

from __future__ import annotations

from dataclasses import dataclass

from ..values import Region, Value
from .arith import UnaryOp
from .base import Op, attribute, operand, operands, region


# -- functions -------------------------------------------------------------------------------------
@dataclass(eq=False)
class FuncOp(Op, name="tt.func"):
    """A kernel. The body's block arguments are its runtime parameters; `arg_attrs` holds one dict per
    parameter (e.g. `{"tt.divisibility": 16}`) from the specialization."""

    sym_name: str = attribute()
    arg_attrs: tuple = attribute(())
    body: Region = region()

    @property
    def args(self):
        return self.body.block.args

    def insert_arg(self, index: int, type, name: str, attrs: dict):
        """A new parameter at `index` with its arg attributes (passes/descriptors.py adds the
        tensor maps of host descriptors that take TMA)."""
        attrs_list = list(self.arg_attrs) + [{}] * (len(self.args) - len(self.arg_attrs))
        self.arg_attrs = tuple(attrs_list[:index] + [attrs] + attrs_list[index:])
        return self.body.block.insert_arg(index, type, name)


@dataclass(eq=False)
class ReturnOp(Op, name="tt.return", terminator=True): ...


# -- program ids and ranges ------------------------------------------------------------------------
@dataclass(eq=False)
class GetProgramIdOp(Op, name="tt.get_program_id", pure=True):
    axis: int = attribute()


@dataclass(eq=False)
class GetNumProgramsOp(Op, name="tt.get_num_programs", pure=True):
    axis: int = attribute()


@dataclass(eq=False)
class MakeRangeOp(Op, name="tt.make_range", pure=True):
    """`tl.arange(start, end)`: the int32 values start..end-1 as a 1-D tensor."""

    start: int = attribute()
    end: int = attribute()


# -- shape ops ---------------------------------------------------------------------------------------
class SplatOp(UnaryOp, name="tt.splat", elementwise=False):
    """A scalar copied into every element of the result tensor."""


class BroadcastOp(UnaryOp, name="tt.broadcast", elementwise=False):
    """Size-1 dimensions stretched to the result shape (same rank)."""


@dataclass(eq=False)
class ExpandDimsOp(Op, name="tt.expand_dims", pure=True):
    src: Value = operand()
    axis: int = attribute()


@dataclass(eq=False)
class ReshapeOp(Op, name="tt.reshape", pure=True):
    """Row-major reshape. With `allow_reorder` (`tl.view`) the element order is unspecified."""

    src: Value = operand()
    allow_reorder: bool = attribute(False)


@dataclass(eq=False)
class TransOp(Op, name="tt.trans", pure=True):
    """Permute dimensions: result dim i is source dim `order[i]`."""

    src: Value = operand()
    order: tuple = attribute()


@dataclass(eq=False)
class JoinOp(Op, name="tt.join", pure=True):
    """Stack two same-shaped tensors along a new last dimension of size 2."""

    lhs: Value = operand()
    rhs: Value = operand()


@dataclass(eq=False)
class SplitOp(Op, name="tt.split", pure=True):
    """Split a tensor whose last dimension is 2 into its two halves (two results)."""

    src: Value = operand()


@dataclass(eq=False)
class CatOp(Op, name="tt.cat", pure=True):
    """Concatenate along dimension 0 (element order may be reordered, as Triton allows)."""

    lhs: Value = operand()
    rhs: Value = operand()


@dataclass(eq=False)
class GatherOp(Op, name="tt.gather", pure=True):
    """`result[i][j] = src[indices[i][j]][j]` for axis 0, and likewise along `axis`."""

    src: Value = operand()
    indices: Value = operand()
    axis: int = attribute()


@dataclass(eq=False)
class HistogramOp(Op, name="tt.histogram", pure=True):
    """Counts of each value 0..num_bins-1 in `src` (the result shape gives num_bins)."""

    src: Value = operand()


@dataclass(eq=False)
class SortOp(Op, name="tt.sort", pure=True):
    """Sort along `axis` (the last one in Triton), ascending unless `descending`."""

    src: Value = operand()
    axis: int = attribute()
    descending: bool = attribute(False)


@dataclass(eq=False)
class TopKOp(Op, name="tt.topk", pure=True):
    """The `k` largest (or smallest) values along the last axis, in sorted order; k is the result's last dim."""

    src: Value = operand()
    largest: bool = attribute(True)


# -- pointers and memory ---------------------------------------------------------------------------
@dataclass(eq=False)
class AddPtrOp(Op, name="tt.addptr", pure=True, elementwise=True):
    """`ptr + offset` in elements of the pointee type."""

    ptr: Value = operand()
    offset: Value = operand()


class IntToPtrOp(UnaryOp, name="tt.int_to_ptr"): ...


class PtrToIntOp(UnaryOp, name="tt.ptr_to_int"): ...


class PtrBitcastOp(UnaryOp, name="tt.bitcast"): ...  # pointer to pointer of another pointee


@dataclass(eq=False)
class LoadOp(Op, name="tt.load"):
    """Load through a pointer or a tensor of pointers; masked-off lanes read `other` (or are undefined)."""

    ptr: Value = operand()
    mask: Value | None = operand(optional=True)
    other: Value | None = operand(optional=True)
    cache_modifier: str = attribute("")
    eviction_policy: str = attribute("")
    is_volatile: bool = attribute(False)


@dataclass(eq=False)
class StoreOp(Op, name="tt.store"):
    ptr: Value = operand()
    value: Value = operand()
    mask: Value | None = operand(optional=True)
    cache_modifier: str = attribute("")
    eviction_policy: str = attribute("")


# -- tensor descriptors (target-neutral; passes/descriptors.py picks TMA or pointers) ------------
@dataclass(eq=False)
class MakeTensorDescOp(Op, name="tt.make_tensor_descriptor"):
    """A descriptor (`!tt.tensordesc`) of the tensor at `base` with `shape` (elements, outermost
    first) and `strides` (every dimension but the innermost, whose stride is 1). `host` names the
    kernel parameter it came from (a host descriptor), or is "" (`tl.make_tensor_descriptor`). Not
    pure: licm must not hoist one made in a loop (its tensor map would be rewritten in flight)."""

    base: Value = operand()
    shape: list[Value] = operands()
    strides: list[Value] = operands()
    padding: str = attribute("zero")
    host: str = attribute("")


@dataclass(eq=False)
class DescriptorLoadOp(Op, name="tt.descriptor_load"):
    """The block at `offsets` (scalar integers, outermost first) of descriptor `desc`'s tensor;
    positions outside its shape read as the padding (zero or NaN)."""

    desc: Value = operand()
    offsets: list[Value] = operands()


@dataclass(eq=False)
class DescriptorStoreOp(Op, name="tt.descriptor_store"):
    """Writes `value` (a tile of the block type) as the block at `offsets`; positions outside the
    tensor's shape are not written. `converts`: how many ops right before it made `value` of the
    block type (the frontend's cast and broadcast): a pointer form builds its tile before them, in
    the order `tl.store` has. Without the count a pass cannot tell those from a `.to()` of the
    user's right before the store, and a tile built just before the store changes the PTX (a
    converted f16 store on sm_80, the cpu target); it goes when the conversion itself moves into
    the descriptor pass."""

    desc: Value = operand()
    value: Value = operand()
    offsets: list[Value] = operands()
    converts: int = attribute(0)


RMW_KINDS = (
    "add",
    "fadd",
    "max",
    "umax",
    "min",
    "umin",
    "fmax",
    "fmin",
    "and",
    "or",
    "xor",
    "xchg",
)


@dataclass(eq=False)
class AtomicRMWOp(Op, name="tt.atomic_rmw"):
    """Atomic read-modify-write; the result is the old value. `kind` is one of RMW_KINDS."""

    kind: str = attribute()
    ptr: Value = operand()
    val: Value = operand()
    mask: Value | None = operand(optional=True)
    sem: str = attribute("acq_rel")
    scope: str = attribute("gpu")


@dataclass(eq=False)
class AtomicCASOp(Op, name="tt.atomic_cas"):
    """Atomic compare-and-swap; the result is the old value."""

    ptr: Value = operand()
    cmp: Value = operand()
    val: Value = operand()
    sem: str = attribute("acq_rel")
    scope: str = attribute("gpu")


# -- reductions, scans, dot ------------------------------------------------------------------------
@dataclass(eq=False)
class ReduceOp(Op, name="tt.reduce", pure=True):
    """Reduce `srcs` (same shape) along `axis` with the `combine` region, which takes 2*len(srcs) scalars
    (the accumulated values, then the new ones) and ends in `tt.reduce.return`."""

    axis: int = attribute()
    srcs: list[Value] = operands()
    combine: Region = region()


@dataclass(eq=False)
class ReduceReturnOp(Op, name="tt.reduce.return", terminator=True):
    values: list[Value] = operands()


@dataclass(eq=False)
class ScanOp(Op, name="tt.scan", pure=True):
    """Inclusive scan of `srcs` along `axis` with the `combine` region (as `tt.reduce`)."""

    axis: int = attribute()
    srcs: list[Value] = operands()
    reverse: bool = attribute(False)
    combine: Region = region()


@dataclass(eq=False)
class ScanReturnOp(Op, name="tt.scan.return", terminator=True):
    values: list[Value] = operands()


@dataclass(eq=False)
class DotOp(Op, name="tt.dot", pure=True):
    """`a @ b + c` on 2-D tiles (or 3-D, batched). `input_precision` is "ieee", "tf32" or "tf32x3"."""

    a: Value = operand()
    b: Value = operand()
    c: Value = operand()
    input_precision: str = attribute("ieee")
    max_num_imprecise_acc: int = attribute(0)


# -- special arithmetic ----------------------------------------------------------------------------
@dataclass(eq=False)
class ClampFOp(Op, name="tt.clampf", pure=True, elementwise=True):
    """`min(max(x, lo), hi)`; with `propagate_nan` a NaN `x` gives NaN, else it gives `lo`."""

    x: Value = operand()
    lo: Value = operand()
    hi: Value = operand()
    propagate_nan: bool = attribute(False)


class PreciseSqrtOp(UnaryOp, name="tt.precise_sqrt"): ...


@dataclass(eq=False)
class PreciseDivFOp(Op, name="tt.precise_divf", pure=True, elementwise=True):
    lhs: Value = operand()
    rhs: Value = operand()


@dataclass(eq=False)
class MulhiUIOp(Op, name="tt.mulhiui", pure=True, elementwise=True):
    """The high half of the 2N-bit product of two N-bit integers."""

    lhs: Value = operand()
    rhs: Value = operand()


@dataclass(eq=False)
class ExternElementwiseOp(Op, name="tt.extern_elementwise", elementwise=True):
    """A call of a device-library function (`symbol`, e.g. "__nv_tanhf") element by element."""

    symbol: str = attribute()
    args: list[Value] = operands()
    pure: bool = attribute(True)


@dataclass(eq=False)
class ElementwiseInlineAsmOp(Op, name="tt.elementwise_inline_asm", elementwise=True):
    """Inline PTX applied element by element (`packed_element` elements per asm invocation)."""

    asm_string: str = attribute()
    constraints: str = attribute()
    args: list[Value] = operands()
    pure: bool = attribute(True)
    packed_element: int = attribute(1)


@dataclass(eq=False)
class HintOp(Op, name="tt.hint", pure=True):
    """Identity that records `tl.multiple_of` / `max_contiguous` / `max_constancy` facts for axis info."""

    src: Value = operand()
    divisibility: tuple = attribute(())
    contiguity: tuple = attribute(())
    constancy: tuple = attribute(())


@dataclass(eq=False)
class AssumeOp(Op, name="llvm.intr.assume"):
    condition: Value = operand()


# -- debugging and synchronization -------------------------------------------------------------------
@dataclass(eq=False)
class PrintOp(Op, name="tt.print"):
    """`tl.device_print(prefix, *args)`."""

    args: list[Value] = operands()
    prefix: str = attribute("")
    hex: bool = attribute(False)


@dataclass(eq=False)
class AssertOp(Op, name="tt.assert"):
    """`tl.device_assert(condition, message)`: fails the launch where any element is false."""

    condition: Value = operand()
    message: str = attribute("")


@dataclass(eq=False)
class BarrierOp(Op, name="gpu.barrier"): ...
