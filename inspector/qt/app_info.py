"""What ``python main.py --info`` and Help → About say (versions, device, where settings and
autosaves live), ``--reset`` (forget the window's settings), and whether a window can open
here at all (:func:`display_problem`)."""

from __future__ import annotations

import ctypes.util
import os
import platform
import sys

ORGANIZATION, APPLICATION = "rmsnorm-inspector", "inspector"

#: The shared libraries Qt's X11 plugin cannot start without, and their Debian/Ubuntu packages.
XCB_LIBRARIES = {
    "xcb-cursor": "libxcb-cursor0",
    "xcb-icccm": "libxcb-icccm4",
    "xcb-keysyms": "libxcb-keysyms1",
    "xkbcommon-x11": "libxkbcommon-x11-0",
}


def display_problem(environ: dict[str, str] | None = None) -> str | None:
    """Why the window cannot open here (one line), or None when it can.

    Only Linux is checked: there Qt picks X11 (xcb) or Wayland from the environment and aborts
    the process when neither is reachable or an X11 library is missing.
    """
    env = os.environ if environ is None else environ
    forced = env.get("QT_QPA_PLATFORM", "")
    if not sys.platform.startswith("linux") or (forced and not forced.startswith("xcb")):
        return None
    if env.get("WAYLAND_DISPLAY") and not forced:
        return None
    if not env.get("DISPLAY"):
        return (
            "no display: the window needs an X11 or Wayland session (DISPLAY and "
            "WAYLAND_DISPLAY are unset); without one use --screenshot OUT.png, or the headless "
            "commands check, bench, verify"
        )
    missing = [pkg for lib, pkg in XCB_LIBRARIES.items() if ctypes.util.find_library(lib) is None]
    if missing:
        return (
            f"the X11 window needs system packages that are not installed: {' '.join(missing)} "
            f"(Debian/Ubuntu: apt install {' '.join(missing)})"
        )
    return _unreachable(env["DISPLAY"])


#: How long the display's server may take to accept a connection before it counts as gone.
DISPLAY_TIMEOUT_S = 5.0


def _unreachable(display: str) -> str | None:
    """Why the X server of ``display`` cannot be reached (Qt would abort the process: "could not
    connect to display"), tried with libxcb itself; None when it answers, or when libxcb cannot
    be loaded to ask (Qt then says what is missing)."""
    import threading

    path = ctypes.util.find_library("xcb")
    try:
        xcb = ctypes.CDLL(path) if path else None
    except OSError:
        xcb = None
    if xcb is None:
        return None
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    answer: list[int] = []

    def connect() -> None:
        connection = xcb.xcb_connect(display.encode(errors="replace"), None)
        answer.append(int(xcb.xcb_connection_has_error(connection)))
        xcb.xcb_disconnect(connection)

    probe = threading.Thread(target=connect, name="display-probe", daemon=True)
    probe.start()
    probe.join(DISPLAY_TIMEOUT_S)
    shown = ascii(display)[1:-1][:80]
    if not answer:
        return f"the display {shown} (DISPLAY) did not answer within {DISPLAY_TIMEOUT_S:g} s"
    if answer[0]:
        return (
            f"cannot connect to the display {shown} (DISPLAY): no X server answers there; "
            "start one, or use --screenshot OUT.png, or the headless commands check, bench, verify"
        )
    return None


def _settings():
    from PySide6.QtCore import QSettings

    return QSettings(ORGANIZATION, APPLICATION)


def info_lines() -> list[str]:
    """``--info``: versions, the kernel floor's device, and where settings and autosaves live."""
    from importlib import metadata

    from inspector.records.sessions.autosave import autosave_path

    lines = [f"python: {platform.python_version()} ({sys.executable})"]
    for package in ("numpy", "h5py", "PySide6-Essentials", "pyqtgraph", "torch", "triton"):
        try:
            version = metadata.version(package)
        except metadata.PackageNotFoundError:
            version = "not installed"
        lines.append(f"{package}: {version}")
    try:
        import kernels

        lines.append(f"kernel mode: {kernels.MODE}")
        lines.append(f"device: {kernels.device_description()}")
    except Exception as exc:  # the window works on the oracle alone
        lines.append(f"device: no kernel floor ({type(exc).__name__}: {exc})")
    try:
        lines.append(f"settings: {_settings().fileName()}")
    except ImportError as exc:
        lines.append(f"settings: unavailable ({exc})")
    lines.append(f"autosave (untitled sessions): {autosave_path(None)}")
    lines.append("autosave (saved sessions): beside the session file")
    lines.append(f"display: {display_problem() or 'available'}")
    return lines


def reset_settings() -> str:
    """``--reset``: forget the window's settings (recent files, geometry); returns the file."""
    settings = _settings()
    settings.clear()
    settings.sync()
    return str(settings.fileName())
