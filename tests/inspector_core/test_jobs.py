"""The window's jobs without Qt: each drained on this thread, progress first, result last."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from inspector.check import pipeline
from inspector.check.results import StoresOutOfBounds
from inspector.jobs import tasks
from inspector.model.analysis import Analysis, analyse
from kernels.sandbox.usercode import parse_kernel_spec
from oracle import compare as cmp
from oracle import fixtures, scalar, tiled

ROOT = Path(__file__).resolve().parents[2]


def _drain(job):
    return list(job(threading.Event()))


def _progress_then_result(items: list) -> object:
    *progress, result = items
    assert progress
    assert all(tasks.is_progress(p) for p in progress)
    assert [p[0] for p in progress] == sorted(p[0] for p in progress)
    assert not tasks.is_progress(result)
    return result


def test_check_job_directly_yields_progress_then_result() -> None:
    problem = fixtures.get("hand_checkable").build()
    items = _drain(tasks.check_job(problem, pipeline.CheckConfig(run_kernel=False)))
    *progress, result = items
    assert all(isinstance(p, tuple) and len(p) == 3 for p in progress)
    assert [p[0] for p in progress] == sorted(p[0] for p in progress)
    assert isinstance(result, pipeline.CheckResult)
    assert result.passed


@pytest.mark.parametrize("mutant", [None, "missing_weight"])
def test_analysis_job_is_the_oracles_reference_and_model(mutant) -> None:
    problem = fixtures.get("padded_row_stride").build()
    analysis = _progress_then_result(_drain(tasks.analysis_job(problem, mutant)))
    assert isinstance(analysis, Analysis)
    assert (analysis.problem, analysis.mutant, analysis.image) == (problem, mutant, None)
    np.testing.assert_array_equal(analysis.reference.y, scalar.reference(problem).y)
    np.testing.assert_array_equal(analysis.model.y, tiled.model(problem, mutant=mutant).y)
    for mine, expected in zip(
        analysis.errors, cmp.max_errors(analysis.model.y, analysis.reference.y), strict=True
    ):
        np.testing.assert_array_equal(mine, expected)
    # The in-place path (small problems, on the GUI thread) computes the same.
    here = analyse(problem, mutant)
    np.testing.assert_array_equal(here.model.rrms, analysis.model.rrms)
    assert here.image is None


def test_analysis_job_draws_the_grid_image_when_given_the_colour_table() -> None:
    from inspector.model import viewdata

    problem = fixtures.get("padded_row_stride").build()
    lut = np.stack([np.arange(256, dtype=np.uint8)] * 4, axis=1)
    items = _drain(tasks.analysis_job(problem, None, lut))
    analysis = _progress_then_result(items)
    assert [p[2] for p in items[:-1]] == ["scalar reference", "tiled lane model", "lane grid image"]
    expected = viewdata.lane_image(analysis.model, lut)
    np.testing.assert_array_equal(analysis.image.rgba, expected.rgba)


def test_kernel_job_builds_the_one_kernel_run() -> None:
    """Run kernel's result is the check's ``KernelRun``: the same fields, the same judgement."""
    if not tasks.kernel_environment()["available"]:
        pytest.skip("kernel floor unavailable")
    problem = fixtures.get("padded_row_stride").build()
    reference = scalar.reference(problem)
    run = _progress_then_result(_drain(tasks.kernel_job(problem, None, reference.y)))
    assert isinstance(run, pipeline.KernelRun)
    assert run.problem is problem
    assert run.mutant is None
    assert run.comparison.passed
    assert run.torch_comparison.passed
    assert run.stores == StoresOutOfBounds()
    np.testing.assert_array_equal(run.row_max_abs, cmp.max_errors(run.y, reference.y)[0])
    mutant = _drain(tasks.kernel_job(problem, "unmasked_store", reference.y))[-1]
    assert mutant.mutant == "unmasked_store"
    assert len(mutant.stores.output) == len(mutant.stores.buffer) > 0
    # Output addresses (row * row_stride + lane), each outside the valid elements.
    addresses = np.asarray(mutant.stores.output)
    rows, lanes = addresses // problem.row_stride, addresses % problem.row_stride
    assert ((addresses < 0) | (rows >= problem.rows) | (lanes >= problem.width)).all()


def test_bench_job_drives_the_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernels import bench

    rows = [
        {"set": "llm", "rows": 4096, "width": width, "dtype": "bfloat16", "impl": impl,
         "status": "ok", "gbps": gbps, "median_us": 10.0}
        for width in (1024, 4096)
        for impl, gbps in (("copy", 4000.0), ("ours", 3600.0))
    ]  # fmt: skip

    def fake_iter(config):
        for i, row in enumerate(rows):
            yield i + 1, len(rows), row

    monkeypatch.setattr(bench, "iter_benchmark", fake_iter)
    items = list(tasks.bench_job("llm", ["bfloat16"])(threading.Event()))
    result = items[-1]
    assert result["dtypes"] == ["bfloat16"]
    assert len(result["rows"]) == len(rows)
    assert all(isinstance(i, tuple) for i in items[:-1])


def test_a_failure_reads_as_one_line() -> None:
    assert tasks.failure_text(tasks.Cancelled()) == "cancelled"
    assert tasks.failure_text(ValueError("boom")) == "ValueError: boom"
    assert tasks.is_progress((0, 2, "step"))
    assert not tasks.is_progress((0, 2, 3))
    assert not tasks.is_progress(("0", 2, "step"))


@pytest.mark.parametrize(
    "module",
    [
        "inspector.jobs.tasks",
        "inspector.model.state",
        "inspector.check.report",
        "inspector.model.viewdata",
    ],
)
def test_the_windows_core_imports_no_qt(module: str) -> None:
    code = f"import sys; import {module}; print(sorted(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = {name.strip("'\" ").split(".")[0] for name in done.stdout.strip("[]\n").split(",")}
    assert not loaded & {"PySide6", "pyqtgraph"}, f"{module} imports Qt"


def test_load_kernel_job_cancel_ends_a_hanging_import(tmp_path) -> None:
    path = tmp_path / "slow.py"
    path.write_text("import time\n\ntime.sleep(600)\n")
    cancel = threading.Event()
    spec = parse_kernel_spec(f"{path}:rms_norm")
    steps = tasks.load_kernel_job(spec)(cancel)
    assert next(steps) == (0, 1, f"loading {spec.path}:rms_norm in a child process")
    timer = threading.Timer(0.5, cancel.set)
    timer.start()
    try:
        with pytest.raises(tasks.Cancelled):
            next(steps)
    finally:
        timer.cancel()
