"""The views read at a glance: the kill matrix heat map fits a 1920x1080 screen whatever the
faithful row says, the grid's ticks are whole lanes, its zoom resets, its worst-row button and
per-row scale work, and every view names the run it shows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from inspector.check import pipeline
from inspector.model import row_verdicts
from inspector.qt.widgets.kill_map import CELL_MIN, KillMatrixView
from inspector.qt.widgets.lane_grid import IntegerAxis
from oracle import fixtures


@pytest.fixture(scope="module")
def check_result():
    problem = fixtures.get("padded_row_stride").build()
    return pipeline.run_check(problem, pipeline.CheckConfig(run_kernel=False))


def _failing(matrix):
    """The matrix with its faithful implementation failing every fixture."""
    baseline = tuple(dataclasses.replace(o, passed=False) for o in matrix.baseline)
    return dataclasses.replace(matrix, baseline=baseline)


def test_the_heat_map_fits_a_full_hd_screen_and_a_failing_faithful_row_does_not_widen_it(
    qtbot, check_result
) -> None:
    view = KillMatrixView()
    qtbot.addWidget(view)
    view.resize(1400, 600)  # the tab's share of a 1920x1080 window
    matrix = check_result.model_matrix
    view.set_matrices([matrix, matrix], "from the check at 12:00:00")
    hint = view.heat_map.sizeHint()
    assert hint.width() <= 1400
    assert hint.height() <= 600
    assert view.heat_map._cell >= CELL_MIN
    view.set_matrices([_failing(matrix), matrix])
    assert view.heat_map.sizeHint() == hint
    assert "faithful FAILS" in view.summary.text()
    rows = view.model.row_labels()
    assert view.model.verdict(0).startswith("FAIL")
    assert len(rows) == 2 * (1 + len(matrix.mutants))


def test_heat_map_cells_tell_their_state_in_the_tooltip_and_copy_as_text(
    qtbot, check_result
) -> None:
    view = KillMatrixView()
    qtbot.addWidget(view)
    view.resize(1400, 600)
    matrix = check_result.model_matrix
    view.set_matrices([matrix])
    heat = view.heat_map
    fixture = heat.model.fixtures[0]
    from PySide6.QtCore import QPoint

    first_cell = QPoint(heat._label_width() + 2, heat._header_height() + 2)
    assert heat.cell_at(first_cell) == (0, 0)
    assert heat.tooltip_at(first_cell).startswith(f"model: faithful on {fixture}: pass")
    assert heat.tooltip_at(QPoint(0, 0)) == ""
    text = view.copy_to_clipboard()
    lines = text.splitlines()
    assert lines[0].split("\t")[0] == "implementation"
    assert lines[1].split("\t")[-1] == "all fixtures behave"
    assert len(lines) == 1 + 1 + len(matrix.mutants)
    view.highlight_mutant("missing_weight")
    assert view.selected_labels() == ["model: missing_weight"]


def test_lane_axes_tick_whole_lanes_only() -> None:
    axis = IntegerAxis("bottom")
    for low, high, size in ((0, 3, 600), (0, 1.2, 900), (0, 4096, 800)):
        levels = axis.tickSpacing(low, high, size)
        assert levels
        assert all(spacing >= 1 and float(spacing).is_integer() for spacing, _ in levels)
    assert axis.tickStrings([0.0, 1.0, 2.0], 1.0, 1.0) == ["0", "1", "2"]


def test_the_grid_zoom_resets_and_worst_row_selects_the_largest_error(qtbot, window) -> None:
    grid = window.grid
    problem = window.state.problem
    grid.plot.getPlotItem().getViewBox().setRange(xRange=(10, 12), yRange=(0, 0.5), padding=0)
    grid.reset_button.click()
    (left, right), (top, bottom) = grid.view_range()
    assert left <= -0.5
    assert right >= problem.block - 0.5
    assert top <= -0.5
    assert bottom >= problem.rows - 0.5
    worst = window.views.worst_row()
    expected = row_verdicts.worst_row(None, window.state.analysis.errors[1])
    assert worst == expected
    grid.worst_button.click()
    assert grid.selected_row == expected
    assert window.stepper.row == expected


def test_per_row_scale_redraws_the_grid_and_says_so(qtbot, window) -> None:
    grid = window.grid
    before = grid.image.rgba.copy()
    grid.per_row.setChecked(True)
    assert grid.image.per_row
    assert "colours scaled per row" in grid.counts.text()
    assert not np.array_equal(before, grid.image.rgba)
    grid.per_row.setChecked(False)
    assert not grid.image.per_row


def test_every_evidence_view_names_the_run_it_shows(qtbot, window) -> None:
    input_id = window.state.input_id
    assert window.grid.source.text().startswith(
        f"showing: input {input_id} · faithful lane model · kernel: "
    )
    assert window.row_table.note.text().endswith(f"input {input_id}")
    assert window.stepper.source.text() == window.grid.source.text()
    window.mutant_panel.set_current("missing_weight")
    qtbot.waitUntil(lambda: "mutant missing_weight" in window.grid.source.text(), timeout=5000)
    assert "lane model with mutant missing_weight" in window.stepper.source.text()
    assert window.row_table.note.text().startswith("tiled columns show mutant missing_weight")


def test_error_cells_are_coloured_against_the_tolerance(qtbot, window) -> None:
    from PySide6.QtCore import Qt

    state = window.state
    model = window.row_table.model
    faithful = pipeline.run_and_judge_kernel(state.problem, state.reference.y)
    assert state.set_kernel_run(faithful)
    column = model.column_names.index("kernel max rel")
    bound = model.column_names.index("kernel err/bound")
    rows = range(state.problem.rows)
    assert [model.tolerance_state(r, column) for r in rows] == ["within"] * len(rows)
    assert [model.tolerance_state(r, bound) for r in rows] == ["within"] * len(rows)
    state.set_mutant("sum_instead_of_mean")
    wrong = pipeline.run_and_judge_kernel(
        state.problem, state.reference.y, mutant="sum_instead_of_mean"
    )
    assert state.set_kernel_run(wrong)
    assert [model.tolerance_state(r, column) for r in rows] == ["outside"] * len(rows)
    assert [model.tolerance_state(r, bound) for r in rows] == ["outside"] * len(rows)
    tip = model.data(model.index(0, column), Qt.ItemDataRole.ToolTipRole)
    assert "OUTSIDE the tolerance" in tip
    assert model.data(model.index(0, column), Qt.ItemDataRole.BackgroundRole) is not None
    assert model.tolerance_state(0, model.column_names.index("row")) == ""


def test_the_batch_column_shows_the_checks_certificate(qtbot, window) -> None:
    import dataclasses

    from inspector.check import pipeline as pl

    state = window.state
    model = window.row_table.model
    column = model.column_names.index("batch Δulp")
    rows = state.problem.rows
    assert [model.data(model.index(r, column)) for r in range(rows)] == [""] * rows
    check = pl.run_check(state.problem, pl.CheckConfig(run_kernel=False))
    section = {"bit_identical": False, "rows_checked": rows, "batch_sizes": [1, 1055],
               "differing_rows": [{"row": 1, "max_ulp": 3}], "launches": [],
               "cuda_graph": "not run", "device": "cpu"}  # fmt: skip
    state.set_check_result(dataclasses.replace(check, batch_invariance=section))
    shown = [model.data(model.index(r, column)) for r in range(rows)]
    assert shown == ["0", "3"] + ["0"] * (rows - 2)
    assert model.tolerance_state(1, column) == "outside"
    assert model.tolerance_state(0, column) == "within"


def test_copy_takes_any_selection_of_cells(qtbot, window) -> None:
    from PySide6.QtCore import QItemSelection, QItemSelectionModel

    table = window.row_table
    proxy = table.proxy
    names = table.model.column_names
    first, second = names.index("rrms scalar"), names.index("rrms tiled")
    selection = QItemSelection(proxy.index(0, first), proxy.index(1, second))
    table.view.selectionModel().select(selection, QItemSelectionModel.SelectionFlag.ClearAndSelect)
    lines = table.copy_to_clipboard().splitlines()
    assert lines[0].split("\t") == names[first : second + 1]
    assert len(lines) == 3
    rrms = table.model.column_values("rrms scalar")
    assert lines[2].split("\t")[0] == repr(float(rrms[1]))
    table.view.clearSelection()
    everything = table.tsv().splitlines()
    assert len(everything) == 1 + window.state.problem.rows
    assert everything[0].split("\t") == names


def _with_baseline(matrix, actual: str, detail: str, count: int):
    """The matrix with its first ``count`` baseline fixtures given ``actual`` (a NO_VERDICT)."""
    baseline = list(matrix.baseline)
    runnable = [i for i, o in enumerate(baseline) if o.expected == "pass"][:count]
    for i in runnable:
        baseline[i] = dataclasses.replace(baseline[i], actual=actual, passed=False, detail=detail)
    names = [baseline[i].fixture for i in runnable]
    return dataclasses.replace(matrix, baseline=tuple(baseline)), names


def test_cells_this_machine_cannot_judge_or_outside_the_domain_are_neither_pass_nor_fail(
    qtbot, check_result
) -> None:
    from inspector.qt.table_models import NOT_JUDGED_COLOR
    from oracle.matrix import NOT_JUDGED, OUT_OF_DOMAIN

    view = KillMatrixView()
    qtbot.addWidget(view)
    view.resize(1400, 600)
    why = "not judged on this machine: bfloat16 arithmetic: mul gave 1e35"
    matrix, unjudged = _with_baseline(check_result.model_matrix, NOT_JUDGED, why, 2)
    view.set_matrices([matrix])
    columns = view.model.fixtures
    for name in unjudged:
        assert view.model.cell_state(0, columns.index(name)) == "not judged"
    assert view.model.verdict(0) == "all fixtures behave (2 not judged on this machine)"
    assert "2 NOT JUDGED on this machine" in view.summary.text()
    assert "rgb(200,150,0)" in view.summary.text()  # amber, not the green of a full proof
    assert "faithful FAILS" not in view.summary.text()
    verdict_cell = view.model.index(0, len(columns))
    assert view.model.data(verdict_cell, 9).color() == NOT_JUDGED_COLOR  # ForegroundRole
    tip = view.model.data(view.model.index(0, columns.index(unjudged[0])), 3)  # ToolTipRole
    assert tip.endswith(why)
    assert ": not judged\n" in tip

    why = "out of domain: width 4097 > the kernel's max_width 4096"
    matrix, outside = _with_baseline(check_result.model_matrix, OUT_OF_DOMAIN, why, 1)
    view.set_matrices([matrix])
    assert view.model.cell_state(0, view.model.fixtures.index(outside[0])) == "out of domain"
    assert view.model.verdict(0) == "all fixtures behave (1 out of its domain)"
    assert "1 out of the kernel's domain" in view.summary.text()
    assert "rgb(0,158,115)" in view.summary.text()
    text = view.tsv().splitlines()
    assert text[1].split("\t")[1 + view.model.fixtures.index(outside[0])] == "out of domain"
