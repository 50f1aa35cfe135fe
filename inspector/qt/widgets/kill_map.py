"""The kill matrix as a heat map: one row per implementation (faithful, then each mutant, model
and kernel), one narrow column per fixture, the fixture names written upwards over them.

A killed mutant is good news, so its cell takes the good colour (bluish green, with a tick); a
mutant that got through a fixture is loud only where it matters: the whole row turns vermillion
with a "!" in the verdict when no fixture kills it. A faithful row's pass is a pale tick, its
failure a vermillion cross. The colours are Okabe and Ito's (told apart with the common colour
blindnesses) and every state has its own glyph too. The verdict column has a fixed width, so a
failing faithful row never widens the map; its fixtures are in the tooltip and the summary.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFontMetrics, QGuiApplication, QHelpEvent, QPainter, QPen
from PySide6.QtWidgets import QLabel, QPushButton, QScrollArea, QToolTip, QWidget

from inspector.qt.table_models import (
    NOT_JUDGED_COLOR,
    OUTSIDE_COLOR,
    WITHIN_COLOR,
    KillMatrixModel,
    css,
)
from inspector.qt.widgets.layout import toolbar_over
from oracle.matrix import KillMatrix

#: Cell fill and glyph per state ("" : the fixture does not run this implementation).
STATE_STYLE = {
    "killed": (WITHIN_COLOR, "✓"),
    "survived": (QColor(60, 64, 74), "·"),
    "pass": (QColor(40, 92, 76), "✓"),
    "FAIL": (OUTSIDE_COLOR, "✕"),
    "not judged": (QColor(120, 110, 60), "?"),
    "out of domain": (QColor(70, 74, 84), "–"),
    "": (QColor(30, 33, 40), ""),
}
SURVIVOR_ROW = OUTSIDE_COLOR
CELL_MIN, CELL_MAX, CELL_HEIGHT = 12, 22, 20
VERDICT_WIDTH = 130


class KillHeatMap(QWidget):
    """The painted map over a :class:`KillMatrixModel` (its rows and columns, its states)."""

    def __init__(self, model: KillMatrixModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.highlight: str | None = None
        self.setMouseTracking(True)
        self.setObjectName("kill_heat_map")
        self.setAccessibleName("Kill matrix heat map")
        self._cell = CELL_MAX

    # ------------------------------------------------------------------ geometry

    def _label_width(self) -> int:
        metrics = QFontMetrics(self.font())
        labels = self.model.row_labels()
        return max([metrics.horizontalAdvance(label) for label in labels] + [60]) + 12

    def _header_height(self) -> int:
        metrics = QFontMetrics(self.font())
        names = self.model.fixtures
        return max([metrics.horizontalAdvance(name) for name in names] + [40]) + 10

    def layout_for(self, width: int) -> None:
        """Fit the columns into ``width`` pixels (between 12 and 22 pixels each)."""
        columns = max(len(self.model.fixtures), 1)
        spare = width - self._label_width() - VERDICT_WIDTH - 8
        self._cell = max(CELL_MIN, min(CELL_MAX, spare // columns))
        self.setMinimumSize(self.sizeHint())
        self.updateGeometry()
        self.update()

    def sizeHint(self) -> QSize:
        columns = len(self.model.fixtures)
        rows = len(self.model.row_labels())
        return QSize(
            self._label_width() + columns * self._cell + VERDICT_WIDTH + 8,
            self._header_height() + rows * CELL_HEIGHT + 4,
        )

    def cell_at(self, point: QPoint) -> tuple[int, int] | None:
        """(row, column) under a point; column == len(fixtures) is the verdict; None outside."""
        x = point.x() - self._label_width()
        y = point.y() - self._header_height()
        rows, columns = len(self.model.row_labels()), len(self.model.fixtures)
        if y < 0 or x < 0 or y >= rows * CELL_HEIGHT:
            return None
        row = y // CELL_HEIGHT
        column = x // self._cell
        if column >= columns:
            return (row, columns) if x < columns * self._cell + VERDICT_WIDTH else None
        return row, column

    # ------------------------------------------------------------------ painting

    def paintEvent(self, event: object) -> None:
        painter = QPainter(self)
        try:
            self._paint(painter)
        finally:
            painter.end()

    def _paint(self, painter: QPainter) -> None:
        model = self.model
        labels, fixtures = model.row_labels(), model.fixtures
        left, top, cell = self._label_width(), self._header_height(), self._cell
        text = self.palette().windowText().color()
        painter.setPen(text)
        for column, name in enumerate(fixtures):  # fixture names, written upwards
            painter.save()
            painter.translate(left + column * cell + cell / 2 + 4, top - 6)
            painter.rotate(-90)
            painter.drawText(0, 0, name)
            painter.restore()
        painter.drawText(
            QRect(left + len(fixtures) * cell + 6, top - 20, VERDICT_WIDTH, 18),
            int(Qt.AlignmentFlag.AlignLeft),
            "verdict",
        )
        for row, label in enumerate(labels):
            y = top + row * CELL_HEIGHT
            verdict = model.verdict(row)
            bad = verdict.startswith(("SURVIVED", "FAIL"))
            painter.setPen(SURVIVOR_ROW if bad else text)
            painter.drawText(
                QRect(0, y, left - 6, CELL_HEIGHT),
                int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter),
                label,
            )
            for column in range(len(fixtures)):
                state = model.cell_state(row, column)
                fill, glyph = STATE_STYLE.get(state, STATE_STYLE[""])
                if state == "survived" and bad:
                    fill = SURVIVOR_ROW.darker(160)
                box = QRect(left + column * cell, y, cell - 1, CELL_HEIGHT - 1)
                painter.fillRect(box, fill)
                if glyph:
                    painter.setPen(QColor(245, 245, 245))
                    painter.drawText(box, int(Qt.AlignmentFlag.AlignCenter), glyph)
            painter.setPen(SURVIVOR_ROW if bad else WITHIN_COLOR)
            metrics = QFontMetrics(self.font())
            shown = ("! " if bad else "") + verdict
            painter.drawText(
                QRect(left + len(fixtures) * cell + 6, y, VERDICT_WIDTH - 6, CELL_HEIGHT),
                int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                metrics.elidedText(shown, Qt.TextElideMode.ElideRight, VERDICT_WIDTH - 8),
            )
            if self.highlight and label.endswith(f": {self.highlight}"):
                pen = QPen(QColor(0, 229, 255))
                pen.setWidth(2)
                painter.setPen(pen)
                painter.drawRect(
                    QRect(1, y, left + len(fixtures) * cell + VERDICT_WIDTH, CELL_HEIGHT)
                )

    # ------------------------------------------------------------------ hover

    def tooltip_at(self, point: QPoint) -> str:
        """What the tooltip says at ``point`` ("" outside the cells)."""
        cell = self.cell_at(point)
        if cell is None:
            return ""
        row, column = cell
        if column == len(self.model.fixtures):
            return self.model.data(self.model.index(row, column), Qt.ItemDataRole.ToolTipRole) or (
                self.model.verdict(row)
            )
        tip = self.model.data(self.model.index(row, column), Qt.ItemDataRole.ToolTipRole)
        label, fixture = self.model.row_labels()[row], self.model.fixtures[column]
        return tip or f"{label}: fixture {fixture} does not run it"

    def event(self, event: object) -> bool:
        if isinstance(event, QHelpEvent):
            tip = self.tooltip_at(event.pos())
            if tip:
                QToolTip.showText(event.globalPos(), tip, self)
            else:
                QToolTip.hideText()
            return True
        return super().event(event)


class KillMatrixView(QWidget):
    """Implementations x fixtures as a heat map, with the summary and where it comes from."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = KillMatrixModel(self)
        self.heat_map = KillHeatMap(self.model)
        self.scroll = QScrollArea()
        self.scroll.setWidget(self.heat_map)
        self.scroll.setWidgetResizable(False)
        self.summary = QLabel("Run the check to fill the kill matrix.", objectName="kill_summary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.source = QLabel(objectName="kill_source")
        self.source.setProperty("role", "provenance")
        self.copy_button = QPushButton("Copy as text", objectName="kill_copy")
        self.copy_button.setToolTip("Copy the whole matrix as tab-separated text")
        self.copy_button.setAccessibleName("Copy the kill matrix")
        self.copy_button.clicked.connect(self.copy_to_clipboard)
        toolbar_over(self, [self.summary, self.copy_button], self.scroll, above_body=[self.source])
        self._matrices: list[KillMatrix] = []
        self._highlight: str | None = None

    def resizeEvent(self, event: object) -> None:
        super().resizeEvent(event)  # type: ignore[arg-type]
        self._fit()

    def _fit(self) -> None:
        # The view's own width: the scroll area's viewport is resized only after this event.
        self.heat_map.layout_for(self.width() - 24)
        self.heat_map.resize(self.heat_map.sizeHint())

    def set_matrices(self, matrices: list[KillMatrix], source: str = "") -> None:
        """Show ``matrices`` (model, then kernel); ``source`` says which check they are of."""
        self._matrices = list(matrices)
        self.model.set_matrices(self._matrices)
        self.source.setText(source)
        self._fit()
        parts = []
        for matrix in self._matrices:
            survivors = matrix.survivors
            failing = matrix.baseline_failures
            killed = len(matrix.mutants) - len(survivors)
            unjudged, outside = len(matrix.not_judged), len(matrix.out_of_domain)
            # Green only for a proof that judged every fixture; amber where this machine could not.
            color = css(WITHIN_COLOR) if matrix.passed else css(OUTSIDE_COLOR)
            color = css(NOT_JUDGED_COLOR) if matrix.passed and unjudged else color
            total = len(matrix.mutants)
            text = f"<b style='color:{color}'>{matrix.target}</b>: " + (
                f"{killed}/{total} killed" if total else "no built-in mutants (fixtures only)"
            )
            if survivors:
                text += f", SURVIVED: {', '.join(survivors)}"
            if failing:
                text += f", faithful FAILS {len(failing)}: {', '.join(failing[:6])}"
                text += ", ..." if len(failing) > 6 else ""
            if unjudged:
                text += f", {unjudged} NOT JUDGED on this machine"
            if outside:
                text += f", {outside} out of the kernel's domain"
            parts.append(text)
        self.summary.setText(" · ".join(parts) or "No kill matrix yet: run the check.")
        self.highlight_mutant(self._highlight)

    def highlight_mutant(self, mutant: str | None) -> None:
        """Outline the toggled mutant's row(s) so the toggle and the matrix agree."""
        self._highlight = mutant
        self.heat_map.highlight = mutant
        self.heat_map.update()

    def selected_labels(self) -> list[str]:
        """The row labels outlined (the toggled mutant's, model and kernel)."""
        mutant = self._highlight
        if not mutant:
            return []
        return [label for label in self.model.row_labels() if label.endswith(f": {mutant}")]

    def tsv(self) -> str:
        """The matrix as text: a header of fixtures, one line per implementation."""
        model = self.model
        fixtures = model.fixtures
        lines = ["\t".join(["implementation", *fixtures, "verdict"])]
        for row, label in enumerate(model.row_labels()):
            states = [model.cell_state(row, c) or "-" for c in range(len(fixtures))]
            lines.append("\t".join([label, *states, model.verdict(row)]))
        return "\n".join(lines) + "\n"

    def copy_to_clipboard(self) -> str:
        text = self.tsv()
        QGuiApplication.clipboard().setText(text)
        return text
