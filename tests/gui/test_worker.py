"""The worker on a real QThread (results, failures as exceptions, cancel, late results, the
window answering while a job runs, no thread left running); the jobs themselves are tested
without Qt in tests/inspector_core/test_jobs.py."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from inspector.check import pipeline
from inspector.jobs import tasks
from inspector.qt.worker import JobRunner, Worker
from oracle import fixtures, scalar
from oracle.mutants import MODEL_MUTANTS

ROOT = Path(__file__).resolve().parents[2]


def test_worker_reports_failure_and_always_finishes(qtbot) -> None:
    def broken(cancel):
        yield (0, 1, "about to fail")
        raise ValueError("boom")

    worker = Worker(broken, "broken")
    seen: list[BaseException] = []
    worker.failed.connect(seen.append)
    with qtbot.waitSignal(worker.finished, timeout=1000):
        worker.run()  # directly, on this thread
    assert [tasks.failure_text(exc) for exc in seen] == ["ValueError: boom"]
    assert isinstance(seen[0], ValueError)  # the exception itself, for the window to format
    assert "Traceback" in worker.details


def test_a_job_that_fails_as_it_is_called_is_reported_and_finishes(qtbot) -> None:
    def refuses(cancel):  # not a generator: it raises before yielding anything
        raise RuntimeError("no host process could be started")

    worker = Worker(refuses, "refuses")
    seen: list[BaseException] = []
    worker.failed.connect(seen.append)
    with qtbot.waitSignal(worker.finished, timeout=1000):
        worker.run()
    assert [tasks.failure_text(exc) for exc in seen] == [
        "RuntimeError: no host process could be started"
    ]


def test_runner_result_on_a_real_thread(qtbot) -> None:
    runner = JobRunner()
    problem = fixtures.get("multiple_rows").build()
    progress: list[tuple] = []
    runner.progress.connect(lambda *args: progress.append(args))
    with qtbot.waitSignal(runner.result, timeout=20000) as blocker:
        assert runner.start(
            "check", tasks.check_job(problem, pipeline.CheckConfig(run_kernel=False))
        )
        assert not runner.start("again", tasks.check_job(problem, pipeline.CheckConfig()))
    name, result = blocker.args
    assert name == "check"
    assert result.passed
    assert progress
    assert progress[0][0] == "check"
    qtbot.waitUntil(lambda: not runner.busy, timeout=5000)
    assert runner.wait(5000)


def test_runner_cancel_between_steps(qtbot) -> None:
    runner = JobRunner()
    release = threading.Event()

    def slow(cancel):
        for step in range(1000):
            yield (step, 1000, "step")
            release.wait(0.01)
        yield "never"

    results: list = []
    runner.result.connect(lambda *a: results.append(a))
    with qtbot.waitSignal(runner.failed, timeout=5000) as blocker:
        runner.start("slow", slow)
        qtbot.waitSignal(runner.progress, timeout=2000).wait()
        runner.cancel()
    name, exc = blocker.args
    assert [name, tasks.failure_text(exc)] == ["slow", "cancelled"]
    assert isinstance(exc, tasks.Cancelled)
    qtbot.waitUntil(lambda: not runner.busy, timeout=5000)
    assert results == []
    assert runner.wait(5000)


def test_many_short_jobs_while_garbage_is_collected_never_crash() -> None:
    """The worker is deleted by Python alone, after its thread has ended: with a deleteLater
    on it as well, the finishing thread and the GUI thread's collector both delete it, which
    crashed within the first few of these jobs."""
    tasks = 300
    done = subprocess.run(
        [sys.executable, "-m", "tests.gui.worker_churn", str(tasks)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert (done.returncode, done.stdout.strip()) == (0, f"ok {tasks}"), done.stderr[-3000:]


def test_shutdown_drops_late_results(qtbot) -> None:
    runner = JobRunner()
    gate = threading.Event()

    def waits(cancel):
        yield (0, 1, "waiting")
        gate.wait(5)
        yield "late"

    results: list = []
    runner.result.connect(lambda *a: results.append(a))
    runner.start("waits", waits)
    qtbot.waitSignal(runner.progress, timeout=2000).wait()
    gate.set()
    assert runner.shutdown(10000)
    qtbot.wait(50)
    assert results == []
    assert not runner.busy


def test_window_check_with_kernel_runs_in_a_child_process_while_the_gui_answers(
    qtbot, window
) -> None:
    """The real kernel (interpreter on a CPU) + model matrices + compile, out of the window's
    process, so none of it can hold the window's interpreter lock.

    Asserted by structure, never by a duration: the job the window started is a host-process
    job that ran in another process, and the job's progress reached the window's status line
    while it ran (so the GUI thread handled the queued signals mid-job).
    """
    from inspector.jobs.host import ChildJob

    seen: list[str] = []
    window.runner.progress.connect(lambda name, step, total, label: seen.append(label))
    window.kernel_in_check.setChecked(True)
    # A hang guard, not a bound: on an H200 with a cold Triton cache the check compiles every
    # kernel mutant and took 128 s (docs/gpu_window/stall_h200.json).
    with qtbot.waitSignal(window.runner.result, timeout=600000) as blocker:
        assert window.run_check()
        assert not window.run_check_button.isEnabled()
        assert window.cancel_button.isEnabled()
        job = window.runner._worker._job
    name, result = blocker.args
    assert name == "check"
    assert isinstance(job, ChildJob)
    assert job.pid is not None
    assert job.pid != os.getpid()
    assert window.state.check_result is result
    assert result.kernel is not None
    assert result.problem is window.state.problem  # the window's own input, not a copy
    assert any(label.startswith("kernel") for label in seen), seen
    assert seen.index(next(label for label in seen if label.startswith("kernel"))) > 0
    qtbot.waitUntil(lambda: window.run_check_button.isEnabled(), timeout=5000)
    # The views show the result: kill matrices (model + kernel), kernel columns, compile tabs.
    labels = window.kill_view.model.row_labels()
    assert len(labels) == 2 + len(MODEL_MUTANTS) + len(result.kernel_matrix.mutants)
    verdicts = [window.kill_view.model.verdict(r) for r in range(len(labels))]
    # The window shows whatever the check found (the kernel floor's own tests judge it).
    assert all(v.startswith(("killed", "all")) for v in verdicts) == (
        result.model_matrix.passed and result.kernel_matrix.passed
    )
    kernel_abs = window.row_table.model.column_values("kernel max abs")
    assert (kernel_abs == result.kernel.row_max_abs).all()
    assert ("PASSED" if result.passed else "FAILED") in window.verdict.text()
    for failure in result.failures:
        assert failure in window.summary.toPlainText()
    if result.compile and "texts" in result.compile:
        assert window.compiler_view.text("ttir")
    # The coverage tab shows the check's map: every reachable configuration, each in its cell.
    assert window.coverage_view.section is result.coverage
    assert window.coverage_view.table.rowCount() == len(
        {c["label"].split("/", 1)[1] for c in result.coverage["configurations"]}
    )


def test_window_check_can_be_cancelled(qtbot, window) -> None:
    window.kernel_in_check.setChecked(True)
    with qtbot.waitSignal(window.runner.failed, timeout=30000) as blocker:
        window.run_check()
        qtbot.waitSignal(window.runner.progress, timeout=10000).wait()
        window.cancel_button.click()
    name, exc = blocker.args
    assert [name, tasks.failure_text(exc)] == ["check", "cancelled"]
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=30000)
    assert window.state.check_result is None
    assert "cancelled" in window.status_line.text()
    assert "check cancelled</b> at " in window.verdict.text()
    assert "no earlier check of this input" in window.verdict.text()
    assert window.run_check_button.isEnabled()


def test_a_cancelled_check_greys_the_verdict_it_did_not_replace(qtbot, window) -> None:
    window.kernel_in_check.setChecked(False)
    with qtbot.waitSignal(window.runner.result, timeout=30000):
        assert window.run_check()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=30000)
    stamp = window.state.stamps["check_result"]
    window.kernel_in_check.setChecked(True)
    with qtbot.waitSignal(window.runner.failed, timeout=30000):
        window.run_check()
        qtbot.waitSignal(window.runner.progress, timeout=10000).wait()
        window.cancel_button.click()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=30000)
    text = window.verdict.text()
    assert text.index("check cancelled") < text.index("previous check of this input, superseded")
    assert f"check PASSED</b> at {stamp}" in text
    assert "rgb(102,187,106)" not in text  # the earlier pass is grey, not green


def test_kernel_run_with_unmasked_store_shows_oob_writes(qtbot, window) -> None:
    window.mutant_panel.set_current("unmasked_store")
    with qtbot.waitSignal(window.runner.result, timeout=60000) as blocker:
        assert window.run_kernel()
    outcome = blocker.args[1]
    assert outcome.mutant == "unmasked_store"
    assert outcome.stores.output
    states = window.grid.image.states
    from inspector.model import viewdata

    assert (states == viewdata.OOB_WRITE).any()
    count = len(set(outcome.stores.output))
    assert f"out-of-bounds writes <b>{count}</b>" in window.grid.counts.text()
    assert "kernel: Run kernel mutant unmasked_store" in window.grid.source.text()
    # A check after it is newer evidence: its verdict never sits beside the mutant's stores.
    # (The result arrives before the job has ended: on a busy machine the runner is still busy.)
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=30000)
    window.kernel_in_check.setChecked(False)
    with qtbot.waitSignal(window.runner.result, timeout=60000):
        assert window.run_check()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=30000)
    assert "check PASSED</b>" in window.verdict.text()
    assert "out-of-bounds writes <b>0</b>" in window.grid.counts.text()
    assert window.grid.source.text().endswith("kernel: not run on this input")
    assert "(mutant unmasked_store)" not in window.row_table.note.text()
    # The progress bar is empty once a job ends: only the verdict says how it went.
    assert window.progress.value() == 0
    assert window.progress.format().startswith("idle (last: check done at ")
    # Faithful kernel: agrees, no OOB writes, kernel columns filled.
    window.mutant_panel.set_current(None)
    with qtbot.waitSignal(window.runner.result, timeout=60000) as blocker:
        assert window.run_kernel()
    outcome = blocker.args[1]
    assert outcome.comparison.passed
    assert not outcome.stores.output
    reference = scalar.reference(window.state.problem)
    assert outcome.row_max_abs.shape == reference.rrms.shape


@pytest.mark.parametrize("target", ["sm_90"])
def test_compile_on_the_worker_is_cached(qtbot, window, target) -> None:
    with qtbot.waitSignal(window.runner.result, timeout=120000):
        assert window.request_compile(target)
    assert window.compiler_view.text("ptx")
    assert "num_warps" in window.compiler_view.facts.text()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=5000)
    assert window.request_compile(target)  # served from the cache, no job
    assert not window.runner.busy
    assert "cached" in window.compiler_view.facts.text()


@pytest.mark.usefixtures("jobs_on_thread")
def test_a_failing_job_is_shown_and_the_window_stays_usable(
    qtbot, window, monkeypatch: pytest.MonkeyPatch
) -> None:
    def exploding(problem, config):
        def job(cancel):
            yield (0, 2, "about to fail")
            raise MemoryError("CUDA out of memory (injected)")

        return job

    real_check_job = tasks.check_job
    monkeypatch.setattr(tasks, "check_job", exploding)
    with qtbot.waitSignal(window.runner.failed, timeout=5000) as blocker:
        assert window.run_check()
    assert blocker.args[0] == "check"
    assert "out of memory" in tasks.failure_text(blocker.args[1])
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=5000)
    assert "failed" in window.verdict.text()
    assert "MemoryError" in window.summary.toPlainText()
    assert window.run_check_button.isEnabled()
    # Earlier state survives and the next run works.
    assert window.state.tiled is not None
    monkeypatch.setattr(tasks, "check_job", real_check_job)
    window.kernel_in_check.setChecked(False)
    with qtbot.waitSignal(window.runner.result, timeout=30000):
        assert window.run_check()


def test_a_crash_of_the_job_process_fails_only_that_job(qtbot, window) -> None:
    """A kernel run whose process dies (as memory corrupted by an unmasked store under the
    interpreter would make it) is a failed run in the window; the window, its earlier results
    and the next job (in a fresh process) are unharmed."""
    from inspector.jobs.host import ChildJob

    tiled_before = window.state.tiled
    crash = ChildJob("tests.inspector_core.host_jobs:crash_job", ())
    with qtbot.waitSignal(window.runner.failed, timeout=60000) as blocker:
        assert window.runner.start("kernel", crash)
    assert "SIGSEGV" in tasks.failure_text(blocker.args[1])
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=5000)
    assert "SIGSEGV" in window.summary.toPlainText()
    assert window.state.tiled is tiled_before
    window.kernel_in_check.setChecked(False)
    with qtbot.waitSignal(window.runner.result, timeout=60000) as blocker:
        assert window.run_check()
        job = window.runner._worker._job
    assert blocker.args[1].passed
    assert job.pid != crash.pid
