"""kernels.interpreter_calls: one patch of triton.language per interpreter launch. The kernel
computes every bit it computed with the interpreter's own per-call patch, on every layout, dtype
and mutant tried here; a helper whose module holds a language module its kernel does not is
still patched."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from kernel_cases import DTYPES, case_inputs

import kernels
from kernels import interpreter_calls
from kernels.mode import INTERPRETER

pytestmark = pytest.mark.skipif(kernels.MODE != INTERPRETER, reason="interpreter mode only")


def _outputs(case: str, dtype: str, path: str, mutant: str | None) -> tuple[bytes, int]:
    x, weight, row_stride, eps = case_inputs(case, dtype)
    run = kernels.run_checked(
        x, weight, eps=eps, dtype=dtype, row_stride=row_stride, mutant=mutant, path=path
    )
    return np.ascontiguousarray(run.y).tobytes(), len(run.oob_writes)


@pytest.fixture
def stock_interpreter():
    """The interpreter's own _patch_lang for the test's body, the wrapper back after."""
    interpreter_calls.uninstall()
    try:
        yield
    finally:
        assert interpreter_calls.install()


@pytest.mark.parametrize("path", kernels.KERNEL_PATHS)
def test_every_bit_is_what_the_interpreters_own_patch_computes(path: str) -> None:
    tried = [
        (case, dtype, mutant)
        for case in ("random_rows_width_70", "tiny_squares", "asymmetric_weights_padded_stride")
        for dtype in DTYPES
        for mutant in (None, "missing_weight", "unmasked_store")
    ]
    before = interpreter_calls.skipped
    wrapped = [_outputs(case, dtype, path, mutant) for case, dtype, mutant in tried]
    skipped = interpreter_calls.skipped - before
    interpreter_calls.uninstall()
    try:
        stock = [_outputs(case, dtype, path, mutant) for case, dtype, mutant in tried]
    finally:
        assert interpreter_calls.install()
    assert wrapped == stock
    # The kernels call helpers: the wrapper answered those calls without a patch.
    assert skipped > len(tried)


def test_without_the_wrapper_no_call_is_skipped(stock_interpreter) -> None:
    before = interpreter_calls.skipped
    _outputs("random_rows_width_70", "float32", "column_loop", None)
    assert interpreter_calls.skipped == before


def _module(folder: Path, name: str, source: str):
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_a_helper_with_a_language_module_its_kernel_lacks_is_patched(tmp_path, monkeypatch):
    # The kernel's module holds only ``tl``; the helper's only ``triton.language.core``, which
    # the launch did not patch: its call must patch (a skip would leave core's builtins raw).
    monkeypatch.syspath_prepend(str(tmp_path))
    _module(
        tmp_path,
        "helper_with_core",
        """
        import triton
        import triton.language.core as core

        @triton.jit
        def twice(v):
            return core.full(v.shape, 2.0, core.float32) * v
        """,
    )
    kernel = _module(
        tmp_path,
        "kernel_with_tl",
        """
        import triton
        import triton.language as tl
        from helper_with_core import twice

        @triton.jit
        def double(x_ptr, y_ptr, N: tl.constexpr):
            cols = tl.arange(0, N)
            tl.store(y_ptr + cols, twice(tl.load(x_ptr + cols)))
        """,
    )
    x = torch.arange(8, dtype=torch.float32)
    y = torch.zeros(8, dtype=torch.float32)
    before = interpreter_calls.skipped
    kernel.double[(1,)](x, y, N=8)
    assert torch.equal(y, 2 * x)
    assert interpreter_calls.skipped == before
    # The next launch starts from nothing patched: the record ended with the launch.
    y.zero_()
    kernel.double[(1,)](x, y, N=8)
    assert torch.equal(y, 2 * x)


def test_install_is_idempotent_and_declines_an_interpreter_without_the_names(monkeypatch):
    from triton.runtime import interpreter

    wrapper = interpreter._patch_lang
    assert interpreter_calls.install()
    assert interpreter._patch_lang is wrapper
    monkeypatch.delattr(interpreter, "_patch_lang")
    assert not interpreter_calls.install()
