"""The claim checks verify makes (:mod:`inspector.records.receipts.claims`), called directly on
small crafted receipts: the sanitizer, the batch-invariance certificate and the error bound.

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

import pytest

from inspector.records.receipts import claims

# --- sanitizer_checks -------------------------------------------------------------------------

_CLEAN_REPORT = "========= ERROR SUMMARY: 0 errors\nlaunches 3\n"


def _sanitizer(**changes) -> dict:
    section = {
        "tool": "compute-sanitizer",
        "ran": True,
        "errors": 0,
        "exit_code": 0,
        "launches": 3,
        "passed": True,
        "report": _CLEAN_REPORT,
    }
    section.update(changes)
    return {"device_evidence": {"sanitizer": section}}


def _sanitizer_check(data: dict):
    (check,) = claims.sanitizer_checks(data)
    assert check.name == "device_evidence.sanitizer"
    return check


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"device_evidence": None},
        {"device_evidence": {}},
        {"device_evidence": {"sanitizer": {"absent": "the Triton interpreter runs on the CPU"}}},
    ],
)
def test_no_sanitizer_section_is_not_checked(data) -> None:
    assert claims.sanitizer_checks(data) == []


def test_a_clean_run_that_passed_holds() -> None:
    check = _sanitizer_check(_sanitizer())
    assert check.ok
    assert check.detail == "passed=True with 0 error(s), exit code 0, 3 launch(es)"


@pytest.mark.parametrize(
    ("changes", "counts"),
    [
        ({"ran": False}, "0 error(s), exit code 0, 3 launch(es)"),
        ({"errors": 1}, "1 error(s), exit code 0, 3 launch(es)"),
        ({"errors": None}, "None error(s), exit code 0, 3 launch(es)"),
        ({"exit_code": 1}, "0 error(s), exit code 1, 3 launch(es)"),
        ({"exit_code": -1}, "0 error(s), exit code -1, 3 launch(es)"),
        ({"exit_code": None}, "0 error(s), exit code None, 3 launch(es)"),
        ({"launches": 0}, "0 error(s), exit code 0, 0 launch(es)"),
        ({"launches": None}, "0 error(s), exit code 0, None launch(es)"),
    ],
)
def test_each_count_alone_denies_a_pass(changes, counts) -> None:
    check = _sanitizer_check(_sanitizer(**changes))
    assert not check.ok
    assert check.detail == f"passed=True with {counts}: those give passed=False"
    check = _sanitizer_check(_sanitizer(passed=False, **changes))
    assert check.ok
    assert check.detail == f"passed=False with {counts}"


def test_a_failure_recorded_beside_clean_counts_is_refused() -> None:
    check = _sanitizer_check(_sanitizer(passed=False))
    assert not check.ok
    assert check.detail == (
        "passed=False with 0 error(s), exit code 0, 3 launch(es): those give passed=True"
    )


def test_a_pass_whose_report_counts_errors_is_refused() -> None:
    report = "========= ERROR SUMMARY: 2 errors\nlaunches 3\n"
    check = _sanitizer_check(_sanitizer(report=report))
    assert not check.ok
    assert check.detail == (
        "passed=True with 0 error(s), exit code 0, 3 launch(es); its report counts 2 error(s)"
    )


def test_a_failure_whose_report_counts_errors_holds() -> None:
    report = "========= ERROR SUMMARY: 2 errors\n"
    check = _sanitizer_check(_sanitizer(errors=2, passed=False, report=report))
    assert check.ok
    assert check.detail == "passed=False with 2 error(s), exit code 0, 3 launch(es)"


def test_a_pass_whose_report_has_no_summary_holds() -> None:
    assert _sanitizer_check(_sanitizer(report="")).ok


# --- invariance_checks ------------------------------------------------------------------------


def _certificate(differing=(), launches=None, **changes) -> dict:
    section = {
        "bit_identical": not differing,
        "differing_rows": [{"row": row} for row in differing],
        "launches": [{"batch_size": 1, "rows_differing": 0}, {"batch_size": 4, "rows_differing": 0}]
        if launches is None
        else [{"batch_size": size, "rows_differing": n} for size, n in launches],
        "rows_checked": 8,
        "cuda_graph": "same bits",
        "batch_sizes": [1, 2, 4],
    }
    section.update(changes)
    return section


def _invariance(section: dict, rows: int = 8, batch_invariant=None) -> str | None:
    """None where the check holds (its detail checked), else its detail."""
    kernel = {} if batch_invariant is None else {"batch_invariant": batch_invariant}
    data = {"batch_invariance": section, "input": {"rows": rows}, "kernel": kernel}
    (check,) = claims.invariance_checks(data)
    assert check.name == "batch invariance"
    if check.ok:
        differing, launches = len(section["differing_rows"]), len(section["launches"])
        assert check.detail == (
            f"bit_identical={section['bit_identical']}: {differing} differing row(s) of "
            f"{section['rows_checked']}, {launches} launches"
        )
        return None
    return check.detail


@pytest.mark.parametrize("section", [None, {"absent": "no CUDA device"}])
def test_no_certificate_is_not_checked(section) -> None:
    assert claims.invariance_checks({"batch_invariance": section, "kernel": {}}) == []
    assert claims.invariance_checks({"kernel": {}}) == []


def test_a_bit_identical_certificate_holds() -> None:
    data = {"batch_invariance": _certificate(), "input": {"rows": 8}, "kernel": {}}
    (check,) = claims.invariance_checks(data)
    assert check.ok
    assert check.detail == "bit_identical=True: 0 differing row(s) of 8, 2 launches"


def test_a_certificate_without_launches_nor_differing_rows_holds() -> None:
    assert _invariance(_certificate(launches=[])) is None


def test_rows_listed_without_a_launch_nor_the_graph_differing_are_refused() -> None:
    assert _invariance(_certificate([3], launches=[])) == (
        "rows listed as differing but no launch nor the CUDA graph differs"
    )
    assert _invariance(_certificate([3], launches=[(1, 0), (4, 0)])) == (
        "rows listed as differing but no launch nor the CUDA graph differs"
    )


def test_rows_listed_where_a_launch_or_the_graph_differs_hold() -> None:
    assert _invariance(_certificate([3], launches=[(1, 0), (4, 1)])) is None
    assert _invariance(_certificate([3], launches=[(1, 0)], cuda_graph="differs")) is None


def test_the_graph_differing_without_a_row_listed_is_refused() -> None:
    assert _invariance(_certificate(cuda_graph="differs")) == (
        "the CUDA graph differs but no row is listed"
    )


@pytest.mark.parametrize(("bit_identical", "rows"), [(True, [3]), (False, [])])
def test_bit_identical_that_contradicts_the_rows_listed_is_refused(bit_identical, rows) -> None:
    section = _certificate(rows, launches=[(1, 0), (4, len(rows))], bit_identical=bit_identical)
    assert _invariance(section) == f"bit_identical={bit_identical} with {len(rows)} row(s) listed"


def test_a_row_listed_twice_is_refused() -> None:
    assert _invariance(_certificate([2, 2], launches=[(4, 2)])) == (
        "rows listed twice or past the 8 checked"
    )


def test_a_row_at_the_count_checked_is_past_it_and_the_last_one_is_not() -> None:
    assert _invariance(_certificate([7], launches=[(4, 1)])) is None
    assert _invariance(_certificate([8], launches=[(4, 1)])) == (
        "rows listed twice or past the 8 checked"
    )


def test_more_rows_checked_than_the_input_has_are_refused() -> None:
    assert _invariance(_certificate(), rows=8) is None
    assert _invariance(_certificate(), rows=7) == "8 rows checked of 7"


def test_a_launch_differing_in_more_rows_than_listed_is_refused() -> None:
    assert _invariance(_certificate([1, 2], launches=[(4, 2)])) is None
    assert _invariance(_certificate([1], launches=[(4, 2)])) == (
        "a launch differs in 2 row(s), 1 listed"
    )


_SIZES = "batch sizes that do not start at 1 or launches of unlisted sizes"


def test_batch_sizes_not_starting_at_1_are_refused() -> None:
    assert _invariance(_certificate(batch_sizes=[2, 4], launches=[(2, 0), (4, 0)])) == _SIZES
    assert _invariance(_certificate(batch_sizes=[2, 1], launches=[(2, 0), (1, 0)])) == _SIZES


def test_a_default_launch_of_an_unlisted_batch_size_is_refused() -> None:
    assert _invariance(_certificate(launches=[(1, 0), (3, 0)])) == _SIZES
    assert _invariance(_certificate(launches=[(1, 0), (3, 0)], mode="default")) == _SIZES


def test_a_batch_invariant_modes_certificate_listing_its_sizes_holds_if_they_start_at_1() -> None:
    sizes = {"launches": [(1, 0), (3, 0), (9, 0)], "batch_sizes": [1, 3, 9]}
    section = _certificate(mode="batch_invariant", **sizes)
    assert _invariance(section, batch_invariant=True) is None
    section = _certificate(launches=[(2, 0)], batch_sizes=[2, 4], mode="batch_invariant")
    assert _invariance(section, batch_invariant=True) == _SIZES
    # the mode's launches are held to its listed sizes like the default's
    section = _certificate(launches=[(1, 0), (3, 0)], batch_sizes=[1], mode="batch_invariant")
    assert _invariance(section, batch_invariant=True) == _SIZES


@pytest.mark.parametrize(
    ("mode", "flag", "stated"),
    [
        ("batch_invariant", None, False),
        ("batch_invariant", False, False),
        (None, True, True),
        ("default", True, True),
    ],
)
def test_a_certificates_mode_other_than_the_kernels_is_refused(mode, flag, stated) -> None:
    section = _certificate() if mode is None else _certificate(mode=mode)
    assert _invariance(section, batch_invariant=flag) == (
        f"a certificate of mode {mode or 'default'!r} with kernel.batch_invariant {stated}"
    )


def test_three_certificate_problems_are_all_named_and_a_fourth_is_elided() -> None:
    section = _certificate([9], launches=[(4, 1)], bit_identical=True)
    two = "bit_identical=True with 1 row(s) listed; rows listed twice or past the 8 checked"
    assert _invariance(section) == two
    assert _invariance(section, rows=7) == f"{two}; 8 rows checked of 7"
    assert _invariance(section, rows=7, batch_invariant=True) == f"{two}; 8 rows checked of 7 ..."


# --- bound_checks -----------------------------------------------------------------------------


def _bounded(rows, **bound) -> dict:
    return {
        "error_bound": bound,
        "rows": [{"exact_error": e, "error_bound": b} for e, b in rows],
    }


def _bound_check(data: dict):
    (check,) = claims.bound_checks(data)
    assert check.name == "error_bound"
    return check


def test_no_bound_section_is_not_checked() -> None:
    assert claims.bound_checks({"rows": []}) == []


def test_no_bound_holds_with_nan_row_bounds_and_no_within() -> None:
    check = _bound_check(
        _bounded([(0.0, "nan"), (1.0, "nan")], applies=False, within=None, why="a user's kernel")
    )
    assert check.ok
    assert check.detail == "no bound: a user's kernel"


@pytest.mark.parametrize(
    ("rows", "within"), [([(0.0, "nan"), (0.0, 1.0)], None), ([(0.0, "nan")], False)]
)
def test_no_bound_beside_a_row_bound_or_a_within_is_refused(rows, within) -> None:
    check = _bound_check(_bounded(rows, applies=False, within=within, why="none"))
    assert not check.ok
    assert check.detail == "no bound: none"


def _applying(rows, within, worst_row, worst_ratio):
    return _bound_check(
        _bounded(
            rows,
            applies=True,
            within=within,
            worst_row=worst_row,
            worst_ratio=worst_ratio,
            why="kernel",
        )
    )


def test_a_bound_whose_summary_matches_its_rows_holds() -> None:
    check = _applying([(0.25, 2.0), (1.0, 0.5)], False, 1, 2.0)
    assert check.ok, check.detail
    assert check.detail == (
        "within=False worst 2.0 at row 1; rows give within=False worst 2.0 at row 1"
    )
    check = _applying([(0.25, 2.0), (0.25, 0.5)], True, 1, 0.5)
    assert check.ok, check.detail
    assert (
        check.detail == "within=True worst 0.5 at row 1; rows give within=True worst 0.5 at row 1"
    )


def test_an_error_exactly_at_its_bound_is_within_and_one_step_past_is_not() -> None:
    assert _applying([(0.5, 0.5)], True, 0, 1.0).ok
    past = math.nextafter(0.5, math.inf)
    check = _applying([(past, 0.5)], True, 0, past / 0.5)
    assert not check.ok
    assert check.detail == (
        f"within=True worst {past / 0.5!r} at row 0; rows give within=False worst "
        f"{past / 0.5!r} at row 0"
    )


def test_a_zero_bound_gives_an_infinite_ratio() -> None:
    check = _applying([(0.0, 0.0), (1.0, 4.0)], True, 0, "inf")
    assert check.ok, check.detail
    assert (
        check.detail == "within=True worst inf at row 0; rows give within=True worst inf at row 0"
    )


def test_a_nan_error_gives_an_infinite_ratio_and_is_not_within() -> None:
    check = _applying([(1.0, 4.0), ("nan", 4.0)], False, 1, "inf")
    assert check.ok, check.detail
    assert check.detail == (
        "within=False worst inf at row 1; rows give within=False worst inf at row 1"
    )


@pytest.mark.parametrize(
    ("within", "worst_row", "worst_ratio"), [(False, 1, 0.5), (True, 0, 0.5), (True, 1, 0.25)]
)
def test_each_summary_field_alone_that_contradicts_the_rows_is_refused(
    within, worst_row, worst_ratio
) -> None:
    check = _applying([(0.25, 2.0), (0.25, 0.5)], within, worst_row, worst_ratio)
    assert not check.ok
    assert check.detail == (
        f"within={within} worst {worst_ratio!r} at row {worst_row}; rows give within=True worst "
        "0.5 at row 1"
    )


def test_the_worst_ratio_is_held_to_a_relative_1e_12() -> None:
    rows = [(0.25, 2.0), (0.25, 0.5)]
    assert _applying(rows, True, 1, math.nextafter(0.5, math.inf)).ok
    assert _applying(rows, True, 1, 0.5 * (1 + 0.9e-12)).ok
    assert not _applying(rows, True, 1, 0.5 * (1 + 1.5e-12)).ok
