"""The inspection's state, Qt-free: what the window shows, with plain change notification.

Modelled on napari's ``components`` (a model the Qt views observe, no Qt inside): each piece of
state has an :class:`EventEmitter` in :attr:`InspectionState.events`. The window connects its
renderers to them and sends every user action through the state's methods, so everything the
window decides (what is stale, which kernel errors the table shows, what a saved session holds,
the title) is tested without a window (tests/inspector_core/test_state.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from inspector.check import findings
from inspector.model import kernel_choice, kernel_view, launch
from inspector.model import record as shown
from inspector.model.analysis import Analysis
from inspector.model.bench_rows import bench_for_session, bench_from_session
from inspector.model.events import StateEvents
from inspector.model.kernel_view import KernelOutput
from inspector.model.viewdata import normalize_compile_info
from oracle.compare import max_errors
from oracle.mutants import MODEL_MUTANTS
from oracle.spec import Problem

if TYPE_CHECKING:
    from inspector.check.pipeline import CheckResult, KernelRun
    from kernels.sandbox.usercode import KernelSpec

APP_NAME = "RMSNorm Kernel Inspector"
#: The input a new inspection starts from.
DEMO_FIXTURE = "padded_row_stride"
#: Problems up to this many elements (rows * row_stride) are analysed on the GUI thread (a few
#: ms); bigger ones go to the worker so the window never freezes.
SYNC_ELEMENTS = 1 << 16
#: Mutants only the real kernel has (the lane model cannot store out of bounds).
KERNEL_ONLY_MUTANTS = ("unmasked_store",)
MAX_RECENT = 8

CompileKey = tuple[str, int, str | None]


@dataclass(frozen=True)
class KernelColumns:
    """The row table's kernel columns: per-row errors (None: not run) and where they are from."""

    row_max_abs: np.ndarray | None
    row_max_rel: np.ndarray | None
    note: str
    # Each row's |y - exact y| / derived bound (None: no bound known for this output).
    row_bound_ratio: np.ndarray | None = None
    # Each row's largest ulp distance across batch sizes, from the check's certificate.
    row_batch_ulp: np.ndarray | None = None


class InspectionState:
    """Everything one inspection holds, and the rules for changing it.

    Every setter emits its event (``events.<name>``) with the new value; ``session_path`` and
    ``dirty`` only when the value changes, ``session`` only when the held receipts change.
    """

    def __init__(self) -> None:
        self.events = StateEvents()
        self._kernel: KernelSpec | None = None
        self._inferred: tuple[Any, Any] = (None, None)  # (kernel y, its inferred rrms)
        self._problem: Problem | None = None
        self._mutant: str | None = None
        self._batch_invariant = False
        self._analysis: Analysis | None = None
        self._kernel_run: KernelRun | None = None
        self._check_result: CheckResult | None = None
        self._session_results: Any = None
        self._bench: dict[str, Any] | None = None
        self._compile_info: dict[str, Any] = {}
        self._compile_source = ""
        self.compile_cache: dict[CompileKey, dict[str, Any]] = {}
        self._session: Any = None
        self._receipts: tuple[Any, ...] = ((), None)
        self._session_path: str | None = None
        self._dirty = False
        #: When each result was taken (HH:MM:SS, local): the views' provenance lines.
        self.stamps: dict[str, str] = {}
        self.recorded_check: CheckResult | None = None  # the check whose receipts History holds
        self._input_ids: dict[int, tuple[Problem, str]] = {}
        self.saved_input_id = ""  # record.input_id of the input the session's check ran on
        self.compile_shape: tuple[str, int] | None = None  # (dtype, width) compiled for
        self.exported: tuple[Any, tuple[str, str]] | None = None  # (check, its written pair)

    def _hold(self, name: str, value: Any, fresh: bool) -> bool:
        """Hold ``value`` as the state ``name`` and emit its event, unless it is stale."""
        if not fresh:
            return False
        setattr(self, f"_{name}", value)
        self.stamps[name] = time.strftime("%H:%M:%S")
        getattr(self.events, name).emit(value)
        return True

    # ------------------------------------------------------------------ kernel

    @property
    def kernel(self) -> KernelSpec | None:
        """The user's kernel the views prove (``kernels.sandbox.usercode.KernelSpec``); None: the
        bundled kernel."""
        return self._kernel

    @property
    def user_kernel(self) -> bool:
        """Whether a user's kernel is loaded (the bundled kernel's mutants, layouts, compiler
        output and benchmark do not apply to it)."""
        return self._kernel is not None

    def set_kernel(self, spec: KernelSpec | None) -> None:
        """Prove ``spec`` from now on (None: the bundled kernel).

        The kernel run of the other kernel is dropped; its check stays as the record, stale
        ("of another kernel": the views say so and show none of its kernel output) and saved
        with the session tagged with the kernel it proved. A check saved in the session stays
        too: :meth:`kernel_columns` shows its kernel output only when it ran this kernel.
        """
        self._kernel = spec
        self._kernel_run = None
        self.events.kernel.emit(spec)

    def saved_results_current(self) -> bool:
        """Whether the session file's check ran the loaded kernel, in the launch mode chosen."""
        saved = self._session_results
        return (
            saved is not None
            and kernel_choice.saved_results_match(getattr(saved, "kernel_note", ""), self._kernel)
            and not launch.stale_reason(shown.saved_mode(saved), self._batch_invariant)
        )

    # ------------------------------------------------------------------ input

    @property
    def problem(self) -> Problem | None:
        """The validated input (None while the input is invalid)."""
        return self._problem

    def set_problem(self, problem: Problem | None) -> None:
        """Take the input panel's problem (None: invalid input, nothing can run).

        A new valid problem drops the kernel run, the check and the saved results of the old
        one (the ``problem`` event stands for all three); the analysis stays on screen until
        the new one arrives.
        """
        self._problem = problem
        if problem is not None:
            self._kernel_run = None
            self._check_result = None
            self._session_results = None
        self.events.problem.emit(problem)

    @property
    def mutant(self) -> str | None:
        """The switched-on mutant (model or kernel-only), or None."""
        return self._mutant

    def set_mutant(self, name: str | None) -> bool:
        """Switch ``name`` on (None: all off); False, and no event, when it already is.

        A Run kernel of another mutant is dropped: it is not the output of what is switched on.
        """
        if name == self._mutant:
            return False
        self._mutant = name
        if self._kernel_run is not None and self._kernel_run.mutant != name:
            self._kernel_run = None  # it showed another mutant's output: superseded
        self.events.mutant.emit(name)
        return True

    @property
    def batch_invariant(self) -> bool:
        """Whether Run kernel launches the batch-invariant layout (``launch.TOOLTIP``)."""
        return self._batch_invariant

    def set_batch_invariant(self, on: bool) -> bool:
        """Choose Run kernel's launch mode; False, and no event, when it already is chosen.

        Evidence of the other mode is stale as another kernel's is: a Run kernel of it is
        dropped, and the record says so (``record.Record.stale``).
        """
        if bool(on) == self._batch_invariant:
            return False
        self._batch_invariant = bool(on)
        if launch.stale_reason(launch.run_mode(self._kernel_run), self._batch_invariant):
            self._kernel_run = None
        self.events.batch_invariant.emit(self._batch_invariant)
        return True

    @property
    def model_mutant(self) -> str | None:
        """The mutant the lane model runs (kernel-only mutants leave the model faithful)."""
        return self._mutant if self._mutant in MODEL_MUTANTS else None

    @property
    def analyse_here(self) -> bool:
        """Whether the problem is small enough to analyse on the GUI thread."""
        problem = self._problem
        return problem is not None and problem.rows * problem.row_stride <= SYNC_ELEMENTS

    # ------------------------------------------------------------------ results

    @property
    def analysis(self) -> Analysis | None:
        """The last analysis that was current when it arrived (maybe of an earlier problem)."""
        return self._analysis

    @property
    def reference(self) -> Any:
        """The held analysis's scalar reference (maybe of an earlier problem)."""
        return self._analysis.reference if self._analysis is not None else None

    @property
    def tiled(self) -> Any:
        """The held analysis's lane model (maybe of an earlier problem)."""
        return self._analysis.model if self._analysis is not None else None

    @property
    def analysis_current(self) -> bool:
        """Whether the held analysis is of the current problem.

        A new large problem is analysed on the worker; until it arrives the views keep the
        previous analysis and must not mix it with the new problem's shape.
        """
        problem, analysis = self._problem, self._analysis
        return problem is not None and analysis is not None and analysis.problem is problem

    def set_analysis(self, analysis: Analysis) -> bool:
        """Hold ``analysis``; False (ignored) when the problem or the model mutant changed since."""
        fresh = analysis.problem is self._problem and analysis.mutant == self.model_mutant
        return self._hold("analysis", analysis, fresh)

    @property
    def kernel_run(self) -> KernelRun | None:
        """The last ``pipeline.KernelRun`` of Run kernel on this problem, or None."""
        return self._kernel_run

    def set_kernel_run(self, run: KernelRun) -> bool:
        """Hold a kernel run; False (ignored) when it ran on an older problem or in the other
        launch mode than the one chosen now."""
        fresh = run.problem is self._problem and not launch.stale_reason(
            launch.run_mode(run), self._batch_invariant
        )
        return self._hold("kernel_run", run, fresh)

    @property
    def check_result(self) -> CheckResult | None:
        """The last ``pipeline.CheckResult`` on this problem, or None."""
        return self._check_result

    @property
    def check_of_input(self) -> bool:
        """Whether there is a check of the current problem (of any kernel: it is saved with
        the session, tagged with the kernel it proved)."""
        return self._check_result is not None and self._check_result.problem is self._problem

    @property
    def check_current(self) -> bool:
        """Whether there is a check of the current problem and the loaded kernel."""
        return self.check_of_input and not self.record().stale  # type: ignore[union-attr]

    def input_id_of(self, problem: Problem) -> str:
        """``record.input_id`` of ``problem``, hashed once per problem."""
        held = self._input_ids.get(id(problem))
        if held is not None and held[0] is problem:
            return held[1]
        digest = shown.input_id(problem)
        if len(self._input_ids) > 8:
            self._input_ids.clear()
        self._input_ids[id(problem)] = (problem, digest)
        return digest

    @property
    def input_id(self) -> str:
        """The current input's identity ("" while it is invalid)."""
        return self.input_id_of(self._problem) if self._problem is not None else ""

    def check_receipt(self, result: Any) -> tuple[str, str] | None:
        """The (JSON, CSV) receipt of ``result``: the pair Export receipts wrote of it, else
        the one the check job built, else None."""
        if self.exported is not None and self.exported[0] is result:
            return self.exported[1]
        texts = getattr(result, "receipt_texts", None)
        return (texts[0], texts[1]) if texts else None

    def record(self) -> Any:
        """The one record the views draw their evidence from (``inspector.model.record``): the
        check of this inspection, else the session file's; None before either."""
        if self._check_result is not None:
            return shown.check_record(self, self._check_result)
        if self._session_results is not None:
            return shown.saved_record(self, self._session_results, shown.saved_provenance(self))
        return None

    def set_check_result(self, result: CheckResult) -> bool:
        """Hold a check (and its compiler output); False (ignored) for an older problem, or
        when its kernel is not the loaded one. An earlier Run kernel is dropped: the views show
        the newer evidence, the check's."""
        source = getattr(result, "kernel_source", None)
        same_kernel = (
            result.kernel is None
            or source is None
            or source == kernel_choice.kernel_source(self._kernel)
        )
        fresh = result.problem is self._problem and same_kernel
        if fresh:
            self._kernel_run = None  # the check is newer evidence than an earlier Run kernel
            self._session_results = None  # and than the check the session file saved
        if not self._hold("check_result", result, fresh):
            return False
        if result.compile:
            problem = result.problem
            self.set_compile_info(result.compile, "from the check", (problem.dtype, problem.width))
        return True

    @property
    def session_results(self) -> Any:
        """The check saved in the opened session file (``session.results``), or None."""
        return self._session_results

    def set_session_results(self, results: Any) -> None:
        """Hold the check an opened session file holds (None: it holds none), as of the
        current input (the session's, which the input panel took)."""
        self._session_results = results
        self.saved_input_id = self.input_id
        self.events.session_results.emit(results)

    def kernel_columns(self) -> KernelColumns:
        """The kernel's per-row errors for the row table: Run kernel's, else the check's, else
        the session file's when it ran the loaded kernel (recomputed against the held
        reference); the note names a user's kernel."""
        run, saved = self._kernel_run, self._session_results
        check = self._check_result if self.check_current else None
        if not self.saved_results_current():
            saved = None
        row_abs = row_rel = ratio = None
        where = "run the kernel or a check with the kernel"
        if run is not None:
            row_abs, row_rel = run.row_max_abs, run.row_max_rel
            ratio = findings.bound_ratio(run)
            tag = f" (mutant {run.mutant})" if run.mutant else ""
            where = f"{run.mode} run{' on ' + run.device if run.device else ''}{tag}"
        elif check is not None and check.kernel is not None:
            row_abs, row_rel = check.kernel.row_max_abs, check.kernel.row_max_rel
            ratio = findings.bound_ratio(check.kernel)
            where = f"from the check ({check.kernel.mode})"
        elif saved is not None and saved.kernel_y is not None and self.reference is not None:
            row_abs, row_rel = max_errors(saved.kernel_y, self.reference.y)
            where = f"from the session file ({saved.mode})"
        which = f" ({kernel_choice.kernel_name(self._kernel)})" if self._kernel else ""
        note = f"kernel columns{which}: {where}"
        model = self.tiled
        if model is not None and model.mutant:
            note = f"tiled columns show mutant {model.mutant}; " + note
        ulps = None
        if check is not None and self._problem is not None:
            ulps = findings.batch_ulps(check.batch_invariance, self._problem.rows)
        return KernelColumns(row_abs, row_rel, note, ratio, ulps)

    def kernel_inferred(self) -> Any:
        """``oracle.diagnose.inferred_rrms`` of :meth:`kernel_output` (None: no output), computed
        once per output when it did not come with it (a session file's)."""
        output = self.kernel_output()
        if output is None or not self.analysis_current:
            return None
        if output.inferred is not None:
            return output.inferred
        if self._inferred[0] is not output.y:
            self._inferred = (output.y, kernel_view.inferred_of(self._problem, output))
        return self._inferred[1]

    def kernel_output(self) -> KernelOutput | None:
        """The loaded kernel's output on this problem: Run kernel's, else the check's, else the
        session file's (when it ran this kernel); None when there is none."""
        run = self._kernel_run
        if run is None and self._check_result is not None and self.check_current:
            run = self._check_result.kernel
        if run is not None:
            tag = f" mutant {run.mutant}" if run.mutant else ""
            source = "Run kernel" if run is self._kernel_run else "the check"
            return KernelOutput(
                y=run.y,
                source=f"{source}{tag}, {run.mode}",
                stores=run.stores,
                inferred=run.inferred,
                rstd=run.rstd,
            )
        saved = self._session_results
        if saved is not None and saved.kernel_y is not None and self.saved_results_current():
            return KernelOutput(
                y=saved.kernel_y,
                source=f"the session file, {saved.mode}",
                stores=shown.saved_stores(saved, self._problem),
            )
        return None

    @property
    def bench(self) -> dict[str, Any] | None:
        """Benchmark rows: ``{"shapes", "dtypes", "rows", "source"?}`` (a run or a record)."""
        return self._bench

    def set_bench(self, bench: dict[str, Any]) -> None:
        """Hold the rows of a benchmark run or of an opened record."""
        self._bench = bench
        self.events.bench.emit(bench)

    @property
    def compile_info(self) -> dict[str, Any]:
        """The compiler output on show (``viewdata.normalize_compile_info``); {} before any."""
        return self._compile_info

    @property
    def compile_source(self) -> str:
        """Where the compiler output on show comes from ("from the check", "cached", ...)."""
        return self._compile_source

    def set_compile_info(
        self, info: Any, source: str = "", shape: tuple[str, int] | None = None
    ) -> None:
        """Show compiler output (any shape ``viewdata.normalize_compile_info`` takes) compiled
        for ``shape`` (dtype, width; None: not known)."""
        self._compile_info = normalize_compile_info(info)
        self._compile_source = source
        self.compile_shape = shape
        self.events.compile_info.emit(self._compile_info)

    def remember_compile(self, result: dict[str, Any]) -> None:
        """Cache a compile job's result under its ``key`` and show it."""
        key = tuple(result.get("key", ()))
        self.compile_cache[key] = result  # type: ignore[index]
        self.set_compile_info(result, "", (str(key[0]), int(key[1])) if len(key) >= 2 else None)

    def show_cached_compile(self, key: CompileKey) -> bool:
        """Show the cached compile of ``key``; False when there is none."""
        cached = self.compile_cache.get(key)
        if cached is None:
            return False
        self.set_compile_info(cached, "cached", (key[0], key[1]))
        return True

    # ------------------------------------------------------------------ file

    @property
    def session(self) -> Any:
        """The session last opened, saved or exported to (its receipt history lives on)."""
        return self._session

    def set_session(self, session: Any) -> None:
        """Hold ``session``; emits ``session`` when its receipts differ from the held ones."""
        receipts = (
            (tuple(session.receipt_history), session.receipt_json)
            if session is not None
            else ((), None)
        )
        changed = receipts != self._receipts
        self._session, self._receipts = session, receipts
        if changed:
            self.events.session.emit(session)

    @property
    def session_path(self) -> str | None:
        """The file Save writes (None: untitled)."""
        return self._session_path

    @session_path.setter
    def session_path(self, path: str | None) -> None:
        if path != self._session_path:
            self._session_path = path
            self.events.session_path.emit(path)

    @property
    def dirty(self) -> bool:
        """Whether there is work that no file holds yet."""
        return self._dirty

    @dirty.setter
    def dirty(self, value: bool) -> None:
        if bool(value) != self._dirty:
            self._dirty = bool(value)
            self.events.dirty.emit(self._dirty)

    def mark_dirty(self, *_: Any) -> None:
        """Something changed that no file holds yet (takes and ignores signal arguments)."""
        self.dirty = True

    @property
    def title(self) -> str:
        """The window title: file name (or untitled), a star for unsaved work, the app."""
        name = Path(self._session_path).name if self._session_path else "untitled"
        return f"{name}{' *' if self._dirty else ''} — {APP_NAME}"

    # ------------------------------------------------------------------ sessions

    def to_session(self) -> Any:
        """A ``Session`` of what the state holds: problem, toggles, check, compile, bench rows
        and the held session's receipts (``Session.compose``).

        Raises:
            ValueError: the input is invalid (there is nothing to save).
        """
        from inspector.records.sessions.session import Session

        check = self._check_result if self.check_of_input else None
        if check is None and self._problem is None:
            raise ValueError("the input is invalid: nothing to save")
        compile_info = None
        if self._compile_info:
            compile_info = {k: v for k, v in self._compile_info.items() if k != "key"}
        session = Session.compose(
            self._problem if check is None else check.problem,
            check,
            toggles=(self._mutant, (*MODEL_MUTANTS, *KERNEL_ONLY_MUTANTS)),
            compile_info=compile_info,
            bench=bench_for_session(self._bench) if self._bench is not None else None,
            previous=self._session,
            batch_invariant=self._batch_invariant,
        )
        # The check's own receipt is the session's current pair (its proof), whichever kernel
        # is loaded now; a reopened session's check is carried with its receipt unchanged.
        receipt = self.check_receipt(check) if check is not None else None
        if receipt is not None:
            session.receipt_json, session.receipt_csv = receipt
        saved = self._session_results
        if check is None and saved is not None and self.saved_input_id == self.input_id:
            session.results = saved
            if self._session is not None:
                session.versions = dict(self._session.versions)
                session.kernel_mutants = {
                    name: name == self._mutant for name in self._session.kernel_mutants
                } or session.kernel_mutants
        return session

    def restore_session(self, session: Any, path: str, *, as_template: bool = False) -> None:
        """After the input panel took an opened session's problem: the rest of the session.

        Args:
            session: the loaded ``Session``.
            path: its file.
            as_template: hold it untitled (the bundled demo), so Save never overwrites it.
        """
        on = [
            name
            for name, state in {**session.model_mutants, **session.kernel_mutants}.items()
            if state
        ]
        if on:
            self.set_mutant(on[0])
        self.set_batch_invariant(bool(getattr(session, "batch_invariant", False)))
        if session.compile_info:
            self.set_compile_info(
                session.compile_info, "from the session", (session.dtype, session.width)
            )
        # The session first: the saved verdict compares its receipt's kernel with the one here.
        self.set_session(session)
        self.set_session_results(session.results)
        bench = bench_from_session(session.bench_meta)
        if bench is not None:
            self.set_bench(bench)
        self.session_path = None if as_template else path
        self.dirty = False


def recent_with(recent: Sequence[str], path: str, limit: int = MAX_RECENT) -> list[str]:
    """The recent-files list with ``path`` first (once), at most ``limit`` long."""
    return [path, *(p for p in recent if p != path)][:limit]
