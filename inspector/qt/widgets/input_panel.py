"""Input panel: every field goes through the oracle's validator; invalid fields say why.

Small inputs live as text in the x / weight editors. Large ones (random, ``.npy``, big fixtures)
are held as arrays and the editors show a summary instead of megabytes of text. Either way the
problem is built by ``oracle.spec.make_problem`` and the first :class:`ValidationError` marks
its field (red frame, tooltip) and the message line; ``problem_changed(None)`` blocks running.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from inspector.qt.widgets import dialogs
from oracle import fixtures
from oracle.dtypes import DTYPES
from oracle.parse import check_regular_file
from oracle.spec import LIMITS, Problem, ValidationError, make_problem, synthetic_problem

#: Arrays up to this many elements are shown as editable text.
TEXT_LIMIT = 4096

FIELDS = ("rows", "width", "dtype", "eps", "row_stride", "x", "weight", "seed")


def matrix_text(values: np.ndarray) -> str:
    """Rows separated by ``;`` and newlines, values by ``, `` (repr-exact)."""
    array = np.atleast_2d(np.asarray(values, dtype=np.float64))
    return ";\n".join(", ".join(repr(float(v)) for v in row) for row in array)


def vector_text(values: np.ndarray) -> str:
    return ", ".join(repr(float(v)) for v in np.ravel(np.asarray(values, dtype=np.float64)))


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return repr(value) if isinstance(value, float) else str(value)


class InputPanel(QWidget):
    """The problem's fields. Emits ``problem_changed(Problem | None)`` after each edit."""

    problem_changed = Signal(object)
    edited = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._x_array: np.ndarray | None = None
        self._w_array: np.ndarray | None = None
        self._source = "text"
        self._problem: Problem | None = None
        self._error: ValidationError | None = None
        self._loading = False

        self.rows_edit = QLineEdit(objectName="rows")
        self.width_edit = QLineEdit(objectName="width")
        self.dtype_combo = QComboBox(objectName="dtype")
        self.dtype_combo.addItems(list(DTYPES))
        self.eps_edit = QLineEdit("1e-06", objectName="eps")
        self.stride_edit = QLineEdit(objectName="row_stride")
        self.stride_edit.setPlaceholderText("= width")
        self.x_edit = QPlainTextEdit(objectName="x")
        self.x_edit.setPlaceholderText("rows separated by ';' or newlines, values by ',' or spaces")
        self.x_edit.setMinimumHeight(70)
        self.w_edit = QPlainTextEdit(objectName="weight")
        self.w_edit.setPlaceholderText("exactly width values")
        self.w_edit.setMaximumHeight(56)
        self.seed_edit = QLineEdit("0", objectName="seed")
        self.seed_edit.setMaximumWidth(80)
        self.fixture_combo = QComboBox(objectName="fixture")
        self.fixture_combo.addItem("— load a fixture —", None)
        for fixture in fixtures.FIXTURES:
            self.fixture_combo.addItem(f"{fixture.name}  [{fixture.category}]", fixture.name)
            self.fixture_combo.setItemData(
                self.fixture_combo.count() - 1, fixture.description, Qt.ItemDataRole.ToolTipRole
            )
        self.random_button = QPushButton("Random", objectName="random")
        self.random_button.setToolTip("x ~ N(0, 1), weights in [-2, 2]; rows and width above")
        self.npy_button = QPushButton("Import .npy…", objectName="import_npy")
        self.text_button = QPushButton("Edit as text", objectName="edit_as_text")
        self.text_button.setToolTip("Replace the loaded array with editable text")
        self.message = QLabel(objectName="message")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self._edits: dict[str, QWidget] = {
            "rows": self.rows_edit,
            "width": self.width_edit,
            "dtype": self.dtype_combo,
            "eps": self.eps_edit,
            "row_stride": self.stride_edit,
            "x": self.x_edit,
            "weight": self.w_edit,
            "seed": self.seed_edit,
        }
        bounds = dict(LIMITS.as_rows())
        bounds["seed"] = "integer in [0, 2**32 - 1]"
        for name, widget in self._edits.items():
            widget.setProperty("bound_tip", bounds.get(name, ""))
            widget.setToolTip(bounds.get(name, ""))

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        shape_row = QHBoxLayout()
        shape_row.addWidget(self.rows_edit)
        shape_row.addWidget(QLabel("×"))
        shape_row.addWidget(self.width_edit)
        form.addRow("rows × width", shape_row)
        form.addRow("dtype", self.dtype_combo)
        form.addRow("eps", self.eps_edit)
        form.addRow("row stride", self.stride_edit)
        form.addRow("x", self.x_edit)
        form.addRow("weight", self.w_edit)
        form.addRow("fixture", self.fixture_combo)
        source_row = QHBoxLayout()
        source_row.addWidget(QLabel("seed"))
        source_row.addWidget(self.seed_edit)
        source_row.addWidget(self.random_button)
        source_row.addWidget(self.npy_button)
        form.addRow(source_row)
        form.addRow(self.text_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(form)
        layout.addWidget(self.message)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(150)
        self._debounce.timeout.connect(self.validate)

        for edit in (self.rows_edit, self.width_edit, self.eps_edit, self.stride_edit):
            edit.textEdited.connect(self._on_edit)
        self.dtype_combo.currentIndexChanged.connect(self._on_edit)
        self.x_edit.textChanged.connect(self._on_text_edit)
        self.w_edit.textChanged.connect(self._on_text_edit)
        self.fixture_combo.activated.connect(self._on_fixture)
        self.random_button.clicked.connect(self.load_random)
        self.npy_button.clicked.connect(self.import_npy)
        self.text_button.clicked.connect(self.to_text_mode)
        self.text_button.setVisible(False)

    # ------------------------------------------------------------------ state

    @property
    def problem(self) -> Problem | None:
        return self._problem

    @property
    def error(self) -> ValidationError | None:
        return self._error

    def field_widget(self, name: str) -> QWidget:
        return self._edits[name]

    def field_error(self, name: str) -> str | None:
        """The message shown on a field, or None when it is valid."""
        return self._edits[name].property("error") or None

    # ------------------------------------------------------------------ loading

    def set_values(
        self,
        *,
        x: Any,
        weight: Any,
        eps: Any = 1e-6,
        dtype: str = "float32",
        row_stride: Any = None,
        rows: Any = None,
        width: Any = None,
        label: str = "",
        validated: Problem | None = None,
    ) -> None:
        """Fill every field (arrays above :data:`TEXT_LIMIT` stay arrays) and validate now.

        Args:
            validated: the oracle's problem for exactly these values, when the caller has it
                already (an opened session): accepted without validating 4M values again.
        """
        self._loading = True
        try:
            x_array = None if isinstance(x, str) or x is None else _try_array(x, 2)
            w_array = None if isinstance(weight, str) or weight is None else _try_array(weight, 1)
            if rows is None and x_array is not None:
                rows = x_array.shape[0]
            if width is None and x_array is not None:
                width = x_array.shape[1]
            self.rows_edit.setText(_as_text(rows))
            self.width_edit.setText(_as_text(width))
            index = self.dtype_combo.findText(str(dtype))
            if index < 0:
                self.dtype_combo.addItem(str(dtype))
                index = self.dtype_combo.count() - 1
            self.dtype_combo.setCurrentIndex(index)
            self.eps_edit.setText(_as_text(eps))
            self.stride_edit.setText(_as_text(row_stride))
            big = (x_array is not None and x_array.size > TEXT_LIMIT) or (
                w_array is not None and w_array.size > TEXT_LIMIT
            )
            if big:
                self._source = "array"
                self._x_array = x_array if x_array is not None else None
                self._w_array = w_array
                self._show_array_summary(label)
            else:
                self._source = "text"
                self._x_array = self._w_array = None
                self.x_edit.setReadOnly(False)
                self.w_edit.setReadOnly(False)
                self.x_edit.setPlainText(_as_text(x) if x_array is None else matrix_text(x_array))
                self.w_edit.setPlainText(
                    _as_text(weight) if w_array is None else vector_text(w_array)
                )
            self.text_button.setVisible(self._source == "array")
        finally:
            self._loading = False
        if validated is not None:
            self._debounce.stop()
            self._clear_marks()
            self._accept(validated)
            return
        self.validate()

    def _show_array_summary(self, label: str) -> None:
        x, w = self._x_array, self._w_array
        self.x_edit.setReadOnly(True)
        self.w_edit.setReadOnly(True)
        shape = "×".join(str(n) for n in x.shape) if x is not None else "?"
        self.x_edit.setPlainText(
            f"[array {shape} {label}] — too large to edit as text; "
            "press 'Edit as text' to type values instead"
        )
        self.w_edit.setPlainText(f"[array of {0 if w is None else w.size} weights]")

    def load_fixture(self, name: str) -> None:
        """Fill the fields from one fixture's inputs (malformed ones show their rejection)."""
        fixture = fixtures.get(name)
        inputs = dict(fixture.inputs())
        self.set_values(
            x=inputs.get("x"),
            weight=inputs.get("weight"),
            eps=inputs.get("eps"),
            dtype=inputs.get("dtype") or "float32",
            row_stride=inputs.get("row_stride"),
            rows=inputs.get("rows"),
            width=inputs.get("width"),
            label=f"fixture {name}",
        )
        self.edited.emit()

    def load_random(self) -> None:
        """Random synthetic input of the declared rows x width, reproducible by seed."""
        self._clear_marks()
        try:
            problem = synthetic_problem(
                self.rows_edit.text(),
                self.width_edit.text(),
                seed=self.seed_edit.text(),
                eps=self.eps_edit.text() or 1e-6,
                dtype=self.dtype_combo.currentText(),
                row_stride=self.stride_edit.text() or None,
            )
        except ValidationError as exc:
            self._mark(exc)
            return
        self.set_values(
            x=problem.x,
            weight=problem.weight,
            eps=self.eps_edit.text() or 1e-6,
            dtype=problem.dtype,
            row_stride=self.stride_edit.text() or None,
            label=f"random, seed {self.seed_edit.text()}",
        )
        self.edited.emit()

    def import_npy(self) -> None:
        """x from a ``.npy`` file (1-D: one row); weights kept if they still fit, else ones.

        A file that cannot become a valid x (unreadable, pickled objects, not 1-D/2-D numbers,
        too many values, non-finite or out-of-range values) gets one error on the x field and
        changes nothing else: the current input, and the problem it validated to, stay.
        """
        path = dialogs.choose_open_file(self, "Import x from .npy", "NumPy arrays (*.npy)")
        if not path:
            return
        try:
            matrix = read_npy_matrix(path)
            weight = self._current_weight()
            if weight is None or weight.size != matrix.shape[1]:
                weight = np.ones(matrix.shape[1])
            eps = self.eps_edit.text() or 1e-6
            dtype = self.dtype_combo.currentText()
            try:
                make_problem(matrix, weight, eps=eps, dtype=dtype, name="npy")
            except ValidationError as exc:
                if exc.field in ("x", "weight", "rows", "width", "row_stride"):
                    raise ValidationError("x", path, exc.bound, f"x: {path}: {exc}") from None
                # Another field (eps, dtype) is wrong already: load x, the field keeps its mark.
        except ValidationError as exc:
            self._mark(exc)
            return
        self.set_values(
            x=matrix,
            weight=weight,
            eps=eps,
            dtype=dtype,
            row_stride=None,
            label=f"from {path}",
        )
        self.edited.emit()

    def _current_weight(self) -> np.ndarray | None:
        if self._source == "array":
            return self._w_array
        if self._problem is not None:
            return np.array(self._problem.weight)
        return None

    def to_text_mode(self) -> None:
        """Drop the loaded arrays; the editors become text again (shown as text if small)."""
        x, w = self._x_array, self._w_array
        self._source = "text"
        self._x_array = self._w_array = None
        self._loading = True
        self.x_edit.setReadOnly(False)
        self.w_edit.setReadOnly(False)
        small = x is not None and x.size <= TEXT_LIMIT
        self.x_edit.setPlainText(matrix_text(x) if small else "")
        self.w_edit.setPlainText(vector_text(w) if (w is not None and w.size <= TEXT_LIMIT) else "")
        self._loading = False
        self.text_button.setVisible(False)
        self.validate()
        self.edited.emit()

    # ------------------------------------------------------------------ validation

    def _on_edit(self, *_: Any) -> None:
        if self._loading:
            return
        self.edited.emit()
        self._debounce.start()

    def _on_text_edit(self) -> None:
        if self._loading or self._source == "array":
            return
        self.edited.emit()
        self._debounce.start()

    def validate(self) -> Problem | None:
        """Build the problem from the fields; mark the first invalid one. Emits the result."""
        self._debounce.stop()
        self._clear_marks()
        try:
            if self._source == "array":
                x: Any = self._x_array
                weight: Any = self._w_array
            else:
                x = self.x_edit.toPlainText()
                weight = self.w_edit.toPlainText()
            problem = make_problem(
                x,
                weight,
                eps=self.eps_edit.text(),
                dtype=self.dtype_combo.currentText(),
                row_stride=self.stride_edit.text().strip() or None,
                rows=self.rows_edit.text().strip() or None,
                width=self.width_edit.text().strip() or None,
                name=self._source,
            )
        except ValidationError as exc:
            self._mark(exc)
            self._problem = None
            self.problem_changed.emit(None)
            return None
        self._accept(problem)
        return problem

    def _accept(self, problem: Problem) -> None:
        self._problem = problem
        self._error = None
        block = problem.block
        self.message.setText(
            f"valid: {problem.rows} × {problem.width} {problem.dtype}, tile {block} "
            f"({block - problem.width} masked), row stride {problem.row_stride}, "
            f"eps {problem.eps:g}"
        )
        self.message.setProperty("state", "ok")
        _repolish(self.message)
        self.problem_changed.emit(problem)

    def _clear_marks(self) -> None:
        for widget in self._edits.values():
            if widget.property("error"):
                widget.setProperty("error", "")
                widget.setProperty("invalid", False)
                widget.setToolTip(widget.property("bound_tip") or "")
                _repolish(widget)

    def _mark(self, exc: ValidationError) -> None:
        self._error = exc
        widget = self._edits.get(exc.field, self.x_edit)
        widget.setProperty("error", str(exc))
        widget.setProperty("invalid", True)
        widget.setToolTip(str(exc))
        _repolish(widget)
        self.message.setText(str(exc))
        self.message.setProperty("state", "error")
        _repolish(self.message)

    def _on_fixture(self, index: int) -> None:
        name = self.fixture_combo.itemData(index)
        if name:
            self.load_fixture(name)


def read_npy_matrix(path: str) -> np.ndarray:
    """Read a 1-D or 2-D numeric ``.npy`` file as a float64 ``rows x width`` matrix.

    The file is memory-mapped first, so its header is checked (pickle refused, dimensions,
    dtype, element count against the declared limit) before a byte of data is copied: a header
    that declares a huge shape costs nothing.

    Raises:
        ValidationError: on field ``x``, naming the file and what was expected.
    """
    expected = f"a 1-D or 2-D numeric array of at most {LIMITS.max_elements} values"
    check_regular_file(path, "x")
    try:
        mapped = np.load(path, mmap_mode="r", allow_pickle=False)
    except Exception as exc:  # any damage in the file is this file's error, never a crash
        reason = f"{type(exc).__name__}: {exc}" if not isinstance(exc, OSError) else str(exc)
        if isinstance(exc, ValueError) and "empty" in str(exc):
            reason = "it holds no values"
        raise ValidationError(
            "x", path, "a readable .npy file", f"x: cannot read {path}: {reason}"
        ) from None
    if not isinstance(mapped, np.ndarray):  # an .npz archive (np.load returns NpzFile)
        with contextlib.suppress(Exception):
            mapped.close()
        raise ValidationError("x", path, expected, f"x: {path} is not a single .npy array")
    if mapped.dtype.kind not in "fiu" or mapped.ndim not in (1, 2):
        raise ValidationError(
            "x",
            path,
            expected,
            f"x: {path} holds a {mapped.ndim}-D {mapped.dtype} array; expected 1-D or 2-D numbers",
        )
    if mapped.size > LIMITS.max_elements or mapped.size == 0:
        shape = "×".join(str(n) for n in mapped.shape)
        raise ValidationError(
            "x",
            path,
            expected,
            f"x: {path} holds {mapped.size} values ({shape}); expected 1 to {LIMITS.max_elements}",
        )
    try:
        with np.errstate(all="ignore"):
            matrix = np.atleast_2d(np.array(mapped, dtype=np.float64))
    except Exception as exc:
        raise ValidationError(
            "x", path, "a readable .npy file", f"x: cannot read {path}: {exc}"
        ) from None
    finally:
        del mapped  # closes the map
    return matrix


def _try_array(value: Any, ndim: int) -> np.ndarray | None:
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if ndim == 2 and array.ndim == 1:
        array = array.reshape(1, -1)
    return array if array.ndim == ndim else None


def _repolish(widget: QWidget) -> None:
    style = widget.style()
    style.unpolish(widget)
    style.polish(widget)
