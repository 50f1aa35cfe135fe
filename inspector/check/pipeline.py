"""The whole proof as one Qt-free job: oracle, fixture matrix, real kernel, compile info.

Layer by layer, in the spec's order: the scalar reference and the tiled lane model must agree
(outputs *and* intermediates); the fixture matrix must pass on the faithful model and kill all
eight model mutants; the real kernel (Triton interpreter on a CPU, compiled on CUDA) must agree
with the scalar reference and with ``torch.nn.functional.rms_norm`` in float64, store nothing
out of bounds, and every kernel mutant must be killed by a named fixture.

:func:`check_steps` is a generator that yields ``(step, total, label)`` before each unit of
work and the :class:`CheckResult` last, so a worker thread can report progress and cancel
between steps; :func:`run_check` drains it. Its types are :mod:`inspector.check.results`'s.
This is where the floors meet: ``oracle`` and
``kernels`` never import each other.
"""

from __future__ import annotations

import dataclasses
import platform
from collections.abc import Callable, Generator, Iterator
from typing import Any

import numpy as np

from inspector.check import findings, stages
from inspector.check.results import CheckConfig, CheckResult, KernelRun, StoresOutOfBounds
from inspector.coverage.proof import run_kernel_on
from oracle import compare as cmp
from oracle import fixtures, matrix, scalar, tiled, traffic
from oracle.mutants import MODEL_MUTANTS
from oracle.spec import Problem

TOOL_NAME = "rmsnorm-inspector"
TOOL_VERSION = "0.1.0"

Progress = tuple[int, int, str]


def base_versions() -> dict[str, str]:
    """Versions that do not need torch or triton."""
    return {
        "tool": f"{TOOL_NAME} {TOOL_VERSION}",
        "python": platform.python_version(),
        "numpy": np.__version__,
    }


def kernel_implementation(
    device: str, path: str = "auto", batch_invariant: bool = False
) -> matrix.Implementation:
    """Wrap the kernel as an oracle implementation (problem, poison, mutant); see run_kernel_on
    (``batch_invariant``: the mode's layout, for ``path`` "auto" only)."""

    from kernels.instruments.guarded_reads import checked_reads

    invariant = batch_invariant and path == "auto"

    def run(problem: Problem, poison: float, mutant: str | None) -> matrix.RunOutput:
        result = run_kernel_on(
            problem,
            mutant=mutant,
            poison=poison,
            device=device,
            path=path,
            batch_invariant=invariant,
        )
        count, where = checked_reads(result)
        return matrix.RunOutput(
            y=result.y, oob_writes=len(result.oob_writes), oob_reads=count, oob_read_detail=where
        )

    return run


def torch_float64_reference(problem: Problem) -> np.ndarray:
    """``torch.nn.functional.rms_norm`` in float64, rounded to the problem's dtype."""
    import torch

    from oracle.dtypes import round_to_dtype

    x = torch.from_numpy(np.array(problem.x, dtype=np.float64))
    w = torch.from_numpy(np.array(problem.weight, dtype=np.float64))
    y = torch.nn.functional.rms_norm(x, (problem.width,), w, problem.eps)
    return round_to_dtype(y.numpy(), problem.dtype)


def check_steps(
    problem: Problem, config: CheckConfig | None = None
) -> Iterator[Progress | CheckResult]:
    """Run the whole proof, yielding progress before each step and the result last.

    Args:
        problem: a validated problem (oracle.spec.make_problem).
        config: what to run; defaults to :class:`CheckConfig`.

    Yields:
        ``(step, total, label)`` tuples, then one :class:`CheckResult`.
    """
    config = config or CheckConfig()
    fixture_list = fixtures.FIXTURES
    runnable = [f for f in fixture_list if f.check != "rejection"]
    model_steps = len(fixture_list) + len(MODEL_MUTANTS) * len(runnable)
    kernel_mutants: tuple[str, ...] = ()
    kernel_paths: tuple[str, ...] = ()
    kernel_note = "model only: the kernel was not run (--model-only)"
    kernel_ready = False
    versions = base_versions()
    device = "cpu (numpy oracle only)"
    mode = "model only"
    failures: list[str] = []
    user = None
    kernel_source: dict[str, str] = {"kind": "bundled"}
    spec = config.kernel_spec if config.run_kernel else None
    if spec is not None:
        kernel_source = {
            "kind": "user",
            "path": str(spec.path),
            "function": spec.function,
            "file_sha256": spec.sha256,
        }
    if config.run_kernel:
        try:
            import kernels

            versions.update(kernels.versions())
            versions.update(base_versions())
            if spec is not None:
                from inspector.check.user_kernel import UserImplementation

                limits = {
                    "memory_limit_bytes": config.kernel_memory_bytes,
                    "time_budget_s": config.kernel_time_s,
                }
                user = UserImplementation(
                    spec,
                    poison=config.poison,
                    **{name: value for name, value in limits.items() if value is not None},
                )
                mode = user.mode
                kernel_note = f"user kernel {spec.describe()}, {mode} mode, in a child process"
            else:
                kernel_mutants = tuple(kernels.KERNEL_MUTANTS)
                kernel_paths = tuple(kernels.KERNEL_PATHS)
                mode = kernels.MODE
                kernel_note = f"Triton kernel, {mode} mode ({kernels.MODE_REASON})"
            device = kernels.device_description()
            kernel_ready = True
        except Exception as exc:
            kernel_note = (
                f"user kernel {spec.path}:{spec.function} unavailable: {exc}"
                if spec is not None
                else f"kernel unavailable: {type(exc).__name__}: {exc}"
            )
            failures.append(kernel_note)
    if config.batch_invariant and spec is not None:
        failures.append("batch-invariant mode: the bundled kernel's; a user's kernel has none")
    kernel_steps = (len(fixture_list) + len(kernel_mutants) * len(runnable)) if kernel_ready else 0
    total = 3 + model_steps + (2 + kernel_steps * (1 + len(kernel_paths)) if kernel_ready else 0)
    try:
        result = yield from _steps(
            problem,
            config,
            model_steps,
            kernel_steps,
            total,
            kernel_mutants,
            kernel_paths,
            kernel_ready,
            user,
            failures,
        )
    finally:
        if user is not None:
            user.close()
    yield dataclasses.replace(
        result,
        machine_faults=tuple(user.machine_faults) if user is not None else (),
        autotune_configs=tuple(user.configs) if user is not None else (),
        declared_domain=user.domain if user is not None else None,
        versions=versions,
        device=device,
        mode=mode,
        kernel_note=kernel_note + (user.note() if user is not None else ""),
        kernel_source=kernel_source,
        failures=tuple(failures),
    )


def _steps(
    problem: Problem,
    config: CheckConfig,
    model_steps: int,
    kernel_steps: int,
    total: int,
    kernel_mutants: tuple[str, ...],
    kernel_paths: tuple[str, ...],
    kernel_ready: bool,
    user: Any,
    failures: list[str],
) -> Generator[Progress, None, CheckResult]:
    """The proof's steps after the set-up of :func:`check_steps` (``failures`` grows)."""
    step = 0

    yield (step, total, "scalar reference")
    reference = scalar.reference(problem)
    step += 1
    yield (step, total, "tiled lane model")
    model = tiled.model(problem, poison=config.poison)
    output = cmp.compare(model.y, reference.y, cmp.TOLERANCES[problem.dtype])
    intermediates = cmp.compare(
        np.concatenate([model.mean_square, model.rrms]),
        np.concatenate([reference.mean_square, reference.rrms]),
        cmp.INTERMEDIATE_TOLERANCE,
    )
    if not output.passed:
        failures.append("tiled model vs scalar reference: " + output.describe())
    if not intermediates.passed:
        failures.append("mean square / rrms, tiled vs scalar: " + intermediates.describe())
    if model.gap_writes:
        failures.append(f"tiled model wrote {len(model.gap_writes)} gap element(s)")
    step += 1

    cache = matrix.ReferenceCache()
    model_matrix = yield from _matrix_stage(
        matrix.model_implementation, MODEL_MUTANTS, "model", cache, step, total
    )
    step += model_steps
    failures += _matrix_failures(model_matrix)

    kernel_run = None
    kernel_matrix = None
    diagnosis: tuple[str, ...] = ()
    path_matrices: dict[str, matrix.KillMatrix] = {}
    compile_info = None
    invariance = sanitizer = coverage = timing = None
    input_not_judged = ""
    if kernel_ready:
        yield (step, total, "kernel on the input")
        try:
            if user is not None:
                kernel_run = run_and_judge_user_kernel(
                    user, problem, reference.y, reference.y_exact
                )
            else:
                kernel_run = run_and_judge_kernel(
                    problem,
                    reference.y,
                    poison=config.poison,
                    device=config.device,
                    y_exact=reference.y_exact,
                    batch_invariant=config.batch_invariant,
                )
            found, diagnosis = findings.kernel_run_findings(kernel_run, problem, reference)
            failures += found
        except matrix.NotJudged as exc:
            input_not_judged = str(exc)
        except matrix.OutOfDomain as exc:
            failures.append(f"the input is outside the kernel's declared domain: {exc}")
        except Exception as exc:
            failures.append(f"kernel run failed: {type(exc).__name__}: {exc}")
        step += 1
        implementation = (
            user
            if user is not None
            else kernel_implementation(config.device, batch_invariant=config.batch_invariant)
        )
        kernel_matrix = yield from _matrix_stage(
            implementation, kernel_mutants, "kernel", cache, step, total
        )
        step += kernel_steps
        failures += _matrix_failures(kernel_matrix)
        for path in kernel_paths:
            path_matrix = yield from _matrix_stage(
                kernel_implementation(config.device, path),
                kernel_mutants,
                f"kernel[{path}]",
                cache,
                step,
                total,
            )
            path_matrices[path] = path_matrix
            step += kernel_steps
            failures += _matrix_failures(path_matrix)
        if user is None:
            yield (step, total, "batch invariance")
            invariance = stages.invariance_stage(
                problem, config.device, batch_invariant=config.batch_invariant
            )
            if config.batch_invariant:
                failures += stages.invariance_failures(invariance)
        yield (step, total, "compute-sanitizer")
        sanitizer = stages.sanitizer_stage(problem, None if user is None else user.spec)
        failures += stages.sanitizer_failures(sanitizer)
        if user is None:
            yield (step, total, "coverage map")
            coverage = stages.coverage_stage()
            failures += stages.coverage_failures(coverage)
            yield (step, total, "compiler output")
            compile_info = stages.compile_stage(problem, config.compile_target)
        yield (step, total, "timing")
        timing = _timing(problem, config, failures)
        step += 1

    return CheckResult(
        problem=problem,
        scalar=reference,
        tiled=model,
        output=output,
        intermediates=intermediates,
        model_matrix=model_matrix,
        traffic=traffic.ledger(problem),
        kernel=kernel_run,
        kernel_matrix=kernel_matrix,
        kernel_note="",
        compile=compile_info,
        versions={},
        device="",
        mode="",
        kernel_path_matrices=path_matrices,
        batch_invariance=invariance,
        sanitizer=sanitizer,
        coverage=coverage,
        diagnosis=diagnosis,
        timing=timing,
        input_not_judged=input_not_judged,
        batch_invariant=config.batch_invariant,
    )


def _timing(problem: Problem, config: CheckConfig, failures: list[str]) -> dict[str, Any]:
    """The receipt's timing: the proven kernel on the input's shape, or why it is absent."""
    from inspector.check import timing_stage

    if not config.timing:
        return {"absent": "not asked for (check --no-timing)"}
    if failures:
        return {"absent": "not timed: the check failed; a kernel is timed once it is proven"}
    return timing_stage.timing_stage(problem, config.kernel_spec)


def _matrix_stage(
    implementation: matrix.Implementation,
    mutants: tuple[str, ...],
    target: str,
    cache: matrix.ReferenceCache,
    step: int,
    total: int,
) -> Generator[Progress, None, matrix.KillMatrix]:
    """One kill matrix, its progress offset by ``step``; returns the matrix (``yield from``)."""
    for item in matrix.kill_matrix_steps(
        implementation, mutants, fixtures.FIXTURES, target=target, cache=cache
    ):
        if isinstance(item, matrix.KillMatrix):
            return item
        yield (step + item[0], total, item[2])
    raise RuntimeError(f"{target} kill matrix produced no result")  # pragma: no cover


def _matrix_failures(result: matrix.KillMatrix) -> list[str]:
    found = [
        f"{result.target} fixture {o.fixture}: expected {o.expected}, got {o.actual} ({o.detail})"
        for o in result.baseline
        if not o.passed and o.actual not in matrix.NO_VERDICT
    ]
    found += [f"{result.target} mutant {name} SURVIVED every fixture" for name in result.survivors]
    return found


def run_and_judge_kernel(
    problem: Problem,
    reference_y: np.ndarray,
    *,
    mutant: str | None = None,
    poison: float = tiled.POISON,
    device: str = "auto",
    rstd: bool = False,
    y_exact: np.ndarray | None = None,
    batch_invariant: bool = False,
) -> KernelRun:
    """Run the kernel once (:func:`run_kernel_on`) and judge its output.

    Args:
        problem: a validated problem.
        reference_y: the scalar reference's output for ``problem``.
        mutant: None for the real kernel, else one of ``kernels.KERNEL_MUTANTS``.
        poison: value of the guard regions and the row padding.
        device: "auto" | "cpu" | "cuda".
        rstd: also take the kernel's own per-row rrms (``KernelRun.rstd``).
        y_exact: the exact output (``ScalarResult.y_exact``) for the bound; None computes it.
        batch_invariant: launch the layout of the kernel's batch-invariant mode.

    Returns:
        The run with both comparisons, the per-row errors and every out-of-bounds store.
    """
    run = run_kernel_on(
        problem,
        mutant=mutant,
        poison=poison,
        device=device,
        rstd=rstd,
        batch_invariant=batch_invariant,
    )
    return judged_run(problem, run, reference_y, mutant=mutant, rstd=rstd, y_exact=y_exact)


def judged_run(
    problem: Problem,
    run: Any,
    reference_y: np.ndarray,
    *,
    mutant: str | None = None,
    rstd: bool = False,
    y_exact: np.ndarray | None = None,
) -> KernelRun:
    """A ``kernels.CheckedRun`` of ``problem`` judged: both comparisons, the per-row errors,
    every out-of-bounds store and the error bound (``rstd``: keep the kernel's rrms)."""
    return KernelRun(
        **_judged(problem, run.y, reference_y),
        mutant=mutant,
        stores=StoresOutOfBounds.of_checked(run.oob_writes, int(run.guard)),
        mode=run.mode,
        device=run.device,
        block=int(run.block),
        num_warps=int(run.num_warps),
        path=str(run.path),
        rstd=np.asarray(run.rstd) if rstd else None,
        **findings.bound_fields(
            problem,
            run.y,
            _exact(problem, y_exact),
            path=str(run.path),
            block=int(run.block),
            peel=int(run.peel),
            mode=run.mode,
        ),
    )


def _exact(problem: Problem, y_exact: np.ndarray | None) -> np.ndarray:
    return scalar.reference(problem).y_exact if y_exact is None else y_exact


def _judged(problem: Problem, y: np.ndarray, reference_y: np.ndarray) -> dict[str, Any]:
    """The judging fields of a KernelRun: ``y`` against the scalar reference and torch float64."""
    tolerance = cmp.TOLERANCES[problem.dtype]
    row_abs, row_rel = cmp.max_errors(y, reference_y)
    return {
        "problem": problem,
        "y": np.array(y),
        "comparison": cmp.compare(y, reference_y, tolerance),
        "torch_comparison": cmp.compare(y, torch_float64_reference(problem), tolerance),
        "row_max_abs": row_abs,
        "row_max_rel": row_rel,
    }


def run_and_judge_user_kernel(
    user: Any, problem: Problem, reference_y: np.ndarray, y_exact: np.ndarray | None = None
) -> KernelRun:
    """A user's kernel (``inspector.check.user_kernel.UserImplementation``) on ``problem``, judged
    like the bundled kernel; its output stores are addresses in the output's own frame (a tile of
    guard between rows), its stores into x in the input's."""
    from inspector.check.user_kernel import describe_reads

    run, guard, y_stride = user.run(problem, user.poison)
    return KernelRun(
        **_judged(problem, run.y, reference_y),
        mutant=None,
        stores=StoresOutOfBounds.of_user(run.oob_writes, run.x_writes, guard, y_stride),
        mode=user.mode,
        device="",
        block=guard,
        num_warps=0,
        path="user",
        oob_reads=sum(count for _, count, _ in run.oob_reads),
        oob_read_detail=describe_reads(run.oob_reads, problem, guard, y_stride),
        variant_comparisons=tuple(
            (label, cmp.compare(y, reference_y, cmp.TOLERANCES[problem.dtype]))
            for label, y in run.variants
        ),
        **findings.bound_fields(
            problem, run.y, _exact(problem, y_exact), path="user", block=0, peel=0, mode=""
        ),
    )


def run_check(
    problem: Problem,
    config: CheckConfig | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> CheckResult:
    """Drain :func:`check_steps`, forwarding progress; returns the result."""
    for item in check_steps(problem, config):
        if isinstance(item, CheckResult):
            return item
        if progress is not None:
            progress(*item)
    raise RuntimeError("check produced no result")  # pragma: no cover
