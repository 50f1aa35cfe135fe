"""``python main.py coverage [--device auto|cpu|cuda] [--out FILE] [--match TEXT]``.

Enumerates every launch configuration the layout rule can reach
(:mod:`kernels.instruments.coverage`), proves each with the fixture matrix's checks at the shape
that reaches it (:mod:`inspector.coverage.proof`: the interpreter on a CPU, compiled on CUDA),
prints one line per configuration that fails and a summary, and writes the record (JSON) to
``--out`` (``resources/coverage/cpu.json`` / ``h200.json`` are the committed ones the check's
receipt and the window read). Exit 0 when every configuration is proven, 1 when one is not, 2 on bad
usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from inspector.cli.mutate_command import OneLineParser
from inspector.records.paths import PathRefused, checked_path, shown


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="main.py coverage",
        description="Prove every launch configuration the layout rule can reach with the "
        "fixture matrix's checks; writes the coverage record.",
    )
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--out", metavar="FILE", help="write the record (JSON) here")
    parser.add_argument(
        "--match", metavar="TEXT", help="prove only configurations whose label contains TEXT"
    )
    return parser


def run_coverage_command(arguments: list[str]) -> int:
    """``coverage``: exit 0 (all proven), 1 (a configuration not proven, printed), 2 (usage,
    raised as ValueError for the caller to print as one line)."""
    args = _parser().parse_args(arguments)
    out = None if args.out is None else checked_path("--out", args.out, "file", parents=True)
    if args.match is not None and not 1 <= len(args.match) <= 200:
        raise ValueError("--match must be 1 to 200 characters")
    if "TRITON_INTERPRET" not in os.environ and args.device != "cuda":
        import torch

        if args.device == "cpu" or not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"
    from inspector.coverage.proof import prove_all, record
    from inspector.records.atomic import atomic_write_text
    from kernels.env import device_description
    from kernels.instruments.checked import resolve_device
    from kernels.instruments.coverage import describe, reachable

    device = resolve_device(args.device)
    start = time.perf_counter()
    found = reachable()
    counts = ", ".join(f"{name} {n}" for name, n in describe(found).items())
    print(
        f"{len(found)} reachable configurations ({counts}) in {time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )
    if args.match:
        found = {c: w for c, w in found.items() if args.match in c.label}
        if not found:
            raise ValueError(f"--match {args.match!r}: no configuration's label contains it")
    proofs = []
    for index, total, proof in prove_all(found, args.device):
        proofs.append(proof)
        if not proof.passed:
            failed = [o for o in proof.outcomes if not o.passed]
            print(
                f"NOT PROVEN {proof.configuration.label} (width {proof.witness.width}): "
                + "; ".join(f"{o.fixture}: {o.detail[:160]}" for o in failed)
            )
        if (index + 1) % 25 == 0 or index + 1 == total:
            print(f"[{index + 1}/{total}] proven", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    data = record(proofs, device_description(device), seconds, complete=not args.match)
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(out, json.dumps(data, indent=1) + "\n")
        except OSError as exc:  # a disk that filled during the walk: nothing half written
            raise PathRefused(f"--out: cannot write {shown(out)}: {exc.strerror or exc}") from None
    print(
        f"coverage: {data['configurations']} configurations, {data['proven']} proven, "
        f"{len(data['failed'])} not, on {data['device']} ({data['mode']}) in "
        f"{data['seconds']:.0f} s" + (f"; {out}" if out else "")
    )
    return 0 if not data["failed"] else 1
