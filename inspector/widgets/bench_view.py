"""Benchmark view: GB/s per shape and implementation, drawn once the harness has run.

Timing needs a CUDA device. In interpreter mode the view says so and the window keeps the
Benchmark button disabled: the interpreter makes no timing claims.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

INTERPRETER_NOTE = "interpreter mode — no timing claims"


class BenchView(QWidget):
    """Plots benchmark records: one line per implementation, GB/s against width."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.note = QLabel(objectName="bench_note")
        self.note.setWordWrap(True)
        self.note.setTextFormat(Qt.TextFormat.RichText)
        self.plot = pg.PlotWidget(objectName="bench_plot")
        self.plot.setBackground(None)
        item = self.plot.getPlotItem()
        item.setLabel("bottom", "shape index")
        item.setLabel("left", "GB/s (median)")
        item.showGrid(x=True, y=True, alpha=0.2)
        self.legend = item.addLegend()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.note)
        layout.addWidget(self.plot, 1)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.set_available(False, INTERPRETER_NOTE)

    def set_available(self, available: bool, reason: str) -> None:
        if available:
            self.note.setText("Benchmark: device-event timing on " + reason)
        else:
            self.note.setText(
                f"<b>Benchmark unavailable</b>: {reason}. Run on a CUDA machine "
                "(<code>python main.py bench --out DIR</code>) for timings."
            )

    def set_records(self, records: list[dict[str, Any]]) -> None:
        """records: dicts with ``impl``, ``gbps`` (median) and optionally ``label``."""
        by_impl: dict[str, list[float]] = {}
        for record in records:
            by_impl.setdefault(str(record.get("impl")), []).append(
                float(record.get("gbps", np.nan))
            )
        palette = [
            (110, 170, 255),
            (255, 167, 38),
            (102, 187, 106),
            (236, 64, 122),
            (200, 200, 200),
        ]
        for i, (impl, values) in enumerate(by_impl.items()):
            curve = self.curves.get(impl)
            if curve is None:
                curve = self.plot.plot(
                    [],
                    [],
                    pen=pg.mkPen(palette[i % len(palette)], width=2),
                    symbol="o",
                    symbolSize=5,
                    name=impl,
                )
                self.curves[impl] = curve
            curve.setData(np.arange(len(values), dtype=float), np.asarray(values))
