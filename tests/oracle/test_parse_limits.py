"""The text parser's limits, at the bound and one step past it, and how it reports what it refuses.

The numbers are written out, not read from ``oracle.parse`` or ``oracle.limits`` (README): at most
32 characters per allowed value, 32 * 4194304 = 134217728 characters of text or bytes of an
``@file``; at most 4096 rows and 65536 values a row. Files past the bound are sparse (made by
seeking, nothing written in between), so a refused size costs no disk and, refused by its size,
no read.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oracle.limits import ValidationError
from oracle.parse import parse_matrix, parse_vector, read_text

TEXT_LIMIT = 134_217_728  # 32 * 4194304


def _sparse_file(path: Path, size: int, head: bytes = b"1", tail: bytes = b"") -> Path:
    """A file of ``size`` bytes: ``head``, NUL bytes never written (a hole), then ``tail``."""
    with path.open("wb") as handle:
        handle.write(head)
        handle.seek(size - len(tail))
        handle.write(tail)
        handle.truncate(size)
    assert path.stat().st_size == size
    return path


def _refusal(call, *args) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        call(*args)
    return info.value


# ---------------------------------------------------------------- text size


def test_text_of_134217728_characters_is_parsed_and_one_more_is_refused() -> None:
    at_limit = "1" + " " * (TEXT_LIMIT - 2) + "7"
    assert parse_vector(at_limit).tolist() == [1.0, 7.0]
    del at_limit  # not two 128 MiB strings at once
    past = "1" + " " * (TEXT_LIMIT - 1) + "7"
    error = _refusal(parse_vector, past)
    assert error.field == "weight"
    assert error.value == 134_217_729
    assert str(error) == "weight: 134217729 characters, more than 134217728"


def test_an_at_file_of_134217728_bytes_is_read_to_its_last_byte(tmp_path) -> None:
    path = _sparse_file(tmp_path / "at_limit.txt", TEXT_LIMIT, head=b"1 ", tail=b" 7")
    text = read_text(f"@{path}", "x")
    assert len(text) == 134_217_728
    assert text.startswith("1 ")
    assert text.endswith(" 7")


def test_an_at_file_one_byte_past_is_refused_by_its_size(tmp_path) -> None:
    path = _sparse_file(tmp_path / "past.txt", TEXT_LIMIT + 1)
    error = _refusal(parse_matrix, f"@{path}")
    assert error.field == "x"
    assert error.bound == "a file of at most 134217728 bytes"
    assert str(error) == f"x: file {path} has 134217729 bytes, more than 134217728"


@pytest.fixture
def files_claim_0_bytes(monkeypatch) -> None:
    """Every open file reports size 0, as ``/proc`` files do, whatever it holds."""
    real_fstat = os.fstat

    def claims_empty(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        return os.stat_result((*info[:6], 0, *info[7:10]))

    monkeypatch.setattr(os, "fstat", claims_empty)


@pytest.mark.parametrize("size", [134_217_729, 136_314_880])
def test_a_file_that_claims_0_bytes_is_read_no_further_than_one_byte_past(
    tmp_path, files_claim_0_bytes, size: int
) -> None:
    """Like a ``/proc`` file, this one says it is empty: the read itself must stop at 134217729
    bytes and refuse, not return a truncated text, and not read on to the end."""
    path = _sparse_file(tmp_path / "claims_empty.txt", size)
    error = _refusal(parse_vector, f"@{path}")
    assert str(error) == (f"weight: file {path} has more than 134217729 bytes, more than 134217728")


def test_a_file_that_claims_0_bytes_and_holds_134217728_is_read_whole(
    tmp_path, files_claim_0_bytes
) -> None:
    path = _sparse_file(tmp_path / "claims_empty.txt", TEXT_LIMIT, head=b"1 ", tail=b" 7")
    text = read_text(f"@{path}", "x")
    assert len(text) == 134_217_728
    assert text.endswith(" 7")


# ---------------------------------------------------------------- unreadable files


def test_a_file_that_is_not_utf8_is_refused_by_name(tmp_path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"1 \xff 2")
    error = _refusal(parse_vector, f"@{path}")
    assert error.field == "weight"
    assert error.bound == "a readable UTF-8 text file"
    assert str(error).startswith(f"weight: cannot read {path}: 'utf-8' codec can't decode")


def test_a_missing_file_is_refused_with_the_system_reason(tmp_path) -> None:
    path = tmp_path / "absent.txt"
    error = _refusal(parse_matrix, f"@{path}")
    assert str(error) == f"x: cannot read {path}: No such file or directory"


# ---------------------------------------------------------------- rows and width


@pytest.mark.parametrize("separator", [";", "\n"])
def test_text_rows_from_1_to_4096(separator: str) -> None:
    assert parse_matrix(separator.join(["2"] * 4096)).shape == (4096, 1)
    error = _refusal(parse_matrix, separator.join(["2"] * 4097))
    assert error.field == "rows"
    assert error.value == 4097
    assert error.bound == "an integer in [1, 4096]"
    assert str(error) == "rows: 4097 rows given, more than 4096"


def test_text_width_up_to_65536_values_a_row() -> None:
    row = " ".join(["3"] * 65536)
    assert parse_matrix(f"{row}; {row}").shape == (2, 65536)
    error = _refusal(parse_matrix, f"{row}; {row} 3")
    assert error.field == "width"
    assert error.value == 65537
    assert error.bound == "an integer in [1, 65536]"
    assert str(error) == "width: row 1 has 65537 values, more than 65536"


@pytest.mark.parametrize(
    ("text", "bad_width", "message"),
    [
        ("1 2; 3 4 5; 6 7", 3, "x: width mismatch: row 1 has 3 values, row 0 has 2"),
        ("1 2 3; 4 5 6; 7 8", 2, "x: width mismatch: row 2 has 2 values, row 0 has 3"),
        ("1; 2; 3 4", 2, "x: width mismatch: row 2 has 2 values, row 0 has 1"),
    ],
)
def test_ragged_rows_name_the_first_row_unlike_row_0(
    text: str, bad_width: int, message: str
) -> None:
    error = _refusal(parse_matrix, text)
    assert error.field == "x"
    assert error.value == bad_width
    assert str(error) == message
