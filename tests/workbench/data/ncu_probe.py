"""Source of data/ncu_* (issue 22, H100, 2026-12-06): their line numbers are this file's; see test_profile_fixtures."""
import json, os, sys, traceback
sys.path.insert(0, os.getcwd())
import torch
import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.runtime.record import record_launches

OUT = os.environ.get("PROBE_OUT", "/tmp/probe_out")
os.makedirs(OUT, exist_ok=True)


@tw.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@tw.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    y = num / den
    tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@tw.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16))


def case_add():
    n = 1 << 24
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    add_kernel[(tw.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    return float(((out - (x + y)).abs().max()).item())


def case_softmax(warps):
    rows, cols = 2048, 16384
    x = torch.randn(rows, cols, device="cuda")
    out = torch.full_like(x, float("nan"))
    softmax_kernel[(rows,)](out, x, cols, cols, cols, BLOCK=cols, num_warps=warps)
    torch.cuda.synchronize()
    return float(((out - torch.softmax(x, 1)).abs().max()).item())


def case_matmul(transposed_b, warps=4):
    m = n = k = 2048
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    if transposed_b:  # B stored N-major: its loads walk memory with stride K along n
        bt = torch.randn(n, k, device="cuda", dtype=torch.float16)
        b = bt.t()
    else:
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    matmul_kernel[(m // 128, n // 128)](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                                        b.stride(1), c.stride(0), c.stride(1), BM=128, BN=128,
                                        BK=32, num_warps=warps)
    torch.cuda.synchronize()
    ref = (a.float() @ b.float())
    return float(((c.float() - ref).abs().max() / ref.abs().max()).item())


CASES = [("add", case_add, ()), ("softmax_w1", case_softmax, (1,)),
         ("softmax_w4", case_softmax, (4,)), ("softmax_w16", case_softmax, (16,)),
         ("matmul_w4", case_matmul, (False, 4)), ("matmul_w8", case_matmul, (False, 8)),
         ("matmul_bt_w8", case_matmul, (True, 8))]

manifest = []
for name, fn, args in CASES:
    entry = {"case": name}
    try:
        with record_launches() as launches:
            entry["err"] = fn(*args)
        rec = launches[-1]
        comp = rec.compiled
        entry.update(kernel=comp.name, grid=list(rec.grid), num_warps=comp.metadata.num_warps,
                     target=comp.target, regs=comp.n_regs, spills=comp.n_spills,
                     source_file=comp.source_file, first_line=comp.source_first_line)
        cub = comp.launch_cubin or comp.cubin
        if cub:
            open(f"{OUT}/{name}.cubin", "wb").write(cub)
        open(f"{OUT}/{name}.ptx", "w").write(comp.asm["ptx"])
        try:
            open(f"{OUT}/{name}.sass", "w").write(comp.asm["sass"])
        except Exception as exc:
            entry["sass_error"] = repr(exc)
    except Exception:
        entry["error"] = traceback.format_exc()
    manifest.append(entry)
    print(json.dumps(entry), flush=True)
json.dump(manifest, open(f"{OUT}/manifest.json", "w"), indent=1)
