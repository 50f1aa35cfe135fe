"""Compiler view: TTIR / TTGIR / LLIR / PTX / SASS tabs and the resource facts.

Fed a plain dict (``pipeline``'s compile summary, or ``CompileInfo.to_dict()``, normalised by
``viewdata.normalize_compile_info``); compiling
itself happens on the worker thread (the window asks through ``compile_requested``).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QWidget,
)

from inspector.check.stages import COMPILE_STAGES as STAGES
from inspector.model.viewdata import normalize_compile_info
from inspector.qt.widgets.layout import toolbar_over


class CompilerView(QWidget):
    """Tabs of compiler output for the current dtype and width."""

    compile_requested = Signal(str)  # target ("" = the device in hand)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.facts = QLabel("Not compiled yet.", objectName="compile_facts")
        self.facts.setWordWrap(True)
        self.target_combo = QComboBox(objectName="compile_target")
        self.target_combo.addItems(["sm_90", "sm_80", "sm_89", "sm_100", "device"])
        self.target_combo.setToolTip("CUDA target; 'device' = the GPU in hand (needs CUDA)")
        self.compile_button = QPushButton("Compile", objectName="compile")
        self.compile_button.setToolTip(
            "Compile the kernel for this dtype and width (on the worker)"
        )
        self.tabs = QTabWidget(objectName="compile_tabs")
        self.editors: dict[str, QPlainTextEdit] = {}
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        mono.setStyleHint(QFont.StyleHint.Monospace)
        for stage in STAGES:
            editor = QPlainTextEdit(objectName=f"compile_{stage}")
            editor.setReadOnly(True)
            editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
            editor.setFont(mono)
            self.editors[stage] = editor
            self.tabs.addTab(editor, stage.upper())
        toolbar_over(
            self,
            [self.facts, QLabel("target"), self.target_combo, self.compile_button],
            self.tabs,
            body_stretch=1,
        )
        self.compile_button.clicked.connect(self._request)
        self.tabs.currentChanged.connect(self._fill)
        self.info: dict[str, Any] = {}
        self._filled: set[str] = set()
        self._label = ""
        self.bundled_only = ""

    def set_bundled_only(self, note: str) -> None:
        """A user's kernel is loaded (``note`` says so; "" when the bundled kernel is back): the
        compiler output is the bundled kernel's, so the tabs and Compile are disabled and the
        facts line says whose output it would be."""
        self.bundled_only = note
        self.compile_button.setEnabled(not note)
        self.target_combo.setEnabled(not note)
        self.tabs.setEnabled(not note)
        if note:
            self.facts.setText(note)
        else:
            self.set_info(self.info, self._label)

    def text(self, stage: str) -> str:
        """The text a stage's tab shows (fills it if it has not been shown yet)."""
        self._fill(self.tabs.indexOf(self.editors[stage]))
        return self.editors[stage].toPlainText()

    def _fill(self, index: int) -> None:
        if index < 0 or not self.info or "error" in self.info:
            return
        stage = STAGES[index]
        if stage in self._filled:
            return
        self._filled.add(stage)
        text = self.info.get("texts", {}).get(stage)
        editor = self.editors[stage]
        if text:
            editor.setPlainText(text)
        elif stage == "sass":
            editor.setPlainText(
                "SASS needs nvdisasm / cuobjdump from a CUDA toolkit; not available here."
            )
        else:
            editor.setPlainText("(not produced)")

    def _request(self) -> None:
        target = self.target_combo.currentText()
        self.compile_requested.emit("" if target == "device" else target)

    def set_info(self, info: Any, label: str = "") -> None:
        self.info = normalize_compile_info(info)
        self._label = label
        if self.bundled_only:
            self.facts.setText(self.bundled_only)
            return
        if not self.info:
            self.facts.setText("Not compiled yet.")
            return
        if "error" in self.info:
            self.facts.setText(f"compile failed: {self.info['error']}")
            for editor in self.editors.values():
                editor.setPlainText("")
            return
        # Texts are laid out lazily, when their tab is shown: SASS alone can be megabytes, and
        # setting every tab at once would pause the GUI thread when a check result arrives.
        self._filled = set()
        self._fill(self.tabs.currentIndex())

        def fact(key: str, unit: str = "") -> str:
            value = self.info.get(key)
            return "n/a" if value is None else f"{value}{unit}"

        self.facts.setText(
            (f"{label} · " if label else "")
            + f"target {fact('target')} · num_warps {fact('num_warps')} · "
            f"num_stages {fact('num_stages')} · registers {fact('registers')} · "
            f"spills {fact('spills')} · shared {fact('shared_bytes', ' B')} · "
            f"source sha256 {str(self.info.get('source_sha256', ''))[:12]}"
        )
