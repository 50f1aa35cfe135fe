"""The lane grid's details pane: everything about one lane, readable without moving the mouse.

A tooltip is hidden by Qt a moment after the mouse comes to rest, so what it says can only be
read while moving. This pane beside the grid keeps the text (address, x, x², w, the kernel's y,
the expected y, the error, the stores) of the lane last under the mouse, or of the *pinned*
lane: a click pins the lane under it (First divergence pins the lane it found), and while one is
pinned the mouse no longer changes the pane; **Unpin** (or a click on the pinned lane) lets it
follow the mouse again. Nsight Compute's pinned source details are the model.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)


class LaneDetails(QWidget):
    """The pane: a caption saying how it follows (under the mouse / pinned) over the lane's
    text, whose first line names the lane. The grid calls :meth:`show_hover` and :meth:`pin`;
    ``pinned`` is the pinned ``(row, lane)`` or None, ``cell`` the one shown."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, objectName="lane_details")
        self.pinned: tuple[int, int] | None = None
        self.cell: tuple[int, int] | None = None
        self.caption = QLabel(objectName="lane_caption")
        self.caption.setWordWrap(True)
        self.caption.setToolTip(
            "The lane under the mouse, kept when the mouse rests or leaves the grid; a click "
            "pins a lane (Unpin, or a click on it, follows the mouse again)"
        )
        self.unpin_button = QPushButton("Unpin", objectName="lane_unpin")
        self.unpin_button.setToolTip("Let the pane follow the mouse again")
        self.unpin_button.setAccessibleName("Unpin the lane shown in the details pane")
        self.unpin_button.setEnabled(False)
        self.text = QPlainTextEdit(objectName="lane_details_text", readOnly=True)
        self.text.setAccessibleName("Lane details")
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.text.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.text.setMinimumWidth(180)
        top = QHBoxLayout()
        top.addWidget(self.caption, 1)
        top.addWidget(self.unpin_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.text, 1)
        self.unpin_button.clicked.connect(self.unpin)
        self.clear()

    def sizeHint(self) -> QSize:
        """No room of its own asked for: the grid's splitter gives it its width, and the
        window's layout stays what it is without the pane."""
        return QSize(0, 0)

    def show_hover(self, cell: tuple[int, int], text: str) -> None:
        """The lane under the mouse; ignored while a lane is pinned."""
        if self.pinned is None:
            self._show(cell, text, "under the mouse")

    def pin(self, cell: tuple[int, int], text: str) -> None:
        """Show ``cell`` until :meth:`unpin`, whatever the mouse does."""
        self.pinned = cell
        self.unpin_button.setEnabled(True)
        self._show(cell, text, "pinned")

    def unpin(self) -> None:
        """Follow the mouse again (the pinned lane's text stays until the mouse moves)."""
        if self.pinned is None:
            return
        self.pinned = None
        self.unpin_button.setEnabled(False)
        self.caption.setText("Lane details · under the mouse")

    def refresh(self, text: str) -> None:
        """The shown lane's text again (new data: a kernel run, another mutant)."""
        if self.cell is not None:
            self.text.setPlainText(text)

    def clear(self) -> None:
        """Nothing to show (another shape): the pane empties and unpins."""
        self.pinned = None
        self.cell = None
        self.unpin_button.setEnabled(False)
        self.caption.setText("Lane details · move the mouse over a lane, click to pin")
        self.text.setPlainText("")

    def _show(self, cell: tuple[int, int], text: str, how: str) -> None:
        self.cell = cell
        self.caption.setText(f"Lane details · {how}")
        if self.text.toPlainText() != text:
            self.text.setPlainText(text)
