"""Carry a `main.py mutate` report of the bundled kernel onto its edited source: ``python -m
lab.mutation_carry OLD.json --old-rev REV --out DIR`` (REV: the commit OLD's kernel is of).

An edit that only adds code (a new hand-made mutant's ``if MUTANT == CODE:`` branch, compiled
out of every other launch) leaves each existing site's mutant what it was: same statement, same
change, the same launches. This writes ``DIR/mutation.json``, a report of every site of the
kernel as it is now (ids ``m001``... in ``mutate``'s order, lines as they are now), each site
whose key (file, function, operator, before, after, occurrence) ``OLD`` ran keeping its outcome
with ``carried`` naming the kernel sha256 it ran on, and each new site ``"outcome": "not run"``.
A key whose line reads otherwise now than at ``--old-rev`` is a new site too: an edit that adds
an equal change earlier in a function shifts the occurrences after it, and the key then names
another statement (``changed`` in the step counts them);
``DIR/new_sites.txt`` lists the new ids by ``--first-site`` slice of 400, for ``main.py mutate
--sites``, whose reports :mod:`lab.mutation_join` then joins in. Whether an edit only added
code is the editor's claim to check (``git diff``); this tool matches keys, nothing more. An edit
that removed code from a file (launches that no longer run) needs that file's sites run again:
``--rerun kernels/jit/loop.py`` marks them all; ``--old-files`` reads OLD's files where they were
at ``--old-rev``.
``--stillborn`` restates each recorded kill whose failure was Triton refusing the program as
``stillborn`` (the rule ``mutate`` now applies to the same recorded detail).
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KERNEL_FILES = ("kernels/jit/parts.py", "kernels/jit/tile.py", "kernels/jit/loop.py")
SLICE = 400


def _now(name: str) -> str:
    return (ROOT / name).read_text()


def _at(rev: str) -> Callable[[str], str]:
    def read(name: str) -> str:
        done = subprocess.run(["git", "show", f"{rev}:{name}"], cwd=ROOT, capture_output=True,
                              text=True, check=True)  # fmt: skip
        return done.stdout

    return read


@functools.lru_cache(maxsize=16)
def _sites_in(source: str) -> tuple:
    """``mutation_sites`` of one file's text (seconds each: a carry reads each text twice)."""
    from inspector.mutate.sites import mutation_sites

    return tuple(mutation_sites(source))


def sites_of(
    read: Callable[[str], str] = _now, files: tuple[str, ...] = KERNEL_FILES
) -> list[tuple[tuple, int]]:
    """((file, function, operator, before, after, occurrence), line) of every site, in order;
    ``files`` are read where KERNEL_FILES stand (a revision before the files moved), and the
    keys name KERNEL_FILES."""
    sites, seen = [], {}
    for name, where in zip(KERNEL_FILES, files, strict=True):
        for site in _sites_in(read(where)):
            head = (name, site.function, site.operator, site.before, site.after)
            seen[head] = seen.get(head, -1) + 1
            sites.append(((*head, seen[head]), site.line))
    return sites


def texts_of(
    read: Callable[[str], str] = _now, files: tuple[str, ...] = KERNEL_FILES
) -> dict[tuple, str]:
    """Each site's key (:func:`sites_of`) and its line, stripped."""
    lines = {
        name: read(where).splitlines() for name, where in zip(KERNEL_FILES, files, strict=True)
    }
    return {key: lines[key[0]][line - 1].strip() for key, line in sites_of(read, files)}


def old_keys(old: dict[str, Any], old_sites: list[tuple]) -> dict[tuple, dict[str, Any]]:
    """OLD's mutants by key; ``old_sites`` are OLD's sites in its id order (they give each
    mutant's file; its change is the report's own, since an operator edited since makes
    another ``after`` of the same site)."""
    if len(old_sites) != len(old["mutants"]):
        raise ValueError(f"{len(old['mutants'])} mutants in the report, {len(old_sites)} sites")
    keyed, seen = {}, {}
    for key, mutant in zip(old_sites, old["mutants"], strict=True):
        if tuple(key[1:4]) != (mutant["function"], mutant["operator"], mutant["before"]):
            raise ValueError(f"{mutant['id']} is not the site {key}")
        head = (key[0], mutant["function"], mutant["operator"], mutant["before"], mutant["after"])
        seen[head] = seen.get(head, -1) + 1
        keyed[(*head, seen[head])] = mutant
    return keyed


def carry(
    old: dict[str, Any],
    old_sites: list[tuple],
    sha256: str,
    rerun: tuple[str, ...] = (),
    old_texts: dict[tuple, str] | None = None,
) -> dict[str, Any]:
    """The report of the source as it is, each site of OLD's key kept, the others (and every
    site of a file in ``rerun``, and, given OLD's lines by key, each key whose line changed)
    ``not run``."""
    by_key = old_keys(old, old_sites)
    now_texts = texts_of() if old_texts is not None else {}
    mutants, new = [], []
    changed = 0
    for index, (key, line) in enumerate(sites_of()):
        ident = f"m{index + 1:03d}"
        earlier = None if key[0] in rerun else by_key.get(key)
        if earlier is not None and old_texts is not None and old_texts.get(key) != now_texts[key]:
            earlier, changed = None, changed + 1
        if earlier is None:
            new.append(index)
            mutants.append({"id": ident, "function": key[1], "line": line, "operator": key[2],
                            "before": key[3], "after": key[4], "outcome": "not run",
                            "killed_by": [], "detail": ""})  # fmt: skip
        else:
            carried = earlier.get("carried", old["kernel"]["sha256"])  # where it really ran
            mutants.append({**earlier, "id": ident, "line": line, "carried": carried})
    kept = {key: value for key, value in old.items() if key != "mutants"}
    kept["kernel"] = {**old["kernel"], "sha256": sha256}
    step = {"sha256": old["kernel"]["sha256"], "sites": len(old["mutants"]),
            "carried": len(mutants) - len(new), "new": len(new), "changed": changed}  # fmt: skip
    earlier_steps = old.get("carried_from", [])
    kept["carried_from"] = [*([earlier_steps] if isinstance(earlier_steps, dict) else
                              earlier_steps), step]  # fmt: skip
    kept["mutants"] = mutants
    return {"report": kept, "new": new}


def restate_stillborn(report: dict[str, Any]) -> list[str]:
    """Mark ``stillborn`` each mutant whose recorded failure is Triton refusing the program
    (:func:`inspector.mutate.baseline_run.is_stillborn`, the rule ``mutate`` applies to the same
    detail when it runs), with ``restated`` saying so; recount. Returns the ids restated."""
    from inspector.mutate.baseline_run import is_stillborn
    from lab.mutation_join import recount

    restated = []
    for mutant in report["mutants"]:
        if mutant["outcome"] in ("killed", "crashed") and is_stillborn(mutant.get("detail", "")):
            mutant["restated"] = f"{mutant['outcome']} -> stillborn: Triton refused the program"
            mutant["outcome"] = "stillborn"
            restated.append(mutant["id"])
    report.update(recount(report["mutants"]))
    return restated


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.mutation_carry")
    parser.add_argument("old", type=Path)
    parser.add_argument("--old-rev", required=True, help="the commit OLD's kernel source is of")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--old-files",
        default=",".join(KERNEL_FILES),
        help="OLD's kernel files at --old-rev, in KERNEL_FILES' order (where they were)",
    )
    parser.add_argument(
        "--rerun",
        default="",
        help="files (as KERNEL_FILES names them) whose every site is marked to run again",
    )
    parser.add_argument(
        "--stillborn", action="store_true", help="restate kills that were Triton refusing"
    )
    args = parser.parse_args(argv)
    from kernels.instruments.compile_info import kernel_source_sha256

    try:
        old = json.loads(args.old.read_text())
        old_files = tuple(args.old_files.split(","))
        old_sites = [key for key, _ in sites_of(_at(args.old_rev), old_files)]
        old_texts = texts_of(_at(args.old_rev), old_files)
        rerun = tuple(name for name in args.rerun.split(",") if name)
        result = carry(old, old_sites, kernel_source_sha256(), rerun, old_texts)
    except (OSError, ValueError, KeyError, subprocess.CalledProcessError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.stillborn:
        restated = restate_stillborn(result["report"])
        result["report"]["restated_stillborn"] = restated
        print(f"{len(restated)} recorded outcomes restated as stillborn")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "mutation.json").write_text(json.dumps(result["report"], indent=1) + "\n")
    slices: dict[int, list[str]] = {}
    for index in result["new"]:
        slices.setdefault(index // SLICE * SLICE, []).append(f"m{index + 1:03d}")
    lines = [f"--first-site {first} --sites {','.join(ids)}" for first, ids in slices.items()]
    (args.out / "new_sites.txt").write_text("\n".join(lines) + "\n")
    info = result["report"]["carried_from"][-1]
    print(f"{info['carried']} sites carried from {info['sha256'][:12]}, {info['new']} new "
          f"({info['changed']} of them a key whose line changed)")  # fmt: skip
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
