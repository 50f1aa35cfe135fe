"""``bench --ncu``: Nsight Compute's DRAM figures of ``ours``, on a CPU through a stand-in ncu
(``stand_ins/ncu.py`` prints what ncu prints, and the ways that goes wrong); the real ncu on a
GPU in the ``gpu``-marked test at the end."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from kernels import bench
from kernels.bench import ncu

ROOT = Path(__file__).resolve().parents[2]
STAND_IN = Path(__file__).resolve().parent / "stand_ins" / "ncu.py"
# The figures of the stand-in's "ok" output, as the record holds them.
OK_FIGURES = {
    "bytes_read": 33562624,
    "bytes_written": 33554432,
    "pct_of_peak": 87.41,
    "duration_ns": 14208.0,
    "kernels": ["_rms_norm_tile"],
    "launches": 1,
    "ncu_version": "2024.3.2.0",
    "clock_control": "none",
}


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """An ``ncu`` on the PATH that is the stand-in; returns a function that sets its mode and
    one that reads the command line it got."""
    folder = tmp_path / "bin"
    folder.mkdir()
    tool = folder / "ncu"
    tool.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STAND_IN}" "$@"\n')
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NCU_STAND_IN_ARGS", str(tmp_path / "args.txt"))
    monkeypatch.setenv("NCU_STAND_IN_PID", str(tmp_path / "pid.txt"))

    def mode(name: str) -> None:
        monkeypatch.setenv("NCU_STAND_IN", name)

    mode.args = lambda: (tmp_path / "args.txt").read_text().splitlines()  # type: ignore[attr-defined]
    mode.pid = lambda: int((tmp_path / "pid.txt").read_text())  # type: ignore[attr-defined]
    return mode


def _rows(*statuses: str) -> list[dict]:
    rows = []
    for index, status in enumerate(statuses):
        shape = {"set": "dev", "rows": 64 * (index + 1), "width": 4096, "dtype": "bfloat16"}
        rows.append({**shape, "impl": "copy", "status": "ok"})
        rows.append({**shape, "impl": "ours", "status": status})
    return rows


def test_the_stand_in_output_is_read_into_the_ours_rows(stand_in) -> None:
    stand_in("ok")
    rows = _rows("ok", "ok")
    said: list[str] = []
    ncu.attach_dram(rows, eps=1e-6, device_type="cuda", progress=said.append)
    assert [row.get("dram") for row in rows] == [None, OK_FIGURES, None, OK_FIGURES]
    assert said[0] == (
        "ncu 64x4096 bfloat16: DRAM 87.4% of peak, 33,562,624 bytes read, 33,554,432 written "
        "(_rms_norm_tile)"
    )
    args = stand_in.args()
    # Never locks clocks, profiles only the range the child opens, reads the raw CSV page.
    assert args[args.index("--clock-control") + 1] == "none"
    assert args[args.index("--profile-from-start") + 1] == "off"
    assert args[args.index("--metrics") + 1].split(",") == list(ncu.METRICS)
    assert args[-7:] == [sys.executable, "-m", "kernels.bench.ncu_child", "128", "4096",
                         "bfloat16", "1e-06"]  # fmt: skip


def test_two_kernels_sum_their_bytes_and_weigh_throughput_by_duration(stand_in) -> None:
    stand_in("two")
    (dram,) = [row["dram"] for row in _attach(_rows("ok"))]
    assert dram["bytes_read"] == 2 * 2**30  # "1,073,741,824": thousands grouped
    assert dram["bytes_written"] == 2**30
    assert dram["pct_of_peak"] == pytest.approx((90.5 * 300_000 + 80.5 * 100_000) / 400_000)
    assert dram["kernels"] == ["_rms_norm_loop", "_rms_norm_loop_store"]
    assert dram["launches"] == 2


def test_scaled_units_are_read_in_base_units(stand_in) -> None:
    stand_in("scaled")
    (dram,) = [row["dram"] for row in _attach(_rows("ok"))]
    assert (dram["bytes_read"], dram["bytes_written"]) == (1500, 2_250_000)
    assert dram["duration_ns"] == pytest.approx(3500.0)


def _attach(rows: list[dict], **options) -> list[dict]:
    ncu.attach_dram(rows, eps=1e-6, device_type="cuda", progress=lambda line: None, **options)
    return [row for row in rows if row["impl"] == "ours"]


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("no_kernel", "ncu's output not read: ncu printed no CSV (No kernels were profiled.)"),
        ("permission", "ncu's output not read: ncu reported an error: ERR_NVGPUCTRPERM - The "
                       "user does not have permission to access NVIDIA GPU Performance Counters "
                       "on the target device 0."),
        ("exit", "ncu exited 9: RuntimeError: CUDA error: out of memory"),
        ("malformed", "ncu's output not read: dram__bytes_read.sum on CSV line 3 is 'n/a', not "
                      "a number"),
        ("short_row", "ncu's output not read: CSV line 3 has 5 cells; the header has 15"),
        ("no_metric", "ncu's output not read: the CSV has no column dram__bytes_write.sum"),
    ],
)  # fmt: skip
def test_output_that_is_not_the_figures_is_absent_with_its_reason(stand_in, mode, reason):
    stand_in(mode)
    (ours,) = _attach(_rows("ok"))
    assert ours["dram"] == {"absent": reason}


def test_a_hanging_ncu_is_killed_with_its_child_and_the_row_says_so(stand_in) -> None:
    stand_in("hang")
    (ours,) = _attach(_rows("ok"), timeout_s=3)
    assert ours["dram"] == {"absent": "ncu did not finish within 3 s (killed with its child)"}
    grandchild = stand_in.pid()
    for _ in range(100):  # the grandchild is reaped by init once killed
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(grandchild, signal.SIGKILL)
        pytest.fail("the profiled child outlived ncu's timeout")


def test_the_kernels_candidate_rows_are_profiled_through_its_spec(stand_in, tmp_path) -> None:
    """bench --kernel --ncu: each candidate row's child is given FILE.py:FUNCTION (it imports
    the user's launcher as the benchmark does); without a kernel, candidate rows are left."""
    stand_in("ok")
    shape = {"set": "dev", "rows": 64, "width": 4096, "dtype": "bfloat16", "status": "ok"}
    spec = f"{ROOT / 'resources' / 'kernels' / 'tutorial.py'}:rms_norm"
    rows = [{**shape, "impl": "ours"}, {**shape, "impl": "candidate"}]
    said: list[str] = []
    ncu.attach_dram(rows, eps=1e-6, device_type="cuda", progress=said.append, kernel=spec)
    assert [row["dram"] for row in rows] == [OK_FIGURES, OK_FIGURES]
    assert stand_in.args()[-8:] == [sys.executable, "-m", "kernels.bench.ncu_child", "64",
                                    "4096", "bfloat16", "1e-06", spec]  # fmt: skip
    assert said[1].startswith("ncu 64x4096 bfloat16 candidate: DRAM 87.4% of peak")
    rows = [{**shape, "impl": "ours"}, {**shape, "impl": "candidate"}]
    ncu.attach_dram(rows, eps=1e-6, device_type="cuda", progress=said.append)
    assert "dram" in rows[0]
    assert "dram" not in rows[1]


def test_rows_that_did_not_run_correctly_are_not_profiled(stand_in) -> None:
    stand_in("ok")
    wrong, skipped = _attach(_rows("wrong", "skipped"))
    assert wrong["dram"] == {"absent": "not profiled: ours is wrong on this shape"}
    assert skipped["dram"] == {"absent": "not profiled: ours is skipped on this shape"}


def test_no_ncu_no_cuda_or_a_broken_ncu_is_absent_on_every_row(stand_in, monkeypatch, tmp_path):
    (ours,) = _attach(_rows("ok"), tool=str(tmp_path / "no-such-ncu"))
    assert ours["dram"]["absent"].startswith("ncu could not start: ")
    rows = _rows("ok", "ok")
    ncu.attach_dram(rows, eps=1e-6, device_type="cpu", progress=lambda line: None)
    assert [row["dram"] for row in rows if row["impl"] == "ours"] == [
        {"absent": "the device is cpu; Nsight Compute profiles CUDA kernels"}
    ] * 2
    monkeypatch.setenv("NCU_STAND_IN_VERSION", "fail")
    (ours,) = _attach(_rows("ok"))
    assert ours["dram"] == {"absent": "ncu --version exited 1: ncu: cannot open libnvperf_host.so"}
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    (ours,) = _attach(_rows("ok"))
    assert ours["dram"] == {
        "absent": "ncu (Nsight Compute, part of the CUDA toolkit) is not on the PATH"
    }


def test_a_long_reason_is_cut_and_kept_on_one_line() -> None:
    reason = ncu.absent("line one\nline two " + "x" * 400)["absent"]
    assert len(reason) == 300
    assert reason.startswith("line one line two xxx")
    assert reason.endswith("...")


@pytest.mark.parametrize(
    ("dram", "message"),
    [
        (None, None),
        ({"absent": "ncu is not on the PATH"}, None),
        (OK_FIGURES, None),
        ("87%", "results[1].dram must be an object; got str"),
        ({"absent": 3}, "results[1].dram with 'absent' holds only the reason, a string"),
        ({"absent": "x", "pct_of_peak": 1.0}, "results[1].dram with 'absent' holds only the"),
        ({**OK_FIGURES, "bytes_read": -1}, "results[1].dram.bytes_read must be an integer >= 0"),
        ({**OK_FIGURES, "bytes_written": 1.5}, "results[1].dram.bytes_written must be an integer"),
        ({**OK_FIGURES, "launches": True}, "results[1].dram.launches must be an integer >= 0"),
        ({**OK_FIGURES, "pct_of_peak": None}, "results[1].dram.pct_of_peak must be a finite"),
        ({**OK_FIGURES, "duration_ns": "14 us"}, "results[1].dram.duration_ns must be a finite"),
        ({**OK_FIGURES, "ncu_version": 2024}, "results[1].dram.ncu_version must be a string"),
        ({**OK_FIGURES, "kernels": []}, "results[1].dram.kernels must be a non-empty list"),
        ({**OK_FIGURES, "kernels": [1]}, "results[1].dram.kernels must be a non-empty list"),
    ],
)
def test_a_record_with_dram_is_read_and_a_bad_one_refused_by_name(tmp_path, dram, message):
    copy = {"set": "dev", "rows": 2, "width": 3, "dtype": "float32", "impl": "copy",
            "status": "unavailable"}  # fmt: skip
    ours = {**copy, "impl": "ours"}
    if dram is not None:
        ours["dram"] = dram
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema_version": bench.SCHEMA_VERSION, "results": [copy, ours]}))
    if message is None:
        assert bench.read_json(path)["results"][1].get("dram") == dram
    else:
        with pytest.raises(ValueError, match="^" + str(path).replace(".", r"\.")) as info:
            bench.read_json(path)
        assert message in str(info.value)


def test_the_flag_is_off_unless_asked_for(tmp_path) -> None:
    parse = bench.build_parser().parse_args
    assert bench.cli.config_from_args(parse(["--out", str(tmp_path)])).ncu is False
    assert bench.cli.config_from_args(parse(["--ncu", "--out", str(tmp_path)])).ncu is True


def _ncu_bench(tmp_path) -> list[str]:
    options = "--shapes 3x200 --dtypes float32 --impls ours --rounds 1 --loop-samples 2"
    return [*options.split(), "--no-plot", "--ncu", "--out", str(tmp_path / "out")]


def test_bench_ncu_records_the_figures_and_the_protocol(
    fake_device, stand_in, tmp_path, monkeypatch
) -> None:
    """The real bench_main on the fake device (the CPU): ours timed, then profiled through the
    stand-in (told the device is CUDA, as it is on a GPU machine), the record read back."""
    stand_in("ok")
    attach = ncu.attach_dram

    def on_cuda(rows, **options):
        attach(rows, **{**options, "device_type": "cuda"})

    monkeypatch.setattr(ncu, "attach_dram", on_cuda)
    assert bench.bench_main(_ncu_bench(tmp_path)) == 0
    report = bench.read_json(tmp_path / "out" / "results.json")
    rows = {row["impl"]: row for row in report["results"]}
    assert rows["ours"]["dram"] == OK_FIGURES
    assert "dram" not in rows["copy"]
    assert report["protocol"]["dram"] == ncu.PROTOCOL
    assert "--clock-control none" in report["protocol"]["dram"]
    args = stand_in.args()
    assert args[-4:] == ["3", "200", "float32", "1e-06"]


def test_bench_without_ncu_on_the_path_says_so_and_still_writes(
    fake_device, tmp_path, monkeypatch, capsys
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    assert bench.bench_main(_ncu_bench(tmp_path)) == 0
    assert "bench: --ncu: ncu is not on the PATH" in capsys.readouterr().err
    rows = {r["impl"]: r for r in bench.read_json(tmp_path / "out" / "results.json")["results"]}
    # The fake device is the CPU: its answer comes before the PATH's.
    assert rows["ours"]["dram"] == {
        "absent": "the device is cpu; Nsight Compute profiles CUDA kernels"
    }


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.skipif(shutil.which("ncu") is None, reason="needs Nsight Compute's ncu on the PATH")
def test_the_real_ncu_reads_the_bytes_one_call_moves() -> None:
    """One 4096 x 4096 bfloat16 call reads x (32 MiB) and the weight from DRAM: ncu's caches
    are flushed before each replay pass, so the bytes read are the call's own."""
    rows = [{"set": "dev", "rows": 4096, "width": 4096, "dtype": "bfloat16", "impl": "ours",
             "status": "ok"}]  # fmt: skip
    ncu.attach_dram(rows, eps=1e-6, device_type="cuda")
    dram = rows[0]["dram"]
    assert "absent" not in dram, dram.get("absent")
    x_bytes = 4096 * 4096 * 2
    assert 0.95 * x_bytes <= dram["bytes_read"] <= 1.25 * x_bytes, dram
    assert 0 < dram["pct_of_peak"] <= 110, dram
    assert dram["launches"] >= 1, dram
    assert dram["kernels"], dram
    assert dram["clock_control"] == "none"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "usage: python -m kernels.bench.ncu_child ROWS WIDTH DTYPE EPS"),
        (["0", "5", "bfloat16", "1e-6"], "ROWS and WIDTH must be >= 1; got 0 x 5"),
        (["2", "x", "bfloat16", "1e-6"], "ROWS and WIDTH must be integers and EPS a number"),
        (["2", "5", "float8", "1e-6"], "DTYPE must be one of bfloat16, float16, float32"),
        (["2", "5", "float32", "nan"], "EPS must be a finite number > 0; got 'nan'"),
        (["2", "5", "float32", "1e-6", "kernel"], "--kernel must be FILE.py:FUNCTION"),
        (
            ["2", "5", "float32", "1e-6", "missing.py:f"],
            "--kernel FILE 'missing.py' is not a readable file",
        ),
        (["2", "5", "float32", "1e-6", "a.py:f", "x"], "usage: python -m kernels.bench.ncu_child"),
    ],
)
def test_the_profiled_child_refuses_bad_arguments(argv, message) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kernels.bench.ncu_child", *argv],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stdout == ""  # ncu's CSV shares stdout: the child never writes there
    assert message in done.stderr


def test_the_profiled_child_needs_a_gpu_and_says_so() -> None:
    if torch.cuda.is_available():
        pytest.skip("the answer without a GPU")
    done = subprocess.run(
        [sys.executable, "-m", "kernels.bench.ncu_child", "2", "5", "float32", "1e-6"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stdout == ""
    assert "ncu_child: needs a CUDA device (kernels.MODE is interpreter)" in done.stderr
