"""What one inspection holds, as plain data: what the window keeps and a session file stores.

:mod:`inspector.records.sessions.session` re-exports these classes and saves and loads them.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from oracle.compare import max_errors
from oracle.matrix import NO_VERDICT
from oracle.spec import Problem, make_problem

if TYPE_CHECKING:  # pragma: no cover - typing only
    from inspector.check.pipeline import CheckResult
    from oracle.matrix import KillMatrix


@dataclass(eq=False)
class KillTable:
    """A kill matrix as plain arrays (what a table view and the file need).

    Attributes:
        target: "model" or "kernel".
        mutants: row labels.
        fixtures: column labels, every fixture in matrix order.
        categories, expected, baseline_actual: per fixture.
        baseline_passed: (F,) bool, the faithful implementation behaved on that fixture.
        detected: (M, F) bool, the mutant failed that fixture (False on rejection fixtures,
            which never run an implementation, and where the mutant's run was not judged or out
            of domain: neither is a failure).
    """

    target: str
    mutants: tuple[str, ...]
    fixtures: tuple[str, ...]
    categories: tuple[str, ...]
    expected: tuple[str, ...]
    baseline_actual: tuple[str, ...]
    baseline_passed: np.ndarray
    detected: np.ndarray

    @classmethod
    def from_kill_matrix(cls, kill_matrix: KillMatrix) -> KillTable:
        """The plain arrays of an oracle kill matrix."""
        fixture_names = tuple(kill_matrix.fixtures)
        column = {name: i for i, name in enumerate(fixture_names)}
        detected = np.zeros((len(kill_matrix.mutants), len(fixture_names)), dtype=bool)
        for row, mutant in enumerate(kill_matrix.mutants):
            for outcome in kill_matrix.cells[mutant]:
                detected[row, column[outcome.fixture]] = (
                    not outcome.passed and outcome.actual not in NO_VERDICT
                )
        baseline = {o.fixture: o for o in kill_matrix.baseline}
        return cls(
            target=kill_matrix.target,
            mutants=tuple(kill_matrix.mutants),
            fixtures=fixture_names,
            categories=tuple(baseline[n].category for n in fixture_names),
            expected=tuple(baseline[n].expected for n in fixture_names),
            baseline_actual=tuple(baseline[n].actual for n in fixture_names),
            baseline_passed=np.array([baseline[n].passed for n in fixture_names], dtype=bool),
            detected=detected,
        )

    @property
    def killed(self) -> np.ndarray:
        """(M, F) bool: detected by a fixture the faithful implementation passes."""
        return self.detected & self.baseline_passed[None, :]

    def killed_by(self, mutant: str) -> tuple[str, ...]:
        """The fixtures that kill ``mutant``, in matrix order."""
        row = self.mutants.index(mutant)
        return tuple(n for n, hit in zip(self.fixtures, self.killed[row], strict=False) if hit)

    @property
    def survivors(self) -> tuple[str, ...]:
        """The mutants no fixture kills."""
        return tuple(m for m, row in zip(self.mutants, self.killed, strict=False) if not row.any())


@dataclass(eq=False)
class SessionResults:
    """Arrays derived from a :class:`~inspector.check.pipeline.CheckResult` (no oracle objects)."""

    mode: str
    device: str
    kernel_note: str
    errors_source: str
    passed: bool
    failures: tuple[str, ...]
    scalar_sum_squares: np.ndarray
    scalar_mean_square: np.ndarray
    scalar_rrms: np.ndarray
    scalar_y: np.ndarray
    tiled_sum_squares: np.ndarray
    tiled_mean_square: np.ndarray
    tiled_rrms: np.ndarray
    tiled_y: np.ndarray
    tiled_block: int
    poison: float
    row_max_abs: np.ndarray
    row_max_rel: np.ndarray
    model_matrix: KillTable
    kernel_matrix: KillTable | None = None
    kernel_y: np.ndarray | None = None
    kernel_oob_addresses: np.ndarray | None = None
    kernel_block: int | None = None
    kernel_num_warps: int | None = None
    # "passed", "failed" or "not judged" (CheckResult.verdict); a file written before the
    # attribute reads it from passed and failures.
    verdict: str = ""
    # The frame of kernel_oob_addresses: the output buffer's leading guard (output address =
    # buffer index - guard) and its row stride (0: the problem's; a user kernel's output has a
    # tile of guard between rows). None / 0 in a file written before the attributes.
    kernel_oob_guard: int | None = None
    kernel_oob_row_stride: int = 0
    # Whether the kernel run launched the batch-invariant layout (inspector.model.launch);
    # None in a file written before the attribute, whose kernel ran the default launch.
    kernel_batch_invariant: bool | None = None

    def __post_init__(self) -> None:
        if not self.verdict:
            self.verdict = "passed" if self.passed else "failed"

    @classmethod
    def from_check(cls, result: CheckResult) -> SessionResults:
        """The arrays of one check, copied (the check's objects are not kept)."""
        kernel = result.kernel
        if kernel is not None:
            row_max_abs, row_max_rel = result.row_max_abs, result.row_max_rel
        else:  # one pass over the outputs, not one per property (4M elements: ~0.13 s each)
            row_max_abs, row_max_rel = max_errors(result.tiled.y, result.scalar.y)
        return cls(
            mode=result.mode,
            device=result.device,
            kernel_note=result.kernel_note,
            errors_source=result.errors_source,
            passed=bool(result.passed),
            failures=tuple(result.failures),
            scalar_sum_squares=np.array(result.scalar.sum_squares, dtype=np.float64),
            scalar_mean_square=np.array(result.scalar.mean_square, dtype=np.float64),
            scalar_rrms=np.array(result.scalar.rrms, dtype=np.float64),
            scalar_y=np.array(result.scalar.y, dtype=np.float64),
            tiled_sum_squares=np.array(result.tiled.sum_squares, dtype=np.float32),
            tiled_mean_square=np.array(result.tiled.mean_square, dtype=np.float32),
            tiled_rrms=np.array(result.tiled.rrms, dtype=np.float32),
            tiled_y=np.array(result.tiled.y, dtype=np.float64),
            tiled_block=int(result.tiled.block),
            poison=float(result.tiled.poison),
            row_max_abs=np.array(row_max_abs, dtype=np.float64),
            row_max_rel=np.array(row_max_rel, dtype=np.float64),
            model_matrix=KillTable.from_kill_matrix(result.model_matrix),
            kernel_matrix=(
                KillTable.from_kill_matrix(result.kernel_matrix)
                if result.kernel_matrix is not None
                else None
            ),
            kernel_y=np.array(kernel.y, dtype=np.float64) if kernel is not None else None,
            kernel_oob_addresses=(
                np.array(kernel.stores.buffer, dtype=np.int64) if kernel is not None else None
            ),
            kernel_block=int(kernel.block) if kernel is not None else None,
            kernel_num_warps=int(kernel.num_warps) if kernel is not None else None,
            verdict=result.verdict,
            kernel_oob_guard=(
                kernel.stores.buffer[0] - kernel.stores.output[0]
                if kernel is not None and kernel.stores.buffer
                else None
            ),
            kernel_oob_row_stride=int(kernel.stores.row_stride) if kernel is not None else 0,
            kernel_batch_invariant=_launched_invariant(result),
        )


def _launched_invariant(result: Any) -> bool | None:
    """Whether a check's kernel run launched the batch-invariant layout (the check's own
    ``batch_invariant``, else its run's ``launch``); None when no kernel ran."""
    kernel = result.kernel
    if kernel is None:
        return None
    launch = getattr(kernel, "launch", None)
    return bool(getattr(result, "batch_invariant", False)) or bool(
        getattr(launch, "batch_invariant", False)
    )


@dataclass(eq=False)
class ReceiptRecord:
    """A receipt kept in the session's history (the first pass and every counterexample)."""

    kind: str
    created: str
    reason: str
    json_text: str
    csv_text: str


@dataclass(eq=False)
class Session:
    """Everything one inspection holds; what the window keeps and the file stores.

    Attributes:
        x: (rows, width) float64 values, exact in ``dtype``.
        weight: (width,) float64 values, exact in ``dtype``.
        eps, dtype, row_stride, name: the rest of the problem (row_stride None -> width).
        model_mutants, kernel_mutants: mutant name -> toggle state.
        results: arrays from the last check, or None.
        bench_samples: raw timing distributions (or any arrays), name -> array.
        bench_meta: JSON-able facts about the benchmark (protocol, shapes, units...).
        compile_info: JSON-able compiler facts and IR texts, or None.
        versions: tool and library versions.
        receipt_json, receipt_csv: the last receipts exactly as written, or None.
        receipt_history: the first passing receipt and every later counterexample.
        batch_invariant: Run kernel's launch mode as the window had it chosen (False in a file
            written before the attribute).
    """

    x: np.ndarray
    weight: np.ndarray
    eps: float = 1e-6
    dtype: str = "float32"
    row_stride: int | None = None
    name: str = "input"
    model_mutants: dict[str, bool] = field(default_factory=dict)
    kernel_mutants: dict[str, bool] = field(default_factory=dict)
    results: SessionResults | None = None
    bench_samples: dict[str, np.ndarray] = field(default_factory=dict)
    bench_meta: dict[str, Any] = field(default_factory=dict)
    compile_info: dict[str, Any] | None = None
    versions: dict[str, str] = field(default_factory=dict)
    receipt_json: str | None = None
    receipt_csv: str | None = None
    receipt_history: list[ReceiptRecord] = field(default_factory=list)
    batch_invariant: bool = False

    def __post_init__(self) -> None:
        self.x = np.array(self.x, dtype=np.float64)
        if self.x.ndim == 1:
            self.x = self.x.reshape(1, -1)
        self.weight = np.array(self.weight, dtype=np.float64)
        if self.row_stride is None and self.x.ndim == 2:
            self.row_stride = int(self.x.shape[1])

    @property
    def rows(self) -> int:
        """Rows of ``x`` (always 2-D after ``__post_init__``)."""
        return int(self.x.shape[0])

    @property
    def width(self) -> int:
        """Values per row of ``x``."""
        return int(self.x.shape[1])

    def problem(self) -> Problem:
        """The validated problem this session describes.

        Raises:
            ValidationError: a field is out of bounds.
        """
        # Validating 4M values takes ~0.1 s: reuse the last answer while nothing changed.
        key = (id(self.x), id(self.weight), self.eps, self.dtype, self.row_stride, self.name)
        cached = self.__dict__.get("_problem_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        problem = make_problem(
            self.x,
            self.weight,
            eps=self.eps,
            dtype=self.dtype,
            row_stride=self.row_stride,
            name=self.name,
        )
        self.__dict__["_problem_cache"] = (key, problem, self.x, self.weight)  # keeps ids valid
        return problem

    @classmethod
    def from_problem(cls, problem: Problem) -> Session:
        """A session of ``problem`` with every model mutant off and no results."""
        from oracle.mutants import MODEL_MUTANTS

        return cls(
            x=np.array(problem.x),
            weight=np.array(problem.weight),
            eps=float(problem.eps),
            dtype=problem.dtype,
            row_stride=int(problem.row_stride),
            name=problem.name,
            model_mutants=dict.fromkeys(MODEL_MUTANTS, False),
        )

    @classmethod
    def compose(
        cls,
        problem: Problem,
        check: CheckResult | None = None,
        *,
        toggles: tuple[str | None, tuple[str, ...]] | None = None,
        compile_info: dict[str, Any] | None = None,
        bench: tuple[dict[str, Any], dict[str, np.ndarray]] | None = None,
        previous: Session | None = None,
        batch_invariant: bool = False,
    ) -> Session:
        """The one place a session is put together: ``problem`` (or ``check``, its problem and
        arrays), the mutant toggles (``(switched-on mutant or None, the kernel's mutant names
        when no check listed them)``; None leaves every one off), compiler output and benchmark
        rows (meta, samples) when the check brought none, and ``previous``'s receipts (its
        history and current pair) carried over; ``batch_invariant`` is Run kernel's launch
        mode."""
        session = cls.from_check(check) if check is not None else cls.from_problem(problem)
        session.batch_invariant = bool(batch_invariant)
        if toggles is not None:
            from oracle.mutants import MODEL_MUTANTS

            mutant, kernel_names = toggles
            session.model_mutants = {name: name == mutant for name in MODEL_MUTANTS}
            names = list(session.kernel_mutants) or list(kernel_names)
            session.kernel_mutants = {name: name == mutant for name in names}
        if session.compile_info is None and compile_info is not None:
            session.compile_info = compile_info
        if bench is not None:
            session.bench_meta, session.bench_samples = bench
        if previous is not None and previous.receipt_history:
            session.receipt_history = list(previous.receipt_history)
            session.receipt_json, session.receipt_csv = previous.receipt_json, previous.receipt_csv
        return session

    @classmethod
    def from_check(cls, result: CheckResult) -> Session:
        """A session holding the problem and the arrays of one check."""
        session = cls.from_problem(result.problem)
        session.results = SessionResults.from_check(result)
        if result.kernel_matrix is not None:
            session.kernel_mutants = dict.fromkeys(result.kernel_matrix.mutants, False)
        session.compile_info = jsonable(result.compile) if result.compile else None
        session.versions = {str(k): str(v) for k, v in result.versions.items()}
        return session

    def record_receipts(
        self, json_text: str, csv_text: str, *, passed: bool, reason: str = ""
    ) -> None:
        """Keep these receipts as the current ones and in the history.

        The history keeps the first passing receipt and every later counterexample (a failed
        check); later passing receipts only replace the current pair.
        """
        self.receipt_json, self.receipt_csv = json_text, csv_text
        created = now()
        if not passed:
            self.receipt_history.append(
                ReceiptRecord(
                    "counterexample", created, reason or "check failed", json_text, csv_text
                )
            )
        elif not any(r.kind == "first_pass" for r in self.receipt_history):
            self.receipt_history.append(
                ReceiptRecord(
                    "first_pass", created, reason or "first passing receipt", json_text, csv_text
                )
            )


def now() -> str:
    """The current UTC time to the second, ISO 8601 (what files record as "created")."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (what does not serialize becomes its ``str``)."""
    return json.loads(json.dumps(value, default=str))
