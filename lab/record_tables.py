"""Markdown for docs/benchmarks/README.md, read from the record (and its reproduction) only.

    python -m lab.record_tables docs/benchmarks/results.json [REPRO/results.json] > tables.md

Prints: the headline table (bf16 and fp32: device time of every implementation, and ours
against the fastest alternative in device time and in the eager loop), the reproduction table
when a second run is given (ours and the fastest alternative in both runs), the target verdicts
(:mod:`lab.targets`, with the second run as the run-to-run spread) and the full per-dtype tables
(``kernels.bench.markdown_table``). Nothing is typed by hand, so the README cannot drift from
the JSON.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from kernels import bench
from lab import targets

ALTS = ("torch_compile", "liger", "quack", "torch_eager")


def _index(results: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    return {
        (r["set"], r["rows"], r["width"], r["dtype"], r["impl"]): r
        for r in results
        if r.get("status") == "ok"
    }


def _layout(note: str) -> str:
    """'column_loop: block 32768, rows/program 1, 32 warps, ...' -> 'loop C32768 w32 rt cs'
    ('loop R2 C2048 w16' for blocks of 2 rows)."""
    match = re.search(r"\((\w+): block (\d+), rows/program (\d+), (\d+) warps", note)
    if not match:
        return "?"
    path, block, rows, warps = match.groups()
    if path == "column_loop":
        text = "loop " + (f"R{rows} " if rows != "1" else "") + f"C{block} w{warps}"
        text += " rt" if "runtime chunk loop" in note else ""
        text += " cs" if "streaming stores" in note else ""
        return text
    text = f"{path} R{rows} w{warps}" + (" early-w" if "early weight" in note else "")
    return text + (" cs" if "streaming x and y" in note else "")


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    us = row["median_us"]
    time = f"{us:.2f} us" if us < 100 else f"{us:.0f} us"
    return f"{row['pct_of_copy']:.0f}% ({time})"


def _fastest_alt(index: dict, key: tuple) -> dict[str, Any] | None:
    alts = [index.get((*key, a)) for a in ALTS]
    alts = [a for a in alts if a is not None]
    return min(alts, key=lambda a: a["median_us"]) if alts else None


def _fastest_loop_alt(index: dict, key: tuple) -> dict[str, Any] | None:
    alts = [index.get((*key, a)) for a in ALTS]
    alts = [a for a in alts if a is not None and a.get("loop_us") is not None]
    return min(alts, key=lambda a: a["loop_us"]) if alts else None


def headline(results: list[dict[str, Any]]) -> str:
    index = _index(results)
    lines = [
        "| shape | dtype | layout (choose_config) | copy GB/s | ours | torch_compile | liger "
        "| quack | torch_eager | device: ours vs fastest alt | eager loop: ours vs fastest alt |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for dtype in ("bfloat16", "float32"):
        for key in targets.shape_keys(results):
            if key[3] != dtype:
                continue
            ours = index.get((*key, "ours"))
            copy = index.get((*key, "copy"))
            best = _fastest_alt(index, key)
            if ours is None or copy is None or best is None:
                continue
            speedup = best["median_us"] / ours["median_us"]
            loop_best = _fastest_loop_alt(index, key)
            loop = "-"
            if loop_best is not None and ours.get("loop_us") is not None:
                loop = (
                    f"{loop_best['loop_us'] / ours['loop_us']:.3f}x ({loop_best['impl']}; "
                    f"{ours['loop_us']:.1f} / {loop_best['loop_us']:.1f} us)"
                )
            lines.append(
                f"| {key[1]}x{key[2]} | {dtype} | {_layout(ours.get('note', ''))} | "
                f"{copy['gbps']:.0f} | {_cell(ours)} | "
                f"{_cell(index.get((*key, 'torch_compile')))} | "
                f"{_cell(index.get((*key, 'liger')))} | "
                f"{_cell(index.get((*key, 'quack')))} | "
                f"{_cell(index.get((*key, 'torch_eager')))} | "
                f"{speedup:.3f}x ({best['impl']}) | {loop} |"
            )
    return "\n".join(lines)


def reproduction(record: list[dict[str, Any]], repro: list[dict[str, Any]]) -> str:
    first, second = _index(record), _index(repro)
    lines = [
        "| shape | dtype | ours record | ours repro | change | fastest alt record | "
        "fastest alt repro | ours vs alt (record / repro) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    changes = []
    for key in targets.shape_keys(record):
        a, b = first.get((*key, "ours")), second.get((*key, "ours"))
        alt_a, alt_b = _fastest_alt(first, key), _fastest_alt(second, key)
        if None in (a, b, alt_a, alt_b):
            continue
        change = (b["median_us"] / a["median_us"] - 1.0) * 100.0
        changes.append(abs(change))
        lines.append(
            f"| {key[1]}x{key[2]} | {key[3]} | {a['median_us']:.2f} | {b['median_us']:.2f} | "
            f"{change:+.2f}% | {alt_a['median_us']:.2f} ({alt_a['impl']}) | "
            f"{alt_b['median_us']:.2f} ({alt_b['impl']}) | "
            f"{alt_a['median_us'] / a['median_us']:.3f}x / "
            f"{alt_b['median_us'] / b['median_us']:.3f}x |"
        )
    changes.sort()
    median = changes[len(changes) // 2] if changes else float("nan")
    lines += [
        "",
        f"ours, record vs reproduction over {len(changes)} shape x dtype: median |change| "
        f"{median:.2f}%, largest {max(changes):.2f}%.",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    record = bench.read_json(argv[0])["results"]
    repro = bench.read_json(argv[1])["results"] if len(argv) > 1 else None
    print("## Headline\n")
    print(headline(record))
    if repro is not None:
        print("\n## Reproduction\n")
        print(reproduction(record, repro))
    text, verdicts = targets.report(record, "ours", repro)
    print("\n## Targets\n")
    print(text)
    print("Summary: " + ", ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in verdicts.items()))
    print("\n## Full tables\n")
    for dtype in ("bfloat16", "float32", "float16"):
        print(bench.markdown_table(record, dtypes=[dtype]))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
