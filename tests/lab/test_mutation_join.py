"""lab.mutation_join: a rerun of named mutants replaces their outcomes in a whole report."""

from __future__ import annotations

import json

import pytest

from lab import mutation_join


def _mutant(number: int, outcome: str) -> dict:
    return {"id": f"m{number:03d}", "function": "f", "line": number, "operator": "Add -> Sub",
            "before": "a + b", "after": "a - b", "outcome": outcome, "killed_by": [],
            "detail": ""}  # fmt: skip


def _report(sha: str, *mutants: dict) -> dict:
    return {"kernel": {"path": "k", "function": "f", "sha256": sha}, "mutants": list(mutants),
            "killed": 0, "survived": 0, "equivalent": 0, "crashed": 0, "timeout": 0,
            "score": 0.0, "sites_left_out": 0}  # fmt: skip


def test_a_rerun_replaces_its_mutants_and_the_counts_follow(tmp_path) -> None:
    base = _report("a" * 64, _mutant(1, "killed"), _mutant(2, "survived"), _mutant(3, "survived"),
                   _mutant(4, "crashed"))  # fmt: skip
    base["ttir_compared"] = False
    rerun = _report("a" * 64, _mutant(2, "equivalent"), _mutant(3, "killed"))
    rerun["coverage_configurations"] = {"rule": 242, "beyond_rule": 298}
    joined = mutation_join.join(base, [rerun], ["survivors, TTIR last"])
    assert [m["outcome"] for m in joined["mutants"]] == [
        "killed",
        "equivalent",
        "killed",
        "crashed",
    ]
    assert (joined["killed"], joined["equivalent"], joined["survived"]) == (2, 1, 0)
    assert joined["score"] == 1.0  # 2 killed + 1 crashed of 3 that can act
    assert joined["reruns"] == [{"label": "survivors, TTIR last", "ids": ["m002", "m003"]}]
    assert joined["coverage_configurations"] == {"rule": 242, "beyond_rule": 298}
    assert joined["base"] == {"ttir_compared": False}
    assert "ttir_compared" not in joined
    # One left surviving: 3 of 4 caught (killed, killed, crashed), one equivalent out.
    partial = mutation_join.join(base, [_report("a" * 64, _mutant(2, "equivalent"))], [])
    assert partial["score"] == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("rerun", "message"),
    [
        (_report("b" * 64, _mutant(1, "killed")), "rerun 1 is of kernel bbbbbbbbbbbb"),
        (_report("a" * 64, _mutant(9, "killed")), "rerun 1: m009 is not in the base"),
        (_report("a" * 64, {**_mutant(1, "killed"), "line": 7}), "rerun 1: m001 names another"),
    ],
)
def test_a_rerun_of_another_kernel_or_site_is_refused(rerun, message) -> None:
    with pytest.raises(ValueError, match=message):
        mutation_join.join(_report("a" * 64, _mutant(1, "survived")), [rerun], [])


def test_the_command_writes_the_pair_and_refuses_a_bad_file(tmp_path, capsys) -> None:
    base, rerun = tmp_path / "base.json", tmp_path / "rerun.json"
    base.write_text(json.dumps(_report("a" * 64, _mutant(1, "survived"))))
    rerun.write_text(json.dumps(_report("a" * 64, _mutant(1, "killed"))))
    assert mutation_join.main([str(base), str(rerun), "--out", str(tmp_path / "out")]) == 0
    data = json.loads((tmp_path / "out" / "mutation.json").read_text())
    assert data["killed"] == 1
    assert (tmp_path / "out" / "mutation.csv").read_text().splitlines()[1].startswith("m001,")
    rerun.write_text("{")
    assert mutation_join.main([str(base), str(rerun), "--out", str(tmp_path / "bad")]) == 2
    assert "error:" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
