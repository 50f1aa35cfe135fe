"""The main window: builds, blocks invalid input, mutants, stepper, table, grid."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from inspector.model import viewdata
from oracle import compare as cmp
from oracle import fixtures, scalar, tiled
from oracle.mutants import MODEL_MUTANTS


def test_window_builds_with_the_demo_input(window) -> None:
    problem = window.state.problem
    assert problem is not None
    image = window.grid.image
    assert image is not None
    assert image.rgba.shape == (problem.rows, problem.block, 4)
    assert window.grid.image_item.image.shape == (problem.rows, problem.block, 4)
    counts = window.grid.counts.text()
    assert f"width <b>{problem.width}</b>" in counts
    assert f"tile <b>{problem.block}</b>" in counts
    assert f"masked <b>{problem.block - problem.width}</b>" in counts
    assert window.device_label.text().startswith("device:")
    assert window.run_check_button.isEnabled()
    assert window.row_table.model.rowCount() == problem.rows


def test_invalid_field_shows_message_and_blocks_running(qtbot, window) -> None:
    window.input_panel.eps_edit.setText("0.5")
    window.input_panel.validate()
    assert window.state.problem is None
    message = window.input_panel.field_error("eps")
    assert message.startswith("eps:")
    assert "0.01" in message
    assert window.input_panel.message.text() == message
    assert not window.run_check_button.isEnabled()
    assert not window.run_kernel_button.isEnabled()
    assert window.run_check() is False
    assert not window.runner.busy
    window.input_panel.eps_edit.setText("1e-6")
    window.input_panel.validate()
    assert window.run_check_button.isEnabled()


def _table_snapshot(window) -> dict[str, np.ndarray]:
    model = window.row_table.model
    names = ["Σx² tiled", "mean² tiled", "rrms tiled", "model max abs", "model max rel"]
    return {name: np.array(model.column_values(name), dtype=np.float64) for name in names}


# Mutants the default input cannot show, and a fixture that does (half_accumulation is the real
# kernel on float32; eps outside the root moves nothing while eps << the mean square).
SHOWN_BY = {
    "half_accumulation": "float16_square_underflow",
    "eps_outside_root": "float32_mean_square_near_eps",
}


@pytest.mark.parametrize("mutant", MODEL_MUTANTS)
def test_each_mutant_toggle_changes_table_grid_and_stepper(
    qtbot, click_switch, window, mutant
) -> None:
    if mutant in SHOWN_BY:
        shown = fixtures.get(SHOWN_BY[mutant]).build()
        window.input_panel.load_fixture(SHOWN_BY[mutant])

        def loaded() -> bool:
            problem = window.state.problem
            return problem is not None and (problem.width, problem.dtype, problem.eps) == (
                shown.width, shown.dtype, shown.eps)  # fmt: skip

        qtbot.waitUntil(loaded, timeout=5000)
    before = _table_snapshot(window)
    click_switch(qtbot, window.mutant_panel.switches[mutant])
    assert window.mutant_panel.current == mutant
    assert window.state.tiled.mutant == mutant
    after = _table_snapshot(window)
    changed = [n for n in before if not np.array_equal(before[n], after[n], equal_nan=True)]
    assert changed, f"{mutant} changed no table column"
    # The mutant shows in the table: the model's output no longer matches the reference
    # (missing_epsilon only moves rows whose mean square is near eps: zero_row kills it).
    if mutant != "missing_epsilon":
        assert np.nanmax(after["model max rel"]) > cmp.TOLERANCES[window.state.problem.dtype].rtol
    # The table agrees with the oracle's own mutated model.
    expected = tiled.model(window.state.problem, mutant=mutant)
    np.testing.assert_array_equal(after["rrms tiled"], expected.rrms.astype(np.float64))
    assert mutant in window.grid.counts.text()
    assert window.stepper.steps[0].key == "load"
    # Switching it off restores the faithful values.
    click_switch(qtbot, window.mutant_panel.switches[mutant])
    assert window.mutant_panel.current is None
    restored = _table_snapshot(window)
    for name, values in before.items():
        np.testing.assert_array_equal(restored[name], values)


def test_masked_tail_mutant_colours_poison_lanes(qtbot, window) -> None:
    assert not (window.grid.image.states == viewdata.POISON_IN).any()
    window.mutant_panel.set_current("masked_tail_inclusion")
    states = window.grid.image.states
    assert (states[:, window.state.problem.width :] == viewdata.POISON_IN).all()
    assert "poison" in window.grid.counts.text()


def test_mutants_are_exclusive(qtbot, click_switch, window) -> None:
    switches = window.mutant_panel.switches
    click_switch(qtbot, switches["missing_square"])
    click_switch(qtbot, switches["missing_weight"])
    assert window.mutant_panel.current == "missing_weight"
    assert not switches["missing_square"].isChecked()


def test_stepping_to_the_end_reaches_the_oracles_rrms(qtbot, window) -> None:
    window.select_row(2)
    stepper = window.stepper
    assert stepper.row == 2
    qtbot.mouseClick(stepper.first_button, Qt.MouseButton.LeftButton)
    keys = []
    while stepper.forward_button.isEnabled():
        keys.append(stepper.current.key)
        qtbot.mouseClick(stepper.forward_button, Qt.MouseButton.LeftButton)
    keys.append(stepper.current.key)
    block = window.state.problem.block
    stage_count = block.bit_length() - 1
    assert keys == (
        ["load", "square"]
        + [f"stage{k}" for k in range(1, stage_count + 1)]
        + ["sum", "mean", "eps", "rsqrt", "scale", "store"]
    )
    steps = {step.key: step for step in stepper.steps}
    reference = scalar.reference(window.state.problem)
    rrms = steps["rsqrt"].scalar
    assert rrms == float(window.state.tiled.rrms[2])
    assert rrms == pytest.approx(reference.rrms[2], rel=cmp.INTERMEDIATE_TOLERANCE.rtol)
    assert steps["sum"].scalar == float(window.state.tiled.sum_squares[2])
    assert steps[f"stage{stage_count}"].scalar == steps["sum"].scalar
    # The last step draws the stored row: read the curve back.
    x, y = stepper.plotted()
    assert len(x) == block + 1
    np.testing.assert_array_equal(y[: window.state.problem.width], window.state.tiled.y[2])
    assert not y[window.state.problem.width :].any()
    # Back from the end, and the grid highlights the lanes of the current stage.
    qtbot.mouseClick(stepper.back_button, Qt.MouseButton.LeftButton)
    assert stepper.current.key == "scale"
    stepper.go_to(keys.index("stage2"))
    assert window.grid._span == block // 4
    x, y = stepper.plotted()
    np.testing.assert_array_equal(y, window.state.tiled.stages[2][2])


def test_play_runs_to_the_end(qtbot, window) -> None:
    stepper = window.stepper
    stepper._timer.setInterval(5)
    qtbot.mouseClick(stepper.play_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not stepper.play_button.isChecked(), timeout=5000)
    assert stepper.index == len(stepper.steps) - 1


def test_grid_hover_text_and_row_selection(qtbot, window) -> None:
    problem = window.state.problem
    row, lane = 1, 5
    text = window.grid.describe(row, lane)
    address = row * problem.row_stride + lane
    assert f"address {row} * {problem.row_stride} + {lane} = {address}" in text
    value = float(window.state.tiled.lanes[row, lane])
    assert f"x = {value:.7g}" in text
    assert f"x² = {value * value:.7g}"[:8] in text
    tail = window.grid.describe(0, problem.block - 1)
    assert "tail" in tail
    assert "poison" in tail
    assert window.grid.cell_at(lane + 0.2, row + 0.2) == (row, lane)
    assert window.grid.cell_at(-1, 0) is None
    with qtbot.waitSignal(window.grid.row_selected):
        window.grid.select_row(2)
    assert window.stepper.row == 2
    assert window.grid.row_box.rect().top() == pytest.approx(1.5)


def test_row_table_sorts_and_copies(qtbot, window) -> None:
    table = window.row_table
    column = table.model.column_names.index("rrms scalar")
    table.view.sortByColumn(column, Qt.SortOrder.DescendingOrder)
    shown = [
        table.proxy.data(table.proxy.index(r, column), Qt.ItemDataRole.UserRole)
        for r in range(table.proxy.rowCount())
    ]
    assert shown == sorted(shown, reverse=True)
    window.select_row(1)
    one = table.copy_to_clipboard().strip().split("\n")
    assert len(one) == 2
    assert one[1].split("\t")[0] == "1"
    table.view.clearSelection()
    text = table.copy_to_clipboard()
    lines = text.strip().split("\n")
    assert lines[0].split("\t") == table.model.column_names
    assert len(lines) == window.state.problem.rows + 1
    first_row = int(lines[1].split("\t")[0])
    rrms = float(lines[1].split("\t")[column])
    assert rrms == scalar.reference(window.state.problem).rrms[first_row]  # repr-exact
    from PySide6.QtGui import QGuiApplication

    assert QGuiApplication.clipboard().text() == text


def test_large_problem_is_analysed_off_the_gui_thread_and_downsampled(qtbot, window) -> None:
    panel = window.input_panel
    panel.rows_edit.setText("300")
    panel.width_edit.setText("1000")
    panel.stride_edit.setText("")
    with qtbot.waitSignal(window.runner.finished, timeout=30000):
        panel.load_random()
        # 300k elements: the worker computes the reference (started once the GUI work of this
        # event is done, so that nothing on the GUI thread competes with it for the GIL).
        assert window.runner.busy or window.analysis_runs.scheduled
    assert window.state.tiled.lanes.shape == (300, 1024)
    image = viewdata.lane_image(window.state.tiled, window.grid._lut, max_cells=4096)
    assert image.downsampled
    assert image.rgba.shape[0] * image.rgba.shape[1] <= 4096


def test_fixture_picker_in_the_window(qtbot, window) -> None:
    combo = window.input_panel.fixture_combo
    index = combo.findData("zero_row")
    combo.setCurrentIndex(index)
    combo.activated.emit(index)
    assert window.state.problem.name == "text"
    assert window.state.problem.rows == 2
    assert window.row_table.model.column_values("rrms tiled")[0] == pytest.approx(1e3, rel=1e-3)


def test_hover_and_click_through_real_mouse_events(qtbot, window) -> None:
    from PySide6.QtCore import QPointF

    grid = window.grid
    view = grid.plot.getPlotItem().getViewBox()
    scene_point = view.mapViewToScene(QPointF(5.5, 2.0))  # lane 5 of row 2
    pos = grid.plot.mapFromScene(scene_point)
    qtbot.mouseMove(grid.plot.viewport(), pos)
    qtbot.waitUntil(lambda: bool(grid.hover_text), timeout=2000)
    # The cell under the pointer, as the scene maps the (integer) viewport position back.
    under = view.mapSceneToView(grid.plot.mapToScene(pos))
    row, lane = grid.cell_at(under.x(), under.y())
    assert row == 2
    problem = window.state.problem
    address = row * problem.row_stride + lane
    assert f"address {row} * {problem.row_stride} + {lane} = {address}" in grid.hover_text
    assert grid.hover_text == grid.describe(row, lane)
    with qtbot.waitSignal(grid.row_selected, timeout=2000) as blocker:
        qtbot.mouseClick(grid.plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert blocker.args == [2]
    assert window.stepper.row == 2
