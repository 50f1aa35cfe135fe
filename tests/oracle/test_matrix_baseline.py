"""The kill matrix against an implementation whose faithful run already fails.

A mutant is killed only by a fixture the faithful implementation *passes* and the mutant
*fails* (judged: neither "not judged" nor "out of domain"); a fixture the faithful run fails,
could not judge, or declared out of its domain never kills anything, and a baseline failure
fails the matrix even when every mutant is killed. The implementation below is the lane model
except where each case says, so every outcome is known by construction.
"""

from __future__ import annotations

from oracle import fixtures
from oracle.matrix import (
    NOT_JUDGED,
    OUT_OF_DOMAIN,
    NotJudged,
    OutOfDomain,
    RunOutput,
    kill_matrix,
    model_implementation,
)

FAILS = "hand_checkable"  # the faithful run is 1% off here
GOOD = "asymmetric_weights"  # the faithful run passes here
UNJUDGED = "multiple_rows"  # the faithful run cannot be judged here
OUTSIDE = "non_power_of_two_tail"  # outside the faithful run's declared domain
REJECTED = "width_mismatch"  # malformed: only the validator sees it

MUTANTS = (
    "fails_everywhere",
    "fails_where_the_baseline_fails",
    "fails_where_the_baseline_has_no_verdict",
    "not_judged_where_the_baseline_passes",
    "out_of_domain_where_the_baseline_passes",
)


def _implementation(problem, poison, mutant):
    """The lane model, broken by name: a run that fails returns twice the right output."""
    right = model_implementation(problem, poison, None)
    wrong = RunOutput(y=right.y * 2.0)
    name = problem.name
    if mutant is None:
        if name == UNJUDGED:
            raise NotJudged("this machine's interpreter cannot run it")
        if name == OUTSIDE:
            raise OutOfDomain("widths with a tail are outside the declared domain")
        return RunOutput(y=right.y * 1.01) if name == FAILS else right
    if mutant == "not_judged_where_the_baseline_passes" and name == GOOD:
        raise NotJudged("the mutant's run could not be judged")
    if mutant == "out_of_domain_where_the_baseline_passes" and name == GOOD:
        raise OutOfDomain("the mutant's run declared it outside")
    failing = {
        "fails_everywhere": {FAILS, GOOD, UNJUDGED, OUTSIDE},
        "fails_where_the_baseline_fails": {FAILS},
        "fails_where_the_baseline_has_no_verdict": {UNJUDGED, OUTSIDE},
    }.get(mutant, set())
    return wrong if name in failing else right


def _fixtures(*names: str):
    return [fixtures.get(name) for name in names]


def _matrix(mutants=MUTANTS, names=(FAILS, GOOD, UNJUDGED, OUTSIDE, REJECTED)):
    return kill_matrix(_implementation, mutants, _fixtures(*names))


def test_the_scenario_is_as_built() -> None:
    """Each fixture's baseline outcome is the one the implementation was built to give."""
    result = _matrix()
    actual = {o.fixture: o.actual for o in result.baseline}
    assert actual == {
        FAILS: "fail",
        GOOD: "pass",
        UNJUDGED: NOT_JUDGED,
        OUTSIDE: OUT_OF_DOMAIN,
        REJECTED: "reject:x",
    }
    failed = {o.fixture for o in result.cells["fails_everywhere"] if o.actual == "fail"}
    assert failed == {FAILS, GOOD, UNJUDGED, OUTSIDE}


def test_a_fixture_the_faithful_run_fails_never_kills() -> None:
    result = _matrix()
    assert result.killed_by("fails_everywhere") == (GOOD,)
    assert result.killed_by("fails_where_the_baseline_fails") == ()
    assert "fails_where_the_baseline_fails" in result.survivors
    for mutant in MUTANTS:
        assert FAILS not in result.killed_by(mutant), mutant


def test_a_fixture_without_a_baseline_verdict_never_kills() -> None:
    result = _matrix()
    assert result.killed_by("fails_where_the_baseline_has_no_verdict") == ()
    for mutant in MUTANTS:
        assert not {UNJUDGED, OUTSIDE} & set(result.killed_by(mutant)), mutant
    assert [o.fixture for o in result.not_judged] == [UNJUDGED]
    assert [o.fixture for o in result.out_of_domain] == [OUTSIDE]


def test_a_mutant_run_without_a_verdict_is_no_kill() -> None:
    result = _matrix()
    assert result.killed_by("not_judged_where_the_baseline_passes") == ()
    assert result.killed_by("out_of_domain_where_the_baseline_passes") == ()
    assert result.survivors == MUTANTS[1:]
    assert not result.passed
    lines = result.summary_lines()
    assert lines[0] == f"model mutant fails_everywhere: killed by {GOOD}"
    assert all(line.endswith("SURVIVED") for line in lines[1:])


def test_a_baseline_failure_fails_the_matrix_even_with_every_mutant_killed() -> None:
    result = _matrix(mutants=("fails_everywhere",))
    assert result.survivors == ()
    assert result.baseline_failures == (FAILS,)
    assert not result.passed


def test_without_the_failing_fixture_the_same_matrix_passes() -> None:
    """The control: neither a fixture the faithful run could not judge nor one outside its
    domain is a baseline failure, and every mutant killed passes the matrix."""
    result = _matrix(mutants=("fails_everywhere",), names=(GOOD, UNJUDGED, OUTSIDE, REJECTED))
    assert result.baseline_failures == ()
    assert result.killed_by("fails_everywhere") == (GOOD,)
    assert result.passed
