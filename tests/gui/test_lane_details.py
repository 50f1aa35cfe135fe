"""The lane grid's details pane (the lane under the mouse stays readable when the mouse rests
or leaves; a clicked lane is pinned) and First divergence in the window, judged by the
tolerance: the tutorial kernel has none, the unmasked_store mutant is taken to its first stray
store and its stores into the next row are drawn and named in the pane."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QPoint, QPointF, Qt

from inspector.model import viewdata
from inspector.qt.widgets import dialogs
from oracle.spec import synthetic_problem
from tests.gui.helpers import KERNEL_TIMEOUT_MS as TIMEOUT_MS
from tests.gui.helpers import run_kernel

TUTORIAL = Path(__file__).resolve().parents[2] / "resources" / "kernels" / "tutorial.py"


def _viewport_pos(grid, row: int, lane: int) -> QPoint:
    view = grid.plot.getPlotItem().getViewBox()
    return grid.plot.mapFromScene(view.mapViewToScene(QPointF(lane, row)))


def _set_input(window, rows: int, width: int) -> None:
    problem = synthetic_problem(rows, width, seed=0)
    window.input_panel.set_values(
        x=np.array(problem.x), weight=np.array(problem.weight), eps="1e-6", dtype="float32"
    )
    assert window.state.analysis_current


def test_the_pane_keeps_the_hovered_lane_and_pins_a_clicked_one(qtbot, window) -> None:
    grid, pane = window.grid, window.grid.details
    assert pane.isVisible()
    assert pane.text.toPlainText() == ""
    qtbot.mouseMove(grid.plot.viewport(), _viewport_pos(grid, 2, 5))
    qtbot.waitUntil(lambda: pane.cell is not None, timeout=2000)
    row, lane = pane.cell
    shown = pane.text.toPlainText()
    assert shown == grid.describe(row, lane)
    problem = window.state.problem
    assert f"address {row} * {problem.row_stride} + {lane}" in shown
    assert f"w = {float(problem.weight[lane]):.7g}" in shown
    assert pane.caption.text() == "Lane details · under the mouse"
    # The mouse rests, then leaves the plot: the text stays (a tooltip would have gone).
    qtbot.wait(1500)
    qtbot.mouseMove(window.run_check_button)
    qtbot.wait(50)
    assert pane.text.toPlainText() == shown
    # A click pins the lane: other lanes under the mouse no longer replace it.
    qtbot.mouseClick(grid.plot.viewport(), Qt.MouseButton.LeftButton, pos=_viewport_pos(grid, 1, 3))
    assert pane.pinned == (1, 3)
    assert grid.selected_row == 1
    assert grid.pin_box.isVisible()
    assert pane.text.toPlainText() == grid.describe(1, 3)
    assert pane.caption.text() == "Lane details · pinned"
    qtbot.mouseMove(grid.plot.viewport(), _viewport_pos(grid, 0, 7))
    qtbot.wait(50)
    assert pane.text.toPlainText() == grid.describe(1, 3)
    # Unpin: the pane follows the mouse again.
    qtbot.mouseClick(pane.unpin_button, Qt.MouseButton.LeftButton)
    assert pane.pinned is None
    qtbot.mouseMove(grid.plot.viewport(), _viewport_pos(grid, 0, 9))
    qtbot.waitUntil(lambda: pane.cell == (0, 9), timeout=2000)
    assert pane.text.toPlainText() == grid.describe(0, 9)


def test_a_pinned_lane_shows_the_kernels_y_once_it_ran(qtbot, window) -> None:
    _set_input(window, 3, 40)
    grid, pane = window.grid, window.grid.details
    grid.pin_lane((1, 7))
    assert "y (kernel) = not run yet" in pane.text.toPlainText()
    run_kernel(qtbot, window)
    y = window.state.kernel_output().y
    assert pane.pinned == (1, 7)
    assert f"y (kernel) = {float(y[1, 7]):.7g}" in pane.text.toPlainText()
    assert "error = " in pane.text.toPlainText()


def test_the_unmasked_store_mutant_is_taken_to_its_first_stray_store_and_its_cross_row_stores_named(
    qtbot, window
) -> None:
    _set_input(window, 4, 72)
    window.mutant_panel.set_current("unmasked_store")
    run_kernel(qtbot, window)
    grid, pane = window.grid, window.grid.details
    states = grid.image.states
    assert (states[:3, 72:] == viewdata.CROSS_ROW).all()
    assert (states[3, 72:] == viewdata.OOB_WRITE).all()
    assert "cross-row stores (inferred) <b>168</b>" in grid.counts.text()
    lanes, rows = grid.glyphs[viewdata.CROSS_ROW].getData()
    assert len(lanes) == 168
    assert set(rows.tolist()) == {0.0, 1.0, 2.0}
    # First divergence: the output is within tolerance; the first store the guard saw.
    assert window.divergence_actions.first_divergence()
    assert grid.marked == (3, 72)
    assert pane.pinned == (3, 72)
    assert "out-of-bounds WRITE: stored to address 288" in pane.text.toPlainText()
    assert window.stepper.current.key == "store"
    assert "at the masked store" in window.stepper.kernel_line.text()
    text = "\n".join(window.divergence.lines)
    assert "but it stored out of bounds:" in text
    assert "and 168 cross-row store(s)" in text
    # The lanes the hover called "masked tail / holds poison": named in the pane.
    qtbot.mouseClick(
        grid.plot.viewport(), Qt.MouseButton.LeftButton, pos=_viewport_pos(grid, 1, 100)
    )
    assert pane.pinned == (1, 100)
    assert "cross-row STORE (inferred): stores to address 172 = row 2, lane 28" in (
        pane.text.toPlainText()
    )
    grid.pin_lane((2, 28))
    assert "stray store from row 1, lane 100 lands here" in pane.text.toPlainText()


def test_the_tutorial_kernel_has_no_divergence_and_the_stepper_no_parting(
    qtbot, window, monkeypatch
) -> None:
    _set_input(window, 4, 70)
    monkeypatch.setattr(dialogs, "choose_open_file", lambda *a: str(TUTORIAL))
    window.menus.open_kernel.trigger()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=TIMEOUT_MS)
    assert window.state.kernel is not None
    with qtbot.waitSignal(window.runner.finished, timeout=TIMEOUT_MS):
        window.menus.divergence.trigger()  # runs the kernel first, then judges
    qtbot.waitUntil(lambda: len(window.divergence.lines) > 1, timeout=TIMEOUT_MS)
    lines = window.divergence.lines
    assert lines[0].startswith("First divergence (tutorial.py:rms_norm, Run kernel")
    assert lines[1].startswith("no divergence: within tolerance everywhere (worst: row ")
    assert window.grid.marked is None
    assert window.status_line.text().startswith("First divergence: none, within tolerance")
    # The worst lane is pinned in the details pane, its error there beside x, w and y.
    row, lane = window.grid.details.pinned
    assert lines[1].startswith(
        f"no divergence: within tolerance everywhere (worst: row {row}, lane {lane}: "
    )
    assert "error = " in window.grid.details.text.toPlainText()
    for index in range(len(window.stepper.steps)):
        window.stepper.go_to(index)
        assert "part HERE" not in window.stepper.kernel_line.text()
