"""Run fixtures against an implementation, and every mutant against every fixture.

An *implementation* is any callable ``(problem, poison, mutant) -> RunOutput``: the tiled
model here, the real kernel when :mod:`inspector` plugs it in. A mutant is *killed* by a
fixture when that fixture passes on the faithful implementation and fails on the mutant. A
surviving mutant, or a fixture that fails on the faithful implementation, fails the matrix.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from oracle import scalar, tiled
from oracle.compare import TOLERANCES, compare
from oracle.fixtures import Fixture
from oracle.spec import Problem, ValidationError

#: Second poison for the invariance fixture: exact in float32, float16 and bfloat16.
ALTERNATE_POISON = 1536.0
#: The ``actual`` of a fixture this machine could not judge (:class:`NotJudged`).
NOT_JUDGED = "not judged"


#: The ``actual`` of a fixture outside the kernel's declared domain (:class:`OutOfDomain`).
OUT_OF_DOMAIN = "out of domain"
#: Outcomes that are neither a pass nor a failure.
NO_VERDICT = (NOT_JUDGED, OUT_OF_DOMAIN)


class OutOfDomain(Exception):
    """Raised by an implementation for a problem outside what it declares it supports (the
    message says which bound); the fixture is not run: neither a pass nor a failure."""


class NotJudged(Exception):
    """Raised by an implementation for a run this machine cannot judge (its interpreter gets an
    operation the run used wrong, say); the message says why. Neither a pass nor a failure."""


@dataclass(frozen=True)
class RunOutput:
    """What an implementation hands back: the output read with the declared stride.

    Attributes:
        y: (rows, width) float64.
        oob_writes: count of stores outside the valid elements (gaps, guards).
        oob_reads: count of loads from a guard or a row's padding (where it can be seen:
            a user kernel under the interpreter), with where in ``oob_read_detail``.
        variants: ``(label, y)`` of each configuration of an autotuned kernel, each judged like
            ``y`` (empty for a kernel of one configuration).
    """

    y: np.ndarray
    oob_writes: int = 0
    oob_reads: int = 0
    oob_read_detail: str = ""
    variants: tuple[tuple[str, np.ndarray], ...] = ()


Implementation = Callable[[Problem, float, "str | None"], RunOutput]


def model_implementation(problem: Problem, poison: float, mutant: str | None) -> RunOutput:
    """The tiled lane model as an implementation."""
    result = tiled.model(problem, poison=poison, mutant=mutant)
    return RunOutput(y=result.y, oob_writes=len(result.gap_writes))


@dataclass(frozen=True)
class FixtureOutcome:
    """One fixture's verdict on one implementation (and mutant).

    Attributes:
        expected: "pass" or "reject:<field>".
        actual: "pass", "reject:<field>", "accepted", "fail", "not judged" or "out of domain"
            (:data:`NO_VERDICT`: neither passed nor failed).
        passed: actual == expected.
        detail: why, in one line (the comparison, the rejected message...).
        max_abs, max_rel: output errors against the scalar reference (NaN when not run).
    """

    fixture: str
    category: str
    expected: str
    actual: str
    passed: bool
    detail: str
    max_abs: float = float("nan")
    max_rel: float = float("nan")


class ReferenceCache:
    """Scalar references per fixture, computed once per matrix."""

    def __init__(self) -> None:
        self._problems: dict[str, Problem] = {}
        self._references: dict[str, np.ndarray] = {}

    def problem(self, fixture: Fixture) -> Problem:
        if fixture.name not in self._problems:
            self._problems[fixture.name] = fixture.build()
        return self._problems[fixture.name]

    def reference(self, fixture: Fixture) -> np.ndarray:
        if fixture.name not in self._references:
            self._references[fixture.name] = scalar.reference(self.problem(fixture)).y
        return self._references[fixture.name]


def _judged(
    fixture: Fixture, actual: str, detail: str, cmp_abs: float = math.nan, cmp_rel: float = math.nan
) -> FixtureOutcome:
    """The fixture's outcome: ``actual`` judged against what the fixture expects."""
    return FixtureOutcome(
        fixture.name,
        fixture.category,
        fixture.expected,
        actual,
        actual == fixture.expected,
        detail,
        cmp_abs,
        cmp_rel,
    )


def _outcome(
    fixture: Fixture, failures: list[str], details: list[str], cmp_abs: float, cmp_rel: float
) -> FixtureOutcome:
    actual = "fail" if failures else "pass"
    detail = "; ".join(failures) if failures else "; ".join(details)
    return _judged(fixture, actual, detail, cmp_abs, cmp_rel)


def evaluate(
    fixture: Fixture,
    implementation: Implementation,
    mutant: str | None = None,
    *,
    poison: float = tiled.POISON,
    cache: ReferenceCache | None = None,
) -> FixtureOutcome:
    """Run one fixture against one implementation and judge it.

    Args:
        fixture: the case.
        implementation: callable (problem, poison, mutant) -> RunOutput.
        mutant: mutant name passed through to the implementation.
        poison: the poison value for masked lanes, padding and guards.
        cache: shared scalar references.

    Returns:
        The outcome; exceptions from the implementation become a "fail" with their message,
        except :class:`NotJudged` ("not judged") and :class:`OutOfDomain` ("out of domain").
    """
    cache = cache or ReferenceCache()
    if fixture.check == "rejection":
        try:
            cache.problem(fixture)
        except ValidationError as exc:
            return _judged(fixture, f"reject:{exc.field}", str(exc))
        return _judged(fixture, "accepted", "the validator accepted a malformed input")

    problem = cache.problem(fixture)
    expected_y = cache.reference(fixture)
    tolerance = TOLERANCES[problem.dtype]
    failures: list[str] = []
    details: list[str] = []
    try:
        first = implementation(problem, poison, mutant)
        comparison = compare(first.y, expected_y, tolerance)
        details.append(comparison.describe())
        if not comparison.passed:
            failures.append("output vs scalar reference: " + comparison.describe())
        for label, y in first.variants:
            variant = compare(y, expected_y, tolerance)
            if not variant.passed:
                failures.append(f"config {label}: output vs scalar reference: {variant.describe()}")
        if first.variants:
            details.append(f"every one of {len(first.variants)} configs judged")
        if first.oob_writes:
            failures.append(f"{first.oob_writes} out-of-bounds store(s)")
        if first.oob_reads:
            failures.append(f"{first.oob_reads} out-of-bounds read(s): {first.oob_read_detail}")
        if fixture.check == "row_isolation":
            changed_row = -np.asarray(problem.x[1]) * 3.0 + 0.5
            altered = problem.with_row(1, changed_row)
            second = implementation(altered, poison, mutant)
            if not np.array_equal(first.y[0], second.y[0], equal_nan=True):
                failures.append("changing row 1 changed row 0")
            second_cmp = compare(second.y, scalar.reference(altered).y, tolerance)
            if not second_cmp.passed:
                failures.append("altered problem vs reference: " + second_cmp.describe())
            details.append("row 0 unchanged when row 1 changed")
        elif fixture.check == "poison_invariance":
            second = implementation(problem, ALTERNATE_POISON, mutant)
            if not np.array_equal(first.y, second.y, equal_nan=True):
                failures.append(f"poison {poison:g} -> {ALTERNATE_POISON:g} changed the output")
            details.append(f"identical under poison {poison:g} and {ALTERNATE_POISON:g}")
    except NotJudged as exc:
        return _judged(fixture, NOT_JUDGED, f"not judged on this machine: {exc}")
    except OutOfDomain as exc:
        return _judged(fixture, OUT_OF_DOMAIN, f"out of the kernel's declared domain: {exc}")
    except Exception as exc:
        failures.append(f"implementation raised {type(exc).__name__}: {exc}")
        return _outcome(fixture, failures, details, float("nan"), float("nan"))
    return _outcome(fixture, failures, details, comparison.max_abs, comparison.max_rel)


@dataclass(frozen=True)
class KillMatrix:
    """Mutants x fixtures for one target ("model" or "kernel").

    Attributes:
        baseline: the faithful implementation's outcome on every fixture.
        cells: mutant -> outcomes on every fixture that runs an implementation.
    """

    target: str
    fixtures: tuple[str, ...]
    baseline: tuple[FixtureOutcome, ...]
    cells: dict[str, tuple[FixtureOutcome, ...]]

    def killed_by(self, mutant: str) -> tuple[str, ...]:
        good = {o.fixture for o in self.baseline if o.passed}
        return tuple(
            o.fixture
            for o in self.cells[mutant]
            if o.fixture in good and not o.passed and o.actual not in NO_VERDICT
        )

    @property
    def mutants(self) -> tuple[str, ...]:
        return tuple(self.cells)

    @property
    def survivors(self) -> tuple[str, ...]:
        return tuple(m for m in self.cells if not self.killed_by(m))

    @property
    def baseline_failures(self) -> tuple[str, ...]:
        """Fixtures the faithful implementation failed (those not judged, or out of its declared
        domain, are not failures)."""
        return tuple(
            o.fixture for o in self.baseline if not o.passed and o.actual not in NO_VERDICT
        )

    @property
    def not_judged(self) -> tuple[FixtureOutcome, ...]:
        """The faithful implementation's outcomes this machine could not judge."""
        return tuple(o for o in self.baseline if o.actual == NOT_JUDGED)

    @property
    def out_of_domain(self) -> tuple[FixtureOutcome, ...]:
        """The fixtures outside the implementation's declared domain (not run)."""
        return tuple(o for o in self.baseline if o.actual == OUT_OF_DOMAIN)

    @property
    def passed(self) -> bool:
        return not self.survivors and not self.baseline_failures

    def summary_lines(self) -> list[str]:
        lines = []
        for name in self.cells:
            killers = self.killed_by(name)
            state = f"killed by {', '.join(killers)}" if killers else "SURVIVED"
            lines.append(f"{self.target} mutant {name}: {state}")
        return lines


def kill_matrix_steps(
    implementation: Implementation,
    mutants: Sequence[str],
    fixtures: Iterable[Fixture],
    *,
    target: str = "model",
    cache: ReferenceCache | None = None,
) -> Iterator[tuple[int, int, str] | KillMatrix]:
    """Generator form: yields (step, total, label) before each evaluation, then the matrix.

    Use it where progress must be shown (a worker thread); :func:`kill_matrix` drains it.
    """
    fixture_list = tuple(fixtures)
    runnable = [f for f in fixture_list if f.check != "rejection"]
    cache = cache or ReferenceCache()
    total = len(fixture_list) + len(mutants) * len(runnable)
    step = 0
    baseline: list[FixtureOutcome] = []
    for fixture in fixture_list:
        yield (step, total, f"{target}: {fixture.name}")
        baseline.append(evaluate(fixture, implementation, None, cache=cache))
        step += 1
    cells: dict[str, tuple[FixtureOutcome, ...]] = {}
    for mutant in mutants:
        outcomes = []
        for fixture in runnable:
            yield (step, total, f"{target} mutant {mutant}: {fixture.name}")
            outcomes.append(evaluate(fixture, implementation, mutant, cache=cache))
            step += 1
        cells[mutant] = tuple(outcomes)
    yield KillMatrix(target, tuple(f.name for f in fixture_list), tuple(baseline), cells)


def kill_matrix(*args: Any, **kwargs: Any) -> KillMatrix:
    """Every mutant against every fixture: :func:`kill_matrix_steps` (the same arguments)
    drained, without the progress."""
    result = None
    for item in kill_matrix_steps(*args, **kwargs):
        result = item
    if not isinstance(result, KillMatrix):  # pragma: no cover - generator always ends with one
        raise RuntimeError("kill matrix produced no result")
    return result
