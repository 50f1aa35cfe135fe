"""Benchmark view and job without a GPU: fake harness rows, read the plot back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inspector.jobs import tasks
from inspector.qt.widgets import dialogs
from inspector.qt.widgets.bench_view import BenchView


def _rows() -> list[dict]:
    rows = []
    for width, copy_gbps in ((1024, 4000.0), (4096, 4200.0)):
        for impl, share in (("copy", 1.0), ("ours", 0.9), ("torch_eager", 0.6)):
            gbps = copy_gbps * share
            rows.append(
                {
                    "set": "llm",
                    "rows": 4096,
                    "width": width,
                    "dtype": "bfloat16",
                    "impl": impl,
                    "status": "ok",
                    "gbps": gbps,
                    "gbps_p20_time": gbps * 1.02,
                    "gbps_p80_time": gbps * 0.98,
                    "pct_of_copy": 100.0 * share,
                    "samples_us": [10.0, 11.0, 12.0],
                    "median_us": 11.0 / share,
                    "p20_us": 10.0 / share,
                    "p80_us": 12.0 / share,
                    "loop_us": 20.0 + 10.0 * share,
                    "loop_p20_us": 19.0 + 10.0 * share,
                    "loop_p80_us": 22.0 + 10.0 * share,
                }
            )
    rows.append({**rows[-1], "impl": "liger", "status": "wrong", "gbps": 9999.0})
    return rows


def test_bench_view_draws_ok_rows_and_lists_wrong_ones(qtbot) -> None:
    view = BenchView()
    qtbot.addWidget(view)
    view.set_records(_rows())
    x, y = view.plotted("ours")
    np.testing.assert_array_equal(x, [0.0, 1.0])
    np.testing.assert_allclose(y, [3600.0, 3780.0])
    assert "liger" not in view.curves  # a wrong result never enters the chart
    assert "WRONG OUTPUT" in view.summary.text()
    assert "90–90% of copy" in view.summary.text()


@pytest.mark.parametrize(("metric", "field"), [("device µs", "median_us"), ("loop µs", "loop_us")])
def test_bench_view_draws_both_times_per_call_on_a_log_axis(qtbot, metric, field) -> None:
    view = BenchView()
    qtbot.addWidget(view)
    rows = _rows()
    rows[4]["loop_speedup_vs_best_alt"] = 26.0 / 29.0  # ours at width 1024: eager's over ours
    view.set_records(rows)
    view.metric_combo.setCurrentText(metric)
    expected = [r[field] for r in rows if r["impl"] == "ours"]
    np.testing.assert_allclose(view.plotted("ours")[1], expected)
    assert view.plot.getPlotItem().ctrl.logYCheck.isChecked()
    bars = view.bars["ours"].opts
    np.testing.assert_allclose(bars["y"], np.log10(expected))  # bars in the log axis' units
    assert "per call" in view.plot.getPlotItem().getAxis("left").labelText
    assert "eager loop: 0.90–0.90× the fastest alternative" in view.summary.text()
    view.metric_combo.setCurrentText("GB/s")
    assert not view.plot.getPlotItem().ctrl.logYCheck.isChecked()
    np.testing.assert_allclose(view.plotted("ours")[1], [3600.0, 3780.0])


@pytest.mark.usefixtures("jobs_on_thread")
def test_benchmark_in_the_window_and_in_the_session(
    qtbot, window, tmp_path, monkeypatch: pytest.MonkeyPatch, settings
) -> None:
    if not window.bench_view.available:
        assert not window.bench_button.isEnabled()
        assert "no timing claims" in window.bench_button.text()
        assert window.run_benchmark() is False
        window.bench_view.available = True  # pretend a GPU, drive a fake harness

    def fake_job(shapes, dtypes, budget_s=None):
        def job(cancel):
            yield (0, 1, "fake")
            yield {"shapes": shapes, "dtypes": dtypes, "rows": _rows()}

        return job

    monkeypatch.setattr(tasks, "bench_job", fake_job)
    with qtbot.waitSignal(window.runner.result, timeout=10000):
        assert window.run_benchmark()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=5000)
    assert window.bench_view.plotted("ours")[1].size == 2
    path = tmp_path / "bench.h5"
    monkeypatch.setattr(dialogs, "choose_save_file", lambda *a: str(path))
    assert window.files.save_session_as()
    from inspector.records.sessions.session import load_session

    session = load_session(path)
    assert len(session.bench_meta["rows"]) == len(_rows())
    assert any(np.array_equal(v, [10.0, 11.0, 12.0]) for v in session.bench_samples.values())
    from inspector.qt.window import InspectorWindow

    other = InspectorWindow(demo=True, settings=settings)
    qtbot.addWidget(other)
    assert other.files.open_session(str(path))
    np.testing.assert_allclose(other.bench_view.plotted("ours")[1], [3600.0, 3780.0])
    other.state.dirty = False
    other.shutdown()
    other.close()


RECORD = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "results.json"


def _record_rows(shapes: str, dtype: str, impl: str) -> list[dict]:
    data = json.loads(RECORD.read_text(encoding="utf-8"))
    return [
        r
        for r in data["results"]
        if r["set"] == shapes and r["dtype"] == dtype and r["impl"] == impl
    ]


def test_window_shows_the_committed_record_and_keeps_it_in_the_session(
    qtbot, window, tmp_path, monkeypatch: pytest.MonkeyPatch, settings
) -> None:
    from PySide6.QtCore import QRect

    from inspector.qt.menus import fit_to_screen

    fit_to_screen(window, QRect(0, 0, 1920, 1080))  # the offscreen screen is 800 x 800
    monkeypatch.setattr(dialogs, "choose_open_file", lambda *a: str(RECORD))
    window.files.open_bench_record_dialog()
    view = window.bench_view
    assert window.tabs.currentWidget() is view
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    card, started = record["environment"]["device"]["name"], record["started_utc"]
    assert view.source.startswith(f"{card}, {started[:16]}")
    assert view.summary.text().startswith(f"Recorded on {card}")
    assert len(view.records) == len(record["results"]) == 1029
    view.shape_combo.setCurrentText("narrow")
    view.dtype_combo.setCurrentText("float32")
    ours = _record_rows("narrow", "float32", "ours")  # 65536 x 128, 256, 512
    x, y = view.plotted("ours")
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0])
    np.testing.assert_allclose(y, [r["gbps"] for r in ours])
    assert "21 of 1029 measurements shown" in view.summary.text()  # 3 shapes x 7 implementations
    # The end shapes keep half a category of room, so their tick labels are drawn too.
    (x_low, x_high), _ = view.plot.getPlotItem().viewRange()
    assert (x_low, x_high) == pytest.approx((-0.5, 2.5))
    ticks = view.plot.getPlotItem().getAxis("bottom")._tickLevels[0]
    assert [label for _, label in ticks] == ["65536×128", "65536×256", "65536×512"]
    # All 49 shapes of one dtype: about 8 names as major ticks (every seventh, from the
    # first), the others minor ones, and more room at the ends.
    view.shape_combo.setCurrentText("all")
    major, minor = view.plot.getPlotItem().getAxis("bottom")._tickLevels
    assert [position for position, _ in major] == [0, 7, 14, 21, 28, 35, 42]
    assert len(major) + len(minor) == 49
    assert view.plot.getPlotItem().viewRange()[0] == pytest.approx([-2.45, 50.45])
    view.shape_combo.setCurrentText("narrow")
    view.metric_combo.setCurrentText("% of copy")
    np.testing.assert_allclose(view.plotted("ours")[1], [r["pct_of_copy"] for r in ours])
    np.testing.assert_allclose(view.plotted("copy")[1], [100.0, 100.0, 100.0])
    # The legend is a line above the plot, naming every drawn implementation; the y axis
    # holds every point (nothing is drawn behind a legend).
    item = view.plot.getPlotItem()
    drawn = np.concatenate(
        [view.plotted(impl)[1] for impl in view.curves if view.plotted(impl)[1].size]
    )
    low, high = item.viewRange()[1]
    assert low < drawn.min()
    assert high > drawn.max()
    legend = view.legend.text()
    shown = [impl for impl in view.curves if view.plotted(impl)[1].size]
    assert len(shown) == 7
    for impl in shown:
        assert f"</span> {impl}" in legend
    assert item.legend is None
    # The table beside the plot: every shown row, with both figures.
    assert view.table.rowCount() == 21
    header = [view.table.horizontalHeaderItem(c).text() for c in range(view.table.columnCount())]
    assert header[3] == "device µs"
    assert header[5] == "loop µs"
    # Saved and reopened: the rows and where they were measured.
    path = tmp_path / "record.h5"
    monkeypatch.setattr(dialogs, "choose_save_file", lambda *a: str(path))
    assert window.state.dirty
    assert window.files.save_session_as()
    from inspector.qt.window import InspectorWindow

    other = InspectorWindow(demo=True, settings=settings)
    qtbot.addWidget(other)
    assert other.files.open_session(str(path))
    assert other.bench_view.source == view.source
    other.bench_view.shape_combo.setCurrentText("narrow")
    other.bench_view.dtype_combo.setCurrentText("float32")
    np.testing.assert_allclose(other.bench_view.plotted("ours")[1], [r["gbps"] for r in ours])
    other.state.dirty = False
    other.shutdown()
    other.close()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json at all", "Expecting value"),
        ('{"schema_version": "rmsnorm-bench/0", "results": []}', "not a rmsnorm-bench/1 report"),
        (None, "results[7].width must be a int; got None"),
        ("samples", "results[7].samples_us must be a list of at most 100000 finite numbers"),
        ("huge", "results[7].rows must be <= 2147483647; got 1000"),
    ],
)
def test_a_bad_benchmark_record_is_refused_and_the_view_keeps_its_rows(
    qtbot, window, tmp_path, monkeypatch: pytest.MonkeyPatch, content, message
) -> None:
    assert window.files.open_bench_record(str(RECORD))
    window.state.dirty = False
    before = list(window.bench_view.records)
    bad = tmp_path / "bad.json"
    if content in (None, "samples", "huge"):  # the real record with one field broken
        data = json.loads(RECORD.read_text(encoding="utf-8"))
        if content is None:
            data["results"][7]["width"] = None
        elif content == "huge":  # once accepted, the table's sort key overflowed Qt's int
            data["results"][7]["rows"] = 10**300
        else:  # accepted once, this made every later Save of the session fail
            data["results"][7]["samples_us"] = "fast"
        content = json.dumps(data)
    bad.write_text(content, encoding="utf-8")
    errors: list[str] = []
    monkeypatch.setattr(dialogs, "show_error", lambda parent, title, text: errors.append(text))
    assert window.files.open_bench_record(str(bad)) is False
    assert len(errors) == 1
    assert message in errors[0]
    assert window.bench_view.records == before
    assert window.state.bench["source"].endswith("(results.json)")
    assert not window.state.dirty
    assert message in window.status_line.text()


def test_a_record_with_odd_metadata_and_an_unlisted_shape_set_still_shows(
    qtbot, window, tmp_path
) -> None:
    rows = [{**r, "set": "sweep"} for r in _rows() if r["status"] == "ok"]
    path = tmp_path / "odd.json"
    report = {"schema_version": "rmsnorm-bench/1", "environment": ["x"], "started_utc": 5}
    path.write_text(json.dumps({**report, "results": rows}), encoding="utf-8")
    assert window.files.open_bench_record(str(path))
    view = window.bench_view
    assert view.source == "an unnamed device, an unknown time (odd.json)"
    assert view.shape_combo.currentText() == "all"  # "sweep" is not a set the picker lists
    np.testing.assert_allclose(view.plotted("ours")[1], [3600.0, 3780.0])
    window.state.dirty = False


def test_auto_plots_launch_bound_shapes_in_us_and_the_rest_in_gbps(qtbot) -> None:
    view = BenchView()
    qtbot.addWidget(view)
    rows = _rows()
    launch = [{**r, "set": "launch_bound", "rows": 1} for r in rows]
    view.set_records(rows + launch)
    assert view.metric_combo.currentText() == "auto"
    view.shape_combo.setCurrentText("llm")
    assert view.shown_metric() == "GB/s"
    np.testing.assert_allclose(view.plotted("ours")[1], [3600.0, 3780.0])
    view.shape_combo.setCurrentText("launch_bound")
    assert view.shown_metric() == "device µs"
    assert view.plot.getPlotItem().ctrl.logYCheck.isChecked()
    np.testing.assert_allclose(
        view.plotted("ours")[1], [r["median_us"] for r in launch if r["impl"] == "ours"]
    )
    view.shape_combo.setCurrentText("all")  # launch-bound and bandwidth-bound mixed: GB/s
    assert view.shown_metric() == "GB/s"


def test_hover_and_table_give_both_figures_of_a_point(qtbot) -> None:
    view = BenchView()
    qtbot.addWidget(view)
    rows = _rows()
    view.set_records(rows)
    ours = next(r for r in rows if r["impl"] == "ours")
    text = view.point_text("ours", 0)
    assert text.splitlines()[0] == "ours · 4096×1024 bfloat16"
    assert f"device {ours['median_us']:.3g} µs per call" in text
    assert f"eager loop {ours['loop_us']:.3g} µs per call, host included" in text
    assert "90.0% of copy" in text
    assert view.point_text("liger", 0) == ""  # a wrong result is not a point
    assert view.table.rowCount() == len(rows)  # the wrong row is listed in the table
    statuses = {view.table.item(i, 2).text() for i in range(view.table.rowCount())}
    assert statuses == {"ok", "wrong"}


def test_a_shape_without_a_number_breaks_the_line(qtbot) -> None:
    view = BenchView()
    qtbot.addWidget(view)
    rows = _rows()
    extra = {**rows[0], "width": 8192, "impl": "copy"}  # a third shape only the copy has
    view.set_records([*rows[:3], extra, *rows[3:]])
    x, y = view.curves["ours"].getOriginalDataset()
    assert len(x) == 3
    assert np.isnan(y).sum() == 1  # ours at 4096x8192: not joined across
    np.testing.assert_allclose(view.plotted("ours")[1], [3600.0, 3780.0])


def test_the_table_sorts_shapes_by_size_not_as_text(qtbot) -> None:
    """As text "512×4096" would sort before "64×4096" and "8×4096" last."""
    from PySide6.QtCore import Qt

    view = BenchView()
    qtbot.addWidget(view)
    base = {"dtype": "bfloat16", "impl": "ours", "status": "ok", "median_us": 2.0}
    shapes = [(512, 4096), (8, 4096), (64, 4096), (8, 65536), (1, 4096)]
    view.set_records([{**base, "rows": r, "width": w} for r, w in shapes])
    view.table.sortItems(0, Qt.SortOrder.AscendingOrder)
    column = [view.table.item(i, 0).text() for i in range(view.table.rowCount())]
    assert column == ["1×4096", "8×4096", "64×4096", "8×65536", "512×4096"]
    view.table.sortItems(0, Qt.SortOrder.DescendingOrder)
    assert view.table.item(0, 0).text() == "512×4096"


def test_the_table_opens_smallest_shape_first_and_keeps_the_users_order(qtbot) -> None:
    """Filled, the table is in the header's order: ascending shapes until the user clicks
    another column or order, which a refill (another record, dtype or set) keeps."""
    from PySide6.QtCore import Qt

    view = BenchView()
    qtbot.addWidget(view)
    base = {"dtype": "bfloat16", "impl": "ours", "status": "ok", "median_us": 2.0}
    shapes = [(512, 4096), (8, 4096), (64, 4096), (1, 4096)]
    records = [{**base, "rows": r, "width": w} for r, w in shapes]
    view.set_records(records)
    column = [view.table.item(i, 0).text() for i in range(view.table.rowCount())]
    assert column == ["1×4096", "8×4096", "64×4096", "512×4096"]
    view.table.horizontalHeader().setSortIndicator(0, Qt.SortOrder.DescendingOrder)
    view.set_records(list(reversed(records)))
    column = [view.table.item(i, 0).text() for i in range(view.table.rowCount())]
    assert column == ["512×4096", "64×4096", "8×4096", "1×4096"]


def test_dram_figures_of_bench_ncu_show_in_the_table_and_the_hover(qtbot) -> None:
    from inspector.qt.widgets.bench_view import DRAM_COLUMN

    view = BenchView()
    qtbot.addWidget(view)
    view.set_records(_rows())
    assert view.table.isColumnHidden(DRAM_COLUMN)  # a record without --ncu: no empty column
    assert "DRAM" not in view.point_text("ours", 0)
    rows = _rows()
    first, second = (r for r in rows if r["impl"] == "ours")
    first["dram"] = {"bytes_read": 8_392_704, "bytes_written": 4_194_304, "pct_of_peak": 71.25,
                     "duration_ns": 5000.0, "kernels": ["_rms_norm_tile"], "launches": 1,
                     "ncu_version": "2024.3.2.0", "clock_control": "none"}  # fmt: skip
    second["dram"] = {"absent": "ncu did not finish within 300 s (killed with its child)"}
    view.set_records(rows)
    assert not view.table.isColumnHidden(DRAM_COLUMN)
    assert view.table.horizontalHeaderItem(DRAM_COLUMN).text() == "DRAM % peak"
    cells = {
        (view.table.item(i, 0).text(), view.table.item(i, 1).text()): view.table.item(
            i, DRAM_COLUMN
        )
        for i in range(view.table.rowCount())
    }
    assert cells[("4096×1024", "ours")].text() == "71.2"
    assert cells[("4096×1024", "ours")].toolTip() == (
        "DRAM (Nsight Compute): 71.2% of peak, 8.39 MB read, 4.19 MB written"
    )
    assert cells[("4096×4096", "ours")].text() == ""
    assert cells[("4096×4096", "ours")].toolTip() == (
        "DRAM (Nsight Compute): not measured: ncu did not finish within 300 s (killed with its "
        "child)"
    )
    assert cells[("4096×1024", "copy")].text() == ""
    assert view.point_text("ours", 0).splitlines()[-1] == (
        "DRAM (Nsight Compute): 71.2% of peak, 8.39 MB read, 4.19 MB written"
    )
    assert (
        view.point_text("ours", 1)
        .splitlines()[-1]
        .startswith("DRAM (Nsight Compute): not measured: ncu did not finish")
    )
    assert "ours DRAM (Nsight Compute): 71–71% of peak" in view.summary.text()


def test_a_session_row_with_a_malformed_dram_draws_without_it(qtbot) -> None:
    """Rows reopened from a session are not re-checked: odd values show as nothing."""
    view = BenchView()
    qtbot.addWidget(view)
    rows = _rows()
    ours = [r for r in rows if r["impl"] == "ours"]
    ours[0]["dram"] = "lots"
    ours[1]["dram"] = {"pct_of_peak": "high", "bytes_read": None}
    view.set_records(rows)
    assert "DRAM" not in view.point_text("ours", 0)
    assert view.point_text("ours", 1).splitlines()[-1] == (
        "DRAM (Nsight Compute): figures unreadable"
    )
