"""What a run writes to, as it stood before its kernel ran: every kind of change is named, and an
untouched folder says nothing."""

from __future__ import annotations

import os

from inspector.records import untouched


def test_an_untouched_folder_and_file_say_nothing(tmp_path):
    (tmp_path / "receipt.json").write_text("{}")
    session = tmp_path / "s.h5"
    before = untouched.snapshot(tmp_path, session, None)
    assert untouched.changes(before, tmp_path, session, None) == []


def test_each_change_is_named(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for name in ("kept", "removed", "modified", "linked"):
        (out / name).write_text(name)
    os.symlink(tmp_path / "a", out / "relinked")
    written = ("kept", "removed", "modified", "linked", "relinked", "planted", "new\nline")
    before = untouched.snapshot(out, names=written)
    (out / "removed").unlink()
    os.utime(out / "modified", ns=(1, 1))
    (out / "linked").unlink()
    os.symlink(tmp_path / "victim", out / "linked")
    (out / "relinked").unlink()
    os.symlink(tmp_path / "b", out / "relinked")
    os.symlink(tmp_path / "victim", out / "planted")
    (out / "new\nline").write_text("")
    assert untouched.changes(before, out, names=written) == [
        "linked: now a symbolic link",
        "modified: replaced or modified",
        "new\\nline: new",
        "planted: a new symbolic link",
        "relinked: relinked",
        "removed: removed",
    ]


def test_a_folder_replaced_by_a_link_is_named(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    before = untouched.snapshot(out)
    out.rmdir()
    os.symlink(tmp_path, out)
    assert untouched.changes(before, out) == ["out: now a symbolic link"]


def test_only_what_the_run_writes_is_compared_in_a_shared_folder(tmp_path):
    names = ("receipt.json", "receipt.csv")
    before = untouched.snapshot(tmp_path, names=names)
    (tmp_path / "someone_elses.log").write_text("a busy /tmp")
    (tmp_path / "receipts.json").write_text("not one of ours")
    assert untouched.changes(before, tmp_path, names=names) == []
    os.symlink(tmp_path / "victim", tmp_path / ".receipt.csv.prev")  # beside a name it writes
    (tmp_path / ".rmsnorm-publishing").write_text("receipt.json\n")  # the tool's own journal
    assert untouched.changes(before, tmp_path, names=names) == [
        ".receipt.csv.prev: a new symbolic link",
        ".rmsnorm-publishing: new",
    ]
