"""The coverage map's proof (inspector.coverage.proof): every configuration the layout rule can
reach is proven here by the fixture matrix's checks (the interpreter on a CPU, compiled on a
GPU), the committed records are of this code and cover the map, a configuration no record
proves fails the check, and the proof kills each named kernel mutant somewhere on the map."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

import kernels
from inspector.check import stages
from inspector.coverage import proof as cp
from inspector.records.receipts.verify import _coverage_checks
from kernels.instruments import coverage

# The whole coverage walk: on the worker that makes it once (tests/conftest.py).
pytestmark = pytest.mark.xdist_group("coverage_walk")


#: The map is proven in this many interleaved parts, so no one test runs past a minute on a
#: 2-core machine, busy or quiet (the whole proof is about 160 s of interpreter launches on a
#: quiet one: four parts took 34-46 s each there, and one 66 s beside other work).
PROOF_PARTS = 8


@pytest.mark.parametrize("part", range(PROOF_PARTS))
def test_every_reachable_configuration_is_proven_here(coverage_map, part: int) -> None:
    # The CI gate: a rule that can reach a configuration the fixture checks cannot prove on
    # this machine's kernel fails here, whatever the committed records say. The parts are
    # every PROOF_PARTS-th configuration from ``part``: together, the whole map.
    mine = dict(list(coverage_map.items())[part::PROOF_PARTS])
    assert mine
    failed = []
    for _, _, proof in cp.prove_all(mine):
        assert len(proof.outcomes) == 7
        if not proof.passed:
            failed.append((proof.configuration.label, [o.detail for o in proof.outcomes]))
    assert not failed


@pytest.mark.parametrize("name", ["cpu", "gpu"])
def test_the_committed_record_is_of_this_kernel_and_proves_the_whole_map(coverage_map, name):
    # Of this kernel in its mode, complete, nothing failed, and every configuration the rule
    # reaches proven (a GPU record walked under an earlier rule still counts, configuration by
    # configuration); the CPU record is of this very rule, since the receipt reads the map from
    # it.
    data, source = cp.committed(name, cp.identity())
    assert data is not None, source
    assert data["complete"]
    assert not data["failed"]
    assert data["mode"] == ("interpreter" if name == "cpu" else "compiled")
    assert set(coverage_map) <= cp.proven_set(data)
    if name == "cpu":
        assert data["rule_sha256"] == cp.identity()["rule_sha256"]
        assert {c for c, _ in cp._entries(data)} == set(coverage_map)


def test_the_receipt_section_reads_the_map_from_the_records(coverage_map) -> None:
    section = stages.coverage_stage()
    assert "error" not in section
    assert [c["label"] for c in section["configurations"]] == [c.label for c in coverage_map]
    assert section["proven_cpu"] == section["proven_gpu"] == len(coverage_map)
    assert section["unproven"] == []
    assert stages.coverage_failures(section) == []
    assert _coverage_checks({"coverage": section})[0].ok
    assert "every one proven" in stages.coverage_line(section)


def _records(tmp_path: Path, monkeypatch, cpu: dict | None, gpu: dict | None) -> None:
    files = {"cpu": tmp_path / "cpu.json", "gpu": tmp_path / "h200.json"}
    for name, data in (("cpu", cpu), ("gpu", gpu)):
        if data is not None:
            files[name].write_text(json.dumps(data))
    monkeypatch.setattr(cp, "RECORD_FILES", files)


def _record(coverage_map, drop: int | None = None, mode: str = "interpreter") -> dict:
    ident = cp.identity()
    entries = [
        {"configuration": c.to_json(), "label": c.label, "passed": True} for c in coverage_map
    ]
    if drop is not None:
        del entries[drop]
    return {"kind": cp.RECORD_KIND, "version": cp.RECORD_VERSION, **ident, "mode": mode,
            "device": "test", "complete": drop is None, "proofs": entries}  # fmt: skip


def test_a_configuration_no_record_proves_fails_the_check(coverage_map, tmp_path, monkeypatch):
    missing = list(coverage_map)[7]
    _records(tmp_path, monkeypatch, _record(coverage_map, drop=7), None)
    section = stages.coverage_stage()
    assert section["unproven"] == [missing.label]
    assert section["proven_gpu"] == 0
    assert "no record at" in section["sources"]["gpu"]
    (failure,) = stages.coverage_failures(section)
    assert (
        f"1 reachable launch configuration(s) no record of this kernel proves ({missing.label})"
        in failure
    )
    assert "1 NOT proven" in stages.coverage_line(section)
    assert _coverage_checks({"coverage": section})[0].ok


def test_a_record_walked_under_another_rule_proves_its_configurations(
    coverage_map, tmp_path, monkeypatch
):
    # Same kernel and mode, another rule: its proofs count configuration by configuration (a
    # configuration it lacks stays unproven), the source says which rule walked it, and the map
    # is this rule's own walk, not the record's list.
    earlier = {**_record(coverage_map, drop=3, mode="compiled"), "rule_sha256": "1" * 64}
    earlier["complete"] = True  # complete for its own rule, which never reached that one
    cpu_earlier = {**_record(coverage_map), "rule_sha256": "2" * 64}
    del cpu_earlier["proofs"][0]
    _records(tmp_path, monkeypatch, cpu_earlier, earlier)
    section = stages.coverage_stage()
    assert [c["label"] for c in section["configurations"]] == [c.label for c in coverage_map]
    assert section["proven_gpu"] == len(coverage_map) - 1
    assert section["proven_cpu"] == len(coverage_map) - 1
    assert "walked under another layout rule, 111111111111" in section["sources"]["gpu"]
    assert "walked under another layout rule, 222222222222" in section["sources"]["cpu"]
    assert section["unproven"] == []  # each of the two is proven by the other record
    by_label = {c["label"]: c for c in section["configurations"]}
    first, fourth = (by_label[list(coverage_map)[i].label] for i in (0, 3))
    assert (first["proven_cpu"], first["proven_gpu"]) == (False, True)
    assert (fourth["proven_cpu"], fourth["proven_gpu"]) == (True, False)


def test_a_record_of_another_kernel_or_mode_proves_nothing(coverage_map, tmp_path, monkeypatch):
    other = {**_record(coverage_map), "kernel_sha256": "0" * 64}
    _records(tmp_path, monkeypatch, other, _record(coverage_map))  # the gpu one interpreted
    section = stages.coverage_stage()
    assert len(section["unproven"]) == len(coverage_map)
    assert "of another kernel (000000000000)" in section["sources"]["cpu"]
    assert "was made interpreter, not compiled" in section["sources"]["gpu"]


def test_verify_refuses_a_coverage_section_whose_counts_are_not_its_entries() -> None:
    section = {
        "configurations": [
            {"label": "a", "proven_cpu": True, "proven_gpu": False},
            {"label": "b", "proven_cpu": False, "proven_gpu": False},
        ],
        "proven_cpu": 1, "proven_gpu": 0, "unproven": ["b"],
    }  # fmt: skip
    assert _coverage_checks({"coverage": section})[0].ok
    for change in ({"proven_cpu": 2}, {"unproven": []}, {"proven_gpu": 1}):
        assert not _coverage_checks({"coverage": {**section, **change}})[0].ok, change
    doubled = copy.deepcopy(section)
    doubled["configurations"][1]["label"] = "a"
    assert not _coverage_checks({"coverage": doubled})[0].ok


@pytest.mark.slow(reason="eps_outside_root is caught only far into the map: 67 s here")
@pytest.mark.timeout(600)
@pytest.mark.parametrize("mutant", kernels.KERNEL_MUTANTS)
def test_the_proof_kills_each_named_kernel_mutant_on_the_map(coverage_map, mutant) -> None:
    # The configurations in the map's order (cheapest witnesses of each kind early): the first
    # proof the mutant fails names where it is caught.
    for configuration, witness in coverage_map.items():
        proof = cp.prove(configuration, witness, mutant=mutant)
        if not proof.passed:
            killed = [o.fixture for o in proof.outcomes if not o.passed]
            assert killed, configuration.label
            return
    pytest.fail(f"{mutant} passed the proof of every configuration")


def test_a_launch_outside_the_configuration_under_proof_fails_it(coverage_map) -> None:
    configuration, witness = next((c, w) for c, w in coverage_map.items() if c.vec == 8)
    moved = dataclasses.replace(witness, y_stride=witness.y_stride + 1)  # VEC 8 -> 1
    proof = cp.prove(configuration, moved)
    assert not proof.passed
    assert all("WrongConfiguration" in o.detail and "vec1" in o.detail for o in proof.outcomes)


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_read_record_refuses_what_is_not_a_record(coverage_map, tmp_path, monkeypatch) -> None:
    good = _record(coverage_map)
    assert cp.read_record(_write(tmp_path / "good.json", good))["complete"] is True
    cases = [
        ({**good, "kind": "other"}, "kind must be"),
        ({**good, "version": 2}, "version must be 1"),
        ({**good, "complete": "yes"}, "complete must be a bool"),
        ({**good, "proofs": {}}, "proofs must be a list"),
        ({**good, "proofs": [{"passed": 1}]}, r"proofs\[0\].passed must be a bool"),
        ({**good, "proofs": [{"passed": True, "configuration": {"dtype": 1}}]},
         r"proofs\[0\].configuration: fields must be exactly"),
        ({k: v for k, v in good.items() if k != "rule_sha256"}, "rule_sha256 must be a string"),
    ]  # fmt: skip
    for data, message in cases:
        with pytest.raises(ValueError, match=message):
            cp.read_record(_write(tmp_path / "bad.json", data))
    (tmp_path / "text.json").write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        cp.read_record(tmp_path / "text.json")
    with pytest.raises(ValueError, match="not a regular file"):
        cp.read_record(tmp_path)


def test_read_record_at_its_size_bound_and_one_byte_past(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(cp, "MAX_RECORD_BYTES", 64)
    path = tmp_path / "r.json"
    path.write_text(" " * 62 + "{}")  # 64 bytes: read (and refused for its content)
    with pytest.raises(ValueError, match="kind must be"):
        cp.read_record(path)
    path.write_text(" " * 63 + "{}")
    with pytest.raises(ValueError, match="65 bytes, over 64"):
        cp.read_record(path)


def test_the_coverage_command_proves_a_slice_and_writes_its_record(tmp_path) -> None:
    from inspector.cli.coverage_command import run_coverage_command

    out = tmp_path / "slice.json"
    assert run_coverage_command(["--match", "float32/tile/multi/vec4", "--out", str(out)]) == 0
    data = cp.read_record(out)
    assert data["complete"] is False
    assert data["proofs"]
    assert not data["failed"]
    assert all("float32/tile/multi/vec4" in e["label"] for e in data["proofs"])
    with pytest.raises(ValueError, match="no configuration's label contains it"):
        run_coverage_command(["--match", "no-such-layout"])
    with pytest.raises(ValueError, match="is a folder"):
        run_coverage_command(["--out", str(tmp_path)])


def test_witness_json_carries_its_launch_config(coverage_map) -> None:
    witness = next(iter(coverage_map.values()))
    data = witness.to_json()
    assert data["config"]["block"] == witness.config.block
    assert set(data) == {"rows", "width", "x_stride", "y_stride", "dtype", "config"}
    first = next(iter(coverage_map))
    assert coverage.Configuration.from_json(first.to_json()) == first
