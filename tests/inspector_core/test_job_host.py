"""The host process heavy jobs run in (inspector.jobs.host / inspector.jobs.child), for real.

Each test starts real child processes; what is asserted is structure (which process ran the
job, what travelled back, what survived), never a duration.
"""

from __future__ import annotations

import io
import os
import signal
import threading

import numpy as np
import pytest

from inspector.jobs import host, tasks
from inspector.jobs.host import ChildJob, ChildJobError, JobProcessDied
from inspector.jobs.tasks import Cancelled

HERE = "tests.inspector_core.host_jobs"


@pytest.fixture(autouse=True)
def pool(monkeypatch: pytest.MonkeyPatch):
    """A pool of this test's own (so no host outlives it)."""
    pool = host.Pool()
    monkeypatch.setattr(host, "POOL", pool)
    monkeypatch.delenv(host.PLACEMENT_VAR, raising=False)
    yield pool
    pool.close_all()


def _drain(job: ChildJob, cancel: threading.Event | None = None) -> list:
    return list(job(cancel or threading.Event()))


def test_a_job_runs_in_another_process_and_its_items_travel_back() -> None:
    job = ChildJob(f"{HERE}:pid_job", (3,))
    items = _drain(job)
    # Every step's progress (the last step always), then the result; the stray prints of the
    # job went to stderr and broke no frame.
    assert items[-1] == {"pid": job.pid}
    assert job.pid != os.getpid()
    assert (2, 3, "step 2") in items
    assert all(tasks.is_progress(item) for item in items[:-1])


def test_the_host_stays_warm_between_jobs() -> None:
    first, second = ChildJob(f"{HERE}:pid_job", (1,)), ChildJob(f"{HERE}:pid_job", (1,))
    _drain(first)
    _drain(second)
    assert first.pid == second.pid


def test_a_crash_fails_only_its_job_and_names_the_signal() -> None:
    crash = ChildJob(f"{HERE}:crash_job", ())
    with pytest.raises(JobProcessDied) as err:
        _drain(crash)
    assert f"pid {crash.pid}" in str(err.value)
    assert "about to crash" in str(err.value)
    assert f"signal {int(signal.SIGSEGV)} (SIGSEGV)" in str(err.value)
    after = ChildJob(f"{HERE}:pid_job", (1,))
    assert _drain(after)[-1] == {"pid": after.pid}
    assert after.pid != crash.pid


def test_an_argument_inside_a_result_comes_back_as_the_callers_own_object() -> None:
    problem = {"x": np.arange(6.0).reshape(2, 3)}
    (result,) = [item for item in _drain(ChildJob(f"{HERE}:echo_job", (problem,))) if item]
    # The very object (the window recognises a fresh result by identity); a new one beside it.
    assert result["same"] is problem
    assert result["copy"] == {"x": "copied"}
    assert result["copy"] is not problem


def test_an_exception_travels_back_as_itself_with_its_traceback() -> None:
    with pytest.raises(ValueError, match="width 0 is below the bound 1") as err:
        _drain(ChildJob(f"{HERE}:raise_job", ("value",)))
    assert "host_jobs.py" in err.value.child_traceback
    assert tasks.failure_text(err.value) == "ValueError: width 0 is below the bound 1"


def test_an_exception_that_cannot_be_pickled_keeps_its_name_and_message() -> None:
    with pytest.raises(ChildJobError) as err:
        _drain(ChildJob(f"{HERE}:raise_job", ("other",)))
    assert tasks.failure_text(err.value) == "Unpicklable: lock: held"
    assert "Unpicklable" in err.value.child_traceback


@pytest.mark.parametrize("cooperative", [True, False])
def test_a_cancel_stops_the_job_and_only_a_job_that_ignores_it_loses_its_host(
    cooperative: bool,
) -> None:
    """A job that sees the cancel between steps stops and leaves its host warm; one stuck in a
    step is killed after the grace, and the next job gets a fresh host."""
    cancel = threading.Event()
    job = ChildJob(f"{HERE}:waiting_job", (cooperative,))
    items = job(cancel)
    assert next(items) == (0, 2, "started")
    cancel.set()
    with pytest.raises(Cancelled):
        list(items)
    after = ChildJob(f"{HERE}:pid_job", (1,))
    _drain(after)
    assert (after.pid == job.pid) is cooperative


def test_a_job_abandoned_mid_way_is_stopped_before_the_host_is_reused() -> None:
    job = ChildJob(f"{HERE}:waiting_job", (True,))
    items = job(threading.Event())
    assert next(items) == (0, 2, "started")
    items.close()  # what the worker does when it stops iterating
    after = ChildJob(f"{HERE}:pid_job", (2,))
    # The abandoned job's frames do not leak into the next job's.
    assert _drain(after)[-1] == {"pid": job.pid}


def test_prewarm_starts_a_host_the_first_job_then_uses(pool) -> None:
    pool.prewarm()
    job = ChildJob(f"{HERE}:pid_job", (1,))
    items = _drain(job)
    assert items[0] == (0, 1, "starting the job process (torch + triton)")
    assert items[-1] == {"pid": job.pid}
    assert "warm" not in items


def test_thread_placement_runs_the_job_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.inspector_core import host_jobs

    monkeypatch.setenv(host.PLACEMENT_VAR, "thread")
    job = host.heavy(host_jobs.pid_job, 1)
    assert not isinstance(job, ChildJob)
    assert list(job(threading.Event()))[-1] == {"pid": os.getpid()}
    monkeypatch.setenv(host.PLACEMENT_VAR, "child")
    child = host.heavy(host_jobs.pid_job, 1)
    assert isinstance(child, ChildJob)
    assert child.path == f"{HERE}:pid_job"


def test_a_job_factory_a_host_cannot_import_is_refused_by_name(monkeypatch) -> None:
    monkeypatch.setenv(host.PLACEMENT_VAR, "child")

    def local_job(n):  # defined in a function: no host can import it by name
        return n

    with pytest.raises(ValueError, match="local_job' is not a module-level function"):
        host.heavy(local_job, 1)


def test_a_frame_is_read_up_to_its_bound_and_refused_one_past(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(host, "MAX_FRAME_BYTES", 64)
    channel = io.BytesIO()
    host.write_frame(channel, b"x" * 20)
    size = len(channel.getvalue()) - 8
    monkeypatch.setattr(host, "MAX_FRAME_BYTES", size)
    channel.seek(0)
    assert host.read_frame(channel) == b"x" * 20
    monkeypatch.setattr(host, "MAX_FRAME_BYTES", size - 1)
    channel.seek(0)
    with pytest.raises(EOFError, match=f"frame of {size} bytes announced"):
        host.read_frame(channel)


def test_a_truncated_frame_is_an_end_not_a_hang() -> None:
    channel = io.BytesIO()
    host.write_frame(channel, list(range(100)))
    with pytest.raises(EOFError, match="closed the pipe"):
        host.read_frame(io.BytesIO(channel.getvalue()[:-3]))


def test_a_bad_job_path_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'no_colon' is not 'module:attribute'"):
        host.resolve("no_colon")
