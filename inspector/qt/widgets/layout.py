"""Layouts the views share: a row of tools over the view itself, without margins; a text box
that grows to a bound and then scrolls."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)


def toolbar_over(
    parent: QWidget,
    tools: Sequence[QWidget],
    body: QWidget,
    *,
    above_body: Sequence[QWidget] = (),
    body_stretch: int = 0,
) -> QVBoxLayout:
    """Lay ``parent`` out as one row of ``tools`` over ``above_body`` and ``body``.

    Args:
        parent: the widget that gets the layout.
        tools: the top row; the first one (a label, usually) takes the row's spare width.
        body: the view, last.
        above_body: widgets between the row and the body, at their natural height.
        body_stretch: the body's stretch factor in the column.

    Returns:
        The column layout (already set on ``parent``).
    """
    top = QHBoxLayout()
    for index, tool in enumerate(tools):
        top.addWidget(tool, 1 if index == 0 else 0)
    layout = QVBoxLayout(parent)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addLayout(top)
    for widget in above_body:
        layout.addWidget(widget)
    layout.addWidget(body, body_stretch)
    return layout


class BoundedScroll(QScrollArea):
    """A frameless vertical scroll area as tall as its widget's text, up to a bound: a text
    that grows past it scrolls inside, and what sits under the area stays where it is."""

    def __init__(self, widget: QWidget, max_lines: int, name: str) -> None:
        super().__init__(objectName=name)
        if isinstance(widget, QLabel):  # a short text starts at the top, not centred
            widget.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.setWidget(widget)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.max_height = max_lines * widget.fontMetrics().lineSpacing() + 6
        # A new text or a shown line asks the viewport (its parent) for a new layout: then this
        # area's own height hint changes with it.
        self.viewport().installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()
        return super().eventFilter(watched, event)

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        widget = self.widget()
        if widget is None or widget.isHidden():
            return QSize(hint.width(), 0)
        width = max(self.viewport().width(), 1)
        height = widget.heightForWidth(width) if widget.hasHeightForWidth() else -1
        if height < 0:
            height = widget.sizeHint().height()
        return QSize(hint.width(), min(height, self.max_height))

    def minimumSizeHint(self) -> QSize:
        return QSize(super().minimumSizeHint().width(), 0)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.updateGeometry()  # a new width wraps the text anew: a new height


def bounded_scroll(widget: QWidget, max_lines: int, name: str) -> BoundedScroll:
    """``widget`` in a :class:`BoundedScroll` at most ``max_lines`` text lines tall."""
    return BoundedScroll(widget, max_lines, name)
