"""The Mutation tab: every mutant of a ``mutation.json`` (survivors first) with its outcome and
killing fixtures, the selected one's source diff and detail, the score and counts on top.

The rows and diffs are :mod:`inspector.mutate.saved_report`'s (Qt-free); this is the table model
over them and the view. "Open report…" and "Run mutate" are signals the window connects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QWidget,
)

from inspector.mutate.saved_report import MutantRow, MutationReport, diff_lines
from inspector.qt.table_models import TitledTableModel
from inspector.qt.widgets.layout import toolbar_over

COLUMNS = ("id", "function", "line", "operator", "outcome", "killed_by")
OUTCOME_COLOURS = {
    "survived": (239, 83, 80),
    "timeout": (255, 167, 38),
    "crashed": (255, 167, 38),
    "killed": (102, 187, 106),
    "equivalent": (150, 150, 150),
    "stillborn": (120, 144, 156),
}
Index = QModelIndex | QPersistentModelIndex


class MutantTableModel(TitledTableModel):
    """One row per mutant, in the report's order (survivors first)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: tuple[MutantRow, ...] = ()

    def set_rows(self, rows: tuple[MutantRow, ...]) -> None:
        self.beginResetModel()
        self.rows = tuple(rows)
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        column = COLUMNS[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            value = getattr(row, column)
            return ", ".join(value) if column == "killed_by" else value
        if role == Qt.ItemDataRole.ToolTipRole:
            return row.detail or None
        if role == Qt.ItemDataRole.ForegroundRole and column == "outcome":
            return QBrush(QColor(*OUTCOME_COLOURS[row.outcome]))
        return None

    def column_title(self, section: int) -> Any:
        return COLUMNS[section]

    def row_title(self, section: int) -> Any:
        return str(section + 1)


class MutationView(QWidget):
    """Score and counts, the mutant table, and the selected mutant's diff and detail."""

    open_requested = Signal()
    run_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = QLabel(
            "Open a mutation.json (File → Open mutation report…) or run mutate.",
            objectName="mutation_summary",
        )
        self.summary.setWordWrap(True)
        self.open_button = QPushButton("Open report…", objectName="mutation_open")
        self.run_button = QPushButton("Run mutate", objectName="mutation_run")
        self.run_button.setToolTip(
            "Mutate the kernel's @triton.jit source and run every mutant against the fixture "
            "matrix, each in a child process (under the interpreter this takes long)"
        )
        self.model = MutantTableModel(self)
        self.table = QTableView(objectName="mutation_table")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.diff = QPlainTextEdit(objectName="mutation_diff")
        self.diff.setReadOnly(True)
        self.diff.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(self.diff)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        toolbar_over(self, [self.summary, self.open_button, self.run_button], split)
        self.report: MutationReport | None = None
        self.files: list[Path] = []
        self.open_button.clicked.connect(self.open_requested)
        self.run_button.clicked.connect(self.run_requested)
        self.table.selectionModel().currentRowChanged.connect(self._on_row)

    def set_report(self, report: MutationReport, files: list[Path], note: str = "") -> None:
        """Show ``report``; ``files`` are the kernel's sources for the diffs' context."""
        self.report, self.files = report, list(files)
        self.model.set_rows(report.rows)
        self.table.resizeColumnsToContents()
        kernel = (
            f"{report.kernel_path}:{report.kernel_function} (sha256 {report.kernel_sha256[:12]}…)"
        )
        self.summary.setText(f"{report.summary()}\n{kernel}{'; ' + note if note else ''}")
        self.diff.setPlainText("")
        if report.rows:
            self.select(0)

    def select(self, row: int) -> None:
        """Select the mutant in table row ``row`` (its diff is shown)."""
        self.table.selectRow(row)
        self.table.setCurrentIndex(self.model.index(row, 0))

    def _on_row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if not current.isValid() or current.row() >= len(self.model.rows):
            return
        row = self.model.rows[current.row()]
        lines = diff_lines(row, self.files)
        killed = f"killed by: {', '.join(row.killed_by)}" if row.killed_by else ""
        tail = [line for line in (f"outcome: {row.outcome}", killed, row.detail) if line]
        self.diff.setPlainText("\n".join([*lines, "", *tail]))
