"""The window on a user's kernel: File → Open kernel…, the status bar, recent kernels, what is
the bundled kernel's only, Run check / Run kernel on it, its inferred intermediates, the hover
and First divergence (each run in the kernel's child process, on a 4 x 70 float32 input)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from inspector.qt.widgets import dialogs
from oracle.spec import synthetic_problem

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "resources" / "kernels"
TUTORIAL = EXAMPLES / "tutorial.py"
MEAN_OVER_BLOCK = EXAMPLES / "bug_mean_over_block.py"
UNMASKED_STORE = EXAMPLES / "bug_unmasked_store.py"
TIMEOUT_MS = 120_000


def _small_input(window) -> None:
    problem = synthetic_problem(4, 70, seed=0)
    window.input_panel.set_values(
        x=np.array(problem.x), weight=np.array(problem.weight), eps="1e-6", dtype="float32"
    )
    assert window.state.problem.x.shape == (4, 70)
    assert window.state.analysis_current


def _wait_idle(qtbot, window) -> None:
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=TIMEOUT_MS)


def _open(qtbot, window, monkeypatch, path: Path) -> None:
    """File → Open kernel… through the patched dialog; waits for the child's answer."""
    monkeypatch.setattr(dialogs, "choose_open_file", lambda *a: str(path))
    window.menus.open_kernel.trigger()
    _wait_idle(qtbot, window)


def _errors(monkeypatch) -> list[str]:
    shown: list[str] = []
    monkeypatch.setattr(dialogs, "show_error", lambda parent, title, text: shown.append(text))
    return shown


def _run(qtbot, window, start) -> None:
    with qtbot.waitSignal(window.runner.finished, timeout=TIMEOUT_MS):
        assert start()
    _wait_idle(qtbot, window)


def test_open_kernel_names_it_in_the_status_bar_and_disables_what_is_bundled_only(
    qtbot, window, monkeypatch, settings
) -> None:
    _open(qtbot, window, monkeypatch, TUTORIAL)
    spec = window.state.kernel
    assert spec is not None
    assert spec.function == "rms_norm"
    digest = hashlib.sha256(TUTORIAL.read_bytes()).hexdigest()
    assert spec.sha256 == digest
    label = window.kernels.label.text()
    assert label == f"kernel: tutorial.py:rms_norm · sha256 {digest[:12]}"
    assert str(TUTORIAL) in window.kernels.label.toolTip()
    # What is the bundled kernel's only is off and says so.
    assert not window.mutant_panel.switches["unmasked_store"].isEnabled()
    assert "bundled kernel only" in window.mutant_panel.switches["unmasked_store"].text()
    assert not window.compiler_view.compile_button.isEnabled()
    assert "bundled kernel only" in window.compiler_view.facts.text()
    compiler_tab = window.tabs.tabText(window.tabs.indexOf(window.compiler_view))
    assert compiler_tab == "Compiler (bundled kernel only)"
    assert not window.bench_button.isEnabled()
    assert "bundled kernel only" in window.bench_button.text()
    assert "tutorial.py:rms_norm" in window.kernel_in_check.text()
    # Persisted, newest first, and a way back to the bundled kernel.
    assert window.kernels.recent_kernels() == [f"{TUTORIAL}:rms_norm"]
    assert settings.value("recent_kernels") in ([f"{TUTORIAL}:rms_norm"], f"{TUTORIAL}:rms_norm")
    assert window.menus.bundled_kernel.isEnabled()
    window.menus.bundled_kernel.trigger()
    assert window.state.kernel is None
    assert window.kernels.label.text().startswith("kernel: bundled kernel")
    assert window.mutant_panel.switches["unmasked_store"].isEnabled()
    assert window.compiler_view.compile_button.isEnabled()
    assert window.tabs.tabText(window.tabs.indexOf(window.compiler_view)) == "Compiler"


def test_recent_kernels_reopen_in_a_new_window(qtbot, window, monkeypatch, settings, tmp_path):
    from inspector.qt.window import InspectorWindow

    _open(qtbot, window, monkeypatch, TUTORIAL)
    other = InspectorWindow(demo=True, settings=settings, autosave_dir=str(tmp_path / "a2"))
    qtbot.addWidget(other)
    try:
        actions = other.menus.recent_kernels.actions()
        assert [a.text() for a in actions] == [f"{TUTORIAL}:rms_norm"]
        assert other.state.kernel is None  # a new window starts on the bundled kernel
        actions[0].trigger()
        _wait_idle(qtbot, other)
        assert other.state.kernel is not None
        assert other.state.kernel.path == TUTORIAL.resolve()
        assert "tutorial.py:rms_norm" in other.kernels.label.text()
    finally:
        other.state.dirty = False
        other.shutdown()
        other.close()


def test_the_launcher_is_picked_from_the_files_functions(
    qtbot, window, monkeypatch, tmp_path
) -> None:
    path = tmp_path / "two.py"
    path.write_text(
        "import triton\n\n@triton.jit\ndef _device(x):\n    pass\n\n"
        "def first(x, weight, eps, out=None):\n    return x\n\n"
        "def second(x, weight, eps, out=None):\n    return x\n"
    )
    offered: list[list[str]] = []

    def choose(parent, title, label, items):
        offered.append(list(items))
        return "second"

    monkeypatch.setattr(dialogs, "choose_item", choose)
    _open(qtbot, window, monkeypatch, path)
    assert offered == [["first", "second"]]  # the @triton.jit function is no launcher
    assert window.state.kernel.function == "second"
    assert "two.py:second" in window.kernels.label.text()


@pytest.mark.parametrize(
    ("source", "function", "message"),
    [
        ("def rms_norm(x, weight, eps, out=None)\n    return x\n", None, "line 1"),
        (
            "import no_such_module_anywhere\n\ndef rms_norm(x, w, e, out=None):\n    pass\n",
            None,
            "no_such_module_anywhere",
        ),
        ("def rms_norm(x, weight, eps, out=None):\n    return x\n", "no_such", "no_such"),
    ],
    ids=["syntax error", "does not import", "missing function"],
)
def test_a_file_that_is_not_a_kernel_says_why_and_keeps_the_loaded_kernel(
    qtbot, window, monkeypatch, tmp_path, source, function, message
) -> None:
    _open(qtbot, window, monkeypatch, TUTORIAL)
    before = window.state.kernel
    label = window.kernels.label.text()
    path = tmp_path / "broken.py"
    path.write_text(source)
    shown = _errors(monkeypatch)
    if function is None:
        _open(qtbot, window, monkeypatch, path)
    else:
        window.kernels.load(f"{path}:{function}")
        _wait_idle(qtbot, window)
    assert len(shown) == 1
    assert message in shown[0]
    assert "Still proving tutorial.py:rms_norm" in shown[0]
    assert window.state.kernel is before
    assert window.kernels.label.text() == label
    assert "kernel not loaded" in window.status_line.text()
    assert window.kernels.recent_kernels() == [f"{TUTORIAL}:rms_norm"]


def test_run_check_on_the_tutorial_kernel_passes(qtbot, window, monkeypatch) -> None:
    _small_input(window)
    _open(qtbot, window, monkeypatch, TUTORIAL)
    window.kernel_in_check.setChecked(True)
    _run(qtbot, window, window.run_check)
    result = window.state.check_result
    assert result is not None
    assert result.passed, result.failures
    assert result.kernel_source["function"] == "rms_norm"
    assert "check PASSED" in window.verdict.text()
    log = window.summary.toPlainText()
    assert "user kernel" in log
    assert "tutorial.py:rms_norm" in log
    assert result.compile is None  # no bundled compiler output beside the user's kernel
    # The row table's kernel columns are the tutorial kernel's, its rrms inferred.
    model = window.row_table.model
    np.testing.assert_allclose(
        model.column_values("rrms kernel (inferred)"), result.scalar.rrms, rtol=1e-5
    )
    assert "tutorial.py:rms_norm" in window.row_table.note.text()


def test_the_mean_over_block_bug_fails_and_first_divergence_explains_it(
    qtbot, window, monkeypatch
) -> None:
    _small_input(window)
    _open(qtbot, window, monkeypatch, MEAN_OVER_BLOCK)
    window.kernel_in_check.setChecked(True)
    _run(qtbot, window, window.run_check)
    result = window.state.check_result
    assert not result.passed
    log = window.summary.toPlainText()
    assert "kernel fixture non_power_of_two_tail: expected pass, got fail" in log
    assert "check FAILED" in window.verdict.text()
    # The inferred rrms is off by sqrt(BLOCK / width) in every row, beside scalar and tiled.
    model = window.row_table.model
    names = model.column_names
    assert names.index("rrms kernel (inferred)") == names.index("rrms tiled") + 1
    assert names.index("mean² kernel (inferred)") == names.index("mean² tiled") + 1
    np.testing.assert_allclose(
        model.column_values("rrms inferred / scalar"), np.sqrt(128 / 70), rtol=1e-4
    )
    # First divergence: the worst row and lane against the tolerance, the rsqrt step, the
    # signature.
    from inspector.model.kernel_view import tolerance_ratio
    from oracle.compare import TOLERANCES

    ratio = tolerance_ratio(result.kernel.y, result.scalar.y, TOLERANCES["float32"])
    row, lane = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    window.menus.divergence.trigger()
    assert window.grid.selected_row == row
    assert window.grid.marked == (row, lane)
    assert window.row_table.selected_source_rows() == [row]
    assert window.stepper.row == row
    assert window.stepper.current.key == "rsqrt"
    assert window.tabs.currentWidget() is window.stepper
    text = "\n".join(window.divergence.lines)
    assert f"worst lane outside tolerance: row {row}, lane {lane}:" in text
    assert "behaves like a divisor of BLOCK (128) instead of width (70)" in text
    assert "bug_mean_over_block.py:rms_norm" in text
    kernel_line = window.stepper.kernel_line.text()
    assert "inferred" in kernel_line
    assert "part HERE" in kernel_line
    # The hover: x, w, the kernel's y, the expected y and the error of that lane.
    hover = window.grid.describe(int(row), int(lane))
    expected, got = result.scalar.y[row, lane], result.kernel.y[row, lane]
    assert f"w = {float(window.state.problem.weight[lane]):.7g}" in hover
    assert f"y (kernel) = {float(got):.7g}" in hover
    assert f"expected y = {float(expected):.7g}" in hover
    assert f"error = {abs(float(got) - float(expected)):.3g}" in hover


def test_run_kernel_shows_a_user_kernels_out_of_bounds_stores_on_the_grid(
    qtbot, window, monkeypatch
) -> None:
    from inspector.model import viewdata

    _small_input(window)
    _open(qtbot, window, monkeypatch, UNMASKED_STORE)
    _run(qtbot, window, window.run_kernel)
    run = window.state.kernel_run
    assert run is not None
    assert run.path == "user"
    assert run.stores.output
    assert "out-of-bounds store" in window.status_line.text()
    states = window.grid.image.states
    # Each row's tail lanes 70..127 are stored into (the guard after the row).
    assert (states[:, 70:] == viewdata.OOB_WRITE).all()
    assert (states[:, :70] != viewdata.OOB_WRITE).all()
    # Its output agrees: First divergence takes it to its first stray store.
    window.divergence_actions.first_divergence()
    assert "but it stored out of bounds:" in window.divergence.lines[1]
    assert window.grid.marked == (0, 70)
    assert window.stepper.current.key == "store"


def test_first_divergence_runs_the_bundled_kernel_when_it_has_not_run(qtbot, window) -> None:
    _small_input(window)
    assert window.state.kernel_output() is None
    with qtbot.waitSignal(window.runner.finished, timeout=TIMEOUT_MS):
        assert window.divergence_actions.first_divergence()
    _wait_idle(qtbot, window)
    lines = window.divergence.lines
    assert lines[0].startswith("First divergence (the bundled kernel, Run kernel")
    assert lines[1].startswith("no divergence: within tolerance everywhere (worst: row ")
    assert window.grid.marked is None  # nothing parts: no lane outlined as parting


def test_the_screenshot_loads_the_kernel_first_and_refuses_one_that_is_not(
    qtbot, tmp_path, capsys
) -> None:
    from inspector.qt.app import run_app
    from kernels.sandbox.usercode import parse_kernel_spec

    out = tmp_path / "shot.png"
    assert run_app(None, str(out), parse_kernel_spec(f"{TUTORIAL}:rms_norm")) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_anywhere\n")
    assert run_app(None, str(tmp_path / "no.png"), parse_kernel_spec(f"{broken}:rms_norm")) == 2
    assert "no_such_module_anywhere" in capsys.readouterr().err
    assert not (tmp_path / "no.png").exists()


@pytest.mark.parametrize("answer", [True, False])
def test_opening_a_session_of_a_user_kernel_offers_to_load_it(
    qtbot, window, monkeypatch, settings, tmp_path, answer
) -> None:
    from inspector.cli import entry

    session = tmp_path / "tutorial.h5"
    check = ["check", "--quiet", "--kernel", f"{TUTORIAL}:rms_norm", "--out", str(tmp_path / "o"),
             "--session", str(session)]  # fmt: skip
    assert entry.main(check) == 0
    asked: list[str] = []

    def ask(parent, text):
        asked.append(text)
        return answer

    monkeypatch.setattr(dialogs, "ask_load_kernel", ask)
    assert window.files.open_session(str(session))
    _wait_idle(qtbot, window)
    assert asked == [f"{TUTORIAL}:rms_norm"]
    loaded = window.state.kernel
    assert (loaded is not None and loaded.path == TUTORIAL) is answer


def test_run_kernel_on_the_bundled_kernel_shows_its_exact_rrms(qtbot, window) -> None:
    # Run kernel asks the bundled kernel for its rstd output: the row table gets the exact
    # rrms beside the inferred one, and the stepper's rsqrt line names it. A user kernel has
    # no such output (test above: inferred only).
    _small_input(window)
    _run(qtbot, window, window.run_kernel)
    run = window.state.kernel_run
    assert run.rstd is not None
    model = window.row_table.model
    names = model.column_names
    at = names.index("rrms kernel (inferred)")
    assert names[at + 1] == "rrms kernel (rstd, exact)"
    np.testing.assert_array_equal(model.column_values("rrms kernel (rstd, exact)"), run.rstd)
    np.testing.assert_allclose(run.rstd, window.state.reference.rrms, rtol=1e-6)
    assert window.stepper.go_to_key("rsqrt")
    assert "its own rrms (rstd output, exact)" in window.stepper.kernel_line.text()
