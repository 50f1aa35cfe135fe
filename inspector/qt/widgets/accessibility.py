"""Accessible names for every control: what a screen reader says for it.

A button or check box says its text; a field says the label the form shows beside it; a view
says its tab's title or its tooltip. Controls that already have a name keep it. The window
calls :func:`name_controls` once it is built; a test asserts no control is left unnamed.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QFormLayout,
    QGraphicsView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QTabWidget,
    QTextEdit,
    QWidget,
)

#: The kinds of widget a user operates or reads as a unit.
CONTROLS = (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QGraphicsView,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QTabWidget,
    QTextEdit,
)


def _form_label(widget: QWidget) -> str:
    """The text of the label a QFormLayout shows beside ``widget`` ("" when none)."""
    parent = widget.parentWidget()
    while parent is not None:
        layout = parent.layout()
        if isinstance(layout, QFormLayout):
            label = layout.labelForField(widget)
            if isinstance(label, QLabel):
                return label.text().replace("&", "").rstrip(":")
        parent = parent.parentWidget()
    return ""


def _tab_title(widget: QWidget) -> str:
    """The title of the tab that shows ``widget`` (or one of its ancestors), or ""."""
    child, parent = widget, widget.parentWidget()
    while parent is not None:
        grand = parent.parentWidget()
        if isinstance(grand, QTabWidget):
            index = grand.indexOf(child)
            if index >= 0:
                return grand.tabText(index).replace("&", "")
        child, parent = parent, grand
    return ""


def accessible_name(widget: QWidget) -> str:
    """The name :func:`name_controls` gives ``widget``."""
    if isinstance(widget, QAbstractButton) and widget.text().strip():
        return widget.text().replace("&", "").strip()
    for text in (_form_label(widget), widget.toolTip(), _tab_title(widget)):
        if text.strip():
            return " ".join(text.split())[:120]
    return widget.objectName().replace("_", " ").strip() or type(widget).__name__


def name_controls(root: QWidget) -> int:
    """Give every unnamed control under ``root`` its accessible name; returns how many."""
    named = 0
    for widget in root.findChildren(QWidget):
        if isinstance(widget, CONTROLS) and not widget.accessibleName():
            widget.setAccessibleName(accessible_name(widget))
            named += 1
    return named


def unnamed_controls(root: QWidget) -> list[str]:
    """The controls under ``root`` without an accessible name (object name and type)."""
    return [
        f"{widget.objectName() or '?'} ({type(widget).__name__})"
        for widget in root.findChildren(QWidget)
        if isinstance(widget, CONTROLS) and not widget.accessibleName()
    ]
