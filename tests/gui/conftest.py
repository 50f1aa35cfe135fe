"""GUI test fixtures: a window per test, dialogs patched, and no QThread left running."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, QThread

from inspector.qt.widgets import dialogs


@pytest.fixture(autouse=True)
def _dangling_qthreads(monkeypatch: pytest.MonkeyPatch):
    """Fail any test that leaves a QThread running (after napari's ``_dangling_qthreads``)."""
    started: list[QThread] = []
    original = QThread.start

    def tracking_start(self: QThread, *args, **kwargs):
        started.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(QThread, "start", tracking_start)
    yield
    dangling = []
    for thread in started:
        try:
            if thread.isRunning():
                thread.wait(5000)
                dangling.append(thread.objectName() or repr(thread))
        except RuntimeError:  # deleted on the C++ side: it has finished
            pass
    if dangling:
        pytest.fail(f"test left QThread(s) running: {dangling}")


@pytest.fixture(autouse=True)
def _no_real_dialogs(monkeypatch: pytest.MonkeyPatch):
    """Dialogs would block offscreen: every test that needs one patches it explicitly."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"unexpected dialog: {args[1:] if len(args) > 1 else args}")

    for name in (
        "choose_open_file",
        "choose_save_file",
        "choose_directory",
        "choose_item",
        "show_info",
        "show_widget",
        "ask_load_kernel",
        "ask_overwrite_changed",
    ):
        monkeypatch.setattr(dialogs, name, refuse)
    monkeypatch.setattr(dialogs, "show_error", lambda *a, **k: None)
    monkeypatch.setattr(dialogs, "ask_unsaved", lambda parent: "discard")
    monkeypatch.setattr(dialogs, "ask_recover", lambda parent, path: False)


@pytest.fixture
def jobs_on_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Heavy jobs on the worker thread, not in a host process: for tests that inject a fault
    by patching the job's code in this process (the host would never see the patch)."""
    from inspector.jobs import host

    monkeypatch.setenv(host.PLACEMENT_VAR, "thread")


@pytest.fixture
def settings(tmp_path) -> QSettings:
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, settings, tmp_path):
    """The main window with the demo input, closed (and its worker joined) afterwards."""
    from inspector.qt.window import InspectorWindow

    win = InspectorWindow(demo=True, settings=settings, autosave_dir=str(tmp_path / "autosave"))
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    yield win
    # Close it here, while the dialogs are still patched: a dirty window closed later (by
    # pytest-qt or at exit) would open a real, modal "unsaved changes" box and hang offscreen.
    win.state.dirty = False
    win.shutdown()
    win.close()


def _click_switch(qtbot, box) -> None:
    """Click a check box on its indicator (its centre may be empty space in a wide layout)."""
    from PySide6.QtCore import QPoint, Qt

    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(8, box.height() // 2))


@pytest.fixture
def click_switch():
    """``click_switch(qtbot, box)``: a mouse click on a check box's indicator."""
    return _click_switch
