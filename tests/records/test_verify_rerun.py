"""``verify --rerun``: the recorded kernel rerun on the recorded input here catches what the file
alone cannot: a forged out-of-bounds count, another kernel source, a changed kernel file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from inspector.cli import entry
from inspector.records.receipts import receipt

ROOT = Path(__file__).resolve().parents[2]


def _forge(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_a_faithful_receipt_reruns_to_the_same_findings(kernel_result, tmp_path, capsys) -> None:
    receipt.write_receipts(kernel_result, tmp_path)
    assert entry.main(["verify", str(tmp_path / "receipt.json"), "--rerun"]) == 0
    out = capsys.readouterr().out
    assert "ok   rerun: kernel source: the bundled kernel" in out
    assert "ok   rerun: out-of-bounds stores: here 0, recorded 0" in out
    assert "ok   rerun: row errors" in out


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
