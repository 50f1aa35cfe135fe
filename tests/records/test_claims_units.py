"""The claim checks verify makes (:mod:`inspector.records.receipts.claims`), called directly on
small crafted receipts: the schema version of the content and the row errors.

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

UP = math.inf


# --- content_version_checks -------------------------------------------------------------------

_TAIL = "; a downgrade is refused (version 1 has no bound to check)"


def _version_1(**top) -> dict:
    return {"schema_version": 1, "rows": [{}, {}], "kernel": {}, "verdict": {}, **top}


def test_a_version_2_receipt_is_not_held_to_version_1() -> None:
    data = _version_1(error_bound={}, schema_version=2)
    assert claims.content_version_checks(data) == []


def test_version_1_content_without_newer_fields_passes() -> None:
    (check,) = claims.content_version_checks(_version_1())
    assert check.name == "schema version of the content"
    assert check.ok
    assert check.detail == "version 1 content: none of the fields version 2 added"


@pytest.mark.parametrize(
    ("section", "name"),
    [("", name) for name in claims.NEWER_FIELDS[""]]
    + [
        (section, name)
        for section in ("kernel", "verdict")
        for name in claims.NEWER_FIELDS[section]
    ],
)
def test_each_newer_field_alone_marks_version_1_content_as_newer(section, name) -> None:
    data = _version_1()
    (data if not section else data[section])[name] = None
    (check,) = claims.content_version_checks(data)
    label = name if not section else f"{section}.{name}"
    assert not check.ok
    assert check.detail == f"labelled 1 but holds what version 2 added: {label}{_TAIL}"


def test_the_batch_invariant_flag_is_a_version_2_field() -> None:
    assert "batch_invariant" in claims.NEWER_FIELDS["kernel"]


@pytest.mark.parametrize("name", ["exact_error", "error_bound"])
def test_a_newer_row_field_in_any_one_row_marks_the_content(name) -> None:
    data = _version_1()
    data["rows"][1][name] = 0.0
    (check,) = claims.content_version_checks(data)
    assert not check.ok
    assert check.detail == f"labelled 1 but holds what version 2 added: rows[].{name}{_TAIL}"


def test_six_newer_fields_are_all_named_and_a_seventh_is_elided() -> None:
    six = _version_1(**dict.fromkeys(claims.NEWER_FIELDS[""]))
    six["rows"][0]["exact_error"] = 0.0
    (check,) = claims.content_version_checks(six)
    names = "error_bound; batch_invariance; device_evidence; coverage; timing; rows[].exact_error"
    assert check.detail == f"labelled 1 but holds what version 2 added: {names}{_TAIL}"
    six["rows"][0]["error_bound"] = 0.0
    (check,) = claims.content_version_checks(six)
    assert not check.ok
    assert check.detail == f"labelled 1 but holds what version 2 added: {names} ...{_TAIL}"


# --- row_error_checks -------------------------------------------------------------------------

ATOL, RTOL = 1e-5, 2e-5


def _rows_receipt(*errors: float, passed: bool = True, atol=ATOL, rtol=RTOL) -> dict:
    return {
        "errors": {
            "atol": atol,
            "rtol": rtol,
            "passed": passed,
            "compare_dtype": "float32",
            "max_abs": 0.0,
            "max_rel": 0.0,
        },
        "kernel": {"vs_scalar": None},
        "model_checks": {},
        "rows": [{"max_abs_error": e, "max_rel_error": 0.0} for e in errors],
    }


def _row_checks(data: dict, reference) -> tuple:
    nan, within = claims.row_error_checks(
        data, None if reference is None else np.asarray(reference, dtype=np.float64)
    )
    assert (nan.name, within.name) == ("NaN counts as a failure", "row errors within the tolerance")
    return nan, within


def _past(index: int, value: float, limit: float) -> str:
    return (
        f"errors.passed=True but row {index} records max_abs_error {value!r}, "
        f"{value / limit:.3g}x its tolerance {limit:.3g}"
    )


_WITHIN = "every row's max_abs_error within atol + rtol * max|reference| (float32)"


def test_rows_within_the_tolerance_pass_with_both_details() -> None:
    nan, within = _row_checks(_rows_receipt(0.0, 1e-6), [[1.0, -2.0], [0.5, 0.25]])
    assert nan.ok
    assert nan.detail == "no passed comparison holds a NaN error"
    assert within.ok
    assert within.detail == _WITHIN


def test_a_row_error_exactly_at_atol_plus_rtol_times_the_largest_magnitude_passes() -> None:
    limit = ATOL + RTOL * 3.0  # the largest magnitude of the row is |-3|, not 2
    _, within = _row_checks(_rows_receipt(limit), [[2.0, -3.0, 1.0]])
    assert within.ok, within.detail


def test_a_row_error_one_step_past_its_tolerance_fails_by_name() -> None:
    limit = ATOL + RTOL * 3.0
    value = math.nextafter(limit, UP)
    _, within = _row_checks(_rows_receipt(0.0, value), [[0.0, 0.0], [2.0, -3.0]])
    assert not within.ok
    assert within.detail == _past(1, value, limit)
    assert within.detail.endswith(", 1x its tolerance 7e-05")


def test_the_detail_states_how_many_times_the_tolerance_the_error_is() -> None:
    limit = ATOL + RTOL * 3.0
    _, within = _row_checks(_rows_receipt(2.5 * limit), [[3.0]])
    assert within.detail == (
        f"errors.passed=True but row 0 records max_abs_error {2.5 * limit!r}, 2.5x its "
        "tolerance 7e-05"
    )


def test_each_row_is_held_to_its_own_largest_magnitude() -> None:
    # rows of magnitude 1 and 100: the column maxima (100, 100) would let row 0 pass
    value = ATOL + RTOL * 50.0
    _, within = _row_checks(_rows_receipt(value, value), [[1.0, 1.0], [100.0, 100.0]])
    assert not within.ok
    assert within.detail == _past(0, value, ATOL + RTOL * 1.0)


@pytest.mark.parametrize("reference", [[math.nan, math.inf], [-math.inf, math.nan, math.inf]])
def test_a_row_without_a_finite_reference_is_held_to_atol_alone(reference) -> None:
    _, within = _row_checks(_rows_receipt(ATOL), [reference])
    assert within.ok, within.detail
    value = math.nextafter(ATOL, UP)
    _, within = _row_checks(_rows_receipt(value), [reference])
    assert not within.ok
    assert within.detail == _past(0, value, ATOL)


def test_non_finite_references_are_left_out_of_the_row_magnitude() -> None:
    limit = ATOL + RTOL * 0.5
    _, within = _row_checks(_rows_receipt(limit), [[0.5, math.inf, -0.25]])
    assert within.ok, within.detail
    value = math.nextafter(limit, UP)
    _, within = _row_checks(_rows_receipt(value), [[0.5, math.inf, -0.25]])
    assert within.detail == _past(0, value, limit)


def test_a_zero_tolerance_reads_as_infinitely_many_times_it() -> None:
    _, within = _row_checks(_rows_receipt(1e-3, atol=0.0, rtol=0.0), [[1.0]])
    assert not within.ok
    assert within.detail == (
        "errors.passed=True but row 0 records max_abs_error 0.001, infx its tolerance 0"
    )


@pytest.mark.parametrize("recorded", [math.inf, "inf"])
def test_an_infinite_row_error_is_past_any_tolerance(recorded) -> None:
    _, within = _row_checks(_rows_receipt(recorded), [[1.0]])
    assert not within.ok
    assert within.detail == _past(0, math.inf, ATOL + RTOL)


def test_three_rows_past_are_all_named_and_a_fourth_is_elided() -> None:
    reference = [[1.0]] * 4
    limit = ATOL + RTOL
    values = [2 * limit, 3 * limit, 4 * limit, 5 * limit]
    _, within = _row_checks(_rows_receipt(*values[:3]), reference[:3])
    three = "; ".join(_past(i, v, limit) for i, v in enumerate(values[:3]))
    assert within.detail == three
    _, within = _row_checks(_rows_receipt(*values), reference)
    assert not within.ok
    assert within.detail == three + " ..."


def test_rows_past_the_rebuilt_reference_are_not_held_to_it() -> None:
    _, within = _row_checks(_rows_receipt(0.0, 1.0), [[1.0]])
    assert within.ok, within.detail


def test_without_a_rebuilt_reference_only_the_nans_are_checked() -> None:
    nan, within = _row_checks(_rows_receipt(1.0), None)
    assert nan.ok
    assert within.ok
    assert within.detail == _WITHIN


def test_a_failed_comparison_holds_no_row_to_the_tolerance_nor_its_rows_to_nan() -> None:
    data = _rows_receipt(1.0, math.nan, passed=False)
    data["rows"][0]["max_rel_error"] = "nan"
    nan, within = _row_checks(data, [[1.0], [1.0]])
    assert nan.ok, nan.detail
    assert within.ok
    assert within.detail == "the comparison failed: no row is held to the tolerance"


def test_a_nan_row_error_of_a_passed_comparison_is_a_nan_failure_not_a_tolerance_one() -> None:
    data = _rows_receipt(0.0, "nan")
    nan, within = _row_checks(data, [[1.0], [1.0]])
    assert not nan.ok
    assert nan.detail == "errors: passed=True with row 1 max_abs_error='nan'"
    assert within.ok, within.detail


def test_a_nan_relative_row_error_of_a_passed_comparison_fails() -> None:
    data = _rows_receipt(0.0)
    data["rows"][0]["max_rel_error"] = math.nan
    nan, _ = _row_checks(data, None)
    assert nan.detail == "errors: passed=True with row 0 max_rel_error=nan"


@pytest.mark.parametrize("key", ["max_abs", "max_rel"])
@pytest.mark.parametrize("recorded", ["nan", math.nan, None, True])
def test_a_passed_headline_with_a_nan_or_no_number_fails(key, recorded) -> None:
    data = _rows_receipt(0.0)
    data["errors"][key] = recorded
    nan, _ = _row_checks(data, None)
    assert not nan.ok
    assert nan.detail == f"errors: passed=True with {key}={recorded!r}"


def test_the_kernels_and_the_models_passed_comparisons_are_held_to_nan_too() -> None:
    data = _rows_receipt(0.0)
    data["kernel"]["vs_torch_float64"] = {"passed": True, "max_abs": 0.0, "max_rel": "nan"}
    data["model_checks"]["output"] = {"passed": True, "max_abs": "nan", "max_rel": 0.0}
    nan, _ = _row_checks(data, None)
    assert nan.detail == (
        "kernel.vs_torch_float64: passed=True with max_rel='nan'; "
        "model_checks.output: passed=True with max_abs='nan'"
    )


@pytest.mark.parametrize("passed", [False, None, 1])
def test_a_comparison_not_passed_may_hold_a_nan(passed) -> None:
    data = _rows_receipt(0.0)
    data["kernel"]["vs_scalar"] = {"passed": passed, "max_abs": "nan", "max_rel": "nan"}
    data["model_checks"]["output"] = {"passed": passed, "max_abs": "nan", "max_rel": "nan"}
    nan, _ = _row_checks(data, None)
    assert nan.ok, nan.detail


def test_three_nan_claims_are_all_named_and_a_fourth_is_elided() -> None:
    data = _rows_receipt("nan", "nan")
    data["errors"]["max_abs"] = "nan"
    nan, _ = _row_checks(data, None)
    three = (
        "errors: passed=True with max_abs='nan'; errors: passed=True with row 0 "
        "max_abs_error='nan'; errors: passed=True with row 1 max_abs_error='nan'"
    )
    assert nan.detail == three
    data["errors"]["max_rel"] = "nan"
    nan, _ = _row_checks(data, None)
    assert not nan.ok
    assert nan.detail == (
        "errors: passed=True with max_abs='nan'; errors: passed=True with max_rel='nan'; "
        "errors: passed=True with row 0 max_abs_error='nan' ..."
    )
