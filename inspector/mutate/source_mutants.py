"""Automatic source mutants of a kernel file, each run against the fixture matrix in isolation.

Every ``@triton.jit`` function of the file is searched for sites
(:func:`inspector.mutate.sites.mutation_sites`, which lists the operators). A mutant is the file
with one site changed, spliced into the original text so everything else stays byte for byte; it
runs in a
child process (:mod:`kernels.sandbox.usercode`) on every runnable fixture the unmutated kernel
passes (:mod:`inspector.mutate.baseline_run`) until one catches it. Outcomes: ``equivalent`` (the
TTIR of every launch signature the original's launcher makes is the original's, or only a load's
fill that no store can see changed: :mod:`inspector.mutate.equivalence`; ``detail`` says which),
``killed`` (a fixture failed: ``killed_by`` names it), ``survived`` (every fixture behaved),
``crashed`` or ``timeout`` (the child died or hung on a fixture, named), ``stillborn`` (Triton
refused to compile or trace it: it never ran). Where the TTIR cannot be compared, every mutant runs
the fixtures and ``detail`` says why it was not compared.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from inspector.coverage import child, reach
from inspector.mutate import equivalence
from inspector.mutate.baseline_run import is_stillborn
from inspector.mutate.beyond import (
    _coverage_verdict,
    _past_2_31_verdict,
    flag_branches,
    hand_made_branch,
)
from inspector.mutate.sites import Site, apply_site, mutation_sites
from kernels.sandbox.usercode import KernelSpec
from oracle import fixtures, matrix

PROJECT = Path(__file__).resolve().parents[2]

# Most mutants one run makes (a file with more sites is cut, and the report says so).
MAX_MUTANTS = 400
# A mutant's outcomes; stillborn ones (Triton refused the program) are left out of the score.
OUTCOMES = ("killed", "survived", "equivalent", "crashed", "timeout", "stillborn")


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


def _run_mutant(
    spec: KernelSpec,
    pythonpath_first: str,
    poison: float,
    timeout_s: float,
    judged_on: frozenset[str] | None = None,
) -> tuple[str, tuple[str, ...], str]:
    """(outcome, killed_by, detail) of one mutant file against the runnable fixtures (those of
    ``judged_on`` only: the ones the unmutated kernel passes). A failure that is Triton refusing
    the program makes it ``stillborn``."""
    from inspector.check.user_kernel import UserImplementation, UserKernelFailed

    try:
        implementation = UserImplementation(
            spec, poison=poison, pythonpath_first=pythonpath_first, run_timeout_s=timeout_s
        )
    except ValueError as err:  # the mutant does not import (a syntax error cannot be: ast made it)
        return "crashed", ("import",), str(err)[:500]
    cache = matrix.ReferenceCache()
    unjudged: list[str] = []
    try:
        for fixture in fixtures.FIXTURES:
            if fixture.check == "rejection" or (
                judged_on is not None and fixture.name not in judged_on
            ):
                continue
            try:
                outcome = matrix.evaluate(fixture, implementation, cache=cache, poison=poison)
            except UserKernelFailed as err:
                kind = "timeout" if "user kernel timeout" in str(err) else "crashed"
                return kind, (fixture.name,), str(err)[:500]
            if outcome.actual in matrix.NO_VERDICT:  # the machine's fault, or out of domain
                unjudged.append(fixture.name)
                continue
            if not outcome.passed:
                if is_stillborn(outcome.detail):
                    return "stillborn", (fixture.name,), outcome.detail[:500]
                if "user kernel crashed" in outcome.detail:
                    return "crashed", (fixture.name,), outcome.detail[:500]
                if "user kernel timeout" in outcome.detail:
                    return "timeout", (fixture.name,), outcome.detail[:500]
                return "killed", (fixture.name,), outcome.detail[:500]
        if unjudged:
            return (
                "survived",
                (),
                (
                    f"every fixture judged behaved; {len(unjudged)} could not be judged on this "
                    f"machine ({', '.join(unjudged[:4])}): run it on a GPU"
                ),
            )
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
    judged_on: frozenset[str] | None = None,
) -> tuple[list[Mutant], int]:
    """Mutate the ``@triton.jit`` functions of ``files`` (default: the kernel's file) and run
    each mutant. ``launcher_dir``: a package folder copied whole for each mutant (the bundled
    kernel: its modules import each other), else the mutant replaces the kernel file alone.
    ``compare_ttir``: judge equivalence by TTIR first (:mod:`inspector.mutate.equivalence`).
    ``cancelled``: polled before each mutant; once true, the mutants not yet started are left
    out (the count returned says how many sites were not run). ``coverage_map``: a map file
    (:func:`inspector.coverage.child.write_map`) that every mutant the fixtures let through is
    proven against too (:func:`_coverage_verdict`; the bundled kernel's layouts; where the map
    records each configuration's lines, only on those that run the site's statement); the TTIR
    is then compared last, for the mutants both let through.
    ``first_site``: start at this site (0-based; the ids keep their place in the whole list),
    so a file of more than MAX_MUTANTS sites is run in slices of ``count`` (at most
    MAX_MUTANTS). ``only``: run just these mutant ids (``m005``) of the slice (a rerun of an
    earlier report's survivors); the others count as left out. ``judged_on``: the fixtures the
    unmutated kernel passes (:func:`inspector.mutate.baseline_run.run_baseline`); None: all.

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
                outcome, killed_by, detail = _run_mutant(
                    mutant_spec, first, poison, timeout_s, judged_on
                )
                if outcome == "survived" and coverage_map is not None:
                    source = path.read_text()
                    branch = hand_made_branch(source, site) or flag_branches(
                        source, site, [f.read_text() for f in files]
                    )
                    name = path.relative_to(launcher_dir) if launcher_dir else Path(path.name)
                    span = reach.statement_span(source, name.as_posix(), site.start, site.end)
                    verdict = _coverage_verdict(first, coverage_map, branch, timeout_s * 10, span)
                    if verdict[0] == "survived" and branch is None:
                        verdict = _past_2_31_verdict(first, timeout_s) or verdict
                    outcome, killed_by, detail = verdict
                    if outcome == "survived":  # the TTIR last: only the survivors compile it
                        judged = _judged(base, mutant_spec, first, path, site)
                        if judged[0] and span and child.beyond_rule_only(coverage_map, span):
                            judged = (
                                "",
                                (),
                                f"{judged[2]}, none of which compiles "
                                f"{reach.format_span(span)}: only layouts beyond "
                                "the rule run it",
                            )
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
        raise ValueError(
            f"--sites: {', '.join(unknown[:5])} not among this slice's mutants ({span})"
        )


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
    that kernel fails too), over all but the equivalent and the stillborn ones."""
    counts = {k: sum(m.outcome == k for m in mutants) for k in OUTCOMES}
    scored = len(mutants) - counts["equivalent"] - counts["stillborn"]
    caught = counts["killed"] + counts["crashed"] + counts["timeout"]
    return {
        "kernel": {"path": str(spec.path), "function": spec.function, "sha256": spec.sha256},
        "mutants": [m.as_dict() for m in mutants],
        "killed": counts["killed"],
        "survived": counts["survived"],
        "equivalent": counts["equivalent"],
        "crashed": counts["crashed"],
        "timeout": counts["timeout"],
        "stillborn": counts["stillborn"],
        "score": caught / scored if scored else 1.0,
        "sites_left_out": left_out,
    }
