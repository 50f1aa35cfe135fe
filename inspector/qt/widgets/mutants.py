"""Mutant switches: at most one mutant on at a time (the model and the launcher take one)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QGridLayout, QGroupBox, QLabel, QVBoxLayout, QWidget

from inspector.model.state import KERNEL_ONLY_MUTANTS
from oracle.mutants import DESCRIPTIONS, MODEL_MUTANTS

NOTE = (
    "Model mutants recompute the lane model, stepper and table at once; "
    "'Run kernel' runs the real kernel with the mutant switched on."
)


#: The switches are laid out in this many columns (all nine fit a 768-pixel-high screen).
SWITCH_COLUMNS = 2


class MutantPanel(QGroupBox):
    """One switch per named mutant, in :data:`SWITCH_COLUMNS` columns. ``mutant_changed(name |
    None)``."""

    mutant_changed = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Mutants (one at a time)", parent)
        self.switches: dict[str, QCheckBox] = {}
        layout = QVBoxLayout(self)
        layout.setSpacing(2)
        grid = QGridLayout()
        grid.setVerticalSpacing(0)
        layout.addLayout(grid)
        for index, name in enumerate((*MODEL_MUTANTS, *KERNEL_ONLY_MUTANTS)):
            kernel_only = name in KERNEL_ONLY_MUTANTS
            box = QCheckBox(name + ("  (kernel only)" if kernel_only else ""))
            box.setObjectName(f"mutant_{name}")
            box.setToolTip(DESCRIPTIONS.get(name, name))
            box.toggled.connect(lambda on, n=name: self._on_toggled(n, on))
            if kernel_only:  # its longer label takes a whole row
                grid.addWidget(box, grid.rowCount(), 0, 1, SWITCH_COLUMNS)
            else:
                grid.addWidget(box, index // SWITCH_COLUMNS, index % SWITCH_COLUMNS)
            self.switches[name] = box
        # What the switched-on mutant changes on this input, or why it cannot show here.
        self.effect = QLabel(objectName="mutant_effect")
        self.effect.setWordWrap(True)
        self.effect.setProperty("role", "kernel")
        self.effect.setVisible(False)
        layout.addWidget(self.effect)
        self.note = QLabel(NOTE)
        self.note.setWordWrap(True)
        self.note.setProperty("role", "hint")
        layout.addWidget(self.note)
        self._current: str | None = None

    @property
    def current(self) -> str | None:
        return self._current

    def set_current(self, name: str | None) -> None:
        for other, box in self.switches.items():
            box.blockSignals(True)
            box.setChecked(other == name)
            box.blockSignals(False)
        if name != self._current:
            self._current = name
            self.mutant_changed.emit(name)

    def set_effect(self, text: str) -> None:
        """Say what the switched-on mutant changes here ("" hides the line)."""
        self.effect.setText(text)
        self.effect.setVisible(bool(text))

    def set_user_kernel(self, name: str | None) -> None:
        """A user's kernel ``name`` is loaded (None: the bundled one): the seven hand-made
        mutants are the bundled kernel's, so with a user kernel they change the lane model
        only, and the kernel-only ones (nothing in the model) are switched off and disabled."""
        for mutant in KERNEL_ONLY_MUTANTS:
            box = self.switches[mutant]
            box.setEnabled(name is None)
            box.setText(mutant + ("  (kernel only)" if name is None else "  (bundled kernel only)"))
        if name is not None and self._current in KERNEL_ONLY_MUTANTS:
            self.set_current(None)
        self.note.setText(
            NOTE
            if name is None
            else f"These are the bundled kernel's mutants: with {name} loaded they change the "
            "lane model only, and 'Run kernel' runs your kernel as it is (python main.py mutate "
            "--kernel mutates its source)."
        )

    def _on_toggled(self, name: str, on: bool) -> None:
        self.set_current(name if on else (None if self._current == name else self._current))
