"""The main window's arrangement: the inputs column on the left, the lane grid over the evidence
tabs on the right, sized to fit a 1366 x 768 screen as well as a 1920 x 1080 one.

The left column keeps what a user acts on always on screen: only the input form scrolls; the
mutant switches, the Run box (buttons, progress, verdict) and First divergence sit under it at
their own height, and the two texts that grow (the verdict, the divergence account) scroll
inside a bounded box instead of pushing the buttons off the screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFrame,
    QGroupBox,
    QScrollArea,
    QSplitter,
    QTabBar,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from inspector.qt.widgets.layout import bounded_scroll

#: The left column's width at start: the input form, the mutant switches in two columns and the
#: Run box's three buttons side by side.
LEFT_WIDTH = 450
#: Lines of the divergence account shown under its button before it scrolls.
ACCOUNT_LINES = 6


@dataclass(frozen=True)
class MainLayout:
    """The central splitter and, in it, the right-hand splitter of the grid over the tabs."""

    central: QSplitter
    right: QSplitter


def left_column(
    input_panel: QWidget, mutant_panel: QWidget, run_box: QWidget, divergence: QWidget
) -> tuple[QWidget, QScrollArea]:
    """The inputs column: the scrolled input form over the mutants, the Run box and First
    divergence (never scrolled away). Returns the column and the form's scroll area."""
    input_box = QGroupBox("Input")
    QVBoxLayout(input_box).addWidget(input_panel)
    scroll = QScrollArea(objectName="input_scroll")
    scroll.setWidget(input_box)
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    # Never narrower than the form (no horizontal scrolling: a narrower one would clip it).
    scroll.setMinimumWidth(
        input_box.minimumSizeHint().width() + scroll.verticalScrollBar().sizeHint().width()
    )
    column = QWidget(objectName="left_column")
    layout = QVBoxLayout(column)
    layout.setContentsMargins(4, 0, 4, 0)
    layout.setSpacing(4)
    layout.addWidget(scroll, 1)
    layout.addWidget(mutant_panel)
    layout.addWidget(run_box)
    layout.addWidget(bounded_scroll(divergence, ACCOUNT_LINES, "divergence_area"))
    return column, scroll


def evidence_tabs(pages: Sequence[tuple[QWidget, str]]) -> QTabWidget:
    """The evidence views as tabs; when the titles do not fit the width they are elided
    rather than scrolled out of sight (every tab stays one click away)."""
    tabs = QTabWidget(objectName="views")
    bar: QTabBar = tabs.tabBar()
    bar.setUsesScrollButtons(False)
    bar.setElideMode(Qt.TextElideMode.ElideRight)
    for page, title in pages:
        index = tabs.addTab(page, title)
        tabs.setTabToolTip(index, title)
    return tabs


def main_layout(left: QWidget, grid: QWidget, tabs: QTabWidget, width: int) -> MainLayout:
    """The central splitter: ``left`` beside the grid over the tabs (the tabs get the larger
    share of the height; the window's ``width`` sets the first split)."""
    right = QSplitter(Qt.Orientation.Vertical, objectName="grid_over_tabs")
    right.addWidget(grid)
    right.addWidget(tabs)
    right.setStretchFactor(0, 4)
    right.setStretchFactor(1, 5)
    right.setChildrenCollapsible(False)
    central = QSplitter(Qt.Orientation.Horizontal, objectName="central")
    central.addWidget(left)
    central.addWidget(right)
    central.setStretchFactor(1, 1)
    central.setCollapsible(0, False)
    central.setSizes([LEFT_WIDTH, max(width - LEFT_WIDTH, 600)])
    return MainLayout(central, right)
