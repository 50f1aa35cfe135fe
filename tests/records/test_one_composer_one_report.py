"""A session is put together in one place (``Session.compose``) and the check's report says each
piece of evidence once, from where it was said (``check.report.check_command_lines``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from inspector.check.report import check_command_lines, said_of_the_run
from inspector.records.receipts import receipt
from inspector.records.sessions.session import Session
from oracle.mutants import MODEL_MUTANTS


def test_compose_sets_the_toggles_and_carries_the_previous_receipts(model_results) -> None:
    result = model_results["float32"]
    plain = Session.compose(result.problem, result)
    assert not any(plain.model_mutants.values())
    assert plain.kernel_mutants == {}  # a model-only check lists no kernel mutants
    previous = Session.compose(result.problem)
    previous.record_receipts("{}", "csv", passed=False, reason="a counterexample")
    composed = Session.compose(
        result.problem,
        result,
        toggles=("missing_weight", (*MODEL_MUTANTS, "unmasked_store")),
        compile_info={"ttir": "module {}"},
        bench=({"rows": []}, {"a": np.ones(2)}),
        previous=previous,
    )
    assert [n for n, on in composed.model_mutants.items() if on] == ["missing_weight"]
    assert list(composed.kernel_mutants) == [*MODEL_MUTANTS, "unmasked_store"]
    assert composed.kernel_mutants["missing_weight"]
    assert composed.compile_info == {"ttir": "module {}"}
    assert composed.bench_meta == {"rows": []}
    assert [r.reason for r in composed.receipt_history] == ["a counterexample"]
    assert (composed.receipt_json, composed.receipt_csv) == ("{}", "csv")
    # Without a check it is the problem's session, with the same toggles.
    bare = Session.compose(result.problem, toggles=(None, tuple(MODEL_MUTANTS)))
    assert bare.results is None
    assert not any(bare.kernel_mutants.values())


def _count(lines: list[str], prefix: str) -> int:
    return sum(line.startswith(prefix) for line in lines)


def test_each_evidence_section_is_said_once(kernel_result, model_results) -> None:
    for result in (kernel_result, model_results["float16"]):
        lines = check_command_lines(result, receipt.build_receipt(result))
        for prefix in ("batch invariance", "compute-sanitizer", "coverage:", "errors ("):
            assert _count(lines, prefix) == 1, (prefix, lines)
    # A run that said nothing of its evidence leaves every section to the receipt.
    assert said_of_the_run(SimpleNamespace(kernel=None)) == frozenset()
    assert {"invariance", "sanitizer", "coverage"} <= said_of_the_run(kernel_result)
