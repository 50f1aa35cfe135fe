"""``resources/kernels/liger_adapter.py``: Liger-Kernel's RMSNorm behind the kernel contract.

Liger is not a dependency, so both tests stand a small ``liger_kernel`` package of their own
first on the path: one without ``liger_kernel.ops`` (the adapter must then refuse to load with
a line naming the package), one whose ``LigerRMSNormFunction`` is Liger's "llama" casting in
torch (the adapter's glue: the call, and ``out=``).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = ROOT / "resources" / "kernels" / "liger_adapter.py"

STAND_IN = """
import torch


class LigerRMSNormFunction:
    calls = 0

    @staticmethod
    def apply(x, weight, eps):
        LigerRMSNormFunction.calls += 1
        x32 = x.contiguous().float()
        rstd = torch.rsqrt(x32.square().mean(-1, keepdim=True) + eps)
        return (x32 * rstd).to(x.dtype) * weight
"""


def _liger_package(root: Path, *, with_ops: bool) -> Path:
    package = root / "liger_kernel"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    if with_ops:
        (package / "ops").mkdir()
        (package / "ops" / "__init__.py").write_text("")
        (package / "ops" / "rms_norm.py").write_text(STAND_IN)
    return root


def test_without_liger_check_exits_2_naming_the_package(tmp_path) -> None:
    path = _liger_package(tmp_path / "site", with_ops=False)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path), str(ROOT)])}
    command = [sys.executable, str(ROOT / "main.py"), "check", "--kernel", f"{ADAPTER}:rms_norm"]
    done = subprocess.run(
        [*command, "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"error: --kernel {ADAPTER}:rms_norm: ImportError: liger_adapter.py")
    assert "needs the liger-kernel package (pip install liger-kernel)" in err
    assert "No module named 'liger_kernel.ops'" in err
    assert not (tmp_path / "out").exists()


@pytest.fixture
def adapter(tmp_path, monkeypatch):
    """The adapter module, imported here over the stand-in Liger."""
    monkeypatch.syspath_prepend(str(_liger_package(tmp_path, with_ops=True)))
    for name in [n for n in sys.modules if n.split(".")[0] == "liger_kernel"]:
        monkeypatch.delitem(sys.modules, name)
    spec = importlib.util.spec_from_file_location("liger_adapter_under_test", ADAPTER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    for name in [n for n in sys.modules if n.split(".")[0] == "liger_kernel"]:
        del sys.modules[name]


def test_the_adapter_calls_liger_and_writes_out_when_given(adapter) -> None:
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    generator = torch.Generator().manual_seed(3)
    x = torch.randn(3, 70, generator=generator).to(torch.bfloat16)
    weight = torch.randn(70, generator=generator).to(torch.bfloat16)
    expected = LigerRMSNormFunction.apply(x, weight, 1e-6)
    y = adapter.rms_norm(x, weight, 1e-6)
    assert torch.equal(y, expected)
    storage = torch.full((3, 128), -3072.0, dtype=torch.bfloat16)
    out = storage[:, :70]  # a strided view: rows 128 apart
    assert adapter.rms_norm(x, weight, 1e-6, out=out) is out
    assert torch.equal(out, expected)
    assert bool((storage[:, 70:] == -3072.0).all())  # nothing written past the rows
    assert LigerRMSNormFunction.calls == 3
