"""The checks of ``verify`` that only a real kernel receipt exercises (the session's
``kernel_result``). Launch layouts: a survivor, a fixture count or a mutant without a killer,
each alone, is named alone. Coverage: its detail restates both sides' counts, a configuration
proven on one machine alone is proven, a count off by one alone or a repeated label is refused.

(Apart from ``test_verify_details.py``, whose receipts need no kernel run, so that a mutation
run that orders that file first kills its mutants in seconds.)
"""

from __future__ import annotations

import json
from pathlib import Path

from inspector.records.receipts import receipt, verify
from records.receipt_files import forge as _forge


def _written(result, folder: Path) -> Path:
    receipt.write_receipts(result, folder)
    path = folder / "receipt.json"
    (folder / "receipt.csv").unlink()
    _forge(path, lambda data: data["export_check"].update(files={}))
    return path


def _coverage(kernel_result, folder: Path, change=None) -> verify.Check:
    path = _written(kernel_result, folder)
    if change is not None:
        _forge(path, lambda d: change(d["coverage"]))
    return {c.name: c for c in verify.verify_receipts(path).checks}["coverage"]


def test_the_coverage_check_restates_its_counts(kernel_result, tmp_path) -> None:
    path = _written(kernel_result, tmp_path)
    section = json.loads(path.read_text(encoding="utf-8"))["coverage"]
    cpu, gpu, unproven = section["proven_cpu"], section["proven_gpu"], len(section["unproven"])
    check = _coverage(kernel_result, tmp_path)
    assert check.ok
    assert check.detail == (
        f"claims cpu {cpu}, gpu {gpu}, {unproven} unproven; its "
        f"{len(section['configurations'])} configurations give cpu {cpu}, gpu {gpu}, "
        f"{unproven} unproven"
    )


def test_a_configuration_proven_on_the_cpu_alone_is_proven(kernel_result, tmp_path) -> None:
    def change(section):
        entry = next(e for e in section["configurations"] if e["proven_cpu"] and e["proven_gpu"])
        entry["proven_gpu"] = False
        section["proven_gpu"] -= 1

    assert _coverage(kernel_result, tmp_path, change).ok


def test_a_cpu_count_off_by_one_alone_is_refused(kernel_result, tmp_path) -> None:
    assert not _coverage(
        kernel_result, tmp_path, lambda s: s.update(proven_cpu=s["proven_cpu"] + 1)
    ).ok


def test_a_repeated_configuration_label_is_refused(kernel_result, tmp_path) -> None:
    def change(section):
        entries = section["configurations"]
        entries[1]["label"] = entries[0]["label"]

    check = _coverage(kernel_result, tmp_path, change)
    assert not check.ok
    assert check.detail.endswith(", with repeated labels")


def _layouts(kernel_result, folder: Path, change) -> verify.Check:
    path = _written(kernel_result, folder)
    _forge(path, lambda d: change(d["kernel"]["paths"][1]))
    return {c.name: c for c in verify.verify_receipts(path).checks}["kernel launch layouts"]


def test_a_survivor_alone_is_named_alone(kernel_result, tmp_path) -> None:
    check = _layouts(kernel_result, tmp_path, lambda e: e.update(survivors=["missing_weight"]))
    assert not check.ok
    assert check.detail == "multi_row: missing_weight survived"


def test_a_fixture_count_off_alone_is_named_alone(kernel_result, tmp_path) -> None:
    def change(entry):
        entry["fixtures_as_expected"] = entry["fixtures"] - 1

    path = _written(kernel_result, tmp_path)
    fixtures = json.loads(path.read_text(encoding="utf-8"))["kernel"]["paths"][1]["fixtures"]
    check = _layouts(kernel_result, tmp_path, change)
    assert not check.ok
    assert check.detail == f"multi_row: {fixtures - 1}/{fixtures} fixtures as expected"


def test_a_mutant_without_a_killer_alone_is_named_alone(kernel_result, tmp_path) -> None:
    check = _layouts(kernel_result, tmp_path, lambda e: e["killed_by"].update(missing_weight=[]))
    assert not check.ok
    assert check.detail == "multi_row: missing_weight has no killer"
