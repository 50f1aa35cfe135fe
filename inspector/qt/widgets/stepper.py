"""Reduction stepper: load -> square -> tree stages -> sum -> / width -> + eps -> rsqrt ->
x * rrms * w -> masked store, for the selected row, one step at a time (or played).

The steps come from ``data.reduction_steps`` (Qt-free); this widget lists them, draws the
current one's lane values (one curve and one scatter, created once, updated with setData) and
prints its numbers.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from inspector.model.reduction_steps import ReductionStep

#: At most this many bars are drawn: an antialiased, filled step curve over 65,536 lanes costs
#: ~0.8 s per repaint, and the window repaints it often.
MAX_DRAWN_LANES = 1024


def drawn_lanes(
    shown: np.ndarray, active: np.ndarray, max_lanes: int = MAX_DRAWN_LANES
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bar edges, bar heights and idle-lane marker positions for the step plot.

    Up to ``max_lanes`` lanes every lane is a bar. Above, lanes are grouped in blocks of a
    power of two, each bar showing the block's value of largest magnitude (so a spike is never
    averaged away), and one idle marker per block that holds an idle lane.
    """
    count = shown.shape[0]
    if count <= max_lanes:
        edges = np.arange(count + 1, dtype=np.float64)
        idle = np.flatnonzero(~active).astype(np.float64) + 0.5
        return edges, shown, idle
    block = 1 << int(np.ceil(np.log2(count / max_lanes)))
    padded = -(-count // block) * block
    values = np.zeros(padded)
    values[:count] = shown
    blocks = values.reshape(-1, block)
    pick = np.argmax(np.abs(blocks), axis=1)
    heights = blocks[np.arange(blocks.shape[0]), pick]
    edges = np.minimum(np.arange(blocks.shape[0] + 1, dtype=np.float64) * block, count)
    idle_blocks = np.unique(np.flatnonzero(~active) // block)
    idle = (idle_blocks.astype(np.float64) + 0.5) * block
    return edges, heights, np.minimum(idle, count - 0.5)


class ReductionStepper(QWidget):
    """Steps through one row's reduction. ``step_changed(index)`` after every move."""

    step_changed = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._steps: list[ReductionStep] = []
        self._index = 0
        self.row = 0

        self.back_button = QPushButton("◀ Back", objectName="step_back")
        self.forward_button = QPushButton("Forward ▶", objectName="step_forward")
        self.play_button = QPushButton("Play", objectName="step_play")
        self.play_button.setCheckable(True)
        self.first_button = QPushButton("|◀", objectName="step_first")
        self.first_button.setToolTip("First step")
        self.last_button = QPushButton("▶|", objectName="step_last")
        self.last_button.setToolTip("Last step")
        self.position = QLabel(objectName="step_position")
        # Which run the steps' kernel values come from (the window's provenance line).
        self.source = QLabel(objectName="step_source")
        self.source.setWordWrap(True)
        self.source.setProperty("role", "provenance")
        self.title = QLabel(objectName="step_title")
        self.title.setProperty("role", "heading")
        self.detail = QLabel(objectName="step_detail")
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.scalars = QLabel(objectName="step_scalars")
        self.scalars.setTextFormat(Qt.TextFormat.RichText)
        # The loaded kernel's value at this step (inferred from its output), beside the model's.
        self.kernel_line = QLabel(objectName="step_kernel")
        self.kernel_line.setWordWrap(True)
        self.kernel_line.setProperty("role", "kernel")
        self.kernel_line.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.step_list = QListWidget(objectName="step_list")
        self.step_list.setMaximumWidth(190)

        self.plot = pg.PlotWidget(objectName="step_plot")
        self.plot.setBackground(None)
        item = self.plot.getPlotItem()
        item.setLabel("bottom", "lane")
        item.setLabel("left", "value")
        item.showGrid(x=True, y=True, alpha=0.2)
        item.setMenuEnabled(False)
        self.curve = item.plot(
            [0.0, 1.0],
            [0.0],
            stepMode="center",
            fillLevel=0,
            pen=pg.mkPen((110, 170, 255), width=1.5),
            brush=(110, 170, 255, 90),
            name="active lanes",
        )
        self.inactive = item.plot(
            [],
            [],
            pen=None,
            symbol="s",
            symbolSize=5,
            symbolBrush=(150, 150, 160),
            symbolPen=None,
            name="masked / idle lanes (drawn at 0)",
        )

        self.guides = [
            pg.InfiniteLine(
                angle=0,
                movable=False,
                pen=pg.mkPen((255, 196, 0), width=1.5, style=Qt.PenStyle.DashLine),
            )
            for _ in range(2)
        ]
        for guide in self.guides:
            guide.setVisible(False)
            item.addItem(guide)

        buttons = QHBoxLayout()
        for button in (
            self.first_button,
            self.back_button,
            self.forward_button,
            self.last_button,
            self.play_button,
        ):
            buttons.addWidget(button)
        buttons.addWidget(self.position, 1)
        right = QVBoxLayout()
        right.addLayout(buttons)
        right.addWidget(self.source)
        right.addWidget(self.title)
        right.addWidget(self.detail)
        right.addWidget(self.scalars)
        right.addWidget(self.kernel_line)
        right.addWidget(self.plot, 1)
        right_widget = QWidget()
        right_widget.setLayout(right)
        splitter = QSplitter()
        splitter.addWidget(self.step_list)
        splitter.addWidget(right_widget)
        splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)

        self._timer = QTimer(self)
        self._timer.setInterval(600)
        self._timer.timeout.connect(self._tick)
        self.back_button.clicked.connect(self.step_back)
        self.forward_button.clicked.connect(self.step_forward)
        self.first_button.clicked.connect(lambda: self.go_to(0))
        self.last_button.clicked.connect(lambda: self.go_to(len(self._steps) - 1))
        self.play_button.toggled.connect(self.play)
        self.step_list.currentRowChanged.connect(self._on_list_row)

    # ------------------------------------------------------------------ model

    @property
    def steps(self) -> list[ReductionStep]:
        return list(self._steps)

    @property
    def index(self) -> int:
        return self._index

    @property
    def current(self) -> ReductionStep | None:
        return self._steps[self._index] if self._steps else None

    def set_source(self, text: str) -> None:
        """Say which run the steps show (the lane model's mutant, the kernel run's origin)."""
        self.source.setText(text)

    def set_steps(self, steps: list[ReductionStep], row: int, keep_position: bool = True) -> None:
        """Show a new row's (or a recomputed) reduction; stays on the same step if asked."""
        self._steps = list(steps)
        self.row = row
        self.step_list.blockSignals(True)
        self.step_list.clear()
        self.step_list.addItems([f"{i + 1}. {step.title}" for i, step in enumerate(steps)])
        self.step_list.blockSignals(False)
        index = min(self._index, len(steps) - 1) if keep_position else 0
        self._index = -1
        self.go_to(max(index, 0))

    def go_to(self, index: int) -> None:
        if not self._steps:
            return
        index = int(np.clip(index, 0, len(self._steps) - 1))
        changed = index != self._index
        self._index = index
        self._show()
        if changed:
            self.step_changed.emit(index)

    def go_to_key(self, key: str) -> bool:
        """Show the step ``key`` ("rsqrt", "store", ...); False when the row has none."""
        for index, step in enumerate(self._steps):
            if step.key == key:
                self.go_to(index)
                return True
        return False

    def step_forward(self) -> None:
        self.go_to(self._index + 1)

    def step_back(self) -> None:
        self.go_to(self._index - 1)

    def play(self, on: bool) -> None:
        if on:
            if self._index >= len(self._steps) - 1:
                self.go_to(0)
            self._timer.start()
        else:
            self._timer.stop()
        if self.play_button.isChecked() != on:
            self.play_button.setChecked(on)
        self.play_button.setText("Pause" if on else "Play")

    def _tick(self) -> None:
        if self._index >= len(self._steps) - 1:
            self.play(False)
            return
        self.step_forward()

    def _on_list_row(self, row: int) -> None:
        if row >= 0:
            self.go_to(row)

    # ------------------------------------------------------------------ drawing

    def _show(self) -> None:
        step = self._steps[self._index]
        total = len(self._steps)
        self.position.setText(f"row {self.row} · step {self._index + 1} of {total}")
        self.title.setText(step.title)
        self.detail.setText(step.detail)
        self.kernel_line.setText(step.kernel)
        self.kernel_line.setVisible(bool(step.kernel))
        self.back_button.setEnabled(self._index > 0)
        self.first_button.setEnabled(self._index > 0)
        self.forward_button.setEnabled(self._index < total - 1)
        self.last_button.setEnabled(self._index < total - 1)
        self.step_list.blockSignals(True)
        self.step_list.setCurrentRow(self._index)
        self.step_list.blockSignals(False)
        # The numbers so far: every scalar step up to here.
        parts = [
            f"{s.title}: <b>{s.scalar:.9g}</b>"
            for s in self._steps[: self._index + 1]
            if s.scalar is not None and not s.key.startswith("stage")
        ]
        self.scalars.setText(" → ".join(parts))
        vector = self._vector_step()
        if vector is None:
            return
        values = np.asarray(vector.values, dtype=np.float64)
        active = np.ones(values.shape[0], dtype=bool) if vector.active is None else vector.active
        shown = np.where(active, values, 0.0)
        edges, shown, idle_x = drawn_lanes(shown, active)
        self.curve.setData(edges, shown)
        self.inactive.setData(idle_x, np.zeros(idle_x.shape[0]))
        lines = step.lines if vector is step else ()
        for guide, value in zip(self.guides, (*lines, None, None), strict=False):
            guide.setVisible(value is not None)
            if value is not None:
                guide.setValue(value)
        self.plot.getPlotItem().setTitle(
            vector.title if vector is step else f"{step.title} (lanes of: {vector.title})"
        )
        self.plot.getPlotItem().enableAutoRange()

    def _vector_step(self) -> ReductionStep | None:
        for step in reversed(self._steps[: self._index + 1]):
            if step.values is not None:
                return step
        return None

    def plotted(self) -> tuple[np.ndarray, np.ndarray]:
        """The curve's data (lane edges, values): what tests read back."""
        x, y = self.curve.getData()
        return np.asarray(x), np.asarray(y)

    def active_lanes(self) -> int:
        """How many lanes the current step works on (the grid highlights them)."""
        step = self.current
        if step is None:
            return 0
        if step.values is None:
            return 1
        return int(step.values.shape[0])
