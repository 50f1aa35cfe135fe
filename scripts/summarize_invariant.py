"""Tables of the batch-invariant mode's records: what it costs and what its certificates found.

    python3 scripts/summarize_invariant.py --bench RUN1.json RUN2.json --certificates INV.json

RUN1/RUN2: two ``main.py bench --impls ours,ours_invariant`` records of one machine;
INV: ``scripts/measure_invariance.py --map``'s record. Prints Markdown: the mode's cost
(``cost_vs_ours``, device time over the default's; the eager loop's too) by shape and dtype in
both runs, its spread over shapes whose x is at least 64 MiB (the mode's bound; widths a 16-byte
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


def cost_tables(first: Path, second: Path) -> list[str]:
    one, two = _costs(first), _costs(second)
    lines = [
        "| set | shape | dtype | x MiB | cost run 1 | cost run 2 | loop cost run 1 "
        "| loop cost run 2 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(one, key=lambda k: (k[0], k[1] * k[2], k[3])):
        a, b = one[key], two.get(key, {})
        lines.append(
            f"| {key[0]} | {key[1]}x{key[2]} | {key[3]} | {_x_bytes(key) / MIB:.1f} | "
            f"{a['cost_vs_ours']:.3f} | {b.get('cost_vs_ours', float('nan')):.3f} | "
            f"{a.get('loop_cost_vs_ours', float('nan')):.3f} | "
            f"{b.get('loop_cost_vs_ours', float('nan')):.3f} |"
        )
    summary = []
    for aligned in (True, False):
        keys = [k for k in one if _x_bytes(k) >= 64 * MIB and _aligned(k[2], k[3]) == aligned]
        # A case run 2 lacks (a run cut by its budget skips its last shapes) counts run 1 alone.
        big = [max(one[k]["cost_vs_ours"], two.get(k, one[k])["cost_vs_ours"]) for k in keys]
        alone = sum(k not in two for k in keys)
        if big:
            kind = "a 16-byte vector divides the width" if aligned else "widths no vector divides"
            summary.append(
                f"- shapes whose x is 64 MiB or more, {kind}: {len(big)} shape x dtype cases, "
                f"cost (the larger of the two runs) median {statistics.median(big):.3f}, max "
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
    parser.add_argument("--bench", type=Path, nargs=2, required=True)
    parser.add_argument("--certificates", type=Path, required=True)
    args = parser.parse_args()
    print("\n".join(["## Cost", "", *cost_tables(*args.bench), "", "## Certificates", ""]))
    print("\n".join(certificate_lines(args.certificates)))


if __name__ == "__main__":
    main()
