"""A user's kernel (``kernels.sandbox.usercode``) as an implementation of the fixture matrix and as
the kernel the check runs on its input.

Every run goes to the kernel's child process: ``x`` in a buffer with the problem's row stride and
a poisoned guard of one power-of-two tile before and after, the output a view with one tile of
guard before the first row, between rows and after the last. A run that crashes, hangs or
raises fails its fixture with what happened; a store into a guard or into ``x`` is counted as an
out-of-bounds write. A launcher that refuses ``out=`` is checked on its returned tensor, and the
note says so. A run that used an operation the child's interpreter gets wrong
(``kernels.sandbox.interpreter_probe``) raises ``oracle.matrix.NotJudged``: the machine's fault,
never a verdict on the kernel. An autotuned kernel runs every config
(``kernels.sandbox.autotuned``), each judged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels.instruments.guarded_reads import describe
from kernels.sandbox.domain import outside
from kernels.sandbox.usercode import (
    MEMORY_LIMIT_BYTES,
    RUN_TIMEOUT_S,
    TIME_BUDGET_S,
    KernelSpec,
    UserKernel,
    UserRun,
    parse_kernel_spec,
)
from oracle import matrix
from oracle.spec import Problem


def loadable_kernel_spec(text: str, cancel: Any = None) -> KernelSpec:
    """``FILE.py:FUNCTION`` as a user typed it, parsed once (:func:`check_loadable` then).

    Raises:
        kernels.sandbox.usercode.KernelSpecError: as :func:`check_loadable`, or the part of ``text``
            that is wrong.
        kernels.sandbox.usercode.KernelCancelled: as :func:`check_loadable`.
    """
    return check_loadable(parse_kernel_spec(text), cancel)


def check_loadable(spec: KernelSpec, cancel: Any = None) -> KernelSpec:
    """``spec`` back once its file was imported in a child process that found a callable
    ``FUNCTION`` there; ``cancel`` (an event) ends the wait for it.

    Raises:
        kernels.sandbox.usercode.KernelSpecError (a ValueError): the child's error importing
            the file.
        kernels.sandbox.usercode.KernelCancelled: ``cancel`` was set first (the child is
            killed).
    """
    with UserKernel(spec, cancel=cancel):
        pass
    return spec


def guarded_layout(problem: Problem) -> tuple[int, int]:
    """``(guard, output row stride)`` of a user kernel's run on ``problem``: one power-of-two
    tile of the row's width as the guard, and as the gap between output rows."""
    block = 1 << max(0, int(problem.width - 1).bit_length())
    return block, problem.width + block


class UserKernelFailed(RuntimeError):
    """One run of the user's kernel crashed, hung or raised (the message says which)."""


class UserImplementation:
    """``(problem, poison, mutant) -> RunOutput`` over one child process (restarted after a
    crash); call :meth:`close` when done."""

    def __init__(
        self,
        spec: KernelSpec,
        *,
        poison: float,
        pythonpath_first: str = "",
        run_timeout_s: float = RUN_TIMEOUT_S,
        memory_limit_bytes: int = MEMORY_LIMIT_BYTES,
        time_budget_s: float = TIME_BUDGET_S,
    ) -> None:
        self.spec = spec
        self.poison = poison
        self.kernel = UserKernel(
            spec,
            pythonpath_first=pythonpath_first,
            run_timeout_s=run_timeout_s,
            memory_limit_bytes=memory_limit_bytes,
            time_budget_s=time_budget_s,
        ).__enter__()
        self.mode = self.kernel.mode
        # What the launcher declares it supports (kernels.sandbox.domain); None: everything.
        self.domain = self.kernel.domain
        self.refused_out = ""

    def close(self) -> None:
        self.kernel.close()

    def note(self) -> str:
        """What the receipt must add: a launcher checked on its output alone, an interpreter
        that could not be probed (its faults then go unseen)."""
        note = ""
        if self.refused_out:
            note += f"; out= refused ({self.refused_out}), checked on its returned output alone"
        if self.kernel.probe_note:
            note += f"; {self.kernel.probe_note}: a fault of this machine would show as a failure"
        return note

    def run(self, problem: Problem, poison: float) -> tuple[UserRun, int, int]:
        """One run; returns it with the output buffer's guard and row stride.

        Raises:
            oracle.matrix.OutOfDomain: ``problem`` is outside the kernel's declared domain.
            oracle.matrix.NotJudged: the run met a fault of this machine's interpreter.
            UserKernelFailed: the run crashed, hung or raised, or broke the launcher's contract
                (``kernels.sandbox.judge.contract_broken``: another dtype, columns that are not
                contiguous, a result in x's or the weight's memory, a changed weight).
        """
        why = outside(self.domain, problem.width, problem.dtype, problem.row_stride)
        if why:
            raise matrix.OutOfDomain(why)
        block, y_stride = guarded_layout(problem)
        x = np.asarray(problem.x, dtype=np.float64)
        weight = np.asarray(problem.weight, dtype=np.float64)
        run = self.kernel.run(
            x,
            weight,
            eps=problem.eps,
            dtype=problem.dtype,
            x_stride=problem.row_stride,
            y_stride=y_stride,
            poison=poison,
            guard=block,
        )
        if run.not_judged:
            raise matrix.NotJudged(
                "; ".join(run.not_judged)
                + " (the kernel ran into it; run the check with --device cuda on a GPU)"
            )
        if run.outcome != "ok":
            raise UserKernelFailed(f"user kernel {run.outcome}: {run.detail}")
        if run.broken:
            raise UserKernelFailed(f"user kernel broke its contract: {'; '.join(run.broken)}")
        if run.refused_out and not self.refused_out:
            self.refused_out = run.refused_out
        return run, block, y_stride

    def __call__(self, problem: Problem, poison: float, mutant: str | None) -> matrix.RunOutput:
        if mutant is not None:
            raise ValueError(f"a user kernel has no built-in mutants; got {mutant!r}")
        run, guard, y_stride = self.run(problem, poison)
        assert run.y is not None
        variants = ((run.config, run.y), *run.variants) if run.variants else ()
        return matrix.RunOutput(
            y=run.y,
            oob_writes=len(run.oob_writes) + len(run.x_writes),
            oob_reads=sum(count for _, count, _ in run.oob_reads),
            oob_read_detail=describe_reads(run.oob_reads, problem, guard, y_stride),
            variants=variants,
        )

    @property
    def machine_faults(self) -> list[dict[str, Any]]:
        """What this machine's interpreter gets wrong (empty when compiled, or none found)."""
        return self.kernel.machine_faults

    @property
    def configs(self) -> list[str]:
        """The autotune configs each run covers (empty: the kernel does not autotune)."""
        return self.kernel.configs


def describe_reads(
    reads: tuple[tuple[str, int, tuple[int, ...]], ...], problem: Problem, guard: int, y_stride: int
) -> str:
    """A run's reads out of bounds in words (:func:`kernels.instruments.guarded_reads.describe`)."""
    return describe(reads, problem.rows, problem.width, problem.row_stride, y_stride, guard)
