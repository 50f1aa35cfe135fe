"""The status bar's permanent labels about the machine: the device and the versions."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLabel, QSizePolicy


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
    device_label = QLabel(objectName="device_label")
    device = env["device"]
    if env["mode"] == "interpreter" and "interpreter" not in device.lower():
        device = f"CPU – Triton interpreter ({device})"
    device_label.setText(f"device: {device}")
    device_label.setToolTip(env.get("reason", ""))
    versions = dict(env["versions"])
    versions_label = QLabel(
        " · ".join(f"{k} {v}" for k, v in versions.items() if k in ("torch", "triton", "numpy")),
        objectName="versions_label",
    )
    versions_label.setToolTip("\n".join(f"{k}: {v}" for k, v in versions.items()))
    device_label.setToolTip(f"device: {device}\n{env.get('reason', '')}".strip())
    return shrinkable(device_label), shrinkable(versions_label)
