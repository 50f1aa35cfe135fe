"""The Check log tab: the check's report in foldable sections, every line in its verdict's
colour (pass green, fail vermillion, not judged or stale amber), later entries (kernel runs,
First divergence, failed jobs) under it, each its own section.

It takes text the way a ``QPlainTextEdit`` does (``setPlainText``, ``appendPlainText``,
``toPlainText``, ``clear``) so its writers need not know how it is drawn; the grouping and the
colours are :mod:`inspector.model.check_log`'s. A section's title folds or unfolds it.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QTextBrowser, QWidget

from inspector.model.check_log import FAIL, PASS, WARN, LogSection, entry_section, report_sections
from inspector.qt.table_models import NOT_JUDGED_COLOR, OUTSIDE_COLOR, WITHIN_COLOR, css

#: Each line state's colour (Okabe-Ito, as the row table's tolerance cells).
STATE_COLORS = {PASS: css(WITHIN_COLOR), FAIL: css(OUTSIDE_COLOR), WARN: css(NOT_JUDGED_COLOR)}
#: The later entries kept (oldest dropped first).
MAX_ENTRIES = 500
#: A passing section longer than this starts folded (every mutant killed: nothing to read).
FOLD_PASSING_OVER = 8
FOLD_SCHEME = "fold"


class CheckLog(QTextBrowser):
    """The styled check log (object name ``summary``)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("summary")
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.anchorClicked.connect(self._on_anchor)
        self._report: list[str] = []
        self._entries: list[str] = []
        self._toggled: set[str] = set()  # sections the user folded or unfolded

    # ---- the QPlainTextEdit-like writers' side
    def setPlainText(self, text: str) -> None:
        """Replace the report (and drop the later entries)."""
        self._report = text.split("\n") if text else []
        self._entries = []
        self._render(keep_scroll=False)

    def appendPlainText(self, text: str) -> None:
        """Add a later entry (its first line titles its section) and scroll to it."""
        self._entries = [*self._entries, text][-MAX_ENTRIES:]
        self._render(keep_scroll=False)
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def clear(self) -> None:
        self.setPlainText("")

    def toPlainText(self) -> str:
        """Every line, folded or not, as plain text."""
        return "\n".join([*self._report, *self._entries])

    # ---- what is shown
    def sections(self) -> list[LogSection]:
        """The report's sections, then one per later entry."""
        return report_sections(self._report) + [entry_section(e) for e in self._entries]

    def line_color(self, text: str) -> str | None:
        """The CSS colour the line ``text`` is drawn in (None: the theme's text colour)."""
        for section in self.sections():
            if section.title == text:
                return STATE_COLORS.get(section.state)
            for line, state in zip(section.lines, section.states, strict=True):
                if line == text:
                    return STATE_COLORS.get(state)
        return None

    def is_folded(self, section: LogSection) -> bool:
        """Whether ``section`` shows only its title: a long passing one starts folded, and
        clicking its title flips it."""
        default = section.state == PASS and len(section.lines) > FOLD_PASSING_OVER
        return default != (section.title in self._toggled)

    def toggle(self, title: str) -> None:
        """Fold the section ``title``, or unfold it."""
        self._toggled ^= {title}
        self._render(keep_scroll=True)

    def _on_anchor(self, url: QUrl) -> None:
        if url.scheme() == FOLD_SCHEME:
            index = int(url.path() or -1)
            sections = self.sections()
            if 0 <= index < len(sections):
                self.toggle(sections[index].title)

    def _render(self, *, keep_scroll: bool) -> None:
        position = self.verticalScrollBar().value()
        parts = []
        for index, section in enumerate(self.sections()):
            parts.append(self._section_html(index, section))
        super().setHtml("".join(parts))
        if keep_scroll:
            self.verticalScrollBar().setValue(position)

    def _section_html(self, index: int, section: LogSection) -> str:
        color = STATE_COLORS.get(section.state) or self.palette().text().color().name()
        style = f" style='color:{color}'"
        title = html.escape(section.title)
        if not section.lines:  # a one-line entry: nothing to fold
            return f"<p style='margin:2px 0'><span{style}>{title}</span></p>"
        folded = self.is_folded(section)
        marker = "▸" if folded else "▾"
        count = f" ({len(section.lines)})" if folded else ""
        head = (
            f"<p style='margin:6px 0 2px 0'><a href='{FOLD_SCHEME}:{index}' "
            f"style='text-decoration:none'><b{style}>{marker} {title}</b></a>{count}</p>"
        )
        if folded:
            return head
        rows = []
        for line, state in zip(section.lines, section.states, strict=True):
            line_color = STATE_COLORS.get(state)
            line_style = f"color:{line_color};" if line_color else ""
            rows.append(
                f"<p style='margin:0 0 0 18px;white-space:pre-wrap;{line_style}'>"
                f"{html.escape(line)}</p>"
            )
        return head + "".join(rows)
