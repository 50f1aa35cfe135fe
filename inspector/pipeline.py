"""The whole proof as one Qt-free job: oracle, fixture matrix, real kernel, compile info.

Layer by layer, in the spec's order: the scalar reference and the tiled lane model must agree
(outputs *and* intermediates); the fixture matrix must pass on the faithful model and kill all
eight model mutants; the real kernel (Triton interpreter on a CPU, compiled on CUDA) must agree
with the scalar reference and with ``torch.nn.functional.rms_norm`` in float64, store nothing
out of bounds, and every kernel mutant must be killed by a named fixture.

:func:`check_steps` is a generator that yields ``(step, total, label)`` before each unit of
work and the :class:`CheckResult` last, so a worker thread can report progress and cancel
between steps; :func:`run_check` drains it. This is where the floors meet: ``oracle`` and
``kernels`` never import each other.
"""

from __future__ import annotations

import dataclasses
import platform
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inspector import check_stages, run_findings
from oracle import compare as cmp
from oracle import fixtures, matrix, scalar, tiled, traffic
from oracle.mutants import MODEL_MUTANTS
from oracle.spec import Problem

TOOL_NAME = "rmsnorm-inspector"
TOOL_VERSION = "0.1.0"

Progress = tuple[int, int, str]


@dataclass(frozen=True)
class CheckConfig:
    """What to run.

    Attributes:
        device: "auto" (CUDA if present, else the interpreter on the CPU), "cpu" or "cuda".
        run_kernel: False runs the model side only (and says so).
        poison: value for tail lanes, padding, output gaps and guards.
        compile_target: explicit target for compiler output on a machine without CUDA.
        kernel_spec: a user's kernel (``kernels.usercode.KernelSpec``) to prove instead of the
            bundled one: run in a child process, on every fixture, without the bundled kernel's
            mutants, forced layouts or compiler output.
        timing: on a GPU, time the proven kernel on the input's shape after the proof
            (:mod:`inspector.timing_stage`); False leaves the receipt's timing absent.
    """

    device: str = "auto"
    run_kernel: bool = True
    poison: float = tiled.POISON
    compile_target: str = "sm_90"
    kernel_spec: Any = None
    timing: bool = True


@dataclass(frozen=True)
class KernelRun:
    """One run of the real kernel (or a kernel mutant) on a problem, judged against two
    references; :func:`run_and_judge_kernel` is the one place it is built.

    Attributes:
        problem: the problem it ran on (results for an older input are recognised by it).
        mutant: None for the real kernel, else the kernel mutant switched on.
        y: its output, (rows, width).
        comparison: ``y`` against the scalar reference.
        torch_comparison: ``y`` against ``torch.nn.functional.rms_norm`` in float64.
        row_max_abs: per-row max abs error against the scalar reference.
        row_max_rel: per-row max rel error against the scalar reference.
        oob_writes: every guard element the kernel changed (``kernels.OobWrite``).
        oob_addresses: the same stores as output addresses (row * row_stride + lane; negative
            for the leading guard), as the lane grid draws them.
        mode: "interpreter" or "compiled".
        device: where it ran.
        block: lanes per program.
        num_warps: warps per program.
        path: the launch layout the launcher chose.
    """

    problem: Problem
    mutant: str | None
    y: np.ndarray
    comparison: cmp.Comparison
    torch_comparison: cmp.Comparison
    row_max_abs: np.ndarray
    row_max_rel: np.ndarray
    oob_writes: tuple[Any, ...]
    oob_addresses: tuple[int, ...]
    mode: str
    device: str
    block: int
    num_warps: int
    path: str = ""
    # The output frame of oob_addresses (0: the problem's row stride; a user kernel's output has
    # a guard of one tile between rows) and stores into x (input addresses, row * row_stride +
    # lane): a user kernel only, whose x sits in a guarded buffer too.
    oob_row_stride: int = 0
    input_writes: tuple[int, ...] = ()
    # oracle.diagnose.inferred_rrms of y, when the window's job computed it off the GUI thread.
    inferred: Any = None
    # The bundled kernel's own per-row rrms (its rstd output), when the run asked for it.
    rstd: np.ndarray | None = None
    # Each row's max |y - exact y| and its a-priori bound (oracle.error_bound; None for a
    # user's kernel), the additions per square the bound assumes, a truncating output rounding.
    row_exact_error: np.ndarray | None = None
    row_error_bound: np.ndarray | None = None
    bound_adds: int | None = None
    bound_truncating: bool = False


@dataclass(frozen=True)
class CheckResult:
    """Everything one check produced; see the module docstring for the verdict rules."""

    problem: Problem
    scalar: scalar.ScalarResult
    tiled: tiled.TiledResult
    output: cmp.Comparison
    intermediates: cmp.Comparison
    model_matrix: matrix.KillMatrix
    traffic: traffic.Traffic
    kernel: KernelRun | None
    kernel_matrix: matrix.KillMatrix | None
    kernel_note: str
    compile: dict[str, Any] | None
    versions: dict[str, str]
    device: str
    mode: str
    failures: tuple[str, ...] = field(default_factory=tuple)
    # Every launch layout of the tuned kernel, forced, against every fixture and mutant: the
    # auto choice above covers what the input gets; these cover what other shapes get.
    kernel_path_matrices: dict[str, matrix.KillMatrix] = field(default_factory=dict)
    # Which kernel: {"kind": "bundled"} or {"kind": "user", "path", "function", "file_sha256"}.
    kernel_source: dict[str, str] = field(default_factory=lambda: {"kind": "bundled"})
    # Where a failing kernel output parts from the reference (oracle.diagnose), else empty.
    diagnosis: tuple[str, ...] = ()
    # Its receipt (JSON, CSV texts), built by the window's job off the GUI thread.
    receipt_texts: tuple[str, str] | None = None
    # The receipt's batch_invariance (check_stages.invariance_stage); None: not made.
    batch_invariance: dict[str, Any] | None = None
    # The kernel's launches under compute-sanitizer (check_stages.sanitizer_stage).
    sanitizer: dict[str, Any] | None = None
    # The launch-layout coverage map and its proofs (check_stages.coverage_stage).
    coverage: dict[str, Any] | None = None
    # The proven kernel timed on the input's shape (timing_stage.timing_stage), DRAM included.
    timing: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def row_max_abs(self) -> np.ndarray:
        """Per-row max abs error of the implementation under test (kernel, else model)."""
        if self.kernel is not None:
            return self.kernel.row_max_abs
        return cmp.max_errors(self.tiled.y, self.scalar.y)[0]

    @property
    def row_max_rel(self) -> np.ndarray:
        if self.kernel is not None:
            return self.kernel.row_max_rel
        return cmp.max_errors(self.tiled.y, self.scalar.y)[1]

    @property
    def errors_source(self) -> str:
        return "kernel vs scalar reference" if self.kernel else "tiled model vs scalar reference"

    @property
    def headline(self) -> cmp.Comparison:
        """The comparison the receipt's ``errors`` section reports."""
        return self.kernel.comparison if self.kernel is not None else self.output


def base_versions() -> dict[str, str]:
    """Versions that do not need torch or triton."""
    return {
        "tool": f"{TOOL_NAME} {TOOL_VERSION}",
        "python": platform.python_version(),
        "numpy": np.__version__,
    }


def run_kernel_on(
    problem: Problem,
    *,
    mutant: str | None = None,
    poison: float = tiled.POISON,
    device: str = "auto",
    path: str = "auto",
    rstd: bool = False,
) -> Any:
    """The one place a validated problem meets ``kernels.run_checked`` (a CheckedRun back).

    Args:
        problem: a validated problem; its x and weight are copied (torch wants writable arrays).
        mutant: None for the real kernel, else one of ``kernels.KERNEL_MUTANTS``.
        poison: value of the guard regions and the row padding.
        device: "auto" | "cpu" | "cuda".
        path: the launch layout: "auto" (the launcher's choice) or one of kernels.KERNEL_PATHS.
        rstd: also take the kernel's own per-row rrms (its optional rstd output).
    """
    import kernels

    return kernels.run_checked(
        np.array(problem.x),
        np.array(problem.weight),
        eps=problem.eps,
        dtype=problem.dtype,
        row_stride=problem.row_stride,
        mutant=mutant,
        poison=poison,
        device=device,
        path=path,
        rstd=rstd,
    )


def kernel_implementation(device: str, path: str = "auto") -> matrix.Implementation:
    """Wrap the kernel as an oracle implementation (problem, poison, mutant); see run_kernel_on."""

    def run(problem: Problem, poison: float, mutant: str | None) -> matrix.RunOutput:
        result = run_kernel_on(problem, mutant=mutant, poison=poison, device=device, path=path)
        return matrix.RunOutput(y=result.y, oob_writes=len(result.oob_writes))

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
                from inspector.userkernel import UserImplementation

                user = UserImplementation(spec, poison=config.poison)
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
    if kernel_ready:
        yield (step, total, "kernel on the input")
        try:
            if user is not None:
                kernel_run = run_and_judge_user_kernel(
                    user, problem, reference.y, reference.y_exact
                )
            else:
                kernel_run = run_and_judge_kernel(
                    problem, reference.y, poison=config.poison, device=config.device,
                    y_exact=reference.y_exact,
                )  # fmt: skip
            found, diagnosis = run_findings.kernel_run_findings(kernel_run, problem, reference)
            failures += found
        except Exception as exc:
            failures.append(f"kernel run failed: {type(exc).__name__}: {exc}")
        step += 1
        implementation = user if user is not None else kernel_implementation(config.device)
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
            invariance = check_stages.invariance_stage(problem, config.device)
        yield (step, total, "compute-sanitizer")
        sanitizer = check_stages.sanitizer_stage(problem, None if user is None else user.spec)
        failures += check_stages.sanitizer_failures(sanitizer)
        if user is None:
            yield (step, total, "coverage map")
            coverage = check_stages.coverage_stage()
            failures += check_stages.coverage_failures(coverage)
            yield (step, total, "compiler output")
            compile_info = check_stages.compile_stage(problem, config.compile_target)
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
    )


def _timing(problem: Problem, config: CheckConfig, failures: list[str]) -> dict[str, Any]:
    """The receipt's timing: the proven kernel on the input's shape, or why it is absent."""
    from inspector import timing_stage

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
        if not o.passed
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

    Returns:
        The run with both comparisons, the per-row errors and every out-of-bounds store.
    """
    run = run_kernel_on(problem, mutant=mutant, poison=poison, device=device, rstd=rstd)
    guard = int(getattr(run, "guard", 0))
    return KernelRun(
        **_judged(problem, run.y, reference_y),
        mutant=mutant,
        oob_writes=tuple(run.oob_writes),
        oob_addresses=tuple(int(w.address) - guard for w in run.oob_writes),
        mode=run.mode,
        device=run.device,
        block=int(run.block),
        num_warps=int(run.num_warps),
        path=str(getattr(run, "path", "")),
        rstd=np.asarray(run.rstd) if rstd else None,
        **run_findings.bound_fields(
            problem,
            run.y,
            _exact(problem, y_exact),
            path=str(run.path),
            block=int(run.block),
            peel=int(getattr(run, "peel", 0)),
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
    """A user's kernel (``inspector.userkernel.UserImplementation``) on ``problem``, judged like
    the bundled kernel; its output stores are addresses in the output's own frame (a tile of
    guard between rows), its stores into x in the input's."""
    run, guard, y_stride = user.run(problem, user.poison)
    return KernelRun(
        **_judged(problem, run.y, reference_y),
        mutant=None,
        oob_writes=tuple(run.oob_writes),
        oob_addresses=tuple(int(i) - guard for i in run.oob_writes),
        mode=user.mode,
        device="",
        block=guard,
        num_warps=0,
        path="user",
        oob_row_stride=y_stride,
        input_writes=tuple(int(i) - guard for i in run.x_writes),
        **run_findings.bound_fields(
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
