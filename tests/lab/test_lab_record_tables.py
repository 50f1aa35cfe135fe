"""docs/benchmarks/README.md's tables are what lab.record_tables makes of the committed record."""

from __future__ import annotations

from pathlib import Path

from kernels import bench
from lab import record_tables

ROOT = Path(__file__).resolve().parents[2]


def test_committed_record_tables_regenerate_from_its_json():
    # The headline and reproduction tables of the README must be exactly what the JSON gives.
    record = bench.read_json(ROOT / "docs" / "benchmarks" / "results.json")["results"]
    repro = bench.read_json(ROOT / "docs" / "benchmarks" / "repro_1945" / "results.json")
    readme = (ROOT / "docs" / "benchmarks" / "README.md").read_text(encoding="utf-8")
    assert record_tables.headline(record) in readme
    assert record_tables.reproduction(record, repro["results"]) in readme
    assert all(r["status"] == "ok" for r in record)  # 330 results, parity passed
    assert len(record) == 330
