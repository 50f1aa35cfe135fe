"""Measure the window on the largest supported problems (rows x row_stride <= 4,194,304).

For each shape, in a real ``InspectorWindow`` rendered offscreen: set the input (held as an
array), let the analysis (scalar reference + lane model, on the worker) fill the views and the
downsampled lane grid, run the model-only check on the worker, save the session, and reopen it
in a second window. Each stage reports its wall time, the process's peak RSS after it
(``resource.getrusage``), and the longest pause of the GUI event loop while it ran (a 5 ms
``QTimer``; a pause is time the window could not repaint or take input).

Usage::

    python scripts/measure_scale.py [--shapes 4096x1024,64x65536] [--out DIR] [--json FILE]
                                    [--no-style]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np  # noqa: E402
from PySide6.QtCore import QEventLoop, QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from inspector.qt.stall import GapMeter, wait_until  # noqa: E402

DEFAULT_SHAPES = ((4096, 1024), (64, 65536))


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _rss_mib() -> float:
    try:
        with open("/proc/self/statm") as stream:
            pages = int(stream.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:  # not Linux: the peak is what we have
        return float("nan")


def measure_shape(
    app: QApplication, rows: int, width: int, folder: Path, timeout_s: float = 600.0
) -> dict:
    """All stages for one shape; returns {stage: {seconds, gui_max_stall_ms, ...}}."""
    from inspector.qt.widgets import dialogs
    from inspector.qt.window import InspectorWindow
    from inspector.records.sessions.session import load_session

    dialogs.show_error = lambda parent, title, message: print(f"[error] {title}: {message}")
    settings = QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)
    meter = GapMeter()
    loop = QEventLoop()
    stages: dict[str, dict] = {}

    def stage(name: str, action: Callable[[], None], done: Callable[[], bool]) -> None:
        meter.start()
        started = time.perf_counter()
        action()
        wait_until(loop, done, timeout_s)
        seconds = time.perf_counter() - started
        # Let queued repaints run, so their cost is charged to this stage.
        for _ in range(3):
            loop.processEvents()
        stages[name] = {
            "seconds": round(seconds, 3),
            "gui_max_stall_ms": meter.stop(),
            "peak_rss_mib": round(_peak_rss_mib(), 1),
            "rss_mib": round(_rss_mib(), 1),
        }
        print(f"  {name:<28} {stages[name]}", flush=True)

    window = InspectorWindow(demo=True, settings=settings, autosave_dir=str(folder), autosave_ms=0)
    window.show()
    loop.processEvents()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, width))
    weight = rng.uniform(-2.0, 2.0, width)

    def analysed() -> bool:
        return (
            window.state.problem is not None
            and window.state.tiled is not None
            and window.state.tiled.y.shape == (rows, width)
            and not window.runner.busy
        )

    stage(
        "set input + analyse + grid",
        lambda: window.input_panel.set_values(
            x=x, weight=weight, eps=1e-6, dtype="float32", label="scale"
        ),
        analysed,
    )
    image = window.grid.image
    grid_note = {
        "image_shape": list(np.asarray(image.states).shape) if image is not None else None,
        "counts": window.grid.counts.text(),
    }
    stage(
        "model-only check (worker)",
        lambda: (window.kernel_in_check.setChecked(False), window.run_check()),
        lambda: window.state.check_result is not None and not window.runner.busy,
    )
    if not window.state.check_result.passed:
        raise RuntimeError(f"check failed: {window.state.check_result.failures}")
    path = folder / f"scale_{rows}x{width}.h5"
    saved: list[bool] = []
    stage("save session", lambda: saved.append(window.files.write_session(str(path))), lambda: True)
    if not saved[0]:
        raise RuntimeError("save failed: " + window.status_line.text())
    window.state.dirty = False
    window.shutdown()
    window.close()

    other = InspectorWindow(demo=False, settings=settings, autosave_dir=str(folder), autosave_ms=0)
    other.show()
    loop.processEvents()
    opened: list[bool] = []

    def reopened() -> bool:
        return (
            bool(opened)
            and other.state.tiled is not None
            and other.state.tiled.y.shape == (rows, width)
            and not other.runner.busy
        )

    stage(
        "open session + analyse",
        lambda: opened.append(other.files.open_session(str(path), interactive=False)),
        reopened,
    )
    if not np.array_equal(np.asarray(other.state.problem.x), np.asarray(window.state.problem.x)):
        raise RuntimeError("the reopened session differs")
    started = time.perf_counter()
    load_session(path)
    load_only = time.perf_counter() - started
    other.state.dirty = False
    other.shutdown()
    other.close()
    loop.processEvents()
    return {
        "rows": rows,
        "width": width,
        "elements": rows * width,
        "file_mib": round(path.stat().st_size / 2**20, 2),
        "load_session_only_s": round(load_only, 3),
        "grid": grid_note,
        "stages": stages,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(f"{r}x{w}" for r, w in DEFAULT_SHAPES))
    parser.add_argument("--out", default=None, help="folder for the session files (temp)")
    parser.add_argument("--json", default=None, help="write the figures here as JSON")
    parser.add_argument(
        "--no-style", action="store_true", help="Qt's default look (as the tests run)"
    )
    args = parser.parse_args(argv)
    shapes = [tuple(int(n) for n in item.split("x")) for item in args.shapes.split(",")]
    app = QApplication.instance() or QApplication(sys.argv[:1])
    if not args.no_style:
        from inspector.qt.app import apply_style

        apply_style(app)  # what the user sees: stylesheet and antialiased plots (slower paint)
    with tempfile.TemporaryDirectory(prefix="measure_scale_") as scratch:
        folder = Path(args.out or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        report = {
            "style": "Qt default" if args.no_style else "the application's (apply_style)",
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
            },
            "shapes": [],
        }
        for rows, width in shapes:
            print(f"{rows} x {width} float32:", flush=True)
            report["shapes"].append(measure_shape(app, rows, width, folder))
        report["peak_rss_mib"] = round(_peak_rss_mib(), 1)
    text = json.dumps(report, indent=2)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
