"""The largest supported problems (rows x row_stride = 4,194,304) in the real window: input,
analysis and the downsampled lane grid, the model-only check on the worker, save, reopen.
Figures for the same stages: scripts/measure_scale.py and docs/SCALE.md."""

from __future__ import annotations

import numpy as np
import pytest

from inspector.qt.widgets import dialogs
from inspector.records.sessions.session import load_session
from oracle.spec import LIMITS


@pytest.mark.parametrize(("rows", "width"), [(4096, 1024), (64, 65536)])
def test_largest_problem_checks_saves_and_reopens(
    qtbot, window, settings, tmp_path, monkeypatch: pytest.MonkeyPatch, rows: int, width: int
) -> None:
    assert rows * width == LIMITS.max_elements
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, width))
    weight = rng.uniform(-2.0, 2.0, width)
    window.input_panel.set_values(x=x, weight=weight, eps=1e-6, dtype="float32", label="largest")
    problem = window.state.problem
    assert problem is not None
    assert window.input_panel.x_edit.isReadOnly()  # held as an array, not as 4M values of text

    def analysed(win) -> bool:
        return (
            win.state.problem is not None
            and win.state.tiled is not None
            and win.state.tiled.y.shape == (rows, width)
            and not win.runner.busy
        )

    qtbot.waitUntil(lambda: analysed(window), timeout=120000)
    image = window.grid.image
    assert image.downsampled
    assert image.rgba.shape[0] * image.rgba.shape[1] <= 1 << 20  # what is drawn
    assert "downsampled" in window.grid.counts.text()
    # The hover names the whole cell under the cursor, then the lane.
    hover = window.grid.describe(rows - 1, 0)
    assert hover.startswith(f"cell: rows {rows - image.row_step}-{rows - 1}, lanes 0-")
    assert f"row {rows - 1}, lane 0" in hover.split("under the cursor:")[1]
    assert window.row_table.model.rowCount() == rows

    window.kernel_in_check.setChecked(False)
    with qtbot.waitSignal(window.runner.result, timeout=120000) as blocker:
        assert window.run_check()
    result = blocker.args[1]
    assert result.passed, result.failures
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=10000)
    assert window.state.check_result is result

    path = tmp_path / f"largest_{rows}x{width}.h5"
    monkeypatch.setattr(dialogs, "choose_save_file", lambda *a: str(path))
    assert window.files.save_session_as(), window.status_line.text()
    session = load_session(path)
    np.testing.assert_array_equal(session.x, np.asarray(problem.x))
    assert session.results is not None
    assert session.results.passed

    from inspector.qt.window import InspectorWindow

    other = InspectorWindow(demo=False, settings=settings, autosave_dir=str(tmp_path / "auto"))
    qtbot.addWidget(other)
    try:
        assert other.files.open_session(str(path))
        qtbot.waitUntil(lambda: analysed(other), timeout=120000)
        np.testing.assert_array_equal(np.asarray(other.state.problem.x), np.asarray(problem.x))
        assert other.kill_view.model.row_labels() == window.kill_view.model.row_labels()
        assert other.grid.image.downsampled
        np.testing.assert_array_equal(other.grid.image.states, image.states)
    finally:
        other.state.dirty = False
        other.shutdown()
        other.close()
