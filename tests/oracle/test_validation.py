"""Every rejection names its field and bound; the parser never lets anything else escape."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import fixtures, matrix
from oracle.parse import parse_matrix, parse_vector
from oracle.spec import LIMITS, ValidationError, check_eps, check_int, make_problem

MALFORMED = [f for f in fixtures.FIXTURES if f.check == "rejection"]


def test_fixture_matrix_has_all_four_categories():
    categories = {f.category for f in fixtures.FIXTURES}
    assert categories == {"positive", "boundary", "malformed", "negative"}
    names = {f.name for f in fixtures.FIXTURES}
    for required in (
        "width_2",
        "width_3",
        "width_31",
        "width_70",
        "width_127",
        "width_255",
        "width_256",
        "min_width",
        "max_width",
        "zero_row",
        "alternating_signs",
        "constant_row",
        "extreme_element",
        "multiple_rows",
        "non_power_of_two_tail",
        "min_eps",
        "max_eps",
        "asymmetric_weights",
        "row_isolation",
        "padded_row_stride",
    ):
        assert required in names


@pytest.mark.parametrize("fixture", MALFORMED, ids=lambda f: f.name)
def test_malformed_fixture_is_rejected_naming_its_field(fixture):
    with pytest.raises(ValidationError) as info:
        fixture.build()
    assert info.value.field == fixture.reject_field
    assert str(info.value).startswith(f"{fixture.reject_field}:")
    outcome = matrix.evaluate(fixture, matrix.model_implementation)
    assert outcome.passed
    assert outcome.actual == f"reject:{fixture.reject_field}"


@pytest.mark.parametrize(
    ("kwargs", "field", "fragment"),
    [
        ({"eps": 1e-13}, "eps", "[1e-12, 0.01]"),
        ({"eps": 0.1}, "eps", "out of range"),
        ({"eps": None}, "eps", "missing"),
        ({"eps": "abc"}, "eps", "not a number"),
        ({"eps": float("inf")}, "eps", "not finite"),
        ({"eps": float("nan")}, "eps", "not finite"),
        ({"x": "1, 2, 3; 4, 5"}, "x", "width mismatch"),
        ({"weight": "1, 2"}, "weight", "expected exactly width = 3"),
        ({"x": "1, 1e7, 3"}, "x", "exceeds 1e+06"),
        ({"weight": "1, 2e6, 1"}, "weight", "exceeds 1e+06"),
        ({"x": "1, nan, 3"}, "x", "not finite"),
        ({"x": "1, 1e400, 3"}, "x", "not finite"),
        ({"x": "1, abc, 3"}, "x", "'abc'"),
        ({"x": ""}, "x", "empty"),
        ({"rows": 0}, "rows", "[1, 4096]"),
        ({"rows": "2.5"}, "rows", "not an integer"),
        ({"rows": True}, "rows", "not an integer"),
        ({"width": 65537}, "width", "[1, 65536]"),
        ({"row_stride": 2}, "row_stride", "row_stride >= width = 3"),
        ({"row_stride": "x"}, "row_stride", "not a number"),
        ({"dtype": "float64"}, "dtype", "float32 | float16 | bfloat16"),
    ],
)
def test_rejections_name_field_and_bound(kwargs, field, fragment):
    arguments = {"x": "1, 2, 3", "weight": "1, 1, 1", "eps": 1e-6}
    arguments.update(kwargs)
    with pytest.raises(ValidationError) as info:
        make_problem(**arguments)
    assert info.value.field == field
    assert fragment in str(info.value), str(info.value)


def test_rows_times_stride_bound():
    with pytest.raises(ValidationError, match="row_stride: rows \\* row_stride"):
        make_problem(np.ones((2, 4)), np.ones(4), eps=1e-6, row_stride=LIMITS.max_elements)


def test_parse_accepts_commas_spaces_semicolons_newlines_and_files(tmp_path):
    np.testing.assert_array_equal(
        parse_matrix("1, 2 3;4,5,6\n7 8 9"), [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    )
    np.testing.assert_array_equal(parse_vector("0.5, 1.25 -2"), [0.5, 1.25, -2.0])
    path = tmp_path / "x.txt"
    path.write_text("1 2\n3 4\n")
    np.testing.assert_array_equal(parse_matrix(f"@{path}"), [[1, 2], [3, 4]])
    with pytest.raises(ValidationError, match="x: cannot read"):
        parse_matrix(f"@{tmp_path / 'missing.txt'}")


def test_check_helpers_accept_integral_text():
    assert check_int("rows", "4", 1, 10) == 4
    assert check_int("rows", 4.0, 1, 10) == 4
    assert check_eps("1e-5") == 1e-5


@settings(max_examples=300, deadline=None)
@given(
    x=st.text(alphabet="0123456789.,;eE+-naifbc \n", max_size=60),
    weight=st.text(alphabet="0123456789.,;eE+-nai ", max_size=30),
    eps=st.one_of(st.text(max_size=12), st.floats(allow_nan=True, allow_infinity=True), st.none()),
)
def test_any_text_parses_to_a_valid_problem_or_a_validation_error(x, weight, eps):
    try:
        problem = make_problem(x, weight, eps=eps)
    except ValidationError as exc:
        assert exc.field in {"x", "weight", "eps", "rows", "width", "row_stride"}
        assert str(exc).startswith(exc.field + ":")
        return
    assert np.all(np.isfinite(problem.x))
    assert problem.weight.shape == (problem.width,)
    assert LIMITS.min_eps <= problem.eps <= LIMITS.max_eps


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(st.text(max_size=10), st.integers(), st.floats(), st.booleans(), st.none()))
def test_check_int_returns_in_range_int_or_raises(value):
    try:
        number = check_int("rows", value, 1, 4096)
    except ValidationError as exc:
        assert exc.field == "rows"
        return
    assert isinstance(number, int)
    assert 1 <= number <= 4096
