"""Long work off the GUI thread: one ``QObject`` worker on one ``QThread``.

The jobs are Qt-free (:mod:`inspector.jobs.tasks`): ``job(cancel) -> Iterator`` yielding
``(step, total, label)`` progress tuples and, last, the result. The worker only iterates and
emits; it never touches a widget. Cancel is cooperative: the event is checked between steps,
never ``QThread.terminate()``. A failure travels as the exception object itself (the window
formats it, ``tasks.failure_text``); a cancel as a :class:`~inspector.jobs.tasks.Cancelled`.

Wiring follows superqt's ``new_worker_qthread`` (``thread.started -> worker.run``,
``worker.finished -> thread.quit``, ``deleteLater`` on the thread) with one difference: the
worker is a Python-made object, so Python alone deletes it, and only once its thread has fully
ended. A ``deleteLater`` on it would let the finishing thread delete it while the GUI thread's
garbage collector frees the same wrapper: a double delete, a crash or a deadlock at random.
:class:`JobRunner` is what a window owns: it starts one job at a time, forwards the signals,
drops results of jobs it has cancelled or forgotten ("late results"), and on shutdown asks the
job to stop and waits for its thread. Its owner calls :meth:`JobRunner.shutdown` (or
:meth:`JobRunner.wait`) before letting it go: ``busy`` ends when the job has finished, a moment
before its thread has, and Qt aborts the process when a running ``QThread`` is destroyed.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from inspector.jobs.tasks import Cancelled, Job, is_progress


class Worker(QObject):
    """Iterates one job and reports through signals (queued to the GUI thread).

    Signals:
        progress(step, total, label): before each step.
        result(object): the job's last yielded non-progress item.
        failed(object): the exception (traceback in ``details``), or ``Cancelled()``.
        finished(): always, last.
    """

    progress = Signal(int, int, str)
    result = Signal(object)
    failed = Signal(object)
    finished = Signal()

    #: Progress is emitted at most this often (the last step always): a fixture matrix has
    #: ~1000 tiny steps and a flood of queued signals would keep the GUI thread busy.
    PROGRESS_INTERVAL_S = 0.04

    def __init__(self, job: Job, name: str = "job") -> None:
        super().__init__()
        self._job = job
        self.name = name
        self.cancel_event = threading.Event()
        self.details = ""

    def cancel(self) -> None:
        """Ask the job to stop at its next step (thread-safe)."""
        self.cancel_event.set()

    @Slot()
    def run(self) -> None:
        """Run the job to completion, cancellation, or failure; always emit ``finished``."""
        outcome: Any = None
        have_outcome = False
        last_emit = 0.0
        items: Any = None
        try:
            items = iter(self._job(self.cancel_event))  # a job may fail as it is called
            for item in items:
                if self.cancel_event.is_set():
                    raise Cancelled
                # Hand the GIL over between steps: a waiting GUI thread runs now, not after the
                # next 5 ms switch interval (or a long C call) in the job.
                time.sleep(0)
                if is_progress(item):
                    step, total, label = item
                    now = time.monotonic()
                    if now - last_emit >= self.PROGRESS_INTERVAL_S or step + 1 >= total:
                        last_emit = now
                        self.progress.emit(int(step), int(total), str(label))
                else:
                    outcome, have_outcome = item, True
            if self.cancel_event.is_set():
                raise Cancelled
            if not have_outcome:
                raise RuntimeError(f"{self.name} produced no result")
            self.result.emit(outcome)
        except Cancelled as exc:
            self.failed.emit(exc)
        except Exception as exc:  # any failure is reported, never raised into Qt
            # A job run in a host process carries the traceback from where it was raised.
            self.details = getattr(exc, "child_traceback", None) or traceback.format_exc()
            self.failed.emit(exc)
        finally:
            # A job stopped early (a cancel) is closed now, not whenever it is collected: a
            # job in a host process then stops it there before the next job may start.
            close = getattr(items, "close", None)
            if close is not None:
                close()
            # The job's inputs are not kept alive by a worker that waits to be collected.
            self._job = items = None
            self.finished.emit()


def start_worker(worker: Worker, parent: QObject | None = None) -> QThread:
    """Move ``worker`` to a new QThread wired superqt-style, start it, return the thread.

    Give a ``parent`` (the owner living in the GUI thread) so the thread's lifetime is Qt's,
    not Python's garbage collector's: ``deleteLater`` then deletes it exactly once. The caller
    keeps ``worker`` referenced until :func:`thread_done` says the thread has ended.
    """
    thread = QThread(parent)
    thread.setObjectName(f"worker:{worker.name}")
    worker.moveToThread(thread)
    thread.started.connect(worker.run)
    # Direct: QThread.quit is thread-safe, and a queued quit would never arrive while the GUI
    # thread blocks in QThread.wait() during shutdown.
    worker.finished.connect(thread.quit, Qt.ConnectionType.DirectConnection)
    thread.finished.connect(thread.deleteLater)
    thread.start()
    return thread


def thread_done(thread: QThread) -> bool:
    """Whether ``thread`` has ended for good, its last posted events handled.

    Not ``isFinished()``: that is already true while ``finished`` is being emitted, before the
    thread has handled its deferred deletes. A deleted thread has ended (its destructor waits).
    """
    try:
        return thread.wait(0)
    except RuntimeError:  # deleted on the C++ side
        return True


class _Relay(QObject):
    """Lives in the GUI thread, so worker signals reach it queued; tags them with the job."""

    def __init__(
        self,
        runner: JobRunner,
        generation: int,
        name: str,
        on_result: Callable[[Any], Any] | None = None,
    ) -> None:
        # No Qt parent and no deleteLater: the runner holds it in Python until its thread has
        # finished (deleting it from inside its own queued slot crashes PySide 6.12).
        super().__init__()
        self._runner = runner
        self._generation = generation
        self._name = name
        self._on_result = on_result

    def _current(self) -> bool:
        return self._runner._generation == self._generation

    @Slot(int, int, str)
    def on_progress(self, step: int, total: int, label: str) -> None:
        if self._current():
            self._runner.progress.emit(self._name, step, total, label)

    @Slot(object)
    def on_result(self, obj: object) -> None:
        if self._current():
            try:
                if self._on_result is not None:
                    self._on_result(obj)
            finally:  # listeners hear of the result even when its handler raised
                self._runner.result.emit(self._name, obj)

    @Slot(object)
    def on_failed(self, exc: BaseException) -> None:
        if self._current():
            # The traceback must be readable by the failed() handlers, which run before
            # finished() arrives (the worker sets it before emitting).
            worker = self._runner._worker
            self._runner.last_details = worker.details if worker is not None else ""
            self._runner.failed.emit(self._name, exc)

    @Slot()
    def on_finished(self) -> None:
        if self._current():
            self._runner._job_done(self._name)


class JobRunner(QObject):
    """Owns at most one running worker; forwards its signals; ignores late results.

    Signals carry the job name so a window can route results:
        progress(name, step, total, label), result(name, obj), failed(name, exception),
        finished(name), busy_changed(bool).
    """

    progress = Signal(str, int, int, str)
    result = Signal(str, object)
    failed = Signal(str, object)
    finished = Signal(str)
    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._worker: Worker | None = None
        self._generation = 0
        # (thread, worker, relay) kept referenced until the thread has finished.
        self._threads: list[tuple[QThread, Worker, _Relay]] = []
        self.last_details = ""

    @property
    def busy(self) -> bool:
        return self._worker is not None

    @property
    def current_name(self) -> str | None:
        return self._worker.name if self._worker is not None else None

    def start(self, name: str, job: Job, on_result: Callable[[Any], Any] | None = None) -> bool:
        """Start ``job`` unless one is running; returns whether it started. ``on_result``
        takes its result (on the GUI thread, before ``result(name, obj)`` is emitted), unless a
        newer start or a shutdown made it late; ``name`` is the job's word in progress and
        failures."""
        if self._worker is not None:
            return False
        self._prune_threads()
        self._generation += 1
        relay = _Relay(self, self._generation, name, on_result)
        worker = Worker(job, name)
        worker.progress.connect(relay.on_progress)
        worker.result.connect(relay.on_result)
        worker.failed.connect(relay.on_failed)
        worker.finished.connect(relay.on_finished)
        self._worker = worker
        thread = start_worker(worker, self)
        self._threads.append((thread, worker, relay))
        thread.finished.connect(self._prune_threads)
        self.busy_changed.emit(True)
        return True

    def _job_done(self, name: str) -> None:
        if self._worker is not None:
            self.last_details = self._worker.details
        self._worker = None
        self.finished.emit(name)
        self.busy_changed.emit(False)

    @Slot()
    def _prune_threads(self) -> None:
        self._threads = [entry for entry in self._threads if not thread_done(entry[0])]

    def cancel(self) -> None:
        """Ask the running job to stop; its ``failed(name, Cancelled())`` still arrives."""
        if self._worker is not None:
            self._worker.cancel()

    def wait(self, timeout_ms: int = 30000) -> bool:
        """Block until every thread this runner started has ended (tests, shutdown)."""
        ok = True
        for thread, _worker, _relay in list(self._threads):
            try:
                if thread.isRunning():
                    ok = thread.wait(timeout_ms) and ok
            except RuntimeError:
                pass
        return ok

    def shutdown(self, timeout_ms: int = 30000) -> bool:
        """Cancel, disconnect (late results are dropped) and wait for every thread to end."""
        was_busy = self._worker is not None
        if self._worker is not None:
            self._worker.cancel()
        self._generation += 1  # anything still in flight is now late
        self._worker = None
        ok = self.wait(timeout_ms)
        self._threads.clear()
        if was_busy:
            self.busy_changed.emit(False)
        return ok
