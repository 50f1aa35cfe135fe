"""Benchmark view: GB/s, % of copy, device time or eager-loop time per shape and implementation.

Timing needs a CUDA device. In interpreter mode the view says so and the window keeps the
Benchmark button disabled: the interpreter makes no timing claims. Results come from
``kernels.bench`` rows (``set``, ``impl``, ``rows``, ``width``, ``dtype``, ``status``, ``gbps``,
``gbps_p20_time``, ``gbps_p80_time``, ``pct_of_copy``): either this machine's run or a
``results.json`` recorded elsewhere (**Open record…**, e.g. ``docs/benchmarks/results.json`` from
an H200), whose device and time the summary names. The shape-set and dtype pickers choose which
rows are drawn; the metric picker switches between GB/s, % of the copy's GB/s, the device
time per call and the eager-loop time per call (host included: what a user calling the function
in a Python loop pays), the two times on a log axis.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLabel, QPushButton, QWidget

from inspector.widgets.layout import toolbar_over

INTERPRETER_NOTE = "interpreter mode — no timing claims"
SHAPE_SETS = ("launch_bound", "tails", "llm", "narrow", "wide", "heldout", "all")
METRICS = ("GB/s", "% of copy", "device µs", "loop µs")
# The time metrics: (median field, p20 field, p80 field, axis label).
TIME_METRICS = {
    "device µs": ("median_us", "p20_us", "p80_us", "device µs per call (bars p20–p80)"),
    "loop µs": ("loop_us", "loop_p20_us", "loop_p80_us", "eager-loop µs per call, host incl."),
}
# Space above the highest median or bar, as a fraction of the drawn span, per row of the legend
# (LEGEND_COLUMNS entries a row), so the curves near 100% of copy are not drawn behind it.
LEGEND_HEADROOM = 0.15
LEGEND_COLUMNS = 5
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
    """Whether this machine can time (``jobs.kernel_environment``'s ``env``), and the device
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
        # One row, on a translucent box: curves at 95-105% of copy run along the top edge,
        # where a column of five entries hid both the curves and its own labels.
        item.addLegend(
            offset=(10, 5), colCount=LEGEND_COLUMNS, brush=pg.mkBrush(250, 250, 250, 170)
        )
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
            self.plot,
            above_body=[self.summary],
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
        metric = self.metric_combo.currentText()
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
        for impl, rows in by_impl.items():
            x = np.array([index[(int(r["rows"]), int(r["width"]))] for r in rows], dtype=float)
            y, low, high = _points(rows, metric)
            if impl not in self.curves:
                self._add_curve(impl)
            order = np.argsort(x)
            # A log axis draws log10 of the curve's values; the bars are drawn as given.
            drawn = (np.log10(y), np.log10(low), np.log10(high)) if logarithmic else (y, low, high)
            extent += [float(np.min(drawn[1])), float(np.max(drawn[2]))]
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
        self._set_y_range(item, extent, math.ceil(len(self.curves) / LEGEND_COLUMNS))
        item.setLabel("left", _axis_label(metric))
        labels = [(i, f"{r}×{w}") for (r, w), i in index.items()]
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
    def _set_y_range(item: pg.PlotItem, extent: list[float], legend_rows: int = 1) -> None:
        """Fit the y axis to the drawn points (``extent``: medians and bar ends), with
        headroom on top for the legend.

        The legend's rows run across the top of the plot, and the curves that matter (95-105%
        of copy) run right there: the headroom (LEGEND_HEADROOM of the data's span per legend
        row) keeps them below it instead of behind it.
        """
        if not extent:
            item.enableAutoRange(axis="y")
            return
        low, high = min(extent), max(extent)
        span = max(high - low, 1e-9 * max(abs(high), 1.0))
        headroom = LEGEND_HEADROOM * max(1, legend_rows) * span
        item.setYRange(low - 0.04 * span, high + headroom, padding=0)

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
