"""kernels' import boundary and its once-only mode decision, checked in fresh interpreters."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, *, env_changes: dict[str, str | None]) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_kernels_imports_no_qt_no_oracle_no_inspector() -> None:
    code = (
        "import sys, kernels, kernels.instruments.checked, kernels.instruments.compile_info, "
        "kernels.env\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'PySide6', 'PyQt5', 'PyQt6', 'pyqtgraph', 'oracle', 'inspector', 'h5py'})\n"
        "print(bad)\n"
    )
    result = _python(code, env_changes={})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", f"kernels pulled in: {result.stdout}"


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_without_cuda_the_interpreter_is_chosen_and_the_switch_is_set() -> None:
    code = "import os, kernels; print(kernels.MODE, os.environ['TRITON_INTERPRET'])"
    result = _python(code, env_changes={"TRITON_INTERPRET": None})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["interpreter", "1"]


def test_an_explicit_switch_wins() -> None:
    code = "import kernels; print(kernels.MODE)"
    off = _python(code, env_changes={"TRITON_INTERPRET": "0"})
    on = _python(code, env_changes={"TRITON_INTERPRET": "1"})
    assert (off.stdout.strip(), on.stdout.strip()) == ("compiled", "interpreter"), (
        off.stderr + on.stderr
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_triton_imported_first_is_refused_with_a_clear_message() -> None:
    result = _python("import triton, kernels", env_changes={"TRITON_INTERPRET": None})
    assert result.returncode != 0
    assert "import kernels before triton" in result.stderr


def test_the_source_root_is_the_folder_that_holds_the_kernels_package() -> None:
    # Child processes (a user's kernel, the compile child) put it on their path: a copy of the
    # tree that is not installed (the device's) must still import `kernels` there.
    from kernels.env import SOURCE_ROOT

    assert (SOURCE_ROOT / "kernels" / "__init__.py").is_file()
    assert (SOURCE_ROOT / "kernels" / "sandbox" / "usercode_child.py").is_file()
