"""History tab: the session's first passing receipt and counterexamples, and their diff."""

from __future__ import annotations

import json

import pytest

from inspector.qt.widgets import dialogs


def test_history_lists_receipts_and_diffs_two_of_them(
    qtbot, window, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = window.history_view
    assert view.entries == []
    window.kernel_in_check.setChecked(False)
    with qtbot.waitSignal(window.runner.result, timeout=30000):
        assert window.run_check()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=5000)
    # The first passing receipt is kept and shown when the check ends, before any export.
    assert len(view.entries) == 1
    folder = tmp_path / "receipts"
    folder.mkdir()
    monkeypatch.setattr(dialogs, "choose_directory", lambda *a: str(folder))
    assert window.files.export_receipts()
    # Exporting it makes the written pair current without a second history entry.
    assert len(view.entries) == 1
    assert window.state.session.receipt_json == (folder / "receipt.json").read_text("utf-8")
    assert "first" in view.a_combo.itemText(0) or "pass" in view.a_combo.itemText(0)
    assert "the same receipt" in view.diff_text.toPlainText()

    # A later counterexample (a different kernel source and a surviving mutant, injected).
    receipt = json.loads((folder / "receipt.json").read_text(encoding="utf-8"))
    changed = json.loads(json.dumps(receipt))
    changed["input"]["eps"] = receipt["input"]["eps"] * 2
    changed["errors"]["passed"] = False
    session = window.state.session
    session.record_receipts(json.dumps(changed), "", passed=False, reason="injected regression")
    window.refresh_history()
    assert len(view.entries) == 2
    assert "counterexample" in view.b_combo.itemText(1)
    assert "injected regression" in view.b_combo.itemText(1)
    assert view.a_combo.currentIndex() == 0
    assert view.b_combo.currentIndex() == 1
    text = view.diff_text.toPlainText()
    assert "difference(s) between A and B" in text
    assert "eps" in text
    assert view.compare(0, 1) == text.splitlines()[1:]
    # Picking the same entry twice: no differences.
    view.b_combo.setCurrentIndex(0)
    assert view.compare(0, 0) == []
    assert "the same receipt" in view.diff_text.toPlainText()

    # Saved and reopened, the history comes back in the tab.
    path = tmp_path / "history.h5"
    monkeypatch.setattr(dialogs, "choose_save_file", lambda *a: str(path))
    assert window.files.save_session_as()
    window.files.new_session()
    assert view.entries == []
    assert window.files.open_session(str(path))
    assert len(view.entries) == 2
    assert "eps" in view.diff_text.toPlainText()


def test_history_reports_a_damaged_stored_receipt(qtbot) -> None:
    from inspector.qt.widgets.history_view import HistoryView
    from inspector.records.sessions.session import ReceiptRecord

    view = HistoryView()
    qtbot.addWidget(view)
    view.set_history(
        [
            ReceiptRecord("first_pass", "t0", "passed", "{not json", ""),
            ReceiptRecord("counterexample", "t1", "failed", "{}", ""),
        ]
    )
    assert "cannot compare" in view.diff_text.toPlainText()


def test_a_long_counterexample_reason_never_widens_the_tab(qtbot) -> None:
    # A failed check's reason names its first failure (up to 300 characters): the combos elide
    # it (whole in the tooltip), so the History tab, and with it the window, keep their width.
    from types import SimpleNamespace

    from inspector.qt.widgets.history_view import HistoryView

    view = HistoryView()
    qtbot.addWidget(view)
    narrow = view.minimumSizeHint().width()
    reason = "check failed: 24 failure(s); first: kernel vs scalar reference: FAIL " + "x" * 230
    records = [SimpleNamespace(kind="counterexample", created="2026-12-06 07:40:44",
                               reason=reason, json_text="{}")]  # fmt: skip
    view.set_history(records)
    assert view.minimumSizeHint().width() <= max(narrow, 600)
    assert view.a_combo.itemData(0, 3) == view.a_combo.itemText(0)  # ToolTipRole: whole
    assert reason in view.a_combo.itemText(0)
