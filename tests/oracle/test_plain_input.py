"""Text becomes a number only when it is a plain number, and ``@file`` reads only regular files,
within the text limit, with error lines of a readable length."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.limits import ValidationError, plain_float
from oracle.parse import MAX_TEXT_CHARS, check_regular_file, parse_matrix, parse_vector
from oracle.spec import check_eps, check_int

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("text", "value"),
    [("7", 7.0), ("-2.5", -2.5), ("+.5", 0.5), ("3.", 3.0), ("1e-3", 1e-3), ("2E+5", 2e5),
     (" 12\t", 12.0)],
)  # fmt: skip
def test_plain_numbers_are_numbers(text: str, value: float) -> None:
    assert plain_float(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "1_000",  # Python's underscores
        "\u0661\u0662",  # Arabic-Indic digits
        "\uff11\uff12",  # full-width digits
        "\u00a012",  # a no-break space
        "0x10",
        "1e",
        ".",
        "",
        "--1",
    ],
)
def test_anything_else_is_not_a_number(text: str) -> None:
    with pytest.raises(ValueError, match="not a plain number"):
        plain_float(text)


def test_nan_and_infinity_spelled_out_reach_the_finite_check() -> None:
    assert plain_float("-inf") == float("-inf")
    with pytest.raises(ValidationError, match="eps: 'nan' is not finite"):
        check_eps("nan")


@pytest.mark.parametrize("text", ["1_000", "\u0661\u0662", "\uff14"])
def test_fields_refuse_digits_that_are_not_ascii(text: str) -> None:
    with pytest.raises(ValidationError, match=r"rows: .* is not a number"):
        check_int("rows", text, 1, 4096)
    with pytest.raises(ValidationError, match=r"eps: .* is not a number"):
        check_eps(text)
    with pytest.raises(ValidationError, match=r"x: .* at row 0, column 1 is not a number"):
        parse_matrix(f"1, {text}")


def test_an_error_line_cuts_a_huge_token() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_vector("1 " + "z" * 1_000_000)
    assert len(str(caught.value)) < 200
    assert "weight: 'zzzz" in str(caught.value)


def test_at_file_refuses_a_directory_and_a_device(tmp_path) -> None:
    with pytest.raises(ValidationError, match=f"x: {tmp_path} is a directory"):
        parse_matrix(f"@{tmp_path}")
    with pytest.raises(ValidationError, match="weight: /dev/zero is a device"):
        parse_vector("@/dev/zero")
    with pytest.raises(ValidationError, match="x: /dev/null is a device"):
        check_regular_file("/dev/null", "x")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_at_file_refuses_a_fifo_without_waiting_for_a_writer(tmp_path) -> None:
    # In a child with a deadline: a reader that opened the FIFO would wait for a writer forever.
    fifo = tmp_path / "values.txt"
    os.mkfifo(fifo)
    code = (
        "import sys\n"
        "from oracle.parse import parse_matrix, check_regular_file\n"
        "from oracle.limits import ValidationError\n"
        "for call in (lambda: parse_matrix('@' + sys.argv[1]),\n"
        "             lambda: check_regular_file(sys.argv[1], 'x')):\n"
        "    try:\n"
        "        call()\n"
        "    except ValidationError as err:\n"
        "        print(err)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(fifo)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.splitlines() == [f"x: {fifo} is a FIFO"] * 2


def test_at_file_reads_at_most_the_text_limit(tmp_path) -> None:
    at_limit = tmp_path / "at_limit.txt"
    at_limit.write_bytes(b"1" + b" " * (MAX_TEXT_CHARS - 1))
    assert parse_vector(f"@{at_limit}").tolist() == [1.0]
    past = tmp_path / "past.txt"
    past.write_bytes(b"1" + b" " * MAX_TEXT_CHARS)
    with pytest.raises(ValidationError, match=f"has {MAX_TEXT_CHARS + 1} bytes, more than"):
        parse_vector(f"@{past}")
