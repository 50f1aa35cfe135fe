"""Row-intermediate table: a ``QTableView`` over :class:`~inspector.qt.table_models.RowTableModel`,
sortable (numpy argsort behind a proxy), coloured against the tolerance, copyable as TSV. The
error columns come first after the row index (:func:`~inspector.qt.table_models.error_first_order`)
so they are on screen at any width; the model, copies and exports keep the model's order."""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import (
    QAbstractProxyModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLabel,
    QPushButton,
    QTableView,
    QWidget,
)

from inspector.qt.table_models import RowTableModel, error_first_order, rows_as_tsv
from inspector.qt.widgets.layout import toolbar_over

Index = QModelIndex | QPersistentModelIndex


class NumericSortProxy(QAbstractProxyModel):
    """Sorts a :class:`RowTableModel` by one column with ``numpy.argsort``.

    A ``QSortFilterProxyModel`` compares rows through Python ``data()`` calls: ~60,000 of them
    for 4096 rows, a 0.3 s freeze of the window on every reset. Here a reset or a header click
    costs one argsort of the column's array. NaN sorts as -inf (as the model's ``UserRole``).
    """

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._order = np.zeros(0, dtype=np.int64)  # proxy row -> source row
        self._rank = np.zeros(0, dtype=np.int64)  # source row -> proxy row
        self._column = 0
        self._descending = False

    def setSourceModel(self, model: RowTableModel) -> None:
        super().setSourceModel(model)
        model.modelAboutToBeReset.connect(self.beginResetModel)
        model.modelReset.connect(self._after_source_reset)
        self._compute()

    def _after_source_reset(self) -> None:
        self._compute()
        self.endResetModel()

    def _compute(self) -> None:
        model = self.sourceModel()
        count = model.rowCount() if model is not None else 0
        order = np.arange(count, dtype=np.int64)
        names = model.column_names if model is not None else []
        if count and 0 <= self._column < len(names):
            keys = np.asarray(model.column_values(names[self._column]), dtype=np.float64)
            keys = np.where(np.isnan(keys), -np.inf, keys)
            order = np.argsort(-keys if self._descending else keys, kind="stable")
        self._order = order.astype(np.int64)
        self._rank = np.empty_like(self._order)
        self._rank[self._order] = np.arange(count, dtype=np.int64)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        sources = [self.mapToSource(index) for index in persistent]
        self._column = column
        self._descending = order == Qt.SortOrder.DescendingOrder
        self._compute()
        self.changePersistentIndexList(persistent, [self.mapFromSource(s) for s in sources])
        self.layoutChanged.emit()

    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        if parent.isValid() or not (
            0 <= row < self.rowCount() and 0 <= column < self.columnCount()
        ):
            return QModelIndex()
        return self.createIndex(row, column)

    def parent(self, index: Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        return QModelIndex()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._order)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        model = self.sourceModel()
        return 0 if parent.isValid() or model is None else model.columnCount()

    def mapToSource(self, proxy_index: Index) -> QModelIndex:
        if not proxy_index.isValid() or not 0 <= proxy_index.row() < len(self._order):
            return QModelIndex()
        return self.sourceModel().index(int(self._order[proxy_index.row()]), proxy_index.column())

    def mapFromSource(self, source_index: Index) -> QModelIndex:
        if not source_index.isValid() or not 0 <= source_index.row() < len(self._rank):
            return QModelIndex()
        return self.index(int(self._rank[source_index.row()]), source_index.column())

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal:
            return self.sourceModel().headerData(section, orientation, role)
        if role == Qt.ItemDataRole.DisplayRole and 0 <= section < len(self._order):
            return int(self._order[section]) + 1
        return None


class RowTable(QWidget):
    """Per-row intermediates; click a row to select it everywhere."""

    row_selected = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = RowTableModel(self)
        self.proxy = NumericSortProxy(self)
        self.proxy.setSourceModel(self.model)
        self.view = QTableView(objectName="row_table")
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        # Any cells can be selected and copied; clicking a cell selects its row everywhere.
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setAlternatingRowColors(True)
        self.view.verticalHeader().setVisible(False)
        # Sized once per reset from the first rows: ResizeToContents would measure all 4096
        # rows on every selection change and freeze the window.
        self.view.horizontalHeader().setResizeContentsPrecision(64)
        self.view.verticalHeader().setDefaultSectionSize(22)
        self.copy_button = QPushButton("Copy", objectName="copy_rows")
        self.copy_button.setToolTip(
            "Copy the selected cells (every row and column they span; the whole table if none) "
            "as tab-separated text, exact values (Ctrl+C)"
        )
        self.note = QLabel(objectName="row_note")
        self.note.setWordWrap(True)
        toolbar_over(self, [self.note, self.copy_button], self.view)
        self.copy_button.clicked.connect(self.copy_to_clipboard)
        QShortcut(QKeySequence.StandardKey.Copy, self.view, activated=self.copy_to_clipboard)
        self.view.clicked.connect(self._on_clicked)

    def set_columns(self, columns: list, note: str = "", flags: dict | None = None) -> None:
        """Show ``columns`` under ``note``; ``flags`` colour the error cells (tolerance)."""
        first = self.model.columnCount() == 0
        self.model.set_columns(columns, flags)
        self.note.setText(note)
        self._show_errors_first(columns)
        if first or self.model.rowCount() <= 64:
            self.view.resizeColumnsToContents()

    def _show_errors_first(self, columns: list) -> None:
        """Move the header's sections to :func:`error_first_order` (the view only)."""
        header = self.view.horizontalHeader()
        for visual, logical in enumerate(error_first_order(columns)):
            header.moveSection(header.visualIndex(logical), visual)

    def selected_source_rows(self) -> list[int]:
        """The rows any selected cell is in (source order)."""
        indexes = self.view.selectionModel().selectedIndexes()
        return sorted({self.proxy.mapToSource(index).row() for index in indexes})

    def selected_columns(self) -> list[int]:
        """The columns any selected cell is in."""
        return sorted({index.column() for index in self.view.selectionModel().selectedIndexes()})

    def tsv(self) -> str:
        """The selection (every row and column a selected cell is in, in view order), or the
        whole table, as TSV with a header."""
        selected = set(self.selected_source_rows())
        order = [
            self.proxy.mapToSource(self.proxy.index(r, 0)).row()
            for r in range(self.proxy.rowCount())
        ]
        rows = [r for r in order if not selected or r in selected]
        columns = self.selected_columns() or list(range(self.model.columnCount()))
        return rows_as_tsv(self.model, rows, columns)

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
