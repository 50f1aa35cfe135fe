"""Every path on the command line is checked up front by one function
(:func:`inspector.records.paths.checked_path`): an empty path, a name or path past the system's
bound, a symlink loop, a place under /proc or /sys, a folder where a file is wanted (and the
reverse), a FIFO or a device, a folder that cannot be written - each is one line naming the
option and the reason, exit 2, and nothing is written. Session locks follow the file, not its
spelling."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from inspector.cli import entry
from inspector.cli.guards import run_locks
from inspector.records import paths
from inspector.records.atomic import TEMP_NAME_EXTRA, atomic_write_text
from inspector.records.locks import session_lock_path

ROOT = Path(__file__).resolve().parents[2]
NAME_MAX = os.pathconf("/", "PC_NAME_MAX")
PATH_MAX = os.pathconf("/", "PC_PATH_MAX") - 1  # the bound counts the closing NUL


@pytest.fixture
def no_window(monkeypatch) -> list[tuple]:
    """``run_app`` replaced: a path refused up front never reaches the window."""
    calls: list[tuple] = []
    fake = types.ModuleType("inspector.qt.app")
    fake.run_app = lambda *args: calls.append(args) or 0
    monkeypatch.setitem(sys.modules, "inspector.qt.app", fake)
    return calls


def _refused(argv: list[str], capsys, *words: str) -> str:
    """``argv`` exits 2 with one stderr line, ``error: FLAG: WHY``, holding ``words``."""
    assert entry.main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error: ")
    for word in words:
        assert word in lines[0]
    assert captured.out == ""
    return lines[0]


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _check(out: str, *more: str) -> list[str]:
    return ["check", "--model-only", "--quiet", "--out", out, *more]


def _every_command(path: str, folder: Path) -> list[list[str]]:
    """One command line per place a path is given, each with ``path`` there."""
    receipt = str(folder / "r.json")
    return [
        _check(path),
        _check(str(folder / "o"), "--session", path),
        ["verify", path],
        ["verify", receipt, path],
        ["diff", path, receipt],
        ["diff", receipt, path],
        ["coverage", "--out", path],
        ["mutate", "--out", path],
        ["bench", "--out", path],
        ["--screenshot", path],
        ["--session", path],
    ]


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_path_is_refused_by_name_everywhere(
    empty, tmp_path, capsys, monkeypatch, no_window
) -> None:
    (tmp_path / "r.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    for argv in _every_command(empty, tmp_path):
        line = _refused(argv, capsys, ": empty; expected a")
        flag = line.split(": ")[1]
        assert flag in argv or flag in ("RECEIPT.json", "RECEIPT.csv", "A", "B"), line
    assert _files(tmp_path) == ["r.json"]
    assert no_window == []


def _path_of(folder: Path, size: int, last: int) -> Path:
    """A path under ``folder`` whose absolute form is ``size`` bytes, its last name at most
    ``last`` bytes (the folders between are 200 bytes each)."""
    path = folder
    while (remaining := size - len(os.fsencode(str(path))) - 1) > last:
        path = path / ("d" * max(1, min(200, remaining - 1 - last)))
    path = path / ("f" * remaining)
    assert len(os.fsencode(str(path))) == size
    return path


def test_a_folder_name_of_name_max_bytes_is_taken_and_one_more_is_refused(tmp_path, capsys) -> None:
    at_bound = tmp_path / ("a" * NAME_MAX)
    assert paths.checked_path("--out", str(at_bound), "folder") == at_bound
    at_bound.mkdir()  # the bound is the file system's own
    past = str(tmp_path / ("a" * (NAME_MAX + 1)))
    _refused(_check(past), capsys, "--out: the name ", f"is {NAME_MAX + 1} bytes", "allows 255")
    assert _files(tmp_path) == [at_bound.name]


def test_a_file_name_leaves_room_for_its_temp_file(tmp_path, capsys) -> None:
    # The atomic write's temp file is TEMP_NAME_EXTRA bytes longer than its target: a name at
    # the bound is written, one past it is refused before the run, not at its end.
    bound = NAME_MAX - TEMP_NAME_EXTRA
    at_bound = tmp_path / ("s" * (bound - 3) + ".h5")
    assert paths.checked_path("--session", str(at_bound), "file") == at_bound
    atomic_write_text(at_bound, "fits")
    past = tmp_path / ("s" * (bound - 2) + ".h5")
    for argv in (_check(str(tmp_path / "o"), "--session", str(past)), ["--screenshot", str(past)]):
        _refused(argv, capsys, ": the name ", f"is {bound + 1} bytes", f"may have {bound}")
    assert _files(tmp_path) == [at_bound.name]


def test_a_path_at_path_max_less_its_room_is_taken_and_one_more_byte_is_refused(
    tmp_path, capsys
) -> None:
    folder_bound = PATH_MAX - 1 - paths.INNER_NAME_RESERVE
    file_bound = PATH_MAX - TEMP_NAME_EXTRA
    for role, bound, argv in (
        ("folder", folder_bound, lambda p: _check(p)),
        ("file", file_bound, lambda p: ["coverage", "--out", p]),
    ):
        at_bound = _path_of(tmp_path, bound, 100)
        assert paths.checked_path("--out", str(at_bound), role, parents=True) == at_bound
        past = _path_of(tmp_path, bound + 1, 100)
        _refused(argv(str(past)), capsys, "--out: the path ", f"is {bound + 1} bytes", "at most")
    assert _files(tmp_path) == []


def test_a_5000_character_name_is_one_short_line(tmp_path, capsys) -> None:
    line = _refused(_check(str(tmp_path / ("n" * 5000))), capsys, "is 5000 bytes")
    assert len(line) < 300


def test_a_symlink_loop_is_refused_before_anything_is_written(tmp_path, capsys, no_window) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    out = tmp_path / "o"
    for argv in _every_command(str(loop), tmp_path) + _every_command(str(loop / "x"), tmp_path):
        _refused(argv, capsys, f"{loop}", "a loop of symbolic links")
    assert _files(tmp_path) == ["loop"]
    assert not out.exists()  # the session's loop is found before the run, not after it
    assert no_window == []


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (_check("/sys/kernel"), "/sys"),
        (["--screenshot", "/proc/x.png"], "/proc"),
        (["verify", "/proc/self/status"], "/proc"),
        (["coverage", "--out", "/proc/self/x.json"], "/proc"),
        (["mutate", "--out", "/sys/fs"], "/sys"),
    ],
)
def test_a_place_under_proc_or_sys_is_refused(argv, where, capsys, no_window) -> None:
    _refused(argv, capsys, f"is under {where}, the kernel's view of the system")


def test_a_folder_where_a_file_is_wanted_and_the_reverse_are_refused(
    tmp_path, capsys, no_window
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    plain = tmp_path / "plain"
    plain.write_text("x")
    for argv in (
        ["--screenshot", str(folder)],
        _check(str(tmp_path / "o"), "--session", str(folder)),
        ["coverage", "--out", str(folder)],
        ["verify", str(folder)],
    ):
        _refused(argv, capsys, f"{folder} is a folder; expected a regular file")
    for argv in (
        _check(str(plain)),
        ["mutate", "--out", str(plain)],
        ["bench", "--out", str(plain)],
    ):
        _refused(argv, capsys, "--out: ", f"{plain} exists and is not a folder")
    _refused(_check(str(plain / "o")), capsys, "a part of the path is a file, not a folder")
    assert _files(tmp_path) == ["folder", "plain"]


def test_devices_are_refused_by_their_kind(tmp_path, capsys, no_window) -> None:
    for argv in (
        ["--screenshot", "/dev/full"],
        _check(str(tmp_path / "o"), "--session", "/dev/null"),
        ["verify", "/dev/zero"],
        ["diff", "/dev/zero", "/dev/zero"],
    ):
        _refused(argv, capsys, "is a character device; expected a regular file")
    assert _files(tmp_path) == []


@pytest.mark.timeout(60)
def test_a_fifo_as_screenshot_or_input_is_refused_without_opening_it(
    tmp_path, capsys, no_window
) -> None:
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    why = f"{fifo} is a FIFO (a named pipe); expected a regular file"
    # The whole command, in a child with a deadline: opening the FIFO would block forever.
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "--screenshot", str(fifo)],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert (done.returncode, done.stderr) == (2, f"error: --screenshot: {why}\n")
    for argv in (
        ["verify", str(fifo)],
        ["--session", str(fifo)],
        _check(str(tmp_path / "o"), "--session", str(fifo)),
    ):
        _refused(argv, capsys, why)
    assert _files(tmp_path) == ["pipe.png"]


def _read_only(real_statvfs):
    def statvfs(path):
        found = real_statvfs(path)
        return types.SimpleNamespace(f_flag=found.f_flag | os.ST_RDONLY)

    return statvfs


def test_a_read_only_file_system_is_refused_by_its_flag(
    tmp_path, capsys, monkeypatch, no_window
) -> None:
    # A read-only mount needs root to make: its flag, as os.statvfs reports it, stands in.
    monkeypatch.setattr(os, "statvfs", _read_only(os.statvfs))
    new = tmp_path / "new"
    for argv, words in (
        (_check(str(tmp_path)), (f"--out: folder {tmp_path} is on a read-only file system",)),
        (_check(str(new / "o")), (f"cannot create {new / 'o'}: {tmp_path} is on a read-only",)),
        (_check(str(new), "--session", str(tmp_path / "s.h5")), ("--out: cannot create",)),
        (["--screenshot", str(tmp_path / "s.png")], (f"folder {tmp_path} is on a read-only",)),
        (["coverage", "--out", str(new / "c.json")], ("--out: cannot create", "read-only")),
    ):
        _refused(argv, capsys, *words)
    assert _files(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a 0o500 folder anyway")
def test_a_folder_without_write_permission_is_refused(tmp_path, capsys, no_window) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        for argv in (
            _check(str(locked)),
            _check(str(locked / "new")),
            _check(str(tmp_path / "o"), "--session", str(locked / "s.h5")),
            ["--screenshot", str(locked / "s.png")],
            ["mutate", "--out", str(locked / "m")],
        ):
            _refused(argv, capsys, f"{locked} is not writable")
        assert _files(locked) == []
        assert _files(tmp_path) == ["locked"]
    finally:
        locked.chmod(0o700)


def test_the_check_reads_the_read_only_flag_and_the_permissions(tmp_path, monkeypatch) -> None:
    assert paths.checked_path("--out", tmp_path, "folder") == tmp_path
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(paths.PathRefused, match=r"^--out: folder .* is not writable$"):
        paths.checked_path("--out", tmp_path, "folder")
    monkeypatch.setattr(os, "statvfs", _read_only(os.statvfs))
    with pytest.raises(paths.PathRefused, match=r"is on a read-only file system$"):
        paths.checked_path("--out", tmp_path, "folder")


def test_a_name_with_control_characters_is_printed_escaped(tmp_path, capsys) -> None:
    crafted = tmp_path / "a\x1b[2J\nb"
    crafted.mkdir()
    line = _refused(["--screenshot", str(crafted)], capsys, "a\\x1b[2J\\nb is a folder")
    assert "\x1b" not in line


def test_a_session_lock_holds_every_spelling_of_the_file(tmp_path, capsys, monkeypatch) -> None:
    real = tmp_path / "real"
    real.mkdir()
    session = real / "s.h5"
    (tmp_path / "link.h5").symlink_to(session)
    (tmp_path / "folder").symlink_to(real, target_is_directory=True)
    monkeypatch.chdir(real)
    spellings = [tmp_path / "link.h5", tmp_path / "folder" / "s.h5", Path("s.h5")]
    assert {session_lock_path(p) for p in spellings} == {session_lock_path(session)}
    with run_locks(tmp_path / "first", session):  # a run in progress on the real name
        for spelling in spellings:
            _refused(
                _check(str(tmp_path / "o"), "--session", str(spelling)),
                capsys,
                f"session: another run is writing {spelling}",
            )
    assert not session.exists()
    assert _files(real) == [".s.h5.lock"]
