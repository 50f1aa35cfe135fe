"""Report writing of the harness with fake timing samples (CPU only)."""

from __future__ import annotations

import json
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels import bench
from kernels.bench import report as bench_report


def _fake_row(impl, median, status="ok", shape=(4096, 70), dtype="bfloat16", spread=0.1, loop=None):
    rows, width = shape
    samples = [median * (1 + spread * k / 10) for k in range(-5, 6)]
    stats = bench.summarize(samples)
    nbytes = bench.traffic_bytes(bench.Shape(rows, width), bench.DTYPES[dtype], impl=impl)
    row = {
        "set": "tails",
        "rows": rows,
        "width": width,
        "dtype": dtype,
        "impl": impl,
        "bytes": nbytes,
        "timing_mode": "cuda_graph",
        "buffers": 100,
        "working_set_bytes": 100 * nbytes,
        "launches_per_sample": 100,
        "status": status,
        "note": 'fake, with a comma, and "quotes"',
        "samples_us": samples,
        "gbps": bench.gbps(nbytes, stats.median_us),
        "parity": bench.Parity(status == "ok", 1e-3, 2e-3, 1e-4, 0.5, 0, 0, "ok").as_dict(),
        "peak_bytes_per_call": rows * width * 2,
        "output_bytes": rows * width * 2,
        "extra_bytes_beyond_output": 0,
    }
    row.update(vars(stats))
    loop_median = 10.0 * median if loop is None else loop
    loop_samples = [loop_median * (1 + spread * k / 10) for k in range(-3, 4)]
    loop_stats = bench.summarize(loop_samples)
    row.update({f"loop_{name}": value for name, value in vars(loop_stats).items()})
    row.update(
        loop_us=loop_stats.median_us,
        loop_samples_us=loop_samples,
        loop_round_medians_us=[loop_stats.median_us],
        loop_round_spread_pct=0.0,
        loop_calls_per_sample=200,
    )
    if impl == "torch_compile":
        row["compile_s"] = 1.2345678901234567
    return row


def _results():
    return bench.finalize(
        [
            _fake_row("copy", 1.0, loop=8.0),
            _fake_row("ours", 1.1, loop=9.0),
            _fake_row("torch_eager", 2.0, loop=10.0),
            _fake_row("torch_compile", 1.5, loop=30.0),
            _fake_row("liger", 0.5, status="wrong", loop=5.0),
        ]
    )


def test_summarize_statistics():
    stats = bench.summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (stats.n, stats.median_us, stats.min_us, stats.max_us) == (5, 3.0, 1.0, 5.0)
    assert stats.p20_us == pytest.approx(1.8)
    assert stats.p80_us == pytest.approx(4.2)
    with pytest.raises(ValueError, match="at least one"):
        bench.summarize([])
    with pytest.raises(ValueError, match="finite"):
        bench.summarize([1.0, float("nan")])


def test_timing_rounds_alternate_the_order_of_implementations():
    impls = ["copy", "ours", "torch_eager", "torch_compile", "liger"]
    assert bench.round_order(impls, 0) == impls
    assert bench.round_order(impls, 1) == impls[::-1]
    assert bench.round_order(impls, 2) == impls
    # Over a pair of rounds every implementation has the same mean position, and ours does
    # not always run right after the copy.
    positions = {
        impl: sum(bench.round_order(impls, k).index(impl) for k in (0, 1)) for impl in impls
    }
    assert set(positions.values()) == {len(impls) - 1}
    before_ours = [
        bench.round_order(impls, k)[bench.round_order(impls, k).index("ours") - 1] for k in (0, 1)
    ]
    assert before_ours == ["copy", "torch_eager"]


def test_finalize_percent_of_copy_and_best_alternative():
    results = {r["impl"]: r for r in _results()}
    assert "pct_of_copy" not in results["copy"] or results["copy"]["pct_of_copy"] == 100.0
    expected = 100.0 * results["ours"]["gbps"] / results["copy"]["gbps"]
    assert results["ours"]["pct_of_copy"] == pytest.approx(expected)
    # A wrong result gets no percentage and is never the best alternative.
    assert "pct_of_copy" not in results["liger"]
    assert results["ours"]["best_alternative"] == "torch_compile"
    assert results["ours"]["speedup_vs_best_alt"] == pytest.approx(1.5 / 1.1)
    # The eager loop has its own fastest alternative (eager here; the wrong liger never).
    assert results["ours"]["best_loop_alternative"] == "torch_eager"
    assert results["ours"]["loop_speedup_vs_best_alt"] == pytest.approx(10.0 / 9.0)
    assert "loop_speedup_vs_best_alt" not in results["torch_eager"]


def test_finalize_prices_the_batch_invariant_mode_against_ours_and_never_as_a_peer():
    rows = [
        _fake_row("copy", 1.0),
        _fake_row("ours", 1.1, loop=8.0),
        _fake_row("ours_invariant", 1.21, loop=10.0),
        _fake_row("torch_eager", 2.0),
    ]
    results = {r["impl"]: r for r in bench.finalize(rows)}
    assert results["ours_invariant"]["cost_vs_ours"] == pytest.approx(1.1)
    assert results["ours_invariant"]["loop_cost_vs_ours"] == pytest.approx(1.25)
    assert results["ours_invariant"]["speedup_vs_best_alt"] == pytest.approx(2.0 / 1.21)
    # the mode is ours, not a peer: ours' fastest alternative stays eager
    assert results["ours"]["best_alternative"] == "torch_eager"
    assert "cost_vs_ours" not in results["ours"]
    wrong = bench.finalize(
        [_fake_row("ours", 1.1, status="wrong"), _fake_row("ours_invariant", 1.2)]
    )
    assert "cost_vs_ours" not in {r["impl"]: r for r in wrong}["ours_invariant"]


def test_finalize_without_loop_figures_gives_no_loop_speedup():
    rows = [_fake_row("copy", 1.0), _fake_row("ours", 1.1), _fake_row("torch_eager", 2.0)]
    for row in rows:
        del row["loop_us"]
    results = {r["impl"]: r for r in bench.finalize(rows)}
    assert "loop_speedup_vs_best_alt" not in results["ours"]
    assert results["ours"]["speedup_vs_best_alt"] == pytest.approx(2.0 / 1.1)


def test_json_round_trip(tmp_path):
    results = _results()
    config = bench.BenchConfig(
        shapes=[("tails", bench.Shape(4096, 70))], dtypes=["bfloat16"], impls=["copy", "ours"]
    )
    report = bench.build_report(
        config,
        results,
        command="python main.py bench --shapes tails --out x",
        env=bench.environment(None),
        smi_before={"error": "none"},
        smi_after={"error": "none"},
        started="2026-01-01T00:00:00+00:00",
        wall_s=1.0,
        implementations={"ours": {"available": True}},
    )
    path = tmp_path / "results.json"
    bench.write_json(report, path)
    back = bench.read_json(path)
    assert back["schema_version"] == bench.SCHEMA_VERSION
    assert back["protocol"]["bytes_formula"] == bench.BYTES_FORMULA
    assert back["results"] == results  # samples, stats and floats exactly
    assert back["environment"]["torch"] == torch.__version__


def test_json_writes_nan_as_null(tmp_path):
    path = tmp_path / "results.json"
    row = {**_fake_row("ours", 1.1), "compile_s": math.nan}
    bench.write_json({"schema_version": bench.SCHEMA_VERSION, "results": [row]}, path)
    assert bench.read_json(path)["results"][0]["compile_s"] is None
    bad = tmp_path / "other.json"
    bad.write_text('{"schema_version": "nope", "results": []}')
    with pytest.raises(ValueError, match="not a"):
        bench.read_json(bad)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"width": None}, r"results\[1\]\.width must be a int; got None"),
        ({"rows": 0}, r"results\[1\]\.rows must be >= 1; got 0"),
        ({"rows": True}, r"results\[1\]\.rows must be a int; got True"),
        ({"impl": 3}, r"results\[1\]\.impl must be a str; got 3"),
        ({"gbps": -1.0}, r"results\[1\]\.gbps must be a finite number >= 0; got -1\.0"),
        ({"gbps": None}, r"results\[1\]\.gbps must be a finite number >= 0; got None"),
        ({"median_us": 0.0}, r"results\[1\]\.median_us must be > 0 in an ok row; got 0\.0"),
        ({"pct_of_copy": "99%"}, r"results\[1\]\.pct_of_copy must be a finite number"),
        (
            {"samples_us": "fast"},
            r"results\[1\]\.samples_us must be a list of at most 100000 finite numbers >= 0; "
            r"got 'fast'",
        ),
        (
            {"loop_samples_us": [1.0, "x"]},
            r"results\[1\]\.loop_samples_us\[1\] must be a finite number >= 0; got 'x'",
        ),
        ({"round_medians_us": [float("nan")]}, r"round_medians_us\[0\] must be a finite"),
        ({"samples_us": [1.0] * 100_001}, r"samples_us must be a list of at most 100000 .*100001"),
        ({"rows": 2**31}, r"results\[1\]\.rows must be <= 2147483647; got 2147483648"),
        ({"impl": "ours\ud800"}, r"results\[1\]\.impl must be printable text; got 'ours\\ud800'"),
        ({"set": "a\nb"}, r"results\[1\]\.set must be printable text; got 'a\\nb'"),
        ({"rows": 10**300}, r"results\[1\]\.rows must be <= 2147483647; got 1000"),
        (
            {"rows": 2, "width": 2**32 + 1},
            r"results\[1\]\.rows\*width must be <= 8589934592; got 2\*4294967297",
        ),
    ],
)
def test_read_json_names_the_row_and_field_it_refuses(tmp_path, change, message):
    rows = _results()
    rows[1] = {**rows[1], **change}
    path = tmp_path / "results.json"
    bench.write_json({"schema_version": bench.SCHEMA_VERSION, "results": rows}, path)
    with pytest.raises(ValueError, match=message):
        bench.read_json(path)


def test_shapes_at_their_bounds_are_read(tmp_path):
    rows = _results()
    rows[0] = {**rows[0], "rows": 2**31 - 1, "width": 4}
    rows[1] = {**rows[1], "rows": 2, "width": 2**32}
    path = tmp_path / "results.json"
    bench.write_json({"schema_version": bench.SCHEMA_VERSION, "results": rows}, path)
    assert [r["rows"] for r in bench.read_json(path)["results"][:2]] == [2**31 - 1, 2]


def test_results_at_their_count_bound_are_read_and_one_more_refused(tmp_path, monkeypatch):
    rows = _results()
    path = tmp_path / "results.json"
    bench.write_json({"schema_version": bench.SCHEMA_VERSION, "results": rows}, path)
    monkeypatch.setattr(bench_report, "MAX_RESULTS", len(rows))
    assert len(bench.read_json(path)["results"]) == len(rows)
    monkeypatch.setattr(bench_report, "MAX_RESULTS", len(rows) - 1)
    with pytest.raises(ValueError, match=rf"results must hold at most {len(rows) - 1} rows; got"):
        bench.read_json(path)


def test_sample_lists_at_their_bound_are_read(tmp_path):
    rows = _results()
    rows[1] = {**rows[1], "samples_us": [0.0, 2.5] + [1.0] * (bench.MAX_ROW_SAMPLES - 2)}
    path = tmp_path / "results.json"
    bench.write_json({"schema_version": bench.SCHEMA_VERSION, "results": rows}, path)
    assert len(bench.read_json(path)["results"][1]["samples_us"]) == bench.MAX_ROW_SAMPLES


def test_read_json_refuses_a_file_past_its_size_bound_and_non_utf8(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    skipped = {
        "set": "tails",
        "rows": 4096,
        "width": 70,
        "dtype": "float32",
        "impl": "ours",
        "status": "skipped",
        "note": "time budget spent",
    }
    report = {"schema_version": bench.SCHEMA_VERSION, "results": [*_results(), skipped]}
    bench.write_json(report, path)
    assert len(bench.read_json(path)["results"]) == 6  # a skipped row carries no numbers
    monkeypatch.setattr(bench_report, "MAX_REPORT_BYTES", path.stat().st_size - 1)
    with pytest.raises(ValueError, match="a benchmark report is at most"):
        bench.read_json(path)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe{}")
    monkeypatch.undo()
    with pytest.raises(ValueError, match="not UTF-8"):
        bench.read_json(binary)


def test_csv_round_trip(tmp_path):
    results = _results()
    path = tmp_path / "results.csv"
    bench.write_csv(results, path)
    back = bench.read_csv(path)
    assert len(back) == len(results)
    for written, read in zip(results, back, strict=True):
        for field in bench.CSV_FIELDS:
            if field.startswith("parity_"):
                expected = written["parity"][field.removeprefix("parity_")]
            else:
                expected = written.get(field)
            assert read[field] == expected, field


def test_markdown_table_lists_every_shape_and_flags_wrong_results():
    table = bench.markdown_table(_results())
    lines = table.strip().splitlines()
    assert lines[0].startswith("| set | shape | dtype | copy | ours |")
    assert len(lines) == 3
    assert "wrong" in lines[2]
    assert "%" in lines[2]
    assert "loop 9.0 us" in lines[2]  # ours: device figures, then the eager-loop time


def test_plot_is_written_or_skipped_with_a_note(tmp_path):
    path = tmp_path / "bench.png"
    note = bench.write_plot(_results(), path)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert note is not None
        assert "matplotlib" in note
        assert not path.exists()
    else:
        assert note is None
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None)
@given(
    field=st.sampled_from(
        [
            *bench_report._ROW_FIELDS,
            *bench_report._OK_ROW_NUMBERS,
            *bench_report._OPTIONAL_ROW_NUMBERS,
        ]
    ),
    value=_JSON_VALUES,
)
def test_read_json_refuses_any_damaged_row_with_a_value_error(tmp_path_factory, field, value):
    # Whatever one field of one row holds, read_json returns a report whose rows the window can
    # draw, or raises ValueError (never TypeError, KeyError...).
    rows = _results()
    rows[2] = {**rows[2], field: value}
    path = tmp_path_factory.mktemp("fuzz") / "results.json"
    path.write_text(
        json.dumps({"schema_version": bench.SCHEMA_VERSION, "results": rows}), encoding="utf-8"
    )
    try:
        back = bench.read_json(path)
    except ValueError as err:
        assert "results[2]" in str(err)
        return
    row = back["results"][2]
    assert isinstance(row["rows"], int)
    assert row["rows"] >= 1
    if row["status"] == "ok":
        assert math.isfinite(row["gbps"])
        assert row["gbps"] > 0
