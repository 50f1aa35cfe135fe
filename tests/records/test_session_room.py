"""A session save with too little room fails in plain words, the previous file intact and no temp
file left: a full disk is refused from the estimate before HDF5 runs, and past ``ulimit -f`` the
write fails with an error instead of SIGXFSZ ending the process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from inspector.records.sessions import room as session_room
from inspector.records.sessions.session import Session, SessionError, save_session

ROOT = Path(__file__).resolve().parents[2]


def _session(rows: int = 4, width: int = 70) -> Session:
    rng = np.random.default_rng(0)
    return Session(
        x=rng.standard_normal((rows, width)).astype(np.float32).astype(np.float64),
        weight=np.ones(width),
        eps=1e-6,
        row_stride=width,
    )


def test_the_estimate_covers_the_file_it_writes(tmp_path) -> None:
    state = _session(64, 4096)
    path = tmp_path / "s.h5"
    save_session(path, state)
    assert path.stat().st_size <= session_room.estimated_bytes(state)


def test_a_full_disk_is_refused_in_plain_words_before_writing(tmp_path, monkeypatch) -> None:
    path = tmp_path / "s.h5"
    save_session(path, _session())
    before = path.read_bytes()

    class Usage:
        free = 4096

    monkeypatch.setattr(session_room.shutil, "disk_usage", lambda folder: Usage)
    with pytest.raises(SessionError, match=r"No space left on device \(about .* MiB needed"):
        save_session(path, _session(8, 70))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.h5"]  # no temp file left


_UNDER_ULIMIT = """
import resource, sys
import numpy as np
from inspector.records.sessions import session
from inspector.records.sessions.session import Session, SessionError, save_session
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
if sys.argv[2] == "past-the-estimate":
    session.room_problem = lambda folder, needed: ""  # only the write itself can notice
x = np.random.default_rng(0).standard_normal((64, 4096)).astype(np.float32).astype(np.float64)
try:
    save_session(sys.argv[1], Session(x=x, weight=np.ones(4096), eps=1e-6, row_stride=4096))
except SessionError as exc:
    print(exc)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_FSIZE")
@pytest.mark.parametrize("how", ["estimate", "past-the-estimate"])
def test_a_file_size_limit_is_an_error_not_a_killed_process(tmp_path, how) -> None:
    path = tmp_path / "big.h5"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_UNDER_ULIMIT), str(path), how],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-500:]  # not SIGXFSZ (-25), not a crash
    assert done.stdout.startswith(f"cannot save session to {path}: File too large")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing half-written kept
