"""The window's kernel: File → Open kernel…, Open recent kernel, Use the bundled kernel and the
status bar's kernel label (what applies to the bundled kernel only: :mod:`.kernel_scope`).

A user's file is never imported here: its launcher names come from its syntax tree
(``kernel_choice.launcher_names``) and whether it loads is answered by a child process on the
worker (``tasks.load_kernel_job``), so a file that hangs while importing never freezes the
window. A file that does not load leaves the previous kernel loaded and says why. Every dialog
goes through ``widgets.dialogs`` (tests patch it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QSettings
from PySide6.QtWidgets import QLabel, QStatusBar, QWidget

from inspector.jobs import tasks
from inspector.model import kernel_choice
from inspector.model.events import Event
from inspector.model.kernel_choice import kernel_name
from inspector.model.state import InspectionState
from inspector.qt.widgets import dialogs

#: The QSettings key of the recent kernels (``FILE.py:FUNCTION`` strings, newest first).
RECENT_KEY = "recent_kernels"
LOAD_JOB = "load kernel"


@dataclass(frozen=True)
class KernelSurfaces:
    """What the kernel actions touch besides the state: the dialogs' parent, the status line
    and bar, the settings, the File menu's kernel entries, whether a kernel can run here
    (``env``), and the job runner's ``busy`` and ``start``."""

    parent: QWidget
    status: Callable[[str], None]
    status_bar: QStatusBar
    settings: QSettings
    menus: Any
    env: dict[str, Any]
    busy: Callable[[], bool]
    start: Callable[..., bool]


def _bundled_sha256() -> str:
    try:
        from kernels.instruments.compile_info import kernel_source_sha256

        return kernel_source_sha256()
    except Exception:  # no kernel floor: the label names the kernel without a hash
        return ""


class KernelActions(QObject):
    """The loaded kernel of one window (``window.kernels``)."""

    def __init__(self, state: InspectionState, surfaces: KernelSurfaces) -> None:
        super().__init__(surfaces.parent)
        self.state = state
        self._surfaces = surfaces
        self._parent = surfaces.parent
        self.label = QLabel(objectName="kernel_label")
        # After the status line (index 0), before the device and versions labels.
        surfaces.status_bar.insertPermanentWidget(1, self.label)
        self._bundled_sha = _bundled_sha256() if surfaces.env["available"] else ""
        self._loading: str | None = None
        menus = surfaces.menus
        menus.open_kernel.triggered.connect(self.open_kernel_dialog)
        menus.bundled_kernel.triggered.connect(self.use_bundled)
        self.state.events.kernel.connect(self._on_kernel)
        self._refresh_recent_menu()
        self._show_kernel()

    def _status(self, text: str) -> None:
        self._surfaces.status(text)

    # ------------------------------------------------------------------ loading

    def open_kernel_dialog(self) -> bool:
        """File → Open kernel…: a ``.py`` file, then its launcher; loads it on the worker."""
        path = dialogs.choose_open_file(self._parent, "Open kernel", "Python kernel files (*.py)")
        if not path:
            return False
        from kernels.sandbox.usercode import KernelSpecError

        try:
            names = kernel_choice.launcher_names(path)
        except KernelSpecError as exc:
            return self._refuse(str(exc))
        function = names[0] if len(names) == 1 else self._choose_launcher(path, names)
        if not function:
            return False
        return self.load(f"{path}:{function}")

    def _choose_launcher(self, path: str, names: list[str]) -> str | None:
        from pathlib import Path

        return dialogs.choose_item(
            self._parent,
            "Kernel launcher",
            f"{Path(path).name}: which function is the launcher "
            "FUNCTION(x, weight, eps, out=None) -> y?",
            names,
        )

    def load(self, text: str) -> bool:
        """Load ``FILE.py:FUNCTION`` as typed (a menu, a receipt) on the worker: :meth:`load_spec`
        once it parses (False when it does not: no such file, not an identifier)."""
        from kernels.sandbox.usercode import KernelSpecError, parse_kernel_spec

        try:
            spec = parse_kernel_spec(text)
        except KernelSpecError as exc:
            return self._refuse(str(exc))
        return self.load_spec(spec)

    def load_spec(self, spec: Any) -> bool:
        """Load ``spec`` (a ``KernelSpec``) on the worker (False when it cannot start now:
        busy, or the file is not valid Python)."""
        if self._surfaces.busy():
            self._status("busy: wait for the running job (or cancel it) before loading a kernel")
            return False
        from kernels.sandbox.usercode import KernelSpecError

        try:
            kernel_choice.launcher_names(spec.path)  # a syntax error, said at once
        except KernelSpecError as exc:
            return self._refuse(str(exc))
        self._loading = kernel_choice.spec_text(spec)
        self._status(f"loading {spec.path.name}:{spec.function} in a child process…")
        return self._surfaces.start(LOAD_JOB, tasks.load_kernel_job(spec), self.loaded)

    def loaded(self, spec: Any) -> None:
        """The worker found ``spec`` loadable: prove it from now on."""
        self._loading = None
        self.add_recent(kernel_choice.spec_text(spec))
        self.state.set_kernel(spec)
        self._status(f"Loaded {kernel_name(spec)}: Run check (Ctrl+R) proves it.")

    def job_failed(self, name: str, exc: BaseException) -> bool:
        """A job failed: True when it was this object's (the window reports the others)."""
        if name != LOAD_JOB:
            return False
        text, self._loading = self._loading, None
        if isinstance(exc, tasks.Cancelled):
            self._status(
                f"loading {text} cancelled; still proving {kernel_name(self.state.kernel)}"
            )
            return True
        message = str(exc) if isinstance(exc, ValueError) else tasks.failure_text(exc)
        self._refuse(message)
        return True

    def _refuse(self, message: str) -> bool:
        current = kernel_name(self.state.kernel)
        dialogs.show_error(
            self._parent, "Cannot load kernel", f"{message}\n\nStill proving {current}."
        )
        self._status(f"kernel not loaded: {message} (still proving {current})")
        return False

    def use_bundled(self) -> None:
        """File → Use the bundled kernel."""
        if self.state.kernel is None or self._surfaces.busy():
            return
        self.state.set_kernel(None)
        self._status("Proving the bundled kernel again.")

    def reread(self) -> bool:
        """Before a run: hash the loaded file again (it may have been edited); False, with a
        message, when it is gone. A changed file is loaded as the new kernel."""
        spec = self.state.kernel
        if spec is None:
            return True
        from kernels.sandbox.usercode import KernelSpecError

        try:
            fresh = kernel_choice.reread(spec)
        except KernelSpecError as exc:
            return self._refuse(str(exc))
        if fresh.sha256 != spec.sha256:
            self.state.set_kernel(fresh)
            self._status(
                f"{kernel_name(fresh)} changed on disk: sha256 {spec.sha256[:12]} → "
                f"{fresh.sha256[:12]}; earlier results of it are dropped"
            )
        return True

    # ------------------------------------------------------------------ recent kernels

    def recent_kernels(self) -> list[str]:
        """``FILE.py:FUNCTION`` of the kernels loaded lately, newest first (QSettings)."""
        return kernel_choice.recent_kernels(self._surfaces.settings.value(RECENT_KEY, []))

    def add_recent(self, text: str) -> None:
        from inspector.model.state import recent_with

        self._surfaces.settings.setValue(RECENT_KEY, recent_with(self.recent_kernels(), text))
        self._refresh_recent_menu()

    def _refresh_recent_menu(self) -> None:
        menu = self._surfaces.menus.recent_kernels
        menu.clear()
        recent = self.recent_kernels()
        for text in recent:
            action = menu.addAction(text)
            action.triggered.connect(lambda _=False, t=text: self.load(t))
        menu.setEnabled(bool(recent) and not self._surfaces.busy())

    # ------------------------------------------------------------------ scope

    def update_enabled(self, idle: bool) -> None:
        """Kernels change only between jobs (a result must belong to the kernel it ran)."""
        menus = self._surfaces.menus
        menus.open_kernel.setEnabled(idle and self._surfaces.env["available"])
        menus.recent_kernels.setEnabled(idle and bool(self.recent_kernels()))
        menus.bundled_kernel.setEnabled(idle and self.state.kernel is not None)

    def _show_kernel(self) -> None:
        label = kernel_choice.kernel_label(self.state.kernel, self._bundled_sha)
        self.label.setText(label.text)
        self.label.setToolTip(label.tooltip)

    def _on_kernel(self, event: Event) -> None:
        self._show_kernel()
        self.update_enabled(not self._surfaces.busy())
