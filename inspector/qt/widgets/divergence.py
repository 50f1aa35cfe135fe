"""First divergence: the button and what ``kernel_view.first_divergence`` found, in words."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout, QWidget


class DivergencePanel(QWidget):
    """The "First divergence" button (Ctrl+D in the Run menu) over the lines it found."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.button = QPushButton("First divergence", objectName="first_divergence")
        self.button.setToolTip(
            "Jump to the worst row and lane of the kernel's output (runs the kernel first when "
            "it has not run) and to the step where kernel and model part (Ctrl+D)"
        )
        self.text = QLabel(objectName="divergence_text")
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text.setVisible(False)
        self.lines: list[str] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.button)
        layout.addWidget(self.text)

    def show_lines(self, lines: list[str] | tuple[str, ...]) -> None:
        """Show ``lines`` under the button (none: hide the text)."""
        self.lines = list(lines)
        self.text.setText("\n".join(self.lines))
        self.text.setVisible(bool(self.lines))
