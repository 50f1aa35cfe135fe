"""Mutation testing of a plain-Python package against its own tests.

    python scripts/mutate_python.py --package oracle --tests tests/oracle \
        --out docs/mutation/oracle.json [--jobs N] [--timeout S] [--files a.py,b.py] \
        [--explained docs/mutation/oracle_explained.json] [--select REPORT] [--killed-in REPORT]

Every function and method of each file, and every module- and class-level assignment (the
declared bounds live there), is searched for sites with the kernel mutator's operators
(:func:`inspector.mutate.sites._variants`: arithmetic and comparisons swapped, constants
moved, negations dropped) plus ``and`` <-> ``or`` and a dropped ``not``. Each mutant is the file
with one site changed, in a fresh copy of the package and its tests, and the tests run there
(``pytest -x``): a failing test kills it (named), passing tests let it survive, a run past
``--timeout`` is a timeout. The original's tests must pass first. Writes the report (JSON, one
entry per mutant, ``score`` = (killed + timeout) / (mutants - equivalent): a suite that runs past
its time limit fails CI as surely as a failing test) and the survivors (CSV beside it).

A mutant is named by its key: file, function, operator, the text before and after, and which
occurrence of that change in the function it is (line numbers move when the file is edited, keys
do not). Each mutant also records its site's line (``site``, a short hash of its text): an edit
that adds or drops an equal change earlier in the function shifts the occurrences after it, so a
key then names another site; a mutant whose ``site`` is not its key's current line's is of a
changed site, and runs again (reports older than the hashes are matched by key alone).
``--explained`` is a JSON list of ``{key..., "kind", "reason"}``: a survivor whose key is there
gets the reason, and ``kind: equivalent`` (the change cannot alter behaviour) takes it out of
the score; an explanation that matches no survivor is reported, since a stale one hides nothing
but misleads. ``--select REPORT`` reruns only the mutants that REPORT left alive (and those of
changed sites); ``--killed-in REPORT`` reruns only those it killed, each first against the test
that killed it (then the whole suite if that test passes now): after a change to the tests, any
of them that survives is a kill the change lost, listed, and the exit status is 1;
``--missing-in REPORT`` runs only the sites REPORT has no mutant for (sites an edit added or
changed);
``--merge A,B,...`` runs nothing and joins reports (of slices, of the sites an edit added, or of
the same mutants on other machines, e.g. the GPU tests): a mutant takes the first report's outcome
unless a later report killed it, and each entry keeps its ``machine``; the joined report holds
exactly the sites the source of ``--package`` (``--files``) has now, under their current ids and
lines (a mutant of a site an edit removed is dropped, and counted; a current site no report has
stops the merge).

A report is stored compact: the files, killing tests and machines are listed once
(``"files"``, ``"killers"``, ``"machines"``) and each mutant names them by index, with empty
fields left out; :func:`load_report` gives the mutants back in full.
"""

from __future__ import annotations

import argparse
import ast
import copy
import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inspector.mutate.sites import Site, _variants, apply_site  # noqa: E402


def _python_variants(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    yield from _variants(node)
    if isinstance(node, ast.BoolOp):
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield f"{type(node.op).__name__} -> {type(new.op).__name__}", new
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "not dropped", copy.deepcopy(node.operand)


def _scopes(tree: ast.Module) -> Iterator[tuple[str, list[ast.stmt]]]:
    """(name, statements) of every function, method and module- or class-level assignment."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.body
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{item.name}", item.body
                elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                    yield node.name, [item]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            yield "<module>", [node]


def python_sites(source: str) -> list[Site]:
    """Every site of ``source``, in file order (docstrings and annotations are not mutated)."""
    tree = ast.parse(source)
    sites = []
    for name, statements in _scopes(tree):
        for statement in statements:
            skip = set()
            for node in ast.walk(statement):
                if isinstance(node, (ast.AnnAssign, ast.arg)) and node.annotation is not None:
                    skip.update(id(n) for n in ast.walk(node.annotation))
                if isinstance(node, ast.FunctionDef) and node.returns is not None:
                    skip.update(id(n) for n in ast.walk(node.returns))
            for node in ast.walk(statement):
                if id(node) in skip or getattr(node, "end_lineno", None) is None:
                    continue
                before = ast.get_source_segment(source, node)
                if before is None:
                    continue
                for operator, new in _python_variants(node):
                    start = (node.lineno, node.col_offset)
                    end = (node.end_lineno, node.end_col_offset)
                    after = ast.unparse(new)
                    sites.append(Site(name, node.lineno, operator, before, after, start, end))
    sites.sort(key=lambda s: (s.start, s.operator))
    return sites


KEY_FIELDS = ("file", "function", "operator", "before", "after", "occurrence")


def keyed(mutants: list[dict]) -> list[dict]:
    """Each mutant with its ``occurrence``: how many earlier mutants share its other key fields."""
    seen: dict[tuple, int] = {}
    for mutant in mutants:
        head = tuple(mutant[f] for f in KEY_FIELDS[:-1])
        mutant["occurrence"] = seen.get(head, 0)
        seen[head] = mutant["occurrence"] + 1
    return mutants


def key(entry: dict) -> tuple:
    return tuple(entry.get(f, 0) if f == "occurrence" else entry[f] for f in KEY_FIELDS)


#: fields a mutant names by index into the report's list of that name
INTERNED = {"file": "files", "killed_by": "killers", "machine": "machines"}
FIELDS = ("id", "file", "function", "line", "operator", "before", "after", "occurrence",
          "outcome", "killed_by", "explanation", "machine", "site")  # fmt: skip


def line_hash(line: str) -> str:
    """A mutant's ``site``: 8 hex digits of the SHA-1 of its line, stripped (a report holds
    one per mutant, so not the line itself)."""
    return hashlib.sha1(line.strip().encode()).hexdigest()[:8]


def same_site(mutant: dict, now: dict) -> bool:
    """Whether ``mutant`` (of a report) is of the site ``now`` of the same key: its line reads
    the same (a mutant recorded without its line's hash is taken on its key)."""
    return not mutant.get("site") or mutant["site"] == now["site"]


def compact(report: dict) -> dict:
    """``report`` with each interned field listed once and every mutant's empty fields left out."""
    tables: dict[str, list[str]] = {name: [] for name in INTERNED.values()}
    index: dict[tuple[str, str], int] = {}
    mutants = []
    for mutant in report["mutants"]:
        entry = {}
        for field in FIELDS:
            value = mutant.get(field, "")
            if field in INTERNED and value:
                table = INTERNED[field]
                if (table, value) not in index:
                    index[table, value] = len(tables[table])
                    tables[table].append(value)
                value = index[table, value]
            if value != "" and not (field == "occurrence" and value == 0):
                entry[field] = value
        mutants.append(entry)
    return {**{k: v for k, v in report.items() if k != "mutants"}, **tables, "mutants": mutants}


def load_report(path: Path) -> dict:
    """A report as :func:`compact` stored it (or an older, full one), every mutant in full."""
    report = json.loads(Path(path).read_text())
    if not any(table in report for table in INTERNED.values()):
        mutants = report["mutants"]  # a full report; one older than keys has no occurrences
        report["mutants"] = mutants if not mutants or "occurrence" in mutants[0] else keyed(mutants)
    tables = {table: report.pop(table, []) for table in INTERNED.values()}
    full = []
    for mutant in report["mutants"]:
        entry = {field: mutant.get(field, 0 if field == "occurrence" else "") for field in FIELDS}
        for field, table in INTERNED.items():
            if isinstance(entry[field], int):
                entry[field] = tables[table][entry[field]]
        full.append(entry)
    report["mutants"] = full
    return report


def current_sites(files: list[Path]) -> list[dict]:
    """One planned mutant per site of ``files`` as they are now, keyed, ids in file order."""
    work, lines = [], {}
    for path in files:
        source = path.read_text()
        lines[path] = source.splitlines()
        work.extend((path, site) for site in python_sites(source))
    return keyed([
        {"id": f"p{index + 1:04d}", "file": path.relative_to(ROOT).as_posix(),
         "function": site.function, "line": site.line, "operator": site.operator,
         "before": site.before, "after": site.after,
         "site": line_hash(lines[path][site.line - 1])}
        for index, (path, site) in enumerate(work)
    ])  # fmt: skip


def _copy(folder: Path, package: str, tests: list[str]) -> None:
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / package, folder / package, ignore=ignore)
    for test in tests:  # a test file comes with its folder (its helpers and conftest)
        tree = Path(test) if (ROOT / test).is_dir() else Path(test).parent
        if not (folder / tree).exists():
            shutil.copytree(ROOT / tree, folder / tree, ignore=ignore)
        for parent in tree.parents:
            if str(parent) != ".":
                (folder / parent / "__init__.py").touch()
    shutil.copy(ROOT / "pyproject.toml", folder / "pyproject.toml")
    if (ROOT / "tests" / "conftest.py").is_file() and (folder / "tests").is_dir():
        shutil.copy(ROOT / "tests" / "conftest.py", folder / "tests" / "conftest.py")


def _pytest(folder: Path, tests: list[str], timeout_s: float, extra: str) -> tuple[str, str]:
    # the mutated copy shadows the package; the rest of the tree and any site folder stay reachable
    path = os.pathsep.join([str(folder), str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
               "-p", "no:randomly", "-o", "addopts=", *extra.split(), *tests]  # fmt: skip
    try:
        done = subprocess.run(
            command, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return "timeout", ""
    if done.returncode == 0:
        return "survived", ""
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", done.stdout, re.MULTILINE)
    if done.returncode in (1, 2) and failed:
        return "killed", failed[0]
    return "killed", f"pytest exit {done.returncode}: " + (
        done.stdout.strip().splitlines() or [""]
    )[-1]


def _skipped(folder: Path, test: str, args: argparse.Namespace) -> bool:
    """Whether pytest skips ``test`` on this machine (a GPU test here, say)."""
    path = os.pathsep.join([str(folder), str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         *args.pytest_args.split(), test],
        cwd=folder, env=env, capture_output=True, text=True, timeout=args.timeout, check=False,
    )  # fmt: skip
    last = (done.stdout.strip().splitlines() or [""])[-1]
    return done.returncode == 0 and "skipped" in last and "passed" not in last


def _explanations(path: Path | None) -> dict[tuple, dict]:
    if path is None:
        return {}
    entries = json.loads(path.read_text())
    for entry in entries:
        if entry.get("kind") not in ("equivalent", "unkilled") or not entry.get("reason"):
            raise SystemExit(f"{path}: each entry needs kind equivalent|unkilled and a reason")
    return {key(entry): entry for entry in entries}


def merge(reports: list[dict], planned: list[dict] | None = None) -> list[dict]:
    """One entry per mutant key: the first report's, unless a later report killed it. With
    ``planned`` (the current sites), only those keys, each under its current id, line and site;
    a mutant of a key whose site changed (:func:`same_site`) is left out."""
    now = {key(m): m for m in planned} if planned is not None else {}
    joined: dict[tuple, dict] = {}
    changed = 0
    for report in reports:
        for mutant in report["mutants"]:
            mutant = dict(mutant, machine=mutant.get("machine", report.get("machine", "")))
            if key(mutant) in now and not same_site(mutant, now[key(mutant)]):
                changed += 1
                continue
            earlier = joined.get(key(mutant))
            if (
                earlier is None
                or (earlier["outcome"] == "not run")
                or (earlier["outcome"] != "killed" and mutant["outcome"] == "killed")
            ):
                joined[key(mutant)] = mutant
    if planned is not None:
        gone = [k for k in joined if k not in now]
        if gone or changed:
            print(f"{len(gone)} mutants of sites the source no longer has are dropped, "
                  f"{changed} of sites that changed", file=sys.stderr)  # fmt: skip
        joined = {k: dict(m, id=now[k]["id"], line=now[k]["line"], site=now[k]["site"])
                  for k, m in joined.items() if k in now}  # fmt: skip
        missing = [m["id"] for k, m in now.items() if k not in joined]
        if missing:
            raise SystemExit(f"the reports have no mutant of {len(missing)} current sites "
                             f"(first {missing[0]}): run them with --missing-in")  # fmt: skip
    return sorted(joined.values(), key=lambda m: m["id"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", required=True)
    parser.add_argument("--tests", required=True, help="comma-separated test folders or files")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--files", help="comma-separated file names in the package (default all)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2)))
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--explained", type=Path, help="JSON list of explained survivors")
    parser.add_argument("--select", type=Path, help="rerun only the survivors of this report")
    parser.add_argument("--killed-in", type=Path, help="rerun only the mutants this report killed")
    parser.add_argument("--pytest-args", default="", help="more pytest arguments, e.g. --deselect")
    parser.add_argument("--missing-in", type=Path, help="run only the sites this report lacks")
    parser.add_argument("--merge", help="comma-separated reports to join (runs nothing)")
    parser.add_argument("--machine", default="", help="where the mutants ran, for the report")
    parser.add_argument("--deadline", type=float, help="start no mutant after this many seconds")
    args = parser.parse_args()
    tests = args.tests.split(",")
    explained = _explanations(args.explained)
    start = time.perf_counter()
    files = sorted((ROOT / args.package).glob("*.py"))
    if args.files:
        files = [ROOT / args.package / name for name in args.files.split(",")]
    planned = current_sites(files)
    if args.merge:
        reports = [load_report(Path(path)) for path in args.merge.split(",")]
        joined = merge(reports, planned)
        return _write(args, joined, explained, start, sum(r.get("seconds", 0.0) for r in reports))
    with tempfile.TemporaryDirectory(prefix="mutate-python-") as scratch:
        base = Path(scratch) / "original"
        _copy(base, args.package, tests)
        outcome, detail = _pytest(base, tests, args.timeout, args.pytest_args)
        if outcome != "survived":
            print(f"the original's tests do not pass: {outcome} {detail}", file=sys.stderr)
            return 1
    work = [(path, site) for path in files for site in python_sites(path.read_text())]
    chosen = list(range(len(work)))
    if args.missing_in:
        reported = {key(m): m for m in load_report(args.missing_in)["mutants"]}
        chosen = [
            i for i in chosen if key(planned[i]) not in reported
            or not same_site(reported[key(planned[i])], planned[i])
        ]  # fmt: skip
    if args.select:
        earlier = {key(m): m for m in load_report(args.select)["mutants"]}
        chosen = [  # its survivors, and any mutant whose site changed since
            i for i in chosen if key(planned[i]) in earlier
            and (earlier[key(planned[i])]["outcome"] != "killed"
                 or not same_site(earlier[key(planned[i])], planned[i]))
        ]  # fmt: skip
    killed_before: dict[tuple, str] = {}
    if args.killed_in:
        earlier = load_report(args.killed_in)["mutants"]
        killed_before = {key(m): m["killed_by"] for m in earlier if m["outcome"] == "killed"}
        chosen = [i for i in chosen if key(planned[i]) in killed_before]
        missing = len(killed_before) - len(chosen)
        if missing:
            print(f"{missing} mutants {args.killed_in} killed are not sites of this source "
                  "(it changed since)", file=sys.stderr)  # fmt: skip
    done_count = [0]

    def one(index: int) -> dict:
        path, site = work[index]
        if args.deadline is not None and time.perf_counter() - start > args.deadline:
            return dict(planned[index], outcome="not run", killed_by="", explanation="",
                        machine=args.machine)  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="mutate-python-") as scratch:
            folder = Path(scratch)
            _copy(folder, args.package, tests)
            target = folder / path.relative_to(ROOT)  # a file of a subpackage stays in its folder
            target.write_text(apply_site(path.read_text(), site))
            killer = killed_before.get(key(planned[index]), "")
            outcome = ""
            if "::" in killer:  # the test that killed it: when it still fails, the kill stands
                outcome, detail = _pytest(folder, [killer], args.timeout, args.pytest_args)
                if outcome == "survived" and _skipped(folder, killer, args):
                    # Its killer cannot run here (a GPU test on a CPU): recheck it where it can.
                    outcome, detail = "not run", f"its killer is skipped here: {killer}"
                elif not detail.startswith(killer.split("[")[0]):
                    outcome = ""  # not that test failing (an id pytest no longer finds...)
            if outcome not in ("killed", "not run"):
                outcome, detail = _pytest(folder, tests, args.timeout, args.pytest_args)
        done_count[0] += 1
        print(f"[{done_count[0]}/{len(chosen)}] {path.name}:{site.line} {site.function} "
              f"{site.operator}: {outcome}", file=sys.stderr, flush=True)  # fmt: skip
        mutant = dict(planned[index], outcome=outcome, killed_by="", explanation="")
        mutant["machine"] = args.machine
        if outcome in ("killed", "not run"):
            mutant["killed_by"] = detail
        return mutant

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        mutants = list(pool.map(one, chosen))
    status = _write(args, mutants, explained, start, 0.0)
    lost = [m for m in mutants if key(m) in killed_before and m["outcome"] not in
            ("killed", "not run")]  # fmt: skip
    for mutant in lost:
        print(f"kill lost: {mutant['id']} {mutant['file']}:{mutant['line']} "
              f"{mutant['function']} {mutant['before']!r} -> {mutant['after']!r}: "
              f"{mutant['outcome']}", file=sys.stderr)  # fmt: skip
    return 1 if lost else status


def _write(args, mutants: list[dict], explained: dict, start: float, earlier_s: float) -> int:
    for mutant in mutants:
        entry = explained.get(key(mutant))
        if (
            entry is not None
            and mutant["outcome"] in ("survived", "equivalent")
            and same_site(entry, mutant)
        ):
            mutant["explanation"] = entry["reason"]
            mutant["outcome"] = "equivalent" if entry["kind"] == "equivalent" else "survived"
    kinds = ("killed", "survived", "timeout", "equivalent", "not run")
    counts = {k: sum(m["outcome"] == k for m in mutants) for k in kinds}
    scored = len(mutants) - counts["equivalent"] - counts["not run"]
    alive_keys = {key(m) for m in mutants if m["outcome"] != "killed"}
    stale = [e for k, e in explained.items() if k not in alive_keys and k[0] in
             {m["file"] for m in mutants}]  # fmt: skip
    unexplained = sum(m["outcome"] == "survived" and not m["explanation"] for m in mutants)
    report = {
        "target": args.package, "tests": args.tests,
        "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "mutants": mutants, **counts, "unexplained": unexplained,
        "complete": counts["not run"] == 0,
        "score": (counts["killed"] + counts["timeout"]) / scored if scored else 1.0,
        "stale_explanations": [{f: e.get(f, 0) for f in KEY_FIELDS} for e in stale],
        "seconds": round(time.perf_counter() - start + earlier_s, 1),
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(compact(report), separators=(",", ":")) + "\n")
    with args.out.with_suffix(".csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(mutants[0]) if mutants else ["id"])
        writer.writeheader()
        writer.writerows(m for m in mutants if m["outcome"] != "killed")
    print(f"{args.package}: {len(mutants)} mutants, killed {counts['killed']}, survived "
          f"{counts['survived']} ({unexplained} unexplained), equivalent "
          f"{counts['equivalent']}, timeout {counts['timeout']}, not run {counts['not run']}; "
          f"score {report['score']:.3f}; "
          f"{len(stale)} stale explanations; {args.out}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
