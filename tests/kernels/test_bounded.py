"""kernels/sandbox/bounded.py: a tool under a time bound dies with its whole session on a timeout,
and, asked to, with the process that started it (a killed check must not leave its benchmark
running on the GPU)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernels.sandbox.bounded import run_bounded

ROOT = Path(__file__).resolve().parents[2]
# A parent that starts a sleeping tool through run_bounded and says when the tool is up.
_PARENT = """
import sys
from kernels.sandbox.bounded import run_bounded
tool = [sys.executable, "-c",
        "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)",
        sys.argv[1]]
run_bounded(tool, timeout_s=300, die_with_parent=sys.argv[2] == "1")
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie not yet reaped by init counts as gone.
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "\nState:\tZ" in status.read_text())


def _tool_of_a_killed_parent(tmp_path: Path, die_with_parent: bool) -> int:
    """Start the parent, wait for its tool, SIGKILL the parent; the tool's pid."""
    pid_file = tmp_path / "tool.pid"
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, str(pid_file), "1" if die_with_parent else "0"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.monotonic() < deadline, "the tool never started"
        assert parent.poll() is None, "the parent ended before its tool started"
        time.sleep(0.05)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    return int(pid_file.read_text())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_tool_asked_to_die_with_its_parent_does_and_one_not_asked_lives_on(tmp_path) -> None:
    (tmp_path / "asked").mkdir()
    tool = _tool_of_a_killed_parent(tmp_path / "asked", True)
    deadline = time.monotonic() + 30
    while _alive(tool) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(tool), "the tool outlived its killed parent"
    (tmp_path / "control").mkdir()
    control = _tool_of_a_killed_parent(tmp_path / "control", False)
    try:
        time.sleep(0.5)
        assert _alive(control), "the control tool died without being asked to"
    finally:
        os.kill(control, signal.SIGKILL)


def test_a_timeout_kills_the_tool_and_what_it_started() -> None:
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_bounded([sys.executable, "-c", "import time; time.sleep(60)"], timeout_s=1,
                    die_with_parent=True)  # fmt: skip
    assert time.monotonic() - started < 30


def test_a_tool_that_cannot_start_says_so() -> None:
    with pytest.raises(OSError, match="No such file"):
        run_bounded(["/nonexistent/tool"], timeout_s=10)
    if sys.platform.startswith("linux"):
        done = run_bounded(["/nonexistent/tool"], timeout_s=30, die_with_parent=True)
        assert done.returncode == 127
        assert "cannot start /nonexistent/tool" in done.stderr


def test_output_past_its_head_and_tail_is_counted_not_kept(monkeypatch) -> None:
    from kernels.sandbox import bounded

    monkeypatch.setattr(bounded, "KEEP_HEAD_BYTES", 1000)
    monkeypatch.setattr(bounded, "KEEP_TAIL_BYTES", 500)
    flood = (
        "import os, sys\n"
        "os.write(1, b'H' * 1000)\n"
        "for _ in range(100): os.write(1, b'.' * 10_000); os.write(2, b'e' * 10_000)\n"
        "os.write(1, b'T' * 500)\n"
    )
    done = run_bounded([sys.executable, "-c", flood], timeout_s=60)
    assert done.returncode == 0
    assert done.stdout == "H" * 1000 + "\n[... 1000000 bytes not kept ...]\n" + "T" * 500
    assert done.stderr.endswith("e" * 500)
    assert len(done.stderr) < 1600


def test_output_within_the_bounds_is_kept_whole_and_input_is_fed() -> None:
    echo = "import sys; data = sys.stdin.buffer.read(); sys.stdout.buffer.write(data[::-1])"
    payload = bytes(range(256)) * 1000  # past a pipe's buffer both ways
    done = run_bounded([sys.executable, "-c", echo], timeout_s=60, input=payload)
    assert done.stdout == payload[::-1].decode("utf-8", "replace")


def test_a_tool_that_never_reads_its_input_does_not_block_the_caller() -> None:
    started = time.monotonic()
    done = run_bounded(
        [sys.executable, "-c", "print('done')"], timeout_s=60, input=b"x" * 10_000_000
    )
    assert done.stdout == "done\n"
    assert time.monotonic() - started < 30
