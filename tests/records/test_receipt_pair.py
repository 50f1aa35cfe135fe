"""Receipt pairs are published as pairs: a failed or killed write leaves the previous pair or the
new one, never a JSON of one run beside the CSV of another."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inspector.records import atomic
from inspector.records.receipts import receipt

ROOT = Path(__file__).resolve().parents[2]


def _pair(folder: Path) -> tuple[dict, bytes]:
    return (
        json.loads((folder / receipt.JSON_NAME).read_text(encoding="utf-8")),
        (folder / receipt.CSV_NAME).read_bytes(),
    )


def _consistent(folder: Path) -> bool:
    data, csv_bytes = _pair(folder)
    return data["export_check"]["files"]["csv_sha256"] == hashlib.sha256(csv_bytes).hexdigest()


def test_a_failure_between_the_two_renames_restores_the_previous_pair(
    model_results, tmp_path, monkeypatch
) -> None:
    receipt.write_receipts(model_results["float32"], tmp_path)
    before = _pair(tmp_path)
    real_replace = os.replace

    def second_fails(src, dst):
        # The journal and the CSV go in; the JSON's rename fails (a full disk, say).
        if Path(dst).name == receipt.JSON_NAME and not Path(src).name.endswith(".prev"):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", second_fails)
    with pytest.raises(receipt.ReceiptError, match="No space left on device"):
        receipt.write_receipts(model_results["bfloat16"], tmp_path)
    monkeypatch.setattr(atomic.os, "replace", real_replace)
    assert _pair(tmp_path) == before  # the CSV already renamed in was rolled back
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    assert leftovers == [receipt.CSV_NAME, receipt.JSON_NAME]  # no journal, link or temp


class _Killed(BaseException):
    """A kill: publish_pair's cleanup catches BaseException only around its renames."""


def _publish_killed_in(stage: dict, monkeypatch, owner, name: str, killer) -> None:
    """Publish ``stage`` with ``owner.name`` replaced by ``killer(real)``, which raises
    :class:`_Killed` where the kill lands; the real one is back afterwards."""
    monkeypatch.setattr(owner, name, killer(getattr(owner, name)))
    with pytest.raises(_Killed):
        atomic.publish_pair(stage)
    monkeypatch.undo()


def test_a_kill_as_the_journal_is_written_keeps_the_previous_pair(
    model_results, tmp_path, monkeypatch
) -> None:
    """The state a kill just after the journal lands leaves (links made, nothing renamed in):
    recovery gives every target its link back; none is taken for a file that did not exist.
    A kill while the links are made leaves no journal, and the pair as it was."""
    receipt.write_receipts(model_results["float32"], tmp_path)
    before = _pair(tmp_path)
    targets = [tmp_path / receipt.CSV_NAME, tmp_path / receipt.JSON_NAME]
    stage = {target: target.with_name(f".{target.name}.staged") for target in targets}
    for target, temp in stage.items():
        temp.write_bytes(b"new " + target.name.encode())

    def after_the_journal(real):
        def write(path, text):
            real(path, text)
            raise _Killed

        return write

    _publish_killed_in(stage, monkeypatch, atomic, "atomic_write_text", after_the_journal)
    assert (tmp_path / atomic.JOURNAL_NAME).exists()
    assert atomic.recover_pair(tmp_path)
    assert _pair(tmp_path) == before

    def at_the_second_link(real):
        calls = []

        def link(src, dst):
            calls.append(dst)
            if len(calls) == 2:
                raise _Killed
            return real(src, dst)

        return link

    _publish_killed_in(stage, monkeypatch, atomic.os, "link", at_the_second_link)
    assert not (tmp_path / atomic.JOURNAL_NAME).exists()
    assert not atomic.recover_pair(tmp_path)
    assert _pair(tmp_path) == before


def test_a_journal_left_by_a_killed_publish_rolls_back_at_the_next_write(
    model_results, tmp_path
) -> None:
    receipt.write_receipts(model_results["float32"], tmp_path)
    old = _pair(tmp_path)
    # The state a kill between the renames leaves: journal and links, the new CSV in place.
    csv_path = tmp_path / receipt.CSV_NAME
    (tmp_path / atomic.JOURNAL_NAME).write_text("receipt.csv\nreceipt.json\n")
    for name in (receipt.CSV_NAME, receipt.JSON_NAME):
        os.link(tmp_path / name, tmp_path / f".{name}.prev")
    csv_path.unlink()
    csv_path.write_bytes(b"a,b\n1,2\n")
    assert not _consistent(tmp_path)
    from inspector.records.receipts import verify

    problems = verify.verify_receipts(tmp_path / receipt.JSON_NAME).problems
    assert any(p.startswith("receipt pair: a write into") for p in problems)
    assert atomic.recover_pair(tmp_path)
    assert _pair(tmp_path) == old
    assert not atomic.recover_pair(tmp_path)  # nothing left to roll back


_WRITER = """
import sys
from pathlib import Path
from inspector.check import pipeline
from inspector.records.receipts import receipt
from oracle.spec import synthetic_problem

folder = Path(sys.argv[1])
config = pipeline.CheckConfig(run_kernel=False)
results = [pipeline.run_check(synthetic_problem(3, 37, seed=s), config) for s in (1, 2)]
receipt.write_receipts(results[0], folder)
print("ready", flush=True)
i = 0
while True:
    receipt.write_receipts(results[i % 2], folder)
    i += 1
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs kill -9")
def test_kill_9_at_any_moment_leaves_a_whole_pair(tmp_path) -> None:
    # A writer rewriting the pair in a loop is killed at spread-out moments; after each kill
    # the next writer's recovery must leave a consistent pair (the old one or the new one).
    for trial in range(8):
        folder = tmp_path / f"t{trial}"
        writer = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(folder)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        try:
            assert writer.stdout is not None
            assert writer.stdout.readline().strip() == b"ready"
            time.sleep(0.005 + 0.013 * trial)
        finally:
            writer.send_signal(signal.SIGKILL)
            writer.wait()
            if writer.stdout is not None:
                writer.stdout.close()
        atomic.recover_pair(folder)
        assert _consistent(folder), f"trial {trial}: a mixed pair"
