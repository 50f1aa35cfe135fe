"""Receipt history: the session's first passing receipt and every later counterexample, and
the difference between any two of them (``inspector.records.diff.diff_receipts``, the same
comparison as ``python main.py diff A B``)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from inspector.records.receipts.format import parse_receipt_json


class HistoryView(QWidget):
    """Pick two receipts of the session (A and B); the differences are listed below."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = QLabel("No receipts in this session yet.", objectName="history_summary")
        self.summary.setWordWrap(True)
        self.a_combo = QComboBox(objectName="history_a")
        self.b_combo = QComboBox(objectName="history_b")
        for combo in (self.a_combo, self.b_combo):
            # An entry's reason (a counterexample's first failure, up to 300 characters) must not
            # size the combo, the tab and so the window past the screen: it is elided to the
            # combo's width and whole in its tooltip.
            combo.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
            )
            combo.setMinimumContentsLength(24)
        self.diff_text = QPlainTextEdit(objectName="history_diff")
        self.diff_text.setReadOnly(True)
        pick = QHBoxLayout()
        pick.addWidget(QLabel("A"))
        pick.addWidget(self.a_combo, 1)
        pick.addWidget(QLabel("B"))
        pick.addWidget(self.b_combo, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addLayout(pick)
        layout.addWidget(self.diff_text, 1)
        self.entries: list[tuple[str, str]] = []  # (label, receipt JSON text)
        self.a_combo.currentIndexChanged.connect(self._compare_selected)
        self.b_combo.currentIndexChanged.connect(self._compare_selected)

    def set_history(self, records: list[Any], current_json: str | None = None) -> None:
        """Show ``ReceiptRecord``s (kind, created, reason, json_text), plus the current receipt
        when it is not one of them; A is the first entry, B the last."""
        entries = [
            (f"{i + 1}. {r.kind} · {r.created} · {r.reason}", r.json_text)
            for i, r in enumerate(records)
        ]
        if current_json and all(text != current_json for _, text in entries):
            entries.append((f"{len(entries) + 1}. current receipt", current_json))
        self.entries = entries
        for combo in (self.a_combo, self.b_combo):
            combo.blockSignals(True)
            combo.clear()
            combo.addItems([label for label, _ in entries])
            for index, (label, _) in enumerate(entries):
                combo.setItemData(index, label, Qt.ItemDataRole.ToolTipRole)
            combo.blockSignals(False)
        passes = sum(1 for r in records if r.kind != "counterexample")
        counter = len(records) - passes
        self.summary.setText(
            f"{len(records)} receipt(s) kept: {passes} first pass, {counter} counterexample(s)"
            if records
            else "No receipts in this session yet (a check keeps its receipt here when it ends)."
        )
        if entries:
            self.a_combo.setCurrentIndex(0)
            self.b_combo.setCurrentIndex(len(entries) - 1)
        self._compare_selected()

    def compare(self, a: int, b: int) -> list[str]:
        """The differences between entries ``a`` and ``b`` (empty: equivalent)."""
        from inspector.records.diff import diff_receipts

        left = parse_receipt_json(self.entries[a][1], f"receipt {a + 1}")
        right = parse_receipt_json(self.entries[b][1], f"receipt {b + 1}")
        return [str(d) for d in diff_receipts(left, right)]

    def _compare_selected(self, *_: Any) -> None:
        a, b = self.a_combo.currentIndex(), self.b_combo.currentIndex()
        if a < 0 or b < 0 or not self.entries:
            self.diff_text.setPlainText("")
            return
        try:
            differences = self.compare(a, b)
        except Exception as exc:  # a damaged stored receipt is reported, never raised
            self.diff_text.setPlainText(f"cannot compare: {type(exc).__name__}: {exc}")
            return
        if a == b:
            head = "the same receipt"
        elif not differences:
            head = "A and B are equivalent"
        else:
            head = f"{len(differences)} difference(s) between A and B:"
        self.diff_text.setPlainText("\n".join([head, *differences]))
