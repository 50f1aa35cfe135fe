"""The evidence views' refresh: lane grid, reduction stepper and row table from the state, each
with its provenance line (:mod:`inspector.model.evidence`), and the row selection they share.

The window owns the widgets; this draws the state into them. Keeping it apart keeps the window
a layout and a router.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inspector.model import evidence, kernel_view, reduction_steps, row_verdicts, viewdata
from oracle import compare as cmp

if TYPE_CHECKING:
    from inspector.model.state import InspectionState
    from inspector.qt.widgets.lane_grid import LaneGrid
    from inspector.qt.widgets.stepper import ReductionStepper
    from inspector.qt.widgets.tables import RowTable


class EvidenceViews:
    """Draws the held analysis and kernel output into the grid, stepper and table."""

    def __init__(
        self,
        state: InspectionState,
        grid: LaneGrid,
        stepper: ReductionStepper,
        row_table: RowTable,
    ) -> None:
        self.state, self.grid, self.stepper, self.row_table = state, grid, stepper, row_table
        self._captions = ("", "")  # (grid and stepper, row table) as last drawn

    def refresh(self) -> None:
        """Grid, stepper and row table from the held analysis (when it is of this problem)."""
        state = self.state
        if not state.analysis_current:
            return  # the analysis of this problem is still running; it refreshes on arrival
        analysis, problem = state.analysis, state.problem
        assert analysis is not None
        assert problem is not None
        model, reference = analysis.model, analysis.reference
        output = state.kernel_output()
        kernel_oob = output.stores.output if output is not None else ()
        # The worker's grid image of this model holds no kernel stores.
        image = analysis.image if not kernel_oob else None
        stride = output.stores.row_stride if output is not None else 0
        self.grid.set_data(problem, model, kernel_oob, image=image, oob_stride=stride)
        self.grid.set_outputs(reference.y, output.y if output is not None else None)
        caption = evidence.views_caption(state)
        self.grid.set_source(caption)
        self.stepper.set_source(caption)
        self._captions = (caption, caption)
        row = min(self.grid.selected_row, problem.rows - 1)
        self.stepper.set_steps(self.steps(row), row)
        self.grid.set_span(self.stepper.active_lanes())
        columns = state.kernel_columns()
        table = viewdata.row_columns(
            problem,
            reference,
            model,
            columns.row_max_abs,
            columns.row_max_rel,
            analysis.errors,
            columns.row_bound_ratio,
            columns.row_batch_ulp,
        )
        inferred = kernel_view.kernel_columns(problem, reference, state)
        table = kernel_view.with_inferred(table, inferred)
        flags = row_verdicts.tolerance_flags(table, cmp.TOLERANCES[problem.dtype])
        note = f"{columns.note} · input {state.input_id}"
        self.row_table.set_columns(table, note, flags)
        self._captions = (caption, note)
        self.row_table.select_row(row)

    def mark_stale(self, reason: str) -> None:
        """Mark the grid, stepper and row table stale in place (they keep the last input they
        drew, which is no longer the input: ``reason`` says why)."""
        views, table = self._captions
        stale = evidence.stale_caption(reason, views)
        self.grid.set_source(stale)
        self.stepper.set_source(stale)
        self.row_table.note.setText(evidence.stale_caption(reason, table))

    def steps(self, row: int) -> list[reduction_steps.ReductionStep]:
        """The stepper's steps of ``row``: the lane model's, the kernel's values beside."""
        state = self.state
        steps = reduction_steps.reduction_steps(state.problem, state.tiled, row, state.reference)
        return kernel_view.annotate_steps(
            steps,
            state.problem,
            state.reference,
            row,
            state.kernel_output(),
            state.kernel_inferred(),
        )

    def select_row(self, row: int) -> None:
        """Select a row everywhere: grid highlight, stepper, table."""
        state = self.state
        if not state.analysis_current or state.problem is None:
            return
        row = min(max(int(row), 0), state.problem.rows - 1)
        self.grid.select_row(row)
        self.stepper.set_steps(self.steps(row), row)
        self.grid.set_span(self.stepper.active_lanes())
        self.row_table.select_row(row)

    def worst_row(self) -> int | None:
        """The row with the largest relative error: the kernel's when one ran, else the lane
        model's against the scalar reference (None: nothing analysed yet)."""
        state = self.state
        if not state.analysis_current or state.analysis is None:
            return None
        kernel_rel = state.kernel_columns().row_max_rel
        return row_verdicts.worst_row(kernel_rel, state.analysis.errors[1])

    def select_worst_row(self) -> int | None:
        """Select :meth:`worst_row` everywhere; returns it."""
        row = self.worst_row()
        if row is not None:
            self.select_row(row)
        return row
