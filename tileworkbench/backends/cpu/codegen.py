"""`tile-opt` -> one-thread layouts (`tile-gpu`) -> LLVM IR through the shared lowering with the host's
hooks -> a grid loop around the kernel -> LLVM's O3 for the host CPU (its SIMD width: the vectorizers
see a whole program's elements as straight-line code) -> host assembly (`asm`)."""

from __future__ import annotations

import ctypes.util
from functools import cache

from llvmlite import ir

from ...errors import CompilationError
from ..llvm.llvm_types import I8, I32, SHARED_PTR
from . import debug

PARAM_SLOT = 8  # every kernel parameter travels in an 8-byte slot of the launch's parameter block


@cache
def binding():
    """llvmlite's binding with the native target ready, and the C math library loaded for the JIT."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libm = ctypes.util.find_library("m")
    if libm:
        llvm.load_library_permanently(libm)
    debug.bind_symbols(llvm)
    return llvm


@cache
def host_machine():
    """The host's target machine: its CPU name and features, so LLVM uses every vector unit it has."""
    return new_host_machine()


def new_host_machine():
    """A target machine of its own, for an execution engine (which takes ownership of it)."""
    llvm = binding()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
        opt=3,
        codemodel="jitdefault",
    )


def chunk_lanes() -> int:
    """Lanes per chunk of a strip-mined program (chunks.py): four of the host's vector registers of
    32-bit elements (AVX2: 32 lanes; measured on Zen 3, 16 to 64 lanes ran the vector add alike,
    1024 spilled)."""
    features = binding().get_host_cpu_features()
    register_bytes = 64 if features.get("avx512f") else 32 if features.get("avx") else 16
    return register_bytes


def grid_function_name(kernel_name: str) -> str:
    return f"{kernel_name}_grid"


def add_grid_loop(module: ir.Module, kernel: ir.Function, n_params: int, smem_bytes: int) -> None:
    """`void <kernel>_grid(ptr params, i32 start, i32 end, i32 gx, i32 gy, i32 gz)`: runs programs
    start..end-1 of a (gx, gy, gz) grid (x fastest), reading the kernel's parameters from 8-byte slots
    of `params`, with one shared-memory buffer on this thread's stack."""
    fn_type = ir.FunctionType(ir.VoidType(), [ir.PointerType(), I32, I32, I32, I32, I32])
    grid = ir.Function(module, fn_type, grid_function_name(kernel.name))
    params, start, end, gx, gy, gz = grid.args
    entry = grid.append_basic_block("entry")
    loop = grid.append_basic_block("loop")
    body = grid.append_basic_block("body")
    done = grid.append_basic_block("done")
    b = ir.IRBuilder(entry)
    values = []
    for i, arg in enumerate(kernel.args[:n_params]):
        slot = b.gep(params, [ir.Constant(I32, i * PARAM_SLOT)], source_etype=I8)
        values.append(b.load(slot, typ=arg.type))
    smem = b.alloca(ir.ArrayType(I8, max(smem_bytes, 16)))
    smem.align = 64
    shared = b.addrspacecast(smem, SHARED_PTR)
    b.branch(loop)
    b.position_at_end(loop)
    pid = b.phi(I32)
    pid.add_incoming(start, entry)
    b.cbranch(b.icmp_signed("<", pid, end), body, done)
    b.position_at_end(body)
    x = b.urem(pid, gx)
    rest = b.udiv(pid, gx)
    y, z = b.urem(rest, gy), b.udiv(rest, gy)
    b.call(kernel, values + [x, y, z, gx, gy, gz, shared])
    pid.add_incoming(b.add(pid, ir.Constant(I32, 1)), body)
    b.branch(loop)
    b.position_at_end(done)
    b.ret_void()


def add_runtime_functions(module: ir.Module) -> None:
    """The compiler-runtime functions LLVM's x86 back end calls for bf16 rounding and double -> half,
    which this process may not have (libgcc's come with GCC 13+): defined in the module itself."""
    from ..llvm.llvm_types import BF16, F16, F32, F64, I16

    to_bf16 = ir.Function(module, ir.FunctionType(BF16, [F32]), "__truncsfbf2")
    b = ir.IRBuilder(to_bf16.append_basic_block("entry"))
    bits = b.bitcast(to_bf16.args[0], I32)
    odd = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    rounded = b.lshr(b.add(bits, b.add(ir.Constant(I32, 0x7FFF), odd)), ir.Constant(I32, 16))
    quiet = b.or_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 0x40))  # NaN stays a NaN
    is_nan = b.fcmp_unordered("uno", to_bf16.args[0], to_bf16.args[0])
    b.ret(b.bitcast(b.trunc(b.select(is_nan, quiet, rounded), I16), BF16))
    for name, result, middle in (("__truncdfbf2", BF16, to_bf16), ("__truncdfhf2", F16, None)):
        fn = ir.Function(module, ir.FunctionType(result, [F64]), name)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        single = b.fptrunc(fn.args[0], F32)  # rounds twice: off by one ulp in rare ties
        b.ret(b.call(middle, [single]) if middle is not None else b.fptrunc(single, F16))


def optimize(module_text: str, kernel_name: str, vectorize: bool = True):
    """Parse, verify and run O3 (with the vectorizers, unless told not to) for the host; the module."""
    llvm = binding()
    # maxnum/minnum may return either zero of +0/-0 (x86's maxps returns its second operand); the
    # GPU's max.f32 and the interpreter order -0 < +0, as IEEE 754-2019's maximumNumber does
    # (llvmlite quotes the names it prints: @"llvm.maxnum.f32")
    for loose, strict in (
        ("llvm.maxnum.", "llvm.maximumnum."),
        ("llvm.minnum.", "llvm.minimumnum."),
    ):
        for at in ("@", '@"'):
            module_text = module_text.replace(at + loose, at + strict)
    try:
        module = llvm.parse_assembly(module_text)
        module.verify()
    except RuntimeError as exc:
        raise CompilationError(
            f"internal: invalid LLVM IR for {kernel_name} (cpu target): {exc}"
        ) from None
    for fn in module.functions:  # CUDA's printf and assert, as host callbacks
        if fn.is_declaration and fn.name in debug.RENAMES:
            fn.name = debug.RENAMES[fn.name]
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = vectorize
    options.slp_vectorization = vectorize
    builder = llvm.create_pass_builder(host_machine(), options)
    builder.getModulePassManager().run(module, builder)
    _check_symbols(module, kernel_name)
    return module


def _check_symbols(module, kernel_name: str) -> None:
    """Every function the kernel still calls must exist in this process (the C math library)."""
    llvm = binding()
    for fn in module.functions:
        if (
            fn.is_declaration
            and not fn.name.startswith("llvm.")
            and llvm.address_of_symbol(fn.name) is None
        ):
            raise CompilationError(
                f"{kernel_name} calls `{fn.name}`, which the cpu target has no host "
                "version of (a libdevice function without a C-library namesake?)"
            )


def emit_object(module) -> bytes:
    """The module as a host object file, which launches load into the JIT (no second codegen)."""
    return host_machine().emit_object(module)


def assembly_of(llvm_text: str) -> str:
    """The host assembly of an optimized module (the `asm` stage)."""
    return host_machine().emit_assembly(binding().parse_assembly(llvm_text))
