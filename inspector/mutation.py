"""Automatic source mutants of a kernel file, each run against the fixture matrix in isolation.

Every ``@triton.jit`` function of the file is searched for sites (:func:`mutation_sites`):
arithmetic and comparison operators swapped, numeric constants moved (+-1, x2, 0 <-> 1), masks
dropped or inverted on loads and stores, ``other=`` fill values changed, casts dropped
(``.to(...)``: the arithmetic then runs in the input dtype), reductions swapped (``tl.sum``
<-> ``tl.max``), ``rsqrt`` <-> ``sqrt``, negations dropped. A mutant is the file with one site
changed, spliced into the original text so everything else stays byte for byte; it runs in a
child process (:mod:`kernels.usercode`) on every runnable fixture until one fixture catches it.
Outcomes: ``equivalent`` (the mutant compiles to the original's TTIR for every launch signature
the original's launcher makes, or only changes a load's fill that no store can see:
:mod:`inspector.equivalence`; ``detail`` says which and for how many signatures), ``killed`` (a
fixture failed: ``killed_by`` names it), ``survived`` (every fixture behaved), ``crashed`` or
``timeout`` (the child died or hung on a fixture, named). Where the TTIR cannot be compared (a
Triton without the internals used, a launch that cannot be described), every mutant runs the
fixtures and ``detail`` says why it was not compared.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from inspector import coverage_child, coverage_lines, equivalence, parsing
from kernels.usercode import KernelSpec
from oracle import fixtures, matrix

PROJECT = Path(__file__).resolve().parent.parent

ARITHMETIC = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
COMPARISON = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}
SWAPPED_CALLS = {"sum": "max", "max": "sum", "rsqrt": "sqrt", "sqrt": "rsqrt"}
# Most mutants one run makes (a file with more sites is cut, and the report says so).
MAX_MUTANTS = 400


@dataclasses.dataclass(frozen=True)
class Site:
    """One mutation: where, which operator, the text before and after."""

    function: str
    line: int
    operator: str
    before: str
    after: str
    start: tuple[int, int]
    end: tuple[int, int]


@dataclasses.dataclass(frozen=True)
class Mutant:
    """A site's outcome against the fixture matrix."""

    id: str
    site: Site
    outcome: str
    killed_by: tuple[str, ...] = ()
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "function": self.site.function,
            "line": self.site.line,
            "operator": self.site.operator,
            "before": self.site.before,
            "after": self.site.after,
            "outcome": self.outcome,
            "killed_by": list(self.killed_by),
            "detail": self.detail,
        }


def _is_jit(node: ast.FunctionDef) -> bool:
    return any(ast.unparse(d).split("(")[0].endswith("jit") for d in node.decorator_list)


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _variants(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(operator, replacement node) for every mutation of ``node`` itself."""
    if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
        new = copy.deepcopy(node)
        new.op = ARITHMETIC[type(node.op)]()
        yield f"{type(node.op).__name__} -> {type(new.op).__name__}", new
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARISON:
        new = copy.deepcopy(node)
        new.ops = [COMPARISON[type(node.ops[0])]()]
        yield f"{type(node.ops[0]).__name__} -> {type(new.ops[0]).__name__}", new
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        yield "negation dropped", copy.deepcopy(node.operand)
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = node.value
        moved = {value + 1, value - 1, value * 2, 0 if value else 1} - {value}
        if isinstance(value, float):
            moved = {value * 2, 1.0 if value == 0.0 else 0.0} - {value}
        for new_value in sorted(moved):
            yield f"constant {value!r} -> {new_value!r}", ast.Constant(new_value)
    elif isinstance(node, ast.Call):
        name = _call_name(node)
        if name in SWAPPED_CALLS and isinstance(node.func, ast.Attribute):
            new = copy.deepcopy(node)
            new.func.attr = SWAPPED_CALLS[name]
            yield f"{name} -> {SWAPPED_CALLS[name]}", new
        if name == "to" and isinstance(node.func, ast.Attribute):
            yield "cast dropped", copy.deepcopy(node.func.value)
        if name in ("load", "store"):
            for index, keyword in enumerate(node.keywords):
                if keyword.arg == "mask":
                    dropped = copy.deepcopy(node)
                    del dropped.keywords[index]
                    yield f"{name} mask dropped", dropped
                    inverted = copy.deepcopy(node)
                    inverted.keywords[index].value = ast.UnaryOp(
                        ast.Invert(), copy.deepcopy(keyword.value)
                    )
                    yield f"{name} mask inverted", inverted
                if keyword.arg == "other":
                    changed = copy.deepcopy(node)
                    changed.keywords[index].value = ast.Constant(1.0)
                    yield "load other= -> 1.0", changed


def mutation_sites(source: str) -> list[Site]:
    """Every site of every ``@triton.jit`` function of ``source``, in file order."""
    tree = parsing.parse(source)
    sites = []
    for function in tree.body:
        if not (isinstance(function, ast.FunctionDef) and _is_jit(function)):
            continue
        for statement in function.body:
            for node in ast.walk(statement):
                if not hasattr(node, "end_lineno") or node.end_lineno is None:
                    continue
                before = ast.get_source_segment(source, node)
                if before is None:
                    continue
                for operator, new in _variants(node):
                    sites.append(
                        Site(
                            function.name,
                            node.lineno,
                            operator,
                            before,
                            ast.unparse(new),
                            (node.lineno, node.col_offset),
                            (node.end_lineno, node.end_col_offset),
                        )
                    )
    sites.sort(key=lambda s: (s.start, s.operator))
    return sites


def apply_site(source: str, site: Site) -> str:
    """``source`` with the text of ``site`` replaced (lines and columns as ``ast`` gives them)."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode("utf-8")))
    data = source.encode("utf-8")
    start = offsets[site.start[0] - 1] + site.start[1]
    end = offsets[site.end[0] - 1] + site.end[1]
    after = site.after if "\n" not in site.before else f"({site.after})"
    return (data[:start] + after.encode("utf-8") + data[end:]).decode("utf-8")


def _run_mutant(
    spec: KernelSpec, pythonpath_first: str, poison: float, timeout_s: float
) -> tuple[str, tuple[str, ...], str]:
    """(outcome, killed_by, detail) of one mutant file against the runnable fixtures."""
    from inspector.userkernel import UserImplementation, UserKernelFailed

    try:
        implementation = UserImplementation(
            spec, poison=poison, pythonpath_first=pythonpath_first, run_timeout_s=timeout_s
        )
    except ValueError as err:  # the mutant does not import (a syntax error cannot be: ast made it)
        return "crashed", ("import",), str(err)[:500]
    cache = matrix.ReferenceCache()
    try:
        for fixture in fixtures.FIXTURES:
            if fixture.check == "rejection":
                continue
            try:
                outcome = matrix.evaluate(fixture, implementation, cache=cache, poison=poison)
            except UserKernelFailed as err:
                kind = "timeout" if "user kernel timeout" in str(err) else "crashed"
                return kind, (fixture.name,), str(err)[:500]
            if not outcome.passed:
                if "user kernel crashed" in outcome.detail:
                    return "crashed", (fixture.name,), outcome.detail[:500]
                if "user kernel timeout" in outcome.detail:
                    return "timeout", (fixture.name,), outcome.detail[:500]
                return "killed", (fixture.name,), outcome.detail[:500]
        return "survived", (), "every fixture behaved"
    finally:
        implementation.close()


def run_mutants(
    spec: KernelSpec,
    *,
    files: list[Path] | None = None,
    launcher_dir: Path | None = None,
    jobs: int = 0,
    timeout_s: float = 60.0,
    poison: float = -3072.0,
    progress: Callable[[int, int, str], None] | None = None,
    compare_ttir: bool = True,
    cancelled: Callable[[], bool] | None = None,
    coverage_map: Path | None = None,
    first_site: int = 0,
    count: int = MAX_MUTANTS,
    only: set[str] | None = None,
) -> tuple[list[Mutant], int]:
    """Mutate the ``@triton.jit`` functions of ``files`` (default: the kernel's file) and run
    each mutant. ``launcher_dir``: a package folder copied whole for each mutant (the bundled
    kernel: its modules import each other), else the mutant replaces the kernel file alone.
    ``compare_ttir``: judge equivalence by TTIR first (:mod:`inspector.equivalence`).
    ``cancelled``: polled before each mutant; once true, the mutants not yet started are left
    out (the count returned says how many sites were not run). ``coverage_map``: a map file
    (:func:`inspector.coverage_child.write_map`) that every mutant the fixtures let through is
    proven against too (:func:`_coverage_verdict`; the bundled kernel's layouts; where the map
    records each configuration's lines, only on those that run the site's statement); the TTIR
    is then compared last, for the mutants both let through.
    ``first_site``: start at this site (0-based; the ids keep their place in the whole list),
    so a file of more than MAX_MUTANTS sites is run in slices of ``count`` (at most
    MAX_MUTANTS). ``only``: run just these mutant ids (``m005``) of the slice (a rerun of an
    earlier report's survivors); the others count as left out.

    Returns:
        The mutants in site order and how many sites were left out past MAX_MUTANTS.
    """
    files = files or [spec.path]
    sites = [(path, site) for path in files for site in mutation_sites(path.read_text())]
    if not 0 <= first_site <= len(sites):
        raise ValueError(f"first site {first_site} is past the {len(sites)} sites")
    count = min(count, MAX_MUTANTS)
    left_out = max(0, len(sites) - first_site - count) + first_site
    sites = sites[first_site : first_site + count]
    ids = [f"m{first_site + index + 1:03d}" for index in range(len(sites))]
    _check_ids(ids, only)
    chosen = [index for index in range(len(sites)) if only is None or ids[index] in only]
    left_out += len(sites) - len(chosen)
    workers = jobs or max(1, (os.cpu_count() or 2))
    done = [0]
    if progress is not None and compare_ttir:
        progress(0, len(chosen), "recording the original's launches and compiling its TTIR")
    base = (
        equivalence.baseline(spec)
        if compare_ttir
        else equivalence.Baseline(unsupported="not asked for")
    )

    def one(index: int) -> Mutant | None:
        if cancelled is not None and cancelled():
            return None
        path, site = sites[index]
        mutant_id = f"m{first_site + index + 1:03d}"
        with tempfile.TemporaryDirectory(prefix="rmsnorm-mutant-") as folder:
            root = Path(folder)
            if launcher_dir is not None:
                copy_root = root / launcher_dir.name
                shutil.copytree(
                    launcher_dir, copy_root, ignore=shutil.ignore_patterns("__pycache__")
                )
                target = copy_root / path.relative_to(launcher_dir)
                shutil.copy(spec.path, root / spec.path.name)  # the launcher, beside the copy
                mutant_spec = dataclasses.replace(spec, path=root / spec.path.name)
                first = str(root)
            else:
                target = root / path.name
                mutant_spec = dataclasses.replace(spec, path=target)
                first = str(path.parent)
            text = apply_site(path.read_text(), site)
            target.write_text(text)
            mutant_spec = dataclasses.replace(
                mutant_spec, sha256=hashlib.sha256(text.encode()).hexdigest()
            )
            judged = ("", (), "")
            if coverage_map is None:
                judged = _judged(base, mutant_spec, first, path, site)
            outcome, killed_by, detail = judged
            if outcome != "equivalent":
                note = detail
                outcome, killed_by, detail = _run_mutant(mutant_spec, first, poison, timeout_s)
                if outcome == "survived" and coverage_map is not None:
                    source = path.read_text()
                    branch = hand_made_branch(source, site) or flag_branches(
                        source, site, [f.read_text() for f in files]
                    )
                    name = path.relative_to(launcher_dir) if launcher_dir else Path(path.name)
                    span = coverage_lines.statement_span(
                        source, name.as_posix(), site.start, site.end
                    )
                    verdict = _coverage_verdict(first, coverage_map, branch, timeout_s * 10, span)
                    if verdict[0] == "survived" and branch is None:
                        verdict = _past_2_31_verdict(first, timeout_s) or verdict
                    outcome, killed_by, detail = verdict
                    if outcome == "survived":  # the TTIR last: only the survivors compile it
                        judged = _judged(base, mutant_spec, first, path, site)
                        if (
                            judged[0]
                            and span
                            and coverage_child.beyond_rule_only(coverage_map, span)
                        ):
                            judged = ("", (), f"{judged[2]}, none of which compiles "
                                      f"{coverage_lines.format_span(span)}: only layouts beyond "
                                      "the rule run it")  # fmt: skip
                        outcome, killed_by, detail = judged if judged[0] else verdict
                        note = "" if judged[0] else judged[2]
                if note and (outcome == "survived" or note.startswith("TTIR not compared")):
                    detail = f"{detail}; {note}"
        done[0] += 1
        if progress is not None:
            progress(done[0], len(chosen), f"{mutant_id} {site.function}:{site.line} {outcome}")
        return Mutant(mutant_id, site, outcome, killed_by, detail)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        ran = list(pool.map(one, chosen))
    mutants = [m for m in ran if m is not None]
    return mutants, left_out + len(ran) - len(mutants)


def check_site_ids(files: list[Path], first_site: int, count: int, only: set[str]) -> None:
    """Raise ValueError when an id of ``only`` is not a mutant of the slice ``first_site``,
    ``count`` of ``files`` (before anything slow runs)."""
    total = sum(len(mutation_sites(path.read_text())) for path in files)
    last = min(total, first_site + min(count, MAX_MUTANTS))
    _check_ids([f"m{index + 1:03d}" for index in range(first_site, last)], only)


def _check_ids(ids: list[str], only: set[str] | None) -> None:
    unknown = sorted(set(only or ()) - set(ids))
    if unknown:
        span = f"{ids[0]}..{ids[-1]}" if ids else "none"
        raise ValueError(f"--sites: {', '.join(unknown[:5])} not among this slice's mutants "
                         f"({span})")  # fmt: skip


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
    for function in ast.walk(parsing.parse(source)):
        if not isinstance(function, ast.FunctionDef):
            continue
        params = [a.arg for a in function.args.args]
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
        for caller in ast.walk(tree):
            if not isinstance(caller, ast.FunctionDef):
                continue
            caller_params = [a.arg for a in caller.args.args]
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
    span: coverage_lines.Span | None = None,
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
    span: coverage_lines.Span | None = None,
) -> tuple[str, tuple[str, ...], str]:
    """A fixture survivor's outcome on the coverage map. In a hand-made mutant's branch: that
    mutant still caught means no launch the check makes changes (``equivalent``), no longer
    caught is ``killed`` (the check would report its mutant surviving); the whole map runs
    (the branch runs only in that mutant's launches, whose lines are not recorded). Elsewhere:
    a failing proof ``killed`` it (named by configuration and fixture), none ``survived``.
    ``span``: the mutated statement's lines, when the map records each configuration's
    (:mod:`inspector.coverage_lines`): only the configurations that run one of them are
    proven, and a statement none runs is reported as such without a child."""
    options = ["--mutant", branch] if branch else []
    if span is not None and branch is None:
        recorded = coverage_child.line_map(map_path)
        if recorded is not None:
            if not coverage_lines.reaching(recorded, span):
                why = (
                    f"every fixture behaved, and none of the coverage map's {len(recorded)} "
                    f"configurations runs {coverage_lines.format_span(span)} (the original "
                    "kernel under the interpreter), so none can tell"
                )
                return "survived", (), why
            options = ["--lines", coverage_lines.format_span(span)]
    result = coverage_child.run_child(first, map_path, options, timeout_s)
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
    """The bundled kernel's rows that start past 2**31 elements (:mod:`kernels.past_2_31`),
    run on the package copy in ``first`` in a child: ``killed`` when a row comes out wrong,
    ``crashed`` when the child dies (a wrapped offset's store), ``timeout``; None when every
    case is right. The coverage map's problems are small, so a change that only acts on
    64-bit offsets (a dropped int64 cast) shows only here."""
    from kernels import past_2_31
    from kernels.mode import INTERPRETER, MODE

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([first, str(PROJECT), env.get("PYTHONPATH", "")])
    device = "cpu" if MODE == INTERPRETER else "cuda"
    command = [sys.executable, "-m", "kernels.past_2_31", device]
    where = ("rows past 2**31",)
    try:
        done = subprocess.run(command, cwd=first, env=env, capture_output=True, text=True,
                              timeout=timeout_s, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return "timeout", where, f"rows past 2**31 elements ran past {timeout_s:g} s"
    problems = past_2_31.failures(done.stdout, done.returncode)
    if not problems:
        return None
    kind = "killed" if done.returncode == 0 else "crashed"
    return kind, where, f"rows past 2**31 elements: {'; '.join(problems)}"[:500]


def _judged(
    base: equivalence.Baseline, spec: KernelSpec, first: str, original: Path, site: Site
) -> tuple[str, tuple[str, ...], str]:
    """("equivalent", (), why) when the TTIR shows the mutant cannot act, else ("", (), the
    comparison's note) for the fixture run to decide."""
    if base.unsupported == "not asked for":
        return "", (), ""
    same, why = equivalence.judge(base, spec.path, pythonpath_first=first)
    if same:
        return "equivalent", (), why
    proven, fill_why = equivalence.judge_fill(
        base, spec.path, site, original.read_text(), original.name, pythonpath_first=first
    )
    if proven:
        return "equivalent", (), fill_why
    return "", (), why


def report(spec: KernelSpec, mutants: list[Mutant], left_out: int) -> dict[str, Any]:
    """``mutation.json``'s content (README: File formats). The score is the share of the
    mutants that can act which a run caught: killed, or crashed or hung a child (a check of
    that kernel fails too: the process dies or runs past its limit), over all but the
    equivalent ones."""
    outcomes = ("killed", "survived", "equivalent", "crashed", "timeout")
    counts = {k: sum(m.outcome == k for m in mutants) for k in outcomes}
    scored = len(mutants) - counts["equivalent"]
    caught = counts["killed"] + counts["crashed"] + counts["timeout"]
    return {
        "kernel": {"path": str(spec.path), "function": spec.function, "sha256": spec.sha256},
        "mutants": [m.as_dict() for m in mutants],
        "killed": counts["killed"],
        "survived": counts["survived"],
        "equivalent": counts["equivalent"],
        "crashed": counts["crashed"],
        "timeout": counts["timeout"],
        "score": caught / scored if scored else 1.0,
        "sites_left_out": left_out,
    }
