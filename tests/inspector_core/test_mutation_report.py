"""mutation.json read back for the Mutation tab: every field checked, survivors first, and a
mutant's diff with context from the kernel's source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inspector.mutate.saved_report import (
    OUTCOME_ORDER,
    ReportError,
    diff_lines,
    read_report,
    source_files,
)

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "docs" / "mutation" / "bundled.json"
TUTORIAL = ROOT / "docs" / "mutation" / "tutorial.json"


def test_the_committed_reports_read_back_survivors_first() -> None:
    for path in (BUNDLED, TUTORIAL):
        report = read_report(path)
        data = json.loads(path.read_text())
        assert len(report.rows) == len(data["mutants"])
        ranks = [OUTCOME_ORDER.index(r.outcome) for r in report.rows]
        assert ranks == sorted(ranks)
        assert report.counts["survived"] == data["survived"]
        assert report.score == data["score"]
    bundled = read_report(BUNDLED)
    assert bundled.rows[0].outcome == "survived"
    assert bundled.rows[-1].outcome != "survived"


def test_a_diff_shows_the_site_before_and_after_in_its_context() -> None:
    report = read_report(TUTORIAL)
    files = source_files(report, TUTORIAL)
    assert [p.name for p in files] == ["tutorial.py"]
    row = next(r for r in report.rows if r.operator == "Div -> Mult")
    lines = diff_lines(row, files)
    source = files[0].read_text().splitlines()
    assert lines[0] == f"--- tutorial.py:{row.line} ({row.function})"
    assert f"-{source[row.line - 1]}" in lines
    assert f"+{source[row.line - 1].replace(row.before, row.after)}" in lines
    assert f" {source[row.line - 2]}" in lines  # context before
    assert f" {source[row.line]}" in lines  # and after
    # A one-character site: the diff shows its own line changed at its own column.
    axis = next(r for r in report.rows if r.line == 21 and r.operator == "constant 0 -> -1")
    plus = next(line for line in diff_lines(axis, files) if line.startswith("+") and "sum" in line)
    assert "axis=-1" in plus
    # Without the source: the bare site.
    assert diff_lines(row, [])[-2:] == [f"-{row.before}", f"+{row.after}"]


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "mutation.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["mutants"][0].update(outcome="maybe"), "mutants[0].outcome must be one of"),
        (lambda d: d["mutants"][1].update(line="7"), "mutants[1].line must be a line number"),
        (lambda d: d["mutants"][2].pop("before"), "mutants[2] has no 'before'"),
        (lambda d: d["mutants"][0].update(killed_by="all"), "mutants[0].killed_by must be a list"),
        (lambda d: d.update(killed=d["killed"] + 1), "killed is"),
        (lambda d: d.update(score=1.5), "score must be a number in [0, 1]"),
        (lambda d: d.update(kernel=[]), "kernel must be an object"),
        (lambda d: d.update(mutants={}), "mutants must be a list"),
    ],
)
def test_a_malformed_report_is_refused_naming_the_field(tmp_path, change, message) -> None:
    data = json.loads(TUTORIAL.read_text())
    change(data)
    with pytest.raises(ReportError, match=None) as raised:
        read_report(_write(tmp_path, data))
    assert message in str(raised.value)
    assert str(raised.value).startswith("mutation.json: ")


def test_not_json_too_large_or_not_an_object_is_refused(tmp_path, monkeypatch) -> None:
    path = tmp_path / "mutation.json"
    path.write_bytes(b"\xff{ not json")
    with pytest.raises(ReportError, match="not a readable JSON file"):
        read_report(path)
    with pytest.raises(ReportError, match="a mutation report is a JSON object"):
        read_report(_write(tmp_path, [1, 2]))
    import inspector.mutate.saved_report as mutation_report

    monkeypatch.setattr(mutation_report, "MAX_REPORT_BYTES", 100)
    with pytest.raises(ReportError, match="a mutation report is at most 100 bytes"):
        read_report(TUTORIAL)


def test_the_mutate_job_yields_progress_then_the_report_and_stops_on_cancel(monkeypatch) -> None:
    import threading

    import inspector.mutate.campaign as campaign
    from inspector.jobs import tasks

    seen = []

    def fake_report(kernel, scratch, *, jobs, progress, cancelled, **_):
        for done in (1, 2):
            if cancelled():
                break
            progress(done, 2, f"m00{done}")
            seen.append(done)
        return {"kernel": kernel}

    monkeypatch.setattr(campaign, "mutate_report", fake_report)
    items = list(tasks.mutate_job("k.py:f")(threading.Event()))
    assert items[1:] == [(1, 2, "m001"), (2, 2, "m002"), {"kernel": "k.py:f"}]
    cancel = threading.Event()
    cancel.set()
    seen.clear()
    with pytest.raises(tasks.Cancelled):
        list(tasks.mutate_job(None)(cancel))
    assert seen == []
