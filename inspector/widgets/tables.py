"""Row-intermediate table and kill-matrix view: ``QTableView``s over the models in
:mod:`inspector.models`, sortable through a ``QSortFilterProxyModel``, copyable as TSV."""

from __future__ import annotations

from PySide6.QtCore import QSortFilterProxyModel, Qt, QTransposeProxyModel, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from inspector.models import KillMatrixModel, RowTableModel, rows_as_tsv
from oracle.matrix import KillMatrix


class RowTable(QWidget):
    """Per-row intermediates; click a row to select it everywhere."""

    row_selected = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = RowTableModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.view = QTableView(objectName="row_table")
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setAlternatingRowColors(True)
        self.view.verticalHeader().setVisible(False)
        # Sized once per reset from the first rows: ResizeToContents would measure all 4096
        # rows on every selection change and freeze the window.
        self.view.horizontalHeader().setResizeContentsPrecision(64)
        self.view.verticalHeader().setDefaultSectionSize(22)
        self.copy_button = QPushButton("Copy rows", objectName="copy_rows")
        self.copy_button.setToolTip(
            "Copy the selected rows (all rows if none) as tab-separated text"
        )
        self.note = QLabel(objectName="row_note")
        self.note.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(self.note, 1)
        top.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.view)
        self.copy_button.clicked.connect(self.copy_to_clipboard)
        QShortcut(QKeySequence.StandardKey.Copy, self.view, activated=self.copy_to_clipboard)
        self.view.clicked.connect(self._on_clicked)

    def set_columns(self, columns: list, note: str = "") -> None:
        first = self.model.columnCount() == 0
        self.model.set_columns(columns)
        self.note.setText(note)
        if first or self.model.rowCount() <= 64:
            self.view.resizeColumnsToContents()

    def selected_source_rows(self) -> list[int]:
        rows = {
            self.proxy.mapToSource(index).row()
            for index in self.view.selectionModel().selectedRows()
        }
        return sorted(rows)

    def tsv(self) -> str:
        """Selected rows (in view order), or every row, as TSV with a header."""
        selected = self.selected_source_rows()
        order = [
            self.proxy.mapToSource(self.proxy.index(r, 0)).row()
            for r in range(self.proxy.rowCount())
        ]
        rows = [r for r in order if not selected or r in selected]
        return rows_as_tsv(self.model, rows, list(range(self.model.columnCount())))

    def copy_to_clipboard(self) -> str:
        text = self.tsv()
        QGuiApplication.clipboard().setText(text)
        return text

    def _on_clicked(self, index) -> None:
        self.row_selected.emit(self.proxy.mapToSource(index).row())

    def select_row(self, row: int) -> None:
        source = self.model.index(row, 0)
        index = self.proxy.mapFromSource(source)
        if index.isValid():
            self.view.blockSignals(True)
            self.view.selectRow(index.row())
            self.view.scrollTo(index)
            self.view.blockSignals(False)


class KillMatrixView(QWidget):
    """Mutants x fixtures: which fixture kills which mutant, model and kernel."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = KillMatrixModel(self)
        self.transpose = QTransposeProxyModel(self)
        self.transpose.setSourceModel(self.model)
        self.view = QTableView(objectName="kill_matrix")
        self.view.setModel(self.transpose)
        self.view.verticalHeader().setDefaultSectionSize(22)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectColumns)
        self.fixtures_as_rows = QCheckBox("fixtures as rows", objectName="kill_transpose")
        self.fixtures_as_rows.setChecked(True)
        self.summary = QLabel("Run the check to fill the kill matrix.", objectName="kill_summary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        top = QHBoxLayout()
        top.addWidget(self.summary, 1)
        top.addWidget(self.fixtures_as_rows)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.view)
        self.fixtures_as_rows.toggled.connect(self._set_transposed)
        self._matrices: list[KillMatrix] = []
        self._highlight: str | None = None

    def _set_transposed(self, on: bool) -> None:
        self.view.setModel(self.transpose if on else self.model)
        self.view.setSelectionBehavior(
            QAbstractItemView.SelectionBehavior.SelectColumns
            if on
            else QAbstractItemView.SelectionBehavior.SelectRows
        )
        self.highlight_mutant(self._highlight)

    def set_matrices(self, matrices: list[KillMatrix]) -> None:
        self._matrices = list(matrices)
        self.model.set_matrices(self._matrices)
        self.view.resizeColumnsToContents()
        parts = []
        for matrix in self._matrices:
            survivors = matrix.survivors
            failing = matrix.baseline_failures
            killed = len(matrix.mutants) - len(survivors)
            color = "rgb(102,187,106)" if matrix.passed else "rgb(239,83,80)"
            total = len(matrix.mutants)
            text = f"<b style='color:{color}'>{matrix.target}</b>: {killed}/{total} killed"
            if survivors:
                text += f", SURVIVED: {', '.join(survivors)}"
            if failing:
                text += f", baseline FAIL on {', '.join(failing)}"
            parts.append(text)
        self.summary.setText(" · ".join(parts) or "No kill matrix yet.")
        self.highlight_mutant(self._highlight)

    def highlight_mutant(self, mutant: str | None) -> None:
        """Select the toggled mutant's line(s) so the toggle and the matrix agree."""
        self._highlight = mutant
        self.view.clearSelection()
        if not mutant:
            return
        labels = self.model.row_labels()
        for row, label in enumerate(labels):
            if label.endswith(f": {mutant}"):
                if self.fixtures_as_rows.isChecked():
                    self.view.selectColumn(row)
                else:
                    self.view.selectRow(row)
                break

    def selected_labels(self) -> list[str]:
        labels = self.model.row_labels()
        if self.fixtures_as_rows.isChecked():
            indexes = self.view.selectionModel().selectedColumns()
        else:
            indexes = self.view.selectionModel().selectedRows()
        return [
            labels[i.column() if self.fixtures_as_rows.isChecked() else i.row()] for i in indexes
        ]
