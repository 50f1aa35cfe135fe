"""The session reader and writer share one bound on benchmark rows
(``layout.bench_rows_problem``): the reader opens exactly what the writer saves and refuses, by
the same words, one row more (a file it opened could otherwise never be saved again)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from inspector.records.sessions import layout, seal, session
from inspector.records.sessions.session import Session, SessionError, load_session, save_session


def _with_bench_rows(path, count: int) -> None:
    """Give the saved session ``count`` benchmark rows, resealed (anyone can reseal a file)."""
    with h5py.File(path, "a") as root:
        for index in range(count):
            dataset = root["bench"].create_dataset(f"{index:04d}", data=np.ones(4))
            dataset.attrs["key"] = f"ours/{index}x64/float32"
    seal.write_seal(path, session.SCHEMA_VERSION)


def test_bench_rows_at_the_bound_open_and_save_and_one_more_is_refused_by_both(
    model_results, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(layout, "MAX_BENCH_ROWS", 3)  # the bound's logic, at a small size
    message = "bench rows: a session holds at most 3; this one has 4"
    at_bound, past = tmp_path / "three.h5", tmp_path / "four.h5"
    for path, count in ((at_bound, 3), (past, 4)):
        save_session(path, Session.from_check(model_results["float32"]))
        _with_bench_rows(path, count)
    opened = load_session(at_bound, isolated=False)
    assert len(opened.bench_samples) == 3
    save_session(tmp_path / "again.h5", opened)  # what the reader opens, the writer saves
    before = past.read_bytes()
    with pytest.raises(SessionError, match=message):
        load_session(past, isolated=False)
    assert past.read_bytes() == before
    opened.bench_samples["ours/3x64/float32"] = np.ones(4)
    with pytest.raises(SessionError, match=message):
        save_session(tmp_path / "four_saved.h5", opened)
    assert not (tmp_path / "four_saved.h5").exists()


def test_the_real_bound_is_the_benchmark_record_s_row_count() -> None:
    assert layout.bench_rows_problem(layout.MAX_BENCH_ROWS) is None
    assert layout.bench_rows_problem(layout.MAX_BENCH_ROWS + 1) == (
        f"bench rows: a session holds at most {layout.MAX_BENCH_ROWS}; this one has "
        f"{layout.MAX_BENCH_ROWS + 1}"
    )
