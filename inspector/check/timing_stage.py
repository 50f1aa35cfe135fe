"""The check's timing on a GPU: ``python main.py bench`` on the input's shape, in a child process.

A receipt joins what was proven with what it costs: after the proof, ``check --device cuda``
runs the benchmark's own protocol (:mod:`kernels.bench`) on the input's rows, width and dtype,
contiguous rows of random values: the kernel checked (``ours``, or the user's kernel as
``candidate``), eager PyTorch (``torch_eager``, what a user would otherwise call) and a device
copy of the same bytes (the ceiling). Each gets its device time and its per-call time in a plain
eager loop, with their distributions; ``--ncu`` adds Nsight Compute's DRAM figures of the
checked kernel where ``ncu`` is on the PATH (the receipt's ``device_evidence.dram``).

The benchmark runs in a child process with a time bound: the user's kernel is imported there
(the benchmark's preflight runs first), so a fault or a hang at the input's shape ends the
child, not the check. The interpreter makes no timing claims: there the section is absent.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: Longest the benchmark child may take: a fresh Python and torch, a compile (usually from the
#: cache the check filled), two timing rounds of three implementations and ncu's replays.
TIMING_TIMEOUT_S = 600
#: The peer every check times beside its kernel (the copy comes with every benchmark).
PEERS = ("torch_eager",)
#: A row's figures the receipt keeps (the samples too: the distributions).
ROW_FIELDS = (
    "impl",
    "status",
    "note",
    "timing_mode",
    "bytes",
    "n",
    "median_us",
    "p20_us",
    "p80_us",
    "samples_us",
    "round_spread_pct",
    "loop_calls_per_sample",
    "loop_n",
    "loop_median_us",
    "loop_p20_us",
    "loop_p80_us",
    "loop_samples_us",
    "loop_round_spread_pct",
    "gbps",
    "pct_of_copy",
)
_ROOT = Path(__file__).resolve().parents[2]
NO_NCU = "ncu (Nsight Compute, part of the CUDA toolkit) is not on the PATH"
# Characters of the child's output kept where the timing failed.
_TAIL_CHARS = 600


def bench_arguments(problem: Any, kernel: Any | None, out: Path, ncu: bool) -> list[str]:
    """``main.py bench``'s arguments that time ``problem``'s shape (the user's ``kernel``, a
    :class:`~kernels.sandbox.usercode.KernelSpec`, as ``candidate``)."""
    impls = ",".join(PEERS if kernel is not None else ("ours", *PEERS))
    return [
        "bench",
        "--shapes",
        f"{problem.rows}x{problem.width}",
        "--dtypes",
        problem.dtype,
        "--eps",
        repr(float(problem.eps)),
        "--impls",
        impls,
        *([] if kernel is None else ["--kernel", f"{kernel.path}:{kernel.function}"]),
        *(["--ncu"] if ncu else []),
        "--no-plot",
        "--out",
        str(out),
    ]


def timing_stage(problem: Any, kernel: Any | None = None) -> dict[str, Any]:
    """The receipt's ``timing``: the benchmark's rows of this shape, or ``{"absent": why}``.

    Args:
        problem: the check's validated input (rows, width, dtype, eps are read).
        kernel: the user's kernel (:class:`~kernels.sandbox.usercode.KernelSpec`); None: the
            bundled one.
    """
    import kernels
    from kernels.sandbox.bounded import run_bounded
    from kernels.sandbox.process import kernel_env

    if kernels.MODE != "compiled":
        return {
            "absent": "the Triton interpreter runs on the CPU and makes no timing claims; "
            "`check --device cuda` on a GPU times the kernel"
        }
    ncu = shutil.which("ncu") is not None
    with tempfile.TemporaryDirectory(prefix="rmsnorm-check-timing-") as folder:
        out = Path(folder) / "bench"
        arguments = bench_arguments(problem, kernel, out, ncu)
        command = [sys.executable, "-m", "inspector", *arguments]
        try:
            # A cancelled window job kills the check; the benchmark must not outlive it.
            # A user's kernel is imported there: the environment and folder of its every
            # process (kernels.sandbox.process.kernel_env).
            done = run_bounded(
                command,
                timeout_s=TIMING_TIMEOUT_S,
                cwd=_ROOT if kernel is None else folder,
                env=None if kernel is None else kernel_env(compiled=None),
                die_with_parent=True,
            )
        except subprocess.TimeoutExpired:
            return {
                "absent": f"the benchmark did not finish within {TIMING_TIMEOUT_S} s "
                "(killed with its children)"
            }
        except OSError as err:
            return {"absent": f"the benchmark could not start: {err}"}
        if done.returncode != 0 or not (out / "results.json").is_file():
            said = " ".join((done.stderr.strip() or done.stdout.strip() or "no output").split())
            return {"absent": f"the benchmark exited {done.returncode}: {said[-_TAIL_CHARS:]}"}
        from kernels.bench import read_json

        try:
            report = read_json(out / "results.json")
            return timing_section(report, "ours" if kernel is None else "candidate", arguments[:-2])
        except ValueError as err:
            return {"absent": f"the benchmark's record was not read: {err}"}


def timing_section(report: dict[str, Any], checked: str, arguments: list[str]) -> dict[str, Any]:
    """The ``timing`` section from a benchmark record (``results.json``) of one shape.

    Args:
        report: the record, as :func:`kernels.bench.read_json` read it.
        checked: the implementation the check proved (``ours`` or ``candidate``).
        arguments: the ``main.py bench`` arguments that made it (the output folder left out).

    Raises:
        ValueError: the record holds no row of ``checked``, or rows of more than one shape.
    """
    rows = report["results"]
    shapes = {(row["rows"], row["width"], row["dtype"]) for row in rows}
    if len(shapes) != 1:
        raise ValueError(f"a check's timing is of one shape; the record holds {len(shapes)}")
    if checked not in {row["impl"] for row in rows}:
        raise ValueError(f"the record holds no row of {checked!r}")
    ((shape_rows, width, dtype),) = shapes
    kept = [{key: _finite(row[key]) for key in ROW_FIELDS if key in row} for row in rows]
    (measured,) = [row for row in rows if row["impl"] == checked]
    device = report.get("environment", {}).get("device")
    return {
        "command": ["python", "main.py", *arguments],
        "protocol": "the benchmark's (docs/benchmarks/README.md): device time between CUDA events "
        "(CUDA-graph replays below 1 GiB per call), per-call time of a plain eager loop with "
        "the host included, inputs rotated past twice the L2; contiguous rows of random values",
        "rows": shape_rows,
        "width": width,
        "dtype": dtype,
        "checked": checked,
        "device": str(device.get("name", "unknown")) if isinstance(device, dict) else "unknown",
        "started_utc": str(report.get("started_utc", "")),
        "results": kept,
        # Moved to the receipt's device_evidence.dram (a record without --ncu has none).
        "dram": measured.get("dram") or {"absent": NO_NCU},
    }


def _finite(value: Any) -> Any:
    """JSON-safe: a non-finite number becomes None (the receipt's JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def split_dram(section: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(timing, dram)`` of the receipt from a :func:`timing_stage` section: the timing
    without its DRAM figures, and those figures (or why there are none)."""
    if section is None:
        return {"absent": "the kernel did not run"}, {"absent": "the kernel did not run"}
    if "absent" in section:
        return section, {"absent": f"no timing run: {section['absent']}"}
    timing = {key: value for key, value in section.items() if key != "dram"}
    return timing, section.get("dram") or {"absent": NO_NCU}


def timing_lines(section: dict[str, Any] | None) -> list[str]:
    """The lines about a :func:`timing_stage` section, its ``dram`` included (none: no
    section)."""
    if section is None:
        return []
    if "absent" in section:
        return [f"timing: not measured: {section['absent']}"]
    parts = []
    for row in section["results"]:
        if row.get("status") != "ok" or row.get("median_us") is None:
            parts.append(f"{row['impl']} {row.get('status')}")
            continue
        loop = row.get("loop_median_us")
        copy = row.get("pct_of_copy")
        parts.append(
            f"{row['impl']} {row['median_us']:.2f} us"
            + (f" ({copy:.0f}% of copy)" if copy is not None and row["impl"] != "copy" else "")
            + (f", loop {loop:.2f} us/call" if loop is not None else "")
        )
    lines = [
        f"timing on {section['device']} ({section['rows']}x{section['width']} "
        f"{section['dtype']}; median device time, eager-loop time per call): " + "; ".join(parts)
    ]
    dram = section.get("dram")
    if isinstance(dram, dict) and "absent" in dram:
        lines.append(f"DRAM (Nsight Compute): not measured: {dram['absent']}")
    elif isinstance(dram, dict):
        lines.append(
            f"DRAM (Nsight Compute) of one {section['checked']} call: "
            f"{float(dram['pct_of_peak']):.1f}% of peak, {int(dram['bytes_read']):,} bytes read, "
            f"{int(dram['bytes_written']):,} written"
        )
    return lines
