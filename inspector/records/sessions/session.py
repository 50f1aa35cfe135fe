"""HDF5 session files: one inspection (input, results, toggles, timings, receipts) per ``.h5``.

Layout (``SCHEMA_VERSION`` 1)::

    /                     attrs: format, schema_version, created, tool
    /problem              attrs: dtype, eps, row_stride, rows, width, name
      x, weight           stored in the declared dtype, exactly: float32 / float16 datasets, or
                          for bfloat16 the uint16 bit patterns; attr ``dtype`` names it
    /mutants              model_names, model_on, kernel_names, kernel_on (the GUI's toggles);
                          attr batch_invariant: Run kernel's launch mode (absent: False)
    /results              (optional) attrs: mode, device, kernel_note, errors_source, passed,
                          failures (JSON list)
      scalar/             sum_squares, mean_square, rrms (float64), y
      tiled/              sum_squares, mean_square, rrms (float32), y; attrs block, poison
      kernel/             (optional) y, oob_addresses int64; attrs mode, device, block,
                          num_warps, and with stores oob_guard, oob_row_stride (the
                          addresses' frame; a file without them is read with the run's guard),
                          batch_invariant (the launch mode; absent: the default launch)
                          (every y is stored in the problem's dtype like x when that is exact,
                          else float64; its attr ``dtype`` says which)
      row_max_abs, row_max_rel          per row, the implementation under test vs scalar
      kill_matrix/<target>/             mutants, fixtures, categories, expected,
                                        baseline_actual, baseline_passed, detected (M x F)
    /bench                samples: one dataset per key (attr ``key``), raw distributions;
                          attr ``meta`` (JSON)
    /compile              dataset ``json`` (compile facts and IR texts)
    /versions             dataset ``json``
    /receipts             datasets ``json``, ``csv``: the receipts exactly as written
                          (long texts are gzip-compressed UTF-8 byte datasets, attr encoding)
      history/NNNN        attrs kind ("first_pass" | "counterexample"), created, reason;
                          datasets json, csv

The first 512 bytes are the HDF5 user block (HDF5 ignores it); it holds the *seal*
(:mod:`inspector.records.sessions.seal`): a magic line, ``schema_version``, ``payload_bytes`` and
``payload_sha256`` of everything after it. A reader checks the seal before HDF5 parses anything:
a truncated or corrupted file is refused with a clear message instead of reaching HDF5 (which
can hang on damaged metadata).

Writes are atomic (:func:`inspector.records.atomic.atomic_write`): a temp file in the same
folder, sealed, fsynced, then renamed. Reads open the file read-only and refuse (with
:class:`SessionError`) anything that is not a complete session of a schema this code knows;
they never modify the file. The groups are written and read by
:mod:`inspector.records.sessions.layout`; the data classes live in
:mod:`inspector.records.sessions.data` and are re-exported here.

Qt-free: numpy, h5py and the oracle only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from inspector.records.atomic import atomic_write
from inspector.records.sessions.data import (
    KillTable,
    ReceiptRecord,
    Session,
    SessionResults,
    now,
)
from inspector.records.sessions.hdf5 import Damaged
from inspector.records.sessions.layout import read_layout, write_layout
from inspector.records.sessions.room import estimated_bytes, file_size_errors, room_problem
from inspector.records.sessions.scan import scan_structure
from inspector.records.sessions.seal import (
    USERBLOCK_SIZE,
    Seal,
    payload_problem,
    read_seal,
    sealed,
)
from inspector.records.sessions.snapshot import SnapshotRefused, snapshot
from oracle.spec import ValidationError

__all__ = [
    "MIN_SCHEMA_VERSION",
    "SCHEMA_VERSION",
    "SESSION_FORMAT",
    "KillTable",
    "ReceiptRecord",
    "Session",
    "SessionError",
    "SessionResults",
    "load_session",
    "save_session",
]

SESSION_FORMAT = "rmsnorm-inspector session"
#: Written by this code. Readers accept MIN_SCHEMA_VERSION..SCHEMA_VERSION and refuse newer
#: files. Version 1 is the first layout; when it changes, bump this, keep a reader for the old
#: layout (a migration step) and commit an old file for the migration test.
SCHEMA_VERSION = 1
MIN_SCHEMA_VERSION = 1
TOOL = "rmsnorm-inspector"


class SessionError(Exception):
    """A session file could not be opened or saved; the message says which file and why."""


def save_session(path: str | os.PathLike[str], session: Session) -> None:
    """Write ``session`` to ``path`` atomically.

    A temp file in the same folder is written, sealed, fsynced and renamed over ``path``; on
    any failure the temp file is removed and an existing ``path`` is left exactly as it was.

    Args:
        path: the ``.h5`` file to (over)write.
        session: what to save; its problem must be valid.

    Raises:
        SessionError: the session is invalid, or the file cannot be written (and why).
    """
    target = Path(path)
    try:
        session.problem()
    except ValidationError as exc:
        raise SessionError(f"cannot save session to {target}: invalid input: {exc}") from None
    folder = target.parent
    if not folder.is_dir():
        raise SessionError(f"cannot save session to {target}: folder {folder} does not exist")
    if target.is_dir():
        raise SessionError(f"cannot save session to {target}: it is a folder")
    room = room_problem(folder, estimated_bytes(session))
    if room:
        previous = "; the previous file is unchanged" if target.exists() else ""
        raise SessionError(f"cannot save session to {target}: {room}{previous}")
    version = SCHEMA_VERSION

    def write(temp: Path) -> None:
        # Plain writes of bytes only: a disk that fills, a file-size limit, a failing device
        # is an OSError here, never inside HDF5's own write path.
        with temp.open("wb") as stream:
            stream.write(image)

    try:
        image = _session_image(session, version)
        with file_size_errors():
            atomic_write(target, write)
    except (OSError, ValueError, TypeError, RuntimeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        # HDF5 wraps the system's error in its own words ("... errno = 28, error message =
        # ..."): say the system's, the way any other failed write says it.
        found = re.search(r"errno = (\d+)", reason)
        if found:
            reason = os.strerror(int(found.group(1)))
        previous = "; the previous file is unchanged" if target.exists() else ""
        raise SessionError(f"cannot save session to {target}: {reason}{previous}") from None


def _session_image(session: Session, version: int) -> bytes:
    """The sealed file's bytes, built in memory: HDF5 never writes to the disk itself."""
    import io

    import h5py

    buffer = io.BytesIO()
    with h5py.File(buffer, "w", userblock_size=USERBLOCK_SIZE) as root:
        root.attrs["format"] = SESSION_FORMAT
        root.attrs["schema_version"] = version
        root.attrs["created"] = now()
        root.attrs["tool"] = TOOL
        write_layout(root, session)
    return sealed(buffer.getvalue(), version)


def load_session(
    path: str | os.PathLike[str],
    *,
    isolated: bool = True,
    shown_as: str | os.PathLike[str] | None = None,
) -> Session:
    """Open a session file read-only and return its contents.

    The file is untrusted: its structure is scanned before any data is read
    (:func:`inspector.records.sessions.scan.scan_structure`), and with ``isolated`` a child
    process reads it whole first, so a crash inside the HDF5 library (a damaged, resealed file)
    or a read that never ends becomes a :class:`SessionError` instead of this process's end.
    Isolated, both reads go to one private copy of the file
    (:func:`inspector.records.sessions.snapshot.snapshot`), so a file put at the path between
    them is never read.

    Args:
        path: an ``.h5`` file written by :func:`save_session`.
        isolated: read it in a child process first (False: only in this one).
        shown_as: the name messages give the file (default ``path``; the child is handed the
            copy and the original's name).

    Returns:
        The session (its problem re-validated).

    Raises:
        SessionError: missing, not a regular file, too large, not HDF5, truncated or
            corrupted, not ours, written by a newer schema, or with datasets missing or
            inconsistent. The file is never modified.
    """
    source = Path(path)
    where = f"cannot open session {Path(shown_as) if shown_as is not None else source}"
    if not source.exists():
        raise SessionError(f"{where}: no such file")
    if not source.is_file():
        raise SessionError(f"{where}: not a regular file (a FIFO, a device or a folder)")
    if not isolated:
        return _read_here(source, where)
    try:
        with snapshot(source) as copy:
            _probe_in_child(copy, where, shown=str(shown_as or source))
            return _read_here(copy, where)
    except SnapshotRefused as exc:
        raise SessionError(f"{where}: {exc}") from None
    except OSError as exc:
        raise SessionError(f"{where}: {exc.strerror or exc}") from None


def _read_here(source: Path, where: str) -> Session:
    """:func:`load_session`'s read in this process: the seal, the structure, the data."""
    import h5py

    try:
        seal = read_seal(source)
        if seal is None:
            is_hdf5 = h5py.is_hdf5(str(source))
        else:
            _check_seal(source, seal, where)
    except OSError as exc:
        raise SessionError(f"{where}: {exc.strerror or exc}") from None
    if seal is None:
        if not is_hdf5:
            raise SessionError(f"{where}: not an HDF5 file (foreign, truncated or corrupted)")
        raise SessionError(
            f"{where}: an HDF5 file, but not an RMSNorm inspector session "
            "(no session header; foreign, or its header is damaged)"
        )
    try:
        with h5py.File(source, "r", locking=False) as root:
            _check_root(root, where)
            scan_structure(root)
            session = read_layout(root)
    except SessionError:
        raise
    except Damaged as exc:
        raise SessionError(f"{where}: damaged session: {exc}") from None
    except (OSError, KeyError, ValueError, TypeError, RuntimeError, ArithmeticError) as exc:
        raise SessionError(
            f"{where}: truncated or corrupted ({type(exc).__name__}: {exc})"
        ) from None
    try:
        session.problem()
    except ValidationError as exc:
        raise SessionError(f"{where}: invalid stored input: {exc}") from None
    return session


# A child's read of a whole session takes well under a second; a read that takes this long is
# blocked (a FIFO or a device behind the file) or thrashing.
PROBE_TIMEOUT_S = 60.0
_PROBE_REFUSED = 3  # the child's exit status for "refused, with the reason on stdout"


def _probe_in_child(source: Path, where: str, shown: str) -> None:
    """Read ``source`` whole in a child process (its messages naming the file ``shown``); a
    crash, a hang or a refusal there is a SessionError here (the child's own refusal message
    when it gave one)."""
    import signal
    import subprocess
    import sys

    from kernels.sandbox.bounded import run_bounded

    root = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    try:
        done = run_bounded(
            [sys.executable, "-m", "inspector.records.sessions.session", str(source), shown],
            timeout_s=PROBE_TIMEOUT_S,
            cwd=root,
            env=env,
            preloaded=True,
        )
    except subprocess.TimeoutExpired:
        raise SessionError(
            f"{where}: reading it did not finish within {PROBE_TIMEOUT_S:g} s "
            "(a FIFO or a device behind it?)"
        ) from None
    if done.returncode == 0:
        return
    said = done.stdout.strip()
    if done.returncode == _PROBE_REFUSED and said:
        raise SessionError(said[:2000])
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        raise SessionError(
            f"{where}: this file is damaged (the HDF5 library crashed reading it: {name})"
        )
    tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
    raise SessionError(f"{where}: reading it failed (exit {done.returncode}: {tail[0][:300]})")


def _probe_main(argv: list[str]) -> int:
    """``python -m inspector.records.sessions.session FILE [SHOWN_AS]``: :func:`load_session` in
    this process, its messages naming the file ``SHOWN_AS``."""
    try:
        load_session(argv[0], isolated=False, shown_as=argv[1] if len(argv) > 1 else None)
    except SessionError as exc:
        print(exc)
        return _PROBE_REFUSED
    return 0


def _version_problem(version: int) -> str | None:
    """Why this program cannot read a file of schema ``version``, or None when it can."""
    if version > SCHEMA_VERSION:
        return (
            f"written by a newer version (schema {version}; this program reads up to "
            f"{SCHEMA_VERSION}); update the inspector"
        )
    if version < MIN_SCHEMA_VERSION:
        return (
            f"schema {version} is older than any this program reads "
            f"({MIN_SCHEMA_VERSION}..{SCHEMA_VERSION})"
        )
    return None


def _check_seal(source: Path, fields: dict[str, str], where: str) -> None:
    """Refuse a newer/older schema, a truncated or a corrupted file, before HDF5 reads it."""
    try:
        seal = Seal.from_fields(fields)
    except (KeyError, ValueError):
        raise SessionError(f"{where}: its header is damaged") from None
    problem = _version_problem(seal.schema_version) or payload_problem(source, seal)
    if problem is not None:
        raise SessionError(f"{where}: {problem}")


def _check_root(root: Any, where: str) -> None:
    """Refuse an HDF5 file whose root attributes are not those of a session this code reads."""
    kind = root.attrs.get("format")
    if isinstance(kind, bytes):
        kind = kind.decode("utf-8", "replace")
    if kind != SESSION_FORMAT:
        raise SessionError(
            f"{where}: an HDF5 file, but not an RMSNorm inspector session "
            f"(format attribute {kind!r}, expected {SESSION_FORMAT!r})"
        )
    version = root.attrs.get("schema_version")
    if isinstance(version, np.generic):
        version = version.item()
    if not isinstance(version, int) or isinstance(version, bool):
        raise SessionError(f"{where}: schema_version {version!r} is not valid")
    problem = _version_problem(version)
    if problem is not None:
        raise SessionError(f"{where}: {problem}")


if __name__ == "__main__":
    import sys

    raise SystemExit(_probe_main(sys.argv[1:]))
