"""Every file dialog and message box goes through these functions (tests monkeypatch them)."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QInputDialog,
    QMessageBox,
    QVBoxLayout,
    QWidget,
)


def choose_open_file(parent: QWidget | None, title: str, name_filter: str) -> str | None:
    """Ask for an existing file; None when cancelled."""
    path, _ = QFileDialog.getOpenFileName(parent, title, "", name_filter)
    return path or None


def choose_save_file(parent: QWidget | None, title: str, name_filter: str) -> str | None:
    """Ask for a file to write; None when cancelled."""
    path, _ = QFileDialog.getSaveFileName(parent, title, "", name_filter)
    return path or None


def choose_directory(parent: QWidget | None, title: str) -> str | None:
    """Ask for a folder; None when cancelled."""
    path = QFileDialog.getExistingDirectory(parent, title, "")
    return path or None


def choose_item(parent: QWidget | None, title: str, label: str, items: list[str]) -> str | None:
    """Pick one of ``items`` (the first preselected); None when cancelled."""
    item, ok = QInputDialog.getItem(parent, title, label, items, 0, False)
    return item if ok and item else None


def ask_unsaved(parent: QWidget | None) -> str:
    """Unsaved changes: returns "save", "discard" or "cancel"."""
    buttons = (
        QMessageBox.StandardButton.Save
        | QMessageBox.StandardButton.Discard
        | QMessageBox.StandardButton.Cancel
    )
    answer = QMessageBox.question(
        parent,
        "Unsaved changes",
        "This inspection has unsaved changes. Save them first?",
        buttons,
        QMessageBox.StandardButton.Save,
    )
    if answer == QMessageBox.StandardButton.Save:
        return "save"
    if answer == QMessageBox.StandardButton.Discard:
        return "discard"
    return "cancel"


def show_error(parent: QWidget | None, title: str, message: str) -> None:
    """Tell the user something failed (never raises)."""
    QMessageBox.warning(parent, title, message)


def show_info(parent: QWidget | None, title: str, message: str) -> None:
    QMessageBox.information(parent, title, message)


def show_widget(parent: QWidget | None, title: str, body: QWidget) -> None:
    """Show ``body`` (a table, say) in a modal box with a Close button."""
    dialog = QDialog(parent)
    dialog.setWindowTitle(title)
    layout = QVBoxLayout(dialog)
    layout.addWidget(body)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dialog.reject)
    layout.addWidget(buttons)
    dialog.resize(body.sizeHint().width() + 40, min(body.sizeHint().height() + 80, 640))
    dialog.exec()


def _ask_yes_no(parent: QWidget | None, title: str, text: str, *, default_yes: bool) -> bool:
    """A Yes / No question; True for Yes (``default_yes``: what Enter answers)."""
    buttons = QMessageBox.StandardButton
    answer = QMessageBox.question(
        parent, title, text, buttons.Yes | buttons.No, buttons.Yes if default_yes else buttons.No
    )
    return answer == buttons.Yes


def ask_recover(parent: QWidget | None, path: str) -> bool:
    """An autosave newer than the saved file exists: open it?"""
    return _ask_yes_no(
        parent,
        "Recover unsaved work",
        f"Unsaved work from an earlier run was autosaved to\n{path}\n\nOpen it?",
        default_yes=True,
    )


def ask_overwrite_changed(parent: QWidget | None, path: str) -> bool:
    """The session file changed on disk since this window opened or saved it: overwrite?"""
    return _ask_yes_no(
        parent,
        "Session changed on disk",
        f"{path}\nchanged on disk since this window opened or saved it (another window or "
        "run wrote it).\n\nOverwrite it with this window's session?",
        default_yes=False,
    )


def ask_load_kernel(parent: QWidget | None, text: str) -> bool:
    """A session's receipt names a user kernel that is here, unchanged: load it?"""
    return _ask_yes_no(
        parent,
        "Load the session's kernel",
        f"This session's receipt is of the kernel\n{text}\n(found unchanged on disk).\n\n"
        "Load it? It runs in a child process, like any kernel you open.",
        default_yes=False,
    )
