"""First divergence (Run → First divergence, Ctrl+D, and the panel's button), judged by the
dtype's tolerance: none when the kernel's output is within it everywhere; the first stray store
when only its stores are wrong; else the worst lane outside the tolerance and the reduction step
where its row parts from the model, and why. The kernel is run first when there is no output of
it yet."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QTimer

from inspector.model import kernel_view
from inspector.model.events import Event
from inspector.model.kernel_choice import kernel_name
from inspector.model.state import InspectionState


@dataclass(frozen=True)
class DivergenceSurfaces:
    """What First divergence shows and moves: its panel and menu entry, the lane grid, the
    stepper in its tab, the scrolled inputs, the check log and status line, and the window's
    row selection and Run kernel."""

    panel: Any
    menu_action: Any
    grid: Any
    stepper: Any
    tabs: Any
    left_scroll: Any
    log: Callable[[str], None]
    status: Callable[[str], None]
    select_row: Callable[[int], None]
    run_kernel: Callable[[], bool]


class DivergenceActions(QObject):
    """First divergence of one window (``window.divergence_actions``)."""

    def __init__(self, state: InspectionState, surfaces: DivergenceSurfaces) -> None:
        super().__init__(surfaces.panel)
        self.state = state
        self._surfaces = surfaces
        self._after_run = False
        surfaces.menu_action.triggered.connect(self.first_divergence)
        surfaces.panel.button.clicked.connect(self.first_divergence)
        state.events.kernel.connect(self._on_kernel)
        # After the window's own renderer: the views hold the run when the jump reads them.
        state.events.kernel_run.connect(self._after_kernel_run)

    def update_enabled(self, idle: bool) -> None:
        valid = self.state.problem is not None
        self._surfaces.panel.button.setEnabled(idle and valid)
        self._surfaces.menu_action.setEnabled(idle and valid)

    def job_failed(self, name: str) -> None:
        """A kernel run meant for the jump failed: no jump when a later run ends."""
        if name == "kernel":
            self._after_run = False

    def _on_kernel(self, _event: Event) -> None:
        self._surfaces.panel.show_lines([])
        self._surfaces.grid.mark_lane(None)

    def first_divergence(self) -> bool:
        """Jump to where the kernel parts from the model (:func:`kernel_view.first_divergence`)
        and show why; runs the kernel first when there is no output yet."""
        surfaces, state = self._surfaces, self.state
        if not state.analysis_current or state.reference is None:
            self._surfaces.status("First divergence: the analysis of this input is still running")
            return False
        output = state.kernel_output()
        if output is None:
            if surfaces.run_kernel():
                self._after_run = True
                self._surfaces.status("First divergence: running the kernel on this input first…")
                return True
            self._surfaces.status(
                "First divergence needs the kernel's output: Run kernel or Run check"
            )
            return False
        found = kernel_view.first_divergence(state.problem, state.reference, output)
        # The margin row (a store no tile reaches) selects the last row; its cell is marked.
        surfaces.select_row(min(found.row, state.problem.rows - 1))
        # Within tolerance everywhere: the worst lane is pinned in the details pane, none is
        # outlined as parting.
        surfaces.grid.mark_lane(None if found.kind == "none" else (found.row, found.lane))
        if found.kind == "none":
            surfaces.grid.pin_lane((found.row, found.lane))
        if found.step:
            surfaces.stepper.go_to_key(found.step)
            surfaces.tabs.setCurrentWidget(surfaces.stepper)
        lines = [f"First divergence ({kernel_name(state.kernel)}, {output.source}):", *found.lines]
        surfaces.panel.show_lines(lines)
        # Once the panel's new height is laid out: the text's last line too, where it fits.
        panel_text = surfaces.panel.text
        QTimer.singleShot(0, lambda: surfaces.left_scroll.ensureWidgetVisible(panel_text))
        surfaces.log("\n".join(lines))
        self._surfaces.status(
            f"First divergence: none, within tolerance everywhere (worst: row {found.row}, "
            f"lane {found.lane})"
            if found.kind == "none"
            else f"First divergence: row {found.row}, lane {found.lane}, they part at "
            + ("the masked store" if found.kind == "stores" else found.step)
        )
        return True

    def _after_kernel_run(self, event: Event) -> None:
        if self._after_run:
            self._after_run = False
            self.first_divergence()
