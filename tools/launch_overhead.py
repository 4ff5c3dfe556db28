"""The Python cost of a warm launch, measured without a GPU: the CUDA kernel is a stand-in whose driver
call and stream query do nothing, and the array is a stand-in with torch's `is_cuda`/`data_ptr()`/`dtype`.
What remains is our launch path (binder, key lookup, grid check, parameter packing).

    python tools/launch_overhead.py        # us per launch
    python tools/launch_overhead.py -p     # and a cProfile of it
"""
import sys, time, types
ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(ROOT / "bench"))
import torch
import tileworkbench.runtime.jit as jit
import tileworkbench.runtime.arguments as arguments
import tileworkbench.runtime.launcher as launcher
from tileworkbench.config import config

class FakeTensor:
    """Stands in for a CUDA torch tensor: dtype, is_cuda, data_ptr()."""
    def __init__(self, dtype, ptr):
        self.dtype = dtype; self.is_cuda = True; self._p = ptr
    def data_ptr(self): return self._p

jit._POINTER_OF[FakeTensor] = jit._torch_pointer
orig_init = arguments.ParamBuffer.__init__
def pb_init(self, *a, **k):
    orig_init(self, *a, **k); self._torch_type = FakeTensor
arguments.ParamBuffer.__init__ = pb_init
import tileworkbench.runtime.binder as binder
binder.SPECIALIZE[FakeTensor] = binder._torch
if hasattr(arguments, "POINTER_READERS"):
    arguments.POINTER_READERS[FakeTensor] = lambda v: v.data_ptr()

class FakeKernel(launcher.CudaKernel):
    def __init__(self, ptx, kernel_name, *, num_warps, shared, cubin=None, param_kinds=None, param_names=None):
        self.name = kernel_name; self.num_warps = num_warps; self.shared = shared; self.device_id = 0
        self._max_grid = launcher.DEFAULT_MAX_GRID; self._function_address = 0
        self.num_regs = 10; self._threads = 32 * num_warps; self._block = (self._threads, 1, 1)
        self._check_current = False
        self._params = arguments.ParamBuffer(param_kinds, param_names, kernel_name, None)
        self._launch_kernel = lambda *a: None
        s = types.SimpleNamespace(ptr=0)
        self._current_stream = lambda: s
launcher.CudaKernel = FakeKernel
jit._TARGET[:] = ["cuda"]
config.interpret = False
import tileworkbench.runtime.compiler as compiler
orig_compile = compiler.compile
jit.compile = lambda *a, **k: orig_compile(*a, **{**k, "target": "sm_90"})
import kernels
OURS = kernels.load("tileworkbench")
x = FakeTensor(torch.float32, 1 << 20)
fn = lambda: OURS.tiny_kernel[(1,)](x, 128, BLOCK=128)
fn()
N = 200000
best = []
for _ in range(7):
    t = time.perf_counter()
    for _ in range(N):
        fn()
    best.append((time.perf_counter() - t) / N * 1e6)
print("us/launch (python, stubbed driver): median %.3f min %.3f" % (sorted(best)[3], min(best)))
if "-p" in sys.argv:
    import cProfile, pstats
    cProfile.run("for _ in range(100000): fn()", "/tmp/prof")
    pstats.Stats("/tmp/prof").sort_stats("tottime").print_stats(15)
