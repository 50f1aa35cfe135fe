"""``bench_main`` usage errors and the no-CUDA path (CPU only)."""

from __future__ import annotations

import pytest
import torch

from kernels import bench


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
    config = bench._config_from_args(args)
    assert config.impls == ["copy", "ours"]  # the ceiling is always measured
    assert config.dtypes == ["float32"]
    assert config.shapes[-1] == ("custom", bench.Shape(2, 3))
    assert config.rep_ms <= 15.0


def test_module_imports_no_qt_and_nothing_of_oracle_or_inspector():
    import ast
    from pathlib import Path

    tree = ast.parse(Path(bench.__file__).read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    assert not names & {"PySide6", "pyqtgraph", "oracle", "inspector", "PyQt5", "PyQt6"}


def test_sweep_rejects_rounds_out_of_range_before_touching_a_device(tmp_path, capsys):
    from kernels import bench_sweep

    with pytest.raises(SystemExit) as info:
        bench_sweep.main(["--out", str(tmp_path / "s.json"), "--rounds", "0"])
    assert info.value.code == 2
    assert "--rounds must be in [1, 10]; got 0" in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()


def test_sweep_cases_are_launchable_layouts():
    # Every candidate of the current sweep is a layout the launcher accepts for its shape
    # (tile at least as wide as the row, at most MAX_CHUNKS chunks), with unique labels.
    from kernels import bench_sweep
    from kernels.bench_probe import Probe
    from kernels.rmsnorm import kernel_constexprs

    cases = bench_sweep.sweep_cases()
    assert cases
    for shape, dtype_key, configs, _ in cases:
        assert dtype_key in bench.DTYPES
        labels = [bench_sweep._label(config) for config in configs]
        assert len(set(labels)) == len(labels), labels
        for config in configs:
            if isinstance(config, Probe):
                # Probes run only where they can: power-of-two width, whole blocks of rows.
                assert shape.width & (shape.width - 1) == 0
                assert shape.rows % config.rows_per_program == 0
                assert config.int64 or shape.rows * shape.width < 2**31
                continue
            constexprs = kernel_constexprs(config, shape.width, 4)
            assert constexprs["VEC"] == 4
