"""Check a ``results.json`` of ``kernels.bench`` against the speed targets.

    python -m lab.targets docs/benchmarks/results.json [--repro OTHER.json] [--impl ours]

Targets: >= 90% of the copy's GB/s on calls of >= 256 MiB at widths 1024-32768 (bf16, fp32;
and every dtype); >= 85% on the narrow set; >= 85% for odd widths with >= 4096 rows; >= 80% at
width 65536; device time >= 1.0x and >= 0.99x the fastest alternative; eager-loop time (host
included) >= 1.0x the fastest alternative.

Prints markdown: one table per target, every qualifying shape with its measured value, and a
line saying met / not met. Only what the files hold is reported; nothing is extrapolated.

The ">= 1.0x the fastest alternative" target allows "within the run-to-run spread": without
``--repro`` that spread is the one measured inside the run (its two timing rounds); with
``--repro`` (a second run of the same command) it is the larger of that and each
implementation's change of median between the two runs, for that shape and dtype.
"""

from __future__ import annotations

import argparse
from typing import Any

from kernels.bench import read_json

ALTERNATIVES = ("torch_eager", "torch_compile", "liger", "quack")
MIB = 2**20


def _index(results: list[dict[str, Any]]) -> dict[tuple[str, int, int, str, str], dict[str, Any]]:
    return {(r["set"], r["rows"], r["width"], r["dtype"], r["impl"]): r for r in results}


def shape_keys(results: list[dict[str, Any]]) -> list[tuple[str, int, int, str]]:
    """``(set, rows, width, dtype)`` of every shape in ``results``, in first-seen order."""
    keys: list[tuple[str, int, int, str]] = []
    for row in results:
        key = (row["set"], row["rows"], row["width"], row["dtype"])
        if key not in keys:
            keys.append(key)
    return keys


def _pct(row: dict[str, Any] | None) -> float | None:
    return None if row is None or row.get("status") != "ok" else row.get("pct_of_copy")


def percent_target(
    results: list[dict[str, Any]], impl: str, title: str, threshold: float, qualifies: Any
) -> tuple[str, bool]:
    """Rows of shapes where ``qualifies(set, rows, width, dtype, bytes)``; met if all >= bound."""
    index = _index(results)
    lines = [
        f"**{title}** (>= {threshold:.0f}% of copy, {impl})",
        "",
        "| shape | dtype | traffic | % of copy | met |",
        "|---|---|---|---|---|",
    ]
    met_all = True
    for key in shape_keys(results):
        row = index.get((*key, impl))
        if row is None or not qualifies(*key, row.get("bytes", 0)):
            continue
        pct = _pct(row)
        met = pct is not None and pct >= threshold
        met_all &= met
        traffic = f"{row['bytes'] / MIB:.0f} MiB" if "bytes" in row else "-"  # skipped: none
        pct_text = "-" if pct is None else f"{pct:.1f}%"
        lines.append(
            f"| {key[1]}x{key[2]} | {key[3]} | {traffic} | {pct_text} | {'yes' if met else 'NO'} |"
        )
    lines += ["", f"Result: {'met' if met_all else 'NOT met'}.", ""]
    return "\n".join(lines), met_all


# The two times a row carries: (median field, its rounds' spread field, what it is).
TIMES = {
    "median_us": ("round_spread_pct", "device time"),
    "loop_us": ("loop_round_spread_pct", "eager-loop time, host included"),
}


def _cross_run_pct(
    row: dict[str, Any],
    other: dict[tuple[str, int, int, str, str], dict[str, Any]] | None,
    field: str = "median_us",
) -> float:
    """|change| of ``row``'s ``field`` in the other run of the same command, in percent (0:
    none)."""
    if other is None:
        return 0.0
    twin = other.get((row["set"], row["rows"], row["width"], row["dtype"], row["impl"]))
    if twin is None or twin.get("status") != "ok" or field not in twin:
        return 0.0
    return abs(twin[field] / row[field] - 1.0) * 100.0


def speed_target(
    results: list[dict[str, Any]],
    impl: str,
    repro: list[dict[str, Any]] | None = None,
    *,
    field: str = "median_us",
    threshold: float = 1.0,
) -> tuple[str, bool]:
    """``impl`` against the fastest alternative per shape on ``field`` (``median_us``: device
    time; ``loop_us``: eager-loop time), ``>= threshold`` or within the measured spread."""
    spread_field, what = TIMES[field]
    index = _index(results)
    other = _index(repro) if repro is not None else None
    source = (
        "the two timing rounds of this run and each implementation's change between this run "
        "and the second run of the same command"
        if repro is not None
        else "the two timing rounds of this run"
    )
    lines = [
        f"**{what}: >= {threshold:g}x the fastest alternative** ({impl}; 'within spread': "
        f"below that by no more than the larger run-to-run spread of the two, from {source})",
        "",
        "| set | shape | dtype | ours us | best alternative | alt us | speedup | spread | met |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    met_all = True
    ahead = within = behind = 0
    for key in shape_keys(results):
        row = index.get((*key, impl))
        alts = [index.get((*key, a)) for a in ALTERNATIVES]
        alts = [a for a in alts if a is not None and a.get("status") == "ok" and field in a]
        if row is None or row.get("status") != "ok" or field not in row or not alts:
            continue
        best = min(alts, key=lambda a: a[field])
        speedup = best[field] / row[field]
        spread = max(
            row.get(spread_field, 0.0),
            best.get(spread_field, 0.0),
            _cross_run_pct(row, other, field),
            _cross_run_pct(best, other, field),
        )
        met = speedup >= threshold or (threshold / speedup - 1.0) * 100.0 <= spread
        met_all &= met
        verdict = "yes" if speedup >= threshold else ("within spread" if met else "NO")
        ahead += speedup >= threshold
        within += speedup < threshold and met
        behind += not met
        lines.append(
            f"| {key[0]} | {key[1]}x{key[2]} | {key[3]} | {row[field]:.2f} | "
            f"{best['impl']} | {best[field]:.2f} | {speedup:.3f}x | {spread:.1f}% | "
            f"{verdict} |"
        )
    lines += [
        "",
        f"{ahead} ahead, {within} slower within the spread, {behind} slower beyond it.",
        "",
        f"Result: {'met' if met_all else 'NOT met'}.",
        "",
    ]
    return "\n".join(lines), met_all


def report(
    results: list[dict[str, Any]], impl: str, repro: list[dict[str, Any]] | None = None
) -> tuple[str, dict[str, bool]]:
    """Markdown for every target and ``{target: met}``; ``repro`` is a second run's rows."""
    parts = []
    verdicts: dict[str, bool] = {}
    text, verdicts["ge90_large"] = percent_target(
        results,
        impl,
        ">= 90% on >= 256 MiB, width 1024-32768, bf16 and fp32",
        90.0,
        lambda s, r, w, d, b: (
            b >= 256 * MIB and 1024 <= w <= 32768 and d in ("bfloat16", "float32")
        ),
    )
    parts.append(text)
    text, verdicts["ge85_narrow"] = percent_target(
        results, impl, ">= 85% on the narrow set", 85.0, lambda s, r, w, d, b: s == "narrow"
    )
    parts.append(text)
    text, verdicts["ge80_65536"] = percent_target(
        results, impl, ">= 80% at width 65536", 80.0, lambda s, r, w, d, b: w >= 65536
    )
    parts.append(text)
    text, verdicts["ge90_large_all_dtypes"] = percent_target(
        results,
        impl,
        ">= 90% on >= 256 MiB, width 1024-32768, every dtype",
        90.0,
        lambda s, r, w, d, b: b >= 256 * MIB and 1024 <= w <= 32768,
    )
    parts.append(text)
    text, verdicts["ge85_odd_widths"] = percent_target(
        results,
        impl,
        ">= 85% for odd widths with >= 4096 rows",
        85.0,
        lambda s, r, w, d, b: w % 2 == 1 and r >= 4096,
    )
    parts.append(text)
    text, verdicts["ge1x_alternatives"] = speed_target(results, impl, repro)
    parts.append(text)
    text, verdicts["ge099_device"] = speed_target(results, impl, repro, threshold=0.99)
    parts.append(text)
    text, verdicts["ge1x_loop"] = speed_target(results, impl, repro, field="loop_us")
    parts.append(text)
    # Issue 42's loop target: 0.99x, within the spread counting as met (where the host's time
    # decides, on the launch-bound shapes, that spread is the host's).
    text, verdicts["ge099_loop"] = speed_target(
        results, impl, repro, field="loop_us", threshold=0.99
    )
    parts.append(text)
    return "\n".join(parts), verdicts


def main(argv: list[str] | None = None) -> int:
    """``python -m lab.targets RESULTS.json [--repro OTHER.json] [--impl ours]``."""
    parser = argparse.ArgumentParser(prog="python -m lab.targets")
    parser.add_argument("results", help="results.json written by kernels.bench")
    parser.add_argument("--impl", default="ours")
    parser.add_argument("--repro", help="results.json of a second run of the same command")
    args = parser.parse_args(argv)
    data = read_json(args.results)
    repro = read_json(args.repro)["results"] if args.repro else None
    text, verdicts = report(data["results"], args.impl, repro)
    print(text)
    print("Summary:", ", ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in verdicts.items()))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
