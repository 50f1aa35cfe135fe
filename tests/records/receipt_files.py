"""Helpers of the verify tests: forge a written receipt (its JSON changed in place) and read the
problems ``verify`` finds in it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspector.records.receipts import verify


def forge(path: Path, change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """Apply ``change`` to the receipt JSON at ``path`` and write it back; the changed data."""
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    return data


def problems(path: Path) -> str:
    """The problems verify finds in the receipt at ``path`` (it must find some), joined."""
    report = verify.verify_receipts(path)
    assert not report.ok
    return " | ".join(report.problems)
