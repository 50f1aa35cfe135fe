"""The shown record without a window: its identity, when it is stale, which receipt is its
proof, the verdict's required and optional evidence, and a saved output's stray stores."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from inspector.check import report
from inspector.model import record
from inspector.model.analysis import analyse
from inspector.model.state import InspectionState
from inspector.records.sessions.session import load_session
from oracle import fixtures

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo_session.h5"


def test_the_input_id_is_the_receipts_input_and_changes_with_any_field() -> None:
    session = load_session(DEMO)
    problem = session.problem()
    parsed = record.parse_receipt(session.receipt_json)
    assert record.receipt_input_id(parsed) == record.input_id(problem)
    other = fixtures.get("zero_row").build()
    assert record.input_id(other) != record.input_id(problem)


def test_a_saved_check_pairs_only_with_its_own_receipt() -> None:
    session = load_session(DEMO)
    parsed = record.parse_receipt(session.receipt_json)
    input_id = record.input_id(session.problem())
    assert record.receipt_pairs(parsed, session.results, input_id)
    assert not record.receipt_pairs(parsed, session.results, "0" * 12)
    failed = SimpleNamespace(**{**vars(session.results), "passed": False})
    assert not record.receipt_pairs(parsed, failed, input_id)
    other = SimpleNamespace(**{**vars(session.results), "kernel_note": "user kernel /k.py:f"})
    assert not record.receipt_pairs(parsed, other, input_id)


def test_a_user_kernels_note_names_its_file_and_function() -> None:
    source = record.note_source("user kernel /tmp/a/k.py:rms (sha256 0123456789ab...), interp")
    assert source == {"kind": "user", "path": "/tmp/a/k.py", "function": "rms"}
    assert record.kernel_words(source) == "k.py:rms"
    assert record.note_source("Triton kernel, interpreter mode") == {"kind": "bundled"}
    assert record.kernel_words(None) == record.MODEL_ONLY


def test_the_verdict_keeps_what_it_requires_apart_from_what_it_does_not() -> None:
    invariance = {
        "bit_identical": False,
        "batch_sizes": [1, 2, 8],
        "differing_rows": [{"row": 0, "max_ulp": 2}],
    }
    coverage = {"configurations": [1, 2, 3], "unproven": []}
    required, optional = report.section_words(0.25, invariance, coverage)
    assert required == ["err/bound ≤ 0.25", "layouts proven 3/3"]
    assert optional == ["NOT batch-invariant: 1 row(s), ≤ 2 ulp"]
    html = report.evidence_html(required, optional)
    assert "<br>required: err/bound ≤ 0.25 · layouts proven 3/3" in html
    assert (
        f"<span style='color:{report.GREY_COLOR}'>not required to pass: NOT batch-invariant"
    ) in html
    assert report.section_words(None, {"absent": "x"}, {"absent": "y"}) == ([], [])


def test_a_sessions_saved_kernel_output_carries_its_out_of_bounds_stores() -> None:
    model = InspectionState()
    problem = fixtures.get("padded_row_stride").build()
    model.set_problem(problem)
    model.set_analysis(analyse(problem, None))
    saved = SimpleNamespace(
        kernel_y=model.reference.y,
        mode="interpreter",
        kernel_note="Triton kernel, interpreter mode",
        kernel_oob_addresses=np.array([200, 201], dtype=np.int64),
        kernel_oob_guard=128,
        kernel_oob_row_stride=0,
        kernel_block=64,
    )
    model.set_session_results(saved)
    stores = model.kernel_output().stores
    assert stores.output == (72, 73)
    assert stores.buffer == (200, 201)
    # A file written before the frame was recorded: the run's guard (the bundled kernel's tile).
    older = SimpleNamespace(**{**vars(saved), "kernel_oob_guard": None})
    model.set_session_results(older)
    assert model.kernel_output().stores.output == (136, 137)
