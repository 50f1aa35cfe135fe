"""Which kernel the window proves, without a window: the launcher names read from a file's
syntax tree (never importing it), the status bar's words, and whose check a session holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.model import kernel_choice
from kernels.sandbox.usercode import KernelSpecError, parse_kernel_spec

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "resources" / "kernels" / "tutorial.py"


def test_launchers_are_the_plain_top_level_functions_public_first(tmp_path) -> None:
    assert kernel_choice.launcher_names(TUTORIAL) == ["rms_norm"]
    path = tmp_path / "k.py"
    path.write_text(
        "import triton\nfrom triton import jit\n\n"
        "def _helper(x):\n    pass\n\n"
        "@triton.jit\ndef _row(x):\n    pass\n\n"
        "@jit\ndef _row2(x):\n    pass\n\n"
        "@triton.jit(do_not_specialize=['n'])\ndef _row3(x, n):\n    pass\n\n"
        "@triton.autotune(configs=[], key=[])\n@triton.jit\ndef _row4(x):\n    pass\n\n"
        "class Norm:\n    def forward(self, x):\n        pass\n\n"
        "def rms_norm(x, weight, eps, out=None):\n    pass\n\n"
        "def other(x, weight, eps, out=None):\n    pass\n\n"
        "raise SystemExit('never imported')\n"
    )
    assert kernel_choice.launcher_names(path) == ["rms_norm", "other", "_helper"]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def rms_norm(x, w, eps, out=None)\n    pass\n", "line 1 is not valid Python"),
        ("x = 1\n\n\n  y = 2\n", "line 4 is not valid Python"),
        ("import triton\n\n@triton.jit\ndef k(x):\n    pass\n", "no top-level function"),
        ("", "no top-level function"),
    ],
)
def test_a_file_that_is_not_a_kernel_is_named_with_the_reason(tmp_path, source, message) -> None:
    path = tmp_path / "bad.py"
    path.write_text(source)
    with pytest.raises(KernelSpecError, match=message):
        kernel_choice.launcher_names(path)


def test_a_missing_file_is_refused(tmp_path) -> None:
    with pytest.raises(KernelSpecError, match=r"gone\.py"):
        kernel_choice.launcher_names(tmp_path / "gone.py")


def test_the_status_bar_names_the_file_function_and_hash() -> None:
    spec = parse_kernel_spec(f"{TUTORIAL}:rms_norm")
    label = kernel_choice.kernel_label(spec, "ab" * 32)
    assert label.text == f"kernel: tutorial.py:rms_norm · sha256 {spec.sha256[:12]}"
    assert str(TUTORIAL) in label.tooltip
    assert spec.sha256 in label.tooltip
    bundled = kernel_choice.kernel_label(None, "ab" * 32)
    assert bundled.text == "kernel: bundled kernel · source sha256 abababababab"
    assert kernel_choice.kernel_label(None).text == "kernel: bundled kernel"
    assert kernel_choice.kernel_name(spec) == "tutorial.py:rms_norm"
    assert kernel_choice.kernel_name(None) == "the bundled kernel"
    assert kernel_choice.spec_text(spec) == f"{TUTORIAL}:rms_norm"


def test_an_edited_file_is_hashed_again(tmp_path) -> None:
    path = tmp_path / "k.py"
    path.write_text("def rms_norm(x, w, eps, out=None):\n    return x\n")
    spec = parse_kernel_spec(f"{path}:rms_norm")
    assert kernel_choice.reread(spec) == spec
    path.write_text("def rms_norm(x, w, eps, out=None):\n    return x * 2\n")
    assert kernel_choice.reread(spec).sha256 != spec.sha256
    path.unlink()
    with pytest.raises(KernelSpecError):
        kernel_choice.reread(spec)


def test_a_saved_check_matches_only_the_kernel_it_ran() -> None:
    spec = parse_kernel_spec(f"{TUTORIAL}:rms_norm")
    bundled_note = "Triton kernel, interpreter mode (no CUDA)"
    user_note = f"user kernel {spec.describe()}, interpreter mode, in a child process"
    assert kernel_choice.saved_results_match(bundled_note, None)
    assert not kernel_choice.saved_results_match(bundled_note, spec)
    assert kernel_choice.saved_results_match(user_note, spec)
    assert not kernel_choice.saved_results_match(user_note, None)
    other = parse_kernel_spec(f"{TUTORIAL.parent / 'bug_mean_over_block.py'}:rms_norm")
    assert not kernel_choice.saved_results_match(user_note, other)
    assert kernel_choice.kernel_source(None) == {"kind": "bundled"}
    assert kernel_choice.kernel_source(spec)["file_sha256"] == spec.sha256


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, []), ("a.py:f", ["a.py:f"]), (["a.py:f", "", "b.py:g"], ["a.py:f", "b.py:g"])],
)
def test_recent_kernels_read_back_from_settings(value, expected) -> None:
    assert kernel_choice.recent_kernels(value) == expected


def test_a_receipts_user_kernel_is_offered_only_when_it_is_here_unchanged(tmp_path) -> None:
    import hashlib
    import json

    from inspector.model.kernel_choice import receipt_kernel
    from kernels.sandbox.usercode import parse_kernel_spec

    kernel = tmp_path / "k.py"
    kernel.write_text("def rms_norm(x, weight, eps, out=None):\n    return x\n")

    def receipt(**source) -> str:
        return json.dumps({"kernel": {"source": source}})

    digest = hashlib.sha256(kernel.read_bytes()).hexdigest()
    user = receipt(kind="user", path=str(kernel), function="rms_norm", file_sha256=digest)
    assert receipt_kernel(user, None) == ("offer", f"{kernel}:rms_norm")
    assert receipt_kernel(user, parse_kernel_spec(f"{kernel}:rms_norm")) == ("", "")  # loaded
    assert receipt_kernel(receipt(kind="bundled"), None) == ("", "")
    assert receipt_kernel(None, None) == ("", "")
    assert receipt_kernel("{not json", None) == ("", "")
    changed = receipt(kind="user", path=str(kernel), function="rms_norm", file_sha256="0" * 64)
    assert receipt_kernel(changed, None) == ("changed", f"its kernel {kernel}:rms_norm changed "
                                                        "since the receipt")  # fmt: skip
    gone = receipt(kind="user", path=str(tmp_path / "gone.py"), function="f", file_sha256=digest)
    assert receipt_kernel(gone, None)[0] == "missing"
