"""One record behind every view: after each transition (kernel switch, invalid input, mutant on,
reopen, save after a switch) the verdict, check log, kill matrix, grid, stepper, row table and
compiler tab name the same record and agree with it; evidence that no longer holds is marked
stale in place, and a saved proof is exported again byte for byte."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inspector.check import report
from inspector.model import record_text
from inspector.qt.widgets import dialogs
from inspector.records.receipts import receipt as receipt_files
from inspector.records.sessions.session import load_session, save_session
from oracle.spec import synthetic_problem

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "resources" / "demo_session.h5"
UNMASKED_STORE = ROOT / "resources" / "kernels" / "bug_unmasked_store.py"
TIMEOUT_MS = 120_000


def _wait_idle(qtbot, window) -> None:
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=TIMEOUT_MS)


def _run(qtbot, window, start) -> None:
    with qtbot.waitSignal(window.runner.finished, timeout=TIMEOUT_MS):
        assert start()
    _wait_idle(qtbot, window)


def _model_check(qtbot, window) -> None:
    window.kernel_in_check.setChecked(False)
    _run(qtbot, window, window.run_check)
    assert window.state.check_current


def _views(window) -> dict[str, str]:
    return {
        "verdict": window.verdict.text(),
        "log": window.summary.toPlainText(),
        "kill": window.kill_view.source.text(),
        "grid": window.grid.source.text(),
        "stepper": window.stepper.source.text(),
        "table": window.row_table.note.text(),
        "compiler": window.compiler_view.facts.text(),
    }


def _assert_one_record(window) -> None:
    """Every evidence view names the shown record (and the grid, stepper and table its
    input), and says STALE exactly when the record is."""
    record = window.state.record()
    views = _views(window)
    assert record.tag in views["verdict"]
    assert views["log"].splitlines()[0] == f"record: {record.tag}"
    assert views["kill"] == f"from {record.caption()}" or views["kill"].startswith(
        f"from {record.caption()};"
    )
    for name in ("grid", "stepper", "table"):
        assert f"input {record.input_id}" in views[name], name
    assert ("STALE" in views["log"]) == bool(record.stale)
    assert (report.PASSED_COLOR in views["verdict"]) == (
        record.current and record.verdict == "passed"
    )


def test_switching_kernels_never_pairs_one_kernels_verdict_with_another(
    qtbot, window, monkeypatch, tmp_path
) -> None:
    # The demo session's PASSED check of the bundled kernel, then a FAILED check of a user's
    # kernel on the same input, then back to the bundled kernel.
    assert window.files.open_session(str(DEMO), interactive=False, as_template=True)
    assert "saved check PASSED" in window.verdict.text()
    monkeypatch.setattr(dialogs, "choose_open_file", lambda *a: str(UNMASKED_STORE))
    window.menus.open_kernel.trigger()
    _wait_idle(qtbot, window)
    assert "receipt of another kernel" in window.verdict.text()
    window.kernel_in_check.setChecked(True)
    _run(qtbot, window, window.run_check)
    failed = window.state.check_result
    assert not failed.passed
    assert window.state.session_results is None  # the newer check supersedes the saved one
    _assert_one_record(window)
    assert "check FAILED" in window.verdict.text()
    assert window.state.kernel_output() is not None

    window.menus.bundled_kernel.trigger()
    assert window.state.kernel is None
    record = window.state.record()
    assert record.check is failed
    assert record.stale.startswith("of bug_unmasked_store.py:rms_norm, not the loaded kernel")
    _assert_one_record(window)
    verdict = window.verdict.text()
    assert "check of another kernel" in verdict
    assert "FAILED" in verdict
    assert "PASSED" not in verdict
    assert "bug_unmasked_store.py:rms_norm" in verdict
    # None of its kernel output, nor its kernel rows, are shown as the bundled kernel's.
    assert window.state.kernel_output() is None
    assert window.stepper.source.text().endswith("kernel: not run on this input")
    assert window.grid.source.text() == window.stepper.source.text()
    labels = window.kill_view.model.row_labels()
    assert labels
    assert all(not label.startswith("kernel") for label in labels)
    assert "kernel rows are withdrawn" in window.kill_view.source.text()
    assert window.coverage_view.caption.text().startswith("No coverage map: the check on show")

    # Save after the switch keeps the check, tagged with the kernel it proved.
    path = tmp_path / "switched.h5"
    monkeypatch.setattr(dialogs, "choose_save_file", lambda *a: str(path))
    assert window.files.save_session_as()
    saved = load_session(path)
    assert saved.results is not None
    assert saved.results.kernel_note.startswith(f"user kernel {UNMASKED_STORE}:rms_norm")
    assert not saved.results.passed
    assert saved.receipt_json == failed.receipt_texts[0]
    assert saved.results.kernel_oob_addresses is not None
    assert len(saved.results.kernel_oob_addresses) == failed.kernel.stores.count

    # Reopened with the bundled kernel loaded: still the other kernel's, still not PASSED.
    monkeypatch.setattr(dialogs, "ask_load_kernel", lambda parent, text: False)
    assert window.files.open_session(str(path))
    record = window.state.record()
    assert record.origin == "saved"
    assert record.receipt == (saved.receipt_json, saved.receipt_csv)
    assert record.of_other_kernel
    _assert_one_record(window)
    assert "receipt of another kernel" in window.verdict.text()
    assert "PASSED" not in window.verdict.text()
    assert window.state.kernel_output() is None


def _small_input(window) -> None:
    problem = synthetic_problem(3, 40, seed=1)
    window.input_panel.set_values(
        x=np.array(problem.x), weight=np.array(problem.weight), eps="1e-6", dtype="float32"
    )
    assert window.state.analysis_current


@pytest.mark.parametrize("how", ["eps 0", "nan_text"])
def test_an_invalid_input_marks_every_view_stale_in_place(qtbot, window, how) -> None:
    _small_input(window)
    _model_check(qtbot, window)
    record = window.state.record()
    _assert_one_record(window)
    assert "check PASSED</b>" in window.verdict.text()
    if how == "eps 0":
        window.input_panel.eps_edit.setText("0")
        window.input_panel.validate()
    else:
        window.input_panel.load_fixture("nan_text")
    assert window.state.problem is None
    stale = window.state.record()
    assert stale.check is record.check
    assert stale.stale.startswith("the input is invalid now")
    _assert_one_record(window)
    views = _views(window)
    assert report.PASSED_COLOR not in views["verdict"]
    assert views["verdict"].startswith(f"<b style='color:{report.STALE_COLOR}'>STALE</b>")
    for name in ("grid", "stepper", "table"):
        assert views[name].startswith("STALE (the input is invalid now"), name
    assert views["kill"].startswith("from STALE (the input is invalid now")
    assert views["log"].splitlines()[1].startswith("STALE: the input is invalid now")
    # A valid input again: the old check is withdrawn, no view claims it.
    _small_input(window)
    assert window.state.record() is None
    assert window.verdict.text().startswith("Input changed: run the check")
    assert window.kill_view.model.row_labels() == []
    assert window.summary.toPlainText().startswith("No check of this input yet")


def test_a_mutant_on_says_the_verdict_is_the_faithful_checks(qtbot, window, click_switch) -> None:
    _small_input(window)
    _model_check(qtbot, window)
    click_switch(qtbot, window.mutant_panel.switches["missing_weight"])
    qtbot.waitUntil(lambda: "mutant missing_weight" in window.stepper.source.text(), timeout=5000)
    _assert_one_record(window)
    matrix = window.state.check_result.model_matrix
    killers = matrix.killed_by("missing_weight")
    assert killers
    assert (
        "this verdict is the faithful kernel's and lane model's; the views show mutant "
        f"<b>missing_weight</b> (model: killed by {len(killers)} fixture(s))"
    ) in window.verdict.text()


def test_the_compiler_tab_names_its_shape_and_goes_stale_with_the_input(qtbot, window) -> None:
    assert window.files.open_session(str(DEMO), interactive=False, as_template=True)
    problem = window.state.problem
    facts = window.compiler_view.facts.text()
    assert facts.startswith(
        f"from the session, compiled for {problem.dtype}, width {problem.width}"
    )
    _small_input(window)
    facts = window.compiler_view.facts.text()
    assert facts.startswith(
        f"STALE: from the session, compiled for {problem.dtype}, width {problem.width}; "
        "the input is float32, width 40 now"
    )


def test_a_reopened_session_shows_every_detail_of_its_saved_check_and_nothing_of_the_last(
    qtbot, window, tmp_path
) -> None:
    _small_input(window)
    _model_check(qtbot, window)
    assert "check done" in window.progress.format() or "idle" in window.progress.format()
    empty = tmp_path / "empty.h5"
    bare = load_session(DEMO)
    bare.results, bare.receipt_json, bare.receipt_csv, bare.receipt_history = None, None, None, []
    save_session(empty, bare)
    assert window.files.open_session(str(empty), interactive=False)
    assert window.state.record() is None
    assert window.summary.toPlainText().startswith("No check of this input yet")
    assert window.progress.format() == "idle"
    # The demo's saved check: its verdict with the receipt's errors, bound, certificate and
    # coverage words, as the live verdict gives them.
    assert window.files.open_session(str(DEMO), interactive=False, as_template=True)
    record = window.state.record()
    assert record.origin == "saved"
    assert record.receipt_data is not None
    _assert_one_record(window)
    verdict = window.verdict.text()
    assert "saved check PASSED" in verdict
    errors = record.receipt_data["errors"]
    assert f"max abs {float(errors['max_abs']):.2e}" in verdict
    required, optional = record_text.receipt_words(record.receipt_data)
    assert required or optional
    for word in required + optional:
        assert word in verdict
    log = window.summary.toPlainText()
    assert "errors (" in log
    assert "export check:" in log


def test_export_from_a_reopened_session_writes_its_saved_receipts_byte_for_byte(
    qtbot, window, tmp_path, monkeypatch
) -> None:
    assert window.files.open_session(str(DEMO), interactive=False, as_template=True)
    assert not window.state.check_of_input
    out = tmp_path / "out"
    monkeypatch.setattr(dialogs, "choose_directory", lambda *a: str(out))
    assert window.files.export_receipts()
    session = load_session(DEMO)
    assert (out / receipt_files.JSON_NAME).read_bytes() == session.receipt_json.encode("utf-8")
    assert (out / receipt_files.CSV_NAME).read_bytes() == session.receipt_csv.encode("utf-8")
    assert "independent verify passed" in window.verdict.text()


def test_saving_a_reopened_session_keeps_its_saved_check(qtbot, window, tmp_path) -> None:
    assert window.files.open_session(str(DEMO), interactive=False, as_template=True)
    path = tmp_path / "again.h5"
    assert window.files.write_session(str(path))
    again, demo = load_session(path), load_session(DEMO)
    assert again.results is not None
    assert again.results.kernel_note == demo.results.kernel_note
    np.testing.assert_array_equal(again.results.kernel_y, demo.results.kernel_y)
    assert again.receipt_json == demo.receipt_json
