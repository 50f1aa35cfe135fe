"""A coverage record names the inputs its proofs ran on (inspector.coverage.proof.inputs_sha256):
the committed records hold, configuration by configuration, the digest of the variants the proof
builds now at that witness, so a record made on other fixture data (another seed, scale, eps or
weight) is caught as not this proof's; the digest moves with each thing the kernel is handed,
and a record's digest field is checked when read."""

from __future__ import annotations

import json
import types
from pathlib import Path

import numpy as np
import pytest

from inspector.coverage import proof as cp
from oracle.fixtures import Fixture


def _rebuilt(entry: dict) -> str:
    witness = entry["witness"]
    at = types.SimpleNamespace(
        width=witness["width"], dtype=witness["dtype"], x_stride=witness["x_stride"]
    )
    return cp.inputs_sha256(cp.variants(at, entry["proof_rows"]))


def test_each_configuration_of_the_cpu_record_ran_on_the_inputs_the_proof_builds_now() -> None:
    data = cp.read_record(cp.RECORD_FILES["cpu"])
    stale = [e["label"] for e in data["proofs"] if e.get("inputs_sha256") != _rebuilt(e)]
    assert not stale, f"{len(stale)} of {len(data['proofs'])}: {stale[:5]}"


def test_the_gpu_records_digests_where_it_has_them_are_of_the_proofs_inputs() -> None:
    data = cp.read_record(cp.RECORD_FILES["gpu"])
    named = [e for e in data["proofs"] if e.get("inputs_sha256")]
    stale = [e["label"] for e in named if e["inputs_sha256"] != _rebuilt(e)]
    assert not stale, f"{len(stale)} of {len(named)}: {stale[:5]}"


def _fixture(**change) -> Fixture:
    inputs = {
        "x": np.array([[1.0, -2.0, 3.0], [0.5, 0.25, -4.0]]),
        "weight": np.array([0.5, 1.25, -2.0]),
        "eps": 1e-6,
        "dtype": "float32",
        "row_stride": 3,
    }
    name = change.pop("name", "f")
    inputs.update(change)
    return Fixture(name, "positive", "a hand row", lambda: inputs)


@pytest.mark.parametrize(
    "change",
    [
        {"name": "g"},
        {"x": np.array([[1.0, -2.0, 3.0], [0.5, 0.25, -3.0]])},
        {"weight": np.array([0.5, 1.25, 2.0])},
        {"eps": 2e-6},
        {"dtype": "float16"},
        {"row_stride": 4},
    ],
    ids=["name", "x", "weight", "eps", "dtype", "row_stride"],
)
def test_the_digest_moves_with_each_thing_the_kernel_is_handed(change: dict) -> None:
    assert cp.inputs_sha256([_fixture()]) == cp.inputs_sha256([_fixture()])
    assert cp.inputs_sha256([_fixture(**change)]) != cp.inputs_sha256([_fixture()])


def test_the_digest_is_of_the_fixtures_in_order() -> None:
    a, b = _fixture(name="a"), _fixture(name="b")
    assert cp.inputs_sha256([a, b]) != cp.inputs_sha256([b, a])
    assert cp.inputs_sha256([a]) != cp.inputs_sha256([a, b])


def test_the_digest_is_of_the_validated_values() -> None:
    # 1 + 2**-30 rounds to 1.0 in float32: the kernel is handed the same values.
    x = np.array([[1.0 + 2**-30, -2.0, 3.0], [0.5, 0.25, -4.0]])
    assert cp.inputs_sha256([_fixture(x=x)]) == cp.inputs_sha256([_fixture()])


def test_read_record_checks_a_proofs_inputs_digest(tmp_path: Path) -> None:
    data = cp.read_record(cp.RECORD_FILES["cpu"])
    good = data["proofs"][0]["inputs_sha256"]
    for digest in (good, ""):
        data["proofs"][0]["inputs_sha256"] = digest
        (tmp_path / "r.json").write_text(json.dumps(data))
        assert cp.read_record(tmp_path / "r.json")["proofs"][0]["inputs_sha256"] == digest
    for digest in (good[:63], good + "0", good.upper(), 7, None):
        data["proofs"][0]["inputs_sha256"] = digest
        (tmp_path / "r.json").write_text(json.dumps(data))
        with pytest.raises(ValueError, match=r"proofs\[0\].inputs_sha256 must be 64 hex digits"):
            cp.read_record(tmp_path / "r.json")
