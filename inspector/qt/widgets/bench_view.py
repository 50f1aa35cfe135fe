"""Benchmark view: GB/s, % of copy, device time or eager-loop time per shape and implementation.

Timing needs a CUDA device. In interpreter mode the view says so and the window keeps the
Benchmark button disabled: the interpreter makes no timing claims. Results come from
``kernels.bench`` rows (``set``, ``impl``, ``rows``, ``width``, ``dtype``, ``status``, ``gbps``,
``gbps_p20_time``, ``gbps_p80_time``, ``pct_of_copy``): either this machine's run or a
``results.json`` recorded elsewhere (**Open record…**, e.g. ``docs/benchmarks/results.json`` from
an H200), whose device and time the summary names. The shape-set and dtype pickers choose which
rows are drawn; the metric picker switches between GB/s, % of the copy's GB/s, the device
time per call and the eager-loop time per call (host included: what a user calling the function
in a Python loop pays), the two times on a log axis. "auto" plots µs per call for the
launch-bound set (there the time, not the bandwidth, is what a user weighs) and GB/s otherwise.
The legend sits above the plot (never over a curve); hovering a point gives its numbers; the
table beside the plot holds every shown row with both figures, device and eager loop (the
timings first after the shape: never narrower than them). A record
of ``bench --ncu`` also carries Nsight Compute's DRAM figures of ``ours`` (``dram``): their
% of peak gets a table column (shown only when a shown row has ``dram``; an absent figure's
reason is the cell's tooltip) and a line in the hover text.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QToolTip,
    QWidget,
)

from inspector.qt.widgets.layout import toolbar_over

INTERPRETER_NOTE = "interpreter mode — no timing claims"
SHAPE_SETS = ("launch_bound", "tails", "llm", "narrow", "wide", "heldout", "all")
METRICS = ("auto", "GB/s", "% of copy", "device µs", "loop µs")
#: The shape sets whose shapes are launch-bound: "auto" plots them in µs per call.
LAUNCH_BOUND_SETS = ("launch_bound",)
TABLE_COLUMNS = (
    "shape",
    "impl",
    "status",
    "device µs",
    "device p20–p80",
    "loop µs",
    "loop p20–p80",
    "GB/s",
    "% of copy",
    "DRAM % peak",
)
#: The table's view order: the timings right after the shape and implementation, so they are
#: on screen however narrow the table (the model and copies keep :data:`TABLE_COLUMNS`' order).
VIEW_ORDER = ("shape", "impl", "device µs", "loop µs", "GB/s", "% of copy", "status")
#: The visible columns the table is never narrower than (up to and including this one).
KEEP_VISIBLE = "loop µs"
#: The table column of Nsight Compute's DRAM throughput (``bench --ncu``).
DRAM_COLUMN = TABLE_COLUMNS.index("DRAM % peak")
#: Hover picks the nearest point within this many pixels.
HOVER_PIXELS = 12
# The time metrics: (median field, p20 field, p80 field, axis label).
TIME_METRICS = {
    "device µs": ("median_us", "p20_us", "p80_us", "device µs per call (bars p20–p80)"),
    "loop µs": ("loop_us", "loop_p20_us", "loop_p80_us", "eager-loop µs per call, host incl."),
}
PALETTE = {
    "copy": (200, 200, 200),
    "ours": (110, 170, 255),
    "ours_tuned": (0, 229, 255),
    "torch_eager": (255, 167, 38),
    "torch_compile": (236, 64, 122),
    "liger": (102, 187, 106),
    "quack": (171, 71, 188),
}


def bench_available(env: dict[str, Any]) -> tuple[bool, str]:
    """Whether this machine can time (``tasks.kernel_environment``'s ``env``), and the device
    or why not."""
    if env["mode"] != "compiled":
        return False, INTERPRETER_NOTE
    try:
        import kernels.bench  # noqa: F401
    except Exception as exc:
        return False, f"benchmark harness unavailable: {exc}"
    return True, env["device"]


class BenchView(QWidget):
    """One line per implementation (GB/s against the shape), error bars p20..p80 of time."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.note = QLabel(objectName="bench_note")
        self.note.setWordWrap(True)
        self.note.setTextFormat(Qt.TextFormat.RichText)
        self.shape_combo = QComboBox(objectName="bench_shapes")
        self.shape_combo.addItems(list(SHAPE_SETS))
        self.dtype_combo = QComboBox(objectName="bench_dtype")
        self.dtype_combo.addItems(["bfloat16", "float16", "float32"])
        self.metric_combo = QComboBox(objectName="bench_metric")
        self.metric_combo.addItems(list(METRICS))
        self.open_button = QPushButton("Open record…", objectName="bench_open")
        self.open_button.setToolTip(
            "Show a results.json written by `python main.py bench` on a GPU machine"
        )
        self.summary = QLabel(objectName="bench_summary")
        self.summary.setWordWrap(True)
        self.plot = pg.PlotWidget(objectName="bench_plot")
        self.plot.setBackground(None)
        item = self.plot.getPlotItem()
        item.setLabel("bottom", "shape (rows × width)")
        item.showGrid(x=True, y=True, alpha=0.2)
        # The legend is a line above the plot: inside it, it hid the curves near 100% of copy.
        self.legend = QLabel(objectName="bench_legend")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        self.table = QTableWidget(0, len(TABLE_COLUMNS), objectName="bench_table")
        self.table.setHorizontalHeaderLabels(list(TABLE_COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setSortIndicator(0, Qt.SortOrder.AscendingOrder)
        self.table.setAccessibleName("Benchmark rows: device and eager-loop time per call")
        header = self.table.horizontalHeader()
        for visual, name in enumerate(VIEW_ORDER):
            header.moveSection(header.visualIndex(TABLE_COLUMNS.index(name)), visual)
        body = QSplitter(objectName="bench_body")
        body.addWidget(self.plot)
        body.addWidget(self.table)
        body.setCollapsible(1, False)
        body.setStretchFactor(0, 3)
        body.setStretchFactor(1, 2)
        self.hover_text = ""
        self._points: list[tuple[str, int, float, dict[str, Any]]] = []  # impl, x, drawn y, row
        self._shape_names: list[str] = []
        self.plot.scene().sigMouseMoved.connect(self._on_mouse_moved)
        toolbar_over(
            self,
            [
                self.note,
                QLabel("shapes"),
                self.shape_combo,
                QLabel("dtype"),
                self.dtype_combo,
                self.metric_combo,
                self.open_button,
            ],
            body,
            above_body=[self.summary, self.legend],
            body_stretch=1,
        )
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.bars: dict[str, pg.ErrorBarItem] = {}
        self.records: list[dict[str, Any]] = []
        self.source: str | None = None
        self.set_available(False, INTERPRETER_NOTE)
        for combo in (self.shape_combo, self.dtype_combo, self.metric_combo):
            combo.currentTextChanged.connect(self._draw)
        self._draw()  # the axis labels (no rows yet: empty plot and summary)

    def set_available(self, available: bool, reason: str) -> None:
        self.available = available
        if available:
            self.note.setText(f"Device-event timing on <b>{reason}</b>; parity checked per shape.")
        else:
            self.note.setText(
                f"<b>Benchmark unavailable</b>: {reason}. On a CUDA machine use the Benchmark "
                "button or <code>python main.py bench --out DIR</code>."
            )

    def set_records(self, records: list[dict[str, Any]], source: str | None = None) -> None:
        """Show the rows of one run (wrong or failed measurements are listed, not drawn).

        ``source`` names where the rows were measured when it is not this machine's run (a
        loaded record: device, time, file). When the pickers' shape set and dtype select none of
        the rows, they move to the first row's (the shape set to "all" if it is not one of the
        picker's).
        """
        self.records = list(records)
        self.source = source
        if self.records and not self.visible():
            first = self.records[0]
            shapes = str(first.get("set"))
            for combo, value in (
                # A set the picker does not list (a sweep's rows): "all" shows every set.
                (self.shape_combo, shapes if self.shape_combo.findText(shapes) >= 0 else "all"),
                (self.dtype_combo, str(first.get("dtype"))),
            ):
                if combo.findText(value) >= 0:
                    combo.blockSignals(True)
                    combo.setCurrentText(value)
                    combo.blockSignals(False)
        self._draw()

    def shown_metric(self) -> str:
        """The metric drawn: the picker's, with "auto" resolved (µs per call for launch-bound
        shapes, GB/s otherwise)."""
        picked = self.metric_combo.currentText()
        if picked != "auto":
            return picked
        rows = self.visible()
        launch = rows and all(row.get("set") in LAUNCH_BOUND_SETS for row in rows)
        return "device µs" if launch else "GB/s"

    def visible(self) -> list[dict[str, Any]]:
        """The rows of the picked shape set ("all": every set) and dtype."""
        shapes, dtype = self.shape_combo.currentText(), self.dtype_combo.currentText()
        return [
            row
            for row in self.records
            if row.get("dtype", dtype) == dtype and shapes in ("all", row.get("set", shapes))
        ]

    def _draw(self) -> None:
        rows_shown = self.visible()
        metric = self.shown_metric()
        shapes: list[tuple[int, int]] = []
        for row in rows_shown:
            key = (int(row.get("rows", 0)), int(row.get("width", 0)))
            if key not in shapes:
                shapes.append(key)
        index = {shape: i for i, shape in enumerate(shapes)}
        by_impl: dict[str, list[dict[str, Any]]] = {}
        for row in rows_shown:
            if row.get("status") == "ok" and _value(row, metric) is not None:
                by_impl.setdefault(str(row.get("impl")), []).append(row)
        for impl in list(self.curves):
            if impl not in by_impl:
                self.curves[impl].setData([], [])
                self.bars[impl].setData(x=np.zeros(0), y=np.zeros(0), top=None, bottom=None)
        item = self.plot.getPlotItem()
        logarithmic = metric in TIME_METRICS
        item.setLogMode(y=logarithmic)
        extent: list[float] = []  # lowest and highest drawn point of each curve, bars included
        self._points = []
        for impl, rows in by_impl.items():
            x = np.array([index[(int(r["rows"]), int(r["width"]))] for r in rows], dtype=float)
            y, low, high = _points(rows, metric)
            if impl not in self.curves:
                self._add_curve(impl)
            order = np.argsort(x)
            # A log axis draws log10 of the curve's values; the bars are drawn as given.
            drawn = (np.log10(y), np.log10(low), np.log10(high)) if logarithmic else (y, low, high)
            extent += [float(np.min(drawn[1])), float(np.max(drawn[2]))]
            self._points += [
                (impl, int(xi), float(yi), row)
                for xi, yi, row in zip(x, drawn[0], rows, strict=True)
            ]
            # A shape this implementation has no number for breaks its line (NaN, not joined).
            line = np.full(len(shapes), np.nan)
            line[x.astype(int)] = y
            self.curves[impl].setData(np.arange(len(shapes), dtype=float), line, connect="finite")
            self.bars[impl].setData(
                x=x[order],
                y=drawn[0][order],
                top=(drawn[2] - drawn[0])[order],
                bottom=(drawn[0] - drawn[1])[order],
            )
        self._set_y_range(item, extent)
        item.setLabel("left", _axis_label(metric))
        labels = [(i, f"{r}×{w}") for (r, w), i in index.items()]
        self._shape_names = [name for _, name in labels]
        self.legend.setText(_legend_html(list(by_impl)))
        self._fill_table(rows_shown)
        # Up to 10 shapes every name fits under the plot; beyond that every k-th one is a major
        # tick (about 8 names) and the rest minor ones, which the axis draws only when there is
        # room (22 names on one line overlapped into an unreadable band).
        step = 1 if len(labels) <= 10 else math.ceil(len(labels) / 8)
        minor = [tick for j, tick in enumerate(labels) if j % step]
        item.getAxis("bottom").setTicks([labels[::step], minor])
        if shapes:
            # Room at both ends (half a category, more when categories are narrow): the axis
            # drops a tick label that would stick out of the plot, so the first and last
            # shapes' names need the space.
            pad = max(0.5, 0.05 * len(shapes))
            item.setXRange(-pad, len(shapes) - 1 + pad, padding=0)
        self.summary.setText(self._summary(rows_shown, by_impl))

    def _add_curve(self, impl: str) -> None:
        color = PALETTE.get(impl, (180, 180, 180))
        style = Qt.PenStyle.DashLine if impl == "copy" else Qt.PenStyle.SolidLine
        self.curves[impl] = self.plot.plot(
            [],
            [],
            pen=pg.mkPen(color, width=2, style=style),
            symbol="o",
            symbolSize=6,
            symbolBrush=color,
            name=impl,
        )
        self.bars[impl] = pg.ErrorBarItem(pen=pg.mkPen(color), beam=0.15)
        self.plot.addItem(self.bars[impl])

    @staticmethod
    def _set_y_range(item: pg.PlotItem, extent: list[float]) -> None:
        """Fit the y axis to the drawn points (``extent``: medians and bar ends)."""
        if not extent:
            item.enableAutoRange(axis="y")
            return
        low, high = min(extent), max(extent)
        span = max(high - low, 1e-9 * max(abs(high), 1.0))
        item.setYRange(low - 0.04 * span, high + 0.04 * span, padding=0)

    def _fill_table(self, rows: list[dict[str, Any]]) -> None:
        """Every shown row, both figures (device and eager loop), sortable by any column."""
        table = self.table
        table.setSortingEnabled(False)
        table.setRowCount(len(rows))
        for i, row in enumerate(rows):
            for j, value in enumerate(table_cells(row)):
                cell = _SortedItem()
                cell.setData(Qt.ItemDataRole.DisplayRole, value)
                if j == 0:  # "8×4096" sorts by its size, not as text
                    cell.setData(_SORT_ROLE, shape_key(row))
                if j == DRAM_COLUMN:
                    cell.setToolTip(dram_text(row))
                table.setItem(i, j, cell)
        table.setColumnHidden(DRAM_COLUMN, not any("dram" in row for row in rows))
        table.setSortingEnabled(True)
        # Sorted again explicitly by the header's indicator (smallest shape first until the
        # user picks another column or order): the re-sort that enabling sorting makes is not
        # the same on every Qt binding.
        header = table.horizontalHeader()
        table.sortItems(header.sortIndicatorSection(), header.sortIndicatorOrder())
        table.resizeColumnsToContents()
        keep = header.visualIndex(TABLE_COLUMNS.index(KEEP_VISIBLE))
        shown = sum(header.sectionSize(header.logicalIndex(v)) for v in range(keep + 1))
        frame = 2 * table.frameWidth() + table.verticalScrollBar().sizeHint().width()
        table.setMinimumWidth(shown + frame)

    def point_text(self, impl: str, shape_index: int) -> str:
        """The hover text of ``impl``'s point at shape ``shape_index`` ("" when none)."""
        for name, x, _, row in self._points:
            if name == impl and x == shape_index:
                return point_text(row)
        return ""

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        view = self.plot.getPlotItem().getViewBox()
        if not self._points or not view.sceneBoundingRect().contains(scene_pos):
            return
        best, best_distance = None, float(HOVER_PIXELS)
        for point in self._points:
            where = view.mapViewToScene(QPointF(point[1], point[2]))
            distance = math.hypot(where.x() - scene_pos.x(), where.y() - scene_pos.y())
            if distance <= best_distance:
                best, best_distance = point, distance
        if best is None:
            self.hover_text = ""
            QToolTip.hideText()
            return
        self.hover_text = point_text(best[3])
        global_pos = self.plot.mapToGlobal(self.plot.mapFromScene(scene_pos))
        QToolTip.showText(global_pos, self.hover_text, self.plot)

    def _summary(
        self, rows_shown: list[dict[str, Any]], by_impl: dict[str, list[dict[str, Any]]]
    ) -> str:
        if not self.records:
            return ""
        wrong = [r for r in rows_shown if r.get("status") == "wrong"]
        failed = [r for r in rows_shown if r.get("status") not in ("ok", "wrong")]
        ours = [r for r in by_impl.get("ours", []) if r.get("pct_of_copy") is not None]
        text = f"{len(rows_shown)} of {len(self.records)} measurements shown"
        if self.source:
            text = f"Recorded on {self.source} · " + text
        if self.records and not rows_shown:
            picked = f"{self.shape_combo.currentText()} / {self.dtype_combo.currentText()}"
            text += f" · none for {picked}: pick another shape set or dtype"
        if ours:
            pct = [float(r["pct_of_copy"]) for r in ours]
            text += f" · ours: {min(pct):.0f}–{max(pct):.0f}% of copy bandwidth"
        ratios = [
            float(r["loop_speedup_vs_best_alt"])
            for r in rows_shown
            if r.get("impl") == "ours" and r.get("loop_speedup_vs_best_alt") is not None
        ]
        if ratios:
            text += f" · eager loop: {min(ratios):.2f}–{max(ratios):.2f}× the fastest alternative"
        dram = [
            pct for r in rows_shown if r.get("impl") == "ours" and (pct := dram_pct(r)) is not None
        ]
        if dram:
            text += f" · ours DRAM (Nsight Compute): {min(dram):.0f}–{max(dram):.0f}% of peak"
        if wrong:
            text += " · WRONG OUTPUT (kept out of the chart): " + ", ".join(
                f"{r['impl']} {r['rows']}×{r['width']}" for r in wrong
            )
        if failed:
            text += f" · {len(failed)} skipped/unsupported/failed"
        return text

    def plotted(self, impl: str) -> tuple[np.ndarray, np.ndarray]:
        """The drawn points of ``impl``'s curve, in data units (not log10); shapes it has no
        number for are left out."""
        x, y = self.curves[impl].getOriginalDataset()
        x, y = np.asarray(x), np.asarray(y)
        keep = np.isfinite(y)
        return x[keep], y[keep]


def _value(row: dict[str, Any], metric: str) -> object:
    """The row's number for ``metric`` (None where it has none)."""
    if metric in TIME_METRICS:
        return row.get(TIME_METRICS[metric][0])
    return row.get("pct_of_copy") if metric == "% of copy" else row.get("gbps")


def _points(rows: list[dict[str, Any]], metric: str) -> tuple[np.ndarray, ...]:
    """``(value, bar low, bar high)`` per row: the median and its p20..p80 spread."""
    if metric in TIME_METRICS:
        median, p20, p80, _ = TIME_METRICS[metric]
        y = np.array([float(r[median]) for r in rows])
        low = np.array([float(r.get(p20) or r[median]) for r in rows])
        high = np.array([float(r.get(p80) or r[median]) for r in rows])
        return y, low, high
    gbps = np.array([float(r["gbps"]) for r in rows])
    # The p20 and p80 of time as GB/s (or as % of copy, scaled alike).
    high = np.array([float(r.get("gbps_p20_time") or r["gbps"]) for r in rows]) / gbps
    low = np.array([float(r.get("gbps_p80_time") or r["gbps"]) for r in rows]) / gbps
    y = np.array([float(r["pct_of_copy"]) for r in rows]) if metric == "% of copy" else gbps
    return y, y * low, y * high


def _axis_label(metric: str) -> str:
    if metric in TIME_METRICS:
        return TIME_METRICS[metric][3]
    if metric == "% of copy":
        return "% of copy GB/s (median; bars: p20–p80 of time)"
    return "GB/s (median; bars: p20–p80 of time)"


def _number(value: Any, digits: int = 4) -> Any:
    """A table cell's value: a rounded float (sorts as a number), or "" when missing."""
    if value is None:
        return ""
    try:
        return round(float(value), digits)
    except (TypeError, ValueError):
        return str(value)


def _spread(row: dict[str, Any], low: str, high: str) -> str:
    if row.get(low) is None or row.get(high) is None:
        return ""
    return f"{float(row[low]):.3g}–{float(row[high]):.3g}"


_SORT_ROLE = Qt.ItemDataRole.UserRole + 1


class _SortedItem(QTableWidgetItem):
    """A cell that sorts by its sort key where it has one (else as Qt sorts its text)."""

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.data(_SORT_ROLE), other.data(_SORT_ROLE)
        if mine is not None and theirs is not None:
            return tuple(mine) < tuple(theirs)
        return super().__lt__(other)


def shape_key(row: dict[str, Any]) -> list[int]:
    """A shape's place in a sorted table: by elements, then rows (a row without one: first)."""
    try:
        rows, width = int(row.get("rows")), int(row.get("width"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return [-1, -1]
    return [rows * width, rows]


def table_cells(row: dict[str, Any]) -> list[Any]:
    """One benchmark row as the table's cells (:data:`TABLE_COLUMNS`)."""
    return [
        f"{row.get('rows')}×{row.get('width')}",
        str(row.get("impl", "")),
        str(row.get("status", "")),
        _number(row.get("median_us")),
        _spread(row, "p20_us", "p80_us"),
        _number(row.get("loop_us")),
        _spread(row, "loop_p20_us", "loop_p80_us"),
        _number(row.get("gbps"), 1),
        _number(row.get("pct_of_copy"), 1),
        _number(dram_pct(row), 1),
    ]


def dram_pct(row: dict[str, Any]) -> float | None:
    """Nsight Compute's DRAM throughput of the row, % of peak (None where it has none)."""
    dram = row.get("dram")
    value = dram.get("pct_of_peak") if isinstance(dram, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def dram_text(row: dict[str, Any]) -> str:
    """What the row says about DRAM: Nsight Compute's figures, why there are none, or ""."""
    dram = row.get("dram")
    if not isinstance(dram, dict):
        return ""
    if "absent" in dram:
        return f"DRAM (Nsight Compute): not measured: {dram['absent']}"
    pct = dram_pct(row)
    try:
        read, written = float(dram["bytes_read"]) / 1e6, float(dram["bytes_written"]) / 1e6
    except (KeyError, TypeError, ValueError):
        return "DRAM (Nsight Compute): figures unreadable"
    share = f"{pct:.1f}% of peak, " if pct is not None else ""
    return f"DRAM (Nsight Compute): {share}{read:.3g} MB read, {written:.3g} MB written"


def point_text(row: dict[str, Any]) -> str:
    """What hovering a point says: the implementation, the shape and both figures."""
    lines = [f"{row.get('impl')} · {row.get('rows')}×{row.get('width')} {row.get('dtype', '')}"]
    if row.get("median_us") is not None:
        lines.append(
            f"device {float(row['median_us']):.3g} µs per call "
            f"(p20–p80 {_spread(row, 'p20_us', 'p80_us') or '?'})"
        )
    if row.get("loop_us") is not None:
        lines.append(
            f"eager loop {float(row['loop_us']):.3g} µs per call, host included "
            f"(p20–p80 {_spread(row, 'loop_p20_us', 'loop_p80_us') or '?'})"
        )
    if row.get("gbps") is not None:
        pct = row.get("pct_of_copy")
        share = f", {float(pct):.1f}% of copy" if pct is not None else ""
        lines.append(f"{float(row['gbps']):.1f} GB/s{share}")
    if dram_text(row):
        lines.append(dram_text(row))
    return "\n".join(lines)


def _legend_html(impls: list[str]) -> str:
    """The legend line: a coloured line sample and the name of each drawn implementation."""
    parts = []
    for impl in impls:
        r, g, b = PALETTE.get(impl, (180, 180, 180))
        sample = "- - -" if impl == "copy" else "━━"
        parts.append(f"<span style='color: rgb({r},{g},{b})'><b>{sample}</b></span> {impl}")
    return " &nbsp; ".join(parts)
