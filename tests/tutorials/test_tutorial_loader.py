"""The tutorial loader without Triton's files: the import rewrite, the choice of module-level statements,
and a small tutorial-shaped file of our own loaded and run end to end in the interpreter."""

from __future__ import annotations

import ast
import textwrap

import numpy as np
import pytest


from tutorial_loader import load_tutorial, rewrite_imports, select_statements


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "interpret", True)


def test_rewrite_maps_every_import_form_and_keeps_lines():
    source = textwrap.dedent("""\
        import torch
        import triton
        import triton.language as tl
        from triton.runtime import driver
        from triton.tools.tensor_descriptor import TensorDescriptor
        import triton.tools.tensor_descriptor
        import os, triton as tt
        text = "import triton"
        def f():
            import triton.language as tl2
            from triton import cdiv
    """)
    rewritten = rewrite_imports(source)
    assert rewritten.splitlines() == [
        "import torch",
        "import tileworkbench as triton",
        "import tileworkbench.language as tl",
        "from tileworkbench.runtime import driver",
        "from tileworkbench.tools.tensor_descriptor import TensorDescriptor",
        "import tileworkbench.tools.tensor_descriptor; import tileworkbench as triton",
        "import os; import tileworkbench as tt",
        'text = "import triton"',
        "def f():",
        "    import tileworkbench.language as tl2",
        "    from tileworkbench import cdiv",
    ]


def test_rewritten_imports_resolve():
    namespace: dict = {}
    source = rewrite_imports(
        "import triton\nimport triton.language as tl\n"
        "from triton.tools.tensor_descriptor import TensorDescriptor\n"
    )
    exec(source, namespace)  # noqa: S102
    import tileworkbench

    assert namespace["triton"] is tileworkbench
    assert namespace["tl"] is tileworkbench.language
    assert namespace["TensorDescriptor"].__module__ == "tileworkbench.tools.tensor_descriptor"


def test_modules_tileworkbench_lacks_are_stand_ins_that_name_themselves():
    source = rewrite_imports(
        "import triton.profiler as proton\nfrom triton._C.libtriton import nvidia\n"
    )
    assert source.splitlines() == [
        "proton = _unavailable_module('triton.profiler')",
        "nvidia = _foreign_import('triton._C.libtriton', 'nvidia')",
    ]
    from tutorial_loader import _foreign_import, _UnavailableModule

    namespace = {"_unavailable_module": _UnavailableModule, "_foreign_import": _foreign_import}
    exec(source, namespace)  # noqa: S102
    with pytest.raises(NotImplementedError, match="triton.profiler.scope: .* not part of"):
        namespace["proton"].scope("matmul")


def _kept(source: str) -> list[str]:
    tree = ast.parse(textwrap.dedent(source))
    return [ast.unparse(node).splitlines()[0] for node in select_statements(tree)]


def test_selection_drops_demos_and_benchmarks_and_keeps_what_wrappers_use():
    kept = _kept("""\
        import numpy as np
        import tabulate
        DEVICE = "cpu"
        SCALE = 3
        helper_value = 7
        unused = 8
        a = np.ones(4)
        def wrapper(a):
            b = np.asarray(a) * helper_value
            return b
        class Thing:
            pass
        print(tabulate.tabulate(wrapper(a)))
        result = wrapper(a)
        @perf_report(configs)
        def bench(n):
            return n
        bench.run(print_data=True)
        if __name__ == "__main__":
            wrapper(a)
    """)
    assert kept == [
        "import numpy as np",
        "DEVICE = 'cpu'",
        "SCALE = 3",
        "helper_value = 7",
        "def wrapper(a):",
        "class Thing:",
    ]


TUTORIAL = '''\
"""A tutorial-shaped file written for this test (not Triton's)."""
import numpy as np
import triton
import triton.language as tl

TARGET = triton.runtime.driver.active.get_current_target()


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2, num_ctas=1),
                          triton.Config({"BLOCK": 128, "matrix_instr_nonkdim": 16})], key=["n"])
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * factor, mask=offs < n)


def scale(x, factor):
    out = np.full_like(x, np.nan)
    grid = lambda meta: (triton.cdiv(x.size, meta["BLOCK"]),)
    scale_kernel[grid](x, out, x.size, factor)
    return out


x = np.arange(5.0, dtype=np.float32)
print(scale(x, 2.0))
raise SystemExit("module-level demo code must not run")
'''


def test_a_tutorial_shaped_file_loads_and_its_wrapper_runs(tmp_path):
    path = tmp_path / "00-scale.py"
    path.write_text(TUTORIAL)
    module = load_tutorial(path)
    assert module.TARGET.backend == "interpreter"
    assert not hasattr(module, "x")  # the demo lines were left out
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    out = module.scale(x, 2.5)
    np.testing.assert_allclose(out, x.astype(np.float64) * 2.5, rtol=1e-6)
    assert module.scale_kernel.best_config is not None
