"""The views drawn from the shown record (:func:`inspector.model.record` via
``InspectionState.record``): the verdict line, the check log, the kill matrix, the coverage map
and the compiler tab's line, each naming the record's identity and marked stale in place when it
does not hold for the input and kernel loaded now. The grid, stepper and row table take the
same record's caption through :class:`~inspector.qt.presenter.EvidenceViews`.

It subscribes to the state's events itself (after the window's own handlers, which draw the
grid), so every change of input, kernel, mutant, launch mode, check or session redraws these
from the one record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject

from inspector.model import evidence, record_text
from inspector.model import record as record_model
from inspector.model.events import Event
from inspector.model.kernel_choice import kernel_name
from inspector.model.state import InspectionState
from inspector.qt.table_models import kill_matrix_from_table
from inspector.qt.widgets.coverage_view import saved_coverage


@dataclass(frozen=True)
class RecordSurfaces:
    """The widgets the record is drawn into, and the evidence views' redraw and stale mark."""

    verdict: Any
    log: Any
    progress: Any
    kill_view: Any
    coverage_view: Any
    compiler_view: Any
    refresh_views: Callable[[], None]
    mark_stale: Callable[[str], None]


class RecordViews(QObject):
    """Keeps the verdict, log, kill matrix, coverage and compiler line on the shown record."""

    def __init__(self, state: InspectionState, surfaces: RecordSurfaces) -> None:
        super().__init__(surfaces.kill_view)
        self.state = state
        self._surfaces = surfaces
        self._log_key: tuple[Any, ...] | None = None
        events = state.events
        events.kernel.connect(self._on_change)
        events.problem.connect(self._on_change)
        events.mutant.connect(self._on_change)
        events.batch_invariant.connect(self._on_change)
        events.check_result.connect(self._on_check_result)
        events.session_results.connect(self._on_session_results)
        events.compile_info.connect(self._on_compile)

    # ------------------------------------------------------------------ events

    def _on_change(self, _event: Event) -> None:
        self.show()
        self.show_compile()

    def _on_check_result(self, event: Event) -> None:
        self._surfaces.refresh_views()
        self.show()
        if not evidence.record_check_receipts(self.state, event.value):
            self._surfaces.log.appendPlainText(evidence.NOT_KEPT)

    def _on_session_results(self, _event: Event) -> None:
        """An opened session: nothing of the previous file's log or progress stays."""
        progress = self._surfaces.progress
        progress.setRange(0, 1)
        progress.setValue(0)
        progress.setFormat("idle")
        self._log_key = None
        self._surfaces.refresh_views()
        self.show()

    def _on_compile(self, _event: Event) -> None:
        self.show_compile()

    # ------------------------------------------------------------------ drawing

    def matrices(self, record: Any) -> list[Any]:
        """The kill matrices of ``record`` that hold: the model's, and the kernel's while the
        record is of the loaded kernel."""
        if record is None:
            return []
        if record.check is not None:
            found = [record.check.model_matrix]
            kernel = record.check.kernel_matrix
        else:
            found = [kill_matrix_from_table(record.saved.model_matrix)]
            table = record.saved.kernel_matrix
            kernel = kill_matrix_from_table(table) if table is not None else None
        if kernel is not None and not record.of_other_kernel and "kernel" not in record.stale:
            found.append(kernel)
        return found

    def show(self) -> None:
        """Verdict, log, kill matrix and coverage from the record; the grid, stepper and
        table marked stale while the input is invalid."""
        state, surfaces = self.state, self._surfaces
        record = state.record()
        provenance = (
            record_model.saved_provenance(state) if record is not None and record.saved else None
        )
        matrices = self.matrices(record)
        if record is None:
            surfaces.verdict.setText(
                record_text.no_record_verdict(state.problem is not None, kernel_name(state.kernel))
            )
        else:
            surfaces.verdict.setText(
                record_text.record_verdict_html(record, state.mutant, matrices)
            )
        surfaces.kill_view.set_matrices(matrices, evidence.check_caption(state))
        surfaces.kill_view.highlight_mutant(state.mutant)
        surfaces.coverage_view.set_section(self._coverage(record, provenance))
        key = (
            (id(record.check if record.check is not None else record.saved), record.stale)
            if (record is not None)
            else None
        )
        if key != self._log_key:
            self._log_key = key
            surfaces.log.setPlainText(
                "\n".join(record_text.record_log_lines(record, matrices, provenance))
                if record is not None
                else "No check of this input yet: Run check (Ctrl+R)."
            )
        if state.problem is None:
            surfaces.mark_stale("the input is invalid now: this is the last valid input")

    def _coverage(self, record: Any, provenance: Any) -> dict[str, Any] | None:
        if record is None:
            return None
        if record.of_other_kernel or "kernel changed" in record.stale:
            return {"absent": f"the check on show is {record.stale}"}
        if record.check is not None:
            return record.check.coverage
        return saved_coverage(self.state.session, provenance)

    def show_compile(self) -> None:
        """The compiler tab with the shape its output was compiled for, stale when that is
        not the input's."""
        state = self.state
        self._surfaces.compiler_view.set_info(
            state.compile_info, record_model.compile_caption(state)
        )
