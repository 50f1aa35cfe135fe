"""Where ``check`` writes: an empty ``--out`` refused, one run at a time on an ``--out`` folder or
a ``--session`` file (a second is refused at once, naming the option), error lines cut."""

from __future__ import annotations

import pytest

from inspector.cli import entry
from inspector.cli.guards import MAX_LINE_CHARS, UsageError, one_line, run_locks


def _usage(argv: list[str], capsys) -> str:
    assert entry.main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    return err


@pytest.mark.parametrize("out", ["", "   "])
def test_an_empty_out_is_refused(out: str, capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    err = _usage(["check", "--model-only", "--out", out], capsys)
    assert "out: empty; expected a folder" in err
    assert list(tmp_path.iterdir()) == []  # nothing written into the current folder


def test_a_second_run_on_the_same_out_is_refused_while_the_first_holds_it(tmp_path, capsys) -> None:
    out = tmp_path / "receipts"
    with run_locks(out, None):  # stands in for a run in progress (another process in real use)
        err = _usage(["check", "--model-only", "--quiet", "--out", str(out)], capsys)
    assert f"out: another run is writing {out}" in err
    assert sorted(p.name for p in out.iterdir()) == [".rmsnorm-inspector.lock"]
    # Released: the next run writes its pair.
    assert entry.main(["check", "--model-only", "--quiet", "--out", str(out)]) == 0
    assert {"receipt.json", "receipt.csv"} <= {p.name for p in out.iterdir()}


def test_a_second_run_on_the_same_session_is_refused(tmp_path, capsys) -> None:
    session = tmp_path / "s.h5"
    with run_locks(tmp_path / "other", session):
        err = _usage(
            ["check", "--model-only", "--quiet", "--out", str(tmp_path / "o"), "--session",
             str(session)],
            capsys,
        )  # fmt: skip
    assert f"session: another run is writing {session}" in err
    assert not session.exists()


def test_locks_are_per_process_and_released_on_exit(tmp_path) -> None:
    # flock is per open file: a second acquisition in this process is refused too, and after
    # the block the lock is free again.
    held = run_locks(tmp_path, None)
    held.__enter__()
    try:
        with pytest.raises(UsageError, match="another run is writing"), run_locks(tmp_path, None):
            pass
    finally:
        held.__exit__(None, None, None)
    with run_locks(tmp_path, None):
        pass


def test_one_line_cuts_a_huge_message_and_says_how_long_it_was() -> None:
    text = "x: " + "9" * 10_000_000
    line = one_line(text)
    assert len(line) <= MAX_LINE_CHARS
    assert line.endswith(f"({len(text)} characters in all)")
    assert one_line("a\n  b") == "a b"
