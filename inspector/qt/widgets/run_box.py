"""The Run box under the inputs: Run check, Run kernel and its launch mode (Batch-invariant),
Cancel, whether the check includes the real kernel, Benchmark, the job's progress and the
verdict. It is always on screen; the window connects its buttons and says what to show."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
)

from inspector.model.launch import TOOLTIP
from inspector.model.state import KERNEL_ONLY_MUTANTS
from inspector.qt.widgets.layout import bounded_scroll
from oracle.mutants import MODEL_MUTANTS

#: Lines of the verdict shown before it scrolls.
VERDICT_LINES = 5


class RunBox(QGroupBox):
    """The Run box's widgets, laid out; ``env`` is ``jobs.tasks.kernel_environment()``."""

    def __init__(self, env: dict[str, Any]) -> None:
        super().__init__("Run")
        self.check_button = QPushButton("Run check", objectName="run_check")
        self.check_button.setToolTip(
            "Oracle, fixture matrix and every mutant (and the real kernel if ticked), on the worker"
        )
        self.kernel_button = QPushButton("Run kernel", objectName="run_kernel")
        self.kernel_button.setEnabled(env["available"])
        self.batch_invariant = QCheckBox("Batch-&invariant", objectName="batch_invariant")
        self._kernel_floor = bool(env["available"])
        self.bench_button = QPushButton("Benchmark", objectName="benchmark")
        self.cancel_button = QPushButton("Cancel", objectName="cancel")
        self.cancel_button.setEnabled(False)
        self.kernel_in_check = QCheckBox("include the real kernel", objectName="kernel_in_check")
        self.kernel_in_check.setChecked(env["available"])
        self.kernel_in_check.setEnabled(env["available"])
        self.name_kernel(None)
        self.progress = QProgressBar(objectName="progress", maximum=1, format="idle")
        self.progress.setValue(0)
        self.verdict = QLabel("No check run yet.", objectName="verdict", wordWrap=True)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)

        layout = QVBoxLayout(self)
        layout.setSpacing(4)
        buttons = QHBoxLayout()
        buttons.addWidget(self.check_button)
        buttons.addWidget(self.kernel_button)
        buttons.addWidget(self.batch_invariant)
        buttons.addWidget(self.cancel_button)
        layout.addLayout(buttons)
        layout.addWidget(self.kernel_in_check)
        layout.addWidget(self.bench_button)
        layout.addWidget(self.progress)
        # A verdict of many lines scrolls inside its box: what sits under it stays on screen.
        layout.addWidget(bounded_scroll(self.verdict, VERDICT_LINES, "verdict_area"))

    def name_kernel(self, name: str | None) -> None:
        """Say which kernel Run kernel and the check run: the bundled one (None) or ``name``, a
        user's, in its child process. The launch mode is the bundled kernel's only."""
        self.batch_invariant.setEnabled(self._kernel_floor and name is None)
        if name is None:
            mutants = len(MODEL_MUTANTS) + len(KERNEL_ONLY_MUTANTS)
            self.kernel_in_check.setText("include the real kernel")
            self.kernel_in_check.setToolTip(
                f"Runs the kernel and its {mutants} mutants over the fixture matrix; under the "
                "Triton interpreter this takes a while"
            )
            self.kernel_button.setToolTip(
                "The real kernel (with the switched-on mutant) on this input"
            )
            self.batch_invariant.setToolTip(
                f"Batch-invariant: {TOOLTIP}. Run kernel (and a check with the real kernel) "
                "launch this mode's layout (Ctrl+Shift+K)"
            )
            return
        self.kernel_in_check.setText(f"include the kernel ({name})")
        self.kernel_in_check.setToolTip(
            f"Runs {name} in a child process over the fixture matrix (no built-in mutants)"
        )
        self.kernel_button.setToolTip(f"{name} once on this input, in a child process")
        self.batch_invariant.setToolTip(
            f"Batch-invariant: the bundled kernel's launch mode ({TOOLTIP}); {name} launches itself"
        )

    def show_progress(self, name: str, step: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(step)
        self.progress.setFormat(f"{name}: %v / %m")

    def show_idle(self, last: str) -> None:
        """Empty and neutral: the verdict line says how a check went, never the progress bar."""
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat(f"idle (last: {last})")

    def add_to_verdict(self, text: str) -> None:
        self.verdict.setText(self.verdict.text() + f"<br>{text}")
