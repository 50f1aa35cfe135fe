"""The claim checks verify makes (:mod:`inspector.records.receipts.claims`), called directly on
small crafted receipts: the sections that fail the verdict, and the tolerances, passed flags,
verdict and outcome of :func:`claims.claim_checks`.

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

import pytest

from inspector.records.receipts import claims
from oracle.matrix import OUT_OF_DOMAIN

# --- _failing_sections ------------------------------------------------------------------------


def test_a_bare_kernel_section_fails_nothing() -> None:
    assert claims._failing_sections({"kernel": {}}) == []
    quiet = {
        "kernel": {
            "oob_writes": 0,
            "oob_reads": None,
            "ran": True,
            "paths": None,
            "batch_invariant": False,
        },
        "coverage": {"unproven": []},
        "batch_invariance": None,
        "error_bound": None,
        "device_evidence": None,
    }
    assert claims._failing_sections(quiet) == []


def test_out_of_bounds_stores_reads_and_unproven_coverage_fail() -> None:
    data = {"kernel": {"oob_writes": 2, "oob_reads": 5}, "coverage": {"unproven": ["a", "b"]}}
    assert claims._failing_sections(data) == [
        "kernel.oob_writes 2",
        "kernel.oob_reads 5",
        "coverage: 2 unproven",
    ]


_REQUIRED = (
    "batch_invariance: required (kernel.batch_invariant) but no bit-identical certificate of "
    "the batch-invariant mode"
)


@pytest.mark.parametrize(
    "certificate",
    [
        None,
        {"absent": "no CUDA device"},
        {"mode": "batch_invariant", "bit_identical": False},
        {"mode": "default", "bit_identical": True},
        {"bit_identical": True},
        {"mode": "batch_invariant", "bit_identical": 1},
    ],
)
def test_the_batch_invariant_mode_fails_without_its_bit_identical_certificate(certificate):
    data = {"kernel": {"batch_invariant": True}, "batch_invariance": certificate}
    assert claims._failing_sections(data) == [_REQUIRED]
    data["kernel"]["batch_invariant"] = False
    assert claims._failing_sections(data) == []


def test_the_batch_invariant_mode_with_its_bit_identical_certificate_passes() -> None:
    data = {
        "kernel": {"batch_invariant": True},
        "batch_invariance": {"mode": "batch_invariant", "bit_identical": True},
    }
    assert claims._failing_sections(data) == []
    assert claims._failing_sections({"kernel": {"batch_invariant": True}}) == [_REQUIRED]


@pytest.mark.parametrize(
    ("ran", "applies", "within", "fails"),
    [
        (True, True, False, True),
        (False, True, False, False),
        (True, False, False, False),
        (True, True, None, False),
        (True, True, True, False),
    ],
)
def test_the_kernels_error_past_its_bound_fails_only_where_it_ran_and_a_bound_applies(
    ran, applies, within, fails
) -> None:
    data = {
        "kernel": {"ran": ran},
        "error_bound": {"applies": applies, "within": within, "worst_row": 3},
    }
    expected = ["error_bound: row 3 past its derived bound"] if fails else []
    assert claims._failing_sections(data) == expected


@pytest.mark.parametrize(
    ("evidence", "fails"),
    [
        (None, False),
        ({}, False),
        ({"sanitizer": None}, False),
        ({"sanitizer": {}}, False),
        ({"sanitizer": {"absent": "interpreter"}}, False),
        ({"sanitizer": {"passed": True, "errors": 0}}, False),
        ({"sanitizer": {"passed": False, "errors": 2}}, True),
    ],
)
def test_a_sanitizer_that_did_not_pass_fails(evidence, fails) -> None:
    data = {"kernel": {}, "device_evidence": evidence}
    expected = ["device_evidence.sanitizer: 2 error(s)"] if fails else []
    assert claims._failing_sections(data) == expected


@pytest.mark.parametrize(
    ("survivors", "as_expected", "fails"),
    [([], 9, False), (["m1"], 9, True), ([], 8, True), (["m1"], 8, True)],
)
def test_a_launch_layout_with_survivors_or_misbehaving_fixtures_fails(
    survivors, as_expected, fails
) -> None:
    path = {
        "path": "tiled",
        "survivors": survivors,
        "fixtures_as_expected": as_expected,
        "fixtures": 9,
    }
    expected = ["kernel[tiled] survivors or fixtures not as expected"] if fails else []
    assert claims._failing_sections({"kernel": {"paths": [path]}}) == expected


# --- claim_checks -----------------------------------------------------------------------------


def _comparison(**changes) -> dict:
    entry = {
        "atol": 1e-5,
        "rtol": 2e-5,
        "compare_dtype": "float32",
        "passed": True,
        "mismatches": 0,
    }
    entry.update(changes)
    return entry


def _claimed(**top) -> dict:
    data = {
        "errors": _comparison(),
        "kernel": {"vs_scalar": None, "vs_torch_float64": None},
        "mutants": [{"target": "model", "name": "m1", "killed": True, "killed_by": ["width_3"]}],
        "fixtures": [
            {
                "target": "model",
                "name": "width_3",
                "expected": "pass",
                "actual": "pass",
                "passed": True,
            }
        ],
        "verdict": {"passed": True, "failures": []},
    }
    data.update(top)
    return data


def _named(data: dict) -> dict:
    return {check.name: check for check in claims.claim_checks(data)}


def test_a_consistent_receipt_passes_every_claim() -> None:
    checks = _named(_claimed())
    assert list(checks) == [
        "tolerances as declared",
        "comparisons follow their mismatches",
        "verdict follows the outcomes",
    ]
    assert all(check.ok for check in checks.values())
    assert checks["tolerances as declared"].detail == "1 comparison(s) on the dtype's table"
    assert checks["comparisons follow their mismatches"].detail == (
        "every passed flag matches its mismatch count"
    )
    assert checks["verdict follows the outcomes"].detail == "passed=True, 0 failure(s) recorded"


def test_the_kernels_comparisons_are_counted_beside_the_headline() -> None:
    kernel = {"vs_scalar": _comparison(), "vs_torch_float64": _comparison()}
    check = _named(_claimed(kernel=kernel))["tolerances as declared"]
    assert check.ok
    assert check.detail == "3 comparison(s) on the dtype's table"


@pytest.mark.parametrize(
    ("changes", "stated"),
    [
        ({"atol": 1e-3}, "atol=0.001 rtol=2e-05 for 'float32', declared 1e-05 / 2e-05"),
        ({"rtol": 1e-3}, "atol=1e-05 rtol=0.001 for 'float32', declared 1e-05 / 2e-05"),
        ({"compare_dtype": "float64"}, "atol=1e-05 rtol=2e-05 for 'float64'"),
    ],
)
def test_a_tolerance_other_than_the_dtypes_is_refused(changes, stated) -> None:
    check = _named(_claimed(errors=_comparison(**changes)))["tolerances as declared"]
    assert not check.ok
    assert check.detail == f"errors: {stated}"


def test_a_comparison_without_a_dtype_and_every_loose_one_are_named() -> None:
    errors = _comparison()
    del errors["compare_dtype"]
    kernel = {"vs_scalar": _comparison(atol=0.0), "vs_torch_float64": None}
    check = _named(_claimed(errors=errors, kernel=kernel))["tolerances as declared"]
    assert check.detail == (
        "errors: atol=1e-05 rtol=2e-05 for None; "
        "kernel.vs_scalar: atol=0.0 rtol=2e-05 for 'float32', declared 1e-05 / 2e-05"
    )


@pytest.mark.parametrize(("passed", "mismatches"), [(True, 3), (False, 0)])
def test_a_passed_flag_that_contradicts_its_mismatch_count_is_refused(passed, mismatches):
    kernel = {"vs_scalar": _comparison(passed=passed, mismatches=mismatches)}
    check = _named(_claimed(kernel=kernel))["comparisons follow their mismatches"]
    assert not check.ok
    assert check.detail == f"kernel.vs_scalar: passed={passed} with {mismatches} mismatches"


def test_a_comparison_without_a_mismatch_count_is_not_held_to_one() -> None:
    entry = _comparison(passed=False)
    del entry["mismatches"]
    checks = _named(_claimed(kernel={"vs_scalar": entry}))
    assert checks["comparisons follow their mismatches"].ok
    assert not checks["verdict follows the outcomes"].ok


def _verdict(data: dict):
    return _named(data)["verdict follows the outcomes"]


def test_a_failed_comparison_fails_the_verdict() -> None:
    data = _claimed(errors=_comparison(passed=False, mismatches=2))
    assert not _verdict(data).ok
    data["verdict"]["passed"] = False
    check = _verdict(data)
    assert check.ok
    assert check.detail == "passed=False, 0 failure(s) recorded; the outcomes fail it: errors"


@pytest.mark.parametrize(("killed", "killed_by"), [(False, []), (True, []), (False, ["width_3"])])
def test_a_mutant_not_both_killed_and_named_a_killer_fails_the_verdict(killed, killed_by):
    mutant = {"target": "kernel", "name": "k1", "killed": killed, "killed_by": killed_by}
    data = _claimed(mutants=[mutant], verdict={"passed": False, "failures": []})
    check = _verdict(data)
    assert check.ok
    assert check.detail.endswith("; the outcomes fail it: kernel mutant k1 survived")


@pytest.mark.parametrize(
    ("passed", "expected", "actual", "fails"),
    [
        (False, "pass", "fail", True),
        (True, "pass", "fail", True),
        (False, "pass", "pass", True),
        (False, "pass", OUT_OF_DOMAIN, False),
        (True, "fail", "fail", False),
    ],
)
def test_a_misbehaving_fixture_fails_the_verdict_unless_out_of_domain(
    passed, expected, actual, fails
) -> None:
    fixture = {
        "target": "kernel",
        "name": "width_31",
        "expected": expected,
        "actual": actual,
        "passed": passed,
    }
    check = _verdict(_claimed(fixtures=[fixture]))
    assert check.ok is not fails
    if fails:
        assert check.detail == (
            "passed=True, 0 failure(s) recorded; the outcomes fail it: kernel fixture width_31"
        )


def test_a_failing_section_fails_the_verdict() -> None:
    data = _claimed(kernel={"oob_writes": 1}, verdict={"passed": False, "failures": []})
    check = _verdict(data)
    assert check.ok
    assert check.detail == (
        "passed=False, 0 failure(s) recorded; the outcomes fail it: kernel.oob_writes 1"
    )


def test_a_recorded_failure_alone_fails_the_verdict() -> None:
    data = _claimed(verdict={"passed": True, "failures": ["an input was rejected"]})
    check = _verdict(data)
    assert not check.ok
    assert check.detail == "passed=True, 1 failure(s) recorded"
    data["verdict"]["passed"] = False
    assert _verdict(data).ok


def test_four_reasons_are_named_and_more_are_left_out() -> None:
    mutants = [
        {"target": "model", "name": f"m{i}", "killed": False, "killed_by": []} for i in range(5)
    ]
    data = _claimed(mutants=mutants[:4], verdict={"passed": False, "failures": []})
    four = ", ".join(f"model mutant m{i} survived" for i in range(4))
    assert (
        _verdict(data).detail
        == f"passed=False, 0 failure(s) recorded; the outcomes fail it: {four}"
    )
    data["mutants"] = mutants
    assert (
        _verdict(data).detail
        == f"passed=False, 0 failure(s) recorded; the outcomes fail it: {four}"
    )


def _outcome(data: dict):
    return _named(data)["verdict names its outcome"]


def test_a_verdict_without_an_outcome_names_none() -> None:
    assert "verdict names its outcome" not in _named(_claimed())


@pytest.mark.parametrize(
    ("failures", "not_judged", "fails", "named"),
    [
        ([], None, False, "passed"),
        ([], [], False, "passed"),
        (["x"], [], False, "failed"),
        ([], [{"run": "sanitizer"}], False, "not judged"),
        (["x"], [{"run": "a"}], False, "failed"),
        ([], None, True, "failed"),
        ([], [{"run": "a"}, {"run": "b"}], True, "not judged"),
    ],
)
def test_the_outcome_named_follows_failures_unjudged_runs_and_outcomes(
    failures, not_judged, fails, named
) -> None:
    data = _claimed(
        verdict={"passed": not failures and not fails, "failures": failures, "outcome": named}
    )
    data["kernel"]["not_judged"] = not_judged
    if fails:
        data["kernel"]["oob_writes"] = 1
    check = _outcome(data)
    assert check.ok, check.detail
    assert check.detail == (
        f"outcome {named!r}; {len(failures)} failure(s), {len(not_judged or [])} run(s) not "
        f"judged give {named!r}"
    )
    for other in {"passed", "failed", "not judged"} - {named}:
        data["verdict"]["outcome"] = other
        assert not _outcome(data).ok
