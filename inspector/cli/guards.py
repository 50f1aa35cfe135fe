"""The command line's checks of where it writes, its one-line errors, and a run's hold on its
``--out`` folder and ``--session`` file.

A second ``check`` on the same ``--out`` or ``--session`` while the first runs is refused at once
with a line naming the option (exit 2), so two runs never mix receipts or lose a session's
history (the locks: :mod:`inspector.records.locks`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from inspector.records.locks import OUT_LOCK_NAME, held, session_lock_path
from inspector.records.paths import MAX_LINE_CHARS as MAX_LINE_CHARS
from inspector.records.paths import PathRefused, Role, checked_path, one_line
from inspector.records.paths import printable as printable


class UsageError(Exception):
    """Bad input or usage: printed as one line, exit 2."""


def fail_usage(message: str) -> NoReturn:
    raise UsageError(message)


def path_argument(flag: str, text: str | None, role: Role, *, parents: bool = False) -> Path:
    """A path from the command line, checked up front
    (:func:`inspector.records.paths.checked_path`).

    Raises:
        UsageError: ``FLAG: WHY``, one line (exit 2), before anything is written.
    """
    try:
        return checked_path(flag, "" if text is None else text, role, parents=parents)
    except PathRefused as exc:
        raise UsageError(str(exc)) from None


def check_session_target(path: Path) -> Any:
    """A session path to write: its folder exists; an existing file must be our session.

    Returns the existing session (its receipt history is carried on) or None.
    """
    from inspector.records.sessions.session import SessionError, load_session

    path_argument("--session", str(path), "file")
    if not path.exists():
        return None
    try:
        return load_session(path)
    except SessionError as exc:
        fail_usage(f"session: refusing to overwrite {path}: {one_line(exc)}")


@contextlib.contextmanager
def _exclusive(lock_path: Path, field: str, target: Path) -> Iterator[None]:
    with held(lock_path) as got:
        if not got:
            fail_usage(f"{field}: another run is writing {target}; wait for it or choose another")
        yield


@contextlib.contextmanager
def run_locks(out_dir: Path, session: Path | None) -> Iterator[None]:
    """Hold ``--out``'s folder (created here) and ``--session``'s file for one run.

    Raises:
        UsageError: another process holds either (checked before anything is written).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        stack.enter_context(_exclusive(out_dir / OUT_LOCK_NAME, "out", out_dir))
        if session is not None:
            stack.enter_context(_exclusive(session_lock_path(session), "session", session))
        yield


def session_input_keys(problem: Any) -> dict[str, Any]:
    """A session's own input as a receipt's ``input`` keys (dimensions, dtype, eps and the
    values' sha256), so that ``diff`` compares what the sessions hold, not only the receipts
    they carry (an input edited after its receipt differs from it)."""
    from inspector.records.receipts.format import values_sha256

    return {
        "rows": problem.rows,
        "width": problem.width,
        "row_stride": problem.row_stride,
        "dtype": problem.dtype,
        "eps": problem.eps,
        "x_sha256": values_sha256(problem.x, problem.dtype),
        "weight_sha256": values_sha256(problem.weight, problem.dtype),
    }


def with_rerun(report: Any, device: str) -> Any:
    """``report`` (a :class:`~inspector.records.receipts.verify.VerifyReport`) with the checks of
    ``verify --rerun`` appended (:mod:`inspector.cli.verify_rerun`)."""
    import dataclasses

    from inspector.cli.verify_rerun import rerun_checks
    from inspector.records.receipts.receipt import read_receipt

    extra = rerun_checks(read_receipt(report.json_path), device)
    return dataclasses.replace(report, checks=(*report.checks, *extra))
