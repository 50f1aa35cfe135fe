"""The target check over a record, with fake rows of one shape (CPU only)."""

from __future__ import annotations

from kernels import bench
from lab import targets

SHAPE = bench.Shape(4096, 70)


def _row(impl: str, median_us: float, status: str = "ok") -> dict:
    nbytes = bench.traffic_bytes(SHAPE, bench.DTYPES["bfloat16"], impl=impl)
    return {
        "set": "tails",
        "rows": SHAPE.rows,
        "width": SHAPE.width,
        "dtype": "bfloat16",
        "impl": impl,
        "status": status,
        "bytes": nbytes,
        "median_us": median_us,
        "gbps": bench.gbps(nbytes, median_us),
    }


# ours 1.1 us, the fastest correct alternative torch_compile 1.5 us; liger (0.5 us) is wrong.
MEDIANS_US = {"copy": 1.0, "ours": 1.1, "torch_eager": 2.0, "torch_compile": 1.5, "liger": 0.5}


def _results() -> list[dict]:
    rows = [
        _row(impl, median, "wrong" if impl == "liger" else "ok")
        for impl, median in MEDIANS_US.items()
    ]
    return bench.finalize(rows)


def test_target_report_flags_misses_and_wins():
    results = _results()
    for row in results:
        row["round_spread_pct"] = 0.5
    text, verdicts = targets.report(results, "ours")
    # ours (1.1 us) is faster than torch_compile (1.5 us), the fastest correct alternative.
    assert verdicts["ge1x_alternatives"]
    assert "torch_compile" in text
    slow = [dict(r) for r in results]
    for row in slow:
        if row["impl"] == "ours":
            row["median_us"] = 1.6
    _, verdicts = targets.report(slow, "ours")
    assert not verdicts["ge1x_alternatives"]


def test_target_spread_comes_from_the_second_run_when_given():
    record = _results()
    for row in record:
        row["round_spread_pct"] = 0.1
        if row["impl"] == "ours":
            row["median_us"] = 1.5075  # 0.5% slower than torch_compile's 1.5
    _, alone = targets.report(record, "ours")
    assert not alone["ge1x_alternatives"]  # 0.5% > the 0.1% round spread
    repro = [dict(r) for r in record]
    for row in repro:
        if row["impl"] == "ours":
            row["median_us"] = 1.5075 * 1.01  # ours moved 1% between the two runs
    text, both = targets.report(record, "ours", repro)
    assert both["ge1x_alternatives"]
    assert "| within spread |" in text
    assert "0 ahead, 1 slower within the spread, 0 slower beyond it." in text
    # A second run that moved by less than the gap does not excuse it.
    steady = [dict(r) for r in record]
    _, still = targets.report(record, "ours", steady)
    assert not still["ge1x_alternatives"]


def test_loop_and_099_targets_read_their_own_figures():
    results = _results()
    loop_us = {"copy": 8.0, "ours": 10.5, "torch_eager": 10.0, "torch_compile": 40.0}
    for row in results:
        row["round_spread_pct"] = 0.0
        row["loop_round_spread_pct"] = 1.0
        if row["impl"] in loop_us:
            row["loop_us"] = loop_us[row["impl"]]
    text, verdicts = targets.report(results, "ours")
    # Device: 1.5 / 1.1 = 1.36x; loop: 10 / 10.5 = 0.952x, 5% behind eager, beyond 1% spread.
    assert verdicts["ge1x_alternatives"]
    assert verdicts["ge099_device"]
    assert not verdicts["ge1x_loop"]
    assert "eager-loop time, host included: >= 1x the fastest alternative" in text
    assert (
        "| tails | 4096x70 | bfloat16 | 10.50 | torch_eager | 10.00 | 0.952x | 1.0% | NO |" in text
    )
    for row in results:
        if row["impl"] == "ours":
            row["loop_us"] = 9.9
    assert targets.report(results, "ours")[1]["ge1x_loop"]


def test_099_device_target_at_its_bound_and_one_step_past():
    results = _results()
    for row in results:
        row["round_spread_pct"] = 0.0
        if row["impl"] == "ours":
            row["median_us"] = 1.5 / 0.99  # exactly 0.99x torch_compile's 1.5 us
    assert targets.report(results, "ours")[1]["ge099_device"]
    for row in results:
        if row["impl"] == "ours":
            row["median_us"] = 1.5 / 0.989
    assert not targets.report(results, "ours")[1]["ge099_device"]


def test_099_loop_target_at_its_bound_and_one_step_past():
    results = _results()
    for row in results:
        row["round_spread_pct"] = 0.0
        row["loop_round_spread_pct"] = 0.0
        row["loop_us"] = {"ours": 10.0 / 0.99, "torch_eager": 10.0}.get(row["impl"], 40.0)
    text, verdicts = targets.report(results, "ours")
    assert verdicts["ge099_loop"]  # exactly 0.99x torch eager's 10 us
    assert not verdicts["ge1x_loop"]
    assert "eager-loop time, host included: >= 0.99x the fastest alternative" in text
    for row in results:
        if row["impl"] == "ours":
            row["loop_us"] = 10.0 / 0.989
    assert not targets.report(results, "ours")[1]["ge099_loop"]
    for row in results:
        row["loop_round_spread_pct"] = 0.2  # 0.989x is 0.1% short: within this spread
    assert targets.report(results, "ours")[1]["ge099_loop"]


def test_odd_width_target_takes_odd_widths_from_4096_rows():
    results = _results()  # 4096x70: even, not counted
    text, verdicts = targets.report(results, "ours")
    assert verdicts["ge85_odd_widths"]  # nothing qualifies: met vacuously, and the table is empty
    assert "4096x70" not in text.split(">= 85% for odd widths")[1].split("Result")[0]


def test_a_skipped_shape_of_a_cut_run_fails_its_percent_target_and_the_report_goes_on():
    # A run cut by its --budget-s keeps each later shape as a skipped row with no figures (not
    # even its bytes): the odd-width table lists it as not met, with no traffic.
    odd = bench.Shape(4096, 71)
    rows = [
        {"set": "tails", "rows": odd.rows, "width": odd.width, "dtype": "bfloat16",
         "impl": impl, "status": "skipped", "note": "time budget of 1 s spent (2 s)"}
        for impl in MEDIANS_US
    ]  # fmt: skip
    text, verdicts = targets.report(_results() + rows, "ours")
    assert not verdicts["ge85_odd_widths"]
    assert "| 4096x71 | bfloat16 | - | - | NO |" in text
