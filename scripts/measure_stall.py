"""The window's longest event-loop pause while its heavy jobs run, with busy cores beside it.

In a real ``InspectorWindow`` (offscreen unless a display is given), for each job placement
(``child``: the host process, the default; ``thread``: the worker thread in the window's
process, ``RMSNORM_INSPECTOR_JOBS=thread``), run what a user clicks: Run check (with the
kernel), Run kernel, the compiler output of the input's signature, and on a CUDA machine
Benchmark on one shape set. Each stage reports its wall time, the longest pause of the GUI
event loop (a 5 ms ``QTimer``: time the window could not repaint or take input) and every pause
over 50 ms. ``--busy N`` starts N spinning processes first (the load of a machine doing other
work) and ends them after. Each placement starts from a cold job process and a fresh Triton
cache, so both pay the same compiles. The record (JSON, with versions, device and load) is
written after every stage, so a run cut short still leaves what it measured.

Usage::

    python scripts/measure_stall.py [--busy 2] [--placements child,thread] [--json FILE]
                                    [--screenshots DIR] [--bench-set launch_bound]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

from PySide6.QtCore import QEventLoop, QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from inspector.jobs import host  # noqa: E402
from inspector.qt.stall import GapMeter, wait_until  # noqa: E402

SPIN = "while True: pass"


def measure_placement(placement: str, args: argparse.Namespace, record: dict) -> None:
    """Every stage under one placement, appended to ``record["runs"]`` as it finishes."""
    from inspector.qt.widgets import dialogs
    from inspector.qt.window import InspectorWindow

    os.environ[host.PLACEMENT_VAR] = placement
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"stall-triton-{placement}-")
    host.POOL.close_all()  # a cold job process with the fresh cache
    dialogs.show_error = lambda parent, title, message: print(f"[error] {title}: {message}")
    folder = Path(tempfile.mkdtemp(prefix="stall-"))
    settings = QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)
    meter, loop = GapMeter(), QEventLoop()
    run: dict = {"placement": placement, "stages": {}}
    record["runs"].append(run)
    window = InspectorWindow(demo=True, settings=settings, autosave_dir=str(folder), autosave_ms=0)
    window.resize(1920, 1080)
    window.show()
    wait_until(loop, lambda: not window.runner.busy, args.timeout)

    def stage(name: str, action: Callable[[], bool], done: Callable[[], bool]) -> None:
        meter.start()
        started = time.perf_counter()
        if not action():
            raise RuntimeError(f"{name} did not start")
        wait_until(loop, lambda: not window.runner.busy and done(), args.timeout)
        seconds = time.perf_counter() - started
        for _ in range(3):  # queued repaints are charged to this stage
            loop.processEvents()
        run["stages"][name] = {
            "seconds": round(seconds, 3),
            "gui_max_gap_ms": meter.stop(),
            "gaps_over_50ms": list(meter.gaps_ms),
            "verdict": window.verdict.text() if name == "run check" else "",
            "status": window.status_line.text(),
        }
        print(f"  {placement:<6} {name:<18} {run['stages'][name]}", flush=True)
        if args.screenshots:
            shots = Path(args.screenshots)
            shots.mkdir(parents=True, exist_ok=True)
            window.grab().save(str(shots / f"{placement}_{name.replace(' ', '_')}.png"))
        Path(args.json).write_text(json.dumps(record, indent=2) + "\n")

    window.kernel_in_check.setChecked(True)
    stage("run check", window.run_check, lambda: window.state.check_result is not None)
    stage("run kernel", window.run_kernel, lambda: window.state.kernel_run is not None)
    target = "" if window.bench_view.available else "sm_90"
    stage("compiler output", lambda: window.request_compile(target), lambda: True)
    if window.bench_view.available and args.bench_set:
        window.bench_view.shape_combo.setCurrentText(args.bench_set)
        stage("benchmark", window.run_benchmark, lambda: True)
    window.state.dirty = False
    window.shutdown()
    window.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=2, help="spinning processes beside it")
    parser.add_argument("--placements", default="child,thread")
    parser.add_argument("--json", default="stall.json")
    parser.add_argument("--screenshots", default="")
    parser.add_argument("--bench-set", default="launch_bound")
    parser.add_argument("--timeout", type=float, default=400.0, help="seconds per stage")
    args = parser.parse_args(argv)
    app = QApplication.instance() or QApplication([])
    from inspector.jobs import tasks

    env = tasks.kernel_environment()
    record = {
        "what": "longest GUI event-loop pause per stage (scripts/measure_stall.py)",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "busy_processes": args.busy,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "qt_platform": app.platformName(),
        "mode": env["mode"],
        "device": env["device"],
        "versions": env["versions"],
        "runs": [],
    }
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
    try:
        for placement in args.placements.split(","):
            measure_placement(placement.strip(), args, record)
    finally:
        for spinner in spinners:
            spinner.kill()
        host.POOL.close_all()
    Path(args.json).write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
