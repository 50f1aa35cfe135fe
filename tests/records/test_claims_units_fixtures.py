"""The claim checks verify makes (:mod:`inspector.records.receipts.claims`), called directly on
small crafted receipts: the fixtures against the matrix and the mutants' killers.

Each single condition of an ``and``/``or`` is held alone, each bound exactly at it and one
representable step past it (:func:`math.nextafter`), each list of problems at its limit and one
past it (the first ones listed, then " ..."), NaN and infinity, and each detail text whole: whole
receipts exercise each check on one side of each condition only. The four parts:
``test_claims_units.py`` (schema version of the content, row errors),
``test_claims_units_fixtures.py`` (fixtures, mutants' killers), ``test_claims_units_sections.py``
(sanitizer, batch invariance, error bound), ``test_claims_units_verdict.py`` (the sections that
fail the verdict, tolerances, passed flags, verdict and outcome).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from inspector.records.receipts import claims
from oracle import fixtures
from oracle.compare import TOLERANCES
from oracle.matrix import ReferenceCache

UP = math.inf


# --- fixture_checks ---------------------------------------------------------------------------


def _fixture(name: str, target: str = "model", **changes) -> dict:
    known = fixtures.BY_NAME[name]
    entry = {
        "target": target,
        "name": name,
        "expected": known.expected,
        "category": known.category,
        "actual": known.expected,
        "passed": True,
        "max_abs_error": 0.0,
        "max_rel_error": 0.0,
    }
    entry.update(changes)
    return entry


def _fixture_checks(*entries: dict) -> tuple:
    declared, within = claims.fixture_checks({"fixtures": list(entries)})
    assert declared.name == "fixtures as the matrix declares them"
    assert within.name == "fixture errors within the tolerance"
    return declared, within


def _limit(name: str) -> float:
    """atol + rtol * the largest finite magnitude of the fixture's reference, of its dtype."""
    known = fixtures.BY_NAME[name]
    cache = ReferenceCache()
    reference = cache.reference(known)
    tolerance = TOLERANCES[cache.problem(known).dtype]
    return tolerance.atol + tolerance.rtol * float(np.abs(reference[np.isfinite(reference)]).max())


_WITHIN_FIXTURES = "every fixture recorded as pass has its errors within its dtype's tolerance"


def test_fixtures_as_declared_with_errors_within_pass_with_both_details() -> None:
    declared, within = _fixture_checks(
        _fixture("hand_checkable"), _fixture("hand_checkable", "kernel"), _fixture("width_mismatch")
    )
    assert declared.ok
    assert declared.detail == (
        "3 fixture outcomes: names, categories and expectations of the matrix"
    )
    assert within.ok
    assert within.detail == _WITHIN_FIXTURES


def test_no_fixtures_recorded_is_zero_outcomes() -> None:
    declared, within = _fixture_checks()
    assert declared.ok
    assert within.ok
    assert declared.detail == "0 fixture outcomes: names, categories and expectations of the matrix"


def test_a_fixture_recorded_twice_for_one_target_is_refused() -> None:
    declared, _ = _fixture_checks(_fixture("width_3"), _fixture("width_3"))
    assert not declared.ok
    assert declared.detail == "model width_3 recorded twice"


def test_an_unknown_fixture_is_refused_and_not_held_to_a_tolerance() -> None:
    entry = dict(_fixture("width_3", max_abs_error="nan"), name="no_such_fixture")
    declared, within = _fixture_checks(entry)
    assert declared.detail == "model no_such_fixture: no fixture of that name in the matrix"
    assert within.ok


@pytest.mark.parametrize(
    ("changes", "stated"),
    [
        ({"expected": "fail", "actual": "fail"}, "'fail' (positive)"),
        ({"category": "boundary"}, "'pass' (boundary)"),
    ],
)
def test_an_expectation_or_category_other_than_the_matrix_declares_is_refused(
    changes, stated
) -> None:
    declared, _ = _fixture_checks(_fixture("width_3", **changes))
    assert not declared.ok
    assert declared.detail == (
        f"model width_3: expected {stated}, the matrix declares 'pass' (positive)"
    )


@pytest.mark.parametrize(
    ("passed", "actual"), [(True, "fail"), (False, "pass"), (True, "out of domain")]
)
def test_a_passed_flag_that_contradicts_the_outcome_is_refused(passed, actual) -> None:
    entry = _fixture("width_3", passed=passed, actual=actual, max_abs_error="nan")
    declared, _ = _fixture_checks(entry)
    assert not declared.ok
    assert declared.detail == f"model width_3: passed={passed} with actual {actual!r}"


def test_three_misrecorded_fixtures_are_all_named_and_a_fourth_is_elided() -> None:
    names = ["width_2", "width_3", "width_31", "width_70"]
    wrong = [_fixture(name, category="boundary") for name in names]
    texts = [
        f"model {name}: expected 'pass' (boundary), the matrix declares 'pass' (positive)"
        for name in names
    ]
    declared, _ = _fixture_checks(*wrong[:3])
    assert declared.detail == "; ".join(texts[:3])
    declared, _ = _fixture_checks(*wrong)
    assert not declared.ok
    assert declared.detail == "; ".join(texts[:3]) + " ..."


def test_a_fixture_not_recorded_as_pass_is_not_held_to_the_tolerance() -> None:
    failed = _fixture(
        "width_3", actual="fail", passed=False, max_abs_error="nan", max_rel_error="nan"
    )
    declared, within = _fixture_checks(failed)
    assert declared.ok
    assert within.ok, within.detail


def test_a_rejection_fixture_recorded_as_pass_is_not_held_to_a_tolerance() -> None:
    # a malformed input has no reference to hold it to; its passed=False fails the verdict
    entry = _fixture("width_mismatch", actual="pass", passed=False, max_abs_error=1e9)
    declared, within = _fixture_checks(entry)
    assert declared.ok, declared.detail
    assert within.ok, within.detail


@pytest.mark.parametrize("name", ["hand_checkable", "multiple_rows", "float16_rows"])
def test_a_fixture_error_exactly_at_its_tolerance_passes(name) -> None:
    _, within = _fixture_checks(_fixture(name, max_abs_error=_limit(name)))
    assert within.ok, within.detail


@pytest.mark.parametrize(
    ("name", "dtype"),
    [("hand_checkable", "float32"), ("multiple_rows", "float32"), ("float16_rows", "float16")],
)
def test_a_fixture_error_one_step_past_its_tolerance_fails_by_name(name, dtype) -> None:
    limit = _limit(name)
    value = math.nextafter(limit, UP)
    _, within = _fixture_checks(_fixture(name, max_abs_error=value))
    assert not within.ok
    assert within.detail == (
        f"model {name} recorded pass with max_abs_error {value!r}, 1x its {dtype} tolerance "
        f"{limit:.3g}"
    )


def test_the_fixture_detail_states_how_many_times_the_tolerance_the_error_is() -> None:
    limit = _limit("hand_checkable")  # 1e-5 + 2e-5 * 2.2627...
    _, within = _fixture_checks(_fixture("hand_checkable", "kernel", max_abs_error=3 * limit))
    assert within.detail == (
        f"kernel hand_checkable recorded pass with max_abs_error {3 * limit!r}, 3x its float32 "
        "tolerance 5.53e-05"
    )


def test_a_reference_without_finite_values_holds_a_fixture_to_atol(monkeypatch) -> None:
    monkeypatch.setattr(
        ReferenceCache, "reference", lambda self, fixture: np.full((1, 2), math.nan)
    )
    _, within = _fixture_checks(_fixture("hand_checkable", max_abs_error=1e-5))
    assert within.ok, within.detail
    value = math.nextafter(1e-5, UP)
    _, within = _fixture_checks(_fixture("hand_checkable", max_abs_error=value))
    assert within.detail == (
        f"model hand_checkable recorded pass with max_abs_error {value!r}, 1x its float32 "
        "tolerance 1e-05"
    )


def test_a_nan_relative_error_fails_a_pass_whose_absolute_error_is_within() -> None:
    limit = _limit("hand_checkable")
    _, within = _fixture_checks(_fixture("hand_checkable", max_rel_error="nan"))
    assert not within.ok
    assert within.detail == (
        "model hand_checkable recorded pass with max_abs_error 0.0, 0x its float32 tolerance "
        f"{limit:.3g}, max_rel_error 'nan'"
    )


@pytest.mark.parametrize("recorded", ["nan", None])
def test_a_nan_or_missing_absolute_error_fails_a_pass_without_a_ratio(recorded) -> None:
    _, within = _fixture_checks(_fixture("hand_checkable", max_abs_error=recorded))
    assert not within.ok
    assert within.detail == f"model hand_checkable recorded pass with max_abs_error {recorded!r}"
    entry = _fixture("hand_checkable", max_abs_error=recorded, max_rel_error=math.nan)
    _, within = _fixture_checks(entry)
    assert within.detail == (
        f"model hand_checkable recorded pass with max_abs_error {recorded!r}, max_rel_error nan"
    )


def test_three_fixtures_past_their_tolerance_are_all_named_and_a_fourth_is_elided() -> None:
    names = ["width_2", "width_3", "width_31", "width_70"]
    past = [_fixture(name, max_abs_error="nan") for name in names]
    texts = [f"model {name} recorded pass with max_abs_error 'nan'" for name in names]
    _, within = _fixture_checks(*past[:3])
    assert within.detail == "; ".join(texts[:3])
    _, within = _fixture_checks(*past)
    assert not within.ok
    assert within.detail == "; ".join(texts[:3]) + " ..."


# --- killer_checks ----------------------------------------------------------------------------


def _recorded(target: str, name: str, passed: bool = True) -> dict:
    return {"target": target, "name": name, "passed": passed}


def _mutant(target: str, name: str, killed_by: list[str], killed: bool | None = None) -> dict:
    killed = bool(killed_by) if killed is None else killed
    return {"target": target, "name": name, "killed": killed, "killed_by": killed_by}


def _killers(recorded: list[dict], mutants: list[dict], paths=None) -> str | None:
    """None where the check holds, else its detail."""
    data = {"fixtures": recorded, "mutants": mutants, "kernel": {"paths": paths}}
    (check,) = claims.killer_checks(data)
    assert check.name == "mutants killed by recorded fixtures"
    if check.ok:
        assert check.detail == "every killer is a fixture its target passed in this receipt"
        return None
    return check.detail


_RECORDED = [
    _recorded("model", "width_3"),
    _recorded("kernel", "width_31"),
    _recorded("kernel", "width_70", passed=False),
    _recorded("model", "width_mismatch"),
]


def test_killers_passed_by_their_own_target_hold() -> None:
    mutants = [
        _mutant("model", "m1", ["width_3"]),
        _mutant("kernel", "k1", ["width_31"]),
        _mutant("model", "m2", []),
    ]
    assert _killers(_RECORDED, mutants) is None
    assert _killers([], []) is None


@pytest.mark.parametrize(
    "killer",
    [
        pytest.param("width_31", id="passed by the kernel, not the model"),
        pytest.param("width_70", id="recorded, not passed"),
        pytest.param("width_mismatch", id="a rejection fixture: no implementation ran"),
        pytest.param("no_such_fixture", id="not recorded"),
    ],
)
def test_a_killer_the_target_did_not_pass_here_is_refused(killer) -> None:
    detail = _killers(_RECORDED, [_mutant("model", "m1", [killer])])
    assert detail == f"model mutant m1 killed by {killer!r}, not a fixture the model passed here"


@pytest.mark.parametrize(("killed", "killed_by"), [(True, []), (False, ["width_3"])])
def test_a_killed_flag_that_contradicts_its_killers_is_refused(killed, killed_by) -> None:
    detail = _killers(_RECORDED, [_mutant("model", "m1", killed_by, killed)])
    assert detail == f"model mutant m1: killed={killed} with killed_by {killed_by}"


def test_a_launch_layouts_killers_are_kernel_fixtures_recorded_here() -> None:
    # recorded suffices (a layout's own run judged them); passed by the kernel is not needed
    paths = [{"path": "tiled", "killed_by": {"m1": ["width_31", "width_70"], "m2": []}}]
    assert _killers(_RECORDED, [], paths) is None
    assert _killers(_RECORDED, [], []) is None


@pytest.mark.parametrize("killer", ["width_3", "width_mismatch", "no_such_fixture"])
def test_a_launch_layouts_killer_not_a_recorded_kernel_fixture_is_refused(killer) -> None:
    recorded = [*_RECORDED, _recorded("kernel", "width_mismatch")]
    paths = [{"path": "tiled", "killed_by": {"m1": ["width_31", killer]}}]
    assert _killers(recorded, [], paths) == (
        f"kernel[tiled] mutant m1 killed by {killer!r}, not a kernel fixture recorded here"
    )


def test_three_strays_are_all_named_and_a_fourth_is_elided() -> None:
    mutants = [_mutant("model", f"m{i}", ["width_31"]) for i in range(4)]
    texts = [
        f"model mutant m{i} killed by 'width_31', not a fixture the model passed here"
        for i in range(4)
    ]
    assert _killers(_RECORDED, mutants[:3]) == "; ".join(texts[:3])
    assert _killers(_RECORDED, mutants) == "; ".join(texts[:3]) + " ..."
