"""``--screenshot``'s end: a PNG that cannot be written (a full disk) is one line and exit 2 with
no half file, the previous file kept; what a crafted session makes the window say is printed
escaped, on one line. (Its path is checked up front like every output path:
tests/inspector_core/test_cli_paths.py.)"""

from __future__ import annotations

import errno
import os

from inspector.qt.app import run_app
from inspector.records import atomic


def test_a_screenshot_on_a_full_disk_is_one_line_and_leaves_the_old_file(
    qtbot, tmp_path, capsys, monkeypatch
) -> None:
    out = tmp_path / "shot.png"
    out.write_bytes(b"the previous screenshot")

    def full(path: str) -> None:  # the disk fills as the PNG is synced
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic, "_fsync_file", full)
    assert run_app(None, str(out)) == 2
    assert capsys.readouterr().err == (
        f"error: --screenshot: cannot write {out}: No space left on device\n"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["shot.png"]  # no temp file left
    assert out.read_bytes() == b"the previous screenshot"


def test_a_crafted_session_name_is_printed_escaped_on_one_line(qtbot, tmp_path, capsys) -> None:
    crafted = tmp_path / "s\x1b[2J\r\nFAKE LINE.h5"
    crafted.write_bytes(b"\x1b]0;title\x07 not a session")
    out = tmp_path / "shot.png"
    assert run_app(str(crafted), str(out)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("error: --session: cannot open ")
    assert "s\\x1b[2J\\r\\nFAKE LINE.h5" in err
    assert not any(c in err[:-1] for c in "\x1b\r\n\x07")
    assert not out.exists()
