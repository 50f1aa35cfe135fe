"""A fixture's name means its data.

Receipts and sessions name fixtures, and two receipts are compared fixture by fixture
(``inspector.records.diff``), so a fixture whose rows, weights, eps, dtype or stride change under
the same name would make an old receipt and a new one disagree about what was proven. The
catalogue beside this file records, per fixture, its category, check, the field a rejection must
name, its description, and the sha256 of what it builds (the validated problem's x and weight
as float64 bytes, with rows, width, stride, dtype and eps) or, for a malformed fixture, of its raw
inputs. Changing a fixture is allowed, but only on purpose: rename it, or rewrite the catalogue
(``python tests/oracle/test_fixture_catalogue.py``) and say why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

if __name__ == "__main__":  # run as a script from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from oracle import fixtures
from oracle.limits import ValidationError

CATALOGUE = Path(__file__).with_name("fixture_catalogue.json")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def entry(fixture: fixtures.Fixture) -> dict:
    """What the catalogue records of one fixture."""
    record = {
        "category": fixture.category,
        "check": fixture.check,
        "reject_field": fixture.reject_field,
        "description": fixture.description,
    }
    inputs = fixture.inputs()
    if fixture.check == "rejection":
        raw = repr(sorted((k, repr(v)) for k, v in inputs.items()))
        return {**record, "inputs_sha256": _sha(raw.encode())}
    problem = fixture.build()
    return {
        **record,
        "rows": problem.rows,
        "width": problem.width,
        "row_stride": problem.row_stride,
        "dtype": problem.dtype,
        "eps": float(problem.eps).hex(),
        "x_sha256": _sha(np.ascontiguousarray(problem.x, dtype=np.float64).tobytes()),
        "weight_sha256": _sha(np.ascontiguousarray(problem.weight, dtype=np.float64).tobytes()),
    }


def catalogue() -> dict[str, dict]:
    return {fixture.name: entry(fixture) for fixture in fixtures.FIXTURES}


RECORDED = json.loads(CATALOGUE.read_text()) if CATALOGUE.is_file() else {}


def test_the_catalogue_names_exactly_the_fixtures() -> None:
    assert sorted(RECORDED) == sorted(f.name for f in fixtures.FIXTURES)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_each_fixture_builds_what_its_name_recorded(name: str) -> None:
    built = entry(fixtures.get(name))
    changed = {
        k: (RECORDED[name].get(k), v) for k, v in built.items() if RECORDED[name].get(k) != v
    }
    assert not changed, f"fixture {name} changed under the same name: {changed}"


@pytest.mark.parametrize("name", sorted(n for n, e in RECORDED.items() if e["reject_field"]))
def test_each_malformed_fixture_is_refused_naming_its_field(name: str) -> None:
    fixture = fixtures.get(name)
    with pytest.raises(ValidationError) as refused:
        fixture.build()
    assert refused.value.field == RECORDED[name]["reject_field"]


if __name__ == "__main__":
    CATALOGUE.write_text(json.dumps(catalogue(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(fixtures.FIXTURES)} fixtures to {CATALOGUE}")
