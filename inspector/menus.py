"""The main window's menus: File (sessions, kernels, receipts, benchmark records) and Run."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu


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
    cancel: QAction
    divergence: QAction


def build_menus(window: QMainWindow) -> MenuActions:
    """Add the File and Run menus to ``window``'s menu bar; returns their actions."""
    standard = QKeySequence.StandardKey
    file_menu = window.menuBar().addMenu("&File")
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
        cancel=QAction("&Cancel", window, shortcut="Esc"),
        divergence=QAction("First &divergence", window, shortcut="Ctrl+D"),
    )
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
    run_menu = window.menuBar().addMenu("&Run")
    for action in (actions.check, actions.kernel, actions.divergence, actions.cancel):
        run_menu.addAction(action)
    return actions
