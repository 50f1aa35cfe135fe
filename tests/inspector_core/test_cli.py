"""The command line as others script it: subprocesses, exit codes, one-line errors."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from inspector.cli import entry
from inspector.records.sessions.session import load_session
from oracle.mutants import MODEL_MUTANTS

ROOT = Path(__file__).resolve().parents[2]
KERNEL_MUTANTS = (*MODEL_MUTANTS, "unmasked_store")


def run_main(*args: str, cwd: Path | None = None, env: dict | None = None):
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env={**os.environ, **(env or {})},
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """One real `check` (model + kernel under the interpreter) with a session."""
    folder = tmp_path_factory.mktemp("check")
    out, session = folder / "out", folder / "run.h5"
    completed = run_main("check", "--out", str(out), "--session", str(session))
    return completed, out, session


def test_check_passes_and_names_every_killed_mutant(checked):
    completed, out, session = checked
    assert completed.returncode == 0, completed.stdout + completed.stderr
    lines = completed.stdout.splitlines()
    for name in MODEL_MUTANTS:
        assert any(line.startswith(f"model mutant {name}: killed by ") for line in lines), name
    for name in KERNEL_MUTANTS:
        assert any(line.startswith(f"kernel mutant {name}: killed by ") for line in lines), name
    assert "SURVIVED" not in completed.stdout
    assert lines[-1].startswith("PASS")
    assert "Traceback" not in completed.stderr
    assert "[" in completed.stderr  # progress lines go to stderr
    data = json.loads((out / "receipt.json").read_text())
    assert data["export_check"]["status"] == "passed"
    assert data["kernel"]["mode"] == "interpreter"
    loaded = load_session(session)
    assert loaded.results is not None
    assert loaded.results.passed
    assert loaded.receipt_json == (out / "receipt.json").read_text()
    assert [r.kind for r in loaded.receipt_history] == ["first_pass"]


@pytest.fixture(scope="module")
def model_receipts(tmp_path_factory) -> Path:
    """Receipts of a model-only check (independent of the kernel floor)."""
    out = tmp_path_factory.mktemp("model") / "out"
    completed = run_main("check", "--model-only", "--quiet", "--out", str(out))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return out


def test_verify_accepts_fresh_receipts(checked):
    _, out, _ = checked
    completed = run_main("verify", str(out / "receipt.json"), str(out / "receipt.csv"))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "FAIL" not in completed.stdout
    assert completed.stderr == ""


def _copy(out: Path, target: Path) -> tuple[Path, Path]:
    target.mkdir()
    for name in ("receipt.json", "receipt.csv"):
        (target / name).write_bytes((out / name).read_bytes())
    return target / "receipt.json", target / "receipt.csv"


def test_verify_accepts_fresh_model_only_receipts(model_receipts):
    completed = run_main("verify", str(model_receipts / "receipt.json"))
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_verify_fails_on_a_tampered_csv_value(model_receipts, tmp_path):
    json_path, csv_path = _copy(model_receipts, tmp_path / "t")
    with csv_path.open(newline="") as stream:
        lines = list(csv.reader(stream))
    column = lines[0].index("rrms")
    lines[2][column] = repr(math.nextafter(float(lines[2][column]), 0.0))
    with csv_path.open("w", newline="") as stream:
        csv.writer(stream, lineterminator="\n").writerows(lines)
    completed = run_main("verify", str(json_path), str(csv_path))
    assert completed.returncode == 1
    assert "row 1 rrms" in completed.stdout
    assert len(completed.stderr.splitlines()) == 1
    assert "row 1 rrms" in completed.stderr


def test_verify_fails_on_a_tampered_json_value(model_receipts, tmp_path):
    json_path, _ = _copy(model_receipts, tmp_path / "t")
    data = json.loads(json_path.read_text())
    data["errors"]["max_abs"] = 0.0
    json_path.write_text(json.dumps(data))
    completed = run_main("verify", str(json_path))
    assert completed.returncode == 1
    assert "errors.max_abs" in completed.stdout


def test_verify_on_unreadable_path_is_usage(tmp_path):
    completed = run_main("verify", str(tmp_path / "missing.json"))
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1
    assert "missing.json" in completed.stderr


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "is an HDF5 file (a session?), not a receipt"),
        (b"\x89HDF\r\n\x1a\n" + bytes(64), "is an HDF5 file (a session?), not a receipt"),
        (b"[1, 2]", "is not a receipt: a receipt is a JSON object"),
        (b"\xff\xfe{", "is not a receipt: a receipt is a JSON object"),
        (b" \n\t", "is empty, not a receipt"),
    ],
)
def test_verify_of_a_file_that_is_no_receipt_is_usage(tmp_path, content, said):
    path = ROOT / "resources" / "demo_session.h5"
    if content is not None:
        path = tmp_path / "given.json"
        path.write_bytes(content)
    assert entry.main(["verify", str(path)]) == 2


def test_verify_of_a_no_receipt_says_why_in_one_line(tmp_path, capsys):
    assert entry.main(["verify", str(ROOT / "resources" / "demo_session.h5")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "demo_session.h5 is an HDF5 file (a session?), not a receipt" in err


def test_verify_of_a_receipt_damaged_after_its_start_is_not_verified(tmp_path, capsys):
    path = tmp_path / "receipt.json"
    path.write_text('{"schema_version": ')
    assert entry.main(["verify", str(path)]) == 1
    assert "not valid JSON" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--eps", "1"], "eps"),
        (["--eps", "abc"], "eps"),
        (["--x", "1,nan", "--weight", "1,1"], "x"),
        (["--x", "1,2;3", "--weight", "1,1"], "x"),
        (["--x", "1,2", "--weight", "1"], "weight"),
        (["--x", "1,2"], "weight"),
        (["--rows", "2.5"], "rows"),
        (["--rows", "0"], "rows"),
        (["--width", "70000"], "width"),
        (["--dtype", "float64"], "dtype"),
        (["--row-stride", "3"], "row_stride"),
        (["--seed", "-1"], "seed"),
        (["--fixture", "no_such_fixture"], "fixture"),
        (["--fixture", "nan_text"], "fixture"),
        (["--fixture", "hand_checkable", "--eps", "1e-3"], "fixture"),
        (["--x", "@/no/such/file", "--weight", "1"], "x"),
        (["--bogus"], "--bogus"),
        (["--device", "tpu"], "--device"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, args, field):
    out = tmp_path / "out"
    session = tmp_path / "s.h5"
    completed = run_main("check", *args, "--out", str(out), "--session", str(session))
    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert completed.stdout == ""
    assert len(completed.stderr.splitlines()) == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    assert completed.stderr.startswith("error: ")
    assert field in completed.stderr
    assert list(tmp_path.iterdir()) == []


def test_missing_out_is_usage(tmp_path):
    completed = run_main("check", cwd=tmp_path)
    assert completed.returncode == 2
    assert "--out" in completed.stderr
    assert len(completed.stderr.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_out_that_is_a_file_is_usage(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    completed = run_main("check", "--model-only", "--out", str(target))
    assert completed.returncode == 2
    assert "out:" in completed.stderr
    assert target.read_text() == "x"


def test_foreign_session_is_not_overwritten(tmp_path):
    foreign = tmp_path / "foreign.h5"
    foreign.write_text("not ours")
    completed = run_main("check", "--model-only", "--out", str(tmp_path / "o"), "--session",
                         str(foreign))  # fmt: skip
    assert completed.returncode == 2
    assert "session:" in completed.stderr
    assert foreign.read_text() == "not ours"
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(
    os.environ.get("CUDA_VISIBLE_DEVICES") not in (None, ""), reason="may have CUDA"
)
def test_cuda_without_a_device_is_usage(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    completed = run_main("check", "--device", "cuda", "--out", str(tmp_path / "o"))
    assert completed.returncode == 2
    assert "device:" in completed.stderr
    assert list(tmp_path.iterdir()) == []


def test_help_texts(capsys):
    assert entry.main(["--help"]) == 0
    text = capsys.readouterr().out
    for word in ("check", "bench", "verify", "--screenshot", "--session", "exit codes"):
        assert word in text
    listed = text.split("positional arguments:")[1].split("options:")[0]
    for command in ("check", "bench", "mutate", "coverage", "verify", "diff"):  # each with a line
        assert re.search(rf"^    {command}\s+\S", listed, re.MULTILINE), command
    assert entry.main(["check", "--help"]) == 0
    text = capsys.readouterr().out
    for word in ("--rows", "--x", "--fixture", "--device", "--out", "limits", "1e-12"):
        assert word in text


def test_model_only_fixture_check_in_process(tmp_path, capsys):
    assert entry.main(["check", "--model-only", "--fixture", "hand_checkable", "--quiet",
                     "--out", str(tmp_path)]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert "input: hand_checkable: 1 rows x 2" in text
    assert "model only" in json.loads((tmp_path / "receipt.json").read_text())["kernel"]["mode"]


def test_window_without_gui_module_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "inspector.qt.app", None)  # import fails like a missing module
    assert entry.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the window cannot start")
    assert err.count("\n") == 1


def test_window_with_missing_session_is_usage(tmp_path, capsys):
    assert entry.main(["--session", str(tmp_path / "none.h5")]) == 2
    assert "session:" in capsys.readouterr().err


def test_window_entry_receives_the_arguments(monkeypatch, tmp_path):
    import types

    from kernels.sandbox.usercode import parse_kernel_spec

    calls = []
    fake = types.ModuleType("inspector.qt.app")
    fake.run_app = lambda *args: calls.append(args) or 0
    monkeypatch.setitem(sys.modules, "inspector.qt.app", fake)
    demo = str(ROOT / "resources" / "demo_session.h5")
    shot = str(tmp_path / "shot.png")
    assert entry.main(["--screenshot", shot, "--session", demo]) == 0
    kernel = f"{ROOT / 'resources' / 'kernels' / 'tutorial.py'}:rms_norm"
    assert entry.main(["--kernel", kernel]) == 0
    # The kernel reaches the window parsed once, as a KernelSpec (its file's hash included).
    assert calls == [(demo, shot, None), (None, None, parse_kernel_spec(kernel))]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nofile.py:rms_norm", "error: --kernel FILE 'nofile.py' is not a readable file"),
        ("resources/kernels/tutorial.py", "error: --kernel must be FILE.py:FUNCTION"),
    ],
)
def test_window_with_a_kernel_that_names_no_file_is_usage(capsys, monkeypatch, spec, message):
    monkeypatch.chdir(ROOT)
    assert entry.main(["--kernel", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message)
    assert err.count("\n") == 1


def test_bench_without_harness_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "kernels.bench", None)
    assert entry.main(["bench", "--out", "x"]) == 2
    assert "bench" in capsys.readouterr().err


def test_bench_passes_its_arguments_through(monkeypatch):
    import types

    seen = []
    fake = types.ModuleType("kernels.bench")
    fake.bench_main = lambda argv: seen.append(argv) or 0
    monkeypatch.setitem(sys.modules, "kernels.bench", fake)
    assert entry.main(["bench", "--shapes", "4x70", "--out", "d"]) == 0
    assert seen == [["--shapes", "4x70", "--out", "d"]]


BLOCK_QT = """
import importlib.abc, sys
class BlockQt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'pyqtgraph', 'shiboken6'):
            raise ImportError('blocked: no Qt on this machine')
        return None
sys.meta_path.insert(0, BlockQt())
sys.argv = ['main.py'] + sys.argv[1:]
from inspector.cli.entry import main
code = main()
assert not [m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph'))]
raise SystemExit(code)
"""


def test_headless_commands_work_without_qt(tmp_path):
    def run(*args):
        return subprocess.run(
            [sys.executable, "-c", BLOCK_QT, *args],
            capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
        )  # fmt: skip

    checked = run("check", "--model-only", "--quiet", "--out", str(tmp_path))
    assert checked.returncode == 0, checked.stderr
    verified = run("verify", str(tmp_path / "receipt.json"))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    window = run()
    assert window.returncode == 2
    assert "window cannot start" in window.stderr


def test_surviving_mutant_exits_1_names_it_and_is_kept_as_a_counterexample(
    tmp_path, capsys, monkeypatch
):
    from oracle import fixtures

    out, state = tmp_path / "out", tmp_path / "s.h5"
    argv = ["check", "--model-only", "--quiet", "--out", str(out), "--session", str(state)]
    assert entry.main(argv) == 0
    capsys.readouterr()
    # Without the zero row and the rows near eps nothing can see a missing epsilon.
    weakened = tuple(
        f for f in fixtures.FIXTURES
        if f.name not in ("zero_row", "max_eps") and "near" not in f.name
    )  # fmt: skip
    monkeypatch.setattr(fixtures, "FIXTURES", weakened)
    assert entry.main(argv) == 1
    text = capsys.readouterr().out
    assert "model mutant missing_epsilon: SURVIVED" in text
    assert "FAIL" in text
    assert "missing_epsilon SURVIVED" in text.split("FAIL", 1)[1]
    report = entry.main(["verify", str(out / "receipt.json")])
    assert report == 1
    assert "survived: model missing_epsilon" in capsys.readouterr().out
    history = load_session(state).receipt_history
    assert [r.kind for r in history] == ["first_pass", "counterexample"]
    assert "missing_epsilon" in history[1].reason


def test_the_package_runs_as_python_m_inspector(tmp_path) -> None:
    # The check's timing stage runs the benchmark this way (no main.py needed beside it).
    done = subprocess.run(
        [sys.executable, "-m", "inspector", "check", "--model-only", "--quiet",
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, cwd=ROOT, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1].startswith("PASS")
    shown = subprocess.run(
        [sys.executable, "-m", "inspector", "--help"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert shown.stdout.startswith("usage: python -m inspector ")
