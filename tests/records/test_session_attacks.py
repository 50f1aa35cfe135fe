"""Crafted sessions, resealed so the seal holds (anyone can recompute it): each link and storage
kind HDF5 would follow out of the file, an unknown filter and a compressed bomb are refused by
name before their data is read, the file left byte for byte; a reader that crashes or hangs in
the child is a clean refusal; an autosave that cannot be opened is set aside, not offered again."""

from __future__ import annotations

import os
import signal
import subprocess

import h5py
import numpy as np
import pytest

from inspector.records.sessions import autosave, seal, session
from inspector.records.sessions.session import Session, SessionError, load_session, save_session
from kernels.sandbox import bounded


@pytest.fixture
def saved(model_results, tmp_path):
    path = tmp_path / "s.h5"
    save_session(path, Session.from_check(model_results["float32"]))
    return path


def _edit(path, change) -> bytes:
    with h5py.File(path, "a") as root:
        change(root)
    seal.write_seal(path, session.SCHEMA_VERSION)
    return path.read_bytes()


def _refused(path, before: bytes, match: str) -> None:
    for isolated in (True, False):
        with pytest.raises(SessionError, match=match):
            load_session(path, isolated=isolated)
    assert path.read_bytes() == before


def _replace_x(root, make) -> None:
    old = root["problem/x"]
    shape, dtype, attrs = old.shape, old.dtype, dict(old.attrs)
    del root["problem/x"]
    new = make(root, shape, dtype)
    for key, value in attrs.items():
        new.attrs[key] = value


def test_an_external_link_is_refused(saved, tmp_path) -> None:
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = np.zeros((3, 37), np.float32)

    def change(root):
        del root["problem/x"]
        root["problem/x"] = h5py.ExternalLink(str(other), "/x")

    _refused(saved, _edit(saved, change), r"/problem/x is an external link")


def test_a_soft_link_is_refused(saved) -> None:
    def change(root):
        root.move("problem/x", "problem/x_real")
        root["problem/x"] = h5py.SoftLink("/problem/x_real")

    _refused(saved, _edit(saved, change), r"/problem/x is a SoftLink")


def test_external_storage_on_a_fifo_is_refused_without_reading_it(saved, tmp_path) -> None:
    fifo = tmp_path / "raw"
    os.mkfifo(fifo)

    def change(root):
        _replace_x(
            root,
            lambda r, shape, dtype: r["problem"].create_dataset(
                "x", shape=shape, dtype=dtype, external=[(str(fifo), 0, h5py.h5f.UNLIMITED)]
            ),
        )

    _refused(saved, _edit(saved, change), r"/problem/x has external storage")


def test_a_virtual_dataset_is_refused(saved, tmp_path) -> None:
    other = tmp_path / "source.h5"
    with h5py.File(other, "w") as f:
        f["x"] = np.ones((3, 37), np.float32)

    def change(root):
        def make(r, shape, dtype):
            layout = h5py.VirtualLayout(shape=shape, dtype=dtype)
            layout[...] = h5py.VirtualSource(str(other), "x", shape=shape)
            return r["problem"].create_virtual_dataset("x", layout, fillvalue=0)

        _replace_x(root, make)

    _refused(saved, _edit(saved, change), r"/problem/x is a virtual dataset")


def test_an_unknown_filter_is_refused(saved) -> None:
    def change(root):
        _replace_x(
            root,
            lambda r, shape, dtype: r["problem"].create_dataset(
                "x", data=np.zeros(shape, dtype), compression="lzf"
            ),
        )

    _refused(saved, _edit(saved, change), r"/problem/x uses HDF5 filter 32000")


def test_a_compressed_bomb_is_refused_from_its_declared_shape(saved) -> None:
    # 10**9 float32 zeros in a few KB of chunks: refused before a chunk is inflated.
    def change(root):
        root.require_group("bench").create_dataset(
            "bomb", shape=(10**9,), dtype=np.float32, chunks=(2**20,), compression="gzip"
        )

    before = _edit(saved, change)
    assert len(before) < 1_000_000
    _refused(saved, before, r"/bench/bomb declares 4000000000 bytes")


def test_a_crash_in_the_childs_reader_is_a_clean_refusal(saved, monkeypatch) -> None:
    def crashed(*args, **kwargs):
        return subprocess.CompletedProcess(args[0], -signal.SIGSEGV, "", "")

    monkeypatch.setattr(bounded, "run_bounded", crashed)
    with pytest.raises(
        SessionError, match=r"damaged \(the HDF5 library crashed reading it: SIGSEGV"
    ):
        load_session(saved)


def test_a_read_that_never_ends_in_the_child_is_a_clean_refusal(saved, monkeypatch) -> None:
    def hangs(*args, **kwargs):
        raise subprocess.TimeoutExpired(args[0], kwargs["timeout_s"])

    monkeypatch.setattr(bounded, "run_bounded", hangs)
    with pytest.raises(SessionError, match="did not finish within 60 s"):
        load_session(saved)


def test_an_unreadable_autosave_is_set_aside_and_not_offered_again(tmp_path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    bad = autosave.autosave_path(None, cache)
    bad.write_bytes(b"not a session")
    assert autosave.recovery_candidate(None, cache) == bad
    moved = autosave.set_aside(bad)
    assert not bad.exists()
    assert moved.read_bytes() == b"not a session"  # kept for the user, under another name
    assert autosave.recovery_candidate(None, cache) is None


def test_a_file_swapped_in_after_the_childs_read_is_never_read(
    saved, model_results, tmp_path, monkeypatch
) -> None:
    # The child reads a private copy; this process reads the same copy. A crafted file put at
    # the path once the child is done (here: a session of other values) changes nothing.
    expected = load_session(saved, isolated=False)
    crafted = tmp_path / "crafted.h5"
    other = Session.from_check(model_results["float32"])
    other.x = other.x * 2.0
    save_session(crafted, other)
    probe = session._probe_in_child
    seen: list[str] = []

    def probe_then_swap(copy, where, shown):
        seen.append(str(copy))
        probe(copy, where, shown)
        os.replace(crafted, saved)  # the swap, between the two reads

    monkeypatch.setattr(session, "_probe_in_child", probe_then_swap)
    loaded = load_session(saved)
    np.testing.assert_array_equal(loaded.x, expected.x)
    assert len(seen) == 1
    assert seen[0] != str(saved)  # the child read the copy ...
    assert not os.path.exists(seen[0])  # ... removed once both reads are done
    np.testing.assert_array_equal(load_session(saved, isolated=False).x, other.x)


def test_session_size_at_the_bound_opens_and_one_byte_past_is_refused(saved, monkeypatch) -> None:
    from inspector.records.sessions import snapshot as session_snapshot

    size = saved.stat().st_size
    monkeypatch.setattr(session_snapshot, "MAX_SESSION_BYTES", size)
    load_session(saved)
    monkeypatch.setattr(session_snapshot, "MAX_SESSION_BYTES", size - 1)
    with pytest.raises(SessionError, match=rf"{size} bytes, more than the {size - 1} a session"):
        load_session(saved)


def test_a_fifo_named_like_a_session_is_refused_by_its_type(tmp_path) -> None:
    fifo = tmp_path / "s.h5"
    os.mkfifo(fifo)
    with pytest.raises(SessionError, match=r"not a regular file \(a FIFO, a device or a folder\)"):
        load_session(fifo)


def test_a_fill_value_is_refused_before_its_strings_are_made(saved) -> None:
    # 10**5 variable strings never written, read as a 10 KB fill value each: 1 GB from 70 KB.
    def change(root):
        del root["mutants/model_names"]
        root["mutants"].create_dataset(
            "model_names", shape=(100_000,), dtype=h5py.string_dtype(), fillvalue="z" * 10_000
        )

    before = _edit(saved, change)
    assert len(before) < 1_000_000
    _refused(saved, before, r"/mutants/model_names sets a fill value")


def test_a_dataset_that_stores_none_of_what_it_declares_is_refused(saved) -> None:
    def change(root):
        root["bench"].create_dataset("0000", shape=(1000,), dtype=np.float64).attrs["key"] = "k"

    _refused(saved, _edit(saved, change), r"/bench/0000 declares 8000 bytes and stores none")


def test_bench_samples_at_the_bound_open_and_one_past_are_refused(saved) -> None:
    from inspector.records.sessions.scan import MAX_BENCH_DATASET_BYTES

    count = MAX_BENCH_DATASET_BYTES // 8

    def samples(n):
        def change(root):
            if "0000" in root["bench"]:
                del root["bench/0000"]
            dataset = root["bench"].create_dataset(
                "0000", data=np.ones(n), chunks=True, compression="gzip"
            )
            dataset.attrs["key"] = "ours/8x4096/bfloat16"

        return change

    _edit(saved, samples(count))
    assert load_session(saved).bench_samples["ours/8x4096/bfloat16"].shape == (count,)
    before = _edit(saved, samples(count + 1))
    _refused(saved, before, rf"/bench/0000 declares {8 * (count + 1)} bytes; a benchmark row")


def test_all_bench_samples_past_their_total_are_refused(saved, monkeypatch) -> None:
    from inspector.records.sessions import scan as session_scan

    def change(root):
        for index in range(3):
            dataset = root["bench"].create_dataset(f"{index:04d}", data=np.ones(1000))
            dataset.attrs["key"] = f"ours/{index}x4096/bfloat16"

    before = _edit(saved, change)
    monkeypatch.setattr(session_scan, "MAX_BENCH_BYTES", 3 * 8000)
    assert len(load_session(saved, isolated=False).bench_samples) == 3
    monkeypatch.setattr(session_scan, "MAX_BENCH_BYTES", 3 * 8000 - 1)
    with pytest.raises(SessionError, match=r"/bench/0002 declares 8000 bytes; .* all rows' 23999"):
        load_session(saved, isolated=False)
    assert saved.read_bytes() == before


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ("[1, 2]", r"bench meta must be a JSON object; got list"),
        ('{"rows": [1]}', r"bench meta rows\[0\] must be an object; got int"),
        ('{"rows": {}}', r"bench meta rows must be a list of at most 8192"),
        ('{"rows": [], "dtypes": 7}', r"bench meta dtypes must be a list of dtype names"),
        (
            '{"rows": [], "shapes": [[4, 70]], "source": 5}',
            r"bench meta source must be text; got int",
        ),
    ],
)
def test_a_bench_meta_of_the_wrong_shape_is_refused_by_name(saved, meta, message) -> None:
    def change(root):
        root["bench"].attrs["meta"] = meta

    _refused(saved, _edit(saved, change), message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, {}]", r"compile json must be a JSON object; got list"),
        ('{"texts": 5}', r"compile texts must be an object; got int"),
        ('{"ptx": ["a"]}', r"compile ptx must be text; got list"),
        ('{"texts": {"ttir": 7}}', r"compile ttir must be text; got int"),
        ('{"error": {}}', r"compile error must be text; got dict"),
    ],
)
def test_compiler_output_of_the_wrong_shape_is_refused_by_name(saved, text, message) -> None:
    from inspector.records.sessions.hdf5 import write_text

    def change(root):
        if "compile" in root:
            del root["compile"]
        write_text(root.create_group("compile"), "json", text)

    _refused(saved, _edit(saved, change), message)


@pytest.mark.parametrize("name", ["categories", "expected", "baseline_actual"])
def test_kill_matrix_columns_of_another_length_than_its_fixtures_are_refused(saved, name) -> None:
    from inspector.records.sessions.hdf5 import write_strings

    def change(root):
        group = root["results/kill_matrix/model"]
        values = [v.decode() for v in group[name][...]]
        del group[name]
        write_strings(group, name, values[:-1])

    count = len(load_session(saved, isolated=False).results.model_matrix.fixtures)
    _refused(
        saved,
        _edit(saved, change),
        rf"kill_matrix/model/{name} has {count - 1} entries; its fixtures are {count}",
    )


def test_the_session_writer_refuses_more_bench_rows_than_the_reader_opens(model_results, tmp_path):
    from inspector.records.sessions.layout import MAX_BENCH_ROWS
    from kernels.bench.report import MAX_RESULTS

    assert MAX_BENCH_ROWS == MAX_RESULTS
    path = tmp_path / "big.h5"
    held = Session.from_check(model_results["float32"])
    held.bench_meta = {"rows": [{"impl": "ours"}] * MAX_BENCH_ROWS}
    save_session(path, held)
    assert len(load_session(path).bench_meta["rows"]) == MAX_BENCH_ROWS
    held.bench_meta = {"rows": [{"impl": "ours"}] * (MAX_BENCH_ROWS + 1)}
    with pytest.raises(SessionError, match=r"bench rows: a session holds at most 8192; .* 8193"):
        save_session(tmp_path / "bigger.h5", held)
    assert not (tmp_path / "bigger.h5").exists()


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        (np.array([b"a", b"b"]), r"\|S1 \(2,\)"),
        (np.array([(1.0, 2)], dtype=[("a", "<f8"), ("b", "<i4")]), r"\[\('a', '<f8'\)"),
        (np.array([1 + 2j, 3j]), r"complex128 \(2,\)"),
    ],
)
def test_bench_samples_that_are_not_real_numbers_are_refused_by_name(saved, data, shown) -> None:
    def change(root):
        root["bench"].create_dataset("0000", data=data).attrs["key"] = "ours/8x4096/bfloat16"

    _refused(
        saved,
        _edit(saved, change),
        rf"bench/0000 must hold an array of real numbers; got {shown}",
    )


def test_a_kill_table_that_names_another_target_is_refused(saved) -> None:
    # Saved again, both tables would be written under one name: every later save would fail.
    def change(root):
        root["results/kill_matrix/model"].attrs["target"] = "kernel"

    _refused(saved, _edit(saved, change), r"kill_matrix/model says its target is 'kernel'")


def test_an_overflow_in_the_reader_is_a_session_error(saved) -> None:
    def change(root):
        root["results/tiled"].attrs["block"] = np.inf

    _refused(saved, _edit(saved, change), r"truncated or corrupted \(OverflowError")


def test_the_session_writer_refuses_bench_samples_past_the_readers_bounds(
    model_results, tmp_path, monkeypatch
):
    from inspector.records.sessions import layout as session_layout

    held = Session.from_check(model_results["float32"])
    held.bench_samples = {"a": np.ones(100), "b": np.ones(100)}
    save_session(tmp_path / "ok.h5", held)
    assert len(load_session(tmp_path / "ok.h5").bench_samples) == 2
    monkeypatch.setattr(session_layout, "MAX_BENCH_BYTES", 1599)
    with pytest.raises(
        SessionError, match=r"bench samples: .* 1599 in all; this one has 800 and 1600"
    ):
        save_session(tmp_path / "past.h5", held)
    monkeypatch.setattr(session_layout, "MAX_BENCH_DATASET_BYTES", 799)
    with pytest.raises(SessionError, match=r"at most 799 bytes a row"):
        save_session(tmp_path / "past.h5", held)
    assert not (tmp_path / "past.h5").exists()
