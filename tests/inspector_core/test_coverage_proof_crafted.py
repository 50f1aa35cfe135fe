"""The coverage proof (inspector.coverage.proof) against runs and records crafted to fail each
of its checks: a kernel rstd that is not the rows' rrms (or never asked for, or stored past its
buffer), a record's failed configurations (never proven, whatever else the record says), and a
launch whose split body's second tile differs from the configuration under proof.

Each uses a walk of one or two widths (not the whole map) and a few interpreter launches.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from inspector.check import stages
from inspector.coverage import proof as cp
from kernels.instruments import coverage
from kernels.layout import block_for
from oracle.matrix import FixtureOutcome


@pytest.fixture(scope="module")
def small_map() -> dict:
    """Configurations of three widths: float32 rows of 70 (one-row and multi-row tiles) and
    9000 (column loops), bfloat16 rows of 1027 (a peeled tile whose body splits: 1024 + 16
    lanes)."""
    found = coverage.reachable(widths=[70, 9000], dtypes=["float32"])
    found.update(coverage.reachable(widths=[1027], dtypes=["bfloat16"]))
    return found


def _first(found: dict, **fields):
    return next(
        (c, w)
        for c, w in found.items()
        if all(getattr(c, name) == value for name, value in fields.items())
    )


def _failed(proof: cp.ConfigurationProof) -> dict[str, str]:
    return {o.fixture: o.detail for o in proof.outcomes if not o.passed}


def _patch_runs(monkeypatch, change) -> None:
    """Every run of the proof goes through the real kernel, then ``change(result, rstd)``."""
    real = cp.run_kernel_on

    def run(problem, **kwargs):
        return change(real(problem, **kwargs), kwargs.get("rstd", False))

    monkeypatch.setattr(cp, "run_kernel_on", run)


def test_the_faithful_kernel_passes_the_configurations_used_here(small_map) -> None:
    configuration, witness = _first(small_map, kernel="tile", multi_row=False)
    assert cp.prove(configuration, witness).passed


@pytest.mark.parametrize("factor", [1 + 1e-4, 1 - 1e-4, 2.0])
def test_a_kernel_rstd_that_is_not_the_rrms_fails_the_proof(small_map, monkeypatch, factor):
    configuration, witness = _first(small_map, kernel="tile", multi_row=False)

    def wrong_rstd(result, rstd):
        if not rstd:
            return result
        changed = np.array(result.rstd)
        changed[-1] *= factor  # the last row only; y untouched
        return dataclasses.replace(result, rstd=changed)

    _patch_runs(monkeypatch, wrong_rstd)
    failed = _failed(cp.prove(configuration, witness))
    assert set(failed) == {cp.RSTD_FIXTURE}, failed
    assert "rstd" in failed[cp.RSTD_FIXTURE]


def test_a_proof_that_never_takes_the_kernels_rstd_fails(small_map, monkeypatch) -> None:
    # A run without the kernel's rstd output (the STORE_RSTD code never launched) has no
    # rrms to compare: the rstd fixture must fail, not pass on nothing.
    configuration, witness = _first(small_map, kernel="loop")
    real = cp.run_kernel_on
    monkeypatch.setattr(cp, "run_kernel_on", lambda problem, **kw: real(problem, **{
        **kw, "rstd": False}))  # fmt: skip
    failed = _failed(cp.prove(configuration, witness))
    assert cp.RSTD_FIXTURE in failed


def test_an_rstd_store_past_its_buffer_fails_the_proof(small_map, monkeypatch) -> None:
    configuration, witness = _first(small_map, kernel="tile", multi_row=True, row_mask=True)

    def stray(result, rstd):
        return dataclasses.replace(result, rstd_oob_writes=1) if rstd else result

    _patch_runs(monkeypatch, stray)
    failed = _failed(cp.prove(configuration, witness))
    assert set(failed) == {cp.RSTD_FIXTURE}, failed


def _outcome(name: str, passed: bool) -> FixtureOutcome:
    actual = "pass" if passed else "fail"
    return FixtureOutcome(name, "positive", "pass", actual, passed, actual)


@pytest.mark.parametrize(
    ("passes", "proven"),
    [([True] * 7, True), ([True] * 6 + [False], False), ([False] + [True] * 6, False),
     ([False] * 7, False), ([], False)],
)  # fmt: skip
def test_a_configuration_is_proven_only_when_every_fixture_passed(small_map, passes, proven):
    configuration, witness = next(iter(small_map.items()))
    outcomes = tuple(_outcome(f"f{i}", p) for i, p in enumerate(passes))
    proof = cp.ConfigurationProof(configuration, witness, 3, outcomes, 0.0)
    assert proof.passed is proven
    data = cp.record([proof], "test", 0.0)
    assert data["proven"] == int(proven)
    assert data["failed"] == ([] if proven else [configuration.label])
    assert data["proofs"][0]["passed"] is proven
    assert cp.proven_set(data) == ({configuration} if proven else set())


def _crafted_record(found: dict, failing: set, complete: bool = True) -> dict:
    """A record of this kernel and rule proving ``found`` but for ``failing``, whose entries
    say ``passed: false`` with a failed fixture, as :func:`cp.record` writes them."""
    proofs = []
    for configuration, witness in found.items():
        bad = configuration in failing
        outcomes = tuple(_outcome(f"f{i}", not (bad and i == 2)) for i in range(7))
        proofs.append(cp.ConfigurationProof(configuration, witness, 3, outcomes, 0.0))
    data = cp.record(proofs, "test", 0.0, complete=complete)
    return {**data, "mode": "interpreter"}


def _install(tmp_path: Path, monkeypatch, cpu: dict) -> None:
    (tmp_path / "cpu.json").write_text(json.dumps(cpu))
    files = {"cpu": tmp_path / "cpu.json", "gpu": tmp_path / "h200.json"}  # no GPU record
    monkeypatch.setattr(cp, "RECORD_FILES", files)


def test_a_records_failed_configurations_are_not_proven(small_map, tmp_path, monkeypatch):
    failing = set(list(small_map)[1::3])
    data = _crafted_record(small_map, failing)
    assert sorted(data["failed"]) == sorted(c.label for c in failing)
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(data))
    read = cp.read_record(path)
    assert cp.proven_set(read) == set(small_map) - failing
    _install(tmp_path, monkeypatch, data)
    section = stages.coverage_stage()
    assert "error" not in section, section
    assert [c["label"] for c in section["configurations"]] == [c.label for c in sorted(small_map)]
    assert section["proven_cpu"] == len(small_map) - len(failing)
    assert sorted(section["unproven"]) == sorted(c.label for c in failing)
    by_label = {c["label"]: c for c in section["configurations"]}
    assert all(not by_label[c.label]["proven_cpu"] for c in failing)
    (failure,) = stages.coverage_failures(section)
    assert f"{len(failing)} reachable launch configuration(s) no record" in failure


@pytest.mark.parametrize(
    "lie", ["passed_true_with_a_failed_fixture", "listed_as_failed", "passed_false_alone"]
)
def test_an_entry_whose_own_evidence_failed_is_not_proven(small_map, tmp_path, lie) -> None:
    # An entry that says passed while a fixture of it failed, or that the record's failed list
    # names: the record contradicts itself, and the configuration is not proven by it. An
    # entry that says it failed is not proven, whatever its fixtures and the list say.
    target = next(iter(small_map))
    data = _crafted_record(small_map, {target})
    entry = data["proofs"][0]
    entry["passed"] = lie != "passed_false_alone"
    if lie != "passed_true_with_a_failed_fixture":
        entry["fixtures"] = [{**f, "passed": True} for f in entry["fixtures"]]
    if lie != "listed_as_failed":
        data["failed"] = []
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(data))
    try:
        read = cp.read_record(path)
    except ValueError as err:
        assert "proofs[0]" in str(err) or "failed" in str(err), err
        return
    assert target not in cp.proven_set(read)


def test_the_split_tile_is_its_own_configuration(small_map) -> None:
    # The split body's second tile is a branch of the kernel (BLOCK2): its key differs from
    # the unsplit tile's of the same width, and the lanes past the row are the two tiles'.
    configuration, witness = _first(small_map, split=True, peel=True)
    assert witness.config.block2 > 0
    assert configuration.peel
    assert configuration.tail
    unsplit = dataclasses.replace(witness.config, block=block_for(witness.width), block2=0)
    _, constexprs = coverage.launch_constexprs(
        unsplit, 3, witness.width, witness.x_stride, witness.y_stride, 2
    )
    other = coverage.configuration_of(witness.dtype, False, constexprs)
    assert other != configuration
    assert (other.split, configuration.split) == (False, True)
    # The key reads the second tile's lanes: a body that covers the row exactly has no tail.
    base = {"BLOCK": 1024, "BLOCK2": 16, "ROWS": 1, "VEC": 1, "W_EARLY": False,
            "STREAM_STORE": True, "EVEN": False, "ROW_MASK": False, "PEEL": 8,
            "ORDERED": False}  # fmt: skip
    assert coverage.configuration_of("bfloat16", False, {**base, "WIDTH": 1039}).tail
    assert not coverage.configuration_of("bfloat16", False, {**base, "WIDTH": 1040}).tail
    assert not coverage.configuration_of(
        "bfloat16", False, {**base, "BLOCK2": 0, "WIDTH": 1024}
    ).split


def test_a_launch_without_the_second_tile_fails_the_split_configurations_proof(small_map):
    configuration, witness = _first(small_map, split=True, peel=True)
    assert cp.prove(configuration, witness).passed
    unsplit = dataclasses.replace(
        witness, config=dataclasses.replace(witness.config, block=2048, block2=0)
    )
    proof = cp.prove(configuration, unsplit)
    assert not proof.passed
    assert all("WrongConfiguration" in o.detail for o in proof.outcomes)


def test_every_kernel_branch_changes_the_configuration_key() -> None:
    # One launch's constexprs, then each branch the kernels compile on flipped alone: the key
    # must change in the field of that branch.
    tile = {
        "BLOCK": 1024, "BLOCK2": 0, "ROWS": 1, "VEC": 1, "W_EARLY": False, "STREAM_STORE": False,
        "EVEN": False, "ROW_MASK": False, "PEEL": 0, "WIDTH": 1000,
    }  # fmt: skip
    flips = {
        "multi_row": {"ROWS": 2}, "vec": {"VEC": 4}, "peel": {"PEEL": 4},
        "split": {"BLOCK": 512, "BLOCK2": 512, "PEEL": 4}, "w_early": {"W_EARLY": True},
        "even": {"EVEN": True}, "row_mask": {"ROW_MASK": True}, "stream": {"STREAM_STORE": True},
        "tail": {"WIDTH": 1024},
    }  # fmt: skip
    base = coverage.configuration_of("float32", False, tile)
    for field, change in flips.items():
        key = coverage.configuration_of("float32", False, {**tile, **change})
        assert getattr(key, field) != getattr(base, field), field
    loop = {"CHUNK": 256, "NUM_CHUNKS": 4, "VEC": 1, "EVEN": False, "STREAM_STORE": True,
            "PEEL": 0, "ORDERED": False, "PARTS": 1, "WIDTH": 1000}  # fmt: skip
    base = coverage.configuration_of("float32", True, loop)
    loop_flips = {
        "vec": {"VEC": 4}, "peel": {"PEEL": 4}, "even": {"EVEN": True},
        "stream": {"STREAM_STORE": False}, "tail": {"WIDTH": 1024}, "parts": {"PARTS": 2},
        "ordered": {"PEEL": 4, "ORDERED": True},
    }  # fmt: skip
    for field, change in loop_flips.items():
        key = coverage.configuration_of("float32", True, {**loop, **change})
        assert getattr(key, field) != getattr(base, field), field
