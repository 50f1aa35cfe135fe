"""Lane grid: rows x BLOCK lanes of the tile, coloured by value and state.

Valid lanes sit on a diverging colormap (symmetric about zero); the masked tail, poison that
leaked into the reduction, and out-of-bounds stores each have their own colour. Hovering
shows row, lane, address, x, x², w, the kernel's y, the expected y and the error; clicking
selects a row; the mouse zooms and pans. First divergence outlines its lane in red.
The image and the overlays are created once and updated with ``setImage`` / ``setRect``.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QGraphicsRectItem, QLabel, QToolTip, QVBoxLayout, QWidget

from inspector import viewdata
from oracle.spec import Problem
from oracle.tiled import TiledResult

COLORMAP = "CET-D1"


def _swatch(color: tuple[int, int, int, int], text: str) -> str:
    r, g, b, _ = color
    return f"<span style='color: rgb({r},{g},{b})'>■</span> {text}"


def _outline(plot_item: pg.PlotItem, rgb: tuple[int, int, int], z: float) -> QGraphicsRectItem:
    """An unfilled rectangle over the image, its 2-pixel pen the same at every zoom."""
    box = QGraphicsRectItem()
    pen = QPen(QColor(*rgb))
    pen.setCosmetic(True)
    pen.setWidth(2)
    box.setPen(pen)
    box.setZValue(z)
    plot_item.addItem(box)
    return box


class LaneGrid(QWidget):
    """The tile of every row. ``row_selected(int)`` when a row is clicked."""

    row_selected = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._problem: Problem | None = None
        self._tiled: TiledResult | None = None
        self._image: viewdata.LaneImage | None = None
        self._extra_oob: tuple[int, ...] = ()
        self._expected_y: np.ndarray | None = None
        self._kernel_y: np.ndarray | None = None
        self.marked: tuple[int, int] | None = None  # the lane First divergence points at
        self.selected_row = 0
        self._span = 0  # lanes highlighted in the selected row (the stepper's current stage)
        self.hover_text = ""

        self.counts = QLabel(objectName="lane_counts")
        self.counts.setTextFormat(Qt.TextFormat.RichText)
        self.plot = pg.PlotWidget(objectName="lane_plot")
        self.plot.setBackground(None)
        item = self.plot.getPlotItem()
        item.setLabel("bottom", "lane (column offset in the tile)")
        item.setLabel("left", "row (one program each)")
        item.invertY(True)
        item.setMenuEnabled(False)
        item.hideButtons()
        view = item.getViewBox()
        view.setMouseMode(pg.ViewBox.PanMode)
        self.image_item = pg.ImageItem(axisOrder="row-major")
        item.addItem(self.image_item)
        self.width_line = pg.InfiniteLine(
            angle=90,
            movable=False,
            pen=pg.mkPen((255, 255, 255, 200), width=1, style=Qt.PenStyle.DashLine),
        )
        self.width_line.label = pg.InfLineLabel(
            self.width_line, text="width", position=0.92, color=(230, 230, 230)
        )
        item.addItem(self.width_line)
        self.row_box = _outline(item, (255, 255, 255), 10)
        self.span_box = _outline(item, (0, 229, 255), 11)
        self.lane_box = _outline(item, (255, 64, 64), 12)
        self.lane_box.setVisible(False)

        self.legend = QLabel(objectName="lane_legend")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setText(
            "valid lanes: value on a blue–white–red map (0 is white) &nbsp; "
            + " &nbsp; ".join(
                _swatch(viewdata.STATE_COLORS[state], viewdata.STATE_NAMES[state])
                for state in (viewdata.MASKED, viewdata.POISON_IN, viewdata.OOB_WRITE)
            )
            + " &nbsp; <span style='color: white'>□</span> selected row"
            + " &nbsp; <span style='color: rgb(0,229,255)'>□</span> lanes of the current step"
            + " &nbsp; <span style='color: rgb(255,64,64)'>□</span> first divergence"
        )
        self.legend.setWordWrap(True)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.counts)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.legend)

        self._lut = pg.colormap.get(COLORMAP).getLookupTable(0.0, 1.0, 256, alpha=True)
        self.plot.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.plot.scene().sigMouseClicked.connect(self._on_mouse_clicked)

    # ------------------------------------------------------------------ data

    @property
    def image(self) -> viewdata.LaneImage | None:
        return self._image

    @property
    def lut(self) -> np.ndarray:
        """The colour table lane values are drawn with (for images computed off this thread)."""
        return self._lut

    def set_data(
        self,
        problem: Problem,
        tiled: TiledResult,
        extra_oob: tuple[int, ...] = (),
        image: viewdata.LaneImage | None = None,
        oob_stride: int = 0,
    ) -> None:
        """Redraw for a new model result; keeps the view range when the shape is unchanged.

        Args:
            extra_oob: the kernel's out-of-bounds stores (output addresses).
            image: ``viewdata.lane_image(tiled, self.lut, extra_oob)`` when the caller computed it
                already (on the worker: ~0.3 s for the largest problems).
            oob_stride: the frame of ``extra_oob`` (0: the problem's row stride; a user
                kernel's output has a tile of guard between rows).
        """
        same_shape = self._tiled is not None and self._tiled.lanes.shape == tiled.lanes.shape
        self._problem = problem
        self._tiled = tiled
        self._extra_oob = tuple(extra_oob)
        self._image = (
            image
            if image is not None
            else viewdata.lane_image(tiled, self._lut, self._extra_oob, extra_stride=oob_stride)
        )
        if not same_shape:
            self.mark_lane(None)
        rows, block = tiled.lanes.shape
        self.image_item.setImage(self._image.rgba, autoLevels=False)
        # Row r spans [r - 0.5, r + 0.5] so its tick sits in the middle of it.
        self.image_item.setRect(QRectF(0, -0.5, block, rows))
        left_axis = self.plot.getPlotItem().getAxis("left")
        if rows <= 32:
            left_axis.setTicks([[(r, str(r)) for r in range(rows)], []])
        else:
            left_axis.setTicks(None)
        self.width_line.setValue(tiled.width)
        self.width_line.setVisible(tiled.width < block)
        self.selected_row = min(self.selected_row, rows - 1)
        self._update_row_box()
        if not same_shape:
            self.plot.getPlotItem().getViewBox().setRange(
                QRectF(0, -0.5, block, rows), padding=0.02
            )
        counts = viewdata.lane_counts(tiled)
        oob = int((self._image.states == viewdata.OOB_WRITE).sum()) + self._image.oob_outside
        leaked = int((self._image.states == viewdata.POISON_IN).sum())
        bad = "color: rgb(255,196,0)"
        text = (
            f"width <b>{counts.width}</b> · tile <b>{counts.block}</b> · valid "
            f"<b>{counts.valid}</b> · masked <b>{counts.masked}</b> · row stride "
            f"<b>{counts.row_stride}</b> · rows <b>{rows}</b> · "
            f"<span style='{bad if oob else ''}'>OOB writes <b>{oob}</b></span>"
        )
        if leaked:
            text += f" · <span style='color: rgb(236,64,220)'>poison lanes reduced {leaked}</span>"
        if tiled.mutant:
            text += f" · mutant <b>{tiled.mutant}</b>"
        if self._image.downsampled:
            text += (
                f" · <i>downsampled ×{self._image.row_step} rows, ×{self._image.lane_step} "
                "lanes (worst state per cell)</i>"
            )
        self.counts.setText(text)

    def set_outputs(self, expected_y: np.ndarray | None, kernel_y: np.ndarray | None) -> None:
        """The scalar reference's output and the loaded kernel's (None: not run) for the hover."""
        self._expected_y = expected_y
        self._kernel_y = kernel_y

    def mark_lane(self, cell: tuple[int, int] | None) -> None:
        """Outline one lane (First divergence) and bring it into view; None removes the mark."""
        self.marked = cell
        self.lane_box.setVisible(cell is not None and self._tiled is not None)
        if cell is None or self._tiled is None:
            return
        row, lane = cell
        self.lane_box.setRect(QRectF(lane, row - 0.5, 1, 1))
        view = self.plot.getPlotItem().getViewBox()
        (left, right), (top, bottom) = view.viewRange()
        if not (left <= lane + 0.5 <= right and top <= row <= bottom):
            half_rows = max(4.0, (bottom - top) / 2)
            half_lanes = max(8.0, (right - left) / 2)
            view.setRange(
                xRange=(lane + 0.5 - half_lanes, lane + 0.5 + half_lanes),
                yRange=(row - half_rows, row + half_rows),
                padding=0,
            )

    def select_row(self, row: int) -> None:
        if self._tiled is None:
            return
        row = int(np.clip(row, 0, self._tiled.lanes.shape[0] - 1))
        if row != self.selected_row:
            self.selected_row = row
            self._update_row_box()
            self.row_selected.emit(row)
        else:
            self._update_row_box()

    def set_span(self, lanes: int) -> None:
        """Highlight the first ``lanes`` lanes of the selected row (0 hides it)."""
        self._span = int(lanes)
        self._update_row_box()

    def _update_row_box(self) -> None:
        if self._tiled is None:
            return
        block = self._tiled.block
        top = self.selected_row - 0.5
        self.row_box.setRect(QRectF(0, top, block, 1))
        self.span_box.setVisible(self._span > 0)
        self.span_box.setRect(QRectF(0, top + 0.15, max(self._span, 0), 0.7))

    # ------------------------------------------------------------------ mouse

    def cell_at(self, x: float, y: float) -> tuple[int, int] | None:
        """(row, lane) under view coordinates, or None outside the grid."""
        if self._tiled is None:
            return None
        rows, block = self._tiled.lanes.shape
        row, lane = int(np.floor(y + 0.5)), int(np.floor(x))
        if 0 <= row < rows and 0 <= lane < block:
            return row, lane
        return None

    def describe(self, row: int, lane: int) -> str:
        """Hover text for one lane (what the tooltip shows)."""
        if self._problem is None or self._tiled is None or self._image is None:
            return ""
        return viewdata.hover_text(
            self._problem,
            self._tiled,
            self._image.states,
            row,
            lane,
            expected_y=self._expected_y,
            kernel_y=self._kernel_y,
        )

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        view = self.plot.getPlotItem().getViewBox()
        if not view.sceneBoundingRect().contains(scene_pos):
            return
        point = view.mapSceneToView(scene_pos)
        cell = self.cell_at(point.x(), point.y())
        if cell is None:
            self.hover_text = ""
            QToolTip.hideText()
            return
        self.hover_text = self.describe(*cell)
        global_pos = self.plot.mapToGlobal(self.plot.mapFromScene(scene_pos))
        QToolTip.showText(global_pos, self.hover_text, self.plot)

    def _on_mouse_clicked(self, event: object) -> None:
        scene_pos = event.scenePos()  # type: ignore[attr-defined]
        view = self.plot.getPlotItem().getViewBox()
        point = view.mapSceneToView(scene_pos)
        cell = self.cell_at(point.x(), point.y())
        if cell is not None:
            self.select_row(cell[0])
