"""Benchmark view and job without a GPU: fake harness rows, read the plot back."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from inspector import worker as jobs
from inspector.widgets import dialogs
from inspector.widgets.bench_view import BenchView


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


def test_bench_job_drives_the_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernels import bench

    def fake_iter(config):
        for i, row in enumerate(_rows()):
            yield i + 1, len(_rows()), row

    monkeypatch.setattr(bench, "iter_benchmark", fake_iter)
    items = list(jobs.bench_job("llm", ["bfloat16"])(threading.Event()))
    result = items[-1]
    assert result["dtypes"] == ["bfloat16"]
    assert len(result["rows"]) == len(_rows())
    assert all(isinstance(i, tuple) for i in items[:-1])


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

    monkeypatch.setattr(jobs, "bench_job", fake_job)
    with qtbot.waitSignal(window.runner.result, timeout=10000):
        assert window.run_benchmark()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=5000)
    assert window.bench_view.plotted("ours")[1].size == 2
    path = tmp_path / "bench.h5"
    monkeypatch.setattr(dialogs, "choose_save_file", lambda *a: str(path))
    assert window.save_session_as()
    from inspector.session import load_session

    session = load_session(path)
    assert len(session.bench_meta["rows"]) == len(_rows())
    assert any(np.array_equal(v, [10.0, 11.0, 12.0]) for v in session.bench_samples.values())
    from inspector.window import InspectorWindow

    other = InspectorWindow(demo=True, settings=settings)
    qtbot.addWidget(other)
    assert other.open_session(str(path))
    np.testing.assert_allclose(other.bench_view.plotted("ours")[1], [3600.0, 3780.0])
    other.dirty = False
    other.shutdown()
    other.close()
