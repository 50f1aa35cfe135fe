"""Tables of the batch-invariant mode's records: what it costs and what its certificates found.

    python3 scripts/summarize_invariant.py --bench RUN1.json [RUN2.json] [--certificates INV.json]

RUN1 (and RUN2): ``main.py bench`` records with ``ours`` and ``ours_invariant``, of one machine;
INV: ``scripts/measure_invariance.py --map``'s record. Prints Markdown: the mode's cost
(``cost_vs_ours``, device time over the default's; the eager loop's too) by shape and dtype in
each run, its spread over shapes whose x is at least 64 MiB (the mode's bound; widths a 16-byte
vector divides apart from the rest), and one line per certificate (the default's largest ulp,
the mode's verdict).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

MIB = 2**20


def _costs(path: Path) -> dict[tuple, dict]:
    record = json.loads(path.read_text())
    return {
        (r["set"], r["rows"], r["width"], r["dtype"]): r
        for r in record["results"]
        if r["impl"] == "ours_invariant" and "cost_vs_ours" in r
    }


def _aligned(width: int, dtype: str) -> bool:
    return width % (4 if dtype == "float32" else 8) == 0


def _x_bytes(key: tuple) -> int:
    """x's bytes (rows x width x itemsize): what the mode's 64 MiB bound is about."""
    return key[1] * key[2] * (4 if key[3] == "float32" else 2)


def cost_tables(first: Path, second: Path | None = None) -> list[str]:
    """The mode's cost per shape and dtype: one run's columns, or two runs' side by side."""
    runs = [_costs(first)] + ([_costs(second)] if second else [])
    one = runs[0]
    names = ["run 1", "run 2"] if second else [""]
    head = [f"cost {n}".strip() for n in names] + [f"loop cost {n}".strip() for n in names]
    lines = [
        "| set | shape | dtype | x MiB | " + " | ".join(head) + " |",
        "|---|---|---|---|" + "---|" * len(head),
    ]
    nan = float("nan")
    for key in sorted(one, key=lambda k: (k[0], k[1] * k[2], k[3])):
        rows = [run.get(key, {}) for run in runs]
        cells = [f"{r.get('cost_vs_ours', nan):.3f}" for r in rows]
        cells += [f"{r.get('loop_cost_vs_ours', nan):.3f}" for r in rows]
        lines.append(
            f"| {key[0]} | {key[1]}x{key[2]} | {key[3]} | {_x_bytes(key) / MIB:.1f} | "
            + " | ".join(cells)
            + " |"
        )
    summary = []
    for aligned in (True, False):
        keys = [k for k in one if _x_bytes(k) >= 64 * MIB and _aligned(k[2], k[3]) == aligned]
        # A case run 2 lacks (a run cut by its budget skips its last shapes) counts run 1 alone.
        big = [max(run.get(k, one[k])["cost_vs_ours"] for run in runs) for k in keys]
        alone = sum(k not in runs[-1] for k in keys)
        if big:
            kind = "a 16-byte vector divides the width" if aligned else "widths no vector divides"
            which = "the larger of the two runs" if second else "one run"
            summary.append(
                f"- shapes whose x is 64 MiB or more, {kind}: {len(big)} shape x dtype cases, "
                f"cost ({which}) median {statistics.median(big):.3f}, max "
                f"{max(big):.3f}; {sum(c > 1.05 for c in big)} above 1.05"
                + (f" ({alone} of run 1 alone: run 2 has no figure of them)" if alone else "")
            )
    return [*summary, "", *lines]


def certificate_lines(path: Path) -> list[str]:
    record = json.loads(path.read_text())
    cases = record["cases"]
    lines = [
        f"- {record['device']['name'] if isinstance(record['device'], dict) else record['device']}"
        f", {len(cases)} cases, {record['rows']} rows each: the mode bit-identical in "
        f"{sum(c['batch_invariant']['bit_identical'] for c in cases)}, the default in "
        f"{sum(c['default']['bit_identical'] for c in cases)}",
        "",
        "| width | dtype | row stride | case | default: max ulp | mode | mode's batch sizes |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in cases:
        mode = c["batch_invariant"]
        lines.append(
            f"| {c['width']} | {c['dtype']} | {c['row_stride']} | {c['case']} | "
            f"{c['default']['max_ulp']} | "
            f"{'bit-identical' if mode['bit_identical'] else 'DIFFERS'} | "
            f"{len(mode['batch_sizes'])} (1..{max(mode['batch_sizes'])}) |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", type=Path, nargs="+", required=True, help="one or two runs")
    parser.add_argument("--certificates", type=Path, help="measure_invariance.py's record")
    args = parser.parse_args()
    if len(args.bench) > 2:
        parser.error(f"--bench takes one or two records; got {len(args.bench)}")
    print("\n".join(["## Cost", "", *cost_tables(*args.bench)]))
    if args.certificates:
        print("\n".join(["", "## Certificates", "", *certificate_lines(args.certificates)]))


if __name__ == "__main__":
    main()
