"""Run kernel's Batch-invariant control: it says what the mode is and is reachable from the
keyboard; a run with it on launches ``kernels.plans.invariant_config``'s layout and off
``choose_config``'s (the recorded layout says which); evidence of the other mode is stale as
another kernel's is; a session keeps the mode (and the saved kernel run's), and older files read
as the default launch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

from inspector.check import report
from inspector.model import launch
from inspector.qt.widgets import dialogs
from inspector.records.sessions.session import load_session, save_session
from oracle.dtypes import ITEMSIZE
from oracle.spec import synthetic_problem
from tests.gui.helpers import KERNEL_TIMEOUT_MS as TIMEOUT_MS
from tests.gui.helpers import run_kernel

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "resources" / "demo_session.h5"


def _small_input(window, rows: int = 3, width: int = 40) -> None:
    problem = synthetic_problem(rows, width, seed=1)
    window.input_panel.set_values(
        x=np.array(problem.x), weight=np.array(problem.weight), eps="1e-6", dtype="float32"
    )
    assert window.state.analysis_current


def _run_kernel(qtbot, window) -> None:
    run_kernel(qtbot, window)
    assert window.state.kernel_run is not None, window.status_line.text()


def _needs_kernel(window) -> None:
    if not window.env["available"]:
        pytest.skip("kernel floor unavailable")


def _layout(config) -> tuple[str, int, int, int, int]:
    """A LaunchConfig as the recorded Launch names it (block: the tile's lanes per row)."""
    return (
        config.path,
        config.block + config.block2,
        config.num_warps,
        config.rows_per_program,
        0 if not config.peel else -1,
    )


def _recorded(window) -> tuple[str, int, int, int, int]:
    got = window.state.kernel_run.launch
    return (got.path, got.block, got.num_warps, got.rows_per_program, got.peel)


def test_the_control_says_what_the_mode_is_and_follows_the_state(qtbot, window, click_switch):
    box, action = window.batch_invariant, window.menus.batch_invariant
    assert box.objectName() == "batch_invariant"
    assert box.parentWidget() is window.run_kernel_button.parentWidget()
    assert launch.TOOLTIP in box.toolTip()
    assert launch.TOOLTIP == (
        "one layout per width and dtype: every row gets the same bits in any batch"
    )
    assert box.accessibleName() == "Batch-invariant"
    assert box.focusPolicy() & Qt.FocusPolicy.TabFocus
    assert action.isCheckable()
    assert action.shortcut().toString() == "Ctrl+Shift+K"
    assert action in window.menus.run_menu.actions()
    assert launch.TOOLTIP in action.toolTip()
    assert not window.state.batch_invariant
    assert not box.isChecked()

    click_switch(qtbot, box)  # UI -> state -> menu
    assert window.state.batch_invariant
    assert action.isChecked()
    assert window.state.dirty
    action.trigger()  # the menu (its shortcut) -> state -> box
    assert not window.state.batch_invariant
    assert not box.isChecked()
    window.state.set_batch_invariant(True)  # state -> both
    assert box.isChecked()
    assert action.isChecked()
    qtbot.keyClick(box, Qt.Key.Key_Space)  # the keyboard, focus on the box
    assert not window.state.batch_invariant
    window.run_box.name_kernel("mine.py:rms_norm")  # a user's kernel launches itself
    assert not box.isEnabled()
    assert "mine.py:rms_norm launches itself" in box.toolTip()
    window.run_box.name_kernel(None)
    assert box.isEnabled() == window.env["available"]


def test_toggling_marks_the_saved_kernel_evidence_stale(window) -> None:
    assert window.files.open_session(str(DEMO), interactive=False, as_template=True)
    record = window.state.record()
    assert record.current
    assert record.batch_invariant is False
    assert window.state.kernel_output() is not None
    assert "launch: the kernel ran the default launch" in window.summary.toPlainText()

    window.batch_invariant.setChecked(True)
    stale = window.state.record()
    assert stale.stale == "of the default launch, not the batch-invariant launch chosen now"
    assert stale.of_other_kernel  # as a check of another kernel: its kernel evidence withdrawn
    assert window.verdict.text().startswith("<b style=")
    assert "STALE" in window.verdict.text()
    assert report.PASSED_COLOR not in window.verdict.text()  # its verdict never in colour
    log = window.summary.toPlainText().splitlines()
    assert log[0] == f"record: {stale.tag}"
    assert log[1] == f"STALE: {stale.stale}"
    assert window.kill_view.source.text() == f"from {stale.caption()}" or (
        window.kill_view.source.text().startswith(f"from {stale.caption()};")
    )
    assert all(not label.startswith("kernel") for label in window.kill_view.model.row_labels())
    assert window.state.kernel_output() is None
    assert window.stepper.source.text().endswith("kernel: not run on this input")

    window.batch_invariant.setChecked(False)  # the chosen mode again: current again
    assert window.state.record().current
    assert window.state.kernel_output() is not None
    assert "STALE" not in window.summary.toPlainText()


def test_a_run_with_the_mode_on_launches_the_invariant_layout(qtbot, window) -> None:
    _needs_kernel(window)
    from kernels.instruments.checked import resolve_device
    from kernels.layout import choose_config, sm_count_for
    from kernels.plans import invariant_config

    _small_input(window)
    rows, width = 3, 40
    itemsize = ITEMSIZE["float32"]
    invariant = _layout(invariant_config(width, itemsize))
    default = _layout(choose_config(rows, width, itemsize, sm_count_for(resolve_device("auto"))))
    assert invariant != default  # a tiny batch: the default picks another layout

    window.batch_invariant.setChecked(True)
    _run_kernel(qtbot, window)
    run = window.state.kernel_run
    assert run.launch.batch_invariant
    assert _recorded(window) == invariant
    assert run.comparison.passed
    words = run.launch.words()
    assert words.startswith("batch-invariant launch: multi_row, block 64, 4 warps, 16 rows")
    assert words in window.status_line.text()
    assert window.summary.toPlainText().splitlines()[-1].endswith(f"({words})")
    assert "Run kernel" in window.stepper.source.text()

    # The other mode: its run is dropped (as another kernel's); a run now chooses the default.
    window.batch_invariant.setChecked(False)
    assert window.state.kernel_run is None
    assert window.stepper.source.text().endswith("kernel: not run on this input")
    _run_kernel(qtbot, window)
    run = window.state.kernel_run
    assert not run.launch.batch_invariant
    assert _recorded(window) == (*default[:4], run.launch.peel)
    assert run.launch.words().startswith("default launch: one_row")
    assert run.launch.words() in window.status_line.text()


def test_a_result_of_the_other_mode_is_ignored(qtbot, window) -> None:
    _needs_kernel(window)
    _small_input(window)
    window.batch_invariant.setChecked(True)
    with qtbot.waitSignal(window.runner.finished, timeout=TIMEOUT_MS):
        assert window.run_kernel()
        window.batch_invariant.setChecked(False)  # while the invariant run is in flight
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=TIMEOUT_MS)
    assert window.state.kernel_run is None
    assert "launch mode; ignored" in window.status_line.text()


def _older_than_the_mode(tmp_path) -> Path:
    """The demo as a file written before the mode: its kernel run without the attribute."""
    import h5py

    from inspector.records.sessions.seal import read_seal, write_seal

    older = tmp_path / "older.h5"
    older.write_bytes(DEMO.read_bytes())
    version = int(read_seal(older)["schema_version"])
    with h5py.File(older, "r+") as handle:
        kernels = []
        handle.visititems(
            lambda name, item: kernels.append(item) if "batch_invariant" in item.attrs else None
        )
        for item in kernels:
            del item.attrs["batch_invariant"]
    write_seal(older, version)
    return older


def test_a_session_keeps_the_mode_and_its_kernel_runs(window, monkeypatch, tmp_path) -> None:
    # The demo: the default launch, the control off; a file older than the mode reads as one.
    demo = load_session(DEMO)
    assert demo.batch_invariant is False
    assert demo.results.kernel_batch_invariant is False
    older = _older_than_the_mode(tmp_path)
    assert load_session(older).results.kernel_batch_invariant is None
    window.batch_invariant.setChecked(True)
    assert window.files.open_session(str(older), interactive=False, as_template=True)
    assert not window.batch_invariant.isChecked()
    assert not window.menus.batch_invariant.isChecked()

    # Saved with the mode on: reopened, the control is on again, and the saved kernel run
    # (the demo's check, a default launch) is stale under it.
    window.batch_invariant.setChecked(True)
    path = tmp_path / "h_win_mode.h5"
    monkeypatch.setattr(dialogs, "choose_save_file", lambda *a: str(path))
    assert window.files.save_session_as()
    saved = load_session(path)
    assert saved.batch_invariant is True
    assert saved.results.kernel_batch_invariant is False
    window.batch_invariant.setChecked(False)
    assert window.files.open_session(str(path), interactive=False)
    assert window.batch_invariant.isChecked()
    assert window.state.batch_invariant
    assert window.state.record().stale.startswith("of the default launch")

    # A saved kernel run of the batch-invariant launch: its record says so and holds while
    # the mode is on, and is stale once it is off.
    saved.results.kernel_batch_invariant = True
    invariant = tmp_path / "h_win_invariant.h5"
    save_session(invariant, saved)
    assert load_session(invariant).results.kernel_batch_invariant is True
    assert window.files.open_session(str(invariant), interactive=False)
    record = window.state.record()
    assert record.batch_invariant is True
    assert record.current
    assert "launch: the kernel ran the batch-invariant launch" in window.summary.toPlainText()
    window.batch_invariant.setChecked(False)
    assert window.state.record().stale == (
        "of the batch-invariant launch, not the default launch chosen now"
    )
    assert window.state.kernel_output() is None


def test_run_check_asks_for_the_chosen_launch_of_the_bundled_kernel(
    qtbot, window, monkeypatch
) -> None:
    from inspector.jobs import tasks
    from inspector.qt import window as window_module

    started: list[object] = []

    def capture(factory, *args):
        started.append(args[-1])

        def job(cancel):
            raise tasks.Cancelled()
            yield  # a generator, like every job

        return job

    monkeypatch.setattr(window_module, "heavy", capture)
    _small_input(window)
    for kernel_in_check, mode, expected in (
        (True, True, True),
        (True, False, False),
        (False, True, False),  # the model only: no launch
    ):
        window.kernel_in_check.setChecked(kernel_in_check)
        window.batch_invariant.setChecked(mode)
        with qtbot.waitSignal(window.runner.finished, timeout=TIMEOUT_MS):
            assert window.run_check()
        qtbot.waitUntil(lambda: not window.runner.busy, timeout=TIMEOUT_MS)
        config = started[-1]
        assert config.batch_invariant is expected
        assert config.run_kernel is kernel_in_check


def test_a_session_refuses_a_mode_that_is_not_a_boolean(tmp_path) -> None:
    import h5py

    from inspector.records.sessions import seal, session

    path = tmp_path / "h_win_flag.h5"
    save_session(path, load_session(DEMO))
    with h5py.File(path, "a") as root:
        root["mutants"].attrs["batch_invariant"] = "yes"
    seal.write_seal(path, session.SCHEMA_VERSION)
    with pytest.raises(session.SessionError, match="batch_invariant must be a boolean"):
        load_session(path)
