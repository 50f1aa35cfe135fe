"""A session's kill table credits the kills the oracle's kill matrix credits, and no other.

The table keeps plain arrays (what the file stores and the window draws): a fixture the faithful
run failed, and a mutant run that was not judged or was out of the declared domain, kill nothing
there either.
"""

from __future__ import annotations

from inspector.records.sessions.data import KillTable
from oracle import fixtures
from oracle.matrix import NotJudged, OutOfDomain, RunOutput, kill_matrix, model_implementation

FAILS, GOOD, OTHER = "hand_checkable", "asymmetric_weights", "multiple_rows"
MUTANTS = ("fails_everywhere", "fails_where_the_baseline_fails", "no_verdict_where_it_passes")


def _implementation(problem, poison, mutant):
    right = model_implementation(problem, poison, None)
    name = problem.name
    if mutant is None:
        return RunOutput(y=right.y * 1.01) if name == FAILS else right
    if mutant == "no_verdict_where_it_passes":
        if name == GOOD:
            raise NotJudged("not judged here")
        if name == OTHER:
            raise OutOfDomain("outside the domain")
        return right
    failing = {FAILS, GOOD, OTHER} if mutant == "fails_everywhere" else {FAILS}
    return RunOutput(y=right.y * 2.0) if name in failing else right


def test_the_table_kills_as_the_matrix_does() -> None:
    chosen = [fixtures.get(name) for name in (FAILS, GOOD, OTHER, "width_mismatch")]
    matrix = kill_matrix(_implementation, MUTANTS, chosen)
    table = KillTable.from_kill_matrix(matrix)
    assert matrix.killed_by("fails_everywhere") == (GOOD, OTHER)
    assert matrix.survivors == MUTANTS[1:]
    for mutant in MUTANTS:
        assert table.killed_by(mutant) == matrix.killed_by(mutant), mutant
    assert table.survivors == matrix.survivors
    assert not table.baseline_passed[0]
    # A run without a verdict is not a detection, whatever the baseline did there.
    assert not table.detected[MUTANTS.index("no_verdict_where_it_passes")].any()
