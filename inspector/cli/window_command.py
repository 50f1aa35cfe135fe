"""``python main.py [--session FILE.h5] [--kernel FILE.py:FUNCTION] [--screenshot OUT.png]``:
the window, or a PNG of it (``--info`` and ``--reset``: :mod:`inspector.qt.app_info`). Qt is
imported on this path and nowhere else on the command line.

Usage problems (a missing session, a ``--screenshot`` that cannot be written - checked like every
output path, :mod:`inspector.records.paths` - a ``--kernel`` that names no file or no identifier)
raise ``ValueError`` or ``UsageError`` with one line; ``inspector.cli.entry`` prints it and exits
2.
Whether the kernel file really loads is answered by the window itself (in a child process, off the
GUI thread), or before the PNG is drawn. A window with no display to open on is one line and
exit 2, never Qt's abort.
"""

from __future__ import annotations

import sys
from typing import Any

from inspector.cli.guards import path_argument
from inspector.qt.app_info import display_problem
from inspector.records.paths import shown

EXIT_USAGE = 2


def check_window_args(session: str | None, screenshot: str | None, kernel: str | None) -> Any:
    """The ``--kernel`` parsed (a ``KernelSpec``; None without one); raise ``ValueError`` (one
    line) when the files named cannot be what they should."""
    if session is not None and not path_argument("--session", session, "read").is_file():
        raise ValueError(f"--session: {shown(session)} does not exist")
    if screenshot is not None:
        path_argument("--screenshot", screenshot, "file")
    if kernel is None:
        return None
    from kernels.sandbox.usercode import parse_kernel_spec

    return parse_kernel_spec(kernel)  # a KernelSpecError (a ValueError) names the part


def run_window(session: str | None, screenshot: str | None, kernel: Any = None) -> int:
    """The window (or a screenshot of it), with ``kernel`` (a ``KernelSpec``) loaded when
    given."""
    if screenshot is None:
        problem = display_problem()
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            return EXIT_USAGE
    try:
        from inspector.qt.app import run_app

        # The app imports Qt lazily too: a missing PySide6 can surface from run_app itself.
        return int(run_app(session, screenshot, kernel))
    except ImportError as exc:
        print(
            f"error: the window cannot start: {' '.join(str(exc).split())}. Headless commands "
            "work without Qt: check, bench, verify (see --help)",
            file=sys.stderr,
        )
        return EXIT_USAGE
