"""The window's kernel: File → Open kernel…, Open recent kernel, Use the bundled kernel, the
status bar's kernel label, what applies to the bundled kernel only, and First divergence.

A user's file is never imported here: its launcher names come from its syntax tree
(``kernel_choice.launcher_names``) and whether it loads is answered by a child process on the
worker (``jobs.load_kernel_job``), so a file that hangs while importing never freezes the
window. A file that does not load leaves the previous kernel loaded and says why. Every dialog
goes through ``widgets.dialogs`` (tests patch it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QLabel

from inspector.jobs import tasks
from inspector.model import kernel_choice, kernel_view
from inspector.model.events import Event
from inspector.model.kernel_choice import kernel_name
from inspector.qt.widgets import dialogs

if TYPE_CHECKING:
    from inspector.qt.window import InspectorWindow

#: The QSettings key of the recent kernels (``FILE.py:FUNCTION`` strings, newest first).
RECENT_KEY = "recent_kernels"
LOAD_JOB = "load kernel"
BUNDLED_ONLY = "bundled kernel only"


def _bundled_sha256() -> str:
    try:
        from kernels.compile_info import kernel_source_sha256

        return kernel_source_sha256()
    except Exception:  # no kernel floor: the label names the kernel without a hash
        return ""


class KernelActions(QObject):
    """The loaded kernel of one window (``window.kernels``)."""

    def __init__(self, window: InspectorWindow) -> None:
        super().__init__(window)
        self.window = window
        self.state = window.state
        self.label = QLabel(objectName="kernel_label")
        # After the status line (index 0), before the device and versions labels.
        window.statusBar().insertPermanentWidget(1, self.label)
        self._bundled_sha = _bundled_sha256() if window.env["available"] else ""
        self._loading: str | None = None
        self._divergence_after_run = False
        menus = window.menus
        menus.open_kernel.triggered.connect(self.open_kernel_dialog)
        menus.bundled_kernel.triggered.connect(self.use_bundled)
        menus.divergence.triggered.connect(self.first_divergence)
        window.divergence.button.clicked.connect(self.first_divergence)
        self.state.events.kernel.connect(self._on_kernel)
        # After the window's own renderer: the views hold the run when the jump reads them.
        self.state.events.kernel_run.connect(self._after_kernel_run)
        self._refresh_recent_menu()
        self._show_kernel()

    def _status(self, text: str) -> None:
        self.window.status_line.setText(text)

    # ------------------------------------------------------------------ loading

    def open_kernel_dialog(self) -> bool:
        """File → Open kernel…: a ``.py`` file, then its launcher; loads it on the worker."""
        window = self.window
        path = dialogs.choose_open_file(window, "Open kernel", "Python kernel files (*.py)")
        if not path:
            return False
        from kernels.usercode import KernelSpecError

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
            self.window,
            "Kernel launcher",
            f"{Path(path).name}: which function is the launcher "
            "FUNCTION(x, weight, eps, out=None) -> y?",
            names,
        )

    def load(self, text: str) -> bool:
        """Load ``FILE.py:FUNCTION`` on the worker (False when it cannot start now: busy, or
        the spec is wrong on its face: no such file, not valid Python, not an identifier)."""
        window = self.window
        if window.runner.busy:
            self._status("busy: wait for the running job (or cancel it) before loading a kernel")
            return False
        from kernels.usercode import KernelSpecError, parse_kernel_spec

        try:
            spec = parse_kernel_spec(text)
            kernel_choice.launcher_names(spec.path)  # a syntax error, said at once
        except KernelSpecError as exc:
            return self._refuse(str(exc))
        self._loading = text
        self._status(f"loading {spec.path.name}:{spec.function} in a child process…")
        return window.runner.start(LOAD_JOB, tasks.load_kernel_job(text), self.loaded)

    def loaded(self, spec: Any) -> None:
        """The worker found ``spec`` loadable: prove it from now on."""
        self._loading = None
        self.add_recent(kernel_choice.spec_text(spec))
        self.state.set_kernel(spec)
        self._status(f"Loaded {kernel_name(spec)}: Run check (Ctrl+R) proves it.")

    def job_failed(self, name: str, exc: BaseException) -> bool:
        """A job failed: True when it was this object's (the window reports the others)."""
        if name == "kernel":
            self._divergence_after_run = False
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
            self.window, "Cannot load kernel", f"{message}\n\nStill proving {current}."
        )
        self._status(f"kernel not loaded: {message} (still proving {current})")
        return False

    def use_bundled(self) -> None:
        """File → Use the bundled kernel."""
        if self.state.kernel is None or self.window.runner.busy:
            return
        self.state.set_kernel(None)
        self._status("Proving the bundled kernel again.")

    def reread(self) -> bool:
        """Before a run: hash the loaded file again (it may have been edited); False, with a
        message, when it is gone. A changed file is loaded as the new kernel."""
        spec = self.state.kernel
        if spec is None:
            return True
        from kernels.usercode import KernelSpecError

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
        return kernel_choice.recent_kernels(self.window.settings.value(RECENT_KEY, []))

    def add_recent(self, text: str) -> None:
        from inspector.model.state import recent_with

        self.window.settings.setValue(RECENT_KEY, recent_with(self.recent_kernels(), text))
        self._refresh_recent_menu()

    def _refresh_recent_menu(self) -> None:
        menu = self.window.menus.recent_kernels
        menu.clear()
        recent = self.recent_kernels()
        for text in recent:
            action = menu.addAction(text)
            action.triggered.connect(lambda _=False, t=text: self.load(t))
        menu.setEnabled(bool(recent) and not self.window.runner.busy)

    # ------------------------------------------------------------------ scope

    def update_enabled(self, idle: bool) -> None:
        """Kernels change only between jobs (a result must belong to the kernel it ran)."""
        menus = self.window.menus
        menus.open_kernel.setEnabled(idle and self.window.env["available"])
        menus.recent_kernels.setEnabled(idle and bool(self.recent_kernels()))
        menus.bundled_kernel.setEnabled(idle and self.state.kernel is not None)
        valid = self.state.problem is not None
        self.window.divergence.button.setEnabled(idle and valid)
        menus.divergence.setEnabled(idle and valid)

    def _show_kernel(self) -> None:
        label = kernel_choice.kernel_label(self.state.kernel, self._bundled_sha)
        self.label.setText(label.text)
        self.label.setToolTip(label.tooltip)

    def _on_kernel(self, event: Event) -> None:
        """Another kernel: the other one's run and check are gone (the state dropped them), a
        check saved in the session is shown against this one."""
        window = self.window
        window.kill_view.set_matrices([])
        window.verdict.setText(f"Kernel: {kernel_name(event.value)}. Run the check to prove it.")
        if self.state.session_results is not None:
            window.show_saved_results()
        else:
            window.refresh_views()
        self._show_kernel()
        self.apply_scope()
        self.window.divergence.show_lines([])
        self.window.grid.mark_lane(None)
        self.update_enabled(not self.window.runner.busy)

    def apply_scope(self) -> None:
        """What applies to the bundled kernel only is disabled, and says so, with a user's
        kernel loaded: its kernel-only mutant, the compiler output, the benchmark."""
        window, spec = self.window, self.state.kernel
        name = None if spec is None else kernel_name(spec)
        window.mutant_panel.set_user_kernel(name)
        window.compiler_view.set_bundled_only(
            ""
            if spec is None
            else f"Compiler output: {BUNDLED_ONLY}. {name} is compiled by its own launcher in "
            "its child process; what these tabs held is the bundled kernel's."
        )
        tabs = window.tabs
        for widget, title in ((window.compiler_view, "Compiler"), (window.bench_view, "Benchmark")):
            tabs.setTabText(
                tabs.indexOf(widget), title if spec is None else f"{title} ({BUNDLED_ONLY})"
            )
        window.set_bench_scope(spec is None)
        window.kernel_in_check.setText(
            "include the real kernel" if spec is None else f"include the kernel ({name})"
        )
        window.kernel_in_check.setToolTip(
            "Runs the kernel and its 7 mutants over the fixture matrix; under the Triton "
            "interpreter this takes a while"
            if spec is None
            else f"Runs {name} in a child process over the fixture matrix (no built-in mutants)"
        )
        window.run_kernel_button.setToolTip(
            "The real kernel (with the switched-on mutant) on this input"
            if spec is None
            else f"{name} once on this input, in a child process"
        )

    # ------------------------------------------------------------------ first divergence

    def first_divergence(self) -> bool:
        """Jump to the worst row and lane of the kernel's output, the step where it parts from
        the model, and show why; runs the kernel first when there is no output yet."""
        window, state = self.window, self.state
        if not state.analysis_current or state.reference is None:
            self._status("First divergence: the analysis of this input is still running")
            return False
        output = state.kernel_output()
        if output is None:
            if window.run_kernel():
                self._divergence_after_run = True
                self._status("First divergence: running the kernel on this input first…")
                return True
            self._status("First divergence needs the kernel's output: Run kernel or Run check")
            return False
        found = kernel_view.first_divergence(state.problem, state.reference, output)
        window.select_row(found.row)
        window.grid.mark_lane((found.row, found.lane))
        if found.step:
            window.stepper.go_to_key(found.step)
            window.tabs.setCurrentWidget(window.stepper)
        lines = [f"First divergence ({kernel_name(state.kernel)}, {output.source}):", *found.lines]
        window.divergence.show_lines(lines)
        # Once the panel's new height is laid out: the text's last line too, where it fits.
        QTimer.singleShot(0, lambda: window.left_scroll.ensureWidgetVisible(window.divergence.text))
        window.summary.appendPlainText("\n".join(lines))
        self._status(
            f"First divergence: row {found.row}, lane {found.lane}"
            + (f", they part at {found.step}" if found.step else ": nothing differs")
        )
        return True

    def _after_kernel_run(self, event: Event) -> None:
        if self._divergence_after_run:
            self._divergence_after_run = False
            self.first_divergence()
