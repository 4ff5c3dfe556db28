"""Where the matmul's time goes: our mma.sync kernel beside Triton's (on mma.sync with DISABLE_MMA_V3=1,
and on its default wgmma path) and cuBLAS, at the bench's 4096^3 fp16 shape (bench/kernels.py).

    PYTHONPATH=. python bench/profile_matmul.py [--out DIR]    # on the GPU machine; DIR defaults to $OUT

For each of our and Triton's kernels: registers, spills, shared memory, the SASS instruction mix of the
whole kernel and of its hot loop (the backward branch around the most HMMA/HGMMA: HMMA vs HGMMA, LDSM,
LDGSTS, LDS/STS, BAR, address arithmetic), and the time (do_bench). Then, where `ncu` exists, one launch
of each contender under `ncu --clock-control none` with the SpeedOfLight, WarpStateStats,
SchedulerStats, Occupancy and LaunchStats sections (stall reasons included). Writes three files into
DIR: `s6tc_profile.json` (everything), `s6tc_profile.txt` (the compact summary, also printed) and
`s6tc_profile_raw.tar.gz` (SASS of each kernel, ncu's CSV pages). Ours is compiled for "sm_90":
mma.sync, whatever the H200's default target becomes.
"""

from __future__ import annotations

import argparse
import collections
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

os.environ["TILEWORKBENCH_TARGET"] = "sm_90"
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

SIZE = 4096
# (name, module kind, (BM, BN, BK, num_warps, num_stages)): ours at its bench-best config, Triton's
# mma.sync at the same config, Triton's wgmma at its bench-best (session 5's tensor_cores.py)
CONTENDERS = [
    ("ours", "tileworkbench", (128, 128, 32, 4, 4)),
    ("ours_bk64", "tileworkbench", (128, 128, 64, 4, 3)),
    ("triton_mma_v2", "triton-v2", (128, 128, 32, 4, 4)),
    ("triton_wgmma", "triton", (128, 128, 64, 8, 3)),
]
NCU_SECTIONS = ["SpeedOfLight", "WarpStateStats", "SchedulerStats", "Occupancy", "LaunchStats",
                "ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables"]
# raw-page metrics kept beside the sections: tensor-pipe activity and shared-memory bank conflicts
RAW_KEEP = re.compile(r"pipe_tensor|bank_conflict|shared_op_ld|shared_op_st|ldsm|inst_executed\.sum$")
# the SASS opcodes worth counting on their own; others are grouped by kind in `_kind`
KINDS = {
    "HMMA": "mma", "HGMMA": "mma", "IMMA": "mma", "LDSM": "ldmatrix", "LDGSTS": "cp.async",
    "LDGDEPBAR": "cp.async", "DEPBAR": "cp.async", "LDS": "shared", "STS": "shared", "LDG": "global",
    "STG": "global", "BAR": "barrier", "WARPSYNC": "barrier", "WARPGROUP": "wgmma sync",
    "UTMALDG": "tma", "SYNCS": "mbarrier", "IMAD": "int", "IADD3": "int", "LEA": "int", "LOP3": "int",
    "SHF": "int", "IMNMX": "int", "ISETP": "int", "SEL": "int", "MOV": "move", "UMOV": "uniform",
    "ULDC": "uniform", "R2UR": "uniform", "FADD": "float", "FMUL": "float", "FFMA": "float",
    "F2FP": "convert", "BRA": "branch", "EXIT": "branch", "NOP": "nop",
}


# -- the kernels ------------------------------------------------------------------------------------


def _modules():
    import kernels

    return {"tileworkbench": kernels.load("tileworkbench"), "triton": kernels.load("triton"),
            "triton-v2": kernels.load("triton")}  # a module of its own: Triton's in-memory cache


class _MmaV2:
    """DISABLE_MMA_V3=1 while Triton compiles the `triton-v2` contender (read at compile time, and part
    of Triton's on-disk cache key)."""

    def __init__(self, kind: str):
        self.on = kind == "triton-v2"

    def __enter__(self):
        if self.on:
            os.environ["DISABLE_MMA_V3"] = "1"

    def __exit__(self, *exc):
        os.environ.pop("DISABLE_MMA_V3", None)


def _inputs():
    import torch

    torch.manual_seed(0)
    a = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    b = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    c = torch.full((SIZE, SIZE), float("nan"), device="cuda", dtype=torch.float16)
    return a, b, c


def _launch(module, kind, config, a, b, c):
    bm, bn, bk, warps, stages = config
    grid = ((SIZE // bm) * (SIZE // bn),)
    with _MmaV2(kind):
        return module.matmul_kernel[grid](a, b, c, SIZE, SIZE, SIZE, a.stride(0), a.stride(1),
                                          b.stride(0), b.stride(1), c.stride(0), c.stride(1), BM=bm,
                                          BN=bn, BK=bk, GROUP_M=8, num_warps=warps, num_stages=stages)


# -- SASS -------------------------------------------------------------------------------------------


def _disassembler() -> list[str] | None:
    """cuobjdump -sass (or nvdisasm) on PATH, else the one bundled with Triton."""
    for tool, args in (("cuobjdump", ["-sass"]), ("nvdisasm", ["-c"])):
        path = shutil.which(tool)
        if path is None:
            try:
                import triton

                bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / tool
                path = str(bundled) if bundled.exists() else None
            except ImportError:
                path = None
        if path:
            return [path, *args]
    return None


def sass_of(cubin: bytes) -> str:
    tool = _disassembler()
    if tool is None or not cubin:
        return ""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        done = subprocess.run([*tool, f.name], capture_output=True, text=True)
    return done.stdout


_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*?);", re.I)
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_TARGET = re.compile(r"(\.L_x_\d+)\b|0x([0-9a-f]+)")


def parse_sass(text: str) -> list[tuple[int, str, str, int | None]]:
    """(address, opcode with modifiers, operands, branch target address or None) per instruction, from
    nvdisasm's (labels) or cuobjdump's (addresses) listing."""
    out, labels, pending = [], {}, []
    for line in text.splitlines():
        label = _LABEL.match(line)
        if label:
            pending.append(label.group(1))
            continue
        m = _INSTRUCTION.search(line)
        if not m:
            continue
        address = int(m.group(1), 16)
        for name in pending:
            labels[name] = address
        pending = []
        out.append((address, m.group(3), m.group(4).strip()))
    resolved = []
    for address, op, operands in out:
        target = None
        if op.startswith("BRA"):
            t = _TARGET.search(operands)
            if t:
                target = labels.get(t.group(1)) if t.group(1) else int(t.group(2), 16)
        resolved.append((address, op, operands, target))
    return resolved


def _kind(opcode: str) -> str:
    base = opcode.split(".")[0]
    if base in KINDS:
        return KINDS[base]
    return "uniform" if base.startswith("U") else "int" if base in ("VIADD", "IABS", "PLOP3") else "other"


def mix(instructions) -> dict:
    """Counts by base opcode, by kind, and the mma shapes (HMMA.16816.F32, HGMMA.64x128x16...)."""
    base = collections.Counter(op.split(".")[0] for _, op, _, _ in instructions)
    kinds = collections.Counter(_kind(op) for _, op, _, _ in instructions)
    mma = collections.Counter(op for _, op, _, _ in instructions if op.split(".")[0] in
                              ("HMMA", "HGMMA", "IMMA"))
    return {"total": len(instructions), "by_kind": dict(kinds.most_common()),
            "by_opcode": dict(base.most_common()), "mma_shapes": dict(mma)}


def hot_loop(instructions) -> tuple[int, int] | None:
    """(first, last) index of the backward-branch range that holds the most mma instructions."""
    index = {a: i for i, (a, _, _, _) in enumerate(instructions)}
    best, best_count = None, 0
    for i, (address, _, _, target) in enumerate(instructions):
        if target is None or target > address or target not in index:
            continue
        first = index[target]
        count = sum(1 for _, o, _, _ in instructions[first:i + 1] if _kind(o) == "mma")
        if count > best_count:
            best, best_count = (first, i), count
    return best


def sass_summary(text: str) -> dict:
    instructions = parse_sass(text)
    summary = {"kernel": mix(instructions)}
    loop = hot_loop(instructions)
    if loop:
        body = instructions[loop[0]:loop[1] + 1]
        summary["hot_loop"] = {"first_address": hex(body[0][0]), **mix(body)}
    return summary


# -- resources and time -----------------------------------------------------------------------------


def resources(name: str, compiled) -> dict:
    if name.startswith("ours"):
        md = compiled.metadata
        return {"registers": md.n_regs, "spills": md.n_spills, "shared": md.shared,
                "ptxas": (md.resources or {}).get("ptxas_output", "")[-400:]}
    md = compiled.metadata
    return {"registers": compiled.n_regs, "spills": compiled.n_spills,
            "shared": getattr(md, "shared", None)}


def cubin_of(name: str, compiled) -> bytes:
    return compiled.cubin if name.startswith("ours") else compiled.asm["cubin"]


def measure(out: Path) -> tuple[dict, dict]:
    import torch
    import triton.testing

    modules = _modules()
    a, b, c = _inputs()
    want = a[:512].double() @ b.double()
    report, sass_texts = {}, {}
    for name, kind, config in CONTENDERS:
        compiled = _launch(modules[kind], kind, config, a, b, c)
        torch.cuda.synchronize()
        err = ((c[:512].double() - want).norm() / want.norm()).item()
        with _MmaV2(kind):
            ms = triton.testing.do_bench(lambda: _launch(modules[kind], kind, config, a, b, c),
                                         warmup=10, rep=50, return_mode="median")
        sass = sass_of(cubin_of(name, compiled))
        sass_texts[name] = sass
        report[name] = {"config": list(config), "ms": ms, "TFLOPs": 2 * SIZE**3 / ms / 1e9,
                        "rel_err": err, **resources(name, compiled), "sass": sass_summary(sass)}
        c.fill_(float("nan"))
    ms = triton.testing.do_bench(lambda: torch.matmul(a, b, out=c), warmup=10, rep=50,
                                 return_mode="median")
    report["cublas"] = {"ms": ms, "TFLOPs": 2 * SIZE**3 / ms / 1e9}
    return report, sass_texts


# -- ncu ----------------------------------------------------------------------------------------------


def once() -> None:
    """One launch of each contender and of cuBLAS, in CONTENDERS order (the ncu child)."""
    import torch

    modules = _modules()
    a, b, c = _inputs()
    for name, kind, config in CONTENDERS:
        _launch(modules[kind], kind, config, a, b, c)
        torch.cuda.synchronize()
    torch.matmul(a, b, out=c)
    torch.cuda.synchronize()


def _ncu_tool() -> str | None:
    for candidate in (shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if candidate and Path(candidate).exists():
            return candidate
    found = sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu")) if Path("/opt/nvidia").exists() else []
    return str(found[-1]) if found else None


def run_ncu(work: Path) -> dict:
    ncu = _ncu_tool()
    if ncu is None:
        return {"error": "ncu not found"}
    rep = work / "matmul.ncu-rep"
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "-f", "-o", str(rep.with_suffix("")),
           "-k", "regex:matmul_kernel|gemm|nvjet|xmma|cutlass|sm90"]
    listed = subprocess.run([ncu, "--list-sections"], capture_output=True, text=True, timeout=60).stdout
    for section in NCU_SECTIONS:  # an unknown section name would fail the whole run: ask first
        if not listed or re.search(rf"\b{section}\b", listed):
            cmd += ["--section", section]
    cmd += [sys.executable, __file__, "--once"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=400,
                          env=dict(os.environ, PYTHONPATH=str(HERE.parent)))
    result = {"command": " ".join(cmd), "seconds": time.perf_counter() - start,
              "returncode": done.returncode, "log_tail": (done.stdout + done.stderr)[-1500:]}
    if not rep.exists():
        result["error"] = "ncu wrote no report"
        return result
    pages = {}
    for page, extra in (("details", ["--print-details", "all"]), ("details", []), ("raw", [])):
        if page in pages:
            continue
        shown = subprocess.run([ncu, "--import", str(rep), "--csv", "--page", page, *extra],
                               capture_output=True, text=True, timeout=120)
        if shown.returncode == 0 and shown.stdout.strip():
            pages[page] = shown.stdout
            (work / f"ncu_{page}.csv").write_text(shown.stdout)
    result["kernels"] = summarize_ncu(pages)
    return result


def _rows(text: str) -> list[dict]:
    lines = [line for line in text.splitlines() if line.startswith('"')]
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


def summarize_ncu(pages: dict) -> list[dict]:
    """Per profiled launch: its label (our contenders in launch order, then cuBLAS), name, and the
    section metrics by name; from the raw page, every stall reason (warps per issued instruction)."""
    launches: dict[str, dict] = {}
    for row in _rows(pages.get("details", "")):
        entry = launches.setdefault(row["ID"], {"name": row["Kernel Name"][:80], "metrics": {}})
        key = f"{row['Section Name']}: {row['Metric Name']}"
        unit = row.get("Metric Unit") or ""
        entry["metrics"][key] = f"{row['Metric Value']} {unit}".strip()
    raw = _rows(pages.get("raw", ""))
    for row in raw:
        entry = launches.get(row.get("ID"))
        if entry is None:
            continue
        stalls = {}
        for column, value in row.items():
            m = re.match(r"smsp__average_warps?_issue_stalled_(\w+?)_per_issue_active\.ratio$", column or "")
            if m:
                try:
                    stalls[m.group(1)] = round(float(value), 3)
                except (TypeError, ValueError):
                    pass
        entry["stalls_per_issue"] = dict(sorted(stalls.items(), key=lambda kv: -kv[1]))
        entry["raw"] = {k: v for k, v in row.items() if k and RAW_KEEP.search(k)}
    labels = iter([name for name, _, _ in CONTENDERS])  # our and Triton's launches, in order
    out = []
    for _, entry in sorted(launches.items(), key=lambda kv: int(kv[0])):
        entry["label"] = next(labels, "?") if "matmul_kernel" in entry["name"] else "cublas"
        out.append(entry)
    return out


# -- the report ----------------------------------------------------------------------------------------


KEY_METRICS = ("Duration", "Compute (SM) Throughput", "Memory Throughput", "Registers Per Thread",
               "Achieved Occupancy", "Issue Slots Busy", "No Eligible", "Warp Cycles Per Issued Instruction",
               "Eligible Warps Per Scheduler", "Dynamic Shared Memory Per Block")


def text_summary(report: dict, ncu: dict) -> str:
    lines = [f"matmul fp16 {SIZE}^3 on {report.get('device', '?')}"]
    for name, row in report["kernels"].items():
        if name == "cublas":
            lines.append(f"cublas: {row['TFLOPs']:.0f} TFLOP/s ({row['ms']:.4f} ms)")
            continue
        lines.append(f"{name} {row['config']}: {row['TFLOPs']:.0f} TFLOP/s ({row['ms']:.4f} ms), "
                     f"err {row['rel_err']:.1e}, {row['registers']} regs, {row['spills']} spills, "
                     f"{row['shared']} B shared")
        for part in ("kernel", "hot_loop"):
            m = row["sass"].get(part)
            if m:
                top = ", ".join(f"{k} {v}" for k, v in list(m["by_opcode"].items())[:14])
                lines.append(f"  SASS {part}: {m['total']} instr; mma {m['mma_shapes']}; {top}")
    for entry in ncu.get("kernels", []):
        metrics = {k.split(": ", 1)[1]: v for k, v in entry["metrics"].items()}
        shown = ", ".join(f"{k} {metrics[k]}" for k in KEY_METRICS if k in metrics)
        lines.append(f"ncu {entry['label']} ({entry['name'][:40]}): {shown}")
        stalls = entry.get("stalls_per_issue")
        if stalls:
            lines.append("  stalls/issue: " + ", ".join(f"{k} {v}" for k, v in list(stalls.items())[:8]))
        raw = entry.get("raw") or {}
        if raw:
            lines.append("  " + ", ".join(f"{k} {v}" for k, v in sorted(raw.items())[:12]))
    if "error" in ncu:
        lines.append(f"ncu: {ncu['error']} {ncu.get('log_tail', '')[-300:]}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "/tmp/profile_matmul"))
    parser.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-ncu", action="store_true")
    args = parser.parse_args()
    if args.once:
        return once()
    import torch

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kernels_report, sass_texts = measure(out)
    report = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "device": torch.cuda.get_device_name(), "kernels": kernels_report}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, text in sass_texts.items():
            (work / f"{name}.sass").write_text(text)
        ncu = {"error": "skipped (--no-ncu)"} if args.no_ncu else run_ncu(work)
        report["ncu"] = ncu
        with tarfile.open(out / "s6tc_profile_raw.tar.gz", "w:gz") as tar:
            for path in sorted(work.iterdir()):
                if path.suffix in (".sass", ".csv"):
                    tar.add(path, arcname=path.name)
    text = text_summary(report, ncu)
    (out / "s6tc_profile.json").write_text(json.dumps(report, indent=1))
    (out / "s6tc_profile.txt").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
