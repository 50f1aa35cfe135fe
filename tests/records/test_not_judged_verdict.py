"""A check this machine could not fully judge has its own verdict, "not judged": never PASSED
(green) and never FAILED (the kernel's fault) in the window's verdict, its check log, its status
line, the receipt's ``verdict.outcome`` (which verify recomputes) and a saved session."""

from __future__ import annotations

import dataclasses
import json

import h5py
import pytest

from inspector.check import report
from inspector.model import evidence
from inspector.records.receipts import receipt, verify
from inspector.records.sessions import seal, session
from inspector.records.sessions.session import Session, SessionError, load_session, save_session


def _edit(path, change) -> None:
    """Change a sealed session with h5py, then reseal it (tests the checks behind the seal)."""
    with h5py.File(path, "a") as root:
        change(root)
    seal.write_seal(path, session.SCHEMA_VERSION)


WHY = "not judged on this machine: bfloat16 arithmetic: mul gave 6.646e+35 where -43.75 is right"


@pytest.fixture
def unjudged(model_results):
    """A check with no failure whose kernel run on the input this machine could not judge."""
    result = dataclasses.replace(model_results["float32"], input_not_judged=WHY)
    assert result.failures == ()
    return result


def test_the_verdict_is_its_own_word_in_its_own_colour(unjudged, model_results) -> None:
    assert unjudged.verdict == "not judged"
    assert not unjudged.passed
    assert model_results["float32"].verdict == "passed"
    html = report.check_verdict_html(unjudged, "12:00:00")
    assert f"<b style='color:{report.STALE_COLOR}'>check NOT JUDGED</b> at 12:00:00" in html
    assert "1 run(s) this machine could not judge" in html
    assert "FAILED" not in html
    assert "(the lane model's: the kernel's run on this input was not judged)" in html
    assert report.check_log_lines(unjudged)[0].startswith("check NOT JUDGED — mode")
    reason = evidence.receipt_reason(unjudged)
    assert reason == f"check not judged: 1 run(s); first: the input: {WHY}"


def test_a_failure_beside_an_unjudged_run_is_failed(unjudged) -> None:
    failing = dataclasses.replace(unjudged, failures=("kernel fixture width_70",))
    assert failing.verdict == "failed"
    assert "check FAILED" in report.check_verdict_html(failing)


def test_the_receipt_names_the_outcome_and_verify_recomputes_it(unjudged, tmp_path) -> None:
    receipt.write_receipts(unjudged, tmp_path)
    path = tmp_path / "receipt.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["verdict"] == {"passed": False, "failures": [], "outcome": "not judged"}
    checks = {c.name: c for c in verify.verify_receipts(path).checks}
    assert checks["verdict names its outcome"].ok
    for forged in ("passed", "failed"):
        data["verdict"]["outcome"] = forged
        path.write_text(json.dumps(data), encoding="utf-8")
        report_ = verify.verify_receipts(path)
        assert not report_.ok
        assert any(p.startswith("verdict names its outcome: outcome " + repr(forged))
                   for p in report_.problems)  # fmt: skip


def test_a_passing_receipt_whose_outcome_says_not_judged_is_refused(model_results, tmp_path):
    receipt.write_receipts(model_results["float16"], tmp_path)
    path = tmp_path / "receipt.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["verdict"]["outcome"] == "passed"
    data["verdict"]["outcome"] = "not judged"
    path.write_text(json.dumps(data), encoding="utf-8")
    problems = " | ".join(verify.verify_receipts(path).problems)
    assert "verdict names its outcome: outcome 'not judged'; 0 failure(s), 0 run(s)" in problems


def test_a_saved_check_keeps_its_verdict_and_a_contradicting_one_is_refused(unjudged, tmp_path):
    path = tmp_path / "s.h5"
    save_session(path, Session.from_check(unjudged))
    loaded = load_session(path)
    assert loaded.results.verdict == "not judged"
    assert report.saved_check_lines(loaded.results, [])[0].startswith("saved check NOT JUDGED")
    assert report.STALE_COLOR in report.saved_verdict_html(loaded.results)
    for value, message in (("maybe", "is not one of passed, failed, not judged"),
                           ("passed", "contradicts passed=False")):  # fmt: skip
        save_session(path, Session.from_check(unjudged))
        _edit(path, lambda root, value=value: root["results"].attrs.__setitem__("verdict", value))
        with pytest.raises(SessionError, match=message):
            load_session(path)


def test_a_session_written_before_the_verdict_attribute_reads_it_from_passed(
    model_results, tmp_path
) -> None:
    path = tmp_path / "s.h5"
    save_session(path, Session.from_check(model_results["float32"]))
    _edit(path, lambda root: root["results"].attrs.__delitem__("verdict"))
    assert load_session(path).results.verdict == "passed"
