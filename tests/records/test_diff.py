"""`main.py diff A B`: receipts or sessions; timing changes only beyond the recorded spread."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inspector.cli import entry
from inspector.records.diff import bench_differences
from inspector.records.receipts import receipt
from inspector.records.sessions.session import Session, save_session


@pytest.fixture
def receipts(model_results, tmp_path) -> tuple[Path, dict]:
    written = receipt.write_receipts(model_results["float32"], tmp_path / "a")
    return tmp_path / "a" / "receipt.json", written


def _write(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_same_receipt_is_equivalent(receipts, capsys):
    path, _ = receipts
    assert entry.main(["diff", str(path), str(path)]) == 0
    assert capsys.readouterr().out.startswith("equivalent")


def test_differences_are_named(receipts, tmp_path, capsys):
    path, data = receipts
    changed = json.loads(json.dumps(data))
    changed["rows"][1]["rrms"] *= 1 + 2**-40
    changed["mutants"][0]["killed_by"] = changed["mutants"][0]["killed_by"][:1]
    changed["kernel"]["source_sha256"] = "0" * 64
    changed["versions"]["triton"] = "9.9.9"
    changed["created"] = "another day"  # timestamps are not differences
    other = _write(tmp_path / "b" / "receipt.json", changed)
    assert entry.main(["diff", str(path), str(other)]) == 1
    out = capsys.readouterr().out
    assert "rows: row 1 rrms" in out
    assert f"mutants: model {data['mutants'][0]['name']}" in out
    assert "kernel: source_sha256" in out
    assert "versions: triton" in out
    assert "created" not in out
    assert "different: 4 difference(s)" in out


def test_sessions_compare_receipts_and_timing_beyond_spread(receipts, tmp_path, capsys):
    path, data = receipts
    rng = np.random.default_rng(0)
    base = rng.normal(10.0, 0.5, 200)

    def session_file(name: str, samples: dict) -> Path:
        given = data["input"]
        state = Session(
            x=np.array(given["x"]),
            weight=np.array(given["weight"]),
            eps=given["eps"],
            row_stride=given["row_stride"],
        )
        state.receipt_json = path.read_text(encoding="utf-8")
        state.bench_samples = samples
        target = tmp_path / f"{name}.h5"
        save_session(target, state)
        return target

    first = session_file("first", {"triton 4x70": base})
    noise = session_file("noise", {"triton 4x70": base + 0.1})  # well inside the IQR (~0.67)
    slower = session_file("slower", {"triton 4x70": base + 2.0})
    assert entry.main(["diff", str(first), str(noise)]) == 0
    capsys.readouterr()
    assert entry.main(["diff", str(first), str(slower)]) == 1
    assert "bench triton 4x70: median" in capsys.readouterr().out
    # A session and a receipt: the receipt part only.
    assert entry.main(["diff", str(first), str(path)]) == 0


def test_bench_differences_lists_missing_keys():
    assert bench_differences({"a": np.ones(3)}, {"b": np.ones(3)}) == [
        "bench a: only in the first",
        "bench b: only in the second",
    ]


@pytest.mark.parametrize("kind", ["missing", "foreign_h5", "not_a_receipt", "no_receipt"])
def test_bad_input_is_usage(receipts, tmp_path, capsys, kind):
    path, _ = receipts
    if kind == "missing":
        other = tmp_path / "nope.json"
    elif kind == "foreign_h5":
        other = tmp_path / "foreign.h5"
        other.write_text("not hdf5")
    elif kind == "not_a_receipt":
        other = _write(tmp_path / "x" / "other.json", {"hello": 1})
    else:
        other = tmp_path / "empty.h5"
        save_session(other, Session(x=np.ones((1, 2)), weight=np.ones(2)))
    assert entry.main(["diff", str(path), str(other)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: B: ")
    assert err.count("\n") == 1


def test_sessions_with_the_same_receipt_but_different_inputs_differ(receipts, tmp_path, capsys):
    # Each session carries the same receipt, but the second's input was edited after it: diff
    # compares what the sessions hold, so the input's hash differs.
    path, data = receipts
    given = data["input"]
    files = []
    for name, bump in (("kept", 0.0), ("edited", 0.5)):
        x = np.array(given["x"])
        x[0, 0] += bump
        state = Session(
            x=x, weight=np.array(given["weight"]), eps=given["eps"], row_stride=given["row_stride"]
        )
        state.receipt_json = path.read_text(encoding="utf-8")
        target = tmp_path / f"{name}.h5"
        save_session(target, state)
        files.append(str(target))
    assert entry.main(["diff", *files]) == 1
    assert "input: x_sha256" in capsys.readouterr().out


def test_a_session_whose_receipt_is_not_json_is_a_usage_error(receipts, tmp_path, capsys):
    path, data = receipts
    given = data["input"]
    state = Session(
        x=np.array(given["x"]),
        weight=np.array(given["weight"]),
        eps=given["eps"],
        row_stride=given["row_stride"],
    )
    state.receipt_json = '{"verdict": '  # cut short
    target = tmp_path / "cut.h5"
    save_session(target, state)
    assert entry.main(["diff", str(target), str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: A: the receipt in {target} is not JSON (")


def _timed(data: dict, factor: float) -> dict:
    """The receipt with a timing: the committed record's 8x4096 bfloat16 rows, ours' device samples
    times ``factor`` (its loop samples as recorded)."""
    record = json.loads((Path(__file__).resolve().parents[2] / "docs" / "benchmarks" /
                         "results.json").read_text())  # fmt: skip
    rows = [
        {key: row[key] for key in ("impl", "status", "samples_us", "loop_samples_us")}
        for row in record["results"]
        if (row["rows"], row["width"], row["dtype"]) == (8, 4096, "bfloat16")
        and row["impl"] in ("copy", "ours")
    ]
    for row in rows:
        if row["impl"] == "ours":
            row["samples_us"] = [value * factor for value in row["samples_us"]]
    timed = json.loads(json.dumps(data))
    timed["timing"] = {"command": ["python", "main.py", "bench"], "protocol": "the bench's",
                       "rows": 8, "width": 4096, "dtype": "bfloat16", "checked": "ours",
                       "device": "NVIDIA H200", "started_utc": "", "results": rows}  # fmt: skip
    return timed


def test_receipt_timings_differ_only_beyond_their_spread(receipts, tmp_path, capsys):
    _path, data = receipts
    first = _write(tmp_path / "t1" / "receipt.json", _timed(data, 1.0))
    same = _write(tmp_path / "t2" / "receipt.json", _timed(data, 1.0))
    slower = _write(tmp_path / "t3" / "receipt.json", _timed(data, 1.2))
    assert entry.main(["diff", str(first), str(same)]) == 0
    assert entry.main(["diff", str(first), str(slower)]) == 1
    out = capsys.readouterr().out
    assert "timing: ours device us: median" in out
    assert "beyond the spread" in out
    assert "ours loop us" not in out
    assert "copy device us" not in out
    # Measured in one, absent in the other (the interpreter's receipt): named; absent in both:
    # nothing to compare.
    absent = json.loads(json.dumps(data))
    absent["timing"] = {"absent": "the interpreter"}
    other = _write(tmp_path / "t4" / "receipt.json", absent)
    assert entry.main(["diff", str(first), str(other)]) == 1
    assert "timing: measured in the first, absent in the second" in capsys.readouterr().out
    assert entry.main(["diff", str(other), str(other)]) == 0


def test_an_integer_past_float64_is_a_difference_not_an_error(receipts, tmp_path, capsys):
    path, data = receipts
    text = json.dumps({**data, "errors": {**data["errors"], "max_abs": 0.123456789}})
    other = tmp_path / "b" / "receipt.json"
    other.parent.mkdir()
    other.write_text(text.replace("0.123456789", "1" + "0" * 400), encoding="utf-8")
    assert entry.main(["diff", str(path), str(other)]) == 1
    out = capsys.readouterr().out
    assert "errors: max_abs" in out
    assert "different: 1 difference(s)" in out


def test_names_from_a_file_are_printed_escaped_on_their_own_line(receipts, tmp_path, capsys):
    # A newline would forge a line of output; a lone surrogate would fail the print.
    path, data = receipts
    changed = json.loads(json.dumps(data))
    changed["fixtures"][0]["name"] = "a\nverified: all good\ud800"
    other = _write(tmp_path / "b" / "receipt.json", changed)
    assert entry.main(["diff", str(path), str(other)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert not any(line.startswith("verified") for line in lines)
    assert any("a\\nverified: all good\\ud800" in line for line in lines)
    assert entry.main(["verify", str(other)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert not any(line.startswith("verified") for line in lines)


def test_every_section_of_the_proof_is_compared_leaf_by_leaf(receipts, tmp_path, capsys):
    path, data = receipts
    changed = json.loads(json.dumps(data))
    changed["error_bound"]["adds"] = data["error_bound"]["adds"] + 1
    changed["batch_invariance"] = {"absent": "another reason"}
    changed["tile"]["block"] = data["tile"]["block"] * 2
    changed["traffic"]["note"] = "free text is not a difference"
    other = _write(tmp_path / "b" / "receipt.json", changed)
    assert entry.main(["diff", str(path), str(other)]) == 1
    out = capsys.readouterr().out
    assert f"error_bound: adds {data['error_bound']['adds']} -> " in out
    assert "batch_invariance: absent " in out
    assert f"tile: block {data['tile']['block']} -> {data['tile']['block'] * 2}" in out
    assert "traffic" not in out
    assert "different: 3 difference(s)" in out
