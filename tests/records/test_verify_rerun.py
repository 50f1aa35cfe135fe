"""``verify --rerun``: the recorded kernel rerun here on the recorded input and every recorded
fixture catches what the file alone cannot: a forged out-of-bounds count, another kernel source,
a changed kernel file, failing fixtures flipped to pass, a receipt relabelled with another
kernel's path and hash. A receipt that names a kernel file no reader opens is refused (exit 2)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from inspector.check import pipeline
from inspector.cli import entry
from inspector.records.receipts import receipt
from kernels.sandbox.source_file import MAX_KERNEL_SOURCE_BYTES
from kernels.sandbox.usercode import parse_kernel_spec
from oracle.spec import synthetic_problem
from records.receipt_files import forge as _forge

ROOT = Path(__file__).resolve().parents[2]


def test_a_faithful_receipt_reruns_to_the_same_findings(kernel_result, tmp_path, capsys) -> None:
    receipt.write_receipts(kernel_result, tmp_path)
    assert entry.main(["verify", str(tmp_path / "receipt.json"), "--rerun"]) == 0
    out = capsys.readouterr().out
    assert "ok   rerun: kernel source: the bundled kernel" in out
    assert "ok   rerun: out-of-bounds stores: here 0, recorded 0" in out
    assert "ok   rerun: row errors" in out
    assert "ok   rerun: fixtures: 110 fixture outcomes here as recorded" in out


def test_a_forged_out_of_bounds_count_passes_the_file_checks_but_not_the_rerun(
    kernel_result, tmp_path, capsys
) -> None:
    receipt.write_receipts(kernel_result, tmp_path)
    path = tmp_path / "receipt.json"

    def change(data):  # consistent with itself: a failed verdict that names the stores
        data["kernel"]["oob_writes"] = 3
        failure = "kernel stored 3 element(s) out of bounds"
        data["verdict"] = {"passed": False, "failures": [failure]}

    _forge(path, change)
    assert entry.main(["verify", str(path)]) == 0  # the file alone cannot tell
    capsys.readouterr()
    assert entry.main(["verify", str(path), "--rerun"]) == 1
    assert "FAIL rerun: out-of-bounds stores: here 0, recorded 3" in capsys.readouterr().out


def test_another_bundled_kernel_source_is_named(kernel_result, tmp_path, capsys) -> None:
    receipt.write_receipts(kernel_result, tmp_path)
    path = tmp_path / "receipt.json"
    _forge(path, lambda d: d["kernel"].update(source_sha256="ab" * 32))
    assert entry.main(["verify", str(path), "--rerun"]) == 1
    assert "the receipt's is abababababababab... (rerunning today's kernel)" in (
        capsys.readouterr().out
    )


def test_a_model_only_receipt_has_nothing_to_rerun(model_results, tmp_path, capsys) -> None:
    receipt.write_receipts(model_results["float32"], tmp_path)
    assert entry.main(["verify", str(tmp_path / "receipt.json"), "--rerun"]) == 0
    assert "rerun: the receipt ran no kernel (model only)" in capsys.readouterr().out


def test_a_user_kernel_changed_since_its_receipt_is_not_rerun(tmp_path, capsys) -> None:
    kernel = tmp_path / "tutorial.py"
    shutil.copy(ROOT / "resources" / "kernels" / "tutorial.py", kernel)
    out = tmp_path / "out"
    check = ["check", "--quiet", "--kernel", f"{kernel}:rms_norm", "--out", str(out)]
    assert entry.main(check) == 0
    assert entry.main(["verify", str(out / "receipt.json"), "--rerun"]) == 0
    assert "ok   rerun: kernel vs scalar reference" in capsys.readouterr().out
    kernel.write_text(kernel.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert entry.main(["verify", str(out / "receipt.json"), "--rerun"]) == 1
    assert "changed since the receipt (not rerun)" in capsys.readouterr().out


def _as_user_kernel(path: Path, kernel: Path) -> None:
    """The receipt relabelled with ``kernel``'s path and its true sha256."""
    digest = hashlib.sha256(kernel.read_bytes()).hexdigest()
    source = {"kind": "user", "path": str(kernel), "function": "rms_norm", "file_sha256": digest}
    _forge(path, lambda d: d["kernel"].update(source=source, source_sha256=digest))


@pytest.fixture(scope="module")
def half_accumulation(tmp_path_factory) -> Path:
    """A user kernel that accumulates in float16 (it fails the float16 overflow fixtures and
    passes the 2 x 8 float32 input): its check's receipt, written once."""
    folder = tmp_path_factory.mktemp("half")
    kernel = folder / "bug_half_accumulation.py"
    shutil.copy(ROOT / "resources" / "kernels" / "bug_half_accumulation.py", kernel)
    config = pipeline.CheckConfig(kernel_spec=parse_kernel_spec(f"{kernel}:rms_norm"))
    result = pipeline.run_check(synthetic_problem(2, 8, seed=0), config)
    receipt.write_receipts(result, folder / "out")
    return folder / "out" / "receipt.json"


def test_failing_fixtures_flipped_to_pass_verify_alone_but_not_on_the_rerun(
    half_accumulation, tmp_path, capsys
) -> None:
    path = tmp_path / "receipt.json"
    shutil.copy(half_accumulation, path)
    shutil.copy(half_accumulation.with_suffix(".csv"), tmp_path / "receipt.csv")

    def change(data):  # every failing (or unjudged) fixture made a clean pass, and the verdict
        flipped = [f for f in data["fixtures"] if not f["passed"]]
        assert "float16_sum_overflow" in {f["name"] for f in flipped}
        for fixture in flipped:
            fixture.update(actual="pass", passed=True, max_abs_error=0.0, max_rel_error=0.0)
        data["kernel"]["not_judged"] = []
        data["verdict"] = {"passed": True, "failures": [], "outcome": "passed"}

    _forge(path, change)
    assert entry.main(["verify", str(path)]) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert entry.main(["verify", str(path), "--rerun"]) == 1
    out = capsys.readouterr().out
    assert "FAIL rerun: fixtures: " in out
    assert "kernel float16_sum_overflow: recorded 'pass', here 'fail'" in out


def test_a_passing_receipt_relabelled_with_another_kernel_fails_the_rerun(
    kernel_result, tmp_path, capsys
) -> None:
    receipt.write_receipts(kernel_result, tmp_path)
    path = tmp_path / "receipt.json"
    kernel = tmp_path / "bug_half_accumulation.py"
    shutil.copy(ROOT / "resources" / "kernels" / "bug_half_accumulation.py", kernel)
    _as_user_kernel(path, kernel)
    assert entry.main(["verify", str(path), "--rerun"]) == 1
    out = capsys.readouterr().out
    assert f"ok   rerun: kernel source: {kernel}:rms_norm sha256 " in out
    assert "kernel float16_sum_overflow: recorded 'pass', here 'fail'" in out


def test_a_receipt_whose_two_kernel_hashes_differ_is_not_rerun(kernel_result, tmp_path, capsys):
    receipt.write_receipts(kernel_result, tmp_path)
    path = tmp_path / "receipt.json"
    kernel = tmp_path / "tutorial.py"
    shutil.copy(ROOT / "resources" / "kernels" / "tutorial.py", kernel)
    _as_user_kernel(path, kernel)
    _forge(path, lambda d: d["kernel"].update(source_sha256="ab" * 32))
    assert entry.main(["verify", str(path), "--rerun"]) == 1
    assert "kernel.source_sha256 and source.file_sha256 differ (not rerun)" in (
        capsys.readouterr().out
    )


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["device", "fifo", "over the bound"])
def test_a_receipt_naming_a_kernel_file_no_reader_opens_is_one_line_and_exit_2(
    kernel_result, tmp_path, capsys, kind
) -> None:
    receipt.write_receipts(kernel_result, tmp_path)
    path = tmp_path / "receipt.json"
    if kind == "device":
        kernel, why = Path("/dev/zero"), "is a character device, not a regular file"
    elif kind == "fifo":
        kernel, why = tmp_path / "kernel.py", "is a FIFO, not a regular file"
        os.mkfifo(kernel)
    else:
        kernel = _sparse(tmp_path / "kernel.py", MAX_KERNEL_SOURCE_BYTES + 1)
        why = f"over the {MAX_KERNEL_SOURCE_BYTES}-byte bound of a kernel source"
    source = {"kind": "user", "path": str(kernel), "function": "rms_norm", "file_sha256": "0" * 64}
    _forge(path, lambda d: d["kernel"].update(source=source))
    capsys.readouterr()
    assert entry.main(["verify", str(path), "--rerun"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: the receipt's kernel.source.path '{kernel}' ")
    assert why in err
    assert err.count("\n") == 1


def test_nan_row_errors_are_a_disagreement_not_a_crash(kernel_result, tmp_path, capsys) -> None:
    receipt.write_receipts(kernel_result, tmp_path)
    path = tmp_path / "receipt.json"

    def change(data):
        for row in data["rows"]:
            row["max_abs_error"] = "nan"

    _forge(path, change)
    assert entry.main(["verify", str(path), "--rerun"]) == 1
    captured = capsys.readouterr()
    assert "FAIL rerun: row errors: row 0: here " in captured.out
    assert ", recorded nan" in captured.out
    assert "unexpected" not in captured.err
