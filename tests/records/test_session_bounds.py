"""Sessions whose datasets cost more to read than they store: chunk counts past what h5py's
chunking makes of their size, texts longer than the writer's, texts of another type, and JSON
texts that deflate into millions of objects. Each is refused by name in the structure scan or
by the bounded parser, at its bound accepted."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from inspector.records.sessions import layout, scan, seal, session
from inspector.records.sessions.session import Session, SessionError, load_session, save_session


@pytest.fixture
def saved(model_results, tmp_path):
    path = tmp_path / "s.h5"
    save_session(path, Session.from_check(model_results["float32"]))
    return path


def _edit(path, change) -> None:
    with h5py.File(path, "a") as root:
        change(root)
    seal.write_seal(path, session.SCHEMA_VERSION)


def _rechunk_x(chunks):
    def change(root):
        old = root["problem/x"]
        values, attrs = old[...], dict(old.attrs)
        del root["problem/x"]
        new = root.create_dataset("problem/x", data=values, chunks=chunks)
        new.attrs.update(attrs)

    return change


def _text(where: str, text: str):
    def change(root):
        group, _, name = where.rpartition("/")
        if where in root:
            del root[where]
        raw = np.frombuffer(text.encode(), dtype=np.uint8)
        dataset = root.require_group(group).create_dataset(name, data=raw, compression="gzip")
        dataset.attrs["encoding"] = "utf-8"

    return change


def test_a_dataset_in_more_chunks_than_its_size_has_is_refused(saved) -> None:
    # x is 3 x 37 float32 (444 bytes): one chunk in h5py's chunking, never three.
    _edit(saved, _rechunk_x((3, 37)))
    assert load_session(saved, isolated=False).x.shape == (3, 37)
    _edit(saved, _rechunk_x((1, 37)))
    for isolated in (True, False):
        with pytest.raises(SessionError, match=r"/problem/x is stored in 3 chunks .* at most 1"):
            load_session(saved, isolated=isolated)


def test_the_writers_chunking_stays_within_the_chunk_bound() -> None:
    from h5py._hl.filters import guess_chunk

    for size in (1, 4096, 16_385, 10**6, scan.MAX_DATASET_BYTES):
        chunk = guess_chunk((size,), None, 1)[0]
        assert -(-size // chunk) <= max(1, -(-size // scan.MIN_CHUNK_BYTES))


def test_versions_text_past_its_bytes_is_refused_in_the_scan(saved) -> None:
    at_bound = json.dumps({"tool": ""})
    at_bound = json.dumps({"tool": "v" * (scan.VERSIONS_BYTES - len(at_bound))})
    assert len(at_bound) == scan.VERSIONS_BYTES
    _edit(saved, _text("versions/json", at_bound))
    assert len(load_session(saved, isolated=False).versions["tool"]) > 60_000
    _edit(saved, _text("versions/json", at_bound + " "))
    with pytest.raises(SessionError, match=r"/versions/json holds 65537 bytes of text, more"):
        load_session(saved, isolated=False)


def test_a_deflate_bomb_of_objects_in_versions_is_refused_by_the_parser(saved) -> None:
    bounds = layout.VERSIONS_JSON
    _edit(saved, _text("versions/json", "[" + ",".join(["{}"] * (bounds.containers - 1)) + "]"))
    assert len(load_session(saved, isolated=False).versions) == bounds.containers - 1
    _edit(saved, _text("versions/json", "[" + ",".join(["{}"] * bounds.containers) + "]"))
    with pytest.raises(
        SessionError, match=rf"/versions/json: {bounds.containers + 1} objects and arrays"
    ):
        load_session(saved, isolated=False)


def test_a_text_stored_as_a_string_is_refused(saved) -> None:
    def change(root):
        del root["versions/json"]
        root["versions"].create_dataset("json", data="{}", dtype=h5py.string_dtype())

    _edit(saved, change)
    with pytest.raises(SessionError, match=r"/versions/json is object .* as UTF-8 bytes"):
        load_session(saved, isolated=False)


def test_a_receipt_csv_past_the_csv_bound_is_refused(saved) -> None:
    from inspector.records.receipts.format import MAX_CSV_BYTES

    assert scan.text_bound("/receipts/history/0000/csv") == MAX_CSV_BYTES
    assert scan.text_bound("/receipts/json") == scan.MAX_DATASET_BYTES
    _edit(saved, _text("receipts/csv", "9" * MAX_CSV_BYTES))
    assert len(load_session(saved, isolated=False).receipt_csv) == MAX_CSV_BYTES
    _edit(saved, _text("receipts/csv", "9" * (MAX_CSV_BYTES + 1)))
    with pytest.raises(SessionError, match=rf"/receipts/csv holds {MAX_CSV_BYTES + 1} bytes"):
        load_session(saved, isolated=False)


@pytest.mark.parametrize(
    ("where", "bounds"),
    [("compile", layout.COMPILE_JSON), ("failures", layout.FAILURES_JSON)],
)
def test_the_compile_facts_and_failures_are_parsed_within_their_bounds(
    saved, where, bounds
) -> None:
    past = json.dumps([[]] * bounds.containers)

    def change(root):
        if where == "failures":
            root["results"].attrs["failures"] = past
        else:
            _text("compile/json", json.dumps({"texts": {}, "x": [[]] * bounds.containers}))(root)

    _edit(saved, change)
    with pytest.raises(SessionError, match=f"objects and arrays, more than {bounds.containers}"):
        load_session(saved, isolated=False)
