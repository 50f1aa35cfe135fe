"""The window's heavy jobs run in a child process, so they never hold its interpreter lock.

An interpreter kernel run, a Triton or ``torch.compile`` compile and the benchmark's preparation
are long stretches of Python (or C holding the GIL). On a worker *thread* they still starve the
GUI thread of the lock, so the window stalls however the work is split into steps. Here they
run in a *host*: a child process (``python -m inspector.jobs.child``) that imports the job's
factory by its dotted path, runs the job and streams every item it yields back (pickled frames
on a pipe). The worker thread only waits on that pipe, which releases the lock.

- A host is kept warm between jobs (torch, Triton and their caches stay loaded); :data:`POOL`
  hands out an idle one or starts a new one.
- Cancel is sent to the host, where the job sees it between steps as it would on a thread; a
  host that has not stopped :data:`CANCEL_GRACE_S` later is killed (a compile cannot be
  interrupted) and a fresh one starts on the next job.
- A host that dies (a crash, a kill, memory corrupted by an unmasked store under the
  interpreter) fails only its job, with :class:`JobProcessDied` saying how it ended; the window
  and its results are untouched.
- ``RMSNORM_INSPECTOR_JOBS=thread`` runs the same jobs on the worker thread instead (to step
  through one in a debugger, or to patch one in a test).

Both ends are this package's own code, so pickle is the format; what a *user's* kernel returns
never travels as pickle (``kernels.sandbox.usercode``: raw ``.npy`` only).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import io
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from inspector.jobs.tasks import Cancelled, Job

#: Environment variable choosing where heavy jobs run: "child" (the default) or "thread".
PLACEMENT_VAR = "RMSNORM_INSPECTOR_JOBS"
#: Seconds a cancelled host has to stop on its own before it is killed.
CANCEL_GRACE_S = 1.0
#: Longest frame accepted from a host (bytes): larger means a broken pipe, not a result.
MAX_FRAME_BYTES = 1 << 34
_HEADER = struct.Struct("<Q")


class JobProcessDied(RuntimeError):
    """The host process ended in the middle of a job (crash, kill, lost pipe)."""


class ChildJobError(Exception):
    """An exception raised in the host that could not travel back as itself.

    Attributes:
        type_name: the class name of the original exception (``tasks.failure_text`` shows it).
    """

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type_name = type_name

    def __reduce__(self) -> tuple[Any, ...]:
        return (ChildJobError, (self.type_name, str(self)))


def placement() -> str:
    """Where heavy jobs run now: "child" or "thread" (from :data:`PLACEMENT_VAR`)."""
    return "thread" if os.environ.get(PLACEMENT_VAR, "").strip().lower() == "thread" else "child"


def resolve(path: str) -> Any:
    """The object a ``"module:attribute"`` path names (a job factory)."""
    module, _, name = path.partition(":")
    if not module or not name:
        raise ValueError(f"job path {path!r} is not 'module:attribute'")
    return getattr(importlib.import_module(module), name)


class _Pickler(pickle.Pickler):
    """Pickles each of ``shared`` as a reference to it (its index), not as its contents."""

    def __init__(self, file: Any, shared: tuple[Any, ...]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._shared = {id(obj): index for index, obj in enumerate(shared)}

    def persistent_id(self, obj: Any) -> Any:
        index = self._shared.get(id(obj))
        return None if index is None else ("shared", index)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: Any, shared: tuple[Any, ...]) -> None:
        super().__init__(file)
        self._shared = shared

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "shared"):
            raise pickle.UnpicklingError(f"unknown reference {pid!r}")
        if not isinstance(pid[1], int) or not 0 <= pid[1] < len(self._shared):
            raise pickle.UnpicklingError(f"reference to argument {pid[1]!r} of {len(self._shared)}")
        return self._shared[pid[1]]


def write_frame(channel: BinaryIO, obj: Any, shared: tuple[Any, ...] = ()) -> None:
    """One pickled object, length-prefixed. An object of ``shared`` (a job's arguments) inside
    it travels as a reference, so the reader gets back *its own* object: a result names the
    very ``Problem`` it was asked about (the window recognises a fresh result by identity),
    and the input's arrays do not travel twice."""
    buffer = io.BytesIO()
    _Pickler(buffer, shared).dump(obj)
    blob = buffer.getvalue()
    channel.write(_HEADER.pack(len(blob)))
    channel.write(blob)
    channel.flush()


def read_blob(channel: BinaryIO) -> bytes:
    """The next frame's bytes; raises EOFError when the other end is gone."""
    head = _read_exact(channel, _HEADER.size)
    (size,) = _HEADER.unpack(head)
    if size > MAX_FRAME_BYTES:
        raise EOFError(f"frame of {size} bytes announced (more than {MAX_FRAME_BYTES})")
    return _read_exact(channel, size)


def loads(blob: bytes, shared: tuple[Any, ...] = ()) -> Any:
    """The object of a frame written with the same ``shared``."""
    return _Unpickler(io.BytesIO(blob), shared).load()


def read_frame(channel: BinaryIO, shared: tuple[Any, ...] = ()) -> Any:
    """The next object from :func:`write_frame`; raises EOFError when the other end is gone."""
    return loads(read_blob(channel), shared)


def _read_exact(channel: BinaryIO, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = channel.read(left)
        if not chunk:
            raise EOFError("the other end closed the pipe")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def how_it_ended(code: int | None) -> str:
    """A process's exit status in words ("killed by signal 11 (SIGSEGV)", "exit code 3")."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class Host:
    """One child process running one job at a time (:mod:`inspector.jobs.child`)."""

    def __init__(self) -> None:
        env = dict(os.environ)
        # The child resolves every module as this process does (an editable install, tests/).
        paths = [os.path.abspath(p or os.curdir) for p in sys.path if os.path.isdir(p or os.curdir)]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "inspector.jobs.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=os.getcwd(),
            # Its own process group: a kill also ends what it started (a user kernel's process).
            start_new_session=os.name == "posix",
        )
        self.pid = self.process.pid
        #: Sent the warm-up job (:meth:`Pool.prewarm`) whose frames the next job reads first.
        self.warming = False
        self._inbox: queue.Queue[Any] = queue.Queue()
        self._args: tuple[Any, ...] = ()  # the running job's arguments (see write_frame)
        self._reader = threading.Thread(target=self._read_all, name=f"host-{self.pid}", daemon=True)
        self._reader.start()

    def _read_all(self) -> None:
        assert self.process.stdout is not None
        try:
            while True:
                blob = read_blob(self.process.stdout)
                # The arguments of the job running now: it was sent before its frames came.
                self._inbox.put(loads(blob, self._args))
        except (EOFError, OSError, pickle.UnpicklingError, struct.error) as err:
            self._inbox.put(("eof", str(err)))
        except Exception as err:  # a frame that does not unpickle here: the host is unusable
            self._inbox.put(("eof", f"{type(err).__name__}: {err}"))

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: Any) -> None:
        assert self.process.stdin is not None
        write_frame(self.process.stdin, message)

    def kill(self) -> None:
        """End the process now (idempotent)."""
        with contextlib.suppress(OSError):
            if os.name == "posix":
                os.killpg(self.pid, signal.SIGKILL)
            else:
                self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError, ValueError):
                if pipe is not None:
                    pipe.close()

    def close(self) -> None:
        """Ask the process to exit (its stdin closes), then make sure it has."""
        with contextlib.suppress(OSError, ValueError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(2)
        self.kill()

    def _died(self, doing: str) -> JobProcessDied:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        return JobProcessDied(
            f"the job's process (pid {self.pid}) ended during {doing or 'the job'}: "
            f"{how_it_ended(self.process.poll())}"
        )

    def run(self, path: str, args: tuple[Any, ...], cancel: threading.Event) -> Iterator[Any]:
        """Run ``resolve(path)(*args)`` there; yield what it yields; raise what it raises.

        Leaves the host idle again when the job ends, is cancelled, or the caller stops
        iterating; kills it when it does not stop within :data:`CANCEL_GRACE_S` of a cancel.
        """
        self._args = args
        try:
            self.send(("run", path, args))
        except (OSError, ValueError) as err:
            raise self._died(f"the start of {path}") from err
        yield from self.stream(cancel)

    def stream(self, cancel: threading.Event) -> Iterator[Any]:
        """What the job sent last (``run``) yields, up to its end (see :meth:`run`)."""
        doing, finished, kill_at = "", False, None
        try:
            while True:
                try:
                    message = self._inbox.get(timeout=0.05)
                except queue.Empty:
                    if cancel.is_set() and kill_at is None:
                        kill_at = self._cancel()
                    elif kill_at is not None and time.monotonic() > kill_at:
                        self.kill()
                        finished = True
                        raise Cancelled from None
                    continue
                kind = message[0]
                if kind == "item":
                    item = message[1]
                    if isinstance(item, tuple) and len(item) == 3 and isinstance(item[2], str):
                        doing = item[2]
                    yield item
                    continue
                finished = True
                if kind == "done":
                    return
                if kind == "cancelled":
                    raise Cancelled
                if kind == "failed":
                    error = message[1]
                    error.child_traceback = message[2]
                    raise error
                raise self._died(doing)
        finally:
            if not finished:
                self._stop_abandoned()

    def _cancel(self) -> float:
        with contextlib.suppress(OSError, ValueError):
            self.send(("cancel",))
        return time.monotonic() + CANCEL_GRACE_S

    def _stop_abandoned(self) -> None:
        """The caller stopped iterating mid-job: cancel it and wait for its end (or kill)."""
        deadline = self._cancel()
        while time.monotonic() < deadline:
            try:
                message = self._inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if message[0] != "item":
                if message[0] == "eof":
                    self.kill()
                return
        self.kill()


class Pool:
    """Idle hosts kept warm between jobs (at most :attr:`keep`)."""

    def __init__(self, keep: int = 1) -> None:
        self.keep = keep
        self._idle: list[Host] = []
        self._lock = threading.Lock()

    def acquire(self) -> Host:
        with self._lock:
            while self._idle:
                host = self._idle.pop()
                if host.alive:
                    return host
                host.kill()
        return Host()

    def release(self, host: Host) -> None:
        with self._lock:
            if host.alive and len(self._idle) < self.keep:
                self._idle.append(host)
                return
        host.close()

    def prewarm(self) -> None:
        """Start a host now (it imports the kernel floor), so the first job need not wait."""
        with self._lock:
            if self._idle:
                return
        host = Host()
        try:
            host.send(("run", "inspector.jobs.child:warm_job", ()))
        except (OSError, ValueError):
            host.kill()
            return
        host.warming = True
        self.release(host)

    def close_all(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for host in idle:
            host.close()


POOL = Pool()
atexit.register(POOL.close_all)


class ChildJob:
    """A job (``job(cancel) -> Iterator``) whose steps run in a host of :data:`POOL`.

    Attributes:
        path: the factory's ``"module:attribute"`` path; ``args`` its arguments (picklable).
        pid: the process the job ran in, once it has started.
    """

    def __init__(self, path: str, args: tuple[Any, ...]) -> None:
        self.path = path
        self.args = args
        self.pid: int | None = None

    def __call__(self, cancel: threading.Event) -> Iterator[Any]:
        host = POOL.acquire()
        self.pid = host.pid
        try:
            if host.warming:
                host.warming = False
                yield (0, 1, "starting the job process (torch + triton)")
                yield from _drain(host.stream(cancel))
            yield from host.run(self.path, self.args, cancel)
        finally:
            POOL.release(host)


def _drain(items: Iterator[Any]) -> Iterator[Any]:
    """Progress of the host's warm-up; its result is not the job's."""
    for item in items:
        if isinstance(item, tuple) and len(item) == 3:
            yield item


def prewarm() -> None:
    """Start a warm host unless heavy jobs run on the thread (:meth:`Pool.prewarm`)."""
    if placement() == "child":
        POOL.prewarm()


def heavy(factory: Callable[..., Job], *args: Any) -> Job:
    """The job ``factory(*args)``, placed by :func:`placement`: in a host process
    (:class:`ChildJob`, which imports ``factory`` there by its module and name) or, with
    ``RMSNORM_INSPECTOR_JOBS=thread``, on the worker thread.

    Raises:
        ValueError: (in a host) ``factory`` is not a module-level function the host can import.
    """
    if placement() == "thread":
        return factory(*args)
    return ChildJob(factory_path(factory), args)


def factory_path(factory: Callable[..., Job]) -> str:
    """The ``"module:name"`` a host process imports ``factory`` by."""
    path = f"{getattr(factory, '__module__', '')}:{getattr(factory, '__qualname__', '')}"
    try:
        found = resolve(path)
    except (ImportError, AttributeError, ValueError):
        found = None
    if found is not factory:
        raise ValueError(f"job factory {path!r} is not a module-level function a host can import")
    return path
