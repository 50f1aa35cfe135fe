"""Join `main.py mutate` reports of one kernel into one: ``python -m lab.mutation_join BASE.json
RERUN.json [RERUN.json ...] --out DIR [--label TEXT ...]``.

``BASE.json`` holds every site (a whole run, or slices already joined); each ``RERUN.json`` (a
run with ``--sites``, usually of the base's survivors) replaces the base's outcome of each
mutant it ran, matched by id, which must name the same site (function, line, operator, before,
after). Every report must be of the same kernel sha256. The counts and the score are recomputed
as :func:`inspector.mutate.source_mutants.report` computes them; ``reruns`` lists the ids each
rerun replaced (with ``--label``, what the rerun was); the base's own run settings (``slices``,
``ttir_compared``, ``first_site``) move under ``base``. Writes ``DIR/mutation.json`` and
``DIR/mutation.csv``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

SITE_FIELDS = ("function", "line", "operator", "before", "after")
OUTCOMES = ("killed", "survived", "equivalent", "crashed", "timeout", "stillborn")
# A run's own settings: under "base" in a joined report (a rerun's label says its own).
RUN_FIELDS = ("slices", "ttir_compared", "first_site")


def recount(mutants: list[dict[str, Any]]) -> dict[str, Any]:
    """Each outcome's count and the score, as :func:`inspector.mutate.source_mutants.report` makes
    them."""
    counts: dict[str, Any] = {k: sum(m["outcome"] == k for m in mutants) for k in OUTCOMES}
    scored = len(mutants) - counts["equivalent"] - counts["stillborn"]
    caught = counts["killed"] + counts["crashed"] + counts["timeout"]
    counts["score"] = caught / scored if scored else 1.0
    return counts


def join(base: dict[str, Any], reruns: list[dict[str, Any]], labels: list[str]) -> dict[str, Any]:
    """``base`` with each rerun's mutants in place of its own, recounted.

    Raises:
        ValueError: another kernel, an id the base does not have, or one naming another site.
    """
    sha = base["kernel"]["sha256"]
    by_id = {m["id"]: dict(m) for m in base["mutants"]}
    replaced = []
    for index, rerun in enumerate(reruns):
        if rerun["kernel"]["sha256"] != sha:
            raise ValueError(f"rerun {index + 1} is of kernel {rerun['kernel']['sha256'][:12]}, "
                             f"not {sha[:12]}")  # fmt: skip
        ids = []
        for mutant in rerun["mutants"]:
            old = by_id.get(mutant["id"])
            if old is None:
                raise ValueError(f"rerun {index + 1}: {mutant['id']} is not in the base")
            if any(old[f] != mutant[f] for f in SITE_FIELDS):
                raise ValueError(f"rerun {index + 1}: {mutant['id']} names another site")
            by_id[mutant["id"]] = dict(mutant)
            ids.append(mutant["id"])
        label = labels[index] if index < len(labels) else ""
        replaced.append({"label": label, "ids": ids})
    mutants = [by_id[m["id"]] for m in base["mutants"]]
    joined = {key: value for key, value in base.items() if key not in (*RUN_FIELDS, "mutants")}
    if reruns and "base" not in base:
        # How the base ran (its slices, whether it compared TTIR) is no longer the whole report's.
        joined["base"] = {key: base[key] for key in RUN_FIELDS if key in base}
    joined.update(recount(mutants))
    joined["mutants"] = mutants
    joined["reruns"] = [*base.get("reruns", []), *replaced]
    for rerun in reruns:
        for key in ("coverage_configurations",):
            if key in rerun:
                joined[key] = rerun[key]
    return joined


def main(argv: list[str] | None = None) -> int:
    from inspector.cli.mutate_command import _csv_text
    from inspector.records.atomic import atomic_write_text

    parser = argparse.ArgumentParser(prog="python -m lab.mutation_join")
    parser.add_argument("base", type=Path)
    parser.add_argument("reruns", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--label", action="append", default=[], help="what each rerun was")
    args = parser.parse_args(argv)
    try:
        base = json.loads(args.base.read_text())
        reruns = [json.loads(path.read_text()) for path in args.reruns]
        joined = join(base, reruns, args.label)
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "mutation.json", json.dumps(joined, indent=1) + "\n")
    atomic_write_text(args.out / "mutation.csv", _csv_text(joined["mutants"]))
    print(f"{len(joined['mutants'])} mutants: killed {joined['killed']}, crashed "
          f"{joined['crashed']}, timeout {joined['timeout']}, equivalent {joined['equivalent']}, "
          f"stillborn {joined['stillborn']}, "
          f"survived {joined['survived']}; score {joined['score']:.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
