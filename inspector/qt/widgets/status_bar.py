"""The status bar's permanent labels about the machine: the device and the versions."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import QLabel, QSizePolicy


class ElidedLabel(QLabel):
    """A one-line plain-text label that ends in "…" when it is narrower than its text (a
    clipped word reads as another word; the whole text is in the tooltip)."""

    def paintEvent(self, event: QPaintEvent) -> None:
        rect = self.contentsRect()
        metrics = self.fontMetrics()
        text = self.text()
        if metrics.horizontalAdvance(text) <= rect.width():
            super().paintEvent(event)
            return
        painter = QPainter(self)
        elided = metrics.elidedText(text, Qt.TextElideMode.ElideRight, rect.width())
        painter.drawText(rect, int(self.alignment() | Qt.AlignmentFlag.AlignVCenter), elided)
        painter.end()


def shrinkable(label: QLabel) -> QLabel:
    """Let ``label`` be narrower than its text (the status bar must never set the window's
    minimum width; the full text stays in the tooltip)."""
    label.setMinimumWidth(0)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    if not label.toolTip():
        label.setToolTip(label.text())
    return label


def environment_labels(env: dict[str, Any]) -> tuple[QLabel, QLabel]:
    """The device label and the versions label of ``tasks.kernel_environment``'s ``env``."""
    device_label = ElidedLabel(objectName="device_label")
    device = env["device"]
    if env["mode"] == "interpreter" and "interpreter" not in device.lower():
        device = f"CPU – Triton interpreter ({device})"
    device_label.setText(f"device: {device}")
    device_label.setToolTip(env.get("reason", ""))
    versions = dict(env["versions"])
    versions_label = ElidedLabel(
        " · ".join(f"{k} {v}" for k, v in versions.items() if k in ("torch", "triton", "numpy")),
        objectName="versions_label",
    )
    versions_label.setToolTip("\n".join(f"{k}: {v}" for k, v in versions.items()))
    device_label.setToolTip(f"device: {device}\n{env.get('reason', '')}".strip())
    return shrinkable(device_label), shrinkable(versions_label)
