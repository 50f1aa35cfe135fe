"""The JSON bounds docs/UNTRUSTED.md declares for each reader are the bounds the reader holds,
number for number (containers / values / strings): a bound moved in the code without the
declaration, or the other way round, fails here. The coverage record's byte cap is pinned at
its bound and one byte past."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> dict[str, tuple[int, int, int]]:
    text = (ROOT / "docs" / "UNTRUSTED.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if "each reader's bounds hold" in line)
    words = r"(?: [a-z]+)?"  # "106,384 containers / 4,810,912 values / ..." or bare numbers
    found = re.findall(rf"(a [a-z ]+?) ([\d,]+){words} / ([\d,]+){words} / ([\d,]+)", row)
    return {name: tuple(int(n.replace(",", "")) for n in numbers) for name, *numbers in found}


def _bounds(name: str):
    from inspector.coverage import proof
    from inspector.mutate import saved_report
    from inspector.records.receipts import format as receipt_format
    from kernels.bench import report, shapes

    return {
        "a receipt": receipt_format.RECEIPT_BOUNDS,
        "a benchmark record": report.RECORD_BOUNDS,
        "a mutation report": saved_report.REPORT_BOUNDS,
        "a coverage record": proof.RECORD_BOUNDS,
        "a shape set": shapes.SHAPE_SET_BOUNDS,
    }[name]


def test_every_reader_untrusted_md_names_is_declared() -> None:
    assert sorted(_declared()) == [
        "a benchmark record",
        "a coverage record",
        "a mutation report",
        "a receipt",
        "a shape set",
    ]


@pytest.mark.parametrize(
    "name",
    ["a receipt", "a benchmark record", "a mutation report", "a coverage record", "a shape set"],
)
def test_the_code_holds_the_declared_bounds(name: str) -> None:
    bounds = _bounds(name)
    assert (bounds.containers, bounds.values, bounds.strings) == _declared()[name]


def test_the_coverage_record_is_read_up_to_8_mib_and_refused_one_byte_past(tmp_path) -> None:
    from inspector.coverage.proof import MAX_RECORD_BYTES, RECORD_BOUNDS, read_record

    assert MAX_RECORD_BYTES == RECORD_BOUNDS.size == 8 * 2**20
    body = json.dumps({"kind": "x"})
    path = tmp_path / "record.json"
    path.write_text(body + " " * (MAX_RECORD_BYTES - len(body)), encoding="utf-8")
    # read at the bound, then refused for its content (no version), not for its size
    with pytest.raises(ValueError, match="record") as at_bound:
        read_record(path)
    assert "bytes, over" not in str(at_bound.value)
    path.write_text(body + " " * (MAX_RECORD_BYTES + 1 - len(body)), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{MAX_RECORD_BYTES + 1} bytes, over {8 * 2**20}"):
        read_record(path)
