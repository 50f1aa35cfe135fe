"""kernels.sandbox.forkserver: a child forked from the preloaded server is the child ``python -m``
would start (environment, folder, path, arguments, streams, exit status, session), imports the
project's modules from its own path, and dies with the server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kernels.sandbox import forkserver

pytestmark = pytest.mark.skipif(not forkserver.available(), reason="forking needs Linux")

PROBE = textwrap.dedent(
    """\
    import json, os, sys
    data = sys.stdin.read()
    import kernels  # the folder first on the path holds a stand-in package
    print(json.dumps({
        "argv": sys.argv[1:], "cwd": os.getcwd(), "path0": sys.path[0],
        "env": os.environ.get("FORKSERVER_PROBE"), "pythonpath": os.environ.get("PYTHONPATH"),
        "stdin": data, "sid": os.getsid(0), "pid": os.getpid(), "kernels": kernels.__file__,
        "torch_preloaded": "torch" in sys.modules, "name": __name__,
    }))
    print("to stderr", file=sys.stderr)
    sys.exit(int(sys.argv[1]))
    """
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "fork_probe.py").write_text(PROBE)
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "__init__.py").write_text("STAND_IN = True\n")
    return tmp_path


def _start(folder: Path, *args: str, **env: str):
    environ = {**os.environ, "PYTHONPATH": str(folder), **env}
    return forkserver.popen(
        [sys.executable, "-m", "fork_probe", *args],
        env=environ, cwd=str(folder), stdin=subprocess.PIPE,
    )  # fmt: skip


def test_a_forked_child_is_the_child_python_m_would_start(folder: Path) -> None:
    with _start(folder, "3", "two words", FORKSERVER_PROBE="asked") as child:
        assert isinstance(child, forkserver.ForkedChild)
        child.stdin.write(b"input bytes")
        child.stdin.close()
        assert child.wait(60) == 3
        said = json.loads(child.stdout.read())
        assert child.stderr.read() == b"to stderr\n"
    assert said["argv"] == ["3", "two words"]
    assert said["cwd"] == said["path0"] == str(folder)
    assert said["env"] == "asked"  # the request's environment, not the server's
    assert said["pythonpath"] == str(folder)
    assert said["stdin"] == "input bytes"
    assert said["name"] == "__main__"
    assert said["kernels"] == str(folder / "kernels" / "__init__.py")  # not the project's
    assert said["torch_preloaded"]
    assert said["sid"] == said["pid"] == child.pid  # a session of its own


def test_one_server_serves_requests_that_differ_outside_the_import_variables(folder) -> None:
    children = [
        _start(folder, "0", FORKSERVER_PROBE="a"),
        _start(folder, "0", FORKSERVER_PROBE="b"),
        _start(folder, "0", TRITON_PROBE_VARIABLE="1"),
    ]
    for child in children:
        with child:
            child.stdin.close()
    first, second, other = (child._server for child in children)
    assert first is second
    assert other is not first


def test_a_signal_is_the_negative_exit_status_and_a_timeout_raises(folder: Path) -> None:
    with _start(folder, "0") as child:  # blocks reading its stdin
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(0.2)
        assert child.poll() is None
        os.killpg(child.pid, signal.SIGKILL)
        assert child.wait(60) == -signal.SIGKILL


def test_children_die_with_their_server(folder: Path) -> None:
    with _start(folder, "0") as child:
        server = child._server
        forkserver.close_all()
        assert child.wait(60) == -signal.SIGKILL
        assert _gone(child.pid, 30), "the child outlived its server"
    assert server.process.poll() is not None


def test_switched_off_it_is_a_plain_popen(folder: Path, monkeypatch) -> None:
    monkeypatch.setenv(forkserver.SWITCH_VAR, "0")
    with _start(folder, "5") as child:
        assert isinstance(child, subprocess.Popen)
        child.stdin.close()
        assert child.wait(60) == 5
        said = json.loads(child.stdout.read())
    assert not said["torch_preloaded"]
    assert said["sid"] == child.pid


PARENT = textwrap.dedent(
    """\
    import os, subprocess, sys, time
    from kernels.sandbox import forkserver
    env = {**os.environ, "PYTHONPATH": sys.argv[1]}
    child = forkserver.popen([sys.executable, "-m", "fork_probe", "0"], env=env,
                             cwd=sys.argv[1], stdin=subprocess.PIPE)
    print(type(child).__name__, child._server.process.pid, child.pid, flush=True)
    time.sleep(600)
    """
)


def _gone(pid: int, within_s: float) -> bool:
    """Whether ``pid`` ended within ``within_s`` (a zombie left for init to reap has ended)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_a_parent_killed_with_sigkill_takes_its_server_and_children_along(folder: Path) -> None:
    root = Path(forkserver.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    with subprocess.Popen(
        [sys.executable, "-c", PARENT, str(folder)], stdout=subprocess.PIPE, env=env, cwd=root
    ) as parent:
        kind, server, child = parent.stdout.readline().split()
        assert kind == b"ForkedChild"
        parent.kill()
        parent.wait()
    # Not our children: they are reaped by init, so "gone" is their pid no longer existing.
    assert _gone(int(server), 30)
    assert _gone(int(child), 30)
