"""The inspection's state without a window: each change notifies, stale results are ignored,
and the derived values (kernel columns, title, the session it saves) are right."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from inspector.check import pipeline
from inspector.check.results import StoresOutOfBounds
from inspector.model import bench_rows, state
from inspector.model.analysis import analyse
from inspector.model.events import Event, EventEmitter, StateEvents
from inspector.model.state import InspectionState
from oracle import fixtures
from oracle.compare import max_errors
from oracle.mutants import MODEL_MUTANTS
from oracle.spec import synthetic_problem


@pytest.fixture
def inspection() -> tuple[InspectionState, list[tuple[str, object]]]:
    """A state and the (type, value) of every event it emits, in order."""
    model = InspectionState()
    seen: list[tuple[str, object]] = []
    for emitter in model.events.emitters():
        emitter.connect(lambda event: seen.append((event.type, event.value)))
    return model, seen


def _problem(name: str = "padded_row_stride"):
    return fixtures.get(name).build()


def _kernel_run(problem, mutant=None):
    """What the row table reads of a ``pipeline.KernelRun``."""
    return SimpleNamespace(
        problem=problem,
        mutant=mutant,
        row_max_abs=np.full(problem.rows, 1e-7),
        row_max_rel=np.full(problem.rows, 2e-7),
        mode="interpreter",
        device="cpu",
        inferred=None,
        rstd=None,
        row_error_bound=None,
    )


def test_an_emitter_calls_each_callback_once_in_order_until_disconnected() -> None:
    emitter = EventEmitter("dirty")
    calls: list[tuple[str, Event]] = []

    def first(event: Event) -> None:
        calls.append(("first", event))

    emitter.connect(first)
    emitter.connect(first)
    emitter.connect(lambda event: calls.append(("second", event)))
    event = emitter.emit(True)
    assert event == Event("dirty", True)
    assert calls == [("first", event), ("second", event)]
    emitter.disconnect(first)
    emitter.emit(False)
    assert [name for name, _ in calls] == ["first", "second", "second"]
    emitter.disconnect()
    emitter.emit(True)
    assert len(calls) == 3


def test_every_piece_of_state_has_its_emitter() -> None:
    events = InspectionState().events
    assert [e.type for e in events.emitters()] == list(StateEvents.NAMES)


def test_a_new_problem_notifies_and_drops_the_old_results(inspection) -> None:
    model, seen = inspection
    problem = _problem()
    model.set_problem(problem)
    assert seen == [("problem", problem)]
    assert model.set_analysis(analyse(problem, None))
    assert model.set_kernel_run(_kernel_run(problem))
    result = pipeline.run_check(problem, pipeline.CheckConfig(run_kernel=False))
    assert model.set_check_result(result)
    model.set_session_results(SimpleNamespace(kernel_y=None, mode="model only"))
    analysis = model.analysis
    # Invalid input: nothing can run, the last good analysis stays on screen.
    model.set_problem(None)
    assert seen[-1] == ("problem", None)
    assert model.analysis is analysis
    assert model.tiled is analysis.model
    assert model.reference is analysis.reference
    assert not model.analysis_current
    # A new valid problem: kernel run, check and saved results are of the old one.
    other = _problem("hand_checkable")
    model.set_problem(other)
    assert (model.kernel_run, model.check_result, model.session_results) == (None, None, None)
    assert model.analysis is analysis
    assert not model.analysis_current


def test_the_mutant_notifies_only_when_it_changes(inspection) -> None:
    model, seen = inspection
    assert model.set_mutant("missing_square")
    assert not model.set_mutant("missing_square")
    assert seen == [("mutant", "missing_square")]
    assert model.model_mutant == "missing_square"
    assert model.set_mutant("unmasked_store")
    assert model.mutant == "unmasked_store"
    assert model.model_mutant is None  # kernel-only: the lane model stays faithful
    assert model.set_mutant(None)
    assert seen[-1] == ("mutant", None)


def test_stale_analysis_kernel_run_and_check_are_ignored(inspection) -> None:
    model, seen = inspection
    old, new = _problem(), _problem("hand_checkable")
    model.set_problem(new)
    seen.clear()
    assert not model.set_analysis(analyse(old, None))
    assert not model.set_analysis(analyse(new, "missing_weight"))  # the mutant is off
    assert not model.set_kernel_run(_kernel_run(old))
    old_check = pipeline.run_check(old, pipeline.CheckConfig(run_kernel=False))
    assert not model.set_check_result(old_check)
    assert seen == []
    assert model.analysis is None
    analysis = analyse(new, None)
    assert model.set_analysis(analysis)
    assert seen == [("analysis", analysis)]
    assert model.analysis_current


def test_a_check_notifies_and_brings_its_compiler_output(inspection) -> None:
    model, seen = inspection
    problem = _problem()
    model.set_problem(problem)
    result = pipeline.run_check(problem, pipeline.CheckConfig(run_kernel=False))
    compiled = SimpleNamespace(**{**vars(result), "compile": {"ptx": "// ptx", "num_warps": 4}})
    assert not model.check_current
    assert model.set_check_result(compiled)
    assert model.check_current
    assert [t for t, _ in seen[1:]] == ["check_result", "compile_info"]
    assert model.compile_info["texts"] == {"ptx": "// ptx"}
    assert model.compile_source == "from the check"


def test_compiler_output_is_cached_per_signature(inspection) -> None:
    model, seen = inspection
    key = ("float32", 70, "sm_90")
    assert not model.show_cached_compile(key)
    model.remember_compile({"key": key, "ttir": "module {}", "num_warps": 2})
    assert seen[-1][0] == "compile_info"
    assert model.compile_source == ""
    assert model.show_cached_compile(key)
    assert model.compile_source == "cached"
    assert model.compile_info["texts"] == {"ttir": "module {}"}
    assert len(seen) == 2


def test_kernel_columns_come_from_the_freshest_kernel_result() -> None:
    model = InspectionState()
    problem = _problem()
    model.set_problem(problem)
    model.set_analysis(analyse(problem, None))
    empty = model.kernel_columns()
    assert (empty.row_max_abs, empty.row_max_rel) == (None, None)
    assert empty.note == "kernel columns: run the kernel or a check with the kernel"
    # A saved session's kernel output, judged against the held reference.
    kernel_y = model.reference.y + 1e-3
    model.set_session_results(SimpleNamespace(kernel_y=kernel_y, mode="compiled"))
    saved = model.kernel_columns()
    np.testing.assert_array_equal(saved.row_max_abs, max_errors(kernel_y, model.reference.y)[0])
    assert saved.note == "kernel columns: from the session file (compiled)"
    # A check with the kernel wins over the file; Run kernel wins over both.
    check_kernel = SimpleNamespace(
        row_max_abs=np.zeros(3), row_max_rel=np.ones(3), mode="x", row_error_bound=None
    )
    assert model.set_check_result(
        SimpleNamespace(problem=problem, kernel=check_kernel, compile=None, batch_invariance=None)
    )
    checked = model.kernel_columns()
    assert checked.row_max_rel is check_kernel.row_max_rel
    assert checked.note == "kernel columns: from the check (x)"
    run = _kernel_run(problem, mutant="unmasked_store")
    model.set_kernel_run(run)
    ran = model.kernel_columns()
    assert ran.row_max_abs is run.row_max_abs
    assert ran.note == "kernel columns: interpreter run on cpu (mutant unmasked_store)"
    # A model mutant says so in front.
    model.set_mutant("missing_weight")
    model.set_analysis(analyse(problem, "missing_weight"))
    assert model.kernel_columns().note.startswith("tiled columns show mutant missing_weight; ")


def test_path_and_dirty_notify_on_change_and_make_the_title(inspection) -> None:
    model, seen = inspection
    assert model.title == "untitled — RMSNorm Kernel Inspector"
    model.dirty = False
    model.session_path = None
    assert seen == []
    model.mark_dirty()
    model.mark_dirty()
    assert seen == [("dirty", True)]
    assert model.title == "untitled * — RMSNorm Kernel Inspector"
    model.session_path = "/tmp/x/run.h5"
    model.dirty = False
    assert seen[1:] == [("session_path", "/tmp/x/run.h5"), ("dirty", False)]
    assert model.title == "run.h5 — RMSNorm Kernel Inspector"


def test_the_session_notifies_when_its_receipts_change(inspection) -> None:
    model, seen = inspection
    problem = _problem()
    model.set_problem(problem)
    seen.clear()
    session = model.to_session()
    model.set_session(session)
    assert seen == []  # no receipts before, none now
    session.record_receipts('{"a": 1}', "a\n", passed=True)
    model.set_session(session)
    assert seen == [("session", session)]
    model.set_session(session)
    assert len(seen) == 1
    model.set_session(None)
    assert seen[-1] == ("session", None)


def test_the_analysis_runs_here_only_for_small_problems() -> None:
    model = InspectionState()
    assert not model.analyse_here
    model.set_problem(_problem())
    assert model.analyse_here
    big = synthetic_problem(64, 1025, seed=1)
    assert big.rows * big.row_stride > state.SYNC_ELEMENTS
    model.set_problem(big)
    assert not model.analyse_here


def _bench_rows() -> list[dict]:
    return [
        {"set": "llm", "rows": 8, "width": 64, "dtype": "float32", "impl": impl, "status": "ok",
         "gbps": gbps, "samples_us": samples}
        for impl, gbps, samples in (("copy", 10.0, [1.0, 2.0]), ("ours", 9.0, []))
    ]  # fmt: skip


def test_bench_rows_go_into_the_session_and_come_back() -> None:
    bench = {"shapes": "llm", "dtypes": ["float32"], "rows": _bench_rows(), "source": "H200"}
    meta, samples = bench_rows.bench_for_session(bench)
    assert [set(r) for r in meta["rows"]] == [set(r) - {"samples_us"} for r in bench["rows"]]
    assert meta["source"] == "H200"
    assert list(samples) == ["copy/8x64/float32"]
    np.testing.assert_array_equal(samples["copy/8x64/float32"], [1.0, 2.0])
    back = bench_rows.bench_from_session(meta)
    assert back == {**bench, "rows": meta["rows"]}
    assert bench_rows.bench_from_session(None) is None
    assert bench_rows.bench_from_session({"rows": []}) is None


def test_a_benchmark_record_names_its_device_time_and_file() -> None:
    report = {
        "environment": {"device": {"name": "NVIDIA H200"}},
        "started_utc": "2026-11-30T19:42:07+00:00",
        "results": _bench_rows(),
    }
    bench = bench_rows.bench_from_record(report, "results.json")
    assert bench["source"] == "NVIDIA H200, 2026-11-30T19:42:07+00:00 (results.json)"
    assert (bench["shapes"], bench["dtypes"]) == ("record", ["float32"])
    odd = bench_rows.bench_from_record({"environment": ["x"], "started_utc": 5, "results": []}, "o")
    assert odd["source"] == "an unnamed device, an unknown time (o)"


def test_the_saved_session_holds_toggles_compile_info_bench_and_history() -> None:
    model = InspectionState()
    with pytest.raises(ValueError, match="nothing to save"):
        model.to_session()
    problem = _problem()
    model.set_problem(problem)
    model.set_mutant("unmasked_store")
    model.remember_compile({"key": ("float32", 70, None), "ptx": "// ptx"})
    model.set_bench({"shapes": "llm", "dtypes": ["float32"], "rows": _bench_rows()})
    session = model.to_session()
    assert session.results is None  # no check of this problem
    assert not any(session.model_mutants.values())
    assert session.kernel_mutants["unmasked_store"]
    assert set(session.kernel_mutants) == {*MODEL_MUTANTS, "unmasked_store"}
    assert "key" not in session.compile_info
    assert session.compile_info["texts"] == {"ptx": "// ptx"}
    assert list(session.bench_samples) == ["copy/8x64/float32"]
    # With a check of this problem, its arrays; the held session's receipt history lives on.
    model.set_check_result(pipeline.run_check(problem, pipeline.CheckConfig(run_kernel=False)))
    session.record_receipts('{"a": 1}', "a\n", passed=True)
    model.set_session(session)
    again = model.to_session()
    assert again.results is not None
    assert again.receipt_history == session.receipt_history
    assert again.receipt_json == '{"a": 1}'
    # Restored into a fresh state (after the input panel took its problem).
    other = InspectionState()
    other.set_problem(problem)
    other.restore_session(again, "/tmp/y/demo.h5", as_template=True)
    assert other.mutant == "unmasked_store"
    assert other.session_path is None
    assert not other.dirty
    assert other.session is again
    assert other.bench["rows"] == again.bench_meta["rows"]
    assert other.compile_source == "from the session"
    assert other.session_results is again.results
    titled = InspectionState()
    titled.restore_session(again, "/tmp/y/demo.h5")
    assert titled.session_path == "/tmp/y/demo.h5"


def test_the_recent_list_puts_a_path_first_once_and_keeps_eight() -> None:
    recent = [f"/s/{i}.h5" for i in range(8)]
    assert state.recent_with(recent, "/s/3.h5")[:2] == ["/s/3.h5", "/s/0.h5"]
    assert state.recent_with(recent, "/s/3.h5").count("/s/3.h5") == 1
    assert state.recent_with(recent, "/s/new.h5") == ["/s/new.h5", *recent[:7]]


def test_another_kernel_drops_the_old_ones_run_and_check_and_foreign_saved_output(
    inspection,
) -> None:
    from pathlib import Path

    from kernels.sandbox.usercode import parse_kernel_spec

    model, seen = inspection
    problem = _problem()
    model.set_problem(problem)
    model.set_analysis(analyse(problem, None))
    run = SimpleNamespace(
        **vars(_kernel_run(problem)),
        y=model.reference.y,
        stores=StoresOutOfBounds(),
    )
    assert model.set_kernel_run(run)
    assert model.kernel_output().source == "Run kernel, interpreter"
    tutorial = Path(__file__).resolve().parents[2] / "resources" / "kernels" / "tutorial.py"
    spec = parse_kernel_spec(f"{tutorial}:rms_norm")
    seen.clear()
    model.set_kernel(spec)
    assert seen == [("kernel", spec)]
    assert model.kernel is spec
    assert model.user_kernel
    assert model.kernel_run is None
    assert model.kernel_output() is None
    # A session's check of the bundled kernel is no evidence about the user's kernel.
    bundled = SimpleNamespace(
        kernel_y=model.reference.y + 1e-3,
        mode="compiled",
        kernel_note="Triton kernel, compiled mode (CUDA)",
    )
    model.set_session_results(bundled)
    assert not model.saved_results_current()
    columns = model.kernel_columns()
    assert columns.row_max_abs is None
    assert (
        columns.note
        == "kernel columns (tutorial.py:rms_norm): run the kernel or a check with the kernel"
    )
    assert model.kernel_output() is None
    # Its own saved check is.
    own = SimpleNamespace(
        kernel_y=model.reference.y + 1e-3,
        mode="interpreter",
        kernel_note=f"user kernel {spec.describe()}, interpreter mode",
    )
    model.set_session_results(own)
    assert model.kernel_output().source == "the session file, interpreter"
    inferred = model.kernel_inferred()
    assert inferred is model.kernel_inferred()  # computed once per output
    assert inferred.rrms.shape == (problem.rows,)
    # A check of another kernel arriving late is ignored; the bundled kernel comes back.
    other = SimpleNamespace(
        problem=problem, kernel=run, compile=None, kernel_source={"kind": "bundled"}
    )
    assert not model.set_check_result(other)
    model.set_kernel(None)
    assert model.set_check_result(other)
    assert not model.saved_results_current()
