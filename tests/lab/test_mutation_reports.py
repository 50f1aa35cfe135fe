"""The committed mutation reports of scripts/mutate_python.py (``docs/mutation/``: each of
:data:`REPORTS`) against the code as it is now: each holds one mutant per current site of what
it mutates and is complete, every survivor has its reason, the score is at least 0.95, and every
explanation names a change that still exists in the source (an explanation of a site that was
edited away would vouch for code nobody tested). Rerunning the mutants is the reports' own
command (README in docs/mutation); it takes minutes per hundred mutants, so CI checks the
records, not the run.
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
    "claims": "claims_explained.json",
    "invariance": "invariance_explained.json",
    "proof": "proof_explained.json",
}
#: what each report mutates: its package, and its files there (None: every file, as the
#: script's default takes them)
TARGETS = {
    "oracle": ("oracle", None),
    "launcher": ("kernels", ["launcher.py"]),
    "verify": ("inspector", ["records/receipts/verify.py"]),
    "claims": ("inspector", ["records/receipts/claims.py"]),
    "invariance": ("kernels", ["instruments/invariance.py"]),
    "proof": ("inspector", ["coverage/proof.py"]),
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
    report = _module().load_report(ROOT / "docs" / "mutation" / f"{target}.json")
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


def test_every_report_names_what_it_mutates() -> None:
    assert set(TARGETS) == set(REPORTS)


@pytest.mark.parametrize("target", sorted(REPORTS))
def test_a_committed_report_holds_one_mutant_of_each_site_the_source_has_now(target: str) -> None:
    """An edit that adds, drops or changes a site needs its mutants run (``--missing-in``, then
    ``--merge`` with ``--files``): a report of sites the source no longer has scores code nobody
    tested, and one that lacks the new sites leaves them untested."""
    module = _module()
    report = module.load_report(ROOT / "docs" / "mutation" / f"{target}.json")
    package, names = TARGETS[target]
    files = sorted((ROOT / package).glob("*.py"))
    if names is not None:
        files = [ROOT / package / name for name in names]
    planned = module.current_sites(files)
    assert report["target"] == package
    assert [(m["id"], module.key(m)) for m in report["mutants"]] == [
        (m["id"], module.key(m)) for m in planned
    ]
    changed = [
        m["id"] for m, now in zip(report["mutants"], planned, strict=True)
        if not module.same_site(m, now)
    ]  # fmt: skip
    assert not changed, f"mutants of sites whose line changed since they ran: {changed}"


def test_a_compact_report_reads_back_to_every_field_of_every_mutant(tmp_path: Path) -> None:
    module = _module()
    mutants = [
        {"id": "p0001", "file": "a/b.py", "function": "f", "line": 3, "operator": "Add -> Sub",
         "before": "x + 1", "after": "x - 1", "occurrence": 0, "outcome": "killed",
         "killed_by": "tests/t.py::test_one", "explanation": "", "machine": "", "site": "0a1b2c3d"},
        {"id": "p0002", "file": "a/c.py", "function": "g", "line": 9, "operator": "Lt -> LtE",
         "before": "x < 2", "after": "x <= 2", "occurrence": 1, "outcome": "survived",
         "killed_by": "", "explanation": "why", "machine": "H200 host", "site": ""},
    ]  # fmt: skip
    report = {"target": "a", "score": 0.5, "mutants": mutants}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(module.compact(report)))
    assert module.load_report(path) == report
    assert json.loads(path.read_text())["files"] == ["a/b.py", "a/c.py"]


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
