"""HDF5 sessions: exact round trips, refusal of bad files without touching them, atomic saves."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector.records import atomic, diff
from inspector.records.receipts import receipt
from inspector.records.sessions import autosave, seal, session
from inspector.records.sessions.session import Session, SessionError, load_session, save_session
from oracle.dtypes import bfloat16_bits, from_bfloat16_bits

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo_session.h5"


def _full_session(result, tmp_path: Path) -> Session:
    state = Session.from_check(result)
    written = tmp_path / "receipts"
    receipt.write_receipts(result, written)
    json_text = (written / "receipt.json").read_text(encoding="utf-8")
    csv_text = (written / "receipt.csv").read_text(encoding="utf-8")
    state.record_receipts(json_text, csv_text, passed=True)
    state.record_receipts(json_text, csv_text, passed=False, reason="a counterexample")
    state.model_mutants["missing_weight"] = True
    state.bench_samples = {
        "triton float32 4x70 ms": np.array([0.0123, 0.0125, 0.0119]),
        "torch/compiled": np.arange(6, dtype=np.float32).reshape(2, 3),
    }
    state.bench_meta = {"protocol": "do_bench", "warmup": 25, "shapes": [[4, 70]]}
    state.versions = {"tool": "t", "python": "3"}
    state.compile_info = {"ttir": "module {}", "num_warps": 4, "registers": None}
    return state


def _snapshot(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_round_trip_is_exact(model_results, tmp_path, dtype):
    original = _full_session(model_results[dtype], tmp_path)
    path = tmp_path / "s.h5"
    save_session(path, original)
    loaded = load_session(path)
    assert diff.session_differences(original, loaded) == []
    assert loaded.row_stride == 40
    assert [r.kind for r in loaded.receipt_history] == ["first_pass", "counterexample"]
    assert loaded.results is not None
    assert loaded.results.model_matrix.survivors == ()
    with h5py.File(path, "r") as root:
        stored = root["problem/x"]
        assert stored.attrs["dtype"] == dtype
        expected_storage = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}
        assert stored.dtype == expected_storage[dtype]
        if dtype == "bfloat16":
            np.testing.assert_array_equal(stored[...], bfloat16_bits(original.x))


def test_kernel_run_round_trip(kernel_result, tmp_path):
    original = _full_session(kernel_result, tmp_path)
    path = tmp_path / "kernel.h5"
    save_session(path, original)
    loaded = load_session(path)
    assert diff.session_differences(original, loaded) == []
    assert loaded.results.kernel_matrix is not None
    assert set(loaded.results.kernel_matrix.mutants) >= {"unmasked_store", "wrong_row_stride"}
    assert loaded.results.kernel_matrix.survivors == ()
    np.testing.assert_array_equal(loaded.results.kernel_y, kernel_result.kernel.y)


def test_a_user_kernels_out_of_bounds_stores_are_saved(model_results, tmp_path):
    # A session keeps a run's stores as indices into its guarded output buffer.
    import dataclasses

    from inspector.check import pipeline

    result = model_results["float32"]
    judged = pipeline._judged(result.problem, result.scalar.y, result.scalar.y)
    run = pipeline.KernelRun(
        **judged,
        mutant=None,
        stores=pipeline.StoresOutOfBounds(output=(37, 38), buffer=(101, 102)),
        mode="interpreter",
        device="cpu",
        block=64,
        num_warps=0,
        path="user",
    )
    path = tmp_path / "user.h5"
    save_session(path, Session.from_check(dataclasses.replace(result, kernel=run)))
    np.testing.assert_array_equal(load_session(path).results.kernel_oob_addresses, [101, 102])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    bits=st.lists(st.integers(0, 0xFFFF), min_size=6, max_size=6),
    eps=st.floats(1e-12, 1e-2),
)
def test_bfloat16_bits_survive_exactly(tmp_path, bits, eps):
    raw = np.array(bits, dtype=np.uint16)
    with np.errstate(invalid="ignore"):  # NaN bit patterns (replaced below)
        values = from_bfloat16_bits(raw)
    values = np.where(np.isfinite(values) & (np.abs(values) <= 1e6), values, 1.0)
    state = Session(x=values.reshape(2, 3), weight=values[:3], eps=eps, dtype="bfloat16")
    path = tmp_path / "bits.h5"
    save_session(path, state)
    loaded = load_session(path)
    assert diff.session_differences(state, loaded) == []
    assert np.array_equal(bfloat16_bits(loaded.x), bfloat16_bits(state.x))
    assert np.signbit(loaded.x).tolist() == np.signbit(state.x).tolist()


def test_demo_session_opens_with_a_real_kernel_run():
    demo = load_session(DEMO)
    assert (demo.rows, demo.width, demo.row_stride, demo.dtype) == (4, 70, 72, "float32")
    assert demo.results is not None
    assert demo.results.mode == "interpreter"
    assert demo.results.kernel_y is not None
    assert demo.results.kernel_matrix is not None
    assert demo.results.passed
    assert demo.receipt_json is not None
    assert demo.receipt_csv is not None
    assert len(set(np.abs(demo.weight))) > 1  # asymmetric weights


def test_the_demo_session_holds_every_current_section_and_no_machines_path():
    import json

    from inspector.records.receipts import format as receipt_format

    demo = load_session(DEMO)
    receipt = json.loads(demo.receipt_json)
    assert receipt["schema_version"] == receipt_format.SCHEMA_VERSION
    for section in ("error_bound", "batch_invariance", "device_evidence", "coverage", "timing"):
        assert section in receipt, section
    assert "configurations" in receipt["coverage"]
    texts = [json.dumps(demo.compile_info), demo.receipt_json, demo.receipt_csv]
    texts.append(json.dumps(demo.versions))
    for text in texts:  # the file is deflated: its texts are searched, not its bytes
        assert not re.search(r'"/[^"\n]*(?:kernels/jit|-packages/)', text)
        assert str(Path(__file__).resolve().parents[2]) not in text


def test_truncated_file_is_refused_untouched(model_results, tmp_path):
    path = tmp_path / "s.h5"
    save_session(path, _full_session(model_results["float32"], tmp_path))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    before = _snapshot(path)
    with pytest.raises(SessionError, match="truncated"):
        load_session(path)
    assert _snapshot(path) == before


@pytest.mark.parametrize(("start", "message"), [(8, "not an RMSNorm"), (4096, "checksum")])
def test_corrupted_bytes_are_refused_untouched(model_results, tmp_path, start, message):
    path = tmp_path / "s.h5"
    save_session(path, _full_session(model_results["float32"], tmp_path))
    data = bytearray(path.read_bytes())
    data[start : start + 192] = b"\xff" * 192
    path.write_bytes(bytes(data))
    before = _snapshot(path)
    with pytest.raises(SessionError, match=message):
        load_session(path)
    assert _snapshot(path) == before


def test_foreign_hdf5_file_is_refused_untouched(tmp_path):
    path = tmp_path / "foreign.h5"
    with h5py.File(path, "w") as root:
        root.create_dataset("images", data=np.zeros((3, 3)))
    before = _snapshot(path)
    with pytest.raises(SessionError, match="not an RMSNorm inspector session"):
        load_session(path)
    assert _snapshot(path) == before


def test_non_hdf5_file_is_refused_untouched(tmp_path):
    path = tmp_path / "notes.h5"
    path.write_text("just some text\n", encoding="utf-8")
    before = _snapshot(path)
    with pytest.raises(SessionError, match="not an HDF5 file"):
        load_session(path)
    assert _snapshot(path) == before


def test_newer_schema_is_refused_untouched(model_results, tmp_path, monkeypatch):
    path = tmp_path / "s.h5"
    with monkeypatch.context() as patch:
        patch.setattr(session, "SCHEMA_VERSION", session.SCHEMA_VERSION + 1)
        save_session(path, _full_session(model_results["float32"], tmp_path))
    before = _snapshot(path)
    with pytest.raises(SessionError, match="newer version"):
        load_session(path)
    assert _snapshot(path) == before


def _edit(path: Path, change) -> None:
    """Change a sealed session with h5py, then reseal it (tests the checks behind the seal)."""
    with h5py.File(path, "a") as root:
        change(root)
    seal.write_seal(path, session.SCHEMA_VERSION)


def test_missing_dataset_is_refused(model_results, tmp_path):
    path = tmp_path / "s.h5"
    save_session(path, _full_session(model_results["float32"], tmp_path))
    _edit(path, lambda root: root.__delitem__("problem/weight"))
    with pytest.raises(SessionError, match="missing /problem/weight"):
        load_session(path)


def test_invalid_stored_values_are_refused(model_results, tmp_path):
    path = tmp_path / "s.h5"
    save_session(path, _full_session(model_results["float32"], tmp_path))
    _edit(path, lambda root: root["problem"].attrs.__setitem__("eps", 1.0))
    with pytest.raises(SessionError, match="eps"):
        load_session(path)


def test_missing_file_is_a_session_error(tmp_path):
    with pytest.raises(SessionError, match="no such file"):
        load_session(tmp_path / "nope.h5")


def test_failed_save_keeps_the_previous_file(model_results, tmp_path, monkeypatch):
    path = tmp_path / "s.h5"
    save_session(path, _full_session(model_results["float32"], tmp_path))
    before = _snapshot(path)

    def full_disk(source, target):
        raise OSError(errno.ENOSPC, "No space left on device")

    changed = _full_session(model_results["float16"], tmp_path)
    monkeypatch.setattr(atomic.os, "replace", full_disk)
    with pytest.raises(SessionError, match=r"No space left on device.*previous file is unchanged"):
        save_session(path, changed)
    assert _snapshot(path) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".tmp") == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_save_into_read_only_folder_fails_cleanly(model_results, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    path = folder / "s.h5"
    save_session(path, _full_session(model_results["float32"], tmp_path))
    before = _snapshot(path)
    folder.chmod(0o555)
    try:
        with pytest.raises(SessionError, match="Permission denied"):
            save_session(path, _full_session(model_results["float16"], tmp_path))
        assert _snapshot(path) == before
    finally:
        folder.chmod(0o755)


def test_save_into_missing_folder_or_invalid_session_writes_nothing(model_results, tmp_path):
    with pytest.raises(SessionError, match="does not exist"):
        save_session(
            tmp_path / "nowhere" / "s.h5", _full_session(model_results["float32"], tmp_path)
        )
    bad = Session(x=np.ones((2, 3)), weight=np.ones(3), eps=1.0)
    with pytest.raises(SessionError, match="eps"):
        save_session(tmp_path / "bad.h5", bad)
    assert not (tmp_path / "bad.h5").exists()
    assert not (tmp_path / "nowhere").exists()


def test_receipt_history_keeps_first_pass_and_every_counterexample():
    state = Session(x=np.ones((1, 2)), weight=np.ones(2))
    state.record_receipts("{1}", "a", passed=True)
    state.record_receipts("{2}", "b", passed=True)
    state.record_receipts("{3}", "c", passed=False, reason="mutant survived")
    state.record_receipts("{4}", "d", passed=False)
    assert [(r.kind, r.json_text) for r in state.receipt_history] == [
        ("first_pass", "{1}"),
        ("counterexample", "{3}"),
        ("counterexample", "{4}"),
    ]
    assert state.receipt_json == "{4}"
    assert state.receipt_history[1].reason == "mutant survived"


def test_read_only_folder_as_root_is_simulated(model_results, tmp_path, monkeypatch):
    """Root ignores folder permissions, so inject the error a read-only folder raises."""
    path = tmp_path / "s.h5"
    save_session(path, _full_session(model_results["float32"], tmp_path))
    before = _snapshot(path)
    changed = _full_session(model_results["float16"], tmp_path)

    def read_only(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(atomic.tempfile, "mkstemp", read_only)
    with pytest.raises(SessionError, match=r"Permission denied.*previous file is unchanged"):
        save_session(path, changed)
    assert _snapshot(path) == before


def test_older_than_supported_schema_is_refused(model_results, tmp_path, monkeypatch):
    path = tmp_path / "s.h5"
    with monkeypatch.context() as patch:
        patch.setattr(session, "SCHEMA_VERSION", session.MIN_SCHEMA_VERSION - 1)
        save_session(path, _full_session(model_results["float32"], tmp_path))
    with pytest.raises(SessionError, match="older than any"):
        load_session(path)


def test_unsealed_session_attr_edit_is_caught_by_the_checksum(model_results, tmp_path):
    path = tmp_path / "s.h5"
    save_session(path, _full_session(model_results["float32"], tmp_path))
    with h5py.File(path, "a") as root:
        root.attrs["schema_version"] = 99
    before = _snapshot(path)
    with pytest.raises(SessionError, match=r"checksum|truncated|extended"):
        load_session(path)
    assert _snapshot(path) == before


def test_random_damage_is_refused_or_harmless_never_a_hang(tmp_path):
    """Flipped, zeroed and cut bytes of the demo session: a Session or a SessionError."""
    import random

    source = DEMO.read_bytes()
    rng = random.Random(20261130)
    refused = 0
    for case in range(60):
        data = bytearray(source)
        kind = case % 3
        if kind == 0:
            for _ in range(rng.randint(1, 20)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind == 1:
            data = data[: rng.randrange(len(data))]
        else:
            start, count = rng.randrange(len(data)), rng.randint(1, 4096)
            data[start : start + count] = bytes(len(data[start : start + count]))
        path = tmp_path / f"damaged_{case}.h5"
        path.write_bytes(bytes(data))
        try:
            load_session(path)
        except SessionError:
            refused += 1
    assert refused >= 50


def test_autosave_and_recovery(model_results, tmp_path):
    path = tmp_path / "work.h5"
    state = _full_session(model_results["float32"], tmp_path)
    save_session(path, state)
    assert autosave.recovery_candidate(path) is None
    state.model_mutants["missing_square"] = True
    written = autosave.write_autosave(state, path)
    assert written == tmp_path / ".work.autosave.h5"
    os.utime(written, ns=(path.stat().st_mtime_ns + 10**9,) * 2)
    assert autosave.recovery_candidate(path) == written
    recovered = load_session(written)
    assert recovered.model_mutants["missing_square"] is True
    assert load_session(path).model_mutants["missing_square"] is False  # the file is untouched
    autosave.discard_autosave(path)
    assert autosave.recovery_candidate(path) is None
    untitled = autosave.write_autosave(state, None, cache_dir=tmp_path / "cache")
    assert untitled == tmp_path / "cache" / "untitled.autosave.h5"
    assert autosave.recovery_candidate(None, cache_dir=tmp_path / "cache") == untitled


def test_outputs_are_stored_in_the_dtype_when_exact_else_float64(model_results, tmp_path):
    state = _full_session(model_results["float16"], tmp_path)
    state.results.tiled_y = state.results.tiled_y.copy()
    state.results.tiled_y[0, 0] = 0.1  # not a float16 value: must not be rounded on save
    path = tmp_path / "s.h5"
    save_session(path, state)
    with h5py.File(path, "r") as root:
        assert root["results/scalar/y"].dtype == np.float16
        assert root["results/scalar/y"].attrs["dtype"] == "float16"
        assert root["results/tiled/y"].dtype == np.float64
        assert root["results/tiled/y"].attrs["dtype"] == "float64"
    loaded = load_session(path)
    assert diff.session_differences(state, loaded) == []
    assert loaded.results.tiled_y[0, 0] == 0.1
