"""A user's own kernel, ``FILE.py:FUNCTION``, run in a child process
(:mod:`kernels.sandbox.usercode_child`).

``FUNCTION(x, weight, eps, out=None) -> y`` is the contract: torch tensors ``x (rows, width)`` with
contiguous columns and ``weight (width,)``; ``y`` shaped like ``x``, written into ``out`` when
given. The file is arbitrary code, so it never runs in this process: a crash, a hang or a store
past its buffers is a finding about one run (:class:`UserRun`), and the next run starts a fresh
child. Every ``out`` is a view into a poison-filled buffer with a guard of ``guard`` elements
(at least the row's power-of-two tile) before the first row, between rows (the row stride's
padding) and after the last; a guard element whose bits changed is an out-of-bounds store, and
any change to ``x``'s buffer is a store into the input. A launcher that refuses ``out=`` (a
``TypeError``) is run without it and checked on its output alone (``refused_out`` says so).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from kernels.mode import INTERPRETER, MODE
from kernels.sandbox import forkserver, reaper
from kernels.sandbox.domain import DomainError, parse_domain
from kernels.sandbox.judge import judge
from kernels.sandbox.process import StderrTail, how_ended, kernel_env
from kernels.sandbox.source_file import KernelFileError, read_kernel_source

# Longest a child may take to import the user's file (torch and triton included), and one run.
START_TIMEOUT_S = 120.0
# How often a wait for the child looks at the caller's cancel event.
CANCEL_POLL_S = 0.1
RUN_TIMEOUT_S = 120.0
# Largest array a child's message may announce (an output of the largest problem, float64, with
# its guards, is far below it).
MAX_ARRAY_BYTES = 2**31
# The memory a kernel's processes may hold together (proportional set size, torch and triton
# included: 346 MiB on the largest declared problem under the interpreter, 728 MiB on CUDA,
# scripts/kernel_tree_memory.py), and the seconds all runs of one kernel may take together (a
# check runs it on about fifty problems, a few seconds in all for a kernel that works; one
# that hangs on each of them stops after 300 s instead of fifty 120 s timeouts).
MEMORY_LIMIT_BYTES = 2 * 2**30
TIME_BUDGET_S = 300.0
# How long a child whose output ended may take to end by itself before it is ended.
LAST_WORDS_GRACE_S = 2.0
# What --kernel-memory (MiB) and --kernel-time (seconds) accept.
MEMORY_LIMIT_MIB_RANGE = (256, 1 << 20)
TIME_BUDGET_S_RANGE = (1.0, 86_400.0)
# A Python identifier, optionally dotted (a function inside a class or namespace is not one).
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class KernelCancelled(RuntimeError):
    """The caller's cancel event was set while the child was being waited for (it is killed)."""


class KernelSpecError(ValueError):
    """A ``FILE.py:FUNCTION`` that names no loadable kernel (the message names the part)."""


def kernel_limits(memory_mib: int | None, time_s: float | None) -> tuple[int, float]:
    """``--kernel-memory`` (MiB) and ``--kernel-time`` (seconds) checked against their ranges:
    ``(memory limit in bytes, time budget in seconds)``; None is the default.

    Raises:
        ValueError: naming the option and its range.
    """
    memory_mib = MEMORY_LIMIT_BYTES // 2**20 if memory_mib is None else memory_mib
    time_s = TIME_BUDGET_S if time_s is None else time_s
    low, high = MEMORY_LIMIT_MIB_RANGE
    if not low <= memory_mib <= high:
        raise ValueError(f"--kernel-memory must be in [{low}, {high}] MiB; got {memory_mib}")
    low_s, high_s = TIME_BUDGET_S_RANGE
    if not low_s <= time_s <= high_s:
        raise ValueError(
            f"--kernel-time must be in [{low_s:g}, {high_s:g}] seconds; got {time_s:g}"
        )
    return memory_mib * 2**20, float(time_s)


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    """A kernel file and the name of its launcher.

    Attributes:
        path: the file, resolved.
        function: the launcher's name in it.
        sha256: sha256 of the file's bytes when it was named.
    """

    path: Path
    function: str
    sha256: str

    def describe(self) -> str:
        return f"{self.path}:{self.function} (sha256 {self.sha256[:12]}...)"


def parse_kernel_spec(text: str) -> KernelSpec:
    """``FILE.py:FUNCTION`` -> a KernelSpec, the file read once for its hash.

    Raises:
        KernelSpecError: no ``:``, a file that is not a readable ``.py`` file (a regular file
            within :data:`~kernels.sandbox.source_file.MAX_KERNEL_SOURCE_BYTES`), or a function
            name that is not an identifier.
    """
    path_text, sep, function = str(text).rpartition(":")
    if not sep or not path_text:
        raise KernelSpecError(f"--kernel must be FILE.py:FUNCTION; got {text!r}")
    if not _NAME.match(function):
        raise KernelSpecError(f"--kernel FUNCTION must be a Python identifier; got {function!r}")
    path = Path(path_text).expanduser()
    if path.suffix != ".py":
        raise KernelSpecError(f"--kernel FILE must be a .py file; got {path_text!r}")
    if not path.is_file():
        raise KernelSpecError(f"--kernel FILE {path_text!r} is not a readable file")
    try:
        data = read_kernel_source(path, "--kernel FILE")
    except KernelFileError as err:
        raise KernelSpecError(str(err)) from None
    return KernelSpec(path.resolve(), function, hashlib.sha256(data).hexdigest())


@dataclasses.dataclass(frozen=True)
class UserRun:
    """One run of the user's kernel.

    Attributes:
        outcome: "ok", "error" (the launcher raised), "crashed" (the child died), "timeout".
        y: (rows, width) float64 output (NaN-free only if the kernel made it so); None unless ok.
        oob_writes: element indices into the output buffer (``guard`` + row * stride + col
            coordinates) outside every row's data whose bits changed (under any config).
        x_writes: element indices into the input buffer that changed (stores into x).
        refused_out: why the run is checked on the returned tensor alone ("" when ``out=``
            was written).
        detail: the error, the signal, or the timeout, with the tail of the child's stderr.
    """

    outcome: str
    y: np.ndarray | None = None
    oob_writes: tuple[int, ...] = ()
    x_writes: tuple[int, ...] = ()
    refused_out: str = ""
    detail: str = ""
    # Elements of the weight buffer the run changed, and the contract it broke in words
    # (kernels.sandbox.judge): either fails the run.
    weight_writes: tuple[int, ...] = ()
    broken: tuple[str, ...] = ()
    # The machine's faults this run met ("name: cause", kernels.sandbox.interpreter_probe): when
    # any, the run says nothing about the kernel, whatever its outcome.
    not_judged: tuple[str, ...] = ()
    # (config, y) of each autotune config after the first (whose output is ``y``).
    variants: tuple[tuple[str, np.ndarray], ...] = ()
    # The config ``y`` is of ("" for a kernel without autotune).
    config: str = ""
    # Reads out of bounds under the interpreter (kernels.instruments.guarded_reads): (buffer "x" |
    # "weight" | "out", how many, the first element indices into that buffer).
    oob_reads: tuple[tuple[str, int, tuple[int, ...]], ...] = ()


class UserKernel:
    """The user's kernel behind a child process; use as a context manager.

    Raises (on start):
        KernelSpecError: the file does not import, or has no callable ``FUNCTION`` (the
            child's message), or the child dies or hangs while importing it.
    """

    def __init__(
        self,
        spec: KernelSpec,
        *,
        run_timeout_s: float = RUN_TIMEOUT_S,
        pythonpath_first: str = "",
        cancel: Any = None,
        memory_limit_bytes: int = MEMORY_LIMIT_BYTES,
        time_budget_s: float = TIME_BUDGET_S,
    ) -> None:
        self.spec = spec
        self.run_timeout_s = run_timeout_s
        # The kernel's processes together (kernels.sandbox.reaper; 0: none), and the seconds all
        # its runs may take together (0: no budget beyond each run's timeout).
        self.memory_limit_bytes = memory_limit_bytes
        self.time_budget_s = time_budget_s
        self._spent_s = 0.0
        self._folder = ""
        # An event (``is_set()``) polled while waiting for the child: set, the wait ends with
        # KernelCancelled and the child is killed (a window's Cancel during a hanging import).
        self.cancel = cancel
        # A folder searched before the repository (a mutated copy of a package, a kernel's own
        # folder for the siblings of a mutant written elsewhere).
        self.pythonpath_first = pythonpath_first
        self._child: forkserver.ForkedChild | subprocess.Popen[bytes] | None = None
        self._stderr: StderrTail | None = None
        self.mode = ""
        # What the child's interpreter gets wrong (kernels.sandbox.interpreter_probe.Fault.as_dict),
        # why that could not be probed, and the autotune configs each run covers.
        self.machine_faults: list[dict[str, Any]] = []
        # The launcher's declared domain (kernels.sandbox.domain), None when it declares none.
        self.domain: dict[str, Any] | None = None
        self.probe_note = ""
        self.configs: list[str] = []

    def __enter__(self) -> UserKernel:
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        self._folder = tempfile.mkdtemp(prefix="rmsnorm-kernel-")
        # Forked from a server that has torch and triton imported (kernels.sandbox.forkserver), in a
        # session of its own, under a reaper (kernels.sandbox.reaper) with the memory limit; the
        # working folder, and sys.path[0] of `-m`, is a fresh empty folder of its own.
        self._child = forkserver.popen(
            [sys.executable, "-m", "kernels.sandbox.usercode_child", str(self.spec.path),
             self.spec.function, str(int(self.memory_limit_bytes))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=kernel_env(self.pythonpath_first, compiled=MODE != INTERPRETER),
            cwd=self._folder,
        )  # fmt: skip
        self._stderr = StderrTail(self._child.stderr)
        try:
            header = self._read(START_TIMEOUT_S, "importing the kernel file")
        except KernelCancelled:
            self.close()
            raise
        except (TimeoutError, ValueError) as err:
            self.close()
            why = f"did not finish importing within {START_TIMEOUT_S:g} s"
            raise KernelSpecError(
                f"--kernel {self.spec.path}:{self.spec.function}: "
                + (why if isinstance(err, TimeoutError) else str(err))
            ) from None
        if header is None or not header[0].get("ok"):
            detail = header[0].get("error", "") if header else self._last_words()
            self.close()
            raise KernelSpecError(f"--kernel {self.spec.path}:{self.spec.function}: {detail}")
        self.mode = str(header[0].get("mode", ""))
        try:
            self.domain = parse_domain(header[0].get("domain"))
        except DomainError as err:
            self.close()
            raise KernelSpecError(
                f"--kernel {self.spec.path}:{self.spec.function}: {err}"
            ) from None
        self.machine_faults = _fault_list(header[0].get("machine_faults"))
        self.probe_note = str(header[0].get("probe_note", ""))[:500]
        self.configs = _text_list(header[0].get("configs"))

    def close(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            reaper.end_tree(child)
            for stream in (child.stdin, child.stdout):
                if stream is not None:
                    stream.close()
            stderr, self._stderr = self._stderr, None
            if stderr is not None:
                stderr.close()
        folder, self._folder = self._folder, ""
        if folder:
            shutil.rmtree(folder, ignore_errors=True)

    def _last_words(self) -> str:
        child = self._child
        if child is None:
            return ""
        reaper.end_tree(child, grace_s=LAST_WORDS_GRACE_S)
        code = child.returncode
        how = how_ended(code, self.memory_limit_bytes)
        tail = self._stderr.text() if self._stderr is not None else ""
        return f"the kernel's process ended ({how}){': ' + tail.strip() if tail.strip() else ''}"

    def _time_left(self) -> float:
        """Seconds the next run may take: the run timeout, or what is left of the budget."""
        if not self.time_budget_s:
            return self.run_timeout_s
        return min(self.run_timeout_s, self.time_budget_s - self._spent_s)

    def _budget_spent(self) -> str:
        return (
            f"the kernel's time budget of {self.time_budget_s:g} s for all its runs is spent "
            f"(--kernel-time)"
        )

    def _read_exact(self, size: int, deadline: float) -> bytes | None:
        if self._child is None or self._child.stdout is None:
            return None
        fd = self._child.stdout.fileno()
        chunks, left = [], size
        while left:
            remaining = max(0.0, deadline - time.monotonic())
            wait = remaining if self.cancel is None else min(remaining, CANCEL_POLL_S)
            if not select.select([fd], [], [], wait)[0]:
                if self.cancel is not None and self.cancel.is_set():
                    raise KernelCancelled("cancelled while waiting for the kernel's process")
                if time.monotonic() < deadline:
                    continue
                raise TimeoutError
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _read(self, timeout_s: float, doing: str) -> tuple[dict[str, Any], list[np.ndarray]] | None:
        """One message, or None when the child died; TimeoutError when it outlives timeout_s."""
        deadline = time.monotonic() + timeout_s
        line = b""
        while not line.endswith(b"\n"):
            byte = self._read_exact(1, deadline)
            if byte is None:
                return None
            line += byte
            if len(line) > 1 << 16:
                raise ValueError(f"the kernel's process sent a header over 64 KiB while {doing}")
        try:
            header = json.loads(line)
        except RecursionError:
            raise ValueError(
                f"the kernel's process sent a header nested too deep while {doing}"
            ) from None
        sizes = header.get("array_bytes", []) if isinstance(header, dict) else None
        if not isinstance(sizes, list) or not all(
            type(size) is int and 0 <= size <= MAX_ARRAY_BYTES for size in sizes
        ):
            raise ValueError(
                f"the kernel's process sent a header that is not this protocol's while {doing}"
            )
        arrays = []
        for size in sizes:
            blob = self._read_exact(size, deadline)
            if blob is None:
                return None
            arrays.append(np.load(io.BytesIO(blob), allow_pickle=False))
        return header, arrays

    def record(
        self,
        *,
        rows: int,
        width: int,
        dtype: str,
        x_stride: int,
        y_stride: int,
        guard: int,
        eps: float = 1e-6,
    ) -> list[dict[str, Any]]:
        """The launch signatures (:mod:`kernels.instruments.launches`) the launcher launches for a
        problem of this layout, from a dry run in the child (no kernel runs).

        Raises:
            RuntimeError: the launcher raised, or the child died or hung (the message says).
        """
        if self._child is None:
            self._start()
        if self._child is None or self._child.stdin is None:
            raise RuntimeError("the kernel's child process did not start")
        layout = {"rows": rows, "width": width, "dtype": dtype, "x_stride": x_stride,
                  "y_stride": y_stride, "guard": guard, "eps": eps}  # fmt: skip
        from kernels.sandbox.usercode_child import _send

        try:
            _send(self._child.stdin, {"record": layout})
            reply = self._read(self.run_timeout_s, "recording the kernel's launches")
        except TimeoutError:
            self.close()
            raise RuntimeError(f"no launch record within {self.run_timeout_s:g} s") from None
        except (BrokenPipeError, ValueError, OSError) as err:
            detail = self._last_words() or str(err)
            self.close()
            raise RuntimeError(detail) from None
        if reply is None:
            detail = self._last_words()
            self.close()
            raise RuntimeError(detail)
        if not reply[0].get("ok"):
            raise RuntimeError(str(reply[0].get("error", "")))
        launches = reply[0].get("launches", [])
        if not isinstance(launches, list) or not all(isinstance(x, dict) for x in launches):
            self.close()
            raise RuntimeError("the kernel's process answered a launch record of another shape")
        return launches

    def run(
        self,
        x: np.ndarray,
        weight: np.ndarray,
        *,
        eps: float,
        dtype: str,
        x_stride: int,
        y_stride: int | None = None,
        poison: float,
        guard: int,
    ) -> UserRun:
        """Run the kernel once on ``x`` (rows, width) and ``weight`` in ``dtype``."""
        timeout_s = self._time_left()
        if timeout_s <= 0:
            return UserRun("timeout", detail=self._budget_spent())
        if self._child is None:
            self._start()
        if self._child is None or self._child.stdin is None:
            return UserRun("crashed", detail="the kernel's process did not start")
        header = {
            "dtype": dtype,
            "eps": float(eps),
            "x_stride": int(x_stride),
            "y_stride": int(x_stride if y_stride is None else y_stride),
            "poison": float(poison),
            "guard": int(guard),
        }
        from kernels.sandbox.usercode_child import _send

        started = time.monotonic()
        try:
            _send(self._child.stdin, header, (np.asarray(x), np.asarray(weight)))
            reply = self._read(timeout_s, "running the kernel")
        except TimeoutError:
            self._spent_s += time.monotonic() - started
            self.close()
            if timeout_s < self.run_timeout_s:
                return UserRun("timeout", detail=self._budget_spent())
            return UserRun("timeout", detail=f"no result within {self.run_timeout_s:g} s")
        except (BrokenPipeError, ValueError, OSError) as err:
            detail = self._last_words() or str(err)
            self.close()
            return UserRun("crashed", detail=detail)
        self._spent_s += time.monotonic() - started
        if reply is None:
            detail = self._last_words()
            self.close()
            return UserRun("crashed", detail=detail)
        message, arrays = reply
        not_judged = tuple(_text_list(message.get("not_judged")))
        if not message.get("ok"):
            detail = str(message.get("error", ""))
            return UserRun("error", detail=detail, not_judged=not_judged)
        configs = _text_list(message.get("configs")) or [""]
        returned = message.get("returned")
        if len(arrays) != 4 * len(configs) or not (
            isinstance(returned, list)
            and len(returned) == len(configs)
            and all(isinstance(r, dict) for r in returned)
        ):
            self.close()
            detail = (
                f"the kernel's process answered {len(arrays)} arrays, not y and the output, x "
                f"and weight buffers for each of {len(configs)} config(s)"
            )
            return UserRun("crashed", detail=detail)
        try:
            judged = [
                judge(header, x, weight, tuple(arrays[4 * k + 1 : 4 * k + 4]), returned[k])
                for k in range(len(configs))
            ]
        except ValueError as err:
            self.close()
            return UserRun("crashed", detail=str(err))
        broken = tuple(dict.fromkeys(b for j in judged for b in j.broken))
        return UserRun(
            "ok",
            y=arrays[0],
            oob_writes=tuple(sorted({i for j in judged for i in j.out_of_bounds})),
            x_writes=tuple(sorted({i for j in judged for i in j.into_x})),
            weight_writes=tuple(sorted({i for j in judged for i in j.into_weight})),
            broken=broken,
            refused_out=str(message.get("refused_out", "")),
            not_judged=not_judged,
            variants=tuple((configs[k], arrays[4 * k]) for k in range(1, len(configs))),
            config=configs[0],
            oob_reads=_read_list(message.get("oob_reads")),
        )


def _read_list(value: Any) -> tuple[tuple[str, int, tuple[int, ...]], ...]:
    """A child's reads out of bounds, ``{buffer: [count, [indices]]}``, checked and bounded."""
    if not isinstance(value, dict):
        return ()
    reads = []
    for name in ("x", "weight", "out"):
        entry = value.get(name)
        if not (isinstance(entry, list) and len(entry) == 2 and type(entry[0]) is int):
            continue
        first = entry[1] if isinstance(entry[1], list) else []
        indices = tuple(i for i in first[:64] if type(i) is int)
        if entry[0] > 0:
            reads.append((name, entry[0], indices))
    return tuple(reads)


def _text_list(value: Any, most: int = 256) -> list[str]:
    """A child's list of strings, bounded (anything else: empty)."""
    if not isinstance(value, list):
        return []
    return [str(v)[:1000] for v in value[:most] if isinstance(v, str)]


def _fault_list(value: Any) -> list[dict[str, Any]]:
    """A child's list of machine faults, each ``{"name", "cause", ...}`` of strings, bounded."""
    if not isinstance(value, list):
        return []
    faults = []
    for item in value[:32]:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            faults.append(
                {
                    "name": item["name"][:200],
                    "cause": str(item.get("cause", ""))[:1000],
                    "signature": _text_list(item.get("signature"), 64),
                }
            )
    return faults
