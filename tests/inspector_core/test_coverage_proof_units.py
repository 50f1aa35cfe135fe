"""Parts of the coverage proof's record (inspector.coverage.proof) held exactly: a proof's JSON
keeps its time to the millisecond and each fixture's detail to its first 300 characters (the
record's bounds assume it), whatever the detail's length."""

from __future__ import annotations

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
