"""Sessions and receipts through the window: dialogs patched, files only under tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inspector.qt.app import run_app
from inspector.qt.widgets import dialogs
from inspector.records.receipts import receipt, verify
from inspector.records.sessions.session import load_session
from oracle.dtypes import bfloat16_bits
from oracle.mutants import MODEL_MUTANTS

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo_session.h5"


def _run_model_check(qtbot, window) -> None:
    window.kernel_in_check.setChecked(False)
    with qtbot.waitSignal(window.runner.result, timeout=30000):
        assert window.run_check()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=5000)


def test_save_open_round_trip_is_bit_exact_in_bfloat16(
    qtbot, click_switch, window, tmp_path, monkeypatch: pytest.MonkeyPatch, settings
) -> None:
    panel = window.input_panel
    panel.dtype_combo.setCurrentText("bfloat16")
    panel.rows_edit.setText("5")
    panel.width_edit.setText("37")
    panel.stride_edit.setText("40")
    panel.seed_edit.setText("3")
    panel.load_random()
    problem = window.state.problem
    assert problem.dtype == "bfloat16"
    click_switch(qtbot, window.mutant_panel.switches["missing_weight"])
    _run_model_check(qtbot, window)
    path = tmp_path / "inspection"
    monkeypatch.setattr(dialogs, "choose_save_file", lambda *a: str(path))
    assert window.files.save_session_as()
    saved = tmp_path / "inspection.h5"
    assert saved.is_file()
    assert not window.state.dirty
    assert window.state.session_path == str(saved)

    from inspector.qt.window import InspectorWindow

    other = InspectorWindow(demo=True, settings=settings)
    qtbot.addWidget(other)
    assert other.files.open_session(str(saved))
    np.testing.assert_array_equal(bfloat16_bits(other.state.problem.x), bfloat16_bits(problem.x))
    np.testing.assert_array_equal(other.state.problem.weight, problem.weight)
    assert other.state.problem.row_stride == 40
    assert other.state.problem.eps == problem.eps
    assert other.mutant_panel.current == "missing_weight"
    # The saved check comes back into the kill-matrix view.
    assert len(other.kill_view.model.row_labels()) == 1 + len(MODEL_MUTANTS)
    assert str(saved) in other.files.recent_files()
    other.state.dirty = False
    other.shutdown()
    other.close()
    session = load_session(saved)
    assert session.dtype == "bfloat16"
    assert session.results is not None


def test_open_failure_keeps_the_current_state(window, tmp_path) -> None:
    bad = tmp_path / "not_a_session.h5"
    bad.write_bytes(b"definitely not hdf5")
    before = window.state.problem
    assert not window.files.open_session(str(bad))
    assert window.state.problem is before
    assert "open failed" in window.status_line.text()
    assert bad.read_bytes() == b"definitely not hdf5"


def test_export_receipts_writes_a_pair_that_verify_accepts(
    qtbot, window, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run_model_check(qtbot, window)
    monkeypatch.setattr(dialogs, "choose_directory", lambda *a: str(tmp_path / "out"))
    assert window.files.export_receipts()
    json_path = tmp_path / "out" / receipt.JSON_NAME
    assert json_path.is_file()
    report = verify.verify_receipts(json_path, tmp_path / "out" / receipt.CSV_NAME)
    assert report.ok, report
    assert "reparse of both files passed" in window.verdict.text()


def test_close_with_unsaved_changes_asks(qtbot, window, monkeypatch: pytest.MonkeyPatch) -> None:
    window.input_panel.eps_edit.setText("1e-5")
    window.input_panel.eps_edit.textEdited.emit("1e-5")
    assert window.state.dirty
    asked: list[str] = []

    def answer(parent):
        asked.append("asked")
        return "cancel"

    monkeypatch.setattr(dialogs, "ask_unsaved", answer)
    assert not window.close()
    assert asked
    assert window.isVisible()
    monkeypatch.setattr(dialogs, "ask_unsaved", lambda parent: "discard")
    assert window.close()


def test_screenshot_mode_renders_a_png_and_starts_no_job_process(
    qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inspector.qt import window as window_module

    warmed: list[str] = []
    monkeypatch.setattr(window_module, "prewarm", lambda: warmed.append("prewarm"))
    out = tmp_path / "shot.png"
    assert run_app(None, str(out)) == 0
    assert out.stat().st_size > 10_000
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert warmed == []  # it runs no job, so it starts no torch + Triton process
    from inspector.qt.app import build_window

    opened = build_window(None)
    try:
        assert warmed == (["prewarm"] if opened.env["available"] else [])
    finally:
        opened.state.dirty = False
        opened.shutdown()
        opened.close()


def test_autosave_and_recovery_after_a_crash(
    qtbot, window, tmp_path, monkeypatch: pytest.MonkeyPatch, settings
) -> None:
    from inspector.qt.window import InspectorWindow

    panel = window.input_panel
    panel.eps_edit.setText("2e-6")
    panel.eps_edit.textEdited.emit("2e-6")
    window.input_panel.validate()
    assert window.state.dirty
    target = window.files.autosave()
    assert target is not None
    assert (tmp_path / "autosave").is_dir()
    # "Crash": a new window finds the autosave and, when the user agrees, opens it untitled.
    monkeypatch.setattr(dialogs, "ask_recover", lambda parent, path: True)
    other = InspectorWindow(demo=True, settings=settings, autosave_dir=str(tmp_path / "autosave"))
    qtbot.addWidget(other)
    assert other.files.offer_recovery()
    assert other.state.problem.eps == pytest.approx(2e-6)
    assert other.state.dirty
    assert other.state.session_path is None
    # Saving for real removes the autosave.
    monkeypatch.setattr(dialogs, "choose_save_file", lambda *a: str(tmp_path / "saved.h5"))
    assert other.files.save_session()
    assert not other.files.offer_recovery()
    other.state.dirty = False
    other.shutdown()
    other.close()


def test_a_session_whose_kernel_changed_shows_that_instead_of_its_verdict(
    qtbot, window, tmp_path
) -> None:
    # A session saved by an older kernel: its receipt names another kernel hash.
    from inspector.records.sessions.session import save_session

    demo = load_session(DEMO)
    receipt = json.loads(demo.receipt_json)
    receipt["kernel"]["source_sha256"] = "0" * 64
    demo.receipt_json = json.dumps(receipt)
    path = tmp_path / "old.h5"
    save_session(path, demo)
    assert window.files.open_session(str(path), interactive=False)
    verdict = window.verdict.text()
    assert "kernel changed since this receipt" in verdict
    assert "saved check PASSED" not in verdict
    assert "it proved the bundled kernel with sha256 000000000000..." in (
        window.summary.toPlainText()
    )
    # The shipped demo names the shipped kernel: its verdict stays.
    assert window.files.open_session(str(DEMO), interactive=False, as_template=True)
    assert "saved check PASSED" in window.verdict.text()


def test_an_autosave_that_cannot_be_opened_is_set_aside_and_not_offered_again(
    qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch, settings
) -> None:
    from inspector.qt.window import InspectorWindow
    from inspector.records.sessions.autosave import autosave_path

    cache = tmp_path / "autosave"
    cache.mkdir()
    bad = autosave_path(None, str(cache))
    bad.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 600)  # looks like HDF5, opens as nothing
    errors: list[str] = []
    monkeypatch.setattr(dialogs, "ask_recover", lambda parent, path: True)
    monkeypatch.setattr(dialogs, "show_error", lambda parent, title, text: errors.append(text))
    for _ in range(2):
        window = InspectorWindow(demo=True, settings=settings, autosave_dir=str(cache))
        qtbot.addWidget(window)
        assert not window.files.offer_recovery()
        window.state.dirty = False
        window.shutdown()
        window.close()
    assert len(errors) == 1  # offered, refused with a message, then never again
    assert not bad.exists()
    assert [p.name.split(".unreadable-")[0] for p in cache.iterdir()] == [bad.name]


def test_saving_over_a_session_that_changed_on_disk_asks_first(
    window, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from inspector.records.sessions.session import save_session

    path = tmp_path / "shared.h5"
    save_session(path, load_session(DEMO))
    assert window.files.open_session(str(path), interactive=False)
    window.input_panel.eps_edit.setText("0.001")  # this window's edit
    other = load_session(DEMO)  # another window's save of the same file, meanwhile
    other.name = "saved by another window"
    save_session(path, other)
    os.utime(path, ns=(1, 1))  # a clock that did not move still changes the stamp
    before = path.read_bytes()
    asked: list[str] = []

    def refuse(parent, where):
        asked.append(where)
        return False

    monkeypatch.setattr(dialogs, "ask_overwrite_changed", refuse)
    assert not window.files.save_session()
    assert asked == [str(path)]
    assert path.read_bytes() == before  # kept as the other window wrote it
    assert "changed on disk" in window.status_line.text()
    monkeypatch.setattr(dialogs, "ask_overwrite_changed", lambda parent, where: True)
    assert window.files.save_session()
    assert path.read_bytes() != before
    monkeypatch.setattr(dialogs, "ask_overwrite_changed", refuse)
    assert window.files.save_session()  # saved by this window since: no question
    assert len(asked) == 1


def test_a_save_while_a_run_holds_the_session_lock_fails_cleanly(
    window, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inspector.records.locks import held, session_lock_path
    from inspector.records.sessions.session import save_session

    path = tmp_path / "busy.h5"
    save_session(path, load_session(DEMO))
    assert window.files.open_session(str(path), interactive=False)
    before = path.read_bytes()
    errors: list[str] = []
    monkeypatch.setattr(dialogs, "show_error", lambda parent, title, text: errors.append(text))
    with held(session_lock_path(path)) as got:  # what `check --session` holds while it writes
        assert got
        assert not window.files.save_session()
    assert path.read_bytes() == before
    assert errors == [f"{path}: another run is writing {path}; save again when it is done"]
    assert window.files.save_session()  # the run is done: the save goes through


def test_a_session_whose_bench_rows_a_record_would_refuse_is_refused_by_field(
    window, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inspector.records.sessions.session import save_session

    session = load_session(DEMO)
    record = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "results.json"
    row = {**json.loads(record.read_text(encoding="utf-8"))["results"][0], "rows": 10**300}
    session.bench_meta = {"rows": [row], "dtypes": [row["dtype"]], "shapes": "record"}
    path = tmp_path / "rows.h5"
    save_session(path, session)
    errors: list[str] = []
    monkeypatch.setattr(dialogs, "show_error", lambda parent, title, text: errors.append(text))
    before = window.state.problem
    assert not window.files.open_session(str(path))
    assert window.state.problem is before
    assert len(errors) == 1
    assert "bench meta rows[0].rows must be <= 2147483647" in errors[0]
    assert window.status_line.text().startswith("open failed")


def test_a_session_a_view_cannot_show_is_an_error_not_an_escape(
    window, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The last guard, for a part the reader let through: the error is shown, nothing raises.
    def refuse(*args, **kwargs):
        raise TypeError("a view met a value of the wrong type")

    errors: list[tuple[str, str]] = []
    monkeypatch.setattr(
        dialogs, "show_error", lambda parent, title, text: errors.append((title, text))
    )
    monkeypatch.setattr(window.state, "restore_session", refuse)
    assert not window.files.open_session(str(DEMO))
    assert errors == [
        ("Cannot show session", f"{DEMO}: TypeError: a view met a value of the wrong type")
    ]
    assert window.status_line.text().startswith("open failed")
    assert window.state.session_path is None
