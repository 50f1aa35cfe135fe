"""Lane grid: rows x BLOCK lanes of the tile, coloured by value and state.

Valid lanes sit on a diverging colormap (symmetric about zero; one scale for all rows, or each
row its own); the masked tail, poison that leaked into the reduction, and out-of-bounds stores
each have their own colour. An out-of-bounds store is drawn on the tile lane that made it, and
one that no tile reaches on a margin row under the grid (:mod:`inspector.model.oob_view`); a
tail lane's store into the next row's data, which no guard sees, is inferred and drawn with its
own colour and mark. The details pane beside the grid (:class:`LaneDetails`) shows row, lane,
address, x, x², w, the kernel's y, the expected y, the error and the stores of the lane under
the mouse, and stays when the mouse rests; clicking selects the row and pins the lane in the
pane; the mouse zooms and pans (Reset zoom undoes it); Worst row selects the row with the
largest error. Lane c and row r are centred on the integer ticks c and r. First divergence
outlines its lane in red (and pins it). The image and the overlays are created once and updated
with ``setImage`` / ``setRect``.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QGraphicsRectItem,
    QLabel,
    QPushButton,
    QSplitter,
    QWidget,
)

from inspector.model import viewdata
from inspector.model.cell_summary import block_hover_text
from inspector.qt.widgets.lane_details import LaneDetails
from inspector.qt.widgets.layout import toolbar_over
from oracle.spec import Problem
from oracle.tiled import TiledResult

COLORMAP = "CET-D1"
#: How the legend writes each state's glyph (pyqtgraph's "t" is a triangle pointing down).
GLYPH_TEXT = {"o": "o", "x": "x", "t": "▼"}


def _swatch(color: tuple[int, int, int, int], text: str) -> str:
    r, g, b, _ = color
    return f"<span style='color: rgb({r},{g},{b})'>■</span> {text}"


def _outline(
    plot_item: pg.PlotItem, rgb: tuple[int, int, int], z: float, dashed: bool = False
) -> QGraphicsRectItem:
    """An unfilled rectangle over the image, its 2-pixel pen the same at every zoom."""
    box = QGraphicsRectItem()
    pen = QPen(QColor(*rgb))
    pen.setCosmetic(True)
    pen.setWidth(2)
    if dashed:
        pen.setStyle(Qt.PenStyle.DashLine)
    box.setPen(pen)
    box.setZValue(z)
    plot_item.addItem(box)
    return box


class IntegerAxis(pg.AxisItem):
    """An axis whose ticks are whole lanes or rows (never 0.5 of a lane)."""

    def tickSpacing(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, float]]:
        levels = [
            (spacing, offset)
            for spacing, offset in super().tickSpacing(minVal, maxVal, size)
            if spacing >= 1 and float(spacing).is_integer()
        ]
        return levels or [(1.0, 0.0)]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        return [str(round(v)) for v in values]


class LaneGrid(QWidget):
    """The tile of every row. ``row_selected(int)`` when a row is clicked or picked;
    ``worst_requested()`` when Worst row is pressed (the window knows the errors)."""

    row_selected = Signal(int)
    worst_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._problem: Problem | None = None
        self._tiled: TiledResult | None = None
        self._image: viewdata.LaneImage | None = None
        self._extra_oob: tuple[int, ...] = ()
        self._oob_stride = 0
        self._expected_y: np.ndarray | None = None
        self._kernel_y: np.ndarray | None = None
        self.marked: tuple[int, int] | None = None  # the lane First divergence points at
        self.selected_row = 0
        self._span = 0  # lanes highlighted in the selected row (the stepper's current stage)
        self.hover_text = ""

        self.counts = QLabel(objectName="lane_counts")
        self.counts.setTextFormat(Qt.TextFormat.RichText)
        self.counts.setWordWrap(True)
        self.reset_button = QPushButton("Reset zoom", objectName="lane_reset_zoom")
        self.reset_button.setToolTip("Show every row and lane again")
        self.worst_button = QPushButton("Worst row", objectName="lane_worst_row")
        self.worst_button.setToolTip(
            "Select the row with the largest relative error (the kernel's when it ran, else the "
            "lane model's against the scalar reference)"
        )
        self.per_row = QCheckBox("scale per row", objectName="lane_scale_per_row")
        self.per_row.setToolTip(
            "Colour each row on its own largest magnitude (small rows stay visible beside big ones)"
        )
        for control, name in (
            (self.reset_button, "Reset the lane grid's zoom"),
            (self.worst_button, "Select the worst row"),
            (self.per_row, "Colour scale per row"),
        ):
            control.setAccessibleName(name)
        self.plot = pg.PlotWidget(
            objectName="lane_plot",
            axisItems={"bottom": IntegerAxis("bottom"), "left": IntegerAxis("left")},
        )
        self.plot.setAccessibleName("Lane grid")
        self.plot.setBackground(None)
        item = self.plot.getPlotItem()
        item.setLabel("bottom", "lane")
        item.setLabel("left", "row")
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
        # A glyph per poison and out-of-bounds lane: the states differ by more than colour.
        self.glyphs = {
            state: pg.ScatterPlotItem(
                symbol=glyph,
                size=7,
                pen=pg.mkPen((20, 20, 20), width=1.2),
                brush=None,
                pxMode=True,
            )
            for state, glyph in viewdata.STATE_GLYPHS.items()
        }
        for glyph_item in self.glyphs.values():
            glyph_item.setZValue(5)
            item.addItem(glyph_item)
        light = QApplication.instance() is not None and (
            QApplication.instance().property("color_scheme") == "light"
        )
        self.row_box = _outline(item, (20, 24, 32) if light else (255, 255, 255), 10)
        self.span_box = _outline(item, (0, 229, 255), 11)
        self.lane_box = _outline(item, (255, 64, 64), 12)
        self.lane_box.setVisible(False)
        self.pin_box = _outline(item, (20, 24, 32) if light else (255, 255, 255), 13, dashed=True)
        self.pin_box.setVisible(False)
        self.details = LaneDetails()

        self.legend = QLabel(objectName="lane_legend")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setText(
            "row: one program · lane: column offset in its tile &nbsp; "
            "valid lanes: value on a blue–white–red map (0 is white) &nbsp; "
            + " &nbsp; ".join(
                _swatch(viewdata.STATE_COLORS[state], viewdata.STATE_NAMES[state])
                + (
                    f" ({GLYPH_TEXT[viewdata.STATE_GLYPHS[state]]})"
                    if state in viewdata.STATE_GLYPHS
                    else ""
                )
                for state in (
                    viewdata.MASKED,
                    viewdata.POISON_IN,
                    viewdata.OOB_WRITE,
                    viewdata.CROSS_ROW,
                )
            )
            + " (on the lane that stored; the margin row: stores no tile reaches)"
            + f" &nbsp; <span style='color: {'black' if light else 'white'}'>□</span> selected row"
            + " &nbsp; <span style='color: rgb(0,229,255)'>□</span> lanes of the current step"
            + " &nbsp; <span style='color: rgb(255,64,64)'>□</span> first divergence"
            + " &nbsp; ⬚ lane pinned in the details pane (click a lane)"
        )
        self.legend.setWordWrap(True)

        # Which run the grid's stores and the hover's kernel values come from.
        self.source = QLabel(objectName="lane_source")
        self.source.setWordWrap(True)
        self.source.setProperty("role", "provenance")
        # The details pane beside the plot; the splitter lets it be narrowed or closed.
        self.body = QSplitter(Qt.Orientation.Horizontal, objectName="lane_body")
        self.body.addWidget(self.plot)
        self.body.addWidget(self.details)
        self.body.setStretchFactor(0, 1)
        self.body.setStretchFactor(1, 0)
        self.body.setSizes([700, 280])
        toolbar_over(
            self,
            [self.counts, self.per_row, self.worst_button, self.reset_button],
            self.legend,
            above_body=[self.source],
        ).insertWidget(2, self.body, 1)
        self.reset_button.clicked.connect(self.reset_zoom)
        self.worst_button.clicked.connect(self.worst_requested.emit)
        self.per_row.toggled.connect(self._rescale)

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
                already (on the worker: ~0.3 s for the largest problems); ignored when it was
                scaled otherwise than the grid's "scale per row" says.
            oob_stride: the frame of ``extra_oob`` (0: the problem's row stride; a user
                kernel's output has a tile of guard between rows).
        """
        same_shape = self._tiled is not None and self._tiled.lanes.shape == tiled.lanes.shape
        self._problem = problem
        self._tiled = tiled
        self._extra_oob = tuple(extra_oob)
        self._oob_stride = int(oob_stride)
        if image is not None and image.per_row != self.per_row.isChecked():
            image = None
        self._image = image if image is not None else self._draw()
        if not same_shape:
            self.mark_lane(None)
            self.pin_lane(None)
            self.details.clear()
        self._show_image(fit=not same_shape)
        self._refresh_details()

    def _draw(self) -> viewdata.LaneImage:
        assert self._tiled is not None
        return viewdata.lane_image(
            self._tiled,
            self._lut,
            self._extra_oob,
            extra_stride=self._oob_stride,
            per_row=self.per_row.isChecked(),
        )

    def _rescale(self, *_: object) -> None:
        if self._tiled is None:
            return
        self._image = self._draw()
        self._show_image(fit=False)

    def _show_image(self, *, fit: bool) -> None:
        tiled, image = self._tiled, self._image
        assert tiled is not None
        assert image is not None
        rows, block = tiled.lanes.shape
        shown_rows = rows + (1 if image.margin else 0)
        self.image_item.setImage(image.rgba, autoLevels=False)
        # Row r spans [r - 0.5, r + 0.5] and lane c [c - 0.5, c + 0.5]: ticks sit mid-cell.
        self.image_item.setRect(QRectF(-0.5, -0.5, block, shown_rows))
        left_axis = self.plot.getPlotItem().getAxis("left")
        if shown_rows <= 32:
            ticks = [(r, str(r)) for r in range(rows)]
            if image.margin:
                ticks.append((rows, "margin"))
            left_axis.setTicks([ticks, []])
        else:
            left_axis.setTicks(None)
        cells = viewdata.glyph_cells(image)
        for state, glyph_item in self.glyphs.items():
            glyph_lanes, glyph_rows = cells.get(state, ((), ()))
            glyph_item.setData(x=list(map(float, glyph_lanes)), y=list(map(float, glyph_rows)))
        self.width_line.setValue(tiled.width - 0.5)
        self.width_line.setVisible(tiled.width < block)
        self.selected_row = min(self.selected_row, rows - 1)
        self._update_row_box()
        if fit:
            self.reset_zoom()
        self.counts.setText(self._counts_text())

    def _counts_text(self) -> str:
        tiled, image = self._tiled, self._image
        assert tiled is not None
        assert image is not None
        counts = viewdata.lane_counts(tiled)
        oob = image.writes.count
        leaked = int((image.states == viewdata.POISON_IN).sum())
        bad = "color: rgb(230,159,0)"
        text = (
            f"width <b>{counts.width}</b> · tile <b>{counts.block}</b> · valid "
            f"<b>{counts.valid}</b> · masked <b>{counts.masked}</b> · row stride "
            f"<b>{counts.row_stride}</b> · rows <b>{tiled.lanes.shape[0]}</b> · "
            f"<span style='{bad if oob else ''}'>out-of-bounds writes <b>{oob}</b>"
            + (f" ({image.writes.margin.size} in the margin)" if image.margin else "")
            + "</span>"
        )
        if leaked:
            text += f" · <span style='color: rgb(204,121,167)'>poison lanes reduced {leaked}</span>"
        if image.writes.cross.count:
            text += (
                " · <span style='color: rgb(230,159,0)'>cross-row stores (inferred) "
                f"<b>{image.writes.cross.count}</b></span>"
            )
        if tiled.mutant:
            text += f" · mutant <b>{tiled.mutant}</b>"
        if image.per_row:
            text += " · colours scaled per row"
        if image.downsampled:
            text += (
                f" · <i>downsampled ×{image.row_step} rows, ×{image.lane_step} "
                "lanes (worst state per cell)</i>"
            )
        return text

    def reset_zoom(self) -> None:
        """Show every row and lane (and the margin row, when there is one)."""
        if self._tiled is None or self._image is None:
            return
        rows, block = self._tiled.lanes.shape
        shown_rows = rows + (1 if self._image.margin else 0)
        self.plot.getPlotItem().getViewBox().setRange(
            QRectF(-0.5, -0.5, block, shown_rows), padding=0.02
        )

    def view_range(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """((left, right), (top, bottom)) of the grid's view, in lanes and rows."""
        (left, right), (top, bottom) = self.plot.getPlotItem().getViewBox().viewRange()
        return (left, right), (top, bottom)

    def set_source(self, text: str) -> None:
        """Say which run the grid shows (the window's provenance line)."""
        self.source.setText(text)

    def set_outputs(self, expected_y: np.ndarray | None, kernel_y: np.ndarray | None) -> None:
        """The scalar reference's output and the loaded kernel's (None: not run) for the hover."""
        self._expected_y = expected_y
        self._kernel_y = kernel_y
        self._refresh_details()

    def _refresh_details(self) -> None:
        cell = self.details.cell
        if cell is not None and self.cell_at(cell[1], cell[0]) == cell:
            self.details.refresh(self.describe(*cell))

    def pin_lane(self, cell: tuple[int, int] | None) -> None:
        """Pin ``cell`` in the details pane (dashed outline); None unpins."""
        if cell is None or self.cell_at(cell[1], cell[0]) != cell:
            self.details.unpin()
            self.pin_box.setVisible(False)
            return
        self.details.pin(cell, self.describe(*cell))
        self.pin_box.setRect(QRectF(cell[1] - 0.5, cell[0] - 0.5, 1, 1))
        self.pin_box.setVisible(True)

    def mark_lane(self, cell: tuple[int, int] | None) -> None:
        """Outline one lane (First divergence), pin it in the details pane and bring it into
        view; None removes the outline."""
        self.marked = cell
        self.lane_box.setVisible(cell is not None and self._tiled is not None)
        if cell is None or self._tiled is None:
            return
        row, lane = cell
        self.lane_box.setRect(QRectF(lane - 0.5, row - 0.5, 1, 1))
        self.pin_lane(cell)
        view = self.plot.getPlotItem().getViewBox()
        (left, right), (top, bottom) = view.viewRange()
        if not (left <= lane <= right and top <= row <= bottom):
            half_rows = max(4.0, (bottom - top) / 2)
            half_lanes = max(8.0, (right - left) / 2)
            view.setRange(
                xRange=(lane - half_lanes, lane + half_lanes),
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
        self.row_box.setRect(QRectF(-0.5, top, block, 1))
        self.span_box.setVisible(self._span > 0)
        self.span_box.setRect(QRectF(-0.5, top + 0.15, max(self._span, 0), 0.7))

    # ------------------------------------------------------------------ mouse

    def cell_at(self, x: float, y: float) -> tuple[int, int] | None:
        """(row, lane) under view coordinates (row == rows: the margin row), or None outside."""
        if self._tiled is None or self._image is None:
            return None
        rows, block = self._tiled.lanes.shape
        shown_rows = rows + (1 if self._image.margin else 0)
        row, lane = int(np.floor(y + 0.5)), int(np.floor(x + 0.5))
        if 0 <= row < shown_rows and 0 <= lane < block:
            return row, lane
        return None

    def describe(self, row: int, lane: int) -> str:
        """Hover text for one lane (on a downsampled grid: its whole cell first), or for the
        margin row's cell (what the tooltip shows)."""
        if self._problem is None or self._tiled is None or self._image is None:
            return ""
        if row >= self._tiled.lanes.shape[0]:
            step = self._image.lane_step
            first = lane - lane % step
            return viewdata.margin_hover_text(
                self._problem, self._image.writes, range(first, first + step)
            )
        return block_hover_text(
            self._problem,
            self._tiled,
            self._image.states,
            row,
            lane,
            (self._image.row_step, self._image.lane_step),
            expected_y=self._expected_y,
            kernel_y=self._kernel_y,
            writes=self._image.writes,
        )

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        view = self.plot.getPlotItem().getViewBox()
        if not view.sceneBoundingRect().contains(scene_pos):
            return
        point = view.mapSceneToView(scene_pos)
        cell = self.cell_at(point.x(), point.y())
        if cell is None:
            self.hover_text = ""  # the pane keeps the last lane: readable once the mouse left
            return
        self.hover_text = self.describe(*cell)
        self.details.show_hover(cell, self.hover_text)

    def _on_mouse_clicked(self, event: object) -> None:
        scene_pos = event.scenePos()  # type: ignore[attr-defined]
        view = self.plot.getPlotItem().getViewBox()
        point = view.mapSceneToView(scene_pos)
        cell = self.cell_at(point.x(), point.y())
        if cell is not None:
            self.select_row(cell[0])
            self.pin_lane(None if cell == self.details.pinned else cell)
