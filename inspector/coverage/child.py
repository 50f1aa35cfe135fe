"""``python -m inspector.coverage.child MAP.json [--mutant NAME] [--lines FILE:FIRST-LAST]``:
the coverage map's proof in a process of its own, for ``mutate``: the ``kernels`` package first
on ``PYTHONPATH`` (a mutant's copy) is proven configuration by configuration in the map's order
until one proof fails. Prints one JSON line: ``{"outcome": "caught" | "passed",
"configuration", "fixture", "detail", "proofs", "reached", "map"}`` (``caught``: a proof
failed, named; ``passed``: every proof held; ``proofs``: how many ran, ``reached``: how many
were to run, ``map``: the map's size). ``--mutant NAME`` proves that hand-made kernel mutant
instead (``caught`` is then what the check expects of it). ``--lines FILE:FIRST-LAST`` proves
only the configurations whose recorded lines (:mod:`inspector.coverage.reach`) meet those
lines of ``FILE`` (a file of the package): the others cannot run a change there.

``python -m inspector.coverage.child MAP.json --record-lines [--part K/N]`` proves the map's
configurations (those whose index is K modulo N) with a line recorder on and prints
``{"outcome": "recorded", "entries": [{"index", "passed", "failed", "lines"}]}``.

Qt-free. The map file is a list of ``{"configuration", "witness", "beyond_rule"}`` entries
(``beyond_rule``: a layout only forced or explicit configs launch), with ``"lines"``
(``{file: [line, ...]}``) once recorded (:func:`write_map`, :func:`add_lines`), walked once by
the parent.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[2]


def write_map(
    path: Path,
    found: dict[Any, Any],
    order: list[Any] | None = None,
    beyond: set[Any] = frozenset(),
) -> None:
    """Write ``found`` (``kernels.instruments.coverage.reachable()``) as the child's map, in
    ``order``; the configurations of ``beyond``
    (:func:`kernels.instruments.coverage_beyond.beyond_rule`) are marked, so a proof that fails on
    one says the rule does not choose it."""
    keys = order if order is not None else list(found)
    entries = [
        {"configuration": c.to_json(), "witness": found[c].to_json(), "beyond_rule": c in beyond}
        for c in keys
    ]
    path.write_text(json.dumps(entries))


def _label(configuration: Any, beyond: bool) -> str:
    return f"{configuration.label} (beyond the rule)" if beyond else configuration.label


def line_map(path: Path) -> list[dict[str, list[int]]] | None:
    """Each configuration's recorded lines, in the map's order; None when none are recorded."""
    entries = json.loads(Path(path).read_text())
    if not entries or any("lines" not in entry for entry in entries):
        return None
    return [entry["lines"] for entry in entries]


def beyond_rule_only(path: Path, span: Any) -> bool:
    """Whether the map records lines and only configurations beyond the rule run ``span``:
    the launcher's own launches then never compile that statement, so a TTIR that matches
    theirs says nothing about it."""
    from inspector.coverage.reach import executes

    entries = json.loads(Path(path).read_text())
    if not entries or any("lines" not in entry for entry in entries):
        return False
    running = [entry for entry in entries if executes(entry["lines"], span)]
    return bool(running) and all(entry.get("beyond_rule") for entry in running)


def run_child(first: str, map_path: Path, options: list[str], timeout_s: float) -> Any:
    """The child's JSON line for the package copy in ``first``, or why there is none
    (``"timeout"`` or ``"crashed: ..."``). The child starts in ``first`` so the copy's
    ``kernels`` comes first; the project's ``inspector`` and ``oracle`` come after it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([first, str(PROJECT), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "inspector.coverage.child", str(map_path), *options]
    from kernels.sandbox.bounded import run_bounded

    try:
        done = run_bounded(command, cwd=first, env=env, timeout_s=timeout_s, preloaded=True)
    except subprocess.TimeoutExpired:
        return "timeout"
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"crashed: exit code {done.returncode}: {tail[:300]}"
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError:
        return f"crashed: its last line is not the result: {lines[-1][:300]}"


def add_lines(
    map_path: Path,
    jobs: int = 1,
    timeout_s: float = 3600.0,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Record, for every configuration of the map, the lines the project's own kernel runs
    during its proof, in ``jobs`` children (each a share of the map), and store them in it.

    Raises:
        RuntimeError: a child failed, or the original kernel fails a proof (a map it does not
            pass cannot judge its mutants), or a proof ran no kernel line (not interpreted).
    """
    entries = json.loads(Path(map_path).read_text())
    parts = max(1, min(jobs, len(entries)))
    done = [0]

    def part(index: int) -> Any:
        options = ["--record-lines", "--part", f"{index}/{parts}"]
        result = run_child(str(PROJECT), map_path, options, timeout_s)
        done[0] += 1
        if progress is not None:
            progress(done[0], parts)
        return result

    with ThreadPoolExecutor(max_workers=parts) as pool:
        results = list(pool.map(part, range(parts)))
    for result in results:
        if not isinstance(result, dict) or result.get("outcome") != "recorded":
            raise RuntimeError(f"recording the coverage map's lines: {result}")
        for recorded in result["entries"]:
            entry, label = entries[recorded["index"]], recorded["label"]
            if not recorded["passed"]:
                why = f"the original kernel fails the coverage proof of {label}"
                raise RuntimeError(f"{why}: {recorded['failed']}")
            if not any(recorded["lines"].values()):
                raise RuntimeError(f"the proof of {label} ran no kernel line (not interpreted?)")
            entry["lines"] = recorded["lines"]
    missing = [index for index, entry in enumerate(entries) if "lines" not in entry]
    if missing:
        raise RuntimeError(f"recording the coverage map's lines: entries {missing[:5]} missing")
    Path(map_path).write_text(json.dumps(entries))


def _read_map(path: Path) -> list[tuple[Any, Any, dict[str, list[int]] | None, bool]]:
    from kernels.instruments.coverage import Configuration, Witness
    from kernels.layout import LaunchConfig

    entries = []
    for entry in json.loads(path.read_text()):
        witness = dict(entry["witness"])
        witness["config"] = LaunchConfig(**witness["config"])
        configuration = Configuration.from_json(entry["configuration"])
        beyond = bool(entry.get("beyond_rule", False))
        entries.append((configuration, Witness(**witness), entry.get("lines"), beyond))
    return entries


def _part(text: str) -> tuple[int, int]:
    index, _, parts = text.partition("/")
    if not (index.isdigit() and parts.isdigit() and int(index) < int(parts)):
        raise argparse.ArgumentTypeError(f"expected K/N with K < N, got {text!r}")
    return int(index), int(parts)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m inspector.coverage.child")
    parser.add_argument("map", type=Path, metavar="MAP.json")
    parser.add_argument("--mutant", metavar="NAME", help="prove this hand-made kernel mutant")
    parser.add_argument(
        "--lines",
        metavar="FILE:FIRST-LAST",
        help="only the configurations that run one of these lines",
    )
    parser.add_argument("--record-lines", action="store_true", help="record each proof's lines")
    parser.add_argument("--part", type=_part, default=(0, 1), metavar="K/N")
    return parser


def _record(entries: list[tuple[Any, Any, Any, bool]], part: tuple[int, int]) -> dict[str, Any]:
    from inspector.coverage.reach import kernel_files, record

    files = kernel_files()
    recorded = []
    for index, (configuration, witness, _, beyond) in enumerate(entries):
        if index % part[1] != part[0]:
            continue
        proof, lines = record(configuration, witness, files)
        failed = [f"{o.fixture}: {o.detail[:300]}" for o in proof.outcomes if not o.passed]
        label = _label(configuration, beyond)
        recorded.append(
            {
                "index": index,
                "label": label,
                "passed": proof.passed,
                "failed": failed[0] if failed else "",
                "lines": lines,
            }
        )
    return {"outcome": "recorded", "entries": recorded}


def _prove(
    entries: list[tuple[Any, Any, Any, bool]], mutant: str | None, span: Any
) -> dict[str, Any]:
    from inspector.coverage.proof import prove
    from inspector.coverage.reach import executes

    chosen = [(c, w, b) for c, w, lines, b in entries if span is None or executes(lines, span)]
    for count, (configuration, witness, beyond) in enumerate(chosen, start=1):
        proof = prove(configuration, witness, mutant=mutant)
        failed = [o for o in proof.outcomes if not o.passed]
        if failed:
            return {
                "outcome": "caught",
                "configuration": _label(configuration, beyond),
                "fixture": failed[0].fixture,
                "detail": failed[0].detail[:400],
                "proofs": count,
                "reached": len(chosen),
                "map": len(entries),
            }
    return {"outcome": "passed", "proofs": len(chosen), "reached": len(chosen), "map": len(entries)}


def main(argv: list[str]) -> int:
    from inspector.coverage.reach import parse_span

    args = _parser().parse_args(argv)
    span = None
    try:
        span = parse_span(args.lines) if args.lines is not None else None
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.record_lines and (args.mutant or span):
        print("error: --record-lines records the original kernel alone", file=sys.stderr)
        return 2
    entries = _read_map(args.map)
    if span is not None and any(lines is None for _, _, lines, _ in entries):
        print("error: --lines: the map records no lines (add_lines)", file=sys.stderr)
        return 2
    if args.record_lines:
        result = _record(entries, args.part)
    else:
        result = _prove(entries, args.mutant, span)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
