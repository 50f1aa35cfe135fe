"""DRAM figures of ``ours`` (and of the ``--kernel`` candidate) from Nsight Compute:
``bench --ncu``.

Per shape and dtype, ``ncu`` runs a small child (:mod:`kernels.bench.ncu_child`) that makes the
input, warms ``kernels.rms_norm`` up (compiles it) and then calls it once between
``cudaProfilerStart`` and ``cudaProfilerStop``; ``--profile-from-start off`` profiles that
call's kernels and nothing else (not the input's generation, not the warm-up). ncu replays each
kernel to collect its counters, with its caches flushed before each pass (its default), and
never locks the clocks (``--clock-control none``: the timings beside it ran at the clocks the
device chose). Its raw CSV page gives, per kernel launch, the DRAM bytes read and written, DRAM
throughput as % of its sustained peak over the kernel's elapsed time, and the duration.

The figures land in the ``ours`` row as ``dram``; where there are none (no ncu on the PATH, a
device that is not CUDA, ncu failing, timing out or printing what this parser does not know)
``dram`` is ``{"absent": why}``: never a crash, never a guess.
"""

from __future__ import annotations

import csv
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernels.sandbox.bounded import run_bounded

BYTES_READ = "dram__bytes_read.sum"
BYTES_WRITTEN = "dram__bytes_write.sum"
PCT_OF_PEAK = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
DURATION = "gpu__time_duration.sum"
METRICS = (BYTES_READ, BYTES_WRITTEN, PCT_OF_PEAK, DURATION)
#: Longest one shape's profile may take: a fresh Python, torch and Triton import, a compile
#: (usually from the cache the timing filled) and ncu's replay passes.
PROFILE_TIMEOUT_S = 300.0
VERSION_TIMEOUT_S = 60.0
#: What the record's protocol says about the ``dram`` figures.
PROTOCOL = (
    "ncu --clock-control none --profile-from-start off --csv --page raw --print-units base "
    f"--metrics {','.join(METRICS)}, once per shape and dtype, over a child that warms "
    "kernels.rms_norm (or the --kernel candidate) up and then profiles one call of it "
    "(between cudaProfilerStart and "
    "cudaProfilerStop) on its own random input; ncu's default cache control flushes the caches "
    "before each replay pass. dram: bytes read and written summed over the call's kernels, "
    "pct_of_peak their duration-weighted DRAM throughput (% of sustained peak over elapsed "
    "time); or {absent: why}."
)
_ROOT = Path(__file__).resolve().parents[2]
# Units ncu prints for these metrics (base units asked for; the scaled ones read too). The
# durations come as "nsecond" or, from the H200's ncu (2025), "ns".
_SCALE = {
    "byte": 1.0,
    "Kbyte": 1e3,
    "Mbyte": 1e6,
    "Gbyte": 1e9,
    "nsecond": 1.0,
    "usecond": 1e3,
    "msecond": 1e6,
    "second": 1e9,
    "ns": 1.0,
    "us": 1e3,
    "ms": 1e6,
    "s": 1e9,
    "%": 1.0,
}
_UNITS = {
    BYTES_READ: ("byte", "Kbyte", "Mbyte", "Gbyte"),
    BYTES_WRITTEN: ("byte", "Kbyte", "Mbyte", "Gbyte"),
    PCT_OF_PEAK: ("%",),
    DURATION: ("nsecond", "usecond", "msecond", "second", "ns", "us", "ms", "s"),
}
_VERSION = re.compile(r"\bVersion\s+(\S+)")
# Longest reason an absent figure carries.
_REASON_CHARS = 300


class NcuError(RuntimeError):
    """ncu's output could not be read as the figures (the message says what was wrong)."""


@dataclass(frozen=True)
class KernelLaunch:
    """One profiled kernel launch: its name and counters (bytes, %, nanoseconds)."""

    kernel: str
    bytes_read: float
    bytes_written: float
    pct_of_peak: float
    duration_ns: float


def absent(reason: str) -> dict[str, str]:
    """The ``dram`` of a row without figures: ``{"absent": reason}`` (cut to 300 characters)."""
    reason = " ".join(str(reason).split())
    if len(reason) > _REASON_CHARS:
        reason = reason[: _REASON_CHARS - 3] + "..."
    return {"absent": reason}


def ncu_command(
    tool: str, rows: int, width: int, dtype: str, eps: float, kernel: str | None = None
) -> list[str]:
    """The ncu command line that profiles one call of ``kernels.rms_norm`` (or of the user's
    ``kernel``, ``FILE.py:FUNCTION``) on this shape."""
    return [
        tool,
        "--clock-control", "none",
        "--profile-from-start", "off",
        "--target-processes", "all",
        "--csv", "--page", "raw", "--print-units", "base",
        "--metrics", ",".join(METRICS),
        sys.executable, "-m", "kernels.bench.ncu_child",
        str(rows), str(width), dtype, repr(float(eps)),
        *([] if kernel is None else [kernel]),
    ]  # fmt: skip


def _tool_errors(text: str) -> list[str]:
    """What ncu's ``==ERROR==`` lines say."""
    marker = "==ERROR=="
    return [line.split(marker, 1)[1].strip() for line in text.splitlines() if marker in line]


def parse_raw_csv(text: str) -> list[KernelLaunch]:
    """The kernel launches of ncu's ``--csv --page raw`` output.

    ncu's own lines (``==PROF==``, ``==WARNING==``) and anything the child printed are skipped;
    the CSV is a header (``"ID"``, ..., ``"Kernel Name"``, ..., the metrics), an optional units
    row (empty ID) and one row per launch.

    Raises:
        NcuError: an ``==ERROR==`` line, no CSV, a header without a metric, a row of another
            length, a value that is not a finite number >= 0, a unit this parser does not know,
            or no launch at all.
    """
    errors = _tool_errors(text)
    if errors:
        raise NcuError(f"ncu reported an error: {errors[0]}")
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if not lines:
        warnings = [line for line in text.splitlines() if "==WARNING==" in line]
        said = f" ({warnings[0].split('==WARNING==', 1)[1].strip()})" if warnings else ""
        raise NcuError(f"ncu printed no CSV{said}")
    table = list(csv.reader(lines))
    header = table[0]
    if not header or header[0] != "ID" or "Kernel Name" not in header:
        raise NcuError(f"the CSV does not start with ncu's raw header (ID, ..., Kernel Name): "
                       f"{','.join(header)[:80]!r}")  # fmt: skip
    missing = [metric for metric in METRICS if metric not in header]
    if missing:
        raise NcuError(f"the CSV has no column {missing[0]}")
    units: dict[str, str] = {}
    launches = []
    for number, row in enumerate(table[1:], start=2):
        if len(row) != len(header):
            raise NcuError(f"CSV line {number} has {len(row)} cells; the header has {len(header)}")
        cells = dict(zip(header, row, strict=True))
        if cells["ID"] == "":
            units = cells
            continue
        values = {metric: _value(cells, units, metric, number) for metric in METRICS}
        launches.append(
            KernelLaunch(
                kernel=cells["Kernel Name"],
                bytes_read=values[BYTES_READ],
                bytes_written=values[BYTES_WRITTEN],
                pct_of_peak=values[PCT_OF_PEAK],
                duration_ns=values[DURATION],
            )
        )
    if not launches:
        raise NcuError("ncu profiled no kernel launch")
    return launches


def _value(cells: dict[str, str], units: dict[str, str], metric: str, line: int) -> float:
    """One counter in its base unit (bytes, %, nanoseconds)."""
    text = cells[metric]
    try:
        value = float(text.replace(",", ""))  # ncu may group thousands
    except ValueError:
        raise NcuError(f"{metric} on CSV line {line} is {text!r}, not a number") from None
    if not math.isfinite(value) or value < 0:
        raise NcuError(f"{metric} on CSV line {line} is {text!r}, not a finite number >= 0")
    unit = units.get(metric) or _UNITS[metric][0]
    if unit not in _UNITS[metric]:
        raise NcuError(f"{metric} is in {unit!r}; expected one of {', '.join(_UNITS[metric])}")
    return value * _SCALE[unit]


def dram_figures(launches: list[KernelLaunch], version: str) -> dict[str, Any]:
    """The ``dram`` record of one call: bytes summed over its kernels, throughput weighted by
    each kernel's duration (their plain mean when ncu gave no durations)."""
    duration = sum(launch.duration_ns for launch in launches)
    if duration > 0:
        pct = sum(launch.pct_of_peak * launch.duration_ns for launch in launches) / duration
    else:
        pct = sum(launch.pct_of_peak for launch in launches) / len(launches)
    return {
        "bytes_read": round(sum(launch.bytes_read for launch in launches)),
        "bytes_written": round(sum(launch.bytes_written for launch in launches)),
        "pct_of_peak": pct,
        "duration_ns": duration,
        "kernels": list(dict.fromkeys(launch.kernel for launch in launches)),
        "launches": len(launches),
        "ncu_version": version,
        "clock_control": "none",
    }


def ncu_version(tool: str) -> str:
    """``ncu --version``'s version (e.g. ``2024.3.2.0``; its last line if it names none).

    Raises:
        NcuError: it did not start, did not finish in time, failed or printed nothing.
    """
    try:
        done = run_bounded([tool, "--version"], timeout_s=VERSION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise NcuError(f"ncu --version did not finish within {VERSION_TIMEOUT_S:g} s") from None
    except OSError as err:
        raise NcuError(f"ncu could not start: {err}") from None
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise NcuError(f"ncu --version exited {done.returncode}: {said}")
    found = _VERSION.search(done.stdout)
    return found.group(1) if found else lines[-1][:80]


def profile_ours(
    rows: int,
    width: int,
    dtype: str,
    eps: float,
    *,
    tool: str,
    version: str,
    timeout_s: float = PROFILE_TIMEOUT_S,
    kernel: str | None = None,
) -> dict[str, Any]:
    """One call of ``kernels.rms_norm`` (or of the user's ``kernel``, ``FILE.py:FUNCTION``) on
    ``rows x width`` ``dtype`` under ncu: its :func:`dram_figures`, or :func:`absent` with why
    there are none."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(_ROOT), env.get("PYTHONPATH", "")])
    command = ncu_command(tool, rows, width, dtype, eps, kernel)
    try:
        done = run_bounded(command, timeout_s=timeout_s, cwd=_ROOT, env=env)
    except subprocess.TimeoutExpired:
        return absent(f"ncu did not finish within {timeout_s:g} s (killed with its child)")
    except OSError as err:
        return absent(f"ncu could not start: {err}")
    if done.returncode != 0:
        said = _tool_errors(done.stdout + "\n" + done.stderr)
        tail = said[0] if said else (done.stderr.strip().splitlines() or ["no output"])[-1]
        return absent(f"ncu exited {done.returncode}: {tail}")
    try:
        launches = parse_raw_csv(done.stdout)
    except NcuError as err:
        return absent(f"ncu's output not read: {err}")
    return dram_figures(launches, version)


def attach_dram(
    results: Iterable[dict[str, Any]],
    *,
    eps: float,
    device_type: str,
    tool: str | None = None,
    timeout_s: float = PROFILE_TIMEOUT_S,
    progress: Callable[[str], None] | None = None,
    kernel: str | None = None,
) -> None:
    """Give every ``ours`` row of ``results`` its ``dram`` (in place), and every ``candidate``
    row too when ``kernel`` names the user's kernel.

    A row that did not run correctly (status other than ``ok``) is not profiled, and says so.

    Args:
        results: the run's rows.
        eps: the run's epsilon.
        device_type: the benchmark's device type (anything but ``cuda``: absent).
        tool: the ncu executable (default: ``ncu`` on the PATH).
        timeout_s: the bound on one shape's profile.
        progress: called with one line per profiled row (default: stderr).
        kernel: ``FILE.py:FUNCTION`` of the ``candidate`` rows (``bench --kernel``).
    """
    profiled = {"ours": None, **({} if kernel is None else {"candidate": kernel})}
    rows = [row for row in results if row.get("impl") in profiled]
    if not rows:
        return
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    found = _usable_ncu(device_type, tool)
    for row in rows:
        if isinstance(found, dict):
            row["dram"] = dict(found)
        elif row.get("status") != "ok":
            row["dram"] = absent(
                f"not profiled: {row['impl']} is {row.get('status')} on this shape"
            )
        else:
            row["dram"] = profile_ours(
                row["rows"], row["width"], row["dtype"], eps,
                tool=found[0], version=found[1], timeout_s=timeout_s,
                kernel=profiled[row["impl"]],
            )  # fmt: skip
        label = "" if row["impl"] == "ours" else f" {row['impl']}"
        say(f"ncu {row['rows']}x{row['width']} {row['dtype']}{label}: {dram_line(row['dram'])}")


def _usable_ncu(device_type: str, tool: str | None) -> tuple[str, str] | dict[str, str]:
    """``(ncu executable, its version)``, or the :func:`absent` every row gets."""
    if device_type != "cuda":
        return absent(f"the device is {device_type}; Nsight Compute profiles CUDA kernels")
    tool = tool or shutil.which("ncu")
    if tool is None:
        return absent("ncu (Nsight Compute, part of the CUDA toolkit) is not on the PATH")
    try:
        return tool, ncu_version(tool)
    except NcuError as err:
        return absent(str(err))


def dram_line(dram: object) -> str:
    """One line about a ``dram`` record (figures, or why there are none)."""
    if not isinstance(dram, dict):
        return "no DRAM figures"
    if "absent" in dram:
        return f"no DRAM figures: {dram['absent']}"
    return (
        f"DRAM {float(dram['pct_of_peak']):.1f}% of peak, {int(dram['bytes_read']):,} bytes read, "
        f"{int(dram['bytes_written']):,} written ({', '.join(dram['kernels'])})"
    )
