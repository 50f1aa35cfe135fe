"""A benchmark record that its budget cut short, completed by a second run on the same machine.

    python -m lab.join_records RECORD.json COMPLETION.json --out JOINED.json

``main.py bench`` skips the shapes its ``--budget-s`` leaves no time for (status ``skipped``).
A second run of those shapes, on the same lease with the same environment, implementations
(kernel hashes included), protocol and dtypes, measures them as the record would have: every
ratio of a case (a shape and dtype) comes from timings of one run, the copy included, so a case
taken whole from the second run is as sound as one of the first. The joined record is the
first run's with each skipped case's rows replaced by the completion's rows of that case, in
the record's order, and ``completed_by`` naming the second run (its command, start, wall time,
nvidia-smi before and after) and the cases taken from it. Nothing is averaged or mixed within a
case. Refused, with exit status 2 and the reason: records that differ in any of those fields,
a completion that skipped one of the cases too or lacks it, a record with nothing skipped or
one completed already. Writes compact JSON (the docs' form) atomically and reads it back with
``kernels.bench.read_json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from kernels.bench import read_json
from kernels.bench.report import json_safe

# What must be equal for the completion's timings to stand beside the record's.
SAME_FIELDS = ("schema_version", "environment", "implementations", "protocol", "dtypes", "impls")


def _case(row: dict[str, Any]) -> tuple[str, int, int, str]:
    return (row["set"], row["rows"], row["width"], row["dtype"])


def join(record: dict[str, Any], completion: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its skipped cases' rows taken from ``completion`` (see the module doc).

    Raises:
        ValueError: a field of ``SAME_FIELDS`` differs (named), nothing is skipped, a skipped
            case is missing from ``completion`` or skipped there too (named), or ``record``
            was completed already.
    """
    if "completed_by" in record:
        raise ValueError("the record is already completed (completed_by): join its runs anew")
    for field in SAME_FIELDS:
        if record.get(field) != completion.get(field):
            raise ValueError(f"{field} differs between the record and the completion")
    skipped = list(dict.fromkeys(_case(r) for r in record["results"] if r["status"] == "skipped"))
    if not skipped:
        raise ValueError("the record skipped no case: there is nothing to complete")
    taken: dict[tuple, list[dict[str, Any]]] = {}
    for row in completion["results"]:
        taken.setdefault(_case(row), []).append(row)
    for case in skipped:
        rows = taken.get(case)
        label = f"{case[0]} {case[1]}x{case[2]} {case[3]}"
        if not rows:
            raise ValueError(f"the completion has no result of the skipped case {label}")
        if any(r["status"] == "skipped" for r in rows):
            raise ValueError(f"the completion skipped the case {label} too")
    own: dict[tuple, list[dict[str, Any]]] = {}
    for row in record["results"]:
        own.setdefault(_case(row), []).append(row)
    results = [
        row for case, rows in own.items() for row in (taken[case] if case in skipped else rows)
    ]
    joined = dict(record)
    joined["results"] = results
    joined["completed_by"] = {
        **{k: completion.get(k) for k in ("command", "started_utc", "wall_s")},
        **{k: completion.get(k) for k in ("nvidia_smi_before", "nvidia_smi_after")},
        "cases": [list(case) for case in skipped],
    }
    return joined


def write_compact(report: dict[str, Any], path: Path) -> None:
    """``report`` as JSON without indentation, written whole or not at all."""
    text = json.dumps(json_safe(report), separators=(",", ":"), allow_nan=False)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("record", type=Path)
    parser.add_argument("completion", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        joined = join(read_json(args.record), read_json(args.completion))
    except (OSError, ValueError) as exc:
        print(f"join_records: {exc}", file=sys.stderr)
        return 2
    write_compact(joined, args.out)
    read_json(args.out)
    cases = joined["completed_by"]["cases"]
    print(f"wrote {args.out}: {len(joined['results'])} results; cases completed: {len(cases)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
