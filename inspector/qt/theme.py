"""Light and dark: the window follows the desktop's colour scheme (Qt >= 6.5 reports it).

There is one style sheet (``resources/style.qss``, dark); the light theme is the same sheet with
each of its colours mapped to a light counterpart, so the two never drift apart. Qt-free.
"""

from __future__ import annotations

import re

#: Dark colour in style.qss -> its light counterpart (backgrounds light, text dark, accents kept
#: readable on white).
LIGHT = {
    "#1e2128": "#f6f7f9",
    "#d2d6de": "#1f2430",
    "#2b3039": "#d5d9e0",
    "#343a45": "#c3c9d3",
    "#9fb3c8": "#3c5a78",
    "#15171c": "#ffffff",
    "#3a404c": "#b7bec9",
    "#2f5d8a": "#a9c8ea",
    "#5b8dd6": "#2f6fcf",
    "#ef5350": "#c62828",
    "#2a1618": "#fdecea",
    "#ef9a9a": "#b71c1c",
    "#a5d6a7": "#1b5e20",
    "#8a93a3": "#5a6372",
    "#e3e8f0": "#10141c",
    "#ffb74d": "#a85d00",
    "#2c323d": "#e7eaef",
    "#414957": "#b7bec9",
    "#353c49": "#dde2e9",
    "#6b7280": "#9aa1ad",
    "#23272f": "#eef0f3",
    "#2e333c": "#d5d9e0",
    "#2e5b3a": "#cfe8d4",
    "#3f7a4f": "#5fa872",
    "#6b2b2b": "#f4c7c3",
    "#262b33": "#e9ecf0",
    "#ffffff": "#000000",
    "#c7cdd8": "#2d3442",
    "#1a1d23": "#f0f2f5",
    "#171a1f": "#eceff3",
    "#aab2c0": "#3d4554",
    "#0f1115": "#ffffff",
    "#e6e9ef": "#1f2430",
    "#4a5261": "#9aa1ad",
}
_HEX = re.compile(r"#[0-9a-fA-F]{6}\b")


def themed_qss(text: str, scheme: str) -> str:
    """``text`` (the dark sheet) for ``scheme`` ("dark" or "light"); a colour without a light
    counterpart is kept."""
    if scheme != "light":
        return text
    return _HEX.sub(lambda m: LIGHT.get(m.group(0).lower(), m.group(0)), text)


def plot_foreground(scheme: str) -> tuple[int, int, int]:
    """Axis and label colour of the plots for ``scheme``."""
    return (40, 44, 52) if scheme == "light" else (210, 214, 222)
