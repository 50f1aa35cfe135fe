"""The main window: lays the widgets out, wires them, and routes worker results.

It stays thin: validation is the oracle's, view data comes from ``widgets.data``, long work runs
as Qt-free jobs on the :class:`~inspector.worker.JobRunner`, files go through ``session`` /
``receipt``, and every dialog through ``widgets.dialogs``.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from inspector import worker as jobs
from inspector.models import kill_matrix_from_table
from inspector import viewdata as data
from inspector.widgets import dialogs
from inspector.widgets.bench_view import INTERPRETER_NOTE, BenchView
from inspector.widgets.compiler_view import CompilerView
from inspector.widgets.history_view import HistoryView
from inspector.widgets.input_panel import InputPanel
from inspector.widgets.lane_grid import LaneGrid
from inspector.widgets.mutants import KERNEL_ONLY, MutantPanel
from inspector.widgets.stepper import ReductionStepper
from inspector.widgets.tables import KillMatrixView, RowTable
from oracle import scalar, tiled
from oracle.compare import max_errors
from oracle.mutants import MODEL_MUTANTS
from oracle.scalar import ScalarResult
from oracle.spec import Problem
from oracle.tiled import TiledResult

#: Problems up to this many elements (rows * row_stride) are analysed on the GUI thread
#: (a few ms); bigger ones go to the worker so the window never freezes.
SYNC_ELEMENTS = 1 << 16
MAX_RECENT = 8
AUTOSAVE_MS = 60_000
DEMO_FIXTURE = "padded_row_stride"


@functools.lru_cache(maxsize=1)
def kernel_environment() -> dict[str, Any]:
    """Mode, device and versions of the kernel floor (imported once, on the GUI thread, so a
    later run never stalls the window on torch's import)."""
    try:
        import kernels

        return {
            "available": True,
            "mode": kernels.MODE,
            "reason": getattr(kernels, "MODE_REASON", ""),
            "device": kernels.device_description(),
            "versions": dict(kernels.versions()),
        }
    except Exception as exc:  # the window still works on the oracle alone
        return {
            "available": False,
            "mode": "unavailable",
            "reason": f"{type(exc).__name__}: {exc}",
            "device": "no kernel floor",
            "versions": {},
        }


def _bench_available() -> tuple[bool, str]:
    env = kernel_environment()
    if env["mode"] != "compiled":
        return False, INTERPRETER_NOTE
    try:
        import kernels.bench  # noqa: F401
    except Exception as exc:
        return False, f"benchmark harness unavailable: {exc}"
    return True, env["device"]


class InspectorWindow(QMainWindow):
    """RMSNorm Kernel Inspector main window."""

    def __init__(
        self,
        *,
        demo: bool = True,
        settings: QSettings | None = None,
        autosave_dir: str | None = None,
        autosave_ms: int = AUTOSAVE_MS,
    ) -> None:
        super().__init__()
        self.setObjectName("inspector_window")
        self.setWindowTitle("RMSNorm Kernel Inspector")
        self.resize(1500, 940)
        self.settings = settings or QSettings("rmsnorm-inspector", "inspector")
        self.runner = jobs.JobRunner(self)
        self.problem: Problem | None = None
        self.reference: ScalarResult | None = None
        self.tiled: TiledResult | None = None
        self._analysed_problem: Problem | None = None
        self._model_image: tuple[TiledResult, Any] | None = None
        self.kernel_outcome: jobs.KernelOutcome | None = None
        self.check_result: Any = None
        self.session_results: Any = None
        self.bench_results: dict[str, Any] | None = None
        self._model_errors: tuple[np.ndarray, np.ndarray] | None = None
        self.compile_cache: dict[tuple[str, int, str | None], dict[str, Any]] = {}
        self.session_path: str | None = None
        self.dirty = False
        self._pending_analysis = False
        self._analysis_scheduled = False
        self._bench_records: list[dict[str, Any]] = []
        self._closed = False
        self.autosave_dir = autosave_dir
        self._job_state: dict[str, str] = {}
        self.env = kernel_environment()

        self._build()
        self._wire()
        # Everything alive now (torch, triton, Qt wrappers) leaves the cyclic collector's
        # generations: a full collection triggered in the worker would otherwise walk it all
        # while holding the GIL and pause this thread for ~100 ms.
        gc.freeze()
        self._autosave_timer = QTimer(self)
        self._autosave_timer.setInterval(autosave_ms)
        self._autosave_timer.timeout.connect(self.autosave)
        if autosave_ms > 0:
            self._autosave_timer.start()
        if demo:
            self.input_panel.load_fixture(DEMO_FIXTURE)
            self.dirty = False
            self._update_title()

    # ================================================================ layout

    def _build(self) -> None:
        self.input_panel = InputPanel()
        self.mutant_panel = MutantPanel()
        self.grid = LaneGrid()
        self.stepper = ReductionStepper()
        self.row_table = RowTable()
        self.kill_view = KillMatrixView()
        self.compiler_view = CompilerView()
        self.bench_view = BenchView()
        self.history_view = HistoryView()
        self.summary = QPlainTextEdit(objectName="summary")
        self.summary.setReadOnly(True)

        self.run_check_button = QPushButton("Run check", objectName="run_check")
        self.run_check_button.setToolTip(
            "Oracle, fixture matrix and every mutant (and the real kernel if ticked), on the worker"
        )
        self.run_kernel_button = QPushButton("Run kernel", objectName="run_kernel")
        self.run_kernel_button.setToolTip(
            "The real kernel (with the switched-on mutant) on this input"
        )
        self.bench_button = QPushButton("Benchmark", objectName="benchmark")
        self.cancel_button = QPushButton("Cancel", objectName="cancel")
        self.cancel_button.setEnabled(False)
        self.kernel_in_check = QCheckBox("include the real kernel", objectName="kernel_in_check")
        self.kernel_in_check.setChecked(self.env["available"])
        self.kernel_in_check.setEnabled(self.env["available"])
        self.kernel_in_check.setToolTip(
            "Runs the kernel and its 7 mutants over the fixture matrix; under the Triton "
            "interpreter this takes a while"
        )
        self.progress = QProgressBar(objectName="progress")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setTextVisible(True)
        self.progress.setFormat("idle")
        self.verdict = QLabel("No check run yet.", objectName="verdict")
        self.verdict.setWordWrap(True)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)

        bench_ok, bench_reason = _bench_available()
        self.bench_button.setEnabled(bench_ok)
        if not bench_ok:
            self.bench_button.setText(f"Benchmark ({bench_reason})")
            self.bench_button.setToolTip(bench_reason)
        self.bench_view.set_available(bench_ok, bench_reason)
        self.run_kernel_button.setEnabled(self.env["available"])

        run_box = QGroupBox("Run")
        run_layout = QVBoxLayout(run_box)
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_check_button)
        buttons.addWidget(self.run_kernel_button)
        buttons.addWidget(self.cancel_button)
        run_layout.addLayout(buttons)
        run_layout.addWidget(self.kernel_in_check)
        run_layout.addWidget(self.bench_button)
        run_layout.addWidget(self.progress)
        run_layout.addWidget(self.verdict)

        input_box = QGroupBox("Input")
        QVBoxLayout(input_box).addWidget(self.input_panel)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.addWidget(input_box)
        left_layout.addWidget(self.mutant_panel)
        left_layout.addWidget(run_box)
        left_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidget(left)
        scroll.setWidgetResizable(True)
        scroll.setMinimumWidth(440)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        self.tabs = QTabWidget(objectName="views")
        self.tabs.addTab(self.stepper, "Reduction stepper")
        self.tabs.addTab(self.row_table, "Row intermediates")
        self.tabs.addTab(self.kill_view, "Kill matrix")
        self.tabs.addTab(self.compiler_view, "Compiler")
        self.tabs.addTab(self.bench_view, "Benchmark")
        self.tabs.addTab(self.summary, "Check log")
        self.tabs.addTab(self.history_view, "History")

        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.grid)
        right.addWidget(self.tabs)
        right.setStretchFactor(0, 2)
        right.setStretchFactor(1, 3)
        main = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(scroll)
        main.addWidget(right)
        main.setStretchFactor(1, 1)
        main.setSizes([450, 1050])
        self.setCentralWidget(main)

        self.status_line = QLabel("Ready.", objectName="status_line")
        self.device_label = QLabel(objectName="device_label")
        device = self.env["device"]
        if self.env["mode"] == "interpreter" and "interpreter" not in device.lower():
            device = f"CPU – Triton interpreter ({device})"
        self.device_label.setText(f"device: {device}")
        self.device_label.setToolTip(self.env.get("reason", ""))
        versions = dict(self.env["versions"])
        self.versions_label = QLabel(
            " · ".join(
                f"{k} {v}" for k, v in versions.items() if k in ("torch", "triton", "numpy")
            ),
            objectName="versions_label",
        )
        self.versions_label.setToolTip("\n".join(f"{k}: {v}" for k, v in versions.items()))
        self.statusBar().addWidget(self.status_line, 1)
        self.statusBar().addPermanentWidget(self.device_label)
        self.statusBar().addPermanentWidget(self.versions_label)
        self._build_menus()

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self.new_action = QAction("&New", self, shortcut=QKeySequence.StandardKey.New)
        self.open_action = QAction("&Open…", self, shortcut=QKeySequence.StandardKey.Open)
        self.save_action = QAction("&Save", self, shortcut=QKeySequence.StandardKey.Save)
        self.save_as_action = QAction("Save &As…", self, shortcut=QKeySequence.StandardKey.SaveAs)
        self.export_action = QAction("&Export receipts…", self)
        self.open_bench_action = QAction("Open &benchmark record…", self)
        self.quit_action = QAction("&Quit", self, shortcut=QKeySequence.StandardKey.Quit)
        self.recent_menu = file_menu.addMenu("Open &recent")
        for action in (self.new_action, self.open_action):
            file_menu.addAction(action)
        file_menu.addMenu(self.recent_menu)
        for action in (self.save_action, self.save_as_action):
            file_menu.addAction(action)
        file_menu.addSeparator()
        file_menu.addAction(self.open_bench_action)
        file_menu.addAction(self.export_action)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        run_menu = self.menuBar().addMenu("&Run")
        self.check_action = QAction("Run &check", self, shortcut="Ctrl+R")
        self.kernel_action = QAction("Run &kernel", self, shortcut="Ctrl+K")
        self.cancel_action = QAction("&Cancel", self, shortcut="Esc")
        for action in (self.check_action, self.kernel_action, self.cancel_action):
            run_menu.addAction(action)
        self._refresh_recent()

    def _wire(self) -> None:
        self.input_panel.problem_changed.connect(self._on_problem)
        self.input_panel.edited.connect(self._mark_dirty)
        self.mutant_panel.mutant_changed.connect(self._on_mutant)
        self.grid.row_selected.connect(self.select_row)
        self.row_table.row_selected.connect(self.select_row)
        self.stepper.step_changed.connect(self._on_step)
        self.compiler_view.compile_requested.connect(self.request_compile)
        self.run_check_button.clicked.connect(self.run_check)
        self.run_kernel_button.clicked.connect(self.run_kernel)
        self.bench_button.clicked.connect(self.run_benchmark)
        self.bench_view.open_button.clicked.connect(self.open_bench_record_dialog)
        self.open_bench_action.triggered.connect(self.open_bench_record_dialog)
        self.cancel_button.clicked.connect(self.runner.cancel)
        self.check_action.triggered.connect(self.run_check)
        self.kernel_action.triggered.connect(self.run_kernel)
        self.cancel_action.triggered.connect(self.runner.cancel)
        self.new_action.triggered.connect(self.new_session)
        self.open_action.triggered.connect(self.open_session_dialog)
        self.save_action.triggered.connect(self.save_session)
        self.save_as_action.triggered.connect(self.save_session_as)
        self.export_action.triggered.connect(self.export_receipts)
        self.quit_action.triggered.connect(self.close)
        self.runner.progress.connect(self._on_progress)
        self.runner.result.connect(self._on_result)
        self.runner.failed.connect(self._on_failed)
        self.runner.busy_changed.connect(self._on_busy)
        self.runner.finished.connect(self._on_finished)

    # ================================================================ problem & analysis

    def _on_problem(self, problem: Problem | None) -> None:
        self.problem = problem
        self._update_run_enabled()
        if problem is None:
            self.status_line.setText("Invalid input: " + str(self.input_panel.error or ""))
            return
        self.kernel_outcome = None
        self.check_result = None
        self.session_results = None
        self.verdict.setText("Input changed: run the check.")
        self.kill_view.set_matrices([])
        self.analyze()

    def analyze(self) -> None:
        """Scalar reference + lane model for the current problem and mutant."""
        problem = self.problem
        if problem is None:
            return
        mutant = self._model_mutant()
        if problem.rows * problem.row_stride <= SYNC_ELEMENTS:
            reference = scalar.reference(problem)
            model = tiled.model(problem, mutant=mutant)
            errors = max_errors(model.y, reference.y)
            self._apply_analysis(problem, mutant, reference, model, errors)
            return
        if self.runner.busy:
            self._pending_analysis = True
            self.status_line.setText("Large input: analysis waits for the running job.")
            return
        # Start it once the current GUI work is done (opening a session still fills the kill
        # matrix): Qt calls back into Python for every cell, and each callback would wait for
        # the GIL while the worker computes (0.6 s for a 48 x 15 table, measured).
        if not self._analysis_scheduled:
            self._analysis_scheduled = True
            QTimer.singleShot(0, self._start_scheduled_analysis)

    def _start_scheduled_analysis(self) -> None:
        self._analysis_scheduled = False
        problem = self.problem
        if self._closed or problem is None:
            return
        if self.runner.busy:
            self._pending_analysis = True
            return
        mutant = self._model_mutant()
        self.runner.start("analyze", jobs.analysis_job(problem, mutant, self.grid.lut))

    def _model_mutant(self) -> str | None:
        mutant = self.mutant_panel.current
        return mutant if mutant in MODEL_MUTANTS else None

    def _apply_analysis(
        self,
        problem: Problem,
        mutant: str | None,
        reference: ScalarResult,
        model: TiledResult,
        errors: tuple[np.ndarray, np.ndarray] | None = None,
        image: Any = None,
    ) -> None:
        if problem is not self.problem or mutant != self._model_mutant():
            return  # stale: the input or the mutant changed meanwhile
        self.reference = reference
        self.tiled = model
        self._analysed_problem = problem
        # The worker's grid image of this model (no kernel stores drawn in it).
        self._model_image = (model, image) if image is not None else None
        self._model_errors = errors if errors is not None else max_errors(model.y, reference.y)
        self._refresh_views()
        tail = f", mutant {mutant}" if mutant else ""
        self.status_line.setText(
            f"Analysed {problem.rows} × {problem.width} {problem.dtype}{tail}."
        )

    def _analysis_current(self) -> bool:
        """Whether the held analysis (reference + model) is of the current problem.

        A new large problem is analysed on the worker; until its result arrives the views keep
        showing the previous analysis and must not mix it with the new problem's shape.
        """
        problem, reference, model = self.problem, self.reference, self.tiled
        if problem is None or reference is None or model is None:
            return False
        return self._analysed_problem is problem

    def _refresh_views(self) -> None:
        problem, reference, model = self.problem, self.reference, self.tiled
        if problem is None or reference is None or model is None:
            return
        if not self._analysis_current():
            return  # the analysis of this problem is still running; it refreshes on arrival
        outcome = self.kernel_outcome
        kernel_oob = outcome.oob_addresses if outcome is not None else ()
        image = None
        if not kernel_oob and self._model_image is not None and self._model_image[0] is model:
            image = self._model_image[1]
        self.grid.set_data(problem, model, kernel_oob, image=image)
        row = min(self.grid.selected_row, problem.rows - 1)
        self.stepper.set_steps(data.reduction_steps(problem, model, row, reference), row)
        self.grid.set_span(self.stepper.active_lanes())
        note = "kernel columns: run the kernel or a check with the kernel"
        kernel_abs = kernel_rel = None
        if outcome is not None:
            kernel_abs, kernel_rel = outcome.row_max_abs, outcome.row_max_rel
            tag = f" (mutant {outcome.mutant})" if outcome.mutant else ""
            note = f"kernel columns: {outcome.mode} run on {outcome.device}{tag}"
        elif self.check_result is not None and self.check_result.kernel is not None:
            kernel_abs = self.check_result.kernel.row_max_abs
            kernel_rel = self.check_result.kernel.row_max_rel
            note = f"kernel columns: from the check ({self.check_result.kernel.mode})"
        elif self.session_results is not None and self.session_results.kernel_y is not None:
            kernel_abs, kernel_rel = max_errors(self.session_results.kernel_y, reference.y)
            note = f"kernel columns: from the session file ({self.session_results.mode})"
        if model.mutant:
            note = f"tiled columns show mutant {model.mutant}; " + note
        self.row_table.set_columns(
            data.row_columns(problem, reference, model, kernel_abs, kernel_rel, self._model_errors),
            note,
        )
        self.row_table.select_row(row)

    def select_row(self, row: int) -> None:
        """Select a row everywhere: grid highlight, stepper, table."""
        if not self._analysis_current():
            return
        row = int(np.clip(row, 0, self.problem.rows - 1))
        self.grid.select_row(row)
        self.stepper.set_steps(
            data.reduction_steps(self.problem, self.tiled, row, self.reference), row
        )
        self.grid.set_span(self.stepper.active_lanes())
        self.row_table.select_row(row)

    def _on_step(self, _index: int) -> None:
        self.grid.set_span(self.stepper.active_lanes())

    def _on_mutant(self, mutant: str | None) -> None:
        self.kill_view.highlight_mutant(mutant)
        self._mark_dirty()
        if mutant in KERNEL_ONLY:
            self.status_line.setText(
                f"{mutant} is a kernel-only mutant: press 'Run kernel' to see it."
            )
        self.analyze()

    # ================================================================ jobs

    def _update_run_enabled(self) -> None:
        idle = not self.runner.busy
        valid = self.problem is not None
        self.run_check_button.setEnabled(idle and valid)
        self.check_action.setEnabled(idle and valid)
        self.bench_button.setEnabled(idle and self.bench_view.available)
        self.bench_view.open_button.setEnabled(idle)
        self.open_bench_action.setEnabled(idle)
        can_kernel = idle and valid and self.env["available"]
        self.run_kernel_button.setEnabled(can_kernel)
        self.kernel_action.setEnabled(can_kernel)
        self.cancel_button.setEnabled(not idle)
        self.cancel_action.setEnabled(not idle)

    def run_check(self) -> bool:
        """Start the whole proof on the worker; False if it cannot start now."""
        if self.problem is None or self.runner.busy:
            return False
        from inspector.pipeline import CheckConfig

        config = CheckConfig(run_kernel=self.kernel_in_check.isChecked())
        # The log is replaced when the new result arrives, not now: a run that fails or is
        # cancelled leaves the earlier check's log in place (the failure is appended to it).
        return self.runner.start("check", jobs.check_job(self.problem, config))

    def run_kernel(self) -> bool:
        if self.problem is None or self.reference is None or self.runner.busy:
            return False
        mutant = self.mutant_panel.current
        return self.runner.start("kernel", jobs.kernel_job(self.problem, mutant, self.reference.y))

    def run_benchmark(self) -> bool:
        """The device benchmark on the worker (CUDA only: the button is disabled otherwise)."""
        if self.runner.busy or not self.bench_view.available:
            return False
        self.tabs.setCurrentWidget(self.bench_view)
        return self.runner.start(
            "bench",
            jobs.bench_job(
                self.bench_view.shape_combo.currentText(),
                [self.bench_view.dtype_combo.currentText()],
            ),
        )

    def open_bench_record_dialog(self) -> None:
        path = dialogs.choose_open_file(self, "Open benchmark record", "Benchmark results (*.json)")
        if path:
            self.open_bench_record(path)

    def open_bench_record(self, path: str) -> bool:
        """Show a ``results.json`` of ``python main.py bench`` (a record from a GPU machine).

        The file is read and checked by ``kernels.bench.read_json`` (schema, and every row's
        fields and numbers); on any error the view keeps what it showed and the error names the
        file and the field. The rows go into the session like a run of this machine, with the
        record's device, start time and file name as their source.
        """
        if self.runner.busy:
            return False
        try:
            from kernels.bench import read_json

            data = read_json(path)
        except Exception as exc:
            dialogs.show_error(self, "Cannot open benchmark record", str(exc))
            self.status_line.setText(f"open record failed: {exc}")
            return False
        environment = data.get("environment")
        device = environment.get("device") if isinstance(environment, dict) else None
        name = device.get("name") if isinstance(device, dict) else None
        started = data.get("started_utc")
        source = (
            f"{name if isinstance(name, str) else 'an unnamed device'}, "
            f"{started if isinstance(started, str) else 'an unknown time'} ({Path(path).name})"
        )
        rows = data["results"]
        self.bench_results = {
            "shapes": "record",
            "dtypes": sorted({r["dtype"] for r in rows}),
            "rows": rows,
            "source": source,
        }
        self.tabs.setCurrentWidget(self.bench_view)
        self.bench_view.set_records(rows, source)
        self.status_line.setText(f"bench record: {len(rows)} measurements on {source}.")
        self._mark_dirty()
        return True

    def request_compile(self, target: str) -> bool:
        if self.problem is None or self.runner.busy:
            return False
        key = (self.problem.dtype, self.problem.width, target or None)
        if key in self.compile_cache:
            self.compiler_view.set_info(self.compile_cache[key], "cached")
            return True
        return self.runner.start("compile", jobs.compile_job(*key))

    def _on_busy(self, busy: bool) -> None:
        self._update_run_enabled()
        if not busy and self._pending_analysis:
            self._pending_analysis = False
            QTimer.singleShot(0, self.analyze)

    def _on_finished(self, name: str) -> None:
        state = self._job_state.pop(name, "finished")
        self.progress.setRange(0, 1)
        self.progress.setValue(1 if state == "done" else 0)
        self.progress.setFormat(f"{name}: {state}")

    def _on_progress(self, name: str, step: int, total: int, label: str) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(step)
        self.progress.setFormat(f"{name}: %v / %m")
        self.status_line.setText(f"{name}: {label}")

    def _on_failed(self, name: str, message: str) -> None:
        self._job_state[name] = "cancelled" if message == "cancelled" else "failed"
        if message == "cancelled":
            self.status_line.setText(f"{name}: cancelled.")
            return
        if "OutOfMemoryError" in message or "out of memory" in message.lower():
            message += " (the device ran out of memory: try fewer rows or a narrower width)"
        self.status_line.setText(f"{name} failed: {message}")
        self.summary.appendPlainText(f"{name} failed: {message}\n{self.runner.last_details}")
        self.verdict.setText(f"<b style='color:rgb(239,83,80)'>{name} failed</b>: {message}")

    def _on_result(self, name: str, result: Any) -> None:
        self._job_state[name] = "done"
        if name == "analyze":
            self._apply_analysis(*result)
        elif name == "check":
            self._apply_check(result)
        elif name == "kernel":
            self._apply_kernel(result)
        elif name == "bench":
            self.bench_results = result
            self.bench_view.set_records(result["rows"])
            self.status_line.setText(f"bench: {len(result['rows'])} measurements.")
            self._mark_dirty()
        elif name == "compile":
            key = tuple(result.get("key", ()))
            self.compile_cache[key] = result  # type: ignore[index]
            self.compiler_view.set_info(result)
            self.status_line.setText("compile: done.")

    def _apply_check(self, result: Any) -> None:
        if result.problem is not self.problem:
            self.status_line.setText("check: result is for an older input; ignored.")
            return
        self.check_result = result
        matrices = [result.model_matrix]
        if result.kernel_matrix is not None:
            matrices.append(result.kernel_matrix)
        self.kill_view.set_matrices(matrices)
        self.kill_view.highlight_mutant(self.mutant_panel.current)
        if result.compile:
            self.compiler_view.set_info(result.compile, "from the check")
        self._refresh_views()
        color = "rgb(102,187,106)" if result.passed else "rgb(239,83,80)"
        state = "PASSED" if result.passed else "FAILED"
        headline = result.headline
        self.verdict.setText(
            f"<b style='color:{color}'>check {state}</b> ({result.mode}) · "
            f"max abs {headline.max_abs:.2e} · max rel {headline.max_rel:.2e}"
            + (
                f"<br>{len(result.failures)} failure(s): see the check log"
                if result.failures
                else ""
            )
        )
        lines = [
            f"check {state} — mode {result.mode}, device {result.device}",
            f"kernel: {result.kernel_note}",
            f"output (tiled vs scalar): {result.output.describe()}",
            f"intermediates: {result.intermediates.describe()}",
        ]
        if result.kernel is not None:
            lines.append(f"kernel vs scalar: {result.kernel.comparison.describe()}")
            lines.append(f"kernel vs torch float64: {result.kernel.torch_comparison.describe()}")
        traffic = result.traffic
        lines.append(
            f"traffic (modeled, not measured): read {traffic.bytes_read} B, written "
            f"{traffic.bytes_written} B, {traffic.reductions} reductions"
        )
        for matrix in matrices:
            lines += matrix.summary_lines()
        lines += [f"FAILURE: {f}" for f in result.failures]
        self.summary.setPlainText("\n".join(lines))
        self.status_line.setText(f"check {state.lower()}: {len(result.failures)} failure(s).")
        self._mark_dirty()

    def _apply_kernel(self, outcome: jobs.KernelOutcome) -> None:
        if outcome.problem is not self.problem:
            self.status_line.setText("kernel: result is for an older input; ignored.")
            return
        self.kernel_outcome = outcome
        self._refresh_views()
        state = "agrees" if outcome.comparison.passed else "DISAGREES"
        tag = f" mutant {outcome.mutant}" if outcome.mutant else ""
        self.status_line.setText(
            f"kernel{tag} ({outcome.mode}) {state} with the scalar reference; "
            f"{len(outcome.oob_addresses)} out-of-bounds store(s)."
        )
        self.summary.appendPlainText(
            f"kernel{tag} ({outcome.mode}, {outcome.device}, BLOCK {outcome.block}, "
            f"num_warps {outcome.num_warps}): {outcome.comparison.describe()}; "
            f"{len(outcome.oob_addresses)} out-of-bounds store(s)"
        )

    # ================================================================ files

    def _mark_dirty(self, *_: Any) -> None:
        self.dirty = True
        self._update_title()

    def _update_title(self) -> None:
        name = Path(self.session_path).name if self.session_path else "untitled"
        self.setWindowTitle(f"{name}{' *' if self.dirty else ''} — RMSNorm Kernel Inspector")

    def _confirm_discard(self) -> bool:
        if not self.dirty:
            return True
        answer = dialogs.ask_unsaved(self)
        if answer == "save":
            return self.save_session()
        if answer == "discard":
            self._discard_autosave(self.session_path)
            return True
        return False

    def new_session(self) -> None:
        if not self._confirm_discard():
            return
        self.session_path = None
        self._session = None  # a new inspection starts without the old receipt history
        self.refresh_history()
        self.mutant_panel.set_current(None)
        self.input_panel.load_fixture(DEMO_FIXTURE)
        self.dirty = False
        self._update_title()

    def open_session_dialog(self) -> None:
        if not self._confirm_discard():
            return
        path = dialogs.choose_open_file(self, "Open session", "Sessions (*.h5 *.hdf5)")
        if path:
            self.open_session(path)

    def open_session(
        self, path: str, *, interactive: bool = True, as_template: bool = False
    ) -> bool:
        """Load a session file; on any error say why and keep the current state.

        Args:
            path: the ``.h5`` file.
            interactive: False re-raises errors instead of showing them (scripted use).
            as_template: load it as an untitled inspection (the bundled demo), so Save never
                overwrites the original.

        Raises:
            Exception: only when ``interactive`` is False (the caller reports).
        """
        try:
            from inspector.session import load_session

            session = load_session(path)
            problem = session.problem()
        except Exception as exc:
            if not interactive:
                raise
            dialogs.show_error(self, "Cannot open session", f"{path}: {exc}")
            self.status_line.setText(f"open failed: {exc}")
            return False
        self.mutant_panel.set_current(None)
        self.input_panel.set_values(
            x=np.array(problem.x),
            weight=np.array(problem.weight),
            eps=repr(problem.eps),
            dtype=problem.dtype,
            row_stride=problem.row_stride,
            label=f"from {Path(path).name}",
            validated=problem,
        )
        on = [
            name
            for name, state in {**session.model_mutants, **session.kernel_mutants}.items()
            if state
        ]
        if on:
            self.mutant_panel.set_current(on[0])
        if session.compile_info:
            self.compiler_view.set_info(session.compile_info, "from the session")
        self._show_session_results(session)
        bench_rows = (session.bench_meta or {}).get("rows")
        if bench_rows:
            self.bench_results = {
                "shapes": session.bench_meta.get("shapes", ""),
                "dtypes": session.bench_meta.get("dtypes", []),
                "rows": list(bench_rows),
                "source": session.bench_meta.get("source"),
            }
            self.bench_view.set_records(list(bench_rows), session.bench_meta.get("source"))
        self._session = session
        self.refresh_history()
        self.session_path = None if as_template else path
        self.dirty = False
        if not as_template:
            self._add_recent(path)
        self._update_title()
        self.status_line.setText(f"Opened {path}.")
        return True

    def _show_session_results(self, session: Any) -> None:
        """Kill matrices, kernel errors and the verdict saved with a session."""
        results = session.results
        self.session_results = results
        if results is None:
            return
        matrices = [kill_matrix_from_table(results.model_matrix)]
        if results.kernel_matrix is not None:
            matrices.append(kill_matrix_from_table(results.kernel_matrix))
        self.kill_view.set_matrices(matrices)
        self._refresh_views()
        color = "rgb(102,187,106)" if results.passed else "rgb(239,83,80)"
        state = "PASSED" if results.passed else "FAILED"
        self.verdict.setText(
            f"<b style='color:{color}'>saved check {state}</b> ({results.mode}, "
            f"{results.device}) · run the check again to refresh"
        )
        self.summary.setPlainText(
            "\n".join(
                [f"saved check {state}: {results.kernel_note}"]
                + [line for m in matrices for line in m.summary_lines()]
                + [f"FAILURE: {f}" for f in results.failures]
            )
        )

    def current_session(self) -> Any:
        """A Session of what the window holds (problem, toggles, last check, compile info)."""
        from inspector.session import Session

        if self.check_result is not None and self.check_result.problem is self.problem:
            session = Session.from_check(self.check_result)
        elif self.problem is not None:
            session = Session.from_problem(self.problem)
        else:
            raise ValueError("the input is invalid: nothing to save")
        current = self.mutant_panel.current
        session.model_mutants = {name: name == current for name in MODEL_MUTANTS}
        kernel_names = list(session.kernel_mutants) or [*MODEL_MUTANTS, *KERNEL_ONLY]
        session.kernel_mutants = {name: name == current for name in kernel_names}
        if session.compile_info is None and self.compiler_view.info:
            session.compile_info = {k: v for k, v in self.compiler_view.info.items() if k != "key"}
        if self.bench_results is not None:
            rows = self.bench_results["rows"]
            session.bench_meta = {
                "shapes": self.bench_results["shapes"],
                "dtypes": self.bench_results["dtypes"],
                "rows": [{k: v for k, v in r.items() if k != "samples_us"} for r in rows],
            }
            if self.bench_results.get("source"):
                session.bench_meta["source"] = self.bench_results["source"]
            session.bench_samples = {
                f"{r['impl']}/{r['rows']}x{r['width']}/{r['dtype']}": np.asarray(
                    r["samples_us"], dtype=np.float64
                )
                for r in rows
                if r.get("samples_us")
            }
        previous = getattr(self, "_session", None)
        if previous is not None and previous.receipt_history:
            session.receipt_history = list(previous.receipt_history)
            session.receipt_json, session.receipt_csv = previous.receipt_json, previous.receipt_csv
        return session

    def save_session(self) -> bool:
        if not self.session_path:
            return self.save_session_as()
        return self._write_session(self.session_path)

    def save_session_as(self) -> bool:
        path = dialogs.choose_save_file(self, "Save session", "Sessions (*.h5)")
        if not path:
            return False
        if not path.endswith((".h5", ".hdf5")):
            path += ".h5"
        return self._write_session(path)

    def _write_session(self, path: str) -> bool:
        try:
            from inspector.session import save_session

            session = self.current_session()
            save_session(path, session)
        except Exception as exc:
            dialogs.show_error(self, "Cannot save session", f"{path}: {exc}")
            self.status_line.setText(f"save failed: {exc}")
            return False
        self._session = session
        previous_path = self.session_path
        self.session_path = path
        self.dirty = False
        self._add_recent(path)
        self._update_title()
        self.status_line.setText(f"Saved {path}.")
        self._discard_autosave(previous_path)
        self._discard_autosave(path)
        return True

    # ---------------------------------------------------------------- autosave & recovery

    def autosave(self) -> str | None:
        """Write unsaved work to the autosave file (never to the session file itself)."""
        if not self.dirty or self.problem is None or self._closed:
            return None
        try:
            from inspector.session import write_autosave

            target = write_autosave(self.current_session(), self.session_path, self.autosave_dir)
        except Exception as exc:  # autosave must never disturb the user's work
            self.status_line.setText(f"autosave failed: {exc}")
            return None
        self.status_line.setText(f"Autosaved to {target}.")
        return str(target)

    def _discard_autosave(self, path: str | None) -> None:
        try:
            from inspector.session import discard_autosave

            discard_autosave(path, self.autosave_dir)
        except Exception as exc:
            self.status_line.setText(f"could not remove the autosave: {exc}")

    def offer_recovery(self) -> bool:
        """After a crash: offer the autosave of this (or the untitled) session; True if opened."""
        from inspector.session import recovery_candidate

        candidate = recovery_candidate(self.session_path, self.autosave_dir)
        if candidate is None:
            return False
        if not dialogs.ask_recover(self, str(candidate)):
            self._discard_autosave(self.session_path)
            return False
        original = self.session_path
        if not self.open_session(str(candidate), as_template=True):
            return False
        self.session_path = original  # saving writes the real file, not the autosave
        self.dirty = True
        self._update_title()
        self.status_line.setText(f"Recovered unsaved work from {candidate}.")
        return True

    def export_receipts(self) -> bool:
        """Write receipt.json + receipt.csv for the last check and show the reparse result."""
        if self.check_result is None or self.check_result.problem is not self.problem:
            dialogs.show_error(self, "Export receipts", "Run the check on this input first.")
            return False
        folder = dialogs.choose_directory(self, "Export receipts into folder")
        if not folder:
            return False
        try:
            from inspector import receipt

            written = receipt.write_receipts(self.check_result, folder)
        except Exception as exc:
            dialogs.show_error(self, "Export receipts", f"{folder}: {exc}")
            self.status_line.setText(f"export failed: {exc}")
            return False
        check = written.get("export_check", {}) if isinstance(written, dict) else {}
        ok = isinstance(check, dict) and check.get("status") == "passed"
        problems = check.get("problems") if isinstance(check, dict) else None
        text = f"receipts written to {folder}; reparse of both files {'passed' if ok else 'FAILED'}"
        self.summary.appendPlainText(
            text + (f": {'; '.join(map(str, problems))}" if problems else "")
        )
        self.verdict.setText(self.verdict.text() + f"<br>{text}")
        self.status_line.setText(text)
        try:
            json_text = (Path(folder) / receipt.JSON_NAME).read_text(encoding="utf-8")
            csv_text = (Path(folder) / receipt.CSV_NAME).read_text(encoding="utf-8")
            session = getattr(self, "_session", None) or self.current_session()
            session.record_receipts(json_text, csv_text, passed=self.check_result.passed)
            self._session = session
            self.refresh_history()
            self._mark_dirty()
        except Exception as exc:  # the files are written; keeping them in the session is a bonus
            self.summary.appendPlainText(f"(receipts not kept in the session: {exc})")
        return ok

    def refresh_history(self) -> None:
        """Show the held session's receipt history (first pass + counterexamples)."""
        session = getattr(self, "_session", None)
        if session is None:
            self.history_view.set_history([])
            return
        self.history_view.set_history(list(session.receipt_history), session.receipt_json)

    def _recent(self) -> list[str]:
        value = self.settings.value("recent", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def _add_recent(self, path: str) -> None:
        recent = [p for p in self._recent() if p != path]
        recent.insert(0, path)
        self.settings.setValue("recent", recent[:MAX_RECENT])
        self._refresh_recent()

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        recent = self._recent()
        for path in recent:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda _=False, p=path: self._open_recent(p))
        self.recent_menu.setEnabled(bool(recent))

    def _open_recent(self, path: str) -> None:
        if self._confirm_discard():
            self.open_session(path)

    # ================================================================ shutdown

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self._confirm_discard():
            event.ignore()
            return
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> None:
        """Stop the play timer, cancel the worker and wait for its thread (no late results)."""
        if self._closed:
            return
        self._closed = True
        self.stepper.play(False)
        self._autosave_timer.stop()
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
