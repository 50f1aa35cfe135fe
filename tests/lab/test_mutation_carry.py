"""lab.mutation_carry: an earlier report's outcomes move onto the edited source by site key; the
sites the edit added are listed to run, and a report that is not of the sites it claims is
refused."""

from __future__ import annotations

import pytest

from lab import mutation_carry


def _report(keys: list[tuple]) -> dict:
    mutants = [
        {"id": f"m{i + 1:03d}", "function": k[1], "line": 1, "operator": k[2], "before": k[3],
         "after": k[4], "outcome": "killed" if i % 2 else "survived", "killed_by": ["x"],
         "detail": f"site {i}"}
        for i, k in enumerate(keys)
    ]  # fmt: skip
    return {"kernel": {"path": "k", "function": "f", "sha256": "old"}, "mutants": mutants}


def test_outcomes_follow_their_site_and_the_new_sites_are_listed() -> None:
    now = [key for key, _ in mutation_carry.sites_of()]
    dropped = {3, len(now) - 1}  # sites the "old" source did not have
    old_keys = [k for i, k in enumerate(now) if i not in dropped]
    old = _report(old_keys)
    result = mutation_carry.carry(old, old_keys, "new")
    report = result["report"]
    assert result["new"] == sorted(dropped)
    assert [m["id"] for m in report["mutants"]] == [f"m{i + 1:03d}" for i in range(len(now))]
    for index in dropped:
        assert report["mutants"][index]["outcome"] == "not run"
    by_detail = {m["detail"]: m for m in report["mutants"] if m["outcome"] != "not run"}
    assert len(by_detail) == len(old_keys)
    for position, key in enumerate(old_keys):
        moved = by_detail[f"site {position}"]
        assert (moved["function"], moved["operator"], moved["before"], moved["after"]) == key[1:5]
        assert moved["carried"] == "old"
    assert report["kernel"]["sha256"] == "new"
    assert report["carried_from"] == [
        {"sha256": "old", "sites": len(old_keys), "carried": len(old_keys), "new": 2, "changed": 0}
    ]
    # carried again: each mutant still names the kernel it ran on
    again = mutation_carry.carry(report, now, "newer")["report"]
    assert {m.get("carried") for m in again["mutants"]} == {"old", "new"}
    assert [s["sha256"] for s in again["carried_from"]] == ["old", "new"]


def test_recorded_refusals_are_restated_as_stillborn() -> None:
    now = [key for key, _ in mutation_carry.sites_of()][:4]
    report = _report(now)
    report["mutants"][1]["detail"] = (
        "implementation raised UserKernelFailed: user kernel error: "
        "triton.runtime.errors.InterpreterError: ValueError('arange must fit in int32')"
    )
    report["mutants"][3]["detail"] = "output vs scalar reference: FAIL"
    for key in ("equivalent", "crashed", "timeout"):
        report[key] = 0
    assert mutation_carry.restate_stillborn(report) == ["m002"]
    assert report["mutants"][1]["outcome"] == "stillborn"
    assert report["mutants"][3]["outcome"] == "killed"
    assert (report["killed"], report["stillborn"], report["survived"]) == (1, 1, 2)
    assert report["score"] == 1 / 3


def test_a_report_that_is_not_of_the_sites_it_claims_is_refused() -> None:
    now = [key for key, _ in mutation_carry.sites_of()]
    old = _report(now)
    old["mutants"][5]["before"] = "something else"
    with pytest.raises(ValueError, match="m006 is not the site"):
        mutation_carry.carry(old, now, "new")
    with pytest.raises(ValueError, match="mutants in the report"):
        mutation_carry.carry(_report(now[:-1]), now, "new")


def test_a_key_that_now_names_another_line_runs_again() -> None:
    """An edit that adds an equal change earlier in a function (a branch on ``BLOCK2 > 0`` before
    ``tl.arange(0, BLOCK)``) shifts every later occurrence of "constant 0 -> 1" onto the key of
    the one before it: the old outcome is of another statement, so the site runs again."""
    now = mutation_carry.texts_of()
    keys = list(now)
    old = _report(keys)
    shifted = keys[7]
    old_texts = {**now, shifted: now[shifted] + "  # another statement"}
    result = mutation_carry.carry(old, keys, "new", old_texts=old_texts)
    assert result["new"] == [7]
    assert result["report"]["mutants"][7]["outcome"] == "not run"
    assert result["report"]["carried_from"][-1]["changed"] == 1
    same = mutation_carry.carry(old, keys, "new", old_texts=now)
    assert same["new"] == []
    assert same["report"]["carried_from"][-1]["changed"] == 0


def test_the_split_rows_edit_shifted_keys_of_the_tile_kernel() -> None:
    """The real case: at 78e6d5e the tile kernel gained ``elif BLOCK2 > 0:`` above its
    ``tl.arange(0, BLOCK)``; six keys of "constant 0 -> +-1" then name other lines."""
    import subprocess

    have = subprocess.run(["git", "cat-file", "-e", "78e6d5e^"], cwd=mutation_carry.ROOT,
                          capture_output=True, check=False)  # fmt: skip
    if have.returncode != 0:
        pytest.skip("a shallow clone without the split rows' parent commit")
    old = mutation_carry.texts_of(mutation_carry._at("78e6d5e^"))
    new = mutation_carry.texts_of(mutation_carry._at("78e6d5e"))
    moved = sorted(k[2:] for k in new if k in old and old[k] != new[k])
    assert moved == sorted(
        (op, "0", after, n)
        for n in (1, 2, 3)
        for op, after in (("constant 0 -> -1", "-1"), ("constant 0 -> 1", "1"))
    )
