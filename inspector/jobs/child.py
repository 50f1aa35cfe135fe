"""The host process of :mod:`inspector.jobs.host`: ``python -m inspector.jobs.child``.

It reads requests from stdin (``("run", "module:factory", args)`` and ``("cancel",)``) and
answers on the stdout it started with: ``("item", x)`` for each item the job yields, then one
of ``("done",)``, ``("cancelled",)`` or ``("failed", exception, traceback_text)``. Anything
else written to stdout (a print in a library) goes to stderr, so it cannot break a frame. The
job runs on this process's main thread (the Triton interpreter is not thread-safe); a second
thread only listens for requests, so a cancel reaches the job while it runs. Closing stdin ends
the process.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from inspector.jobs.host import ChildJobError, read_frame, resolve, write_frame
from inspector.jobs.tasks import Cancelled, is_progress

#: Progress frames are sent at most this often (the last step of each stage always).
PROGRESS_INTERVAL_S = 0.02


def warm_job() -> Callable[[threading.Event], Iterator[Any]]:
    """A job importing the kernel floor (torch, Triton) before the first job asks for it."""

    def job(cancel: threading.Event) -> Iterator[Any]:
        yield (0, 1, "starting the job process (torch + triton)")
        with contextlib.suppress(Exception):  # the job that needs it reports a failure
            import kernels  # noqa: F401
        yield "warm"

    return job


def _travelling(exc: BaseException) -> BaseException:
    """``exc`` if it survives a pickle round trip, else a :class:`ChildJobError` naming it."""
    try:
        pickle.loads(pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL))
        return exc
    except Exception:
        return ChildJobError(type(exc).__name__, str(exc))


def _run(path: str, args: tuple[Any, ...], cancel: threading.Event, out: Any) -> None:
    last = 0.0
    try:
        job = resolve(path)(*args)
        for item in job(cancel):
            if cancel.is_set():
                raise Cancelled
            if is_progress(item):
                now = time.monotonic()
                if now - last < PROGRESS_INTERVAL_S and item[0] + 1 < item[1]:
                    continue
                last = now
            write_frame(out, ("item", item), args)
        if cancel.is_set():
            raise Cancelled
        write_frame(out, ("done",))
    except Cancelled:
        write_frame(out, ("cancelled",))
    except Exception as exc:
        write_frame(out, ("failed", _travelling(exc), traceback.format_exc()))


def main() -> int:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    requests: queue.Queue[Any] = queue.Queue()
    cancel = threading.Event()

    def listen() -> None:
        try:
            while True:
                message = read_frame(sys.stdin.buffer)
                if message[0] == "cancel":
                    cancel.set()
                else:
                    requests.put(message)
        except Exception:  # stdin closed or broken: the window is gone, so is its job
            cancel.set()
            requests.put(None)

    threading.Thread(target=listen, name="requests", daemon=True).start()
    while (request := requests.get()) is not None:
        _, path, args = request
        cancel.clear()
        try:
            _run(path, args, cancel, out)
        except (BrokenPipeError, OSError):
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
