"""The window's mutation actions: File → Open mutation report… and Run → Run mutate, feeding the
Mutation tab (:class:`~inspector.qt.widgets.mutation_view.MutationView`).

A report file is untrusted and read by :func:`inspector.mutate.saved_report.read_report` (bounded,
every field checked); a bad one is refused with a message box naming the field, and the tab
keeps what it showed. "Run mutate" runs :func:`inspector.jobs.tasks.mutate_job` on the worker, on
the loaded kernel when there is one (``state.kernel``), else on the bundled kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow

from inspector.jobs import tasks
from inspector.jobs.host import heavy
from inspector.model.state import InspectionState
from inspector.mutate.saved_report import (
    MutationReport,
    ReportError,
    parse_report,
    read_report,
    source_files,
    source_note,
)
from inspector.qt.widgets import dialogs
from inspector.qt.widgets.mutation_view import MutationView

JOB_NAME = "mutate"


class MutationActions(QObject):
    """Owns the two actions and routes a report (opened or computed) to the view."""

    def __init__(
        self,
        state: InspectionState,
        view: MutationView,
        parent: QMainWindow,
        menus: Any,
        runner: Any,
        status: Callable[[str], None],
        show_view: Callable[[], None],
    ) -> None:
        super().__init__(parent)
        self.state = state
        self.view = view
        self._parent = parent
        self._runner = runner
        self._status = status
        self._show_view = show_view
        self.open_action = QAction("Open &mutation report…", parent)
        self.run_action = QAction("Run &mutate", parent)
        menus.file_menu.insertAction(menus.quit, self.open_action)
        menus.run_menu.addAction(self.run_action)
        self.open_action.triggered.connect(self.open_report_dialog)
        self.run_action.triggered.connect(self.run_mutate)
        view.open_requested.connect(self.open_report_dialog)
        view.run_requested.connect(self.run_mutate)

    def set_enabled(self, idle: bool) -> None:
        """Runs and opens only while the worker is idle."""
        for widget in (
            self.open_action,
            self.run_action,
            self.view.open_button,
            self.view.run_button,
        ):
            widget.setEnabled(idle)

    def open_report_dialog(self) -> None:
        path = dialogs.choose_open_file(
            self._parent, "Open mutation report", "Mutation report (mutation.json *.json)"
        )
        if path:
            self.open_report(path)

    def open_report(self, path: str) -> bool:
        """Show the report at ``path``; a bad file is refused with a message (False)."""
        try:
            report = read_report(path)
        except ReportError as err:
            dialogs.show_error(self._parent, "Cannot open mutation report", str(err))
            self._status(f"open mutation report failed: {err}")
            return False
        self.show(report, path)
        self._status(f"mutation report: {len(report.rows)} mutants from {path}.")
        return True

    def show(self, report: MutationReport, path: str | None = None) -> None:
        files = source_files(report, path)
        self.view.set_report(report, files, source_note(report, files))
        self._show_view()

    def run_mutate(self) -> bool:
        """``mutate`` on the loaded kernel (or the bundled one), in the job process."""
        runner = self._runner
        if runner.busy:
            return False
        job = heavy(tasks.mutate_job, self.state.kernel, 2)
        return bool(runner.start(JOB_NAME, job, self.on_result))

    def on_result(self, result: dict[str, Any]) -> None:
        """A finished ``mutate`` job's report (its own output: parsed like any file)."""
        try:
            report = parse_report(result)
        except ReportError as err:
            self._status(f"mutate: its report is not readable ({err})")
            return
        self.show(report)
        self._status(f"mutate: {report.summary()}")
