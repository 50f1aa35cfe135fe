"""Run many short jobs through fresh JobRunners while the GUI thread collects garbage.

A child-process script for tests/gui/test_worker.py: a lifetime bug in the worker's wiring
shows here as a segfault or a hang of this process, never of the test session. Prints
``ok N`` after N jobs.
"""

from __future__ import annotations

import faulthandler
import gc
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEventLoop
from PySide6.QtWidgets import QApplication

from inspector.qt.worker import JobRunner


def short_job(cancel):
    yield (0, 1, "one step")
    yield [object() for _ in range(10)]


def main(jobs: int) -> None:
    faulthandler.enable()
    app = QApplication.instance() or QApplication([])
    for _ in range(jobs):
        runner = JobRunner()
        results: list = []
        runner.result.connect(lambda name, obj, sink=results: sink.append(obj))
        runner.start("short", short_job)
        while runner.busy:
            app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)
            gc.collect(0)
        # A runner's owner waits for its thread before letting it go, as the window's
        # shutdown does: "busy" ends when the job has finished, and on a busy machine its
        # thread may still be winding down; a QThread destroyed then aborts the process.
        if not runner.wait(30000):
            raise SystemExit("the job's thread did not end within 30 s")
        for _ in range(3):  # the finished thread's deleteLater and the prune run here
            app.processEvents()
            gc.collect()
        if len(results) != 1:
            raise SystemExit(f"job gave {len(results)} results, not 1")
    print(f"ok {jobs}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
