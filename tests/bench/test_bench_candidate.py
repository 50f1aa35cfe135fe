"""``bench --kernel FILE.py:FUNCTION``: the ``candidate`` implementation, on a CPU.

The preflight runs the example kernels in a child process under the Triton interpreter. The
record is written by the real ``bench_main`` on ``fake_device`` (``conftest.py``: the CUDA-only
timing primitives replaced by fixed numbers; the harness, parity, the report and the CSV are the
real ones).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernels import bench
from kernels.bench import candidate as candidate_module
from kernels.bench import harness, impls
from kernels.bench.cli import config_from_args
from kernels.sandbox.usercode import parse_kernel_spec

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "resources" / "kernels"
TUTORIAL = f"{KERNELS / 'tutorial.py'}:rms_norm"
TUTORIAL_SHA = hashlib.sha256((KERNELS / "tutorial.py").read_bytes()).hexdigest()


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def _bench(tmp_path, *extra: str) -> list[str]:
    return [
        "--shapes",
        "3x200",
        "--dtypes",
        "float32",
        "--impls",
        "copy",
        "--rounds",
        "1",
        "--loop-samples",
        "2",
        "--no-plot",
        "--out",
        str(tmp_path / "out"),
        *extra,
    ]


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    ("kernel", "fragment"),
    [
        ("tutorial.py", "--kernel must be FILE.py:FUNCTION"),
        ("missing.py:rms_norm", "--kernel FILE 'missing.py' is not a readable file"),
        ("README.md:rms_norm", "--kernel FILE must be a .py file"),
        (f"{KERNELS / 'tutorial.py'}:rms-norm", "--kernel FUNCTION must be a Python identifier"),
    ],
)
def test_a_spec_that_names_no_kernel_exits_2_with_one_line(
    no_cuda, tmp_path, capsys, kernel, fragment
):
    assert bench.bench_main(_bench(tmp_path, "--kernel", kernel)) == 2
    err = _one_error_line(capsys)
    assert err.startswith("bench: error: ")
    assert fragment in err
    assert not (tmp_path / "out").exists()


def test_candidate_is_present_only_with_kernel(no_cuda, tmp_path, capsys):
    assert bench.bench_main(_bench(tmp_path, "--impls", "ours,candidate")) == 2
    assert "--impls: candidate is the kernel of --kernel" in _one_error_line(capsys)
    parse = bench.build_parser().parse_args
    plain = config_from_args(parse(["--out", str(tmp_path)]))
    assert "candidate" not in plain.impls
    assert plain.kernel is None
    named = config_from_args(parse(["--impls", "liger,ours", "--kernel", TUTORIAL, "--out", "d"]))
    # Added like the copy, in display order, whatever --impls says.
    assert named.impls == ["copy", "ours", "candidate", "liger"]
    assert named.kernel.sha256 == TUTORIAL_SHA
    assert named.kernel.function == "rms_norm"


def test_a_file_that_does_not_import_exits_2(fake_device, tmp_path, capsys):
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no GPU for me')\n")
    assert bench.bench_main(_bench(tmp_path, "--kernel", f"{broken}:rms_norm")) == 2
    err = _one_error_line(capsys)
    assert err.startswith(f"bench: error: --kernel {broken}:rms_norm: RuntimeError: no GPU")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("bug_unmasked_store.py", "store(s) outside its output rows"),
        ("bug_mean_over_block.py", "wrong result: "),
    ],
)
def test_a_kernel_failing_its_preflight_exits_1_and_is_never_imported(
    fake_device, tmp_path, capsys, monkeypatch, name, fragment
):
    monkeypatch.setattr(
        candidate_module, "load_launcher", lambda spec: pytest.fail("imported a failed kernel")
    )
    assert bench.bench_main(_bench(tmp_path, "--kernel", f"{KERNELS / name}:rms_norm")) == 1
    err = _one_error_line(capsys)
    assert err.startswith(f"bench: FAILED: --kernel {KERNELS / name}:rms_norm failed the preflight")
    assert "(float32, 4x200)" in err
    assert fragment in err
    assert not (tmp_path / "out").exists()


def test_a_crashing_kernel_fails_the_preflight_in_its_child(tmp_path):
    crash = tmp_path / "crash.py"
    crash.write_text(
        "import os, signal\n"
        "def rms_norm(x, weight, eps, out=None):\n"
        "    os.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    spec = parse_kernel_spec(f"{crash}:rms_norm")
    with pytest.raises(bench.CandidateError, match=r"crashed: .*SIGSEGV") as info:
        candidate_module.preflight(spec, ["float16"], 1e-6)
    assert info.value.exit_code == 1


def test_the_record_names_the_candidate_and_times_it_like_the_others(fake_device, tmp_path):
    assert bench.bench_main(_bench(tmp_path, "--kernel", TUTORIAL)) == 0
    report = bench.read_json(tmp_path / "out" / "results.json")
    assert report["candidate"] == {
        "path": str(KERNELS / "tutorial.py"),
        "function": "rms_norm",
        "sha256": TUTORIAL_SHA,
    }
    info = report["implementations"]["candidate"]
    assert info["sha256"] == TUTORIAL_SHA
    assert info["preflight_mode"] == "interpreter"
    assert [p["dtype"] for p in info["preflight"]] == ["float32"]
    assert all(p["parity"]["passed"] for p in info["preflight"])
    assert report["impls"] == ["copy", "candidate"]
    rows = {row["impl"]: row for row in report["results"]}
    row = rows["candidate"]
    assert row["status"] == "ok"
    assert row["note"].startswith(f"{KERNELS / 'tutorial.py'}:rms_norm sha256 {TUTORIAL_SHA}")
    assert row["parity"]["passed"] is True  # the harness's own check, on the benchmark shape
    assert row["median_us"] == fake_device.graph_us  # both figures
    assert row["loop_us"] == fake_device.loop_us
    assert row["pct_of_copy"] == pytest.approx(100.0 * row["gbps"] / rows["copy"]["gbps"])
    csv_row = {r["impl"]: r for r in bench.read_csv(tmp_path / "out" / "results.csv")}["candidate"]
    assert TUTORIAL_SHA in csv_row["note"]
    assert csv_row["loop_us"] == fake_device.loop_us


def test_a_candidate_wrong_at_a_benchmark_shape_is_reported_and_not_timed(fake_device, monkeypatch):
    # It passed the preflight's small input (skipped here); the benchmark's shape finds it out.
    spec = parse_kernel_spec(f"{KERNELS / 'bug_mean_over_block.py'}:rms_norm")
    launcher = candidate_module.load_launcher(spec)
    preparers = {**impls.PREPARERS, "candidate": candidate_module.CandidatePreparer(spec, launcher)}
    config = bench.BenchConfig(
        shapes=[], dtypes=["float32"], impls=["copy", "candidate"], loop_samples=2, kernel=spec
    )
    generator = torch.Generator().manual_seed(0)
    rows = harness.bench_one_shape(
        config, torch.device("cpu"), 1, "custom", bench.Shape(2, 70), torch.float32, generator,
        {}, preparers,
    )  # fmt: skip
    row = {r["impl"]: r for r in rows}["candidate"]
    assert row["status"] == "wrong"
    assert row["parity"]["passed"] is False
    assert row["note"].startswith(f"{spec.path}:rms_norm sha256 {spec.sha256}; parity failed: ")
    assert row["note"].endswith("; not timed")
    for figure in ("samples_us", "loop_samples_us", "median_us", "loop_us", "peak_bytes_per_call"):
        assert figure not in row
    assert {r["impl"]: r for r in rows}["copy"]["status"] == "ok"


def test_a_file_changed_after_it_was_named_is_refused(tmp_path):
    kernel = tmp_path / "k.py"
    kernel.write_text("def rms_norm(x, weight, eps, out=None):\n    return x\n")
    spec = parse_kernel_spec(f"{kernel}:rms_norm")
    kernel.write_text("def rms_norm(x, weight, eps, out=None):\n    return -x\n")
    with pytest.raises(bench.CandidateError, match="the file changed since it was named") as info:
        candidate_module.load_launcher(spec)
    assert info.value.exit_code == 2


def test_bench_with_kernel_imports_no_qt(tmp_path):
    code = (
        "import sys\n"
        "from inspector.cli.entry import main\n"
        f"rc = main(['bench', '--kernel', {TUTORIAL!r}, '--out', {str(tmp_path / 'o')!r}])\n"
        "qt = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph')]\n"
        "print(rc, 'kernels.bench.candidate' in sys.modules, qt)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.stdout.split() == ["2", "True", "[]"], proc.stdout + proc.stderr
    assert "needs a CUDA GPU" in proc.stderr


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("raise ValueError('only in the child')\n", "ValueError: only in the child"),
        ("rms_norm = 3\n", "'rms_norm' is not a function of the file"),
    ],
)
def test_an_import_that_fails_in_this_process_exits_2(tmp_path, source, message):
    kernel = tmp_path / "k.py"
    kernel.write_text(source)
    with pytest.raises(bench.CandidateError, match=message) as info:
        candidate_module.load_launcher(parse_kernel_spec(f"{kernel}:rms_norm"))
    assert info.value.exit_code == 2
