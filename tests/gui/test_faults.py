"""Worker faults injected through the real window and its real QThread worker.

Each test first runs a model-only check (the "earlier results"), then injects one fault: a CUDA
out-of-memory error inside the kernel job, a compile error, an exception in the middle of a
check, and a cancel in the middle of a benchmark. Afterwards the error is shown, the window is
usable (Run enabled, another run succeeds), the earlier results are still there, and the
``_dangling_qthreads`` fixture (tests/gui/conftest.py) fails the test if a thread is left.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch

from inspector.check import pipeline
from inspector.jobs import tasks

# Each fault is injected by patching the job's code in this process, so the jobs run on the
# worker thread here; a fault of the host process itself: tests/gui/test_worker.py.
pytestmark = pytest.mark.usefixtures("jobs_on_thread")


def _run_model_check(qtbot, window):
    window.kernel_in_check.setChecked(False)
    with qtbot.waitSignal(window.runner.result, timeout=30000) as blocker:
        assert window.run_check()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=5000)
    return blocker.args[1]


def _snapshot(window) -> dict:
    """What an earlier check left in the window (compared after the fault)."""
    model = window.kill_view.model
    return {
        "check": window.state.check_result,
        "labels": list(model.row_labels()),
        "verdicts": [model.verdict(r) for r in range(len(model.row_labels()))],
        "rrms": np.array(window.row_table.model.column_values("rrms scalar"), copy=True),
        "tiled": window.state.tiled,
    }


def _assert_survived(qtbot, window, before: dict) -> None:
    """Earlier results still shown; Run enabled; no job running; another run succeeds."""
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=10000)
    assert window.runner.wait(10000)
    assert window.run_check_button.isEnabled()
    assert not window.cancel_button.isEnabled()
    after = _snapshot(window)
    assert after["check"] is before["check"]
    assert after["labels"] == before["labels"]
    assert after["verdicts"] == before["verdicts"]
    assert after["tiled"] is before["tiled"]
    np.testing.assert_array_equal(after["rrms"], before["rrms"])
    # The session still holds the earlier check: it saves with its kill matrix.
    session = window.state.to_session()
    assert session.results is not None
    result = _run_model_check(qtbot, window)
    assert result.passed
    assert window.state.check_result is result
    assert "PASSED" in window.verdict.text()


@pytest.fixture
def checked_window(qtbot, window):
    first = _run_model_check(qtbot, window)
    assert first.passed
    assert window.kill_view.model.row_labels()
    return window


@pytest.fixture
def kernel_window(checked_window):
    """The checked window, where the kernel floor is importable (else the test is skipped)."""
    if not checked_window.env["available"]:
        pytest.skip("kernel floor unavailable")
    return checked_window


def test_cuda_out_of_memory_in_the_kernel_job(
    qtbot, kernel_window, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = kernel_window
    import kernels

    calls: list[int] = []

    def out_of_memory(*args, **kwargs):
        calls.append(1)
        raise torch.cuda.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 64.00 GiB (injected)"
        )

    monkeypatch.setattr(kernels, "run_checked", out_of_memory)
    before = _snapshot(window)
    with qtbot.waitSignal(window.runner.failed, timeout=30000) as blocker:
        assert window.run_kernel()
    assert calls == [1]
    name, exc = blocker.args
    message = tasks.failure_text(exc)
    assert name == "kernel"
    assert "OutOfMemoryError" in message
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=5000)
    assert "OutOfMemoryError" in window.status_line.text()
    assert "out of memory" in window.status_line.text().lower()
    assert "OutOfMemoryError" in window.summary.toPlainText()
    assert "kernel failed" in window.verdict.text()
    assert window.state.kernel_run is None
    assert window.run_kernel_button.isEnabled()
    _assert_survived(qtbot, window, before)


def test_compile_error_on_the_worker(qtbot, kernel_window, monkeypatch: pytest.MonkeyPatch) -> None:
    window = kernel_window
    import kernels

    def broken_compiler(*args, **kwargs):
        raise RuntimeError("triton compile failed: PassManager::run failed (injected)")

    monkeypatch.setattr(kernels, "compiler_output", broken_compiler)
    before = _snapshot(window)
    with qtbot.waitSignal(window.runner.failed, timeout=30000) as blocker:
        assert window.request_compile("sm_90")
    assert blocker.args[0] == "compile"
    assert "RuntimeError: triton compile failed" in tasks.failure_text(blocker.args[1])
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=5000)
    assert "compile failed" in window.status_line.text()
    assert "PassManager::run failed" in window.summary.toPlainText()
    assert not window.state.compile_cache  # a failure is never cached
    _assert_survived(qtbot, window, before)


def test_exception_in_the_middle_of_a_check(
    qtbot, checked_window, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = checked_window
    real_steps = pipeline.check_steps
    progressed: list[int] = []

    def breaks_midway(problem, config=None):
        for item in real_steps(problem, config):
            if isinstance(item, tuple) and item[0] >= 40:
                raise ZeroDivisionError("injected fault after 40 steps")
            progressed.append(item[0])
            yield item

    monkeypatch.setattr(pipeline, "check_steps", breaks_midway)
    before = _snapshot(window)
    seen_progress: list[tuple] = []
    window.runner.progress.connect(lambda *a: seen_progress.append(a))
    with qtbot.waitSignal(window.runner.failed, timeout=30000) as blocker:
        assert window.run_check()
    name, exc = blocker.args
    assert [name, tasks.failure_text(exc)] == [
        "check",
        "ZeroDivisionError: injected fault after 40 steps",
    ]
    assert len(progressed) >= 40
    assert seen_progress  # it had made progress before the fault
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=5000)
    assert "check failed: ZeroDivisionError" in window.status_line.text()
    log = window.summary.toPlainText()
    assert "ZeroDivisionError: injected fault after 40 steps" in log
    assert "Traceback" in log
    # The earlier check's log is still there above the failure.
    assert "check PASSED" in log
    assert "check failed" in window.verdict.text()
    assert "failed" in window.progress.format()
    monkeypatch.setattr(pipeline, "check_steps", real_steps)
    _assert_survived(qtbot, window, before)


def _bench_row(i: int) -> dict:
    gbps = 1000.0 + i
    return {
        "set": "llm",
        "rows": 4096,
        "width": 1024 * (1 + i % 4),
        "dtype": "bfloat16",
        "impl": ("copy", "ours", "torch_eager")[i % 3],
        "status": "ok",
        "gbps": gbps,
        "gbps_p20_time": gbps * 1.01,
        "gbps_p80_time": gbps * 0.99,
        "pct_of_copy": 90.0,
        "samples_us": [10.0, 11.0, 12.0],
        "median_us": 11.0,
    }


def test_cancel_in_the_middle_of_a_benchmark(
    qtbot, checked_window, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernels import bench

    window = checked_window
    window.bench_view.available = True  # pretend a GPU; the harness is fake
    window._update_run_enabled()
    delay = {"s": 0.0}
    produced: list[int] = []
    total = 200

    def fake_iter(config):
        for i in range(total):
            time.sleep(delay["s"])
            produced.append(i)
            yield i + 1, total, _bench_row(i)

    monkeypatch.setattr(bench, "iter_benchmark", fake_iter)
    # A complete (fast) benchmark first: its plot is an earlier result that must survive.
    with qtbot.waitSignal(window.runner.result, timeout=30000):
        assert window.run_benchmark()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=5000)
    first_records = list(window.bench_view.records)
    first_plot = window.bench_view.plotted("ours")
    assert len(first_records) == total
    produced.clear()

    delay["s"] = 0.02  # slow rows: the cancel lands in the middle
    before = _snapshot(window)
    gate = threading.Event()
    window.runner.progress.connect(
        lambda name, step, *_: gate.set() if name == "bench" and step >= 5 else None
    )
    with qtbot.waitSignal(window.runner.failed, timeout=30000) as blocker:
        assert window.run_benchmark()
        qtbot.waitUntil(gate.is_set, timeout=20000)
        assert window.cancel_button.isEnabled()
        window.cancel_button.click()
    name, exc = blocker.args
    assert [name, tasks.failure_text(exc)] == ["bench", "cancelled"]
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=5000)
    assert 5 <= len(produced) < total  # stopped in the middle, between measurements
    stopped_at = len(produced)
    qtbot.wait(100)
    assert len(produced) == stopped_at  # and stays stopped
    assert "bench: cancelled" in window.status_line.text()
    assert window.bench_view.records == first_records
    np.testing.assert_array_equal(window.bench_view.plotted("ours")[1], first_plot[1])
    assert len(window.state.bench["rows"]) == total
    assert window.bench_button.isEnabled()
    _assert_survived(qtbot, window, before)


def test_fault_in_the_job_factory_is_reported(
    qtbot, checked_window, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault before the first step (importing the pipeline fails) still reports and ends."""
    window = checked_window

    def no_pipeline(problem, config):
        def job(cancel):
            raise ImportError("cannot import name 'check_steps' (injected)")
            yield  # pragma: no cover - makes this a generator

        return job

    real = tasks.check_job
    monkeypatch.setattr(tasks, "check_job", no_pipeline)
    before = _snapshot(window)
    with qtbot.waitSignal(window.runner.failed, timeout=10000) as blocker:
        assert window.run_check()
    assert tasks.failure_text(blocker.args[1]).startswith("ImportError")
    monkeypatch.setattr(tasks, "check_job", real)
    _assert_survived(qtbot, window, before)


def test_step_plot_draws_at_most_max_lanes_bars_keeping_spikes() -> None:
    from inspector.qt.widgets.stepper import MAX_DRAWN_LANES, drawn_lanes

    small = np.arange(70, dtype=np.float64)
    active = np.arange(128) < 70
    edges, heights, idle = drawn_lanes(np.where(active, np.arange(128.0), 0.0), active)
    assert edges.size == 129
    np.testing.assert_array_equal(idle, np.arange(70, 128) + 0.5)
    assert heights[:70].tolist() == small.tolist()
    values = np.zeros(65536)
    values[40_000] = -7.0  # one spike among 65,536 lanes stays visible
    active = np.arange(65536) < 65000
    edges, heights, idle = drawn_lanes(values, active)
    assert heights.size <= MAX_DRAWN_LANES
    assert edges.size == heights.size + 1
    assert edges[0] == 0
    assert edges[-1] == 65536
    assert heights.min() == -7.0
    assert idle.size >= 1
    assert (idle > 65000 - 64).all()
