"""Command line: the window by default, ``check`` / ``bench`` / ``verify`` for headless use.

Exit codes (others script against them):

* 0 - all good (every fixture behaves, every mutant is killed, receipts reparse; or verified).
* 1 - something failed or survived (printed by name), or a receipt does not verify.
* 2 - bad input or usage: one line on stderr naming the field; nothing is written.
* 3 - ``check`` and ``mutate``: nothing failed, but this machine could not judge every run.

Qt is imported only on the window path, and lazily; torch and triton only when the kernel
runs. So ``check --model-only`` and ``verify`` work on a machine with numpy, h5py and
jsonschema alone, and ``check`` works on a GPU box without Qt.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from inspector.cli.check_command import (
    DEFAULT_EPS,
    DEFAULT_ROWS,
    DEFAULT_SEED,
    DEFAULT_WIDTH,
    run_check_command,
)
from inspector.cli.guards import (
    UsageError,
    one_line,
    path_argument,
    printable,
    session_input_keys,
    with_rerun,
)
from inspector.records.paths import shown

SYNTHETIC = f"--rows {DEFAULT_ROWS} --width {DEFAULT_WIDTH} --seed {DEFAULT_SEED}"

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line (exit 2), never a usage dump."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _prog() -> str:
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    if name == "__main__.py":
        return "python -m inspector"
    return "rmsnorm-inspector" if name == "rmsnorm-inspector" else "main.py"


def _limits_text() -> str:
    from oracle.spec import LIMITS

    return "\n".join(f"  {name:<11} {bound}" for name, bound in LIMITS.as_rows())


def _command(
    commands: Any, name: str, summary: str, description: str, epilog: str
) -> argparse.ArgumentParser:
    """One subcommand: ``summary`` in the command list; ``description`` and ``epilog`` (kept as
    written) in its ``--help``."""
    return commands.add_parser(
        name,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help=summary,
        description=description,
        epilog=epilog,
    )


def _add_check_run_options(check: argparse.ArgumentParser) -> None:
    """``check``'s run group: where and what runs, where the receipts go."""
    run = check.add_argument_group("run")
    run.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where the kernel runs: auto (CUDA if present, else the interpreter), cpu, cuda",
    )
    run.add_argument(
        "--model-only",
        action="store_true",
        help="skip the real kernel (no torch/triton needed); the receipt says so",
    )
    run.add_argument(
        "--kernel",
        metavar="FILE.py:FUNCTION",
        help="prove your own kernel instead of the bundled one: FUNCTION(x, weight, eps, "
        "out=None) -> y, run in a child process on every fixture (crash, hang and "
        "out-of-bounds stores are findings)",
    )
    run.add_argument(
        "--kernel-memory",
        type=int,
        metavar="MIB",
        help="--kernel: memory its processes may hold together before they are ended (2048)",
    )
    run.add_argument(
        "--kernel-time",
        type=float,
        metavar="SECONDS",
        help="--kernel: seconds all its runs may take together; past them, the rest time out (300)",
    )
    run.add_argument(
        "--batch-invariant",
        action="store_true",
        help="run the bundled kernel in its batch-invariant mode (one launch layout per width "
        "and dtype) and require the batch certificate of that mode to be bit-identical",
    )
    run.add_argument(
        "--no-timing",
        action="store_true",
        help="on a GPU, do not time the proven "
        "kernel on the input's shape (`bench` beside eager PyTorch and a copy; "
        "ncu's DRAM figures where installed)",
    )
    run.add_argument("--out", metavar="DIR", required=True, help="folder for the receipts")
    run.add_argument("--session", metavar="FILE.h5", help="also save the session here")
    run.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def _add_window_options(parser: argparse.ArgumentParser) -> None:
    """The options of the window command (no subcommand)."""
    parser.add_argument("--session", metavar="FILE.h5", help="session file to open in the window")
    parser.add_argument(
        "--kernel", metavar="FILE.py:FN", help="open the window with your kernel loaded"
    )
    parser.add_argument(
        "--screenshot",
        metavar="OUT.png",
        help="build the window offscreen with the demo (or --session) session, save a PNG, exit",
    )
    parser.add_argument(
        "--info",
        action="store_true",
        help="print versions, device, the settings file and the autosave folder, exit",
    )
    parser.add_argument(
        "--reset", action="store_true", help="forget the window's settings (recent files), exit"
    )


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The whole command line (the README quotes its --help texts)."""
    prog = prog or _prog()
    formatter = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog=prog,
        formatter_class=formatter,
        description=textwrap.dedent(
            """\
            RMSNorm Kernel Inspector: prove a fused Triton RMSNorm forward layer by layer
            (equation, independent oracle, fixture matrix and named mutants, the real kernel),
            then measure it. Without a command it opens the window.
            """
        ),
        epilog=textwrap.dedent(
            f"""\
            commands:
              {prog} [--session FILE.h5] [--kernel FILE.py:FN]   open the window
              {prog} --screenshot OUT.png [--session F]  render the window to a PNG, exit 0
              {prog} --info | --reset                     versions and paths | forget settings
              {prog} check [input options] --out DIR     headless proof + receipts
              {prog} check --kernel FILE.py:FN ... --out DIR   the same for your own kernel
              {prog} bench [--shapes ...] [--kernel FILE.py:FN] --out DIR   device benchmark (CUDA)
              {prog} mutate [--kernel FILE.py:FN] --out DIR  source mutants vs the fixtures
              {prog} coverage [--device D] [--out FILE]   prove every launch configuration
              {prog} verify DIR/receipt.json [DIR/receipt.csv]
              {prog} diff A B                            compare receipts or sessions

            exit codes: 0 all good; 1 something failed or survived (named);
                        2 bad input or usage (one line on stderr naming the field);
                        3 (check, mutate) nothing failed, but some run was not judged here
            """
        ),
    )
    _add_window_options(parser)
    # mutate and coverage take their own parsers (main() hands them their arguments whole).
    commands = parser.add_subparsers(
        dest="command", metavar="{check,bench,mutate,coverage,verify,diff}"
    )

    check = _command(
        commands,
        "check",
        "headless run of the whole proof; writes receipts",
        textwrap.dedent(
            f"""\
            Validate the input, run the oracle (scalar reference + tiled lane model), the
            fixture matrix, every mutant against the model and against the real kernel
            (Triton interpreter on a CPU, compiled on CUDA), export DIR/receipt.json and
            DIR/receipt.csv, reparse both, and optionally save the session.

            Input: --x and --weight text; or --fixture NAME; otherwise synthetic random
            input ({SYNTHETIC}: x ~ N(0, 1), weights uniform in
            [-2, 2]). Text: rows separated by ';' (or newlines), values by ',' or spaces;
            '@path' reads the text from a file.

            limits:
            """
        )
        + _limits_text(),
        textwrap.dedent(
            """\
            exit codes: 0 every fixture behaves and every mutant is killed; 1 something failed
            or survived (printed by name); 2 bad input or usage (one line naming the field,
            nothing written).
            """
        ),
    )
    source = check.add_argument_group("input")
    source.add_argument("--rows", metavar="N", help=f"rows (synthetic default {DEFAULT_ROWS})")
    source.add_argument(
        "--width", metavar="N", help=f"values per row (synthetic default {DEFAULT_WIDTH})"
    )
    source.add_argument(
        "--dtype", metavar="{float32,float16,bfloat16}", help="input/output dtype (float32)"
    )
    source.add_argument("--eps", metavar="EPS", help=f"epsilon in [1e-12, 1e-2] ({DEFAULT_EPS})")
    source.add_argument("--x", metavar="TEXT|@file", help="input rows: '1, 2; 3, 4' or @file")
    source.add_argument("--weight", metavar="TEXT|@file", help="width weights: '0.5, -2' or @file")
    source.add_argument(
        "--row-stride", metavar="N", help="elements between row starts, >= width (width)"
    )
    source.add_argument("--seed", metavar="N", help=f"seed of the synthetic input ({DEFAULT_SEED})")
    source.add_argument("--fixture", metavar="NAME", help="use one fixture's input")
    _add_check_run_options(check)

    for name, said in (
        ("bench", "device benchmark (needs CUDA); see 'bench --help'"),
        ("mutate", "mutate the kernel's source, run every mutant on the fixtures; 'mutate --help'"),
        ("coverage", "prove every launch configuration on the fixtures; see 'coverage --help'"),
    ):
        commands.add_parser(name, add_help=False, help=said)

    verify = _command(
        commands,
        "verify",
        "independent reparse and consistency check of receipts",
        textwrap.dedent(
            """\
            Reparse receipts written earlier, independently of the code that wrote them:
            JSON syntax and schema, schema version, x/weight sha256 recomputed from the
            recorded values, dimensions, tile, traffic ledger, per-row intermediates
            recomputed by the oracle, CSV rows equal to the JSON rows exactly, headline
            errors equal to the maxima of the rows, every mutant killed, every fixture as
            expected, and the recorded export check.
            """
        ),
        "exit codes: 0 verified; 1 a check failed (named); 2 a path cannot be read.",
    )
    verify.add_argument("receipt_json", metavar="RECEIPT.json")
    verify.add_argument(
        "receipt_csv",
        metavar="RECEIPT.csv",
        nargs="?",
        help="default: the .csv beside the JSON, if there is one",
    )
    verify.add_argument(
        "--rerun",
        action="store_true",
        help="also rerun the recorded kernel on the recorded input here and compare",
    )
    verify.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    diff = _command(
        commands,
        "diff",
        "compare two receipts (.json) or sessions (.h5)",
        textwrap.dedent(
            """\
            Compare two receipts or sessions (a session is compared through its latest
            receipt, plus its benchmark samples): input dimensions and hashes, per-row
            intermediates and errors, headline errors, fixture and mutant outcomes, kernel
            source hash and launch, device, versions, verdict; and, between two sessions,
            timing distributions (a change is flagged only when the medians move by more
            than the interquartile range recorded in the samples).
            """
        ),
        "exit codes: 0 equivalent; 1 different (each difference printed); 2 bad input.",
    )
    diff.add_argument("first", metavar="A", help="receipt.json or session.h5")
    diff.add_argument("second", metavar="B", help="receipt.json or session.h5")
    return parser


# ----------------------------------------------------------------------------- commands


def _not_a_receipt(path: Path) -> str:
    """Why the file at ``path`` is no receipt at all, from its first bytes ("" when it may be
    one): a receipt is a JSON object, so its text starts with ``{``; a session (sealed, or a
    plain HDF5 file) is named as one. A receipt that starts right
    and is damaged later is a verification failure, not a usage error."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return ""  # verify says why it cannot be read, as for any receipt
    from inspector.records.sessions.seal import SEAL_MAGIC

    if head.startswith((b"\x89HDF\r\n\x1a\n", SEAL_MAGIC)):
        return (
            "is an HDF5 file (a session?), not a receipt: diff reads sessions, the window "
            "opens them"
        )
    text = head.lstrip(b" \t\r\n")
    if not text:
        return "is empty, not a receipt"
    if not text.startswith(b"{"):
        return "is not a receipt: a receipt is a JSON object (its text starts with '{')"
    return ""


def run_verify_command(args: argparse.Namespace) -> int:
    """``verify``: independent reparse of receipts written earlier."""
    path_argument("RECEIPT.json", args.receipt_json, "read")
    if args.receipt_csv is not None:
        path_argument("RECEIPT.csv", args.receipt_csv, "read")
    from inspector.records.receipts.receipt import ReceiptError
    from inspector.records.receipts.verify import verify_receipts

    why = _not_a_receipt(Path(args.receipt_json))
    if why:
        raise UsageError(f"RECEIPT.json: {shown(args.receipt_json)} {why}")
    try:
        report = verify_receipts(args.receipt_json, args.receipt_csv)
    except ReceiptError as exc:
        raise UsageError(f"receipt: {one_line(exc)}") from None
    if args.rerun and not any(
        c.name in ("json parse", "json schema") and not c.ok for c in report.checks
    ):
        from kernels.sandbox.source_file import KernelFileError

        try:
            report = with_rerun(report, args.device)
        except KernelFileError as exc:  # a kernel file no reader opens (a FIFO, /dev/zero, 3 GB)
            raise UsageError(one_line(exc)) from None
    print("\n".join(printable(line) for line in report.lines()))
    if report.ok:
        csv = f" {report.csv_path}" if report.csv_path else ""
        print(printable(f"verified: {report.json_path}{csv}"))
        return EXIT_OK
    print(f"NOT VERIFIED: {len(report.problems)} problem(s)")
    print(f"verify: {one_line(report.problems[0])}", file=sys.stderr)
    return EXIT_FAILED


def _comparable(path_text: str, label: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A receipt dict (and bench samples, for a session) from a .json or .h5 path."""
    from inspector.records.receipts.format import parse_receipt_json
    from inspector.records.receipts.receipt import ReceiptError, read_receipt, schema_errors
    from inspector.records.sessions.session import SessionError, load_session

    path = Path(path_text)
    if path.suffix.lower() not in (".h5", ".hdf5"):
        try:
            return read_receipt(path), None
        except ReceiptError as exc:
            raise UsageError(f"{label}: {one_line(exc)}") from None
    try:
        session = load_session(path)
    except SessionError as exc:
        raise UsageError(f"{label}: {one_line(exc)}") from None
    if session.receipt_json is None:
        raise UsageError(
            f"{label}: session {path} holds no receipt (save one with check --session or Export)"
        )
    try:
        data = parse_receipt_json(session.receipt_json, "receipts/json")
    except ValueError as exc:  # JsonRefused: past a bound, or not (strict) JSON
        raise UsageError(f"{label}: the receipt in {path} is not JSON ({one_line(exc)})") from None
    errors = schema_errors(data) if isinstance(data, dict) else ["not a JSON object"]
    if errors:
        raise UsageError(f"{label}: the receipt in {path} is not valid: {errors[0]}")
    data["input"] = {**data["input"], **session_input_keys(session.problem())}
    return data, session.bench_samples


def run_diff_command(args: argparse.Namespace) -> int:
    """``diff``: what differs between two receipts or sessions."""
    path_argument("A", args.first, "read")
    path_argument("B", args.second, "read")
    from inspector.records.diff import bench_differences, diff_receipts

    first, first_bench = _comparable(args.first, "A")
    second, second_bench = _comparable(args.second, "B")
    lines = [str(d) for d in diff_receipts(first, second)]
    if first_bench is not None and second_bench is not None:
        lines += bench_differences(first_bench, second_bench)
    if not lines:
        print(printable(f"equivalent: {args.first} {args.second}"))
        return EXIT_OK
    print("\n".join(printable(line) for line in lines))
    print(f"different: {len(lines)} difference(s)")
    return EXIT_FAILED


def run_bench_command(argv: Sequence[str]) -> int:
    """``bench``: check its ``--out`` folder here, then hand the arguments to
    ``kernels.bench.bench_main`` (which parses them all and says what else is wrong)."""
    out = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    out.add_argument("--out")
    try:
        given = out.parse_known_args(list(argv))[0].out
    except (argparse.ArgumentError, SystemExit):  # ``--out`` without a value: bench says so
        given = None
    if given is not None:
        path_argument("--out", given, "folder")
    try:
        from kernels.bench import bench_main
    except ImportError as exc:
        print(
            f"error: bench: the benchmark harness is not available ({one_line(exc)}); it needs "
            "torch, triton and a CUDA device",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return int(bench_main(list(argv)))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python main.py`` and the ``rmsnorm-inspector`` console script.

    Returns:
        The exit code (0, 1 or 2; see the module docstring).
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        if arguments and arguments[0] == "bench":
            return run_bench_command(arguments[1:])
        if arguments and arguments[0] in ("mutate", "coverage"):
            from inspector.cli.coverage_command import run_coverage_command
            from inspector.cli.mutate_command import run_mutate_command

            run = run_mutate_command if arguments[0] == "mutate" else run_coverage_command
            try:
                return run(arguments[1:])
            except ValueError as exc:  # usage errors, a spec that names no kernel
                raise UsageError(str(exc)) from None
        parser = build_parser()
        try:
            args = parser.parse_args(arguments)
        except SystemExit as exc:  # --help
            return int(exc.code or 0)
        if args.command == "check":
            return run_check_command(args)
        if args.command == "verify":
            return run_verify_command(args)
        if args.command == "diff":
            return run_diff_command(args)
        from inspector.cli.window_command import check_window_args, run_window
        from inspector.qt.app_info import info_lines, reset_settings

        if args.info:
            print("\n".join(info_lines()))
            return EXIT_OK
        if args.reset:
            print(f"settings reset: {reset_settings()}")
            return EXIT_OK
        try:
            kernel = check_window_args(args.session, args.screenshot, args.kernel)
        except ValueError as exc:  # a missing file, a --kernel that names no kernel
            raise UsageError(str(exc)) from None
        return run_window(args.session, args.screenshot, kernel)
    except UsageError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("error: out of memory: the input is more than this machine can hold", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug, not bad input: one line, and the way to see more
        if os.environ.get("RMSNORM_INSPECTOR_DEBUG"):
            raise
        print(
            f"error: unexpected {type(exc).__name__}: {one_line(exc)} "
            "(set RMSNORM_INSPECTOR_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return EXIT_FAILED
