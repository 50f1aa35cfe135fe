"""The one atomic write: all or nothing, no temp file left behind, the mode of a plain open."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from inspector.records import atomic

RECORDS = Path(atomic.__file__).resolve().parent


@pytest.fixture
def umask_027():
    previous = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(previous)


def _temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix == ".tmp")


def test_new_file_gets_the_mode_of_a_plain_open(tmp_path, umask_027):
    target = tmp_path / "out.txt"
    atomic.atomic_write_text(target, "one\r\ntwo\n")
    assert target.read_bytes() == b"one\r\ntwo\n"  # newlines untranslated
    assert target.stat().st_mode & 0o777 == 0o640 == atomic.default_file_mode()
    assert _temp_files(tmp_path) == []


def test_writer_that_raises_leaves_the_previous_file_and_no_temp(tmp_path, umask_027):
    target = tmp_path / "out.bin"
    target.write_bytes(b"previous")
    target.chmod(0o604)

    def half_then_fail(temp: Path) -> None:
        temp.write_bytes(b"half")
        raise RuntimeError("writer failed")

    with pytest.raises(RuntimeError, match="writer failed"):
        atomic.atomic_write(target, half_then_fail)
    assert target.read_bytes() == b"previous"
    assert target.stat().st_mode & 0o777 == 0o604
    assert _temp_files(tmp_path) == []


def test_failed_rename_leaves_the_previous_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "out.txt"
    target.write_text("previous", encoding="utf-8")

    def full_disk(source, destination):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        atomic.atomic_write_text(target, "new")
    assert target.read_text(encoding="utf-8") == "previous"
    assert _temp_files(tmp_path) == []


def test_replacing_a_file_is_complete(tmp_path):
    target = tmp_path / "out.txt"
    atomic.atomic_write_text(target, "old and longer")
    atomic.atomic_write_text(target, "new")
    assert target.read_text(encoding="utf-8") == "new"
    assert _temp_files(tmp_path) == []


def test_no_other_records_module_writes_a_file_its_own_way():
    """Receipts and sessions publish files only through ``atomic_write``."""
    for path in sorted(RECORDS.glob("*.py")):
        if path.name == "atomic.py":
            continue
        source = path.read_text(encoding="utf-8")
        for call in ("mkstemp", "os.replace", "os.rename", "os.fsync", "os.chmod"):
            assert call not in source, f"{path.name} calls {call}"


def test_replacing_keeps_the_targets_mode(tmp_path, umask_027):
    target = tmp_path / "receipt.json"
    target.write_text("old")
    target.chmod(0o600)
    atomic.atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o600


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path):
    real = tmp_path / "store" / "session.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "session.json"
    link.symlink_to(real)
    atomic.atomic_write_text(link, "new")
    assert link.is_symlink()
    assert real.read_text() == "new"
    assert sorted(p.name for p in real.parent.iterdir()) == ["session.json"]


def test_temps_of_writers_that_are_gone_are_removed_and_live_ones_kept(tmp_path):
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    dead_pid = int(gone.stdout)
    target = tmp_path / "receipt.csv"
    stale = tmp_path / f".receipt.csv.{dead_pid}.abc123.tmp"
    live = tmp_path / f".receipt.csv.{os.getpid()}.xyz789.tmp"
    other = tmp_path / f".other.csv.{dead_pid}.abc123.tmp"
    for path in (stale, live, other):
        path.write_text("half")
    atomic.atomic_write_text(target, "a,b\n")
    assert not stale.exists()  # its writer is gone: a crashed save's leftover
    assert live.exists()  # a writer still running (here: this process) keeps its temp
    assert other.exists()  # another target's temps are that target's business
    assert target.read_text() == "a,b\n"
