"""Python children started by forking a server that has already imported torch and triton.

A child ``python -m kernels.sandbox.usercode_child`` spends about two seconds of CPU importing
numpy, torch and triton before it reads the user's file; a check, a mutation run or a coverage walk
starts dozens of them. :func:`popen` starts such a ``python -m MODULE ARGS...`` child as a fork
of a *server*: a process of its own that imported those libraries once (and nothing of this
project, so a mutated copy of ``kernels`` first on the child's path is still the one imported),
and forks on request. The forked child is what the exec'd one would be: its own session
(``setsid``), the request's working folder, environment, ``sys.path`` (``-m``'s: the working
folder, ``PYTHONPATH``, the interpreter's own) and standard streams, ``MODULE`` run as
``__main__``; it dies with the server (``PR_SET_PDEATHSIG``), and the server ends when its
socket closes, so no child outlives the process that asked for it.

A child's environment is the request's, whole. A library reads some variables while it is
imported, which happens once in the server; so one server serves the requests that agree on
those (:data:`IMPORT_VARS`: Python's, Triton's, torch's, CUDA's, the thread pools', the
loader's and the paths'), and a request that differs in one gets a server of its own.

Where a server cannot be had (not Linux, ``RMSNORM_INSPECTOR_FORKSERVER=0``, a server that did
not start), :func:`popen` is ``subprocess.Popen``: the same child, with the start-up cost.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Any

#: Prefixes of the variables a preloaded library may read while it is imported: the server's
#: environment holds these (``PYTHONPATH`` is the caller's own; each request brings its own).
IMPORT_VARS = ("PYTHON", "TRITON", "TORCH", "PYTORCH", "CUDA", "NVIDIA", "OMP_", "MKL_", "KMP_",
               "GOMP_", "OPENBLAS", "NUMPY", "LD_", "PATH", "HOME", "TMPDIR", "XDG_")  # fmt: skip
#: Set to 0 to start every child with a plain ``exec`` (a debugger, a measurement).
SWITCH_VAR = "RMSNORM_INSPECTOR_FORKSERVER"
#: What the server imports before it forks: the costly part of every child's start.
PRELOAD = ("numpy", "h5py", "torch", "triton", "triton.language")
#: Longest wait for a server's imports, and for its answer to one request.
START_TIMEOUT_S = 120.0
REPLY_TIMEOUT_S = 30.0
#: Servers kept at once (one per environment); an idle one is closed past this.
MAX_SERVERS = 4
#: Largest request (argv, environment, folder) one datagram carries.
MAX_REQUEST_BYTES = 1 << 17

# The server's entry: the file is run by path, so it imports no package of this project.
_BOOT = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__rmsnorm_forkserver__')"


def available() -> bool:
    """Whether children can be forked from a server here (Linux, not switched off)."""
    return (
        sys.platform.startswith("linux")
        and hasattr(socket, "send_fds")
        and os.environ.get(SWITCH_VAR, "1") != "0"
    )


class ForkedChild:
    """A forked child with the part of ``subprocess.Popen``'s interface the callers use."""

    def __init__(self, server: _Server, pid: int, args: list[str], pipes: dict[str, Any]):
        self._server = server
        self.pid = pid
        self.args = args
        self.stdin: IO[bytes] | None = pipes.get("stdin")
        self.stdout: IO[bytes] | None = pipes.get("stdout")
        self.stderr: IO[bytes] | None = pipes.get("stderr")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid, 0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid, timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def __enter__(self) -> ForkedChild:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (self.stdout, self.stderr, self.stdin):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
        self.wait()


class _Server:
    """One server process, its socket and the thread that reads its answers."""

    def __init__(self, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._socket = ours
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, os.path.abspath(__file__), str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                env=env,
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            theirs.close()
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._replies: list[dict[str, Any]] = []
        self._exits: dict[int, int] = {}
        self._children: set[int] = set()
        self.alive = True
        self._reader = threading.Thread(target=self._read, name="forkserver", daemon=True)
        self._reader.start()
        if self._reply(START_TIMEOUT_S).get("ready") != self.process.pid:
            self.close()
            raise OSError("the fork server did not start")

    def _read(self) -> None:
        while True:
            try:
                data = self._socket.recv(1 << 16)
                message = json.loads(data) if data else None
            except (OSError, ValueError):
                message = None
            with self._changed:
                if not isinstance(message, dict):
                    # The server is gone, and with it every child it forked (PDEATHSIG).
                    self.alive = False
                    for pid in self._children - set(self._exits):
                        self._exits[pid] = -signal.SIGKILL
                    self._changed.notify_all()
                    return
                if "exit" in message:
                    self._exits[int(message["exit"])] = int(message["code"])
                else:
                    self._replies.append(message)
                self._changed.notify_all()

    def _reply(self, timeout_s: float) -> dict[str, Any]:
        with self._changed:
            self._changed.wait_for(lambda: self._replies or not self.alive, timeout_s)
            return self._replies.pop(0) if self._replies else {}

    def busy(self) -> bool:
        with self._changed:
            return bool(self._children - set(self._exits))

    def spawn(self, request: dict[str, Any], fds: list[int]) -> int:
        data = json.dumps(request).encode("utf-8")
        if len(data) > MAX_REQUEST_BYTES:
            raise OSError("request too large for the fork server")
        with self._lock:
            if not self.alive:
                raise OSError("the fork server has ended")
            socket.send_fds(self._socket, [data], fds)
            reply = self._reply(REPLY_TIMEOUT_S)
            if "pid" not in reply:
                raise OSError(f"the fork server did not fork: {reply.get('error', 'no answer')}")
            with self._changed:
                self._children.add(int(reply["pid"]))
            return int(reply["pid"])

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        with self._changed:
            self._changed.wait_for(lambda: pid in self._exits, timeout)
            return self._exits.get(pid)

    def close(self) -> None:
        self.alive = False
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)
        self._socket.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


_servers: dict[tuple[str, ...], _Server] = {}
_servers_lock = threading.Lock()


def _import_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` a server's imports may read, with this process's PYTHONPATH."""
    kept = {k: v for k, v in env.items() if k.startswith(IMPORT_VARS) and k != "PYTHONPATH"}
    if "PYTHONPATH" in os.environ:
        kept["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return kept


def _server_for(env: Mapping[str, str]) -> _Server:
    server_env = _import_env(env)
    key = (sys.executable, json.dumps(sorted(server_env.items())))
    with _servers_lock:
        server = _servers.get(key)
        if server is not None and server.alive:
            return server
        for old_key, old in list(_servers.items()):
            if not old.alive or (len(_servers) >= MAX_SERVERS and not old.busy()):
                old.close()
                del _servers[old_key]
        server = _Server(server_env)
        _servers[key] = server
        return server


@atexit.register
def close_all() -> None:
    """End every server (their children end with them)."""
    with _servers_lock:
        for server in _servers.values():
            server.close()
        _servers.clear()


def _pipe(kind: str, how: Any) -> tuple[int, Any, int | None]:
    """(the child's fd, our end as a file or None, an fd to close after sending)."""
    if how == subprocess.PIPE:
        read, write = os.pipe()
        if kind == "stdin":
            return read, os.fdopen(write, "wb"), read
        return write, os.fdopen(read, "rb"), write
    if how == subprocess.DEVNULL or how is None:
        null = os.open(os.devnull, os.O_RDWR)
        return null, None, null
    raise ValueError(f"{kind}: only PIPE and DEVNULL are forked")


def popen(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    stdin: Any = subprocess.DEVNULL,
    stdout: Any = subprocess.PIPE,
    stderr: Any = subprocess.PIPE,
) -> ForkedChild | subprocess.Popen[bytes]:
    """``python -m MODULE ARGS...`` (``argv``) started in a session of its own, forked from a
    server where one can be had, else ``subprocess.Popen(..., start_new_session=True)``."""
    argv = list(argv)
    forkable = len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m"
    if forkable and available():
        try:
            server = _server_for(env)
        except OSError:
            server = None
        if server is not None:
            opened = [_pipe("stdin", stdin), _pipe("stdout", stdout), _pipe("stderr", stderr)]
            request = {"module": argv[2], "args": argv[3:], "cwd": os.path.abspath(cwd),
                       "env": dict(env)}  # fmt: skip
            try:
                pid = server.spawn(request, [fd for fd, _, _ in opened])
            except OSError:
                pid = 0
            finally:
                for _, _, sent in opened:
                    if sent is not None:
                        os.close(sent)
            pipes = dict(zip(("stdin", "stdout", "stderr"), (f for _, f, _ in opened), strict=True))
            if pid:
                return ForkedChild(server, pid, argv, pipes)
            for stream in pipes.values():
                if stream is not None:
                    stream.close()
    return subprocess.Popen(
        argv, stdin=stdin, stdout=stdout, stderr=stderr, env=dict(env), cwd=cwd,
        start_new_session=True,
    )  # fmt: skip


# ---- the server's side: runs in the server process, where this file is run by path ----


def _serve(fd: int) -> dict[str, Any] | None:
    """Preload, answer ``ready``, then fork a child per request; in a child, return its
    request (the caller runs it); in the server, return None when the socket closes."""
    import importlib
    import selectors

    for name in PRELOAD:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    channel = socket.socket(fileno=fd)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_write)
    channel.send(json.dumps({"ready": os.getpid()}).encode())
    selector = selectors.DefaultSelector()
    selector.register(channel, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is channel:
                try:
                    data, fds, _, _ = socket.recv_fds(channel, MAX_REQUEST_BYTES, 3)
                except OSError:
                    data, fds = b"", []
                if not data:
                    return None
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    channel.close()
                    for end in (wake_read, wake_write):
                        os.close(end)
                    return {**json.loads(data), "fds": fds}
                for received in fds:
                    os.close(received)
                channel.send(json.dumps({"pid": pid}).encode())
            else:
                with contextlib.suppress(OSError):
                    os.read(wake_read, 4096)
                _reap(channel)


def _reap(channel: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError):
            channel.send(json.dumps({"exit": pid, "code": code}).encode())


def _become(request: dict[str, Any], server_path: list[str]) -> None:
    """Turn this forked process into ``python -m MODULE ARGS...`` as the request describes,
    run it, and exit as that interpreter would."""
    import ctypes
    import runpy
    import traceback

    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(137)
    os.setsid()
    for target, fd in enumerate(request["fds"]):
        os.dup2(fd, target)
    for fd in set(request["fds"]):
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    pythonpath = request["env"].get("PYTHONPATH", "")
    entries = [os.path.abspath(p) for p in pythonpath.split(os.pathsep) if p]
    sys.path[:] = [os.getcwd(), *entries, *server_path]
    sys.path_importer_cache.clear()
    sys.argv[:] = ["-m", *request["args"]]
    code: Any = 0
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        code = stop.code
    except BaseException as err:
        traceback.print_exception(type(err), err, err.__traceback__.tb_next)
        code = 1
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    with contextlib.suppress(Exception):
        threading._shutdown()  # type: ignore[attr-defined]  # join non-daemon threads
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code or 0)


if __name__ == "__rmsnorm_forkserver__":
    _own = {os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    # -c's '' first, then PYTHONPATH's entries, then the interpreter's own.
    _base = [p for p in sys.path[1:] if p and os.path.abspath(p) not in _own]
    _request = _serve(int(sys.argv[2]))
    if _request is None:
        sys.exit(0)
    _become(_request, _base)
