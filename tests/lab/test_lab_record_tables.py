"""docs/benchmarks/README.md's tables are what lab.record_tables makes of the committed record."""

from __future__ import annotations

from pathlib import Path

from kernels import bench
from lab import record_tables

ROOT = Path(__file__).resolve().parents[2]


def test_committed_record_tables_regenerate_from_its_json():
    # The headline table of the README must be exactly what the JSON gives.
    record = bench.read_json(ROOT / "docs" / "benchmarks" / "results.json")["results"]
    readme = (ROOT / "docs" / "benchmarks" / "README.md").read_text(encoding="utf-8")
    assert record_tables.headline(record) in readme
    assert len(record) == 1029  # 49 shapes x 3 dtypes x 7 implementations
    ours = [r for r in record if r["impl"] == "ours"]
    assert len(ours) == 147
    assert all(r["status"] == "ok" for r in ours)  # parity passed on every case
    failed = {r["impl"] for r in record if r["status"] != "ok"}
    assert failed <= {"quack"}  # its compile errors on widths it cannot vectorize


def test_headline_names_the_fastest_peer_in_device_time_and_in_the_loop():
    def row(impl, us, loop_us):
        return {
            "set": "s",
            "rows": 1,
            "width": 4096,
            "dtype": "bfloat16",
            "impl": impl,
            "status": "ok",
            "median_us": us,
            "loop_us": loop_us,
            "gbps": 1.0,
            "pct_of_copy": 100.0,
            "note": "",
        }

    results = [
        row("copy", 1.0, None),
        row("ours", 2.0, 10.0),
        row("liger", 2.2, 9.0),
        row("quack", 3.0, 20.0),
        row("torch_eager", 4.0, 11.0),
    ]
    line = record_tables.headline(results).splitlines()[-1]
    assert "| 1.100x (liger) |" in line
    assert "| 0.900x (liger; 10.0 / 9.0 us) |" in line
