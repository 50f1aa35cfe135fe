"""Parts of the coverage proof (inspector.coverage.proof) held exactly: a proof's JSON keeps its
time to the millisecond and each fixture's detail to its first 300 characters (the record's
bounds assume it), a record its time to a tenth; every store past a buffer counts, a record that
grows while read is refused, another rule's record is named by its sha256, and the map's grid
has a row per layout and a cell per dtype."""

from __future__ import annotations

import dataclasses
import json
import os
import time
import types
from pathlib import Path

import numpy as np
import pytest

from inspector.coverage import proof as cp
from kernels.instruments import coverage
from oracle.matrix import FixtureOutcome


def _proof(detail: str, seconds: float, passed: bool = True) -> cp.ConfigurationProof:
    configuration, witness = next(iter(coverage.reachable(widths=[70], dtypes=["float32"]).items()))
    outcome = FixtureOutcome(
        "width_70", "shape", "pass", "pass" if passed else "fail", passed, detail
    )
    return cp.ConfigurationProof(configuration, witness, 3, (outcome,), seconds)


@pytest.mark.parametrize(
    ("seconds", "kept"), [(1.23456, 1.235), (0.0004, 0.0), (2.0004, 2.0), (12.3449, 12.345)]
)
def test_a_proofs_time_is_kept_to_the_millisecond(seconds: float, kept: float) -> None:
    assert _proof("ok", seconds).to_json()["seconds"] == kept


@pytest.mark.parametrize("length", [0, 1, 299, 300, 301, 1000])
def test_a_fixtures_detail_is_kept_to_its_first_300_characters(length: int) -> None:
    detail = "".join(chr(ord("a") + i % 26) for i in range(length))
    fixtures = _proof(detail, 1.0).to_json()["fixtures"]
    assert fixtures == [{"name": "width_70", "passed": True, "detail": detail[: min(length, 300)]}]
    assert len(fixtures[0]["detail"]) == min(length, 300)


@pytest.mark.parametrize("width", [1, 2, 3, 70, 1027])
def test_the_proofs_weight_hides_no_dropped_or_misplaced_weight(width: int) -> None:
    """No weight of 0 (it would hide its lanes) or 1 (a dropped weight looks right), a negative
    one, and three distinct values in turn, so a weight read at the wrong lane changes y."""
    weight = cp._weight(width)
    assert weight.shape == (width,)
    assert not np.any(weight == 0.0)
    assert not np.any(weight == 1.0)
    if width >= 3:
        assert (weight < 0).any()
        assert len(set(weight[:3].tolist())) == 3
        assert np.array_equal(weight[3:], weight[:-3])


def _small_configuration():
    return next(iter(coverage.reachable(widths=[70], dtypes=["float32"]).items()))


def test_an_rstd_store_out_of_bounds_counts_with_the_outputs_own(monkeypatch) -> None:
    # The proof's run hands the matrix every store past a buffer: y's and the rstd output's.
    from kernels.instruments import guarded_reads
    from oracle import spec

    configuration, witness = _small_configuration()
    result = types.SimpleNamespace(
        configuration=configuration, oob_writes=(object(),) * 3, rstd_oob_writes=2,
        y=np.zeros((2, 70)), rstd=np.zeros(2),
    )  # fmt: skip
    monkeypatch.setattr(cp, "run_kernel_on", lambda *args, **kwargs: result)
    monkeypatch.setattr(guarded_reads, "checked_reads", lambda run: (0, ""))
    problem = spec.make_problem(
        x=np.ones((2, 70)), weight=np.ones(70), eps=1e-6, dtype="float32", row_stride=70
    )
    out = cp.implementation(configuration, witness, "cpu")(problem, 0.0, None)
    assert out.oob_writes == 5


def test_a_proofs_seconds_is_the_time_it_took() -> None:
    configuration, witness = _small_configuration()
    start = time.perf_counter()
    proof = cp.prove(configuration, witness)
    took = time.perf_counter() - start
    assert proof.passed
    assert 0.0 < proof.seconds <= took


@pytest.mark.parametrize(("seconds", "kept"), [(12.34, 12.3), (12.36, 12.4), (0.04, 0.0)])
def test_a_records_time_is_kept_to_a_tenth_of_a_second(seconds: float, kept: float) -> None:
    assert cp.record([], "cpu", seconds)["seconds"] == kept


def _bare_record() -> dict:
    return {"kind": cp.RECORD_KIND, "version": cp.RECORD_VERSION, **cp.identity(),
            "device": "test", "complete": False, "proofs": []}  # fmt: skip


def test_a_record_that_grows_past_its_bound_after_the_size_check_is_refused(
    tmp_path: Path, monkeypatch
) -> None:
    # The size checked, then the file read: the read takes one byte past the bound, so a file
    # that grew in between is refused whole instead of read cut at the bound.
    text = json.dumps(_bare_record())
    path = tmp_path / "r.json"
    path.write_text(text + " " * 10 + "x")
    monkeypatch.setattr(cp, "MAX_RECORD_BYTES", len(text) + 10)
    monkeypatch.setattr(
        cp, "RECORD_BOUNDS", dataclasses.replace(cp.RECORD_BOUNDS, size=len(text) + 10)
    )
    real_stat = Path.stat

    def stat_before_it_grew(self, *args, **kwargs):
        found = real_stat(self, *args, **kwargs)
        if self == path:
            fields = list(found)
            fields[6] = len(text)  # st_size
            return os.stat_result(fields)
        return found

    monkeypatch.setattr(Path, "stat", stat_before_it_grew)
    with pytest.raises(ValueError, match="not JSON"):
        cp.read_record(path)
    path.write_text(text + " " * 10)  # at the bound: read whole
    assert cp.read_record(path)["proofs"] == []


def test_a_record_of_another_rule_names_that_rules_sha256_to_12_digits(
    tmp_path: Path, monkeypatch
) -> None:
    other = {**_bare_record(), "mode": "interpreter", "rule_sha256": "0123456789abcdef" * 4}
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(other))
    monkeypatch.setattr(cp, "RECORD_FILES", {"cpu": path, "gpu": tmp_path / "none.json"})
    data, source = cp.committed("cpu", cp.identity())
    assert data is not None
    assert source.endswith("(walked under another layout rule, 0123456789ab)")


def test_the_grid_rows_are_the_layouts_past_the_dtype_and_the_cells_each_records_proof() -> None:
    def entry(label: str, cpu: bool, gpu: bool) -> dict:
        return {"label": label, "dtype": label.split("/")[0], "proven_cpu": cpu, "proven_gpu": gpu}

    section = {
        "configurations": [
            entry("float32/tile/rows1/vec4/w_early", True, False),
            entry("bfloat16/tile/rows1/vec4/w_early", True, True),
            entry("float32/loop/rows1/vec1/stream", False, False),
            entry("float16/tile/multi/vec8/peel/split", False, True),
        ]
    }
    layouts, cells = cp.grid(section)
    assert layouts == [
        "loop/rows1/vec1/stream",
        "tile/multi/vec8/peel/split",
        "tile/rows1/vec4/w_early",
    ]
    assert cells == {
        ("tile/rows1/vec4/w_early", "float32"): "cpu",
        ("tile/rows1/vec4/w_early", "bfloat16"): "cpu+gpu",
        ("loop/rows1/vec1/stream", "float32"): "unproven",
        ("tile/multi/vec8/peel/split", "float16"): "gpu",
    }
