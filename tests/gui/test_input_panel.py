"""Input panel: every field through the oracle's validator; invalid input never runs."""

from __future__ import annotations

import numpy as np
import pytest

from inspector.qt.widgets import dialogs
from inspector.qt.widgets.input_panel import InputPanel
from oracle import fixtures


@pytest.fixture
def panel(qtbot) -> InputPanel:
    widget = InputPanel()
    qtbot.addWidget(widget)
    return widget


def test_fixture_fills_fields_and_validates(panel: InputPanel) -> None:
    panel.load_fixture("hand_checkable")
    problem = panel.problem
    assert problem is not None
    assert (problem.rows, problem.width) == (1, 2)
    assert panel.rows_edit.text() == "1"
    assert panel.width_edit.text() == "2"
    np.testing.assert_array_equal(problem.x, [[3.0, 4.0]])
    assert panel.field_error("x") is None


@pytest.mark.parametrize(
    "name",
    [f.name for f in fixtures.FIXTURES if f.check == "rejection"],
)
def test_malformed_fixture_marks_its_field(panel: InputPanel, name: str) -> None:
    fixture = fixtures.get(name)
    panel.load_fixture(name)
    assert panel.problem is None
    error = panel.field_error(fixture.reject_field)
    assert error, f"{fixture.reject_field} not marked for {name}"
    assert error.startswith(fixture.reject_field)
    assert panel.message.text() == error
    assert panel.field_widget(fixture.reject_field).property("invalid") is True


def test_typing_an_invalid_eps_then_fixing_it(qtbot, panel: InputPanel) -> None:
    panel.load_fixture("hand_checkable")
    with qtbot.waitSignal(panel.problem_changed, timeout=2000) as blocker:
        panel.eps_edit.clear()
        qtbot.keyClicks(panel.eps_edit, "abc")
    assert blocker.args == [None]
    assert "eps" in panel.field_error("eps")
    with qtbot.waitSignal(panel.problem_changed, timeout=2000) as blocker:
        panel.eps_edit.clear()
        qtbot.keyClicks(panel.eps_edit, "1e-5")
    assert blocker.args[0] is not None
    assert panel.field_error("eps") is None
    assert blocker.args[0].eps == pytest.approx(1e-5)


def test_ragged_text_names_x(panel: InputPanel) -> None:
    panel.set_values(x="1, 2, 3; 4, 5", weight="1, 1, 1")
    assert panel.problem is None
    assert "width mismatch" in panel.field_error("x")


def test_random_is_reproducible_and_big_inputs_stay_arrays(panel: InputPanel) -> None:
    panel.set_values(x="1 2", weight="1 1")
    panel.rows_edit.setText("64")
    panel.width_edit.setText("100")
    panel.seed_edit.setText("7")
    panel.load_random()
    first = panel.problem
    assert first is not None
    assert first.x.shape == (64, 100)
    assert panel.x_edit.isReadOnly()  # 6400 values: held as an array, summarised
    panel.load_random()
    np.testing.assert_array_equal(panel.problem.x, first.x)
    panel.seed_edit.setText("-1")
    panel.load_random()
    assert "seed" in panel.field_error("seed")


def test_npy_import_through_the_dialog_function(
    panel: InputPanel, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.npy"
    np.save(path, np.arange(12, dtype=np.float32).reshape(3, 4))
    monkeypatch.setattr(dialogs, "choose_open_file", lambda *a: str(path))
    panel.import_npy()
    assert panel.problem is not None
    np.testing.assert_array_equal(panel.problem.x, np.arange(12).reshape(3, 4))
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((2, 2, 2)))
    monkeypatch.setattr(dialogs, "choose_open_file", lambda *a: str(bad))
    panel.import_npy()
    assert "3-D" in panel.field_error("x")


def test_npy_import_refuses_a_fifo_and_a_device_by_their_type(
    panel: InputPanel, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    # Refused from the path's type before anything opens it (a FIFO would block np.load).
    fifo = tmp_path / "values.npy"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), ("/dev/zero", "a device")):
        monkeypatch.setattr(dialogs, "choose_open_file", lambda *a, p=path: str(p))
        panel.import_npy()
        assert panel.field_error("x") == f"x: {path} is {kind}"
