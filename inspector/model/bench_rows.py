"""The benchmark rows the window shows, whichever way they came: a run's, a ``results.json``
record's, or a session file's (which keeps the rows and their samples apart)."""

from __future__ import annotations

from typing import Any

import numpy as np


def bench_for_session(bench: dict[str, Any]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A session's ``bench_meta`` (rows without samples) and ``bench_samples`` (raw arrays)."""
    rows = bench["rows"]
    meta: dict[str, Any] = {
        "shapes": bench["shapes"],
        "dtypes": bench["dtypes"],
        "rows": [{k: v for k, v in r.items() if k != "samples_us"} for r in rows],
    }
    if bench.get("source"):
        meta["source"] = bench["source"]
    samples = {
        f"{r['impl']}/{r['rows']}x{r['width']}/{r['dtype']}": np.asarray(
            r["samples_us"], dtype=np.float64
        )
        for r in rows
        if r.get("samples_us")
    }
    return meta, samples


def bench_from_session(meta: dict[str, Any] | None) -> dict[str, Any] | None:
    """The benchmark rows a session file holds (None: it holds none)."""
    meta = meta or {}
    rows = meta.get("rows")
    if not rows:
        return None
    return {
        "shapes": meta.get("shapes", ""),
        "dtypes": meta.get("dtypes", []),
        "rows": list(rows),
        "source": meta.get("source"),
    }


def bench_from_record(report: dict[str, Any], file_name: str) -> dict[str, Any]:
    """The rows of a ``results.json`` (already checked by ``kernels.bench.read_json``), with
    the device, start time and file name they were recorded with as their source."""
    environment = report.get("environment")
    device = environment.get("device") if isinstance(environment, dict) else None
    name = device.get("name") if isinstance(device, dict) else None
    started = report.get("started_utc")
    source = (
        f"{name if isinstance(name, str) else 'an unnamed device'}, "
        f"{started if isinstance(started, str) else 'an unknown time'} ({file_name})"
    )
    rows = report["results"]
    return {
        "shapes": "record",
        "dtypes": sorted({r["dtype"] for r in rows}),
        "rows": rows,
        "source": source,
    }
