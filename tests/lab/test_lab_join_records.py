"""A record cut short by its budget, completed by a second run (lab.join_records; CPU only)."""

from __future__ import annotations

import json

import pytest

from kernels import bench
from lab import join_records

IMPLS = ("copy", "ours")
ENV = {"torch": "2.11.0", "device": {"name": "H100"}}


def _row(case: tuple[str, int, int], impl: str, status: str, median_us: float = 2.0) -> dict:
    set_name, rows, width = case
    row = {
        "set": set_name,
        "rows": rows,
        "width": width,
        "dtype": "float32",
        "impl": impl,
        "status": status,
    }
    if status == "ok":
        row.update(median_us=median_us, gbps=1.0 / median_us)
    return row


def _report(cases: dict[tuple[str, int, int], str], median_us: float, command: str) -> dict:
    return {
        "schema_version": bench.report.SCHEMA_VERSION,
        "command": command,
        "started_utc": command,
        "wall_s": 1.0,
        "environment": ENV,
        "implementations": {"ours": {"sha256": "ab"}},
        "protocol": {"rounds": 2},
        "dtypes": ["float32"],
        "impls": list(IMPLS),
        "results": [_row(c, i, s, median_us) for c, s in cases.items() for i in IMPLS],
    }


A, B, C = ("llm", 8, 4096), ("heldout", 16, 3072), ("heldout", 4, 70)


def test_each_skipped_case_comes_whole_from_the_completion_in_the_records_order():
    record = _report({A: "ok", B: "skipped", C: "skipped"}, 1.0, "first")
    completion = _report({C: "ok", B: "ok", A: "ok"}, 3.0, "second")
    joined = join_records.join(record, completion)
    cases = [
        (r["set"], r["rows"], r["width"], r["impl"], r.get("median_us")) for r in joined["results"]
    ]
    assert cases == [
        (*A, "copy", 1.0),
        (*A, "ours", 1.0),  # the record's own case stays the record's
        (*B, "copy", 3.0),
        (*B, "ours", 3.0),  # copy and ours of one case from one run
        (*C, "copy", 3.0),
        (*C, "ours", 3.0),
    ]
    assert joined["command"] == "first"
    assert joined["completed_by"]["command"] == "second"
    assert joined["completed_by"]["cases"] == [[*B, "float32"], [*C, "float32"]]


@pytest.mark.parametrize("field", join_records.SAME_FIELDS[1:])
def test_a_completion_of_another_machine_or_protocol_is_refused_by_field(field):
    record = _report({A: "skipped"}, 1.0, "first")
    completion = _report({A: "ok"}, 3.0, "second")
    completion[field] = {"other": 1}
    with pytest.raises(ValueError, match=f"^{field} differs"):
        join_records.join(record, completion)


def test_a_completion_that_lacks_or_skipped_a_case_is_refused_naming_it():
    record = _report({A: "ok", B: "skipped"}, 1.0, "first")
    with pytest.raises(ValueError, match="no result of the skipped case heldout 16x3072 float32"):
        join_records.join(record, _report({A: "ok"}, 3.0, "second"))
    with pytest.raises(ValueError, match="skipped the case heldout 16x3072 float32 too"):
        join_records.join(record, _report({B: "skipped"}, 3.0, "second"))
    joined = join_records.join(record, _report({B: "ok"}, 3.0, "second"))
    joined["results"][-1]["status"] = "skipped"
    with pytest.raises(ValueError, match=r"already completed \(completed_by\)"):
        join_records.join(joined, _report({B: "ok"}, 4.0, "third"))
    with pytest.raises(ValueError, match="skipped no case"):
        join_records.join(_report({A: "ok"}, 1.0, "first"), _report({A: "ok"}, 3.0, "second"))


def test_the_command_writes_compact_json_that_reads_back_and_refuses_with_exit_2(tmp_path, capsys):
    first, second, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "joined.json"
    first.write_text(json.dumps(_report({A: "ok", B: "skipped"}, 1.0, "first"), indent=1))
    second.write_text(json.dumps(_report({B: "ok"}, 3.0, "second"), indent=1))
    assert join_records.main([str(first), str(second), "--out", str(out)]) == 0
    text = out.read_text()
    assert "\n" not in text.rstrip("\n")
    assert ", " not in text
    assert len(bench.read_json(out)["results"]) == 4
    assert "4 results; cases completed: 1" in capsys.readouterr().out
    assert join_records.main([str(second), str(first), "--out", str(tmp_path / "x.json")]) == 2
    assert "skipped no case" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
