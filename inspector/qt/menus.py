"""The main window's menus: File (sessions, kernels, receipts, benchmark records), Run, View
(stepping the reduction, the grid's zoom and worst row) and Help (every shortcut in a table,
versions)."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QRect
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QMainWindow,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
)

from inspector.model.launch import TOOLTIP
from inspector.qt.widgets import dialogs


@dataclass(frozen=True)
class MenuActions:
    """Every menu action (the window connects and enables them)."""

    new: QAction
    open: QAction
    recent: QMenu
    save: QAction
    save_as: QAction
    open_kernel: QAction
    recent_kernels: QMenu
    bundled_kernel: QAction
    open_bench: QAction
    export: QAction
    quit: QAction
    check: QAction
    kernel: QAction
    batch_invariant: QAction
    cancel: QAction
    divergence: QAction
    step_first: QAction
    step_back: QAction
    step_forward: QAction
    step_last: QAction
    play: QAction
    worst_row: QAction
    reset_zoom: QAction
    shortcuts: QAction
    about: QAction
    file_menu: QMenu
    run_menu: QMenu


def build_menus(window: QMainWindow) -> MenuActions:
    """Add the File and Run menus to ``window``'s menu bar; returns their actions."""
    standard = QKeySequence.StandardKey
    # Menus are kept here, never looked up again through QAction.menu(): on PySide 6.9 the
    # wrapper that call returns owns the menu, and dropping it deletes the menu.
    file_menu = window.menuBar().addMenu("&File")
    run_menu = QMenu("&Run", window)
    actions = MenuActions(
        new=QAction("&New", window, shortcut=standard.New),
        open=QAction("&Open…", window, shortcut=standard.Open),
        recent=file_menu.addMenu("Open &recent"),
        save=QAction("&Save", window, shortcut=standard.Save),
        save_as=QAction("Save &As…", window, shortcut=standard.SaveAs),
        open_kernel=QAction("Open &kernel…", window, shortcut="Ctrl+Shift+O"),
        recent_kernels=QMenu("Open recent ke&rnel", window),
        bundled_kernel=QAction("Use the &bundled kernel", window),
        open_bench=QAction("Open &benchmark record…", window),
        export=QAction("&Export receipts…", window),
        quit=QAction("&Quit", window, shortcut=standard.Quit),
        check=QAction("Run &check", window, shortcut="Ctrl+R"),
        kernel=QAction("Run &kernel", window, shortcut="Ctrl+K"),
        batch_invariant=QAction(
            "Batch-&invariant launch", window, shortcut="Ctrl+Shift+K", checkable=True
        ),
        cancel=QAction("&Cancel", window, shortcut="Esc"),
        divergence=QAction("First &divergence", window, shortcut="Ctrl+D"),
        step_first=QAction("&First step", window, shortcut="Alt+Home"),
        step_back=QAction("Step &back", window, shortcut="Alt+Left"),
        step_forward=QAction("Step &forward", window, shortcut="Alt+Right"),
        step_last=QAction("&Last step", window, shortcut="Alt+End"),
        play=QAction("&Play / pause the steps", window, shortcut="Alt+P"),
        worst_row=QAction("&Worst row", window, shortcut="Ctrl+Shift+W"),
        reset_zoom=QAction("&Reset the grid's zoom", window, shortcut="Ctrl+0"),
        shortcuts=QAction("&Keyboard shortcuts", window, shortcut=standard.HelpContents),
        about=QAction("&About (versions and paths)", window),
        file_menu=file_menu,
        run_menu=run_menu,
    )
    actions.batch_invariant.setToolTip(f"Run kernel's batch-invariant launch: {TOOLTIP}")
    actions.open_kernel.setToolTip("Prove your own FILE.py:FUNCTION (run in a child process)")
    actions.divergence.setToolTip(
        "Jump to the worst row and lane of the kernel's output and the step where it parts "
        "from the model"
    )
    file_menu.addAction(actions.new)
    file_menu.addAction(actions.open)
    file_menu.addMenu(actions.recent)
    file_menu.addAction(actions.save)
    file_menu.addAction(actions.save_as)
    file_menu.addSeparator()
    file_menu.addAction(actions.open_kernel)
    file_menu.addMenu(actions.recent_kernels)
    file_menu.addAction(actions.bundled_kernel)
    file_menu.addSeparator()
    file_menu.addAction(actions.open_bench)
    file_menu.addAction(actions.export)
    file_menu.addSeparator()
    file_menu.addAction(actions.quit)
    window.menuBar().addMenu(run_menu)
    for action in (
        actions.check,
        actions.kernel,
        actions.batch_invariant,
        actions.divergence,
        actions.cancel,
    ):
        run_menu.addAction(action)
    view_menu = window.menuBar().addMenu("&View")
    for action in (
        actions.step_first,
        actions.step_back,
        actions.step_forward,
        actions.step_last,
        actions.play,
    ):
        view_menu.addAction(action)
    view_menu.addSeparator()
    view_menu.addAction(actions.worst_row)
    view_menu.addAction(actions.reset_zoom)
    help_menu = window.menuBar().addMenu("&Help")
    help_menu.addAction(actions.shortcuts)
    help_menu.addAction(actions.about)
    return actions


#: Shortcuts of a view rather than a menu: (keys, where, what).
VIEW_SHORTCUTS = (("Ctrl+C", "Row intermediates", "Copy the selected rows (or the table)"),)


def shortcut_rows(window: QMainWindow) -> list[tuple[str, str, str]]:
    """Every menu action that has a shortcut, (keys, menu, action), menu by menu, then the
    views' own (:data:`VIEW_SHORTCUTS`)."""
    rows = []
    bar = window.menuBar().actions()
    tops = [m for m in window.findChildren(QMenu) if m.menuAction() in bar]
    for menu in sorted(tops, key=lambda m: bar.index(m.menuAction())):
        title = menu.title().replace("&", "")
        for action in menu.actions():
            keys = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
            if keys:
                rows.append((keys, title, action.text().replace("&", "")))
    return rows + list(VIEW_SHORTCUTS)


def shortcut_table(rows: list[tuple[str, str, str]]) -> QTableWidget:
    """The shortcuts as a read-only three-column table: keys, menu (or view), action."""
    table = QTableWidget(len(rows), 3, objectName="shortcut_table")
    table.setHorizontalHeaderLabels(["keys", "menu", "action"])
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    for row, cells in enumerate(rows):
        for column, text in enumerate(cells):
            table.setItem(row, column, QTableWidgetItem(text))
    table.resizeColumnsToContents()
    table.horizontalHeader().setStretchLastSection(True)
    width = sum(table.columnWidth(c) for c in range(3)) + 2 * table.frameWidth() + 24
    table.setMinimumWidth(width)
    height = table.horizontalHeader().height() + sum(table.rowHeight(r) for r in range(len(rows)))
    table.setMinimumHeight(min(height + 2 * table.frameWidth(), 560))
    return table


def show_shortcuts(window: QMainWindow) -> str:
    """Help → Keyboard shortcuts: every shortcut in a table; returns it as text, one
    tab-separated row a line."""
    rows = shortcut_rows(window)
    dialogs.show_widget(window, "Keyboard shortcuts", shortcut_table(rows))
    return "\n".join("\t".join(row) for row in rows)


def show_about(window: QMainWindow) -> str:
    """Help → About: versions, device, settings and autosave paths (``main.py --info``)."""
    from inspector.qt.app_info import info_lines

    text = "RMSNorm Kernel Inspector\n\n" + "\n".join(info_lines())
    dialogs.show_info(window, "About", text)
    return text


def fit_to_screen(window: QMainWindow, area: QRect | None = None) -> None:
    """Size ``window`` to ``area`` (default: its screen's free area): 94% of it, at most
    1800 x 1060."""
    if area is None:
        screen = window.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            window.resize(1500, 940)
            return
        area = screen.availableGeometry()
    window.resize(min(1800, int(area.width() * 0.94)), min(1060, int(area.height() * 0.94)))
