"""The committed mutation reports of scripts/mutate_python.py (``docs/mutation/oracle.json``,
``launcher.json``) against the code as it is now: each is complete, every survivor has its
reason, the score is at least 0.95, and every explanation names a change that still exists in
the source (an explanation of a site that was edited away would vouch for code nobody tested).
Rerunning the mutants is the reports' own command (README in docs/mutation); it takes minutes
per hundred mutants, so CI checks the records, not the run.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "mutate_python.py"
REPORTS = {"oracle": "oracle_explained.json", "launcher": "launcher_explained.json"}


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
