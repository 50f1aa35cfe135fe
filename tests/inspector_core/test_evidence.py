"""Provenance without a window: a newer run supersedes the kernel output an older one left,
every caption names the run and its time, and a check's receipt reaches History at once."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from inspector.check import pipeline
from inspector.check.results import StoresOutOfBounds
from inspector.model import evidence, record
from inspector.model.analysis import analyse
from inspector.model.state import InspectionState
from oracle import fixtures


def _kernel_run(problem, mutant):
    return SimpleNamespace(
        problem=problem,
        mutant=mutant,
        y=np.zeros((problem.rows, problem.width)),
        row_max_abs=np.zeros(problem.rows),
        row_max_rel=np.zeros(problem.rows),
        stores=StoresOutOfBounds(output=(70, 71)),
        mode="interpreter",
        device="cpu",
        inferred=None,
        rstd=None,
        row_error_bound=None,
    )


@pytest.fixture
def checked():
    """A state holding a problem, its analysis and a model-only check (passing)."""
    problem = fixtures.get("padded_row_stride").build()
    state = InspectionState()
    state.set_problem(problem)
    state.set_analysis(analyse(problem, None))
    result = pipeline.run_check(problem, pipeline.CheckConfig(run_kernel=False))
    return state, problem, result


def test_a_check_supersedes_an_earlier_run_kernel(checked) -> None:
    state, problem, result = checked
    assert state.set_kernel_run(_kernel_run(problem, "unmasked_store"))
    assert "Run kernel mutant unmasked_store" in evidence.views_caption(state)
    assert state.kernel_output().stores.output == (70, 71)
    assert state.set_check_result(result)
    # The check ran no kernel: no kernel output is left on show, and no stores.
    assert state.kernel_run is None
    assert state.kernel_output() is None
    assert evidence.views_caption(state) == (
        f"showing: input {state.input_id} · faithful lane model · kernel: not run on this input"
    )
    assert evidence.check_caption(state) == (
        f"from input {state.input_id} · {record.MODEL_ONLY} · Run check (model only, "
        f"{result.mode}) at {state.stamps['check_result']}"
    )


def test_switching_the_mutant_drops_a_run_of_another_mutant_only(checked) -> None:
    state, problem, _ = checked
    state.set_mutant("unmasked_store")
    assert state.set_kernel_run(_kernel_run(problem, "unmasked_store"))
    state.set_mutant("unmasked_store")  # unchanged: kept
    assert state.kernel_run is not None
    caption = evidence.kernel_caption(state)
    assert caption == (
        f"kernel: Run kernel mutant unmasked_store, interpreter ({state.stamps['kernel_run']})"
    )
    state.set_mutant("missing_weight")
    assert state.kernel_run is None
    assert evidence.kernel_caption(state) == "kernel: not run on this input"


def test_a_failed_check_is_a_counterexample_in_history_when_it_ends(checked) -> None:
    state, _, result = checked
    texts = evidence.receipt_texts(result)
    assert texts is not None
    assert texts[0].startswith("{")
    assert texts[1].startswith("index,width,block,")
    failed = dataclasses.replace(
        result, failures=("kernel output: 3 of 210 outside tolerance",), receipt_texts=texts
    )
    assert evidence.record_check_receipts(state, failed)
    history = state.session.receipt_history
    assert [r.kind for r in history] == ["counterexample"]
    assert history[0].reason == (
        "check failed: 1 failure(s); first: kernel output: 3 of 210 outside tolerance"
    )
    assert history[0].json_text == texts[0]
    assert state.recorded_check is failed
    # A passing check after it is the first pass; a second pass adds nothing.
    passed = dataclasses.replace(result, receipt_texts=texts)
    assert evidence.record_check_receipts(state, passed)
    assert evidence.record_check_receipts(state, passed)
    assert [r.kind for r in state.session.receipt_history] == ["counterexample", "first_pass"]


def test_a_check_without_receipt_texts_records_nothing(checked) -> None:
    state, _, result = checked
    assert not evidence.record_check_receipts(state, result)
    assert state.session is None


def test_history_keeps_a_receipt_on_its_own_up_to_its_value_bound(
    checked, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, problem, result = checked
    values = problem.rows * problem.width
    monkeypatch.setattr(evidence, "MAX_KEPT_RECEIPT_VALUES", values)
    assert evidence.receipt_texts(result) is not None  # at the bound: kept
    monkeypatch.setattr(evidence, "MAX_KEPT_RECEIPT_VALUES", values - 1)
    assert evidence.receipt_texts(result) is None  # one value past it: Export receipts keeps it
    assert "Export receipts" in evidence.NOT_KEPT
    assert str(1 << 18) in evidence.NOT_KEPT
