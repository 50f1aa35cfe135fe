"""``bench.png``: bandwidth where the device is the limit, microseconds where the launch is.

Top row: GB/s against width for shapes moving at least ``LAUNCH_BOUND_BYTES`` (copy dashed).
Middle: % of copy per such shape. Bottom: the launch-bound shapes (less traffic than that), in
microseconds per call: device time (solid bars) and eager-loop time, host included (hatched),
on a log scale, because there GB/s measures the launch, not the kernel.
"""

from __future__ import annotations

import os
from typing import Any

from kernels.bench.impls import DISPLAY_ORDER
from kernels.bench.shapes import DTYPES

# Below this much traffic a call is launch-bound: at the H200's ~4.8 TB/s it takes < 7 us,
# less than one eager launch costs the host.
LAUNCH_BOUND_BYTES = 32 * 2**20

_COLORS = {
    "copy": "black",
    "ours": "tab:red",
    "ours_invariant": "tab:pink",
    "candidate": "tab:brown",
    "torch_eager": "tab:blue",
    "torch_compile": "tab:green",
    "liger": "tab:orange",
    "quack": "tab:purple",
}


def write_plot(results: list[dict[str, Any]], path: str | os.PathLike[str]) -> str | None:
    """The three rows of plots of the module docstring, one column per dtype.

    Rows whose status is not ``ok`` (a wrong result included) are never plotted.

    Args:
        results: the run's rows (after :func:`~kernels.bench.harness.finalize`).
        path: the PNG to write.

    Returns:
        None on success, or a note saying why no PNG was written (matplotlib missing).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as err:
        return f"no PNG: matplotlib is not importable ({type(err).__name__}: {err})"
    ok = [r for r in results if r.get("status") == "ok"]
    dtypes = [d for d in DTYPES if any(r["dtype"] == d for r in ok)]
    if not dtypes:
        return "no PNG: no successful result to plot"
    impls = [i for i in DISPLAY_ORDER if any(r["impl"] == i for r in ok)]
    fig, axes = plt.subplots(3, len(dtypes), figsize=(7.5 * len(dtypes), 15), squeeze=False)
    for col, dtype_key in enumerate(dtypes):
        of_dtype = [r for r in ok if r["dtype"] == dtype_key]
        bandwidth = [r for r in of_dtype if r["bytes"] >= LAUNCH_BOUND_BYTES]
        launch = [r for r in of_dtype if r["bytes"] < LAUNCH_BOUND_BYTES]
        _plot_gbps(axes[0][col], bandwidth, impls, dtype_key)
        _plot_pct(axes[1][col], bandwidth, impls, dtype_key)
        _plot_launch_bound(axes[2][col], launch, impls, dtype_key)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def _plot_gbps(ax: Any, ok: list[dict[str, Any]], impls: list[str], dtype_key: str) -> None:
    """GB/s against width for one dtype's ok rows: a line per implementation, shapes as dots."""
    for impl in impls:
        pts = sorted((r["width"], r["gbps"], r["rows"]) for r in ok if r["impl"] == impl)
        if not pts:
            continue
        # One line through the widest-rows entry per width; every shape as a marker.
        per_width: dict[int, float] = {}
        rows_at: dict[int, int] = {}
        for width, value, rows in pts:
            if rows >= rows_at.get(width, 0):
                per_width[width], rows_at[width] = value, rows
        widths = sorted(per_width)
        style = "--" if impl == "copy" else "-"
        ax.plot(
            widths,
            [per_width[w] for w in widths],
            style,
            color=_COLORS.get(impl),
            label=f"{impl}" + (" (ceiling)" if impl == "copy" else ""),
            linewidth=1.6,
        )
        ax.scatter(
            [p[0] for p in pts], [p[1] for p in pts], s=12, color=_COLORS.get(impl), alpha=0.6
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("width (elements per row)")
    ax.set_ylabel("GB/s (x read + w read + y written)")
    ax.set_title(f"{dtype_key}: GB/s vs width (line: most rows per width)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def _plot_pct(ax: Any, ok: list[dict[str, Any]], impls: list[str], dtype_key: str) -> None:
    """% of copy per shape for one dtype's ok rows: a bar per implementation but the copy."""
    keys = _shape_keys(ok)
    bar_impls = [i for i in impls if i != "copy"]
    width_bar = 0.8 / max(1, len(bar_impls))
    for j, impl in enumerate(bar_impls):
        values = []
        for key in keys:
            match = [
                r for r in ok if (r["set"], r["rows"], r["width"]) == key and r["impl"] == impl
            ]
            values.append(match[0].get("pct_of_copy", float("nan")) if match else float("nan"))
        ax.bar(
            [k + j * width_bar for k in range(len(keys))],
            values,
            width_bar,
            color=_COLORS.get(impl),
            label=impl,
        )
    ax.axhline(100, color="black", linestyle="--", linewidth=1)
    ax.axhline(90, color="grey", linestyle=":", linewidth=1)
    ax.set_xticks([k + 0.4 - width_bar / 2 for k in range(len(keys))])
    ax.set_xticklabels([f"{r}x{w}" for _, r, w in keys], rotation=70, fontsize=7)
    ax.set_ylabel("% of copy GB/s (same shape)")
    ax.set_title(f"{dtype_key}: % of copy per shape")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def _shape_keys(rows: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    keys: list[tuple[str, int, int]] = []
    for r in rows:
        key = (r["set"], r["rows"], r["width"])
        if key not in keys:
            keys.append(key)
    return keys


def _plot_launch_bound(ax: Any, ok: list[dict[str, Any]], impls: list[str], dtype_key: str) -> None:
    """Device and eager-loop microseconds per call of the launch-bound shapes, log scale."""
    keys = _shape_keys(ok)
    bar_impls = [i for i in impls if i != "copy"]
    width_bar = 0.8 / max(1, len(bar_impls))
    lookup = {(r["set"], r["rows"], r["width"], r["impl"]): r for r in ok}
    for j, impl in enumerate(bar_impls):
        xs = [k + j * width_bar for k in range(len(keys))]
        device = [lookup.get((*key, impl), {}).get("median_us", float("nan")) for key in keys]
        loop = [lookup.get((*key, impl), {}).get("loop_us", float("nan")) for key in keys]
        color = _COLORS.get(impl)
        ax.bar(xs, loop, width_bar, color="none", edgecolor=color, hatch="///", linewidth=0.8)
        ax.bar(xs, device, width_bar * 0.6, color=color, label=impl)
    ax.set_yscale("log")
    ax.set_xticks([k + 0.4 - width_bar / 2 for k in range(len(keys))])
    ax.set_xticklabels([f"{r}x{w}" for _, r, w in keys], rotation=70, fontsize=7)
    ax.set_ylabel("us per call (solid: device; hatched: eager loop, host included)")
    ax.set_title(f"{dtype_key}: launch-bound shapes (< {LAUNCH_BOUND_BYTES >> 20} MiB moved)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    if keys:
        ax.legend(fontsize=8)
