"""Proving a mutant the fixtures let through, beyond the fixtures: on the coverage map (the
bundled kernel's layouts, under the interpreter only where the mutated statement runs), past
2**31 rows, and through a hand-made mutant's branch or a flag passed as one (a site only such a
branch reaches runs that mutant over the whole map).
:func:`inspector.mutate.source_mutants.run_mutants` calls these after the fixture run.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from inspector.coverage import child, parsing, reach

if TYPE_CHECKING:
    from inspector.mutate.sites import Site

PROJECT = Path(__file__).resolve().parents[2]


def hand_made_branch(source: str, site: Site) -> str | None:
    """The hand-made kernel mutant whose ``if MUTANT == NAME:`` body holds ``site`` (a
    compile-time branch: no faithful launch compiles it), else None."""
    from kernels.launcher import KERNEL_MUTANTS

    for node in ast.walk(parsing.parse(source)):
        name = _mutant_compared(node.test) if isinstance(node, ast.If) else None
        if name is None:
            continue
        first, last = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
        if name in KERNEL_MUTANTS and first <= site.start[0] <= last:
            return name
    return None


def flag_branches(source: str, site: Site, sources: list[str]) -> tuple[str, ...] | None:
    """The hand-made mutants that alone run ``site``, when it lies in an ``if FLAG:`` whose
    ``FLAG`` is a parameter of its function that every call in ``sources`` (the kernel's
    files) passes as ``MUTANT == NAME``, directly or through a parameter of the caller passed
    so in turn: ``_body_mask(..., MUTANT == UNMASKED_STORE)``. Else None."""
    trees = [parsing.parse(text) for text in sources]
    for function, params in _functions(parsing.parse(source)):
        for node in ast.walk(function):
            if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name)):
                continue
            if node.test.id not in params or node.test.id == "MUTANT":
                continue
            first, last = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
            if first <= site.start[0] <= last:
                names = _flag_mutants(trees, function.name, node.test.id, params, 0)
                return tuple(sorted(names)) if names else None
    return None


def _flag_mutants(
    trees: list[ast.Module], function: str, param: str, params: list[str], depth: int
) -> set[str] | None:
    """The hand-made mutants every call of ``function`` passes as ``param``, or None when one
    call passes anything else."""
    from kernels.launcher import KERNEL_MUTANTS

    if depth > 8:
        return None
    position = params.index(param)
    names: set[str] = set()
    for tree in trees:
        for caller, caller_params in _functions(tree):
            for call in ast.walk(caller):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
                    continue
                if call.func.id != function:
                    continue
                passed = [k.value for k in call.keywords if k.arg == param]
                if position < len(call.args):
                    passed.append(call.args[position])
                if len(passed) != 1:
                    return None
                name = _mutant_compared(passed[0])
                if name in KERNEL_MUTANTS:
                    names.add(name)
                    continue
                value = passed[0]
                if not (isinstance(value, ast.Name) and value.id in caller_params):
                    return None
                inner = _flag_mutants(trees, caller.name, value.id, caller_params, depth + 1)
                if inner is None:
                    return None
                names |= inner
    return names


def _functions(tree: ast.AST) -> Iterator[tuple[ast.FunctionDef, list[str]]]:
    """Every function defined in ``tree``, with its positional parameters' names."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            yield node, [a.arg for a in node.args.args]


def _mutant_compared(node: ast.AST) -> str | None:
    """``NAME`` (lower case) of an expression ``MUTANT == NAME``, else None."""
    if (
        isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Name)
        and node.left.id == "MUTANT"
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.Eq)
        and isinstance(node.comparators[0], ast.Name)
    ):
        return node.comparators[0].id.lower()
    return None


def _coverage_verdict(
    first: str,
    map_path: Path,
    branch: str | tuple[str, ...] | None,
    timeout_s: float,
    span: reach.Span | None = None,
) -> tuple[str, tuple[str, ...], str]:
    """:func:`_one_coverage_verdict`, for each hand-made mutant of a branch that several run
    (:func:`flag_branches`): equivalent while every one is still caught."""
    if not isinstance(branch, tuple):
        return _one_coverage_verdict(first, map_path, branch, timeout_s, span)
    verdicts = [_one_coverage_verdict(first, map_path, b, timeout_s, span) for b in branch]
    for verdict in verdicts:
        if verdict[0] != "equivalent":
            return verdict
    return "equivalent", (), "; ".join(v[2] for v in verdicts)[:500]


def _one_coverage_verdict(
    first: str,
    map_path: Path,
    branch: str | None,
    timeout_s: float,
    span: reach.Span | None = None,
) -> tuple[str, tuple[str, ...], str]:
    """A fixture survivor's outcome on the coverage map. In a hand-made mutant's branch: that
    mutant still caught means no launch the check makes changes (``equivalent``), no longer
    caught is ``killed`` (the check would report its mutant surviving); the whole map runs
    (the branch runs only in that mutant's launches, whose lines are not recorded). Elsewhere:
    a failing proof ``killed`` it (named by configuration and fixture), none ``survived``.
    ``span``: the mutated statement's lines, when the map records each configuration's
    (:mod:`inspector.coverage.reach`): only the configurations that run one of them are
    proven, and a statement none runs is reported as such without a child."""
    options = ["--mutant", branch] if branch else []
    if span is not None and branch is None:
        recorded = child.line_map(map_path)
        if recorded is not None:
            if not reach.reaching(recorded, span):
                why = (
                    f"every fixture behaved, and none of the coverage map's {len(recorded)} "
                    f"configurations runs {reach.format_span(span)} (the original "
                    "kernel under the interpreter), so none can tell"
                )
                return "survived", (), why
            options = ["--lines", reach.format_span(span)]
    result = child.run_child(first, map_path, options, timeout_s)
    if result == "timeout":
        return "timeout", ("coverage map",), f"the coverage proof ran past {timeout_s:g} s"
    if isinstance(result, str):
        return "crashed", ("coverage map",), result
    where = f"coverage:{result.get('configuration')}:{result.get('fixture')}"
    if branch is not None:
        if result["outcome"] == "caught":
            why = (
                f"only the `if MUTANT == {branch.upper()}:` branch changes (compiled out of "
                f"every faithful launch); hand-made mutant {branch} is still caught ({where})"
            )
            return "equivalent", (), why
        why = (
            f"hand-made mutant {branch} is no longer caught by any of the map's "
            f"{result['proofs']} proofs: the check would report it surviving"
        )
        return "killed", (f"hand-made {branch}",), why
    if result["outcome"] == "caught":
        return "killed", (where,), str(result.get("detail", ""))[:500]
    reached, total = result.get("reached", result["proofs"]), result.get("map", result["proofs"])
    why = f"every fixture and all {total} configurations of the coverage map behaved"
    if "--lines" in options:
        why = (
            f"every fixture and all {reached} configurations of the coverage map that run "
            f"{options[1]} behaved ({total - reached} of its {total} do not run it)"
        )
    return "survived", (), why


def _past_2_31_verdict(first: str, timeout_s: float) -> tuple[str, tuple[str, ...], str] | None:
    """The bundled kernel's rows that start past 2**31 elements
    (:mod:`kernels.instruments.past_2_31`), run on the package copy in ``first`` in a child:
    ``killed`` when a row comes out wrong, ``crashed`` when the child dies (a wrapped offset's
    store), ``timeout``; None when every case is right. The coverage map's problems are small, so a
    change that only acts on 64-bit offsets (a dropped int64 cast) shows only here."""
    from kernels.instruments import past_2_31
    from kernels.mode import INTERPRETER, MODE

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([first, str(PROJECT), env.get("PYTHONPATH", "")])
    device = "cpu" if MODE == INTERPRETER else "cuda"
    command = [sys.executable, "-m", "kernels.instruments.past_2_31", device]
    where = ("rows past 2**31",)
    try:
        done = subprocess.run(
            command,
            cwd=first,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "timeout", where, f"rows past 2**31 elements ran past {timeout_s:g} s"
    problems = past_2_31.failures(done.stdout, done.returncode)
    if not problems:
        return None
    kind = "killed" if done.returncode == 0 else "crashed"
    return kind, where, f"rows past 2**31 elements: {'; '.join(problems)}"[:500]
