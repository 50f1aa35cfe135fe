"""lab.rule_compare: this tree's layout rule against another revision's kernels/layout.py."""

from __future__ import annotations

from pathlib import Path

from lab import rule_compare

LAYOUT = Path(__file__).resolve().parents[2] / "kernels" / "layout.py"


def test_the_rule_agrees_with_its_own_source(capsys) -> None:
    assert rule_compare.main([str(LAYOUT), "--jobs", "1", "--max-width", "40"]) == 0
    assert "0 differing" in capsys.readouterr().out


def test_a_rule_that_moved_one_threshold_is_caught(tmp_path, capsys) -> None:
    source = LAYOUT.read_text()
    assert "ODD_LOOP_ROWS = 8192" in source
    moved = tmp_path / "old_layout.py"
    # The short-row bound at 2 KiB of tile moved to 1 KiB: fp32 rows of 257-512 lanes change.
    moved.write_text(source.replace("p.row_bytes <= 2 * KiB", "p.row_bytes <= 1 * KiB", 1))
    assert rule_compare.main([str(moved), "--jobs", "1", "--max-width", "300"]) == 1
    out = capsys.readouterr().out
    assert "differs: " in out
    assert "x257 itemsize=4" in out


def test_every_differing_case_is_counted_and_the_first_20_listed(tmp_path, capsys) -> None:
    source = LAYOUT.read_text()
    moved = tmp_path / "old_layout.py"
    moved.write_text(source.replace("p.row_bytes <= 2 * KiB", "p.row_bytes <= 1 * KiB", 1))
    assert rule_compare.main([str(moved), "--jobs", "1", "--max-width", "300"]) == 1
    out = capsys.readouterr().out
    listed = [line for line in out.splitlines() if line.startswith("differs: ")]
    differing = int(out.rsplit(" cases compared, ", 1)[1].split(" differing")[0])
    assert len(listed) == 20
    # fp32 widths 257-300, each at several row counts and two SM counts.
    assert differing > 20 * 4
