"""The interpreter's kernel tests run on every target: hand-built IR goes through `interp_kernels.run`,
which uses the test's `target` (tests/conftest.py); tests about the interpreter itself are marked
`only_on("interpreter")`."""

from __future__ import annotations

import pytest
from interp_kernels import use_target


@pytest.fixture(autouse=True)
def on_every_target(target):
    use_target(target)
    yield target
    use_target(None)
