"""Every module of ``inspector.records`` imports without Qt (they run headless, in the CLI)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import inspector.records

ROOT = Path(__file__).resolve().parents[2]


def test_records_import_no_qt():
    modules = pkgutil.walk_packages(inspector.records.__path__, "inspector.records.")
    names = [module.name for module in modules]
    assert {"inspector.records.receipts.receipt", "inspector.records.sessions.session"} <= set(
        names
    )
    code = (
        f"import sys, importlib; [importlib.import_module(n) for n in {names!r}]; "
        "print('\\n'.join(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = {line.split(".")[0] for line in done.stdout.splitlines()}
    assert not loaded & {"PySide6", "pyqtgraph", "shiboken6"}, sorted(loaded)
