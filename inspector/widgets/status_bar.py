"""The status bar's permanent labels about the machine: the device and the versions."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLabel


def environment_labels(env: dict[str, Any]) -> tuple[QLabel, QLabel]:
    """The device label and the versions label of ``jobs.kernel_environment``'s ``env``."""
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
    return device_label, versions_label
