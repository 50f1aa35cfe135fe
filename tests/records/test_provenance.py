"""A saved receipt's kernel against the kernel here now: the same, changed, or not knowable."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from inspector.records.provenance import kernel_provenance
from inspector.records.sessions.session import load_session

ROOT = Path(__file__).resolve().parents[2]


def _receipt(**kernel) -> str:
    return json.dumps({"kernel": {"ran": True, **kernel}})


def test_the_demo_session_was_made_from_the_kernel_shipped_with_it() -> None:
    # Regenerate it (scripts/make_demo_session.py) whenever the kernel's source changes.
    session = load_session(ROOT / "resources" / "demo_session.h5")
    provenance = kernel_provenance(session.receipt_json)
    assert provenance.status == "same", provenance.message


def test_a_bundled_kernel_receipt_with_another_hash_is_changed() -> None:
    from kernels.instruments.compile_info import kernel_source_sha256

    now = kernel_source_sha256()
    same = kernel_provenance(_receipt(source_sha256=now))
    old = kernel_provenance(_receipt(source_sha256="0" * 64))
    assert same.status == "same"
    assert old.changed
    assert old.message == (
        "kernel changed since this receipt: it proved the bundled kernel with sha256 "
        f"000000000000..., which is now {now[:12]}..."
    )


def test_a_user_kernel_receipt_follows_its_file(tmp_path) -> None:
    path = tmp_path / "k.py"
    path.write_text("def rms_norm(x, w, eps, out=None):\n    return x\n")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    source = {"kind": "user", "path": str(path), "function": "rms_norm", "file_sha256": digest}
    receipt = _receipt(source_sha256=digest, source=source)
    assert kernel_provenance(receipt).status == "same"
    path.write_text("def rms_norm(x, w, eps, out=None):\n    return x * 2\n")
    assert kernel_provenance(receipt).changed
    path.unlink()
    gone = kernel_provenance(receipt)
    assert gone.changed
    assert f"{path}:rms_norm cannot be read" in gone.message


@pytest.mark.parametrize(
    ("text", "status"),
    [
        (None, "unknown"),
        ("", "unknown"),
        ("not json", "unknown"),
        ("[]", "unknown"),
        (json.dumps({"kernel": None}), "unknown"),
        (json.dumps({"kernel": {"ran": False, "source_sha256": None}}), "no kernel"),
        (_receipt(source_sha256=None), "unknown"),
    ],
)
def test_receipts_without_a_comparable_kernel_are_never_green_nor_changed(text, status) -> None:
    assert kernel_provenance(text).status == status


def test_a_receipt_of_another_kernel_than_the_loaded_one_is_other(tmp_path) -> None:
    from kernels.instruments.compile_info import kernel_source_sha256

    path = tmp_path / "k.py"
    path.write_text("def rms_norm(x, w, eps, out=None):\n    return x\n")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    user = {"kind": "user", "path": str(path), "function": "rms_norm", "file_sha256": digest}
    bundled_receipt = _receipt(source_sha256=kernel_source_sha256())
    user_receipt = _receipt(source_sha256=digest, source=user)
    with_user = kernel_provenance(bundled_receipt, user)
    assert with_user.status == "other"
    assert with_user.stale
    assert not with_user.changed
    assert with_user.message == (
        f"this receipt proved the bundled kernel, not the loaded kernel ({path}:rms_norm)"
    )
    assert kernel_provenance(user_receipt, {"kind": "bundled"}).status == "other"
    assert kernel_provenance(user_receipt, dict(user, function="other")).status == "other"
    # The loaded kernel's own receipt is judged on its file, as without one.
    assert kernel_provenance(user_receipt, user).status == "same"
    assert kernel_provenance(bundled_receipt, {"kind": "bundled"}).status == "same"
