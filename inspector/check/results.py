"""What a check is asked to do and what it gives back: :class:`CheckConfig`, one judged kernel
run (:class:`KernelRun`) and the whole :class:`CheckResult` with its verdict rules (passed:
nothing failed and every run was judged). Built by :mod:`inspector.check.pipeline`; read by the
report, the receipts, the session and the window."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oracle import compare as cmp
from oracle import matrix, scalar, tiled, traffic
from oracle.spec import Problem


@dataclass(frozen=True)
class CheckConfig:
    """What to run.

    Attributes:
        device: "auto" (CUDA if present, else the interpreter on the CPU), "cpu" or "cuda".
        run_kernel: False runs the model side only (and says so).
        poison: value for tail lanes, padding, output gaps and guards.
        compile_target: explicit target for compiler output on a machine without CUDA.
        kernel_spec: a user's kernel (``kernels.sandbox.usercode.KernelSpec``) to prove
            instead of the bundled one: run in a child process, on every fixture, without the
            bundled kernel's mutants, forced layouts or compiler output.
        timing: on a GPU, time the proven kernel on the input's shape after the proof
            (:mod:`inspector.check.timing_stage`); False leaves the receipt's timing absent.
        kernel_memory_bytes: what a user's kernel's processes may hold together
            (``--kernel-memory``; None: ``kernels.sandbox.usercode.MEMORY_LIMIT_BYTES``).
        kernel_time_s: what all its runs may take together (``--kernel-time``; None:
            ``kernels.sandbox.usercode.TIME_BUDGET_S``).
        batch_invariant: run the bundled kernel on the input (and its auto-layout fixtures) in
            ``kernels.rms_norm``'s batch-invariant mode, certify that mode, and require the
            certificate to be bit-identical (``--batch-invariant``; the bundled kernel only).
    """

    device: str = "auto"
    run_kernel: bool = True
    poison: float = tiled.POISON
    compile_target: str = "sm_90"
    kernel_spec: Any = None
    timing: bool = True
    kernel_memory_bytes: int | None = None
    kernel_time_s: float | None = None
    batch_invariant: bool = False


@dataclass(frozen=True)
class StoresOutOfBounds:
    """Where one kernel run stored outside its data, typed once where the kernels' own record
    (``kernels.OobWrite`` of a checked run, a user kernel's element indices) enters the inspector.

    Attributes:
        output: output addresses, row * ``row_stride`` + lane (negative before row 0).
        row_stride: the frame of ``output``: 0 is the problem's row stride; a user kernel's
            output has a guard of one tile between rows.
        into_input: stores into x, as input addresses (row * row_stride + lane): a user
            kernel's, whose x sits in a guarded buffer too.
        buffer: the element indices into the guarded output buffer (``output`` plus the leading
            guard), as a session file keeps them.
    """

    output: tuple[int, ...] = ()
    row_stride: int = 0
    into_input: tuple[int, ...] = ()
    buffer: tuple[int, ...] = ()

    @property
    def count(self) -> int:
        """How many output elements the run stored out of bounds."""
        return len(self.output)

    @classmethod
    def of_checked(cls, writes: Any, guard: int) -> StoresOutOfBounds:
        """A bundled kernel's checked run: its ``kernels.OobWrite``s, ``guard`` elements
        before row 0."""
        buffer = tuple(int(w.address) for w in writes)
        return cls(output=tuple(i - guard for i in buffer), buffer=buffer)

    @classmethod
    def of_user(cls, writes: Any, x_writes: Any, guard: int, row_stride: int) -> StoresOutOfBounds:
        """A user kernel's run: element indices into its guarded output and input buffers."""
        buffer = tuple(int(i) for i in writes)
        return cls(
            output=tuple(i - guard for i in buffer),
            row_stride=row_stride,
            into_input=tuple(int(i) - guard for i in x_writes),
            buffer=buffer,
        )


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
        stores: where it stored out of bounds (:class:`StoresOutOfBounds`).
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
    stores: StoresOutOfBounds
    mode: str
    device: str
    block: int
    num_warps: int
    path: str = ""
    # Loads from a guard or a row's padding (a user kernel under the interpreter:
    # kernels.instruments.guarded_reads), and where, in words.
    oob_reads: int = 0
    oob_read_detail: str = ""
    # An autotuned user kernel's other configs on the same input, each against the scalar
    # reference: (config label, comparison); y is the first config's.
    variant_comparisons: tuple[tuple[str, cmp.Comparison], ...] = ()
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
    """Everything one check produced (:mod:`inspector.check.pipeline`'s docstring has the verdict
    rules)."""

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
    # The receipt's batch_invariance (stages.invariance_stage); None: not made.
    batch_invariance: dict[str, Any] | None = None
    # The check ran the bundled kernel in its batch-invariant mode and required the certificate
    # to be bit-identical (CheckConfig.batch_invariant).
    batch_invariant: bool = False
    # The kernel's launches under compute-sanitizer (stages.sanitizer_stage).
    sanitizer: dict[str, Any] | None = None
    # The launch-layout coverage map and its proofs (stages.coverage_stage).
    coverage: dict[str, Any] | None = None
    # The proven kernel timed on the input's shape (timing_stage.timing_stage), DRAM included.
    timing: dict[str, Any] | None = None

    # The kernel's run on the input, when this machine could not judge it: why ("" otherwise).
    input_not_judged: str = ""
    # What this machine's interpreter got wrong in its probe (a user's kernel under the
    # interpreter; kernels.sandbox.interpreter_probe), and a user kernel's autotune configs, each
    # judged.
    machine_faults: tuple[dict[str, Any], ...] = ()
    autotune_configs: tuple[str, ...] = ()
    # A user kernel's declared domain (kernels.sandbox.domain; None: none declared, or the bundled
    # one).
    declared_domain: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        """Nothing failed and everything was judged (see :attr:`not_judged`)."""
        return not self.failures and not self.not_judged

    @property
    def verdict(self) -> str:
        """ "passed", "failed" (a failure, whatever else could not be judged) or "not judged"
        (nothing failed, but this machine could not judge some run: never a pass)."""
        if self.failures:
            return "failed"
        return "not judged" if self.not_judged else "passed"

    @property
    def not_judged(self) -> tuple[tuple[str, str], ...]:
        """``(what, why)`` of each run this machine could not judge: kernel fixtures (on every
        layout the check forced) and the kernel's run on the input."""
        found: list[tuple[str, str]] = []
        if self.input_not_judged:
            found.append(("the input", self.input_not_judged))
        matrices = [self.kernel_matrix, *self.kernel_path_matrices.values()]
        for kill_matrix in matrices:
            if kill_matrix is not None:
                found += [(o.fixture, o.detail) for o in kill_matrix.not_judged]
        return tuple(dict.fromkeys(found))

    @property
    def out_of_domain(self) -> tuple[str, ...]:
        """The kernel fixtures outside its declared domain (not run: neither passed nor
        failed)."""
        if self.kernel_matrix is None:
            return ()
        return tuple(o.fixture for o in self.kernel_matrix.out_of_domain)

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
