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
