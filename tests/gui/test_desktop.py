"""Desktop conventions: sized to the screen with the verdict on it, light and dark from one
sheet, glyphs beside colours, every shortcut listed in Help, every control named, and the
command line's --info, --reset and no-display answers."""

from __future__ import annotations

import ctypes.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QRect

from inspector.model import oob_view, viewdata
from inspector.qt import app_info, theme
from inspector.qt.widgets import dialogs
from inspector.qt.widgets.accessibility import unnamed_controls

ROOT = Path(__file__).resolve().parents[2]
# The questions as written (the GUI tests' autouse fixture replaces them while a test runs).
QUESTIONS = {
    name: getattr(dialogs, name)
    for name in ("ask_recover", "ask_overwrite_changed", "ask_load_kernel")
}


@pytest.mark.parametrize("screen", [(1366, 768), (1920, 1080), (2560, 1440)])
def test_the_window_fits_the_screen_and_the_verdict_is_on_it(qtbot, window, screen) -> None:
    from inspector.qt.menus import fit_to_screen

    area = QRect(0, 0, *screen)
    fit_to_screen(window, area)
    qtbot.waitUntil(lambda: window.width() <= area.width(), timeout=2000)
    assert window.height() <= area.height()
    assert window.minimumSizeHint().width() <= window.width()
    assert window.minimumSizeHint().height() <= window.height()
    top_left = window.verdict.mapTo(window, window.verdict.rect().topLeft())
    box = QRect(top_left, window.verdict.size())
    assert window.rect().contains(box)
    assert window.verdict.isVisible()


def test_help_lists_every_shortcut_in_a_table_and_the_run_and_step_ones_exist(
    window, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PySide6.QtWidgets import QTableWidget

    shown: list[tuple[str, object]] = []
    monkeypatch.setattr(
        dialogs, "show_widget", lambda parent, title, body: shown.append((title, body))
    )
    monkeypatch.setattr(
        dialogs, "show_info", lambda parent, title, text: shown.append((title, text))
    )
    window.menus.shortcuts.trigger()
    title, table = shown[0]
    assert title == "Keyboard shortcuts"
    assert isinstance(table, QTableWidget)
    header = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    assert header == ["keys", "menu", "action"]
    rows = {
        tuple(table.item(r, c).text() for c in range(table.columnCount()))
        for r in range(table.rowCount())
    }
    for row in (
        ("Ctrl+R", "Run", "Run check"),
        ("Ctrl+K", "Run", "Run kernel"),
        ("Esc", "Run", "Cancel"),
        ("Ctrl+D", "Run", "First divergence"),
        ("Alt+Right", "View", "Step forward"),
        ("Alt+Left", "View", "Step back"),
        ("Ctrl+0", "View", "Reset the grid's zoom"),
        ("Ctrl+C", "Row intermediates", "Copy the selected rows (or the table)"),
    ):
        assert row in rows, row
    # The rows are the real shortcuts: the table's Ctrl+C is the row table's copy.
    from PySide6.QtGui import QKeySequence, QShortcut

    copies = [
        s.key().matches(QKeySequence("Ctrl+C")) == QKeySequence.SequenceMatch.ExactMatch
        for s in window.row_table.findChildren(QShortcut)
    ]
    assert any(copies)
    window.menus.about.trigger()
    assert shown[1][0] == "About"
    assert "settings: " in shown[1][1]


def test_the_step_shortcuts_move_the_stepper(window) -> None:
    stepper = window.stepper
    stepper.go_to(0)
    window.menus.step_forward.trigger()
    assert stepper.index == 1
    window.menus.step_last.trigger()
    assert stepper.index == len(stepper.steps) - 1
    window.menus.step_back.trigger()
    assert stepper.index == len(stepper.steps) - 2
    window.menus.step_first.trigger()
    assert stepper.index == 0


def test_every_control_has_an_accessible_name(window) -> None:
    assert unnamed_controls(window) == []
    assert window.input_panel.findChild(type(window.input_panel.eps_edit), "eps").accessibleName()


def test_the_light_sheet_maps_every_colour_of_the_dark_one() -> None:
    dark = (ROOT / "resources" / "style.qss").read_text(encoding="utf-8")
    colours = {c.lower() for c in re.findall(r"#[0-9a-fA-F]{6}\b", dark)}
    assert colours <= set(theme.LIGHT)
    light = theme.themed_qss(dark, "light")
    assert "#1e2128" not in light  # the dark window background
    assert "background-color: #f6f7f9" in light
    assert theme.themed_qss(dark, "dark") == dark


def test_poison_and_out_of_bounds_lanes_carry_a_glyph_not_only_a_colour() -> None:
    from oracle import tiled
    from oracle.spec import make_problem

    problem = make_problem(np.ones((4, 70)), np.ones(70), eps=1e-6, dtype="float32", row_stride=72)
    model = tiled.model(problem)
    lut = np.zeros((256, 4), dtype=np.uint8)
    image = viewdata.lane_image(model, lut, (70, 142, 4 * 72 + 60))
    cells = viewdata.glyph_cells(image)
    lanes, rows = cells[viewdata.OOB_WRITE]
    assert sorted(zip(rows.tolist(), lanes.tolist(), strict=True)) == [(0, 70), (1, 70), (4, 60)]
    assert viewdata.STATE_GLYPHS[viewdata.OOB_WRITE] != viewdata.STATE_GLYPHS[viewdata.POISON_IN]
    small = viewdata.lane_image(model, lut, (70,), max_cells=64)
    assert small.downsampled
    assert viewdata.glyph_cells(small) == {}
    assert oob_view.NO_WRITES.count == 0


def test_no_display_is_one_line_and_a_missing_x11_library_names_its_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert app_info.display_problem({}).startswith("no display: ")
    assert app_info.display_problem({"QT_QPA_PLATFORM": "offscreen"}) is None
    assert app_info.display_problem({"WAYLAND_DISPLAY": "wayland-0"}) is None
    monkeypatch.setattr(
        ctypes.util, "find_library", lambda name: None if name == "xcb-cursor" else f"lib{name}"
    )
    problem = app_info.display_problem({"DISPLAY": ":0"})
    assert problem.endswith("(Debian/Ubuntu: apt install libxcb-cursor0)")
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: f"lib{name}")
    assert app_info.display_problem({"DISPLAY": ":0"}) is None


@pytest.mark.skipif(
    any(ctypes.util.find_library(lib) is None for lib in ("xcb", *app_info.XCB_LIBRARIES)),
    reason="needs libxcb to ask, and Qt's X11 libraries not to be refused first",
)
def test_a_display_no_server_answers_is_one_line_not_a_qt_abort() -> None:
    free = next(n for n in range(77, 200) if not os.path.exists(f"/tmp/.X11-unix/X{n}"))
    problem = app_info.display_problem({"DISPLAY": f":{free}"})
    assert problem.startswith(f"cannot connect to the display :{free} (DISPLAY): no X server")
    done = _main([], DISPLAY=f":{free}")
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {problem}"


def _main(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    clean.pop("QT_QPA_PLATFORM", None)
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **env},
        cwd=ROOT,
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the display check is Linux's")
def test_without_a_display_the_window_command_says_so_and_exits_2() -> None:
    done = _main([])
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: no display: ")


def test_info_prints_versions_and_paths_and_reset_forgets_the_settings(tmp_path) -> None:
    config = tmp_path / "config"
    settings_file = config / "rmsnorm-inspector" / "inspector.conf"
    settings_file.parent.mkdir(parents=True)
    settings_file.write_text("[General]\nrecent_files=/tmp/a.h5\n", encoding="utf-8")
    info = _main(["--info"], XDG_CONFIG_HOME=str(config), XDG_CACHE_HOME=str(tmp_path / "c"))
    assert info.returncode == 0, info.stderr
    lines = info.stdout.splitlines()
    assert any(line.startswith("numpy: ") for line in lines)
    assert f"settings: {settings_file}" in lines
    assert f"autosave (untitled sessions): {tmp_path / 'c'}" in info.stdout
    reset = _main(["--reset"], XDG_CONFIG_HOME=str(config))
    assert reset.returncode == 0, reset.stderr
    assert reset.stdout.strip() == f"settings reset: {settings_file}"
    assert "recent_files" not in settings_file.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("ask", "default_yes"),
    [("ask_recover", True), ("ask_overwrite_changed", False), ("ask_load_kernel", False)],
)
def test_each_question_asks_yes_or_no_with_its_default(
    monkeypatch: pytest.MonkeyPatch, ask, default_yes
) -> None:
    from PySide6.QtWidgets import QMessageBox

    buttons = QMessageBox.StandardButton
    seen: list[tuple] = []

    def question(parent, title, text, offered, default):
        seen.append((offered, default))
        return buttons.Yes

    monkeypatch.setattr(QMessageBox, "question", question)
    assert QUESTIONS[ask](None, "/tmp/x.h5") is True
    assert seen == [(buttons.Yes | buttons.No, buttons.Yes if default_yes else buttons.No)]
