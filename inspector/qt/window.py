"""The main window: lays the widgets out, wires them to the state, and routes job results.

It stays thin: the state and its rules are ``inspector.model``'s (Qt-free: the widgets render
its events and user actions go through it), validation is the oracle's, long work runs as
``inspector.jobs`` on the :class:`~inspector.qt.worker.JobRunner`, the sentences are
``inspector.check.report``'s and files go through :class:`~inspector.qt.file_actions.SessionFiles`.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Any

from PySide6.QtCore import QSettings
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QMainWindow

from inspector.check import report
from inspector.jobs import tasks
from inspector.jobs.host import heavy, prewarm
from inspector.model import evidence, launch
from inspector.model.events import Event
from inspector.model.mutant_effect import mutant_effect
from inspector.model.state import DEMO_FIXTURE, InspectionState
from inspector.qt.analysis_runs import AnalysisRuns
from inspector.qt.divergence_actions import DivergenceActions, DivergenceSurfaces
from inspector.qt.file_actions import AUTOSAVE_MS, FileSurfaces, SessionFiles
from inspector.qt.kernel_actions import KernelActions, KernelSurfaces
from inspector.qt.kernel_scope import KernelScope, ScopeWidgets
from inspector.qt.menus import build_menus, fit_to_screen, show_about, show_shortcuts
from inspector.qt.mutation_actions import MutationActions
from inspector.qt.presenter import EvidenceViews
from inspector.qt.record_views import RecordSurfaces, RecordViews
from inspector.qt.widgets.accessibility import name_controls
from inspector.qt.widgets.bench_view import BenchView
from inspector.qt.widgets.check_log import CheckLog
from inspector.qt.widgets.compiler_view import CompilerView
from inspector.qt.widgets.coverage_view import CoverageView
from inspector.qt.widgets.divergence import DivergencePanel
from inspector.qt.widgets.history_view import HistoryView
from inspector.qt.widgets.input_panel import InputPanel
from inspector.qt.widgets.kill_map import KillMatrixView
from inspector.qt.widgets.lane_grid import LaneGrid
from inspector.qt.widgets.main_layout import evidence_tabs, left_column, main_layout
from inspector.qt.widgets.mutants import MutantPanel
from inspector.qt.widgets.mutation_view import MutationView
from inspector.qt.widgets.run_box import RunBox
from inspector.qt.widgets.status_bar import ElidedLabel, environment_labels, shrinkable
from inspector.qt.widgets.stepper import ReductionStepper
from inspector.qt.widgets.tables import RowTable
from inspector.qt.worker import JobRunner


class InspectorWindow(QMainWindow):
    """RMSNorm Kernel Inspector main window.

    Attributes:
        state: the inspection (:class:`~inspector.model.state.InspectionState`).
        runner: the worker thread's owner; one job at a time.
        files: sessions, receipts, benchmark records, recent files.
        kernels: the loaded kernel (open, recent, bundled-only scope, first divergence).
        menus: the menu actions.
        env: the kernel floor's mode, device and versions (``tasks.kernel_environment``).
    """

    def __init__(
        self,
        *,
        demo: bool = True,
        settings: QSettings | None = None,
        autosave_dir: str | None = None,
        autosave_ms: int = AUTOSAVE_MS,
        warm_jobs: bool = True,
    ) -> None:
        super().__init__()
        self.setObjectName("inspector_window")
        self.setWindowTitle("RMSNorm Kernel Inspector")
        fit_to_screen(self)
        self.settings = settings or QSettings("rmsnorm-inspector", "inspector")
        self.state = InspectionState()
        self.runner = JobRunner(self)
        self.env = tasks.kernel_environment()
        if warm_jobs and self.env["available"]:
            prewarm()  # the job process imports torch and Triton while the window opens
        self._closed = False
        self._job_state: dict[str, str] = {}

        self._build()
        self.analysis_runs = AnalysisRuns(
            self.state, self.runner, self._lut, self.status_line.setText, self._is_closed
        )
        self.menus = build_menus(self)
        self.files = SessionFiles(self.state, self._file_surfaces(), autosave_dir, autosave_ms)
        self.mutation_actions = MutationActions(
            self.state,
            self.mutation_view,
            self,
            self.menus,
            self.runner,
            status=self.status_line.setText,
            show_view=self._show_mutation_view,
        )
        self._wire()
        self.records = RecordViews(
            self.state,
            RecordSurfaces(
                verdict=self.verdict,
                log=self.summary,
                progress=self.progress,
                kill_view=self.kill_view,
                coverage_view=self.coverage_view,
                compiler_view=self.compiler_view,
                refresh_views=self.refresh_views,
                mark_stale=self.views.mark_stale,
            ),
        )
        self.kernels, self.scope, self.divergence_actions = self._kernel_actions()
        name_controls(self)
        # Everything alive now leaves the cyclic collector's generations: a full collection in
        # the worker would otherwise walk it all holding the GIL (~100 ms pauses here).
        gc.freeze()
        if demo:
            self.input_panel.load_fixture(DEMO_FIXTURE)
            self.state.dirty = False
            self._show_title()

    # ================================================================ layout
    def _build(self) -> None:
        self.input_panel = InputPanel()
        self.mutant_panel = MutantPanel()
        self.grid = LaneGrid()
        self.stepper = ReductionStepper()
        self.row_table = RowTable()
        self.kill_view = KillMatrixView()
        self.compiler_view = CompilerView()
        self.coverage_view = CoverageView()
        self.bench_view = BenchView()
        self.history_view = HistoryView()
        self.mutation_view = MutationView()
        self.divergence = DivergencePanel()
        self.summary = CheckLog()
        self.views = EvidenceViews(self.state, self.grid, self.stepper, self.row_table)

        self.run_box = run_box = RunBox(self.env)
        self.run_check_button, self.run_kernel_button = run_box.check_button, run_box.kernel_button
        self.bench_button, self.cancel_button = run_box.bench_button, run_box.cancel_button
        self.kernel_in_check, self.progress = run_box.kernel_in_check, run_box.progress
        self.batch_invariant = run_box.batch_invariant
        self.verdict = run_box.verdict

        left, self.left_scroll = left_column(
            self.input_panel, self.mutant_panel, run_box, self.divergence
        )
        self.tabs = evidence_tabs(
            [
                (self.stepper, "Reduction stepper"),
                (self.row_table, "Row intermediates"),
                (self.kill_view, "Kill matrix"),
                (self.compiler_view, "Compiler"),
                (self.coverage_view, "Coverage"),
                (self.bench_view, "Benchmark"),
                (self.summary, "Check log"),
                (self.history_view, "History"),
                (self.mutation_view, "Mutation"),
            ]
        )
        self.setCentralWidget(main_layout(left, self.grid, self.tabs, self.width()).central)

        self.status_line = ElidedLabel("Ready.", objectName="status_line")
        self.device_label, self.versions_label = environment_labels(self.env)
        shrinkable(self.status_line)
        self.statusBar().addWidget(self.status_line, 3)
        self.statusBar().addPermanentWidget(self.device_label, 2)
        self.statusBar().addPermanentWidget(self.versions_label, 2)

    def _wire(self) -> None:
        menus, files, runner = self.menus, self.files, self.runner
        self.input_panel.problem_changed.connect(self.state.set_problem)
        self.input_panel.edited.connect(self.state.mark_dirty)
        self.mutant_panel.mutant_changed.connect(self.state.set_mutant)
        self.grid.row_selected.connect(self.select_row)
        self.grid.worst_requested.connect(self.views.select_worst_row)
        self.row_table.row_selected.connect(self.select_row)
        self.stepper.step_changed.connect(self._on_step)
        self.compiler_view.compile_requested.connect(self.request_compile)
        self.run_check_button.clicked.connect(self.run_check)
        self.run_kernel_button.clicked.connect(self.run_kernel)
        self.batch_invariant.toggled.connect(self.state.set_batch_invariant)
        menus.batch_invariant.toggled.connect(self.state.set_batch_invariant)
        self.bench_button.clicked.connect(self.run_benchmark)
        self.bench_view.open_button.clicked.connect(files.open_bench_record_dialog)
        self.cancel_button.clicked.connect(runner.cancel)
        for action, slot in (
            (menus.open_bench, files.open_bench_record_dialog),
            (menus.check, self.run_check),
            (menus.kernel, self.run_kernel),
            (menus.cancel, runner.cancel),
            (menus.new, files.new_session),
            (menus.open, files.open_session_dialog),
            (menus.save, files.save_session),
            (menus.save_as, files.save_session_as),
            (menus.export, files.export_receipts),
            (menus.quit, self.close),
            (menus.step_first, lambda: self.stepper.go_to(0)),
            (menus.step_back, self.stepper.step_back),
            (menus.step_forward, self.stepper.step_forward),
            (menus.step_last, lambda: self.stepper.go_to(len(self.stepper.steps) - 1)),
            (menus.play, self.stepper.play_button.toggle),
            (menus.worst_row, self.views.select_worst_row),
            (menus.reset_zoom, self.grid.reset_zoom),
            (menus.shortcuts, lambda: show_shortcuts(self)),
            (menus.about, lambda: show_about(self)),
        ):
            action.triggered.connect(slot)
        runner.progress.connect(self._on_progress)
        runner.result.connect(self._on_result)
        runner.failed.connect(self._on_failed)
        runner.busy_changed.connect(self._on_busy)
        runner.finished.connect(self._on_finished)
        events = self.state.events
        events.kernel.connect(self._on_kernel)
        events.problem.connect(self._on_problem)
        events.mutant.connect(self._on_mutant)
        events.batch_invariant.connect(self._on_batch_invariant)
        events.analysis.connect(self._on_analysis)
        events.kernel_run.connect(self._on_kernel_run)
        events.bench.connect(self._on_bench)
        events.session.connect(self.refresh_history)
        events.session_path.connect(self._show_title)
        events.dirty.connect(self._show_title)

    def _show_mutation_view(self) -> None:
        self.tabs.setCurrentWidget(self.mutation_view)

    def _lut(self) -> Any:
        return self.grid.lut

    def _is_closed(self) -> bool:
        """Whether :meth:`shutdown` ran (no more jobs, autosaves or results)."""
        return self._closed

    def _kernel_actions(self) -> tuple[KernelActions, KernelScope, DivergenceActions]:
        def busy() -> bool:
            return self.runner.busy

        kernels = KernelActions(
            self.state,
            KernelSurfaces(
                parent=self,
                status=self.status_line.setText,
                status_bar=self.statusBar(),
                settings=self.settings,
                menus=self.menus,
                env=self.env,
                busy=busy,
                start=self.runner.start,
            ),
        )
        widgets = ScopeWidgets(
            self.mutant_panel, self.compiler_view, self.bench_view, self.tabs, self.run_box
        )
        divergence = DivergenceActions(
            self.state,
            DivergenceSurfaces(
                panel=self.divergence,
                menu_action=self.menus.divergence,
                grid=self.grid,
                stepper=self.stepper,
                tabs=self.tabs,
                left_scroll=self.left_scroll,
                log=self.summary.appendPlainText,
                status=self.status_line.setText,
                select_row=self.select_row,
                run_kernel=self.run_kernel,
            ),
        )
        return kernels, KernelScope(self.state, self.env, widgets, busy), divergence

    def _file_surfaces(self) -> FileSurfaces:
        return FileSurfaces(
            parent=self,
            status=self.status_line.setText,
            log=self.summary.appendPlainText,
            add_to_verdict=self.run_box.add_to_verdict,
            settings=self.settings,
            recent_menu=self.menus.recent,
            input_panel=self.input_panel,
            show_bench=lambda: self.tabs.setCurrentWidget(self.bench_view),
            load_kernel=lambda text: self.kernels.load(text),
            busy=lambda: self.runner.busy,
            closed=self._is_closed,
        )

    # ================================================================ state -> views
    def _show_title(self, *_: Any) -> None:
        self.setWindowTitle(self.state.title)

    def _on_kernel(self, _event: Event) -> None:
        """Another kernel: its run is gone (the state dropped it); the verdict, log and kill
        matrix follow the record (:class:`RecordViews`)."""
        self.refresh_views()
        self._update_run_enabled()

    def _on_problem(self, event: Event) -> None:
        self._update_run_enabled()
        if event.value is None:
            self.status_line.setText("Invalid input: " + str(self.input_panel.error or ""))
            return
        self.analyze()

    def _on_mutant(self, event: Event) -> None:
        mutant = event.value
        self.mutant_panel.set_current(mutant)
        self.kill_view.highlight_mutant(mutant)
        self.state.mark_dirty()
        self.analyze()
        self._show_mutant_effect()

    def _on_batch_invariant(self, event: Event) -> None:
        """Run kernel's launch mode changed (the control, the menu or an opened session): both
        show it, and the evidence of the other mode is stale (:class:`RecordViews`)."""
        for control in (self.batch_invariant, self.menus.batch_invariant):
            if control.isChecked() != event.value:
                control.blockSignals(True)
                control.setChecked(event.value)
                control.blockSignals(False)
        self.state.mark_dirty()
        self.refresh_views()
        self.status_line.setText(f"Run kernel: the {launch.mode_name(event.value)} launch.")

    def _show_mutant_effect(self) -> None:
        state = self.state
        errors = state.analysis.errors if state.analysis_current else None
        self.mutant_panel.set_effect(mutant_effect(state.problem, state.mutant, errors))

    def _on_analysis(self, event: Event) -> None:
        analysis = event.value
        self.refresh_views()
        self._show_mutant_effect()
        problem = analysis.problem
        tail = f", mutant {analysis.mutant}" if analysis.mutant else ""
        self.status_line.setText(
            f"Analysed {problem.rows} × {problem.width} {problem.dtype}{tail}."
        )

    def refresh_views(self) -> None:
        """Grid, stepper and row table from the held analysis (:class:`EvidenceViews`)."""
        self.views.refresh()

    def _on_kernel_run(self, event: Event) -> None:
        run = event.value
        self.refresh_views()
        launched = getattr(run, "launch", None)
        tail = f" ({launched.words()})" if launched is not None else ""
        self.status_line.setText(report.kernel_run_status(run).removesuffix(".") + tail + ".")
        self.summary.appendPlainText(report.kernel_run_line(run) + tail)

    def _on_bench(self, event: Event) -> None:
        bench = event.value
        self.bench_view.set_records(list(bench["rows"]), bench.get("source"))

    def refresh_history(self, *_: Any) -> None:
        """Show the held session's receipt history (first pass + counterexamples)."""
        session = self.state.session
        if session is None:
            self.history_view.set_history([])
            return
        self.history_view.set_history(list(session.receipt_history), session.receipt_json)

    # ================================================================ user actions
    def select_row(self, row: int) -> None:
        """Select a row everywhere: grid highlight, stepper, table."""
        self.views.select_row(row)

    def _on_step(self, _index: int) -> None:
        self.grid.set_span(self.stepper.active_lanes())

    def analyze(self) -> None:
        """Scalar reference + lane model for the current problem and mutant."""
        self.analysis_runs.analyze()

    def _update_run_enabled(self) -> None:
        idle = not self.runner.busy
        valid = self.state.problem is not None
        menus = self.menus
        self.run_check_button.setEnabled(idle and valid)
        menus.check.setEnabled(idle and valid)
        self.bench_button.setEnabled(idle and self.bench_view.available)
        self.bench_view.open_button.setEnabled(idle)
        menus.open_bench.setEnabled(idle)
        can_kernel = idle and valid and self.env["available"]
        self.run_kernel_button.setEnabled(can_kernel)
        menus.kernel.setEnabled(can_kernel)
        menus.batch_invariant.setEnabled(self.env["available"] and not self.state.user_kernel)
        self.cancel_button.setEnabled(not idle)
        menus.cancel.setEnabled(not idle)
        self.kernels.update_enabled(idle)
        self.divergence_actions.update_enabled(idle)
        self.mutation_actions.set_enabled(idle)

    def run_check(self) -> bool:
        """Start the whole proof on the worker, the bundled kernel in the launch mode chosen
        (Batch-invariant: ``check --batch-invariant``); False if it cannot start now."""
        problem = self.state.problem
        if problem is None or self.runner.busy or not self.kernels.reread():
            return False
        from inspector.check.pipeline import CheckConfig

        with_kernel = self.kernel_in_check.isChecked()
        config = CheckConfig(
            run_kernel=with_kernel,
            kernel_spec=self.state.kernel,
            # The launch mode is the bundled kernel's (a user's kernel launches itself).
            batch_invariant=with_kernel
            and self.state.batch_invariant
            and not self.state.user_kernel,
        )
        # The log is replaced when the new result arrives, not now: a run that fails or is
        # cancelled leaves the earlier check's log in place (the failure is appended to it).
        job = heavy(tasks.check_job, problem, config)
        return self.runner.start("check", job, self.apply_check_result)

    def run_kernel(self) -> bool:
        """The loaded kernel once on the worker: the bundled one with the switched-on mutant,
        in the launch mode chosen (Batch-invariant), or the user's in its child process."""
        state = self.state
        if state.problem is None or state.reference is None or self.runner.busy:
            return False
        references = (state.reference.y, state.reference.y_exact)
        if state.user_kernel:
            if not self.kernels.reread():
                return False
            job = tasks.user_kernel_job(state.problem, state.kernel, *references)
        else:
            job = heavy(
                tasks.kernel_job,
                state.problem,
                state.mutant,
                *references,
                state.batch_invariant,
            )
        return self.runner.start("kernel", job, self._show_kernel_run)

    def run_benchmark(self) -> bool:
        """The device benchmark on the worker (CUDA only: the button is disabled otherwise)."""
        if self.runner.busy or not self.bench_view.available:
            return False
        self.tabs.setCurrentWidget(self.bench_view)
        view = self.bench_view
        job = heavy(
            tasks.bench_job, view.shape_combo.currentText(), [view.dtype_combo.currentText()]
        )
        return self.runner.start("bench", job, self._show_bench)

    def request_compile(self, target: str) -> bool:
        """Compiler output for this dtype and width on ``target`` ("": the device), cached."""
        problem = self.state.problem
        if problem is None or self.runner.busy:
            return False
        key = (problem.dtype, problem.width, target or None)
        if self.state.show_cached_compile(key):
            return True
        return self.runner.start("compile", heavy(tasks.compile_job, *key), self._show_compile)

    # ================================================================ job results
    def _on_busy(self, busy: bool) -> None:
        self._update_run_enabled()
        if not busy:
            self.analysis_runs.on_idle()

    def _on_finished(self, name: str) -> None:
        state = self._job_state.pop(name, "finished")
        self.run_box.show_idle(f"{name} {state} at {report.clock()}")

    def _on_progress(self, name: str, step: int, total: int, label: str) -> None:
        self.run_box.show_progress(name, step, total)
        self.status_line.setText(f"{name}: {label}")

    def _on_failed(self, name: str, exc: BaseException) -> None:
        message = tasks.failure_text(exc)
        cancelled = isinstance(exc, tasks.Cancelled)
        self._job_state[name] = "cancelled" if cancelled else "failed"
        self.divergence_actions.job_failed(name)
        if self.kernels.job_failed(name, exc):
            return
        if cancelled:
            self.status_line.setText(f"{name}: cancelled.")
            if name == "check":
                self.verdict.setText(evidence.interrupted_verdict(self.state, "cancelled"))
            return
        if "OutOfMemoryError" in message or "out of memory" in message.lower():
            message += " (the device ran out of memory: try fewer rows or a narrower width)"
        self.status_line.setText(f"{name} failed: {message}")
        self.summary.appendPlainText(f"{name} failed: {message}\n{self.runner.last_details}")
        self.verdict.setText(
            evidence.interrupted_verdict(self.state, f"failed: {message}")
            if name == "check"
            else report.failed_verdict_html(name, message)
        )

    def _on_result(self, name: str, _result: Any) -> None:
        # Each start names its own handler (JobRunner.start); here only the progress bar's word.
        self._job_state[name] = "done"

    def _show_kernel_run(self, run: Any) -> None:
        if not self.state.set_kernel_run(run):
            self.status_line.setText(
                "kernel: result is for an older input or launch mode; ignored."
            )

    def _show_bench(self, bench: dict[str, Any]) -> None:
        self.state.set_bench(bench)
        self.status_line.setText(f"bench: {len(bench['rows'])} measurements.")
        self.state.mark_dirty()

    def _show_compile(self, result: dict[str, Any]) -> None:
        self.state.remember_compile(result)
        self.status_line.setText("compile: done.")

    def apply_check_result(self, result: Any) -> None:
        """Show a check's result (a job's, or the screenshot's synchronous one)."""
        if not self.state.set_check_result(result):
            self.status_line.setText("check: result is for an older input; ignored.")
            return
        self.status_line.setText(report.check_status_line(result))
        self.state.mark_dirty()

    # ================================================================ shutdown
    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.files.confirm_discard():
            event.ignore()
            return
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> None:
        """Stop the play timer and autosave, cancel the worker and wait for its thread."""
        if self._closed:
            return
        self._closed = True
        self.stepper.play(False)
        self.files.stop()
        # The runner also drops anything late (generation check); disconnecting makes sure a
        # result can never reach a half-destroyed window.
        for signal, slot in (
            (self.runner.progress, self._on_progress),
            (self.runner.result, self._on_result),
            (self.runner.failed, self._on_failed),
        ):
            with contextlib.suppress(RuntimeError, TypeError):
                signal.disconnect(slot)
        self.runner.shutdown()
