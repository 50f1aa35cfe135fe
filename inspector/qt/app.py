"""Application entry: ``run_app(session_path, screenshot, kernel)`` (``main.py`` calls it).

GUI mode opens the window (with the given session, else the demo input), loading ``kernel``
(``FILE.py:FUNCTION``) on the worker once it shows. Screenshot mode builds the same window
offscreen, loads the kernel first (in its child process; a file that is not a kernel exits 2),
runs the model-side check synchronously so every view holds real data, renders the window to a
PNG and returns 0.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inspector.records.paths import one_line, shown

if TYPE_CHECKING:  # Qt is imported lazily: ``main.py check`` never loads it
    from PySide6.QtWidgets import QApplication

    from inspector.qt.window import InspectorWindow

RESOURCES = Path(__file__).resolve().parents[2] / "resources"


def _ensure_app(offscreen: bool) -> QApplication:
    if offscreen and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv[:1])
        app.setApplicationName("RMSNorm Kernel Inspector")
        app.setOrganizationName("rmsnorm-inspector")
        hints = app.styleHints()
        if hasattr(hints, "colorSchemeChanged"):  # the desktop switched light/dark: follow it
            hints.colorSchemeChanged.connect(lambda *_: apply_style(app))
    apply_style(app)
    return app


def color_scheme(app: QApplication) -> str:
    """ "light" or "dark": the desktop's scheme (Qt >= 6.5), dark when it says neither.

    ``RMSNORM_INSPECTOR_THEME=light|dark`` overrides it (screenshots, tests).
    """
    forced = os.environ.get("RMSNORM_INSPECTOR_THEME", "").strip().lower()
    if forced in ("light", "dark"):
        return forced
    from PySide6.QtCore import Qt

    hints = app.styleHints()
    scheme = hints.colorScheme() if hasattr(hints, "colorScheme") else None
    return "light" if scheme == Qt.ColorScheme.Light else "dark"


def apply_style(app: QApplication) -> None:
    """Load ``resources/style.qss`` in the desktop's colour scheme (missing file: Qt's look)."""
    import pyqtgraph as pg
    from PySide6.QtCore import QDir

    from inspector.qt.theme import plot_foreground, themed_qss

    QDir.setSearchPaths("icons", [str(RESOURCES / "icons")])  # the sheet's url(icons:...)
    scheme = color_scheme(app)
    pg.setConfigOptions(antialias=True, foreground=plot_foreground(scheme))
    qss = RESOURCES / "style.qss"
    if qss.is_file():
        app.setStyleSheet(themed_qss(qss.read_text(encoding="utf-8"), scheme))
    app.setProperty("color_scheme", scheme)
    icon = RESOURCES / "icons" / "app.svg"
    if icon.is_file():
        from PySide6.QtGui import QIcon

        app.setWindowIcon(QIcon(str(icon)))


def build_window(session_path: str | None = None, *, warm_jobs: bool = True) -> InspectorWindow:
    """Create the main window (a QApplication must exist); ``warm_jobs``: start the job
    process as the window opens (a screenshot runs no job and starts none)."""
    import PySide6  # noqa: F401  (bind pyqtgraph to PySide6 first)

    from inspector.qt.window import InspectorWindow

    window = InspectorWindow(demo=session_path is None, warm_jobs=warm_jobs)
    demo = RESOURCES / "demo_session.h5"
    if session_path is None and demo.is_file():
        try:  # the bundled demo, opened untitled; the built-in fixture if it cannot be read
            window.files.open_session(str(demo), interactive=False, as_template=True)
        except Exception as exc:
            window.status_line.setText(f"demo session unavailable ({exc}); showing a fixture")
    if session_path is not None:
        try:
            window.files.open_session(session_path, interactive=False)
        except Exception:
            window.shutdown()
            window.deleteLater()
            raise
    return window


def render_screenshot(window: InspectorWindow, path: str, *, run_check: bool = True) -> None:
    """Fill the views (model-side check, synchronously) and save the window, sized as on a
    1920 x 1080 desktop, as a PNG (encoded in memory, then written atomically).

    Raises:
        OSError: the PNG cannot be written; ``path`` is left as it was.
    """
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRect
    from PySide6.QtWidgets import QApplication

    from inspector.check import pipeline
    from inspector.qt.menus import fit_to_screen
    from inspector.records.atomic import atomic_write

    fit_to_screen(window, QRect(0, 0, 1920, 1080))  # as on a full-HD desktop, whatever screen
    window.show()
    QApplication.processEvents()
    problem = window.state.problem
    if run_check and problem is not None and window.state.session_results is None:
        window.apply_check_result(
            pipeline.run_check(problem, pipeline.CheckConfig(run_kernel=False))
        )
    window.select_row(min(1, problem.rows - 1) if problem else 0)
    window.stepper.go_to(len(window.stepper.steps) - 3)  # the rsqrt step: the row's rrms
    for _ in range(5):
        QApplication.processEvents()
    png = QByteArray()
    buffer = QBuffer(png)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not window.grab().save(buffer, "PNG"):
        raise OSError(f"could not encode the window as PNG for {path}")
    buffer.close()
    data = png.data()

    def write(temp: Path) -> None:
        with temp.open("wb") as stream:
            stream.write(data)

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, write)  # a failed write (a full disk) leaves no half PNG


def load_kernel_now(window: InspectorWindow, kernel: Any) -> None:
    """Load ``kernel`` (a ``KernelSpec``) before anything is drawn (the screenshot's way).

    Raises:
        kernels.sandbox.usercode.KernelSpecError: the file is not a kernel (the message says why).
    """
    from inspector.check.user_kernel import check_loadable

    window.kernels.loaded(check_loadable(kernel))


def run_app(
    session_path: str | None = None, screenshot: str | None = None, kernel: Any = None
) -> int:
    """Open the GUI, or render the main window to ``screenshot`` and return 0.

    Args:
        session_path: an HDF5 session to open (None: the demo input).
        screenshot: a PNG path; when given, nothing is shown interactively.
        kernel: a user's kernel ``FILE.py:FUNCTION`` to prove (None: the bundled kernel).

    Returns:
        The process exit code.
    """
    app = _ensure_app(offscreen=screenshot is not None)
    try:
        window = build_window(session_path, warm_jobs=screenshot is None)
    except Exception as exc:
        why = one_line(f"--session: cannot open {shown(session_path)}: {exc}")
        print(f"error: {why}", file=sys.stderr)
        return 2
    if screenshot is not None:
        try:
            if kernel is not None:
                try:
                    load_kernel_now(window, kernel)
                except ValueError as exc:
                    print(f"error: {one_line(exc)}", file=sys.stderr)
                    return 2
            try:
                render_screenshot(window, screenshot)
            except OSError as exc:  # a full disk, a file system that fails the write
                why = f"--screenshot: cannot write {shown(screenshot)}: {exc.strerror or exc}"
                print(f"error: {one_line(why)}", file=sys.stderr)
                return 2
        finally:
            window.state.dirty = False
            window.shutdown()
            window.close()
            window.deleteLater()
        return 0
    window.show()
    from PySide6.QtCore import QTimer

    QTimer.singleShot(0, window.files.offer_recovery)  # unsaved work from a crashed run
    if kernel is not None:
        QTimer.singleShot(0, lambda: window.kernels.load_spec(kernel))
    return int(app.exec())
