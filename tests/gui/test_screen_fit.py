"""The window on common screens (1366 x 768 and 1920 x 1080, light and dark): what a user acts
on is on screen and unclipped without scrolling, whatever the verdict and the divergence
account grow to; the row table's error columns and the benchmark table's timings are in view;
the check log colours its lines and folds its sections; check boxes read in both themes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtGui import QImage, QRegion
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QStyle,
    QStyleOptionButton,
    QVBoxLayout,
    QWidget,
)

from inspector.qt.table_models import ERROR_LIKE_COLUMNS, OUTSIDE_COLOR, WITHIN_COLOR, css

RECORD = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "results.json"

#: (label, how the window is sized): a window of the screen's size, and one that
#: ``fit_to_screen`` makes on a 1366 x 768 screen whose panel takes 40 pixels.
SIZES = [
    ("1366x768", (1366, 768)),
    ("1920x1080", (1920, 1080)),
    ("fit 1366x728", QRect(0, 0, 1366, 728)),
]
LONG_VERDICT = "<br>".join(
    f"<b>line {i} of a grown verdict</b>: err/bound ≤ 0.16 · layouts proven 242/242 · "
    "NOT batch-invariant: 1 row(s), ≤ 3 ulp · input fbf813a80e30 · the bundled kernel"
    for i in range(10)
)
ACCOUNT = [
    "First divergence (bug_mean_over_block.py:rms_norm, Run kernel, interpreter):",
    "kernel vs scalar reference: FAIL (float32: atol=1e-05, rtol=2e-05) max_abs=1.496e+00 "
    "max_rel=3.522e-01, 280 element(s) differ, first at [0, 0]",
    "first divergence: worst at row 0, lane 12: kernel -5.74122, reference -4.2457",
    "they part at the rrms: each row's output is x * c * w with the wrong c",
    "behaves like a divisor of BLOCK (128) instead of width (70): every rrms off by "
    "sqrt(BLOCK / width) = 1.3522",
]


@pytest.fixture(params=["light", "dark"])
def styled(request, monkeypatch: pytest.MonkeyPatch):
    """The application's style sheet in one scheme (restored afterwards)."""
    from inspector.qt.app import apply_style

    app = QApplication.instance()
    monkeypatch.setenv("RMSNORM_INSPECTOR_THEME", request.param)
    apply_style(app)
    yield request.param
    monkeypatch.delenv("RMSNORM_INSPECTOR_THEME")
    apply_style(app)


@pytest.fixture(params=SIZES, ids=[label for label, _ in SIZES])
def sized(request, styled, qtbot, settings, tmp_path):
    """A styled demo window at one of :data:`SIZES`."""
    from inspector.qt.menus import fit_to_screen
    from inspector.qt.window import InspectorWindow

    window = InspectorWindow(demo=True, settings=settings, autosave_dir=str(tmp_path / "auto"))
    qtbot.addWidget(window)
    _, size = request.param
    if isinstance(size, QRect):
        fit_to_screen(window, size)
    else:
        window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=30000)
    yield window
    window.state.dirty = False
    window.shutdown()
    window.close()


def settle() -> None:
    for _ in range(5):
        QApplication.processEvents()


def assert_unclipped(widget: QWidget, window: QWidget) -> None:
    """``widget`` is shown whole: inside the window and clipped by no parent (a scroll area's
    viewport, a splitter)."""
    name = widget.objectName() or widget.accessibleName() or type(widget).__name__
    assert widget.isVisible(), name
    assert widget.visibleRegion() == QRegion(widget.rect()), f"{name} is clipped"
    box = QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())
    assert window.rect().contains(box), f"{name} at {box} is outside {window.rect()}"


def assert_columns_in_view(view, columns: list[int]) -> None:
    """Each of ``columns`` (logical) is shown whole in ``view``'s viewport."""
    width = view.viewport().width()
    for column in columns:
        left = view.columnViewportPosition(column)
        assert not view.isColumnHidden(column), column
        assert left >= 0, (column, left)
        assert left + view.columnWidth(column) <= width, (column, left, width)


def test_the_controls_stay_on_screen_whatever_the_texts_grow_to(sized) -> None:
    window = sized
    window.verdict.setText(LONG_VERDICT)
    window.divergence.show_lines(ACCOUNT)
    window.mutant_panel.set_current("missing_epsilon")
    settle()
    run_box = window.run_box
    controls = [
        run_box.check_button,
        run_box.kernel_button,
        run_box.cancel_button,
        run_box.bench_button,
        run_box.kernel_in_check,
        run_box.progress,
        window.divergence.button,
        *window.mutant_panel.switches.values(),
        window.statusBar(),
        window.tabs.tabBar(),
    ]
    for widget in controls:
        assert_unclipped(widget, window)
    # The verdict's first lines are on screen (the rest scrolls inside its box), and so is
    # the start of the divergence account.
    line = window.verdict.fontMetrics().lineSpacing()
    first_lines = QRect(0, 0, window.verdict.width(), 2 * line)
    assert window.verdict.visibleRegion().contains(first_lines)
    text = window.divergence.text
    assert text.visibleRegion().contains(QRect(0, 0, text.width(), 2 * line))
    assert_unclipped(window.findChild(QWidget, "verdict_area"), window)
    assert_unclipped(window.findChild(QWidget, "divergence_area"), window)
    # Every tab is one click away: none scrolled out of the bar.
    bar = window.tabs.tabBar()
    assert not bar.usesScrollButtons()
    for index in range(bar.count()):
        assert bar.rect().contains(bar.tabRect(index)), window.tabs.tabText(index)


def test_the_row_tables_error_columns_are_in_view_and_exports_keep_their_order(sized) -> None:
    window = sized
    table = window.row_table
    window.tabs.setCurrentWidget(table)
    settle()
    columns = table.model._columns
    errors = [i for i, c in enumerate(columns) if c.kind == "error" or c.name in ERROR_LIKE_COLUMNS]
    assert len(errors) >= 6  # rrms, model and kernel errors, err/bound, batch Δulp
    assert_columns_in_view(table.view, [0, *errors])
    assert table.view.horizontalHeader().visualIndex(0) == 0  # the row index first
    # The view's order only: copies (and the receipt's CSV) keep the model's names and order.
    assert table.tsv().split("\n")[0].split("\t") == table.model.column_names


def test_the_benchmark_tables_timings_are_in_view(sized) -> None:
    from inspector.qt.widgets.bench_view import TABLE_COLUMNS

    window = sized
    assert window.files.open_bench_record(str(RECORD))
    window.tabs.setCurrentWidget(window.bench_view)
    settle()
    table = window.bench_view.table
    timings = [TABLE_COLUMNS.index(name) for name in ("shape", "impl", "device µs", "loop µs")]
    assert_columns_in_view(table, timings)


def _contrast(a: np.ndarray, b: np.ndarray) -> float:
    """WCAG contrast ratio of two RGB colours (0-255)."""

    def luminance(rgb: np.ndarray) -> float:
        c = rgb.astype(np.float64) / 255.0
        c = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        return float(0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2])

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("checked", [False, True])
def test_check_boxes_read_in_both_themes(styled, qtbot, checked) -> None:
    """The box of an unticked check box stands out from the window's background (WCAG's 3:1
    for a control's edge), and a ticked one from an unticked one."""
    holder = QWidget()  # the box away from the corner, where the (offscreen) mouse rests
    layout = QVBoxLayout(holder)
    layout.setContentsMargins(24, 24, 24, 24)
    box = QCheckBox("a switch of the window")
    layout.addWidget(box)
    qtbot.addWidget(holder)
    box.setChecked(checked)
    holder.show()
    qtbot.waitExposed(holder)
    image = holder.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8, count=image.sizeInBytes())
    pixels = rows.reshape(image.height(), image.bytesPerLine())[:, : image.width() * 3]
    pixels = pixels.reshape(image.height(), image.width(), 3)
    option = QStyleOptionButton()
    option.initFrom(box)
    rect = box.style().subElementRect(QStyle.SubElement.SE_CheckBoxIndicator, option, box)
    rect.translate(box.pos())
    inside = pixels[rect.top() : rect.bottom() + 1, rect.left() : rect.right() + 1]
    background = pixels[4, 4]
    best = max(_contrast(pixel, background) for pixel in inside.reshape(-1, 3))
    assert best >= 3.0, f"{styled}: the indicator's best contrast is {best:.2f}"
    if checked:  # filled with the accent, not the background
        centre = inside[inside.shape[0] // 2, 2]
        assert _contrast(centre, background) >= 1.5


def test_the_check_log_colours_each_line_and_folds_each_section(qtbot) -> None:
    from inspector.qt.widgets.check_log import CheckLog

    log = CheckLog()
    qtbot.addWidget(log)
    report = [
        "check FAILED — mode interpreter, device cpu",
        "input: demo: 4 rows x 70, row_stride 72, float32, eps 1e-06; tile 128 lanes",
        "tiled model vs scalar: output pass (float32: atol=1e-05, rtol=2e-05) max_abs=4.8e-07",
        "kernel vs scalar: FAIL (float32: atol=1e-05, rtol=2e-05) max_abs=1.5e+00",
        "fixtures: model passed 40/40 runnable; kernel passed 38/40 runnable",
        "model mutant missing_square: killed by hand_checkable, zero_row",
        "kernel mutant half_accumulation: SURVIVED",
        "FAILURE: kernel fails fixture width_70",
    ]
    log.setPlainText("\n".join(report))
    log.appendPlainText("kernel (interpreter, cpu, BLOCK 128): pass (float32) max_abs=4.8e-07")
    fail, ok = css(OUTSIDE_COLOR), css(WITHIN_COLOR)
    assert log.line_color("check FAILED — mode interpreter, device cpu") == fail
    assert log.line_color(report[2]) == ok
    assert log.line_color(report[3]) == fail
    assert log.line_color(report[4]) == fail  # 38 of 40: not all passed
    assert log.line_color(report[5]) == ok
    assert log.line_color(report[6]) == fail
    assert log.line_color(report[7]) == fail
    assert log.line_color(report[1]) is None  # a neutral line: the theme's colour
    assert log.line_color(log.sections()[-1].title) == ok  # a later entry, its own section
    titles = [section.title for section in log.sections()]
    sections = ["verdict", "input, kernel, device", "comparisons", "fixtures", "mutants"]
    assert titles[:6] == [*sections, "failures"]
    # The lines are drawn in their colour, and a section's title folds it.
    shown = log.toHtml()
    assert "FAILURE: kernel fails fixture width_70" in log.document().toPlainText()
    assert OUTSIDE_COLOR.name() in shown.lower() or fail.replace(" ", "") in shown
    log.toggle("failures")
    assert "FAILURE: kernel fails" not in log.document().toPlainText()
    assert "▸ failures" in log.document().toPlainText()
    assert "FAILURE: kernel fails" in log.toPlainText()  # folded, never lost
    log.toggle("failures")
    assert "FAILURE: kernel fails" in log.document().toPlainText()
    log.clear()
    assert log.toPlainText() == ""


def test_the_check_log_tab_is_the_styled_log(window) -> None:
    from inspector.qt.widgets.check_log import CheckLog

    assert isinstance(window.summary, CheckLog)
    assert window.tabs.indexOf(window.summary) >= 0
