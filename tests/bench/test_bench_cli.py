"""``bench_main`` usage errors and the no-CUDA path (CPU only)."""

from __future__ import annotations

import pytest
import torch

from kernels import bench
from kernels.bench.cli import config_from_args


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_without_cuda_exit_2_with_a_clear_message(no_cuda, tmp_path, capsys):
    code = bench.bench_main(["--shapes", "tails", "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "needs a CUDA GPU" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--shapes", "12y5"], "--shapes: '12y5' is neither a shape"),
        (["--shapes", "0x5"], "rows must be >= 1"),
        (["--dtypes", "float8"], "--dtypes: 'float8' is not one of"),
        (["--impls", "cudnn"], "--impls: 'cudnn' is not one of"),
        (["--eps", "1"], "--eps must be in"),
        (["--rep-ms", "nan"], "--rep-ms must be in"),
        (["--rep-ms", "abc"], "invalid float value"),
        (["--loop-samples", "-1"], "--loop-samples must be in [0, 400]; got -1"),
        (["--loop-samples", "401"], "--loop-samples must be in [0, 400]; got 401"),
        (["--bogus"], "unrecognized arguments"),
        ([], "--out"),
    ],
)
def test_bad_options_exit_2_with_one_stderr_line(no_cuda, tmp_path, capsys, argv, fragment):
    if argv and "--out" not in argv:
        argv = [*argv, "--out", str(tmp_path)]
    code = bench.bench_main(argv)
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("bench: error: ")
    assert fragment in err


def test_quick_and_impls_build_a_config(tmp_path):
    args = bench.build_parser().parse_args(
        [
            "--shapes",
            "tails,2x3",
            "--dtypes",
            "float32",
            "--impls",
            "ours",
            "--quick",
            "--out",
            str(tmp_path),
        ]
    )
    config = config_from_args(args)
    assert config.impls == ["copy", "ours"]  # the ceiling is always measured
    assert config.dtypes == ["float32"]
    assert config.shapes[-1] == ("custom", bench.Shape(2, 3))
    assert config.rep_ms <= 15.0
    assert config.loop_samples == bench.LOOP_SAMPLES


@pytest.mark.parametrize("samples", [0, 400])
def test_loop_samples_at_their_bounds_are_accepted(tmp_path, samples):
    args = bench.build_parser().parse_args(
        ["--shapes", "2x3", "--loop-samples", str(samples), "--out", str(tmp_path)]
    )
    assert config_from_args(args).loop_samples == samples


def test_package_imports_no_qt_and_nothing_of_oracle_inspector_or_lab():
    import ast
    from pathlib import Path

    files = sorted(Path(bench.__file__).parent.glob("*.py"))
    assert len(files) >= 8  # every module of the package, not only __init__
    names = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module.split(".")[0])
    assert not names & {"PySide6", "pyqtgraph", "oracle", "inspector", "PyQt5", "PyQt6", "lab"}
