"""The layout most views share: a row of tools over the view itself, without margins."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QHBoxLayout, QVBoxLayout, QWidget


def toolbar_over(
    parent: QWidget,
    tools: Sequence[QWidget],
    body: QWidget,
    *,
    above_body: Sequence[QWidget] = (),
    body_stretch: int = 0,
) -> QVBoxLayout:
    """Lay ``parent`` out as one row of ``tools`` over ``above_body`` and ``body``.

    Args:
        parent: the widget that gets the layout.
        tools: the top row; the first one (a label, usually) takes the row's spare width.
        body: the view, last.
        above_body: widgets between the row and the body, at their natural height.
        body_stretch: the body's stretch factor in the column.

    Returns:
        The column layout (already set on ``parent``).
    """
    top = QHBoxLayout()
    for index, tool in enumerate(tools):
        top.addWidget(tool, 1 if index == 0 else 0)
    layout = QVBoxLayout(parent)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addLayout(top)
    for widget in above_body:
        layout.addWidget(widget)
    layout.addWidget(body, body_stretch)
    return layout
