"""The check's timing (``inspector/check/timing_stage.py``): absent with its reason under the
interpreter, after a failed check and with ``--no-timing``; the section read from a real GPU
benchmark record of one shape (the committed record, cut to that shape) and carried through a
receipt that validates and reparses; the bench command it runs; and, on a GPU (the ``gpu``
marker), the real ``check --device cuda`` timing the bundled kernel and a user's."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kernels
from inspector.check import pipeline, timing_stage
from inspector.check.report import receipt_lines
from inspector.records.receipts.receipt import read_receipt, write_receipts
from kernels.bench import read_json
from kernels.sandbox.usercode import parse_kernel_spec
from oracle import fixtures

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "docs" / "benchmarks" / "results.json"
# The card the committed record ran on, as the record names it.
CARD = json.loads(RECORD.read_text())["environment"]["device"]["name"]
TUTORIAL = ROOT / "resources" / "kernels" / "tutorial.py"
DRAM = {
    "bytes_read": 9437184,
    "bytes_written": 8388608,
    "pct_of_peak": 71.5,
    "duration_ns": 4200.0,
    "kernels": ["_rms_norm_tile"],
    "launches": 1,
    "ncu_version": "2025.3.1.0",
    "clock_control": "none",
}


def _one_shape_record(tmp_path: Path, rows: int, width: int, dtype: str, **ours) -> Path:
    """The committed record cut to one shape's rows (ours updated with ``ours``)."""
    report = json.loads(RECORD.read_text())
    kept = [
        row
        for row in report["results"]
        if (row["rows"], row["width"], row["dtype"]) == (rows, width, dtype)
        and row["impl"] in ("copy", "ours", "torch_eager")
    ]
    assert len(kept) == 3, "the record no longer holds this shape"
    for row in kept:
        if row["impl"] == "ours":
            row.update(ours)
    report["results"] = kept
    path = tmp_path / "results.json"
    path.write_text(json.dumps(report))
    return path


def _args() -> list[str]:
    return ["bench", "--shapes", "8x4096", "--dtypes", "bfloat16", "--eps", "1e-06",
            "--impls", "ours,torch_eager", "--no-plot"]  # fmt: skip


def test_a_record_of_one_shape_becomes_the_section_with_its_figures(tmp_path) -> None:
    report = read_json(_one_shape_record(tmp_path, 8, 4096, "bfloat16"))
    section = timing_stage.timing_section(report, "ours", _args())
    assert section["command"] == ["python", "main.py", *_args()]
    assert (section["rows"], section["width"], section["dtype"]) == (8, 4096, "bfloat16")
    assert section["device"] == CARD
    assert section["checked"] == "ours"
    rows = {row["impl"]: row for row in section["results"]}
    assert set(rows) == {"copy", "ours", "torch_eager"}
    (ours,) = [row for row in report["results"] if row["impl"] == "ours"]
    for key in ("median_us", "p20_us", "p80_us", "samples_us", "loop_median_us",
                "loop_samples_us", "pct_of_copy", "timing_mode"):  # fmt: skip
        assert rows["ours"][key] == ours[key], key
    assert set(rows["ours"]) <= set(timing_stage.ROW_FIELDS)
    # A record made without --ncu has no DRAM figures: the section says why.
    assert section["dram"] == {"absent": timing_stage.NO_NCU}


def test_the_checked_rows_dram_is_carried_and_split_into_device_evidence(tmp_path) -> None:
    report = read_json(_one_shape_record(tmp_path, 8, 4096, "bfloat16", dram=DRAM))
    section = timing_stage.timing_section(report, "ours", _args())
    timing, dram = timing_stage.split_dram(section)
    assert dram == DRAM
    assert "dram" not in timing
    assert all("dram" not in row for row in timing["results"])


@pytest.mark.parametrize(
    ("section", "timing", "dram"),
    [
        (None, {"absent": "the kernel did not run"}, {"absent": "the kernel did not run"}),
        ({"absent": "why"}, {"absent": "why"}, {"absent": "no timing run: why"}),
    ],
)
def test_an_absent_timing_gives_an_absent_dram_with_its_reason(section, timing, dram) -> None:
    assert timing_stage.split_dram(section) == (timing, dram)


def test_a_record_that_is_not_of_one_shape_or_lacks_the_checked_row_is_refused(tmp_path):
    report = read_json(_one_shape_record(tmp_path, 8, 4096, "bfloat16"))
    with pytest.raises(ValueError, match="the record holds no row of 'candidate'"):
        timing_stage.timing_section(report, "candidate", _args())
    report["results"].append({**report["results"][0], "rows": 16})
    with pytest.raises(ValueError, match="a check's timing is of one shape; the record holds 2"):
        timing_stage.timing_section(report, "ours", _args())


def test_the_lines_name_each_implementation_and_the_dram(tmp_path) -> None:
    report = read_json(_one_shape_record(tmp_path, 8, 4096, "bfloat16", dram=DRAM))
    section = timing_stage.timing_section(report, "ours", _args())
    rows = {row["impl"]: row for row in section["results"]}
    timing, dram = timing_stage.timing_lines(section)
    assert timing.startswith(f"timing on {CARD} (8x4096 bfloat16; median device "
                             "time, eager-loop time per call): copy ")  # fmt: skip
    ours = rows["ours"]
    assert (f"ours {ours['median_us']:.2f} us ({ours['pct_of_copy']:.0f}% of copy), loop "
            f"{ours['loop_median_us']:.2f} us/call") in timing  # fmt: skip
    assert dram == ("DRAM (Nsight Compute) of one ours call: 71.5% of peak, 9,437,184 bytes "
                    "read, 8,388,608 written")  # fmt: skip
    assert timing_stage.timing_lines({"absent": "why"}) == ["timing: not measured: why"]
    assert timing_stage.timing_lines(None) == []


def test_the_bench_command_times_the_checked_kernel_beside_eager_and_asks_ncu_when_present():
    problem = fixtures.get("hand_checkable").build()
    out = Path("/tmp/x")
    bundled = timing_stage.bench_arguments(problem, None, out, ncu=False)
    assert bundled == ["bench", "--shapes", f"{problem.rows}x{problem.width}", "--dtypes",
                       problem.dtype, "--eps", repr(problem.eps), "--impls", "ours,torch_eager",
                       "--no-plot", "--out", "/tmp/x"]  # fmt: skip
    spec = parse_kernel_spec(f"{TUTORIAL}:rms_norm")
    user = timing_stage.bench_arguments(problem, spec, out, ncu=True)
    assert user[user.index("--impls") + 1] == "torch_eager"
    assert user[user.index("--kernel") + 1] == f"{spec.path}:rms_norm"
    assert "--ncu" in user


def test_the_interpreter_times_nothing_and_says_why() -> None:
    if kernels.MODE != "interpreter":
        pytest.skip("the interpreter's answer")
    section = timing_stage.timing_stage(fixtures.get("hand_checkable").build())
    assert section == {
        "absent": "the Triton interpreter runs on the CPU and makes no timing claims; "
        "`check --device cuda` on a GPU times the kernel"
    }


def test_a_failed_check_or_no_timing_asked_for_is_not_timed() -> None:
    problem = fixtures.get("hand_checkable").build()
    config = pipeline.CheckConfig(timing=False)
    assert pipeline._timing(problem, config, []) == {"absent": "not asked for (check --no-timing)"}
    assert pipeline._timing(problem, pipeline.CheckConfig(), ["a fixture failed"]) == {
        "absent": "not timed: the check failed; a kernel is timed once it is proven"
    }


def test_a_receipt_with_a_timing_validates_reparses_and_prints_it(tmp_path) -> None:
    """A real (model-only) check whose timing is the record's section: the receipt's schema
    takes it, the reparse proves the export, and the summary prints both lines."""
    problem = fixtures.get("hand_checkable").build()
    result = pipeline.run_check(problem, pipeline.CheckConfig(run_kernel=False))
    report = read_json(_one_shape_record(tmp_path, 8, 4096, "bfloat16", dram=DRAM))
    section = timing_stage.timing_section(report, "ours", _args())
    receipt = write_receipts(dataclasses.replace(result, timing=section), tmp_path / "out")
    assert receipt["export_check"]["status"] == "passed", receipt["export_check"]
    again = read_receipt(tmp_path / "out" / "receipt.json")
    assert again["device_evidence"]["dram"] == DRAM
    assert again["timing"]["results"] == json.loads(json.dumps(section["results"]))
    lines = receipt_lines(again)
    assert any(line.startswith(f"timing on {CARD} (8x4096 bfloat16") for line in lines)
    assert "DRAM (Nsight Compute) of one ours call: 71.5% of peak" in "\n".join(lines)


def test_a_model_only_receipt_says_the_kernel_did_not_run(tmp_path) -> None:
    problem = fixtures.get("hand_checkable").build()
    result = pipeline.run_check(problem, pipeline.CheckConfig(run_kernel=False))
    receipt = write_receipts(result, tmp_path)
    assert receipt["timing"] == {"absent": "the kernel did not run"}
    assert receipt["device_evidence"]["dram"] == {"absent": "the kernel did not run"}


def _gpu_check(tmp_path: Path, *extra: str) -> dict:
    done = subprocess.run(
        [sys.executable, "main.py", "check", "--rows", "64", "--width", "4096", "--dtype",
         "bfloat16", "--device", "cuda", "--quiet", *extra, "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=1800, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads((tmp_path / "receipt.json").read_text())


def _assert_timed(receipt: dict, checked: str) -> None:
    timing = receipt["timing"]
    assert "absent" not in timing, timing.get("absent")
    assert timing["checked"] == checked
    rows = {row["impl"]: row for row in timing["results"]}
    assert set(rows) == {"copy", checked, "torch_eager"}
    for row in rows.values():
        assert row["status"] == "ok", row
        assert row["median_us"] > 0, row
        assert row["loop_median_us"] > 0, row
        assert len(row["samples_us"]) == row["n"]
    dram = receipt["device_evidence"]["dram"]
    if shutil.which("ncu") is None:
        assert dram == {"absent": timing_stage.NO_NCU}
    else:
        assert "absent" not in dram, dram
        assert dram["bytes_read"] >= 64 * 4096 * 2, dram  # x at least


@pytest.mark.gpu
@pytest.mark.slow(reason="a GPU check, cold Triton cache: 150 s on an H200 beside the gpu tests")
@pytest.mark.timeout(600)
@pytest.mark.skipif(kernels.MODE != "compiled", reason="needs a CUDA device")
def test_the_gpu_check_times_the_bundled_kernel(tmp_path) -> None:
    _assert_timed(_gpu_check(tmp_path), "ours")


@pytest.mark.gpu
@pytest.mark.slow(
    reason="a user kernel's GPU check and timing: 74 s on an H200 beside the gpu tests"
)
@pytest.mark.timeout(600)
@pytest.mark.skipif(kernels.MODE != "compiled", reason="needs a CUDA device")
def test_the_gpu_check_times_a_users_kernel_as_the_candidate(tmp_path) -> None:
    _assert_timed(_gpu_check(tmp_path, "--kernel", f"{TUTORIAL}:rms_norm"), "candidate")
