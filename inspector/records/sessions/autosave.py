"""Autosave: unsaved work kept beside its session (or in the cache folder) for crash recovery."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from inspector.records.atomic import move_aside
from inspector.records.sessions.session import Session, SessionError, save_session

AUTOSAVE_SUFFIX = ".autosave.h5"


def autosave_path(
    path: str | os.PathLike[str] | None, cache_dir: str | os.PathLike[str] | None = None
) -> Path:
    """Where unsaved work of the session at ``path`` is autosaved.

    Args:
        path: the session's file, or None for an untitled session.
        cache_dir: folder for untitled sessions (default ``$XDG_CACHE_HOME/rmsnorm-inspector``
            or ``~/.cache/rmsnorm-inspector``).

    Returns:
        ``.NAME.autosave.h5`` beside a saved session; ``untitled.autosave.h5`` in the cache
        folder for an untitled one.
    """
    if path is not None:
        target = Path(path)
        return target.with_name(f".{target.stem}{AUTOSAVE_SUFFIX}")
    if cache_dir is None:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        cache_dir = Path(base) / "rmsnorm-inspector"
    return Path(cache_dir) / f"untitled{AUTOSAVE_SUFFIX}"


def write_autosave(
    session: Session,
    path: str | os.PathLike[str] | None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """Save ``session`` atomically to its autosave file (never to ``path`` itself).

    Raises:
        SessionError: as :func:`save_session`.
    """
    target = autosave_path(path, cache_dir)
    if path is None:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SessionError(f"cannot autosave to {target}: {exc.strerror or exc}") from None
    save_session(target, session)
    return target


def recovery_candidate(
    path: str | os.PathLike[str] | None, cache_dir: str | os.PathLike[str] | None = None
) -> Path | None:
    """An autosave worth offering after a crash: it exists and is newer than ``path``.

    Returns:
        The autosave's path, or None. (Opening it can still fail: use :func:`load_session`.)
    """
    candidate = autosave_path(path, cache_dir)
    if not candidate.is_file():
        return None
    saved = Path(path) if path is not None else None
    if saved is not None and saved.is_file():
        newer = candidate.stat().st_mtime_ns > saved.stat().st_mtime_ns
        return candidate if newer else None
    return candidate


def discard_autosave(
    path: str | os.PathLike[str] | None, cache_dir: str | os.PathLike[str] | None = None
) -> None:
    """Remove the autosave (after a successful save, or when the user declines recovery)."""
    with contextlib.suppress(FileNotFoundError):
        autosave_path(path, cache_dir).unlink()


def set_aside(path: str | os.PathLike[str]) -> Path:
    """Rename an autosave that could not be opened to ``NAME.unreadable-SECONDS`` beside it,
    so recovery does not offer it again (and its bytes stay for whoever wants to look).

    Raises:
        OSError: the rename failed (the caller then removes it).
    """
    source = Path(path)
    return move_aside(source, f"{source.name}.unreadable-{int(time.time())}")
