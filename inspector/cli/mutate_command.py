"""``python main.py mutate [--kernel FILE.py:FUNCTION] [--out DIR] [--jobs N] [--timeout S]
[--no-ttir] [--no-coverage] [--first-site N] [--count N] [--sites IDS]``.

Mutates the kernel's ``@triton.jit`` source (:mod:`inspector.mutate.source_mutants`; without
``--kernel`` the bundled kernel's ``kernels/jit/parts.py``, ``tile.py`` and ``loop.py``, run
through ``kernels.rms_norm``), judges each mutant's TTIR against the original's (``equivalent`` when
it cannot act: :mod:`inspector.mutate.equivalence`; ``--no-ttir`` skips that), runs the others
against the fixture matrix in a child process (the bundled kernel's survivors then on the coverage
map's configurations that run the mutated statement: :mod:`inspector.coverage.reach`), and
writes ``DIR/mutation.json`` and ``DIR/mutation.csv`` (one row per mutant), replaced as a pair.
Exit 0 when no non-equivalent mutant survives, 1 when one does (each survivor is printed), 2 on
bad usage (one line).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from inspector.mutate.campaign import mutate_report
from inspector.records.paths import checked_path

CSV_FIELDS = ("id", "function", "line", "operator", "before", "after", "outcome", "killed_by")


class OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are ValueErrors (the caller prints one line, exit 2)."""

    def error(self, message: str) -> Any:  # one line, exit 2 (through the caller's UsageError)
        raise ValueError(message)


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="main.py mutate",
        description="Mutate the kernel's @triton.jit source and run every mutant against the "
        "fixture matrix, each in a child process; writes DIR/mutation.json and mutation.csv.",
    )
    parser.add_argument(
        "--kernel", metavar="FILE.py:FUNCTION", help="your kernel (default: the bundled one)"
    )
    parser.add_argument("--out", metavar="DIR", default="mutation", help="folder (mutation)")
    parser.add_argument("--jobs", type=int, default=0, help="mutants at once (0: one per core)")
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds per fixture run before a timeout"
    )
    parser.add_argument(
        "--no-ttir", action="store_true", help="skip the TTIR comparison (no mutant is equivalent)"
    )
    parser.add_argument(
        "--no-coverage",
        action="store_true",
        help="bundled kernel: do not prove the fixtures' survivors on the coverage map",
    )
    parser.add_argument(
        "--first-site",
        type=int,
        default=0,
        metavar="N",
        help="start at site N (0-based), for files of more than 400 sites",
    )
    parser.add_argument(
        "--count", type=int, default=400, metavar="N", help="run at most N sites (1..400)"
    )
    parser.add_argument(
        "--sites",
        metavar="IDS",
        default=None,
        help="only these mutant ids of the slice, comma-separated (m005,m009: an earlier "
        "report's survivors)",
    )
    return parser


def _csv_text(mutants: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for mutant in mutants:
        row = {**mutant, "killed_by": ";".join(mutant["killed_by"])}
        writer.writerow([row[name] for name in CSV_FIELDS])
    return buffer.getvalue()


def run_mutate_command(arguments: list[str]) -> int:
    """``mutate``: exit 0 (no survivor and the unmutated kernel passes every runnable fixture),
    1 (survivors, or a baseline that fails a fixture: printed), 2 (usage, raised as ValueError by
    the parser and the spec checks, or a kernel that passes no fixture: the caller prints it as
    one line)."""
    args = _parser().parse_args(arguments)
    if not 0 <= args.jobs <= 256:
        raise ValueError(f"--jobs must be in [0, 256]; got {args.jobs}")
    if args.first_site < 0:
        raise ValueError(f"--first-site must be >= 0; got {args.first_site}")
    if not 1 <= args.count <= 400:
        raise ValueError(f"--count must be in [1, 400]; got {args.count}")
    only = None
    if args.sites is not None:
        only = {part.strip() for part in args.sites.split(",") if part.strip()}
        bad = sorted(i for i in only if not re.fullmatch(r"m\d{3,}", i))
        if not only or bad:
            got = bad[:3] or args.sites
            raise ValueError(f"--sites must be mutant ids like m005, comma-separated; got {got!r}")
    if not 1.0 <= args.timeout <= 3600.0:
        raise ValueError(f"--timeout must be in [1, 3600] seconds; got {args.timeout:g}")
    out = checked_path("--out", args.out, "folder")
    if "TRITON_INTERPRET" not in os.environ:
        import torch

        if not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"
    from inspector.records import untouched
    from inspector.records.atomic import atomic_write_text
    from kernels.sandbox.usercode import parse_kernel_spec

    kernel = None if args.kernel is None else parse_kernel_spec(args.kernel)
    written = ("mutation.json", "mutation.csv")
    watched = (out,) if kernel is not None else ()  # a user's mutants may write where we will
    before = untouched.snapshot(*watched, names=written)
    with tempfile.TemporaryDirectory(prefix="rmsnorm-mutate-") as scratch:

        def progress(done: int, total: int, label: str) -> None:
            print(f"[{done}/{total}] {label}", file=sys.stderr, flush=True)

        data = mutate_report(
            kernel,
            Path(scratch),
            jobs=args.jobs,
            timeout_s=args.timeout,
            progress=progress,
            compare_ttir=not args.no_ttir,
            coverage=not args.no_coverage,
            first_site=args.first_site,
            count=args.count,
            only=only,
        )
    planted = untouched.changes(before, *watched, names=written)
    if planted:
        print(
            f"error: --out changed while the mutants ran ({'; '.join(planted[:3])}); "
            "nothing written",
            file=sys.stderr,
        )
        return 1
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "mutation.csv", _csv_text(data["mutants"]))
    atomic_write_text(out / "mutation.json", json.dumps(data, indent=1) + "\n")
    survivors = [m for m in data["mutants"] if m["outcome"] == "survived"]
    for m in survivors:
        print(
            f"SURVIVED {m['id']} {m['function']}:{m['line']} {m['operator']}: "
            f"{m['before']!r} -> {m['after']!r}"
        )
    for m in data["mutants"]:
        if m["outcome"] == "stillborn":
            print(
                f"stillborn {m['id']} {m['function']}:{m['line']} {m['operator']}: Triton "
                f"refused it on {', '.join(m['killed_by'])} ({m['detail'][:160]})"
            )
    failed = data["baseline"]["failed"]
    print(baseline_line(data["baseline"]))
    print(
        f"mutants: {len(data['mutants'])}, killed {data['killed']}, survived {data['survived']}, "
        f"equivalent {data['equivalent']}, stillborn {data['stillborn']}, crashed "
        f"{data['crashed']}, timeout {data['timeout']}; score {data['score']:.3f}; "
        f"{out / 'mutation.json'} {out / 'mutation.csv'}"
    )
    # A kernel that already fails a fixture is not proven by its mutants: never exit 0; one
    # this machine could not judge on every fixture exits 3, like `check`.
    if survivors or failed:
        return 1
    unjudged = data["baseline"].get("not_judged", [])
    machine = [f for f in unjudged if f["why"].startswith("not judged on this machine")]
    return 3 if machine else 0


def baseline_line(baseline: dict[str, Any]) -> str:
    """The report's baseline in one line."""
    failed = baseline["failed"]
    unjudged = baseline.get("not_judged", [])
    tail = ""
    if unjudged:
        tail = f"; {len(unjudged)} NOT JUDGED here ({_names(unjudged)}: {unjudged[0]['why'][:160]})"
    if not failed:
        return (
            f"baseline: the unmutated kernel passes all {baseline['passed']} runnable fixtures"
            + (" judged" if unjudged else "")
            + tail
        )
    return (
        f"baseline: the unmutated kernel FAILS {len(failed)} fixture(s) ({_names(failed)}); "
        f"mutants were judged on the {baseline['passed']} it passes" + tail
    )


def _names(entries: list[dict[str, Any]]) -> str:
    return ", ".join(f["fixture"] for f in entries[:6]) + (", ..." if len(entries) > 6 else "")
