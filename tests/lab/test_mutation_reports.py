"""The committed mutation reports of scripts/mutate_python.py (``docs/mutation/oracle.json``,
``launcher.json``, ``verify.json``) against the code as it is now: each is complete, every
survivor has its reason, the score is at least 0.95, and every explanation names a change that
still exists in the source (an explanation of a site that was edited away would vouch for code
nobody tested). Rerunning the mutants is the reports' own command (README in docs/mutation); it
takes minutes per hundred mutants, so CI checks the records, not the run.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "mutate_python.py"
REPORTS = {
    "oracle": "oracle_explained.json",
    "launcher": "launcher_explained.json",
    "verify": "verify_explained.json",
}


def _module():
    spec = importlib.util.spec_from_file_location("mutate_python", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _current_keys(module, files: set[str]) -> set[tuple]:
    planned = []
    for name in sorted(files):
        for site in module.python_sites((ROOT / name).read_text()):
            planned.append({"file": name, "function": site.function, "operator": site.operator,
                            "before": site.before, "after": site.after})  # fmt: skip
    return {module.key(m) for m in module.keyed(planned)}


@pytest.mark.parametrize("target", sorted(REPORTS))
def test_a_committed_report_is_complete_explained_and_scores_at_least_95_percent(
    target: str,
) -> None:
    report = json.loads((ROOT / "docs" / "mutation" / f"{target}.json").read_text())
    assert report["complete"], f"{target}: {report['not run']} mutants not run"
    alive = [m for m in report["mutants"] if m["outcome"] in ("survived", "equivalent")]
    assert all(m["explanation"] for m in alive), [m["id"] for m in alive if not m["explanation"]]
    assert report["unexplained"] == 0
    scored = len(report["mutants"]) - report["equivalent"]
    assert report["score"] == pytest.approx((report["killed"] + report["timeout"]) / scored)
    assert report["score"] >= 0.95


@pytest.mark.parametrize("target", sorted(REPORTS))
def test_every_explanation_names_a_change_the_source_still_has(target: str) -> None:
    module = _module()
    explained = json.loads((ROOT / "docs" / "mutation" / REPORTS[target]).read_text())
    current = _current_keys(module, {entry["file"] for entry in explained})
    stale = [module.key(entry) for entry in explained if module.key(entry) not in current]
    assert not stale, f"explanations of changes no longer in the source: {stale}"


KERNEL_FILES = ("kernels/jit/parts.py", "kernels/jit/tile.py", "kernels/jit/loop.py")


def _kernel_sites() -> list[tuple]:
    """(file, function, operator, before, after, occurrence) of every `main.py mutate` site of
    the bundled kernel as it is now, in `mutate`'s order (its ids m001, m002, ...)."""
    from inspector.mutate.sites import mutation_sites

    keys, seen = [], {}
    for name in KERNEL_FILES:
        for site in mutation_sites((ROOT / name).read_text()):
            key = (name, site.function, site.operator, site.before, site.after)
            seen[key] = seen.get(key, -1) + 1
            keys.append((*key, seen[key]))
    return keys


def test_the_bundled_kernels_report_is_of_every_site_and_explains_every_survivor() -> None:
    """docs/mutation/bundled.json (`main.py mutate` over the kernel's three files): one mutant
    per site of the source as it is (an edit that adds, drops or changes a site needs a new
    run), each survivor explained in bundled_explained.json, the score at least 0.95."""
    report = json.loads((ROOT / "docs" / "mutation" / "bundled.json").read_text())
    sites = _kernel_sites()
    mutants = report["mutants"]
    assert [m["id"] for m in mutants] == [f"m{i + 1:03d}" for i in range(len(sites))]
    assert [(m["function"], m["operator"], m["before"], m["after"]) for m in mutants] == [
        key[1:5] for key in sites
    ]
    explained = json.loads((ROOT / "docs" / "mutation" / "bundled_explained.json").read_text())
    by_key = {(e["file"], e["function"], e["operator"], e["before"], e["after"],
               e["occurrence"]): e for e in explained}  # fmt: skip
    assert len(by_key) == len(explained)
    assert set(by_key) <= set(sites), "explanations of changes no longer in the source"
    outcome = {sites[int(m["id"][1:]) - 1]: m["outcome"] for m in mutants}
    survivors = {key for key, value in outcome.items() if value == "survived"}
    assert survivors <= set(by_key), sorted(survivors - set(by_key))
    # No explanation of a mutant the run caught: each names why one was let through.
    assert all(outcome[key] in ("survived", "equivalent") for key in by_key)
    assert all(e["kind"] in ("equivalent", "unkilled") and e["reason"] for e in explained)
    counts = {k: sum(m["outcome"] == k for m in mutants) for k in
              ("killed", "survived", "equivalent", "crashed", "timeout", "stillborn")}  # fmt: skip
    assert all(report[k] == v for k, v in counts.items())
    # A stillborn mutant (Triton refused it) never ran: neither a kill nor in the score.
    assert all(m["killed_by"] and m["detail"] for m in mutants if m["outcome"] == "stillborn")
    scored = len(mutants) - counts["equivalent"] - counts["stillborn"]
    caught = counts["killed"] + counts["crashed"] + counts["timeout"]
    assert report["score"] == pytest.approx(caught / scored)
    assert report["score"] >= 0.95
