"""The analysis of the input (scalar reference and lane model under the model mutant that is
on) whenever the input or the mutant changes: small inputs at once on the GUI thread, large
ones as a job once the GUI's current work is done and no other job runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer

from inspector.jobs import tasks
from inspector.model.analysis import analyse
from inspector.model.state import InspectionState


class AnalysisRuns(QObject):
    """``lut`` gives the lane grid's colour table (the job draws the grid's image too)."""

    def __init__(
        self,
        state: InspectionState,
        runner: Any,
        lut: Callable[[], Any],
        status: Callable[[str], None],
        closed: Callable[[], bool],
    ) -> None:
        super().__init__(runner)
        self.state = state
        self._runner = runner
        self._lut = lut
        self._status = status
        self._closed = closed
        self.pending = False  # an analysis waits for the running job
        self.scheduled = False  # an analysis job starts once the GUI's current work is done

    def analyze(self) -> None:
        """Scalar reference + lane model for the current problem and mutant."""
        state = self.state
        if state.problem is None:
            return
        if state.analyse_here:
            state.set_analysis(analyse(state.problem, state.model_mutant))
            return
        if self._runner.busy:
            self.pending = True
            self._status("Large input: analysis waits for the running job.")
            return
        # Start it once the current GUI work is done (opening a session still fills the kill
        # matrix): Qt calls back into Python for every cell, and each callback would wait for
        # the GIL while the worker computes (0.6 s for a 48 x 15 table, measured).
        if not self.scheduled:
            self.scheduled = True
            QTimer.singleShot(0, self._start_scheduled)

    def on_idle(self) -> None:
        """No job runs any more: start the analysis that waited for it."""
        if self.pending:
            self.pending = False
            QTimer.singleShot(0, self.analyze)

    def _start_scheduled(self) -> None:
        self.scheduled = False
        state = self.state
        if self._closed() or state.problem is None:
            return
        if self._runner.busy:
            self.pending = True
            return
        job = tasks.analysis_job(state.problem, state.model_mutant, self._lut())
        self._runner.start("analyze", job, state.set_analysis)
