"""The Mutation tab: a committed report opened through File → Open mutation report…, survivors
first, the selected mutant's diff; a malformed report refused with a message; Run mutate on
the worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inspector.qt.widgets import dialogs

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "docs" / "mutation" / "bundled.json"


def _open(window, monkeypatch, path: Path) -> None:
    monkeypatch.setattr(dialogs, "choose_open_file", lambda *a: str(path))
    window.mutation_actions.open_action.trigger()


def test_a_committed_report_lists_survivors_first_with_a_diff(window, monkeypatch) -> None:
    _open(window, monkeypatch, BUNDLED)
    view = window.mutation_view
    assert window.tabs.currentWidget() is view
    data = json.loads(BUNDLED.read_text())
    model = view.model
    assert model.rowCount() == len(data["mutants"])
    outcomes = [model.index(r, 4).data() for r in range(model.rowCount())]
    survived = outcomes.count("survived")
    assert survived == data["survived"] > 0
    assert outcomes[:survived] == ["survived"] * survived
    assert "survived" not in outcomes[survived:]
    assert f"score {data['score']:.3f}" in view.summary.text()
    # A killed mutant selected: its diff, its killing fixture.
    row = outcomes.index("killed")
    view.select(row)
    mutant = model.rows[row]
    text = view.diff.toPlainText()
    assert f"+++ mutant {mutant.id}: {mutant.operator}" in text
    minus = [
        line for line in text.splitlines() if line.startswith("-") and not line.startswith("---")
    ]
    plus = [
        line for line in text.splitlines() if line.startswith("+") and not line.startswith("+++")
    ]
    assert any(mutant.before.splitlines()[0] in line for line in minus)
    assert any(mutant.after.splitlines()[0] in line for line in plus)
    assert f"killed by: {', '.join(mutant.killed_by)}" in text
    assert model.index(row, 5).data() == ", ".join(mutant.killed_by)


def test_a_malformed_report_is_refused_with_a_message(window, monkeypatch, tmp_path) -> None:
    _open(window, monkeypatch, BUNDLED)
    shown = window.mutation_view.model.rowCount()
    data = json.loads(BUNDLED.read_text())
    data["mutants"][3]["outcome"] = "unknown"
    bad = tmp_path / "mutation.json"
    bad.write_text(json.dumps(data))
    errors = []
    monkeypatch.setattr(
        dialogs, "show_error", lambda parent, title, message: errors.append(message)
    )
    _open(window, monkeypatch, bad)
    assert len(errors) == 1
    assert "mutants[3].outcome must be one of" in errors[0]
    assert window.mutation_view.model.rowCount() == shown  # what it showed stays
    (tmp_path / "huge.json").write_bytes(b"[" * 100_000)
    _open(window, monkeypatch, tmp_path / "huge.json")
    assert len(errors) == 2
    assert "huge.json" in errors[1]


@pytest.mark.usefixtures("jobs_on_thread")  # the report is faked by a patch in this process
def test_run_mutate_runs_on_the_worker_and_shows_its_report(qtbot, window, monkeypatch) -> None:
    import inspector.mutate.campaign as campaign

    data = json.loads(BUNDLED.read_text())
    calls = []

    def fake_report(kernel, scratch, *, jobs, progress, cancelled, **_):
        calls.append(kernel)
        progress(1, 2, "m001 first")
        progress(2, 2, "m002 second")
        return data

    monkeypatch.setattr(campaign, "mutate_report", fake_report)
    with qtbot.waitSignal(window.runner.result, timeout=20000):
        assert window.mutation_actions.run_mutate()
    qtbot.waitUntil(lambda: window.mutation_view.model.rowCount() == len(data["mutants"]))
    assert calls == [None]  # no kernel loaded: the bundled one
    assert window.mutation_view.model.index(0, 4).data() == "survived"
