"""The check log's reading of the report: each line's verdict by its words, and the sections."""

from __future__ import annotations

import pytest

from inspector.model.check_log import (
    FAIL,
    NEUTRAL,
    PASS,
    WARN,
    entry_section,
    line_state,
    report_sections,
)


@pytest.mark.parametrize(
    ("line", "state"),
    [
        ("check PASSED — mode interpreter, device cpu", PASS),
        ("check FAILED — mode compiled, device NVIDIA H200", FAIL),
        ("check NOT JUDGED — mode interpreter, device cpu", WARN),
        ("kernel vs scalar: pass (float32: atol=1e-05, rtol=2e-05) max_abs=4.768e-07", PASS),
        ("kernel vs scalar: FAIL (float32: atol=1e-05, rtol=2e-05) max_abs=1.496e+00", FAIL),
        ("kernel out-of-bounds stores: 0", NEUTRAL),
        ("kernel out-of-bounds stores: 56", FAIL),
        ("fixtures: model passed 40/40 runnable, the validator refused 8/8 malformed", PASS),
        ("fixtures: model passed 40/40 runnable; kernel passed 38/40 runnable", FAIL),
        ("model mutant missing_square: killed by hand_checkable, zero_row", PASS),
        ("kernel mutant half_accumulation: SURVIVED", FAIL),
        ("batch invariance: NOT bit-identical: 1 of 64 row(s) differ by up to 3 ulp", FAIL),
        ("compute-sanitizer memcheck: 0 errors over 12 launches", PASS),
        ("coverage: 242 reachable launch configurations; ...; every one proven", PASS),
        ("timing: not measured: the Triton interpreter makes no timing claims", WARN),
        ("NOT JUDGED on this machine (2 run(s): a, b): the interpreter", WARN),
        ("FAILURE: kernel fails fixture width_70", FAIL),
        ("not required to pass: NOT batch-invariant: 1 row(s), ≤ 3 ulp", WARN),
        ("check failed: OutOfMemoryError: CUDA out of memory", FAIL),
        ("input: demo: 4 rows x 70, row_stride 72, float32, eps 1e-06", NEUTRAL),
    ],
)
def test_each_line_is_judged_by_its_words(line: str, state: str) -> None:
    assert line_state(line) == state


def test_the_report_groups_into_its_sections_in_order() -> None:
    lines = [
        "check PASSED — mode interpreter, device cpu",
        "input: demo",
        "kernel: the bundled kernel",
        "device: cpu",
        "tiled model vs scalar: output pass (float32)",
        "kernel vs scalar: pass (float32)",
        "batch invariance: bit-identical: 64 row(s)",
        "fixtures: model passed 40/40 runnable",
        "model mutant missing_square: killed by zero_row",
        "  a continuation line of the mutant above",
        "traffic (modeled, not measured): read 1 B",
        "FAILURE: none really",
    ]
    sections = report_sections(lines)
    titles = [section.title for section in sections]
    assert titles == [
        "verdict",
        "input, kernel, device",
        "comparisons",
        "evidence",
        "fixtures",
        "mutants",
        "traffic",
        "failures",
    ]
    mutants = sections[titles.index("mutants")]
    assert mutants.lines[-1].startswith("  a continuation")  # joins the section before it
    assert sections[titles.index("failures")].state == FAIL
    assert sum(len(section.lines) for section in sections) == len(lines)


def test_a_later_entry_is_a_section_titled_by_its_first_line() -> None:
    entry = entry_section("First divergence (bug.py:rms_norm):\nkernel vs scalar: FAIL (x)\n")
    assert entry.title == "First divergence (bug.py:rms_norm):"
    assert entry.lines == ("kernel vs scalar: FAIL (x)",)
    assert entry.state == FAIL
    single = entry_section("kernel (interpreter, cpu): pass (float32)")
    assert single.lines == ()
    assert single.state == PASS
