"""Table models over plain data: the views never own numbers.

* :class:`RowTableModel`: per-row intermediates (columns from ``viewdata.row_columns``).
* :class:`KillMatrixModel`: mutants x fixtures for the model and the kernel kill matrices.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from inspector.model.row_verdicts import OUTSIDE, WITHIN
from inspector.model.viewdata import RowColumn
from oracle.matrix import NO_VERDICT, FixtureOutcome, KillMatrix

#: A kill matrix cell's text per state.
GLYPHS = {
    "killed": "✕", "survived": "·", "pass": "✓", "FAIL": "FAIL", "not judged": "?",
    "out of domain": "–",
}  # fmt: skip

Index = QModelIndex | QPersistentModelIndex

KILLED_COLOR = QColor(46, 125, 50)
SURVIVED_COLOR = QColor(198, 40, 40)
NEUTRAL_COLOR = QColor(96, 104, 118)
#: A verdict this machine could not reach (its interpreter's fault): neither pass nor fail.
NOT_JUDGED_COLOR = QColor(200, 150, 0)
#: Okabe-Ito bluish green and vermillion: within / outside the tolerance, a proof passed / not.
WITHIN_COLOR = QColor(0, 158, 115)
OUTSIDE_COLOR = QColor(213, 94, 0)
#: Error cells against the tolerance, the same hues translucent.
TOLERANCE_COLORS = {
    "within": QColor(WITHIN_COLOR.red(), WITHIN_COLOR.green(), WITHIN_COLOR.blue(), 45),
    "outside": QColor(OUTSIDE_COLOR.red(), OUTSIDE_COLOR.green(), OUTSIDE_COLOR.blue(), 140),
}


def css(color: QColor) -> str:
    """``color`` as the CSS a label's rich text takes: ``rgb(r,g,b)``."""
    return f"rgb({color.red()},{color.green()},{color.blue()})"


def format_number(value: float, kind: str) -> str:
    """Display text for one cell: integers plain, floats to 9 significant digits."""
    if isinstance(value, float | np.floating) and math.isnan(value):
        return ""
    if kind == "int":
        return str(int(value))
    if kind == "error":
        return f"{value:.3e}"
    return f"{value:.9g}"


class TitledTableModel(QAbstractTableModel):
    """A read-only table whose header titles come from :meth:`column_title` and
    :meth:`row_title` (display text only)."""

    def column_title(self, section: int) -> Any:
        """The title over column ``section`` (None: none)."""
        return None

    def row_title(self, section: int) -> Any:
        """The title beside row ``section`` (None: none)."""
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal:
            return self.column_title(section)
        return self.row_title(section)


class RowTableModel(QAbstractTableModel):
    """Per-row intermediates. ``Qt.UserRole`` gives the raw number (sorting uses it)."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._columns: list[RowColumn] = []
        self._rows = 0
        self._flags: dict[int, np.ndarray] = {}

    def set_columns(
        self, columns: list[RowColumn], flags: dict[str, np.ndarray] | None = None
    ) -> None:
        """Show ``columns``; ``flags`` (``row_verdicts.tolerance_flags``) colour the error cells."""
        self.beginResetModel()
        self._columns = list(columns)
        self._rows = len(columns[0].values) if columns else 0
        named = flags or {}
        self._flags = {
            i: named[column.name] for i, column in enumerate(columns) if column.name in named
        }
        self.endResetModel()

    def tolerance_state(self, row: int, column: int) -> str:
        """ "within" / "outside" the tolerance, or "" (not an error cell, or not run)."""
        flags = self._flags.get(column)
        if flags is None:
            return ""
        return {WITHIN: "within", OUTSIDE: "outside"}.get(int(flags[row]), "")

    def column_values(self, name: str) -> np.ndarray:
        """The raw array behind a column (tests and copy use it)."""
        for column in self._columns:
            if column.name == name:
                return column.values
        raise KeyError(name)

    @property
    def column_names(self) -> list[str]:
        return [column.name for column in self._columns]

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else self._rows

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._columns)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        column = self._columns[index.column()]
        value = column.values[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return format_number(value, column.kind)
        if role == Qt.ItemDataRole.UserRole:
            number = float(value)
            return -math.inf if math.isnan(number) else number
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.BackgroundRole:
            state = self.tolerance_state(index.row(), index.column())
            return QBrush(TOLERANCE_COLORS[state]) if state else None
        if role == Qt.ItemDataRole.ToolTipRole:
            state = self.tolerance_state(index.row(), index.column())
            verdict = f"\n{state.upper()} the tolerance" if state else ""
            return f"{column.name}: {float(value)!r}{verdict}\n{column.tooltip}"
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(self._columns):
            if role == Qt.ItemDataRole.DisplayRole:  # two short lines: narrower columns
                return two_line_title(self._columns[section].name)
            if role == Qt.ItemDataRole.UserRole:  # the name itself (copies, exports)
                return self._columns[section].name
            if role == Qt.ItemDataRole.ToolTipRole:
                return self._columns[section].tooltip
        return None


def two_line_title(name: str) -> str:
    """``name`` on two lines, broken at the space nearest its middle (one word: as it is)."""
    spaces = [i for i, char in enumerate(name) if char == " "]
    if not spaces or len(name) < 9:
        return name
    middle = len(name) / 2
    cut = min(spaces, key=lambda i: abs(i - middle))
    return name[:cut] + "\n" + name[cut + 1 :]


#: Row-table columns shown with the error columns, though not of the "error" kind.
ERROR_LIKE_COLUMNS = ("batch Δulp",)


def error_first_order(columns: list[RowColumn]) -> list[int]:
    """The row table's view order of ``columns`` (model indices): the row index, then every
    error column (what a user reads first: within or outside the tolerance), then the rest,
    each group in the model's order. The model, its copies and the CSV keep the model's order.
    """
    errors = [
        i
        for i, column in enumerate(columns)
        if column.kind == "error" or column.name in ERROR_LIKE_COLUMNS
    ]
    first = [i for i, column in enumerate(columns) if column.name == "row"][:1]
    rest = [i for i in range(len(columns)) if i not in errors and i not in first]
    return first + errors + rest


def rows_as_tsv(model: QAbstractTableModel, rows: list[int], columns: list[int]) -> str:
    """Header (the column names: ``UserRole``) plus the given rows and columns as tab-separated
    text (exact values)."""
    header = [
        str(model.headerData(c, Qt.Orientation.Horizontal, Qt.ItemDataRole.UserRole))
        for c in columns
    ]
    lines = ["\t".join(header)]
    for r in rows:
        cells = []
        for c in columns:
            raw = model.data(model.index(r, c), Qt.ItemDataRole.UserRole)
            text = model.data(model.index(r, c), Qt.ItemDataRole.DisplayRole)
            if isinstance(raw, float) and math.isfinite(raw) and text:
                cells.append(str(int(raw)) if raw == int(raw) and "." not in text else repr(raw))
            else:
                cells.append(str(text or ""))
        lines.append("\t".join(cells))
    return "\n".join(lines) + "\n"


class KillMatrixModel(TitledTableModel):
    """Rows: "<target>: <mutant>" (baseline first); columns: fixtures that run, then verdict.

    A cell reads "killed" where the fixture passed on the faithful implementation and failed
    on the mutant, "survived" where the mutant got through, "FAIL" on a failing baseline.
    """

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[tuple[str, str, KillMatrix]] = []  # (label, mutant|"", matrix)
        self._fixtures: list[str] = []
        self._states: list[list[str]] = []
        self._outcomes: list[list[FixtureOutcome | None]] = []
        self._verdicts: list[str] = []

    def set_matrices(self, matrices: list[KillMatrix]) -> None:
        self.beginResetModel()
        self._rows = []
        fixtures: list[str] = []
        for matrix in matrices:
            self._rows.append((f"{matrix.target}: faithful", "", matrix))
            for mutant in matrix.mutants:
                self._rows.append((f"{matrix.target}: {mutant}", mutant, matrix))
            for outcomes in matrix.cells.values():
                for outcome in outcomes:
                    if outcome.fixture not in fixtures:
                        fixtures.append(outcome.fixture)
        self._fixtures = fixtures
        # Every cell's state and outcome, computed once: views ask for them thousands of times.
        self._states = []
        self._outcomes = []
        self._verdicts = []
        column_of = {name: i for i, name in enumerate(fixtures)}
        for _, mutant, matrix in self._rows:
            good = {o.fixture for o in matrix.baseline if o.passed}
            source = matrix.baseline if not mutant else matrix.cells[mutant]
            outcomes: list[FixtureOutcome | None] = [None] * len(fixtures)
            states = [""] * len(fixtures)
            for outcome in source:
                column = column_of.get(outcome.fixture)
                if column is None:
                    continue
                outcomes[column] = outcome
                if outcome.actual in NO_VERDICT:  # the machine's fault, or out of domain
                    states[column] = outcome.actual
                elif not mutant:
                    states[column] = "pass" if outcome.passed else "FAIL"
                else:
                    killed = outcome.fixture in good and not outcome.passed
                    states[column] = "killed" if killed else "survived"
            self._outcomes.append(outcomes)
            self._states.append(states)
            if not mutant:
                failures = matrix.baseline_failures
                verdict = "all fixtures behave" if not failures else f"FAIL: {', '.join(failures)}"
                if matrix.not_judged:
                    verdict += f" ({len(matrix.not_judged)} not judged on this machine)"
                if matrix.out_of_domain:
                    verdict += f" ({len(matrix.out_of_domain)} out of its domain)"
            else:
                killers = matrix.killed_by(mutant)
                verdict = f"killed by {len(killers)}" if killers else "SURVIVED"
            self._verdicts.append(verdict)
        self.endResetModel()

    @property
    def fixtures(self) -> list[str]:
        return list(self._fixtures)

    def row_labels(self) -> list[str]:
        return [label for label, _, _ in self._rows]

    def verdict(self, row: int) -> str:
        return self._verdicts[row]

    def _outcome(self, row: int, column: int) -> FixtureOutcome | None:
        return self._outcomes[row][column]

    def cell_state(self, row: int, column: int) -> str:
        """ "killed" / "survived" / "pass" / "FAIL" / "not judged" / "out of domain" / "" (not
        in this matrix)."""
        return self._states[row][column]

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._fixtures) + 1

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = index.row(), index.column()
        if column == len(self._fixtures):
            verdict = self.verdict(row)
            if role == Qt.ItemDataRole.DisplayRole:
                return verdict
            if role == Qt.ItemDataRole.ForegroundRole:
                bad = verdict.startswith(("SURVIVED", "FAIL"))
                unjudged = "not judged on this machine" in verdict
                return QBrush(
                    SURVIVED_COLOR if bad else NOT_JUDGED_COLOR if unjudged else KILLED_COLOR
                )
            if role == Qt.ItemDataRole.ToolTipRole:
                _, mutant, matrix = self._rows[row]
                if mutant:
                    killers = matrix.killed_by(mutant)
                    return "killed by: " + (", ".join(killers) if killers else "nothing")
            return None
        state = self.cell_state(row, column)
        if role == Qt.ItemDataRole.DisplayRole:
            return GLYPHS.get(state, "")
        if role == Qt.ItemDataRole.BackgroundRole:
            color = {
                "killed": KILLED_COLOR,
                "FAIL": SURVIVED_COLOR,
            }.get(state)
            return QBrush(color) if color is not None else None
        if role == Qt.ItemDataRole.ToolTipRole:
            outcome = self._outcome(row, column)
            if outcome is None:
                return None
            return f"{self._rows[row][0]} on {outcome.fixture}: {state}\n{outcome.detail}"
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignCenter)
        if role == Qt.ItemDataRole.UserRole:
            return state
        return None

    def column_title(self, section: int) -> Any:
        return self._fixtures[section] if section < len(self._fixtures) else "verdict"

    def row_title(self, section: int) -> Any:
        return self._rows[section][0] if section < len(self._rows) else None


def kill_matrix_from_table(table: Any) -> KillMatrix:
    """Rebuild an oracle ``KillMatrix`` from a session's plain ``KillTable`` (for the view)."""
    baseline = tuple(
        FixtureOutcome(
            fixture=name,
            category=category,
            expected=expected,
            actual=actual,
            passed=bool(passed),
            detail="from the session file",
        )
        for name, category, expected, actual, passed in zip(
            table.fixtures,
            table.categories,
            table.expected,
            table.baseline_actual,
            table.baseline_passed,
            strict=True,
        )
    )
    cells: dict[str, tuple[FixtureOutcome, ...]] = {}
    for row, mutant in enumerate(table.mutants):
        outcomes = []
        for column, outcome in enumerate(baseline):
            if outcome.expected != "pass":
                continue  # rejection fixtures never run an implementation
            detected = bool(table.detected[row, column])
            outcomes.append(
                FixtureOutcome(
                    fixture=outcome.fixture,
                    category=outcome.category,
                    expected="pass",
                    actual="fail" if detected else "pass",
                    passed=not detected,
                    detail="detected (from the session file)" if detected else "not detected",
                )
            )
        cells[mutant] = tuple(outcomes)
    return KillMatrix(table.target, tuple(table.fixtures), baseline, cells)
