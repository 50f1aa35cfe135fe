"""The launch-layout coverage map as a grid: one row per layout the rule can reach (kernel,
rows per program, vector width and compile-time branches), one column per dtype; each cell
says whether a committed record of this kernel proves it on a CPU (the interpreter), on a GPU
(compiled), on both, or on neither. Okabe and Ito's colours, each state with its own glyph."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from inspector.coverage.proof import DTYPE_COLUMNS, grid
from inspector.qt.table_models import OUTSIDE_COLOR, WITHIN_COLOR
from inspector.qt.widgets.layout import toolbar_over
from inspector.records.receipts.format import parse_receipt_json

#: Fill and text per cell state (see inspector.coverage.proof.CELL_STATES).
STATE_STYLE = {
    "cpu+gpu": (WITHIN_COLOR, "✓ CPU + GPU"),
    "cpu": (QColor(230, 159, 0), "◐ CPU only"),
    "gpu": (QColor(230, 159, 0), "◑ GPU only"),
    "unproven": (OUTSIDE_COLOR, "✕ not proven"),
    "": (QColor(60, 64, 74), "· not reached"),
}


class CoverageView(QWidget):
    """The map of the last check (or of a saved receipt), with where its proofs come from."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.caption = QLabel("Run the check: the coverage map comes with its receipt.")
        self.caption.setWordWrap(True)
        self.table = QTableWidget(0, len(DTYPE_COLUMNS), objectName="coverage_grid")
        self.table.setHorizontalHeaderLabels(list(DTYPE_COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAccessibleName("Launch-layout coverage map")
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        toolbar_over(self, [self.caption], self.table, body_stretch=1)
        self.section: dict[str, Any] | None = None

    def set_section(self, section: dict[str, Any] | None) -> None:
        """Show a receipt's ``coverage`` section (None or ``{"absent"}``/``{"error"}``: why not)."""
        self.section = section
        if section is None or "configurations" not in section:
            why = (
                "no check run yet"
                if section is None
                else section.get("absent") or section.get("error", "")
            )
            self.caption.setText(f"No coverage map: {why}.")
            self.table.setRowCount(0)
            return
        layouts, cells = grid(section)
        total, unproven = len(section["configurations"]), len(section["unproven"])
        self.caption.setText(
            f"{total} launch configurations the layout rule can reach: {section['proven_cpu']} "
            f"proven on a CPU ({section['sources']['cpu']}), {section['proven_gpu']} on a GPU "
            f"({section['sources']['gpu']}); "
            + ("every one proven." if not unproven else f"{unproven} NOT proven.")
        )
        self.table.setRowCount(len(layouts))
        self.table.setVerticalHeaderLabels(layouts)
        for row, layout in enumerate(layouts):
            for column, dtype in enumerate(DTYPE_COLUMNS):
                state = cells.get((layout, dtype), "")
                fill, text = STATE_STYLE[state]
                item = QTableWidgetItem(text)
                item.setBackground(QBrush(fill))
                item.setForeground(QBrush(QColor(255, 255, 255)))
                item.setToolTip(f"{dtype}/{layout}: {text[2:]}")
                self.table.setItem(row, column, item)

    def cell_text(self, layout: str, dtype: str) -> str:
        """The text of a cell (for tests and the accessibility tree)."""
        layouts, _ = grid(self.section or {"configurations": []})
        item = self.table.item(layouts.index(layout), DTYPE_COLUMNS.index(dtype))
        return item.text() if item is not None else ""


def saved_coverage(session: Any, provenance: Any) -> dict[str, Any] | None:
    """The ``coverage`` section of a session's saved receipt, or ``{"absent": why}``: none
    saved, or a receipt of another kernel than the one loaded (its map would not be this
    kernel's)."""
    text = getattr(session, "receipt_json", None)
    if text is None:
        return {"absent": "the session holds no receipt"}
    if provenance is not None and provenance.stale:
        return {"absent": "the saved receipt is of another kernel; run the check again"}
    try:
        section = parse_receipt_json(text, "the saved receipt").get("coverage")
    except (ValueError, AttributeError, RecursionError):
        return {"absent": "the saved receipt could not be read"}
    if not isinstance(section, dict):
        return {"absent": "the saved receipt predates the coverage map"}
    if "configurations" in section and not _well_formed(section):
        return {"absent": "the saved receipt's coverage section is malformed"}
    return section


def _well_formed(section: dict[str, Any]) -> bool:
    entries = section.get("configurations")
    sources = section.get("sources")
    if not isinstance(entries, list) or not isinstance(sources, dict):
        return False
    keys = {"label": str, "dtype": str, "proven_cpu": bool, "proven_gpu": bool}
    return (
        isinstance(section.get("unproven"), list)
        and all(
            isinstance(e, dict)
            and all(isinstance(e.get(k), t) for k, t in keys.items())
            and "/" in e["label"]
            for e in entries
        )
        and all(isinstance(sources.get(k), str) for k in ("cpu", "gpu"))
    )
