"""Fuzzed command-line input: any text either becomes a valid problem or a one-field error.

Goes through the real parser (``build_parser``) and the same problem builder ``check`` uses,
so argparse, the text parser and the validators are all exercised; nothing else may escape.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.cli import check_command, entry
from oracle.spec import LIMITS, Problem, ValidationError

FIELDS = {"x", "weight", "eps", "rows", "width", "row_stride", "dtype", "seed", "fixture"}

number_text = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**8), 10**8).map(str),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "abc", "", " ", "1e-12", "0x10", "1_000"]),
)
separator = st.sampled_from([",", " ", ", ", "\t", ",,"])


@st.composite
def matrix_text(draw) -> str:
    rows = draw(st.integers(1, 4))
    width = draw(st.integers(1, 5))
    lines = [
        draw(separator).join(draw(st.lists(number_text, min_size=width, max_size=width)))
        for _ in range(rows)
    ]
    return draw(st.sampled_from([";", "\n", "; "])).join(lines)


any_text = st.one_of(st.text(max_size=60), matrix_text(), number_text)


def _build(argv: list[str]) -> Problem | str:
    """The problem, or the error field; anything else propagates and fails the test."""
    args = entry.build_parser().parse_args(["check", "--out", "unused", *argv])
    try:
        return check_command._build_problem(args)
    except ValidationError as exc:
        assert exc.field in FIELDS, exc.field
        assert str(exc).startswith(exc.field)
        return exc.field
    except entry.UsageError as exc:
        field = str(exc).split(":", 1)[0]
        assert field in FIELDS, str(exc)
        return field


def _assert_valid(problem: Problem) -> None:
    assert 1 <= problem.rows <= LIMITS.max_rows
    assert problem.weight.shape == (problem.width,)
    assert np.isfinite(problem.x).all()
    assert np.isfinite(problem.weight).all()
    assert np.abs(problem.x).max() <= LIMITS.max_abs_x
    assert LIMITS.min_eps <= problem.eps <= LIMITS.max_eps
    assert math.isfinite(problem.eps)


@settings(max_examples=300, deadline=None)
@given(x=any_text, weight=any_text, eps=any_text)
def test_any_x_weight_eps_text_is_a_problem_or_a_named_error(x, weight, eps):
    result = _build([f"--x={x}", f"--weight={weight}", f"--eps={eps}"])
    if isinstance(result, Problem):
        _assert_valid(result)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.one_of(st.none(), number_text),
    width=st.one_of(st.none(), number_text),
    row_stride=st.one_of(st.none(), number_text),
    seed=st.one_of(st.none(), number_text),
    dtype=st.one_of(st.none(), st.sampled_from(["float32", "float16", "bfloat16", "int8", ""])),
)
def test_any_synthetic_options_are_a_problem_or_a_named_error(rows, width, row_stride, seed, dtype):
    argv = []
    for name, value in (
        ("rows", rows),
        ("width", width),
        ("row-stride", row_stride),
        ("seed", seed),
        ("dtype", dtype),
    ):
        if value is not None:
            argv.append(f"--{name}={value}")
    # Keep the synthetic problems small: this is about validation, not big arrays.
    try:
        if float(rows or 4) * float(width or 70) > 1e5:
            return
    except ValueError:
        pass
    result = _build(argv)
    if isinstance(result, Problem):
        _assert_valid(result)


@settings(max_examples=300, deadline=None)
@given(x=any_text, weight=any_text, eps=any_text, dtype=st.sampled_from(["float32", "bfloat16"]))
def test_make_problem_on_any_text_returns_a_problem_or_raises_validation_error(
    x, weight, eps, dtype
):
    from oracle.spec import make_problem

    try:
        problem = make_problem(x, weight, eps=eps, dtype=dtype)
    except ValidationError as exc:
        assert exc.field in FIELDS
        return
    _assert_valid(problem)
