"""Job factories the host-process tests run (imported by ``inspector.jobs.child`` by path)."""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Iterator
from typing import Any


def pid_job(steps: int = 3) -> Any:
    """Progress per step, a stray print, then the pid it ran in."""

    def job(cancel: threading.Event) -> Iterator[Any]:
        for step in range(steps):
            print("a library printing to stdout")
            yield (step, steps, f"step {step}")
        yield {"pid": os.getpid()}

    return job


def crash_job() -> Any:
    """A step that ends the process the way memory corruption would (SIGSEGV)."""

    def job(cancel: threading.Event) -> Iterator[Any]:
        yield (0, 2, "about to crash")
        ctypes.string_at(0)
        yield "never"

    return job


class Unpicklable(Exception):
    """An exception whose pickled form cannot be rebuilt (two required arguments)."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__(f"{what}: {why}")


def raise_job(kind: str) -> Any:
    def job(cancel: threading.Event) -> Iterator[Any]:
        yield (0, 1, "raising")
        if kind == "value":
            raise ValueError("width 0 is below the bound 1")
        raise Unpicklable("lock", "held")

    return job


def waiting_job(cooperative: bool) -> Any:
    """Steps until cancelled; ``cooperative=False`` sleeps through the cancel in one step."""

    def job(cancel: threading.Event) -> Iterator[Any]:
        yield (0, 2, "started")
        if cooperative:
            while not cancel.wait(0.01):
                pass
            yield (1, 2, "saw the cancel")
        else:
            time.sleep(3600)
        yield "never"

    return job


def echo_job(obj: Any) -> Any:
    """Its argument back, inside a result, beside a new object."""

    def job(cancel: threading.Event) -> Iterator[Any]:
        yield {"same": obj, "copy": {"x": "copied"}}

    return job
