"""The implementation lists, and the optional QuACK when it does or does not import (CPU)."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest
import torch

from kernels import bench
from kernels.bench import harness, impls
from kernels.bench.cli import config_from_args

SHAPE = bench.Shape(3, 8)


@pytest.fixture
def fresh_quack(monkeypatch, tmp_path):
    """No ``quack`` module cached before or after the test; ``tmp_path`` is first on sys.path."""

    def forget() -> None:
        for name in [n for n in sys.modules if n == "quack" or n.startswith("quack.")]:
            del sys.modules[name]

    forget()
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    forget()
    importlib.invalidate_caches()


def _fake_quack(root, rmsnorm_body: str) -> None:
    package = root / "quack"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "rmsnorm.py").write_text(textwrap.dedent(rmsnorm_body))
    importlib.invalidate_caches()


def _fake_distribution(root, name: str, version: str) -> None:
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_quack_follows_liger_in_every_list(tmp_path):
    assert impls.IMPLEMENTATIONS[-2:] == ("liger", "quack")
    assert set(impls.PREPARERS) == set(impls.IMPLEMENTATIONS)
    assert "quack" in harness._ALTERNATIVES
    parser = bench.build_parser()
    assert "quack" in parser.format_help()
    args = parser.parse_args(["--impls", "quack,liger", "--out", str(tmp_path)])
    assert config_from_args(args).impls == ["copy", "liger", "quack"]


def test_quack_missing_is_unavailable_with_the_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "quack", None)  # makes `import quack...` raise ImportError
    with pytest.raises(bench.ImplementationUnavailable, match=r"^quack does not import: "):
        impls.PREPARERS["quack"](SHAPE, torch.float32, 1e-6, torch.device("cpu"))
    info = bench.implementation_info("quack")
    assert info["name"] == "quack"
    assert info["available"] is False
    assert info["reason"].startswith("ModuleNotFoundError: ")


def test_quack_failing_inside_its_import_is_unavailable_too(fresh_quack):
    # CUTLASS DSL raises RuntimeError/OSError (no driver, wrong toolkit), not ImportError.
    _fake_quack(fresh_quack, 'raise RuntimeError("no CUDA driver")\n')
    with pytest.raises(bench.ImplementationUnavailable, match="no CUDA driver"):
        impls.PREPARERS["quack"](SHAPE, torch.float32, 1e-6, torch.device("cpu"))
    info = bench.implementation_info("quack")
    assert info["available"] is False
    assert info["reason"] == "RuntimeError: no CUDA driver"


def test_quack_call_returns_the_first_output_of_rmsnorm_fwd_and_info_has_both_versions(
    fresh_quack,
):
    _fake_quack(
        fresh_quack,
        """
        CALLS = []

        def rmsnorm_fwd(x, weight=None, bias=None, residual=None, out_dtype=None,
                        residual_dtype=None, eps=1e-6, store_rstd=False, weight_offset=0.0):
            CALLS.append(eps)
            return x * weight, x, None
        """,
    )
    _fake_distribution(fresh_quack, "quack-kernels", "0.6.5")
    _fake_distribution(fresh_quack, "nvidia-cutlass-dsl", "4.8.1")
    prepared = impls.PREPARERS["quack"](SHAPE, torch.float32, 1e-5, torch.device("cpu"))
    x = torch.ones(SHAPE.rows, SHAPE.width)
    weight = torch.full((SHAPE.width,), 3.0)
    assert torch.equal(prepared.call(x, weight, None), x * weight)
    assert sys.modules["quack.rmsnorm"].CALLS == [1e-5]
    assert "rmsnorm_fwd(x, weight, eps=eps)[0]" in prepared.note
    assert prepared.compile_s is None  # the harness records the first (compiling) call
    info = bench.implementation_info("quack")
    assert info == {
        "name": "quack",
        "version": "0.6.5",
        "cutlass_dsl_version": "4.8.1",
        "available": True,
    }
