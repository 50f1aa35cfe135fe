"""The window's long work as plain, Qt-free jobs (the worker thread only iterates them).

A *job* is a callable ``job(cancel: threading.Event) -> Iterator`` that yields
``(step, total, label)`` progress tuples and, last, its result: an immutable object the GUI
thread may keep (a frozen dataclass, copied arrays, a plain dict). Cancel is cooperative: the
worker checks the event between steps, and a job may check it inside a long step. Every job
here is tested without Qt (tests/inspector_core/test_jobs.py).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from inspector.model import analysis, evidence, launch
from oracle import diagnose
from oracle.spec import Problem

Job = Callable[[threading.Event], Iterator[Any]]
Progress = tuple[int, int, str]


class Cancelled(Exception):
    """A job stopped because its cancel event was set (raised between steps)."""


def is_progress(item: Any) -> bool:
    """Whether a yielded item is a ``(step, total, label)`` progress tuple."""
    return (
        isinstance(item, tuple)
        and len(item) == 3
        and isinstance(item[0], int)
        and isinstance(item[1], int)
        and isinstance(item[2], str)
    )


def failure_text(exc: BaseException) -> str:
    """One line for a failed job: "cancelled", or the exception's type and message."""
    if isinstance(exc, Cancelled):
        return "cancelled"
    return f"{getattr(exc, 'type_name', type(exc).__name__)}: {exc}"


@functools.lru_cache(maxsize=1)
def kernel_environment() -> dict[str, Any]:
    """Mode, device and versions of the kernel floor.

    Called once on the GUI thread when the window is built, so a later run never waits for
    torch's import; without a kernel floor the window still works on the oracle alone.
    """
    try:
        import kernels

        return {
            "available": True,
            "mode": kernels.MODE,
            "reason": getattr(kernels, "MODE_REASON", ""),
            "device": kernels.device_description(),
            "versions": dict(kernels.versions()),
        }
    except Exception as exc:
        return {
            "available": False,
            "mode": "unavailable",
            "reason": f"{type(exc).__name__}: {exc}",
            "device": "no kernel floor",
            "versions": {},
        }


# ---------------------------------------------------------------- analysis


def analysis_job(problem: Problem, mutant: str | None, lut: np.ndarray | None = None) -> Job:
    """A job running :func:`inspector.model.analysis.analysis_steps` (problems too large for the
    GUI thread)."""

    def job(cancel: threading.Event) -> Iterator[Any]:
        yield from analysis.analysis_steps(problem, mutant, lut)

    return job


# ---------------------------------------------------------------- kernel, check, compile, bench


def with_inferred(run: Any) -> Any:
    """A ``pipeline.KernelRun`` with the rrms its output implies (``oracle.diagnose``), computed
    here on the worker so the views only read it."""
    if run is None:
        return None
    problem = run.problem
    inferred = diagnose.inferred_rrms(problem.x, problem.weight, run.y, problem.eps)
    return dataclasses.replace(run, inferred=inferred)


def kernel_job(
    problem: Problem,
    mutant: str | None,
    reference_y: np.ndarray,
    y_exact: np.ndarray | None = None,
    batch_invariant: bool = False,
) -> Job:
    """A job running the kernel once, judged against ``reference_y`` (a
    ``launch.LaunchedRun`` back: the ``KernelRun`` and the layout it launched); ``y_exact``,
    the reference before rounding, saves recomputing it for the bound; ``batch_invariant``
    launches ``kernels.plans.invariant_config``'s layout instead of the default choice."""

    def job(cancel: threading.Event) -> Iterator[Any]:
        yield (0, 2, "loading the kernel (torch + triton)")
        import kernels

        how = f"{kernels.MODE}, {launch.mode_name(batch_invariant)} launch"
        yield (1, 2, f"kernel ({how}){' mutant ' + mutant if mutant else ''}")
        run = launched_kernel_run(
            problem, reference_y, mutant=mutant, y_exact=y_exact, batch_invariant=batch_invariant
        )
        yield with_inferred(run)

    return job


def launched_kernel_run(
    problem: Problem,
    reference_y: np.ndarray,
    *,
    mutant: str | None = None,
    y_exact: np.ndarray | None = None,
    batch_invariant: bool = False,
) -> launch.LaunchedRun:
    """``pipeline.run_and_judge_kernel`` (rstd taken) with the launch mode chosen: the default
    layout, or ``invariant_config(width, itemsize)``'s for the batch-invariant mode; the run
    keeps the layout the launcher reports it launched."""
    from inspector.check.pipeline import judged_run
    from inspector.coverage.proof import run_kernel_on

    run = run_kernel_on(problem, mutant=mutant, rstd=True, batch_invariant=batch_invariant)
    judged = judged_run(problem, run, reference_y, mutant=mutant, rstd=True, y_exact=y_exact)
    return launch.LaunchedRun.of(judged, launch.Launch.of_checked(run, batch_invariant))


def user_kernel_job(
    problem: Problem, spec: Any, reference_y: np.ndarray, y_exact: np.ndarray | None = None
) -> Job:
    """A job running a user's kernel (``kernels.sandbox.usercode.KernelSpec``) once in its child
    process, judged against ``reference_y`` (a ``KernelRun`` back; ``y_exact`` as for
    :func:`kernel_job`). A crash, hang or exception of the kernel fails the job with what
    happened (``user_kernel.UserKernelFailed``)."""

    def job(cancel: threading.Event) -> Iterator[Any]:
        yield (0, 3, f"starting {spec.path.name}'s process (torch + triton)")
        import kernels
        from inspector.check.pipeline import run_and_judge_user_kernel
        from inspector.check.user_kernel import UserImplementation
        from oracle.tiled import POISON

        user = UserImplementation(spec, poison=POISON)
        try:
            yield (1, 3, f"{spec.path.name}:{spec.function} ({user.mode})")
            run = run_and_judge_user_kernel(user, problem, reference_y, y_exact)
        finally:
            user.close()
        yield (2, 3, "inferring its rrms")
        yield with_inferred(dataclasses.replace(run, device=kernels.device_description()))

    return job


def check_job(problem: Problem, config: Any) -> Job:
    """A job draining ``pipeline.check_steps`` (progress, then the ``CheckResult`` with its
    kernel run's inferred rrms and its receipt texts, so History can keep a counterexample the
    moment the check finds it)."""

    def job(cancel: threading.Event) -> Iterator[Any]:
        from inspector.check import pipeline

        last: Progress = (0, 1, "")
        for item in pipeline.check_steps(problem, config):
            if isinstance(item, pipeline.CheckResult):
                if item.kernel is not None:
                    item = dataclasses.replace(item, kernel=with_inferred(item.kernel))
                yield (last[1], last[1], "building the receipt")
                item = dataclasses.replace(item, receipt_texts=evidence.receipt_texts(item))
            elif is_progress(item):
                last = item
            yield item

    return job


def load_kernel_job(spec: Any) -> Job:
    """A job checking that ``spec`` (a ``KernelSpec``) names a kernel: its file imported in a
    child process that finds the callable (``user_kernel.check_loadable``); ``spec`` back, or
    the job fails with ``KernelSpecError`` saying what is wrong; Cancel ends a hanging import
    (the child is killed)."""

    def job(cancel: threading.Event) -> Iterator[Any]:
        yield (0, 1, f"loading {spec.path}:{spec.function} in a child process")
        from inspector.check.user_kernel import check_loadable
        from kernels.sandbox.usercode import KernelCancelled

        try:
            spec_back = check_loadable(spec, cancel)
        except KernelCancelled:
            raise Cancelled from None
        yield spec_back

    return job


def compile_job(dtype: str, width: int, target: str | None) -> Job:
    """A job asking ``kernels.compiler_output`` for one signature (a dict with its ``key``)."""

    def job(cancel: threading.Event) -> Iterator[Any]:
        yield (0, 2, "loading the kernel (torch + triton)")
        import kernels

        yield (1, 2, f"compiling {dtype} width {width} for {target or 'the device'}")
        info = kernels.compiler_output(dtype, width, target)
        result = info.to_dict() if hasattr(info, "to_dict") else dict(info)
        result["key"] = (dtype, width, target)
        yield result

    return job


def bench_job(shapes: str, dtypes: list[str], budget_s: float | None = 300.0) -> Job:
    """A job running ``kernels.bench.iter_benchmark`` (CUDA only); yields the finalized rows.

    Cancel is honoured between measurements (one shape x dtype x implementation each).
    """

    def job(cancel: threading.Event) -> Iterator[Any]:
        yield (0, 1, "loading the benchmark harness")
        from kernels import bench

        shape_list = bench.resolve_shapes(shapes, bench.load_shape_sets())
        impls = list(bench.IMPLEMENTATIONS)
        config = bench.BenchConfig(
            shapes=shape_list, dtypes=list(dtypes), impls=impls, budget_s=budget_s
        )
        rows: list[dict[str, Any]] = []
        for step, total, row in bench.iter_benchmark(config):
            rows.append(row)
            label = f"{row.get('impl')} {row.get('rows')}x{row.get('width')} {row.get('dtype')}"
            yield (step, total, label)
        yield {"shapes": shapes, "dtypes": list(dtypes), "rows": bench.finalize(rows)}

    return job


def mutate_job(kernel: Any, workers: int = 0) -> Job:
    """A job running ``mutate`` on ``kernel`` (a ``KernelSpec``; None: the bundled kernel):
    progress per mutant, then the report as ``mutation.json`` would hold it (a plain dict).

    Cancel is cooperative: mutants not yet started are skipped, the ones running finish, and
    the job then raises :class:`Cancelled`.
    """

    def job(cancel: threading.Event) -> Iterator[Any]:
        import queue
        import tempfile
        from pathlib import Path

        from inspector.mutate.campaign import mutate_report

        yield (0, 1, "loading the kernel in a child process")
        updates: queue.Queue[Any] = queue.Queue()
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                with tempfile.TemporaryDirectory(prefix="rmsnorm-mutate-") as scratch:
                    outcome["report"] = mutate_report(
                        kernel,
                        Path(scratch),
                        jobs=workers,
                        progress=lambda done, total, label: updates.put((done, total, label)),
                        cancelled=cancel.is_set,
                    )
            except BaseException as err:  # handed to the job's thread, raised there
                outcome["error"] = err
            finally:
                updates.put(None)

        thread = threading.Thread(target=run, name="mutate", daemon=True)
        thread.start()
        while (update := updates.get()) is not None:
            yield update
        thread.join()
        if "error" in outcome:
            raise outcome["error"]
        if cancel.is_set():
            raise Cancelled()
        yield outcome["report"]

    return job
