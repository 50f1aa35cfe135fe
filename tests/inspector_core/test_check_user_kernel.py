"""`check --kernel FILE.py:FUNCTION`: a user's kernel proved in a child process, as others
script it (exit codes, one-line errors, the receipt naming the kernel and its file's hash)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "resources" / "kernels"


def run_main(*args: str, timeout: float = 300):
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ),
        timeout=timeout,
        check=False,
    )


def test_the_tutorial_kernel_passes_and_its_receipt_names_it(tmp_path) -> None:
    out = tmp_path / "out"
    kernel = EXAMPLES / "tutorial.py"
    done = run_main("check", "--quiet", "--kernel", f"{kernel}:rms_norm", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "fixtures: model passed 31/31 runnable, the validator refused 24/24 malformed; "
        "kernel passed 31/31 runnable, the validator refused 24/24 malformed" in done.stdout
    )
    assert done.stdout.splitlines()[-1].startswith("PASS")
    receipt = json.loads((out / "receipt.json").read_text())
    digest = hashlib.sha256(kernel.read_bytes()).hexdigest()
    assert receipt["kernel"]["source"] == {
        "kind": "user",
        "path": str(kernel.resolve()),
        "function": "rms_norm",
        "file_sha256": digest,
    }
    assert receipt["kernel"]["source_sha256"] == digest
    assert "in a child process" in receipt["kernel"]["note"]
    # The user's launches go to compute-sanitizer like the bundled kernel's (here: why not).
    if receipt["kernel"]["mode"] == "interpreter":
        assert receipt["device_evidence"]["sanitizer"] == {
            "absent": "the Triton interpreter runs on the CPU; compute-sanitizer checks CUDA "
            "launches"
        }
        assert "compute-sanitizer: not run: the Triton interpreter" in done.stdout
    verified = run_main("verify", str(out / "receipt.json"), str(out / "receipt.csv"))
    assert verified.returncode == 0, verified.stdout


@pytest.mark.parametrize(
    ("example", "fixture", "finding"),
    [
        (
            "bug_mean_over_block",
            "kernel fixture non_power_of_two_tail: expected pass, got fail",
            "diagnosis: behaves like a divisor of BLOCK (128) instead of width (70)",
        ),  # every rrms off by sqrt(128 / 70) on the input's rows of 70
        (
            "bug_unmasked_store",
            "kernel fixture non_power_of_two_tail: expected pass, got fail",
            "kernel stored 232 element(s) out of bounds (row 0 lane 70 (padding)",
        ),
    ],
)
def test_each_planted_bug_fails_with_the_fixture_and_row_named(
    tmp_path, example, fixture, finding
) -> None:
    out = tmp_path / "out"
    kernel = EXAMPLES / f"{example}.py"
    done = run_main("check", "--quiet", "--kernel", f"{kernel}:rms_norm", "--out", str(out))
    assert done.returncode == 1, done.stdout + done.stderr
    assert fixture in done.stdout
    assert finding in done.stdout
    assert "Traceback" not in done.stderr
    assert (out / "receipt.json").exists()  # a failed proof still writes its receipts


def test_a_crashing_kernel_fails_its_fixtures_and_the_inspector_carries_on(tmp_path) -> None:
    path = tmp_path / "crash.py"
    path.write_text(
        "import os\n\ndef rms_norm(x, weight, eps, out=None):\n"
        "    if x.shape[-1] == 70:\n        os.abort()\n    return x * 0\n"
    )
    done = run_main(
        "check", "--quiet", "--kernel", f"{path}:rms_norm", "--out", str(tmp_path / "o")
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "kernel run failed: UserKernelFailed: user kernel crashed" in done.stdout
    assert "signal SIGABRT" in done.stdout
    assert (
        "kernel fixture width_70: expected pass, got fail (implementation raised "
        "UserKernelFailed: user kernel crashed" in done.stdout
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nofile.py:rms_norm", "error: --kernel FILE 'nofile.py' is not a readable file"),
        ("resources/kernels/tutorial.py", "error: --kernel must be FILE.py:FUNCTION"),
        ("resources/kernels/tutorial.py:no_such", "defines no 'no_such'"),
        ("resources/kernels/tutorial.py:1x", "--kernel FUNCTION must be a Python identifier"),
    ],
)
def test_a_spec_that_names_no_kernel_exits_2_with_one_line(tmp_path, spec, message) -> None:
    out = tmp_path / "out"
    done = run_main("check", "--kernel", spec, "--out", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_a_file_that_does_not_import_exits_2(tmp_path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("import no_such_module_anywhere\n")
    done = run_main("check", "--kernel", f"{path}:rms_norm", "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "ModuleNotFoundError: No module named 'no_such_module_anywhere'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_kernel_and_model_only_exclude_each_other(tmp_path) -> None:
    kernel = EXAMPLES / "tutorial.py"
    done = run_main(
        "check", "--model-only", "--kernel", f"{kernel}:rms_norm", "--out", str(tmp_path / "o")
    )
    assert done.returncode == 2
    assert "--kernel: runs a kernel; it cannot go with --model-only" in done.stderr
