"""``main.py check``: the problem from its options, the proof, the receipts, the session, and
the exit code (0 passed, 1 something failed, 3 nothing failed but not everything was judged on
this machine; 2, bad input, is raised as ``UsageError`` for :func:`inspector.cli.entry.main`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from inspector.cli.guards import (
    UsageError,
    check_session_target,
    fail_usage,
    one_line,
    path_argument,
    run_locks,
)

DEFAULT_ROWS = 4
DEFAULT_WIDTH = 70
DEFAULT_SEED = 0
DEFAULT_EPS = "1e-6"

EXIT_OK, EXIT_FAILED = 0, 1
#: Nothing failed, but this machine could not judge every run (its interpreter gets an
#: operation the kernel uses wrong): the kernel is neither passed nor failed here.
EXIT_NOT_JUDGED = 3


def _build_problem(args: argparse.Namespace) -> Any:
    """The validated problem from the check options (ValidationError / UsageError)."""
    from oracle import fixtures
    from oracle.spec import ValidationError, make_problem, synthetic_problem

    dtype = args.dtype if args.dtype is not None else "float32"
    eps = args.eps if args.eps is not None else DEFAULT_EPS

    def with_weight(x: Any, name: str, rows: Any = None, width: Any = None) -> Any:
        return make_problem(
            x,
            args.weight,
            eps=eps,
            dtype=dtype,
            row_stride=args.row_stride,
            rows=rows,
            width=width,
            name=name,
        )

    if args.fixture is not None:
        clashes = [
            f"--{name.replace('_', '-')}"
            for name in ("rows", "width", "dtype", "eps", "x", "weight", "row_stride", "seed")
            if getattr(args, name) is not None
        ]
        if clashes:
            fail_usage(f"fixture: cannot be combined with {', '.join(clashes)}")
        try:
            fixture = fixtures.get(args.fixture)
        except ValueError as exc:
            fail_usage(str(exc))
        try:
            return fixture.build()
        except ValidationError as exc:
            fail_usage(
                f"fixture: {fixture.name} is a malformed fixture; its input is rejected ({exc})"
            )
    if args.x is not None:
        if args.seed is not None:
            fail_usage("seed: only for synthetic input; it cannot be combined with --x")
        if args.weight is None:
            raise ValidationError(
                "weight", None, "width values", "weight: missing; --x needs --weight (width values)"
            )
        return with_weight(args.x, "command line", rows=args.rows, width=args.width)
    synthetic = synthetic_problem(
        args.rows if args.rows is not None else DEFAULT_ROWS,
        args.width if args.width is not None else DEFAULT_WIDTH,
        seed=args.seed if args.seed is not None else DEFAULT_SEED,
        eps=eps,
        dtype=dtype,
        row_stride=args.row_stride,
    )
    if args.weight is None:
        return synthetic
    return with_weight(synthetic.x, synthetic.name + " with given weights")


def _check_device(device: str) -> None:
    if device == "cpu":
        # The interpreter must be chosen before triton decorates the kernel (kernels.mode).
        os.environ.setdefault("TRITON_INTERPRET", "1")
        return
    if device == "cuda":
        try:
            import torch
        except ImportError:
            fail_usage("device: cuda requested but torch is not installed")
        if not torch.cuda.is_available():
            fail_usage("device: cuda requested but no CUDA device is available (try --device cpu)")


class _Progress:
    """Progress lines on stderr: one per stage (label prefix before ':'), not per step."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.stage = ""

    def __call__(self, step: int, total: int, label: str) -> None:
        stage = label.split(":", 1)[0]
        if stage in ("model", "kernel") and ":" in label:
            stage = f"{stage}: faithful implementation on every fixture"
        if self.quiet or stage == self.stage:
            return
        self.stage = stage
        width = len(str(total))
        print(f"[{step:>{width}}/{total}] {stage}", file=sys.stderr, flush=True)


def _report(result: Any, receipt: dict[str, Any], out_dir: Path) -> list[str]:
    """The check's report (``inspector.check.report``), then the receipt's lines and paths."""
    from inspector.check.report import check_command_lines
    from inspector.records.receipts.receipt import CSV_NAME, JSON_NAME

    lines = check_command_lines(result, receipt)
    lines.append(f"receipts: {out_dir / JSON_NAME} {out_dir / CSV_NAME}")
    return lines


def run_check_command(args: argparse.Namespace) -> int:
    """``check``: validate, run, export, reparse, optionally save; see the module docstring."""
    from oracle.spec import ValidationError

    try:
        problem = _build_problem(args)
    except ValidationError as exc:
        raise UsageError(str(exc)) from None
    out_dir = path_argument("--out", args.out, "folder")
    session_path = None
    if args.session is not None:
        session_path = path_argument("--session", args.session, "file")
        check_session_target(session_path)  # refused before anything is created
    if args.kernel is not None and args.model_only:
        raise UsageError("--kernel: runs a kernel; it cannot go with --model-only")
    if args.batch_invariant and (args.kernel is not None or args.model_only):
        other = "--kernel" if args.kernel is not None else "--model-only"
        raise UsageError(
            f"--batch-invariant: a mode of the bundled kernel; it cannot go with {other}"
        )
    if not args.model_only:
        _check_device(args.device)
    spec = None
    args.kernel_memory_bytes = args.kernel_time_s = None
    limits = {"--kernel-memory": args.kernel_memory, "--kernel-time": args.kernel_time}
    for flag, given in limits.items():
        if given is not None and args.kernel is None:
            raise UsageError(f"{flag}: a limit of your kernel's; it goes with --kernel")
    if args.kernel is not None:
        from inspector.check.user_kernel import loadable_kernel_spec
        from kernels.sandbox.usercode import kernel_limits

        try:
            args.kernel_memory_bytes, args.kernel_time_s = kernel_limits(
                args.kernel_memory, args.kernel_time
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None

        try:
            spec = loadable_kernel_spec(args.kernel)
        except ValueError as exc:
            raise UsageError(one_line(exc)) from None
    with run_locks(out_dir, session_path):
        return _run_check_locked(args, problem, out_dir, session_path, spec)


def _run_check_locked(
    args: argparse.Namespace, problem: Any, out_dir: Path, session_path: Path | None, spec: Any
) -> int:
    """``check`` once ``--out`` and ``--session`` are this run's alone."""
    previous = check_session_target(session_path) if session_path is not None else None

    # Input is valid from here on: failures are exit 1, never 2.
    from inspector.check import pipeline
    from inspector.records import untouched
    from inspector.records.receipts.receipt import CSV_NAME, JSON_NAME, ReceiptError, write_receipts

    config = pipeline.CheckConfig(
        device=args.device,
        run_kernel=not args.model_only,
        kernel_spec=spec,
        timing=not args.no_timing,
        kernel_memory_bytes=args.kernel_memory_bytes,
        kernel_time_s=args.kernel_time_s,
        batch_invariant=args.batch_invariant,
    )
    # A user's kernel may write where the receipts go; the bundled one is this tool's own.
    watched = (out_dir, session_path) if spec is not None else ()
    before = untouched.snapshot(*watched, names=(JSON_NAME, CSV_NAME))
    result = pipeline.run_check(problem, config, progress=_Progress(args.quiet))
    planted = untouched.changes(before, *watched, names=(JSON_NAME, CSV_NAME))
    if planted:
        print(
            f"error: --out/--session changed while the kernel ran ({'; '.join(planted[:3])}); "
            "nothing written",
            file=sys.stderr,
        )
        return EXIT_FAILED
    try:
        receipt = write_receipts(result, out_dir)
    except ReceiptError as exc:
        print(f"error: receipts: {one_line(exc)}", file=sys.stderr)
        return EXIT_FAILED
    for line in _report(result, receipt, out_dir):
        print(line)
    problems = list(result.failures)
    if receipt["export_check"]["status"] != "passed":
        problems += [f"export check: {p}" for p in receipt["export_check"]["problems"]]
    if session_path is not None:
        from inspector.records.sessions.session import Session, SessionError, save_session

        session = Session.compose(result.problem, result, previous=previous)
        session.record_receipts(
            (out_dir / JSON_NAME).read_text(encoding="utf-8"),
            (out_dir / CSV_NAME).read_text(encoding="utf-8"),
            passed=not problems and not result.not_judged,
            reason="; ".join(problems[:3]),
        )
        try:
            save_session(session_path, session)
            print(f"session: {session_path}")
        except SessionError as exc:
            problems.append(f"session: {one_line(exc)}")
    if problems:
        print(f"FAIL: {len(problems)} problem(s)")
        for problem_line in problems:
            print(f"  - {problem_line}")
        return EXIT_FAILED
    if result.not_judged:
        print(
            f"NOT JUDGED: nothing failed, but {len(result.not_judged)} run(s) could not be judged "
            "on this machine (the causes are above); run the check with --device cuda on a GPU"
        )
        return EXIT_NOT_JUDGED
    scope = "" if result.kernel is not None else " (model only: the kernel was not run)"
    print(f"PASS: every fixture behaves, every mutant is killed, receipts reparse{scope}")
    return EXIT_OK
