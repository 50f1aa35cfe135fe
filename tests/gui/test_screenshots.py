"""Screenshot tests: each main view rendered offscreen, light and dark, against a baseline.

The window shows the demo input after a model-side check, row 1 selected, the stepper on the
rsqrt step and the committed benchmark record loaded, sized as on a 1920 x 1080 desktop,
with the clock frozen (the captions name times). Each view is compared with
``tests/gui/baselines/<scheme>_<view>.png``: the sizes must match exactly, and at most
``MAX_CHANGED`` of the pixels may differ by more than ``PIXEL_TOLERANCE`` in a channel (font
hinting and antialiasing move a few edge pixels between machines; a colour, a layout or a
missing glyph moves many).

Approval workflow (after pyqtgraph's ``image_testing``): a failing view writes what it drew and
a difference image to ``tests/gui/baselines/failed/`` (ignored by git). Look at them; if the new
look is right, run ``RMSNORM_INSPECTOR_UPDATE_BASELINES=1 python -m pytest
tests/gui/test_screenshots.py`` and commit the baselines it rewrote. A missing baseline fails
too, unless that variable is set.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QRect
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

BASELINES = Path(__file__).resolve().parent / "baselines"
FAILED = BASELINES / "failed"
RECORD = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "results.json"
UPDATE_VAR = "RMSNORM_INSPECTOR_UPDATE_BASELINES"
#: A pixel differs when one of its channels moved by more than this (0-255).
PIXEL_TOLERANCE = 48
#: A view fails when more than this fraction of its pixels differ.
MAX_CHANGED = 0.005
VIEWS = ("lane_grid", "stepper", "row_table", "kill_matrix", "benchmark")


def to_array(image: QImage) -> np.ndarray:
    """(height, width, 4) uint8 RGBA copy of ``image``."""
    image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    height, width = image.height(), image.width()
    data = np.frombuffer(image.constBits(), np.uint8, count=image.sizeInBytes())
    rows = data.reshape(height, image.bytesPerLine())[:, : width * 4]
    return rows.reshape(height, width, 4).copy()


def difference(actual: np.ndarray, expected: np.ndarray) -> tuple[str, np.ndarray | None]:
    """("", mask) when ``actual`` matches ``expected`` within the tolerance, else (why, mask)."""
    if actual.shape != expected.shape:
        return f"size {actual.shape[1]}x{actual.shape[0]}, baseline {expected.shape[1]}x" + (
            f"{expected.shape[0]}"
        ), None
    moved = np.abs(actual.astype(np.int16) - expected.astype(np.int16)).max(axis=2)
    changed = moved > PIXEL_TOLERANCE
    fraction = float(changed.mean())
    if fraction > MAX_CHANGED:
        return (
            f"{changed.sum()} of {changed.size} pixels ({fraction:.2%}) differ by more than "
            f"{PIXEL_TOLERANCE} (at most {MAX_CHANGED:.2%} may)"
        ), changed
    return "", changed


def _save(array: np.ndarray, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    height, width = array.shape[:2]
    image = QImage(array.tobytes(), width, height, width * 4, QImage.Format.Format_RGBA8888)
    assert image.save(str(path)), path


def check_against_baseline(array: np.ndarray, name: str) -> None:
    """Compare with the baseline ``name``; write the evidence of a failure; fail with why."""
    path = BASELINES / f"{name}.png"
    if os.environ.get(UPDATE_VAR) == "1":
        _save(array, path)
        return
    if not path.is_file():
        _save(array, FAILED / f"{name}.png")
        pytest.fail(f"no baseline {path.name}: see {FAILED / (name + '.png')}; {UPDATE_VAR}=1")
    why, changed = difference(array, to_array(QImage(str(path))))
    if why:
        _save(array, FAILED / f"{name}.png")
        if changed is not None:
            diff = np.zeros_like(array)
            diff[..., 3] = 255
            diff[changed] = (255, 0, 255, 255)
            _save(diff, FAILED / f"{name}_diff.png")
        pytest.fail(f"{name}: {why}; what it drew is in {FAILED}; if it is right, {UPDATE_VAR}=1")


@pytest.fixture(params=["light", "dark"])
def rendered(request, qtbot, settings, tmp_path, monkeypatch: pytest.MonkeyPatch):
    """(scheme, {view name: RGBA array}) of a window built in ``scheme``."""
    from inspector.check import pipeline
    from inspector.qt.app import apply_style
    from inspector.qt.menus import fit_to_screen
    from inspector.qt.window import InspectorWindow

    scheme = request.param
    app = QApplication.instance()
    monkeypatch.setenv("RMSNORM_INSPECTOR_THEME", scheme)
    monkeypatch.setattr(time, "strftime", lambda fmt, *args: "12:00:00")
    apply_style(app)
    window = InspectorWindow(demo=True, settings=settings, autosave_dir=str(tmp_path / "auto"))
    qtbot.addWidget(window)
    try:
        fit_to_screen(window, QRect(0, 0, 1920, 1080))
        window.show()
        qtbot.waitExposed(window)
        qtbot.waitUntil(lambda: not window.runner.busy, timeout=30000)
        window.apply_check_result(
            pipeline.run_check(window.state.problem, pipeline.CheckConfig(run_kernel=False))
        )
        assert window.files.open_bench_record(str(RECORD))
        window.select_row(1)
        window.stepper.go_to(len(window.stepper.steps) - 3)
        views = {
            "lane_grid": window.grid,
            "stepper": window.stepper,
            "row_table": window.row_table,
            "kill_matrix": window.kill_view,
            "benchmark": window.bench_view,
        }
        arrays = {}
        for name, view in views.items():
            if window.tabs.indexOf(view) >= 0:
                window.tabs.setCurrentWidget(view)
            for _ in range(5):
                QApplication.processEvents()
            arrays[name] = to_array(view.grab().toImage())
        yield scheme, arrays
    finally:
        window.state.dirty = False
        window.shutdown()
        window.close()
        monkeypatch.delenv("RMSNORM_INSPECTOR_THEME")
        apply_style(app)


@pytest.mark.parametrize("view", VIEWS)
def test_each_view_matches_its_baseline(rendered, view) -> None:
    scheme, arrays = rendered
    check_against_baseline(arrays[view], f"{scheme}_{view}")


def test_the_comparison_fails_on_another_theme_and_on_a_changed_block(rendered) -> None:
    """The tolerance lets through edge pixels, never a different look: a view drawn in the
    other scheme fails, and so does the same view with a block of twice the tolerated share of
    its pixels inverted (a recoloured legend, a missing row of cells)."""
    scheme, arrays = rendered
    other = "dark" if scheme == "light" else "light"
    for view in VIEWS:
        baseline = to_array(QImage(str(BASELINES / f"{other}_{view}.png")))
        assert difference(arrays[view], baseline)[0], view
        same = to_array(QImage(str(BASELINES / f"{scheme}_{view}.png")))
        assert not difference(same, same)[0]
        side = int(np.ceil(np.sqrt(2 * MAX_CHANGED * same.shape[0] * same.shape[1])))
        changed = same.copy()
        changed[:side, :side, :3] = np.where(changed[:side, :side, :3] < 128, 255, 0)
        assert "pixels" in difference(changed, same)[0], view


def test_the_window_renders_with_the_fonts_shipped_under_tests(qapp) -> None:
    """Fontconfig sees tests/fonts only (tests/conftest.py): the generic families the window
    asks for resolve to those DejaVu files, whatever fonts the machine has installed."""
    from PySide6.QtGui import QFont, QFontDatabase, QFontInfo

    shipped = {"DejaVu Sans", "DejaVu Sans Mono"}
    assert shipped <= set(QFontDatabase.families())
    # Qt lists fontconfig's generic names too; each resolves to a shipped family.
    assert {QFontInfo(QFont(family)).family() for family in QFontDatabase.families()} == shipped
    fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    assert QFontInfo(fixed).family() == "DejaVu Sans Mono"
    assert QFontInfo(QApplication.font()).family() == "DejaVu Sans"
    assert QFontInfo(QFont("monospace")).family() == "DejaVu Sans Mono"
