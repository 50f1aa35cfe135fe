"""Fuzz every input path of the window (hypothesis, bounded): the input fields, ``.npy`` import
and session open. Each bad input gets one clear error naming its field; nothing raises, hangs
or writes a file; the window keeps its last good state."""

from __future__ import annotations

import hashlib
import io
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from inspector.check import pipeline
from inspector.qt.widgets import dialogs
from inspector.qt.widgets.input_panel import InputPanel
from inspector.records.diff import session_differences
from inspector.records.sessions.session import Session, SessionError, load_session, save_session
from oracle.spec import ValidationError, make_problem, synthetic_problem

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

NUMBERISH = " 0123456789.,;eE+-_naifNIFx\n\t"
SPECIAL = st.sampled_from(
    [
        "",
        " ",
        "0",
        "-1",
        "1e400",
        "nan",
        "inf",
        "-inf",
        "1e-12",
        "1e-13",
        "0.01",
        "0.010001",
        "4096",
        "4097",
        "65536",
        "65537",
        "1_0",
        "0x10",
        "١٢",  # Arabic-Indic digits: float() reads them
        "2.5",
        "1e6",
        "1e6, 1e6",
        "3, 4",
        "3 4; 5 6",
        "3,,4",
        "; ;",
        "\x00",
        "3; 4, 5",
    ]
)
TEXT = st.one_of(SPECIAL, st.text(NUMBERISH, max_size=24), st.text(max_size=12))
LINE_FIELDS = ("rows", "width", "eps", "row_stride")
TEXT_FIELDS = ("x", "weight")


def _set_field(panel: InputPanel, name: str, text: str) -> None:
    widget = panel.field_widget(name)
    if name in TEXT_FIELDS:
        widget.setPlainText(text)
    else:
        widget.setText(text)


def _expected(panel: InputPanel) -> Exception | None:
    """The oracle's own verdict on the panel's fields (the same call the panel makes)."""
    try:
        make_problem(
            panel.x_edit.toPlainText(),
            panel.w_edit.toPlainText(),
            eps=panel.eps_edit.text(),
            dtype=panel.dtype_combo.currentText(),
            row_stride=panel.stride_edit.text().strip() or None,
            rows=panel.rows_edit.text().strip() or None,
            width=panel.width_edit.text().strip() or None,
        )
    except ValidationError as exc:
        return exc
    return None


@FUZZ
@given(edits=st.lists(st.tuples(st.sampled_from(LINE_FIELDS + TEXT_FIELDS), TEXT), max_size=4))
def test_window_fields_are_valid_or_show_the_oracles_message(qtbot, window, edits) -> None:
    panel = window.input_panel
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=30000)
    panel.set_values(x="3, 4; 1, -2", weight="0.5, -2", eps="1e-6", rows=2, width=2)
    assert window.state.problem is not None
    good_tiled, good_reference = window.state.tiled, window.state.reference
    good_problem = window.state.problem
    for name, text in edits:
        _set_field(panel, name, text)
    problem = panel.validate()
    expected = _expected(panel)
    if expected is None:
        assert problem is not None
        assert window.state.problem is problem
        assert panel.error is None
        # A large valid input (rows * row_stride > SYNC_ELEMENTS) is analysed on the worker
        # first; Run is enabled once that is done.
        qtbot.waitUntil(lambda: not window.runner.busy, timeout=30000)
        assert window.run_check_button.isEnabled()
    else:
        assert problem is None
        assert window.state.problem is None
        message = str(expected)
        assert message.startswith(expected.field)
        assert panel.message.text() == message
        assert panel.field_error(expected.field) == message
        assert not window.run_check_button.isEnabled()
        assert not window.run_check()
        assert message in window.status_line.text()
        # The last good analysis stays on screen.
        assert window.state.tiled is good_tiled
        assert window.state.reference is good_reference
        assert window.grid.image.states is not None
        assert good_problem is not None
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=30000)


# ------------------------------------------------------------------------------ .npy import


def _npy_bytes(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def _header_only(shape: tuple[int, ...], descr: str = "<f8", tail: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buffer, {"descr": descr, "fortran_order": False, "shape": shape}
    )
    return buffer.getvalue() + tail


NUMERIC_DTYPES = st.sampled_from(
    ["<f8", "<f4", "<f2", ">f8", "<i4", "<i8", "|u1", "<u8", "|b1", "<c16", "<U3", "|S2", "<M8[s]"]
)


@st.composite
def npy_files(draw) -> bytes:
    kind = draw(st.integers(0, 6))
    if kind == 0:  # any bytes at all
        return draw(st.binary(max_size=600))
    if kind == 1:  # a real array of any small shape and dtype (NaN and inf included)
        array = draw(
            hnp.arrays(
                NUMERIC_DTYPES, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)
            )
        )
        return _npy_bytes(array)
    if kind == 2:  # pickled object arrays: must be refused (allow_pickle=False)
        payload = draw(st.sampled_from([[{"a": 1}, None], ["3", "4"], [1.0, 2.0]]))
        return _npy_bytes(np.array(payload, dtype=object), allow_pickle=True)
    if kind == 3:  # a header declaring a huge shape, almost no data
        shape = draw(
            st.sampled_from([(10**12,), (4096, 65537), (2**31, 2), (5000, 5000), (1, 2**40)])
        )
        return _header_only(shape, tail=b"\x00" * draw(st.integers(0, 64)))
    if kind == 4:  # a valid array, then damaged bytes
        data = bytearray(_npy_bytes(np.arange(12, dtype=np.float32).reshape(3, 4)))
        for position, value in draw(
            st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)), max_size=6)
        ):
            data[position] = value
        return bytes(data[: draw(st.integers(0, len(data)))])
    if kind == 5:  # out-of-range values
        value = draw(st.sampled_from([1e7, -1e300, np.nan, np.inf, 70000.0]))
        return _npy_bytes(np.full((2, 3), value))
    # a valid shape beyond the declared limits (rows or width or elements)
    shape = draw(st.sampled_from([(4097, 1), (1, 65537), (2049, 2049)]))
    return _npy_bytes(np.zeros(shape, dtype=np.uint8))


def _panel_state(panel: InputPanel) -> tuple:
    return (
        panel.problem,
        panel.rows_edit.text(),
        panel.width_edit.text(),
        panel.eps_edit.text(),
        panel.stride_edit.text(),
        panel.dtype_combo.currentText(),
        panel.x_edit.toPlainText(),
        panel.w_edit.toPlainText(),
    )


@FUZZ
@given(content=npy_files())
def test_npy_import_is_a_valid_x_or_one_error_and_nothing_changes(
    qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    panel = InputPanel()
    qtbot.addWidget(panel)
    panel.load_fixture("hand_checkable")
    folder = tmp_path / f"npy_{hashlib.sha256(content).hexdigest()[:16]}"
    folder.mkdir(exist_ok=True)
    path = folder / "x.npy"
    path.write_bytes(content)
    monkeypatch.setattr(dialogs, "choose_open_file", lambda *a: str(path))
    before = _panel_state(panel)
    panel.import_npy()
    assert sorted(os.listdir(folder)) == ["x.npy"]  # nothing written
    assert path.read_bytes() == content  # nor changed
    if panel.problem is not before[0] and panel.problem is not None:
        # Accepted: exactly the file's numbers, 1-D or 2-D, within the limits.
        array = np.load(path, allow_pickle=False)
        assert array.ndim in (1, 2)
        accepted = panel.problem
        expected = make_problem(
            np.atleast_2d(array).astype(np.float64),
            np.array(accepted.weight),
            eps=accepted.eps,
            dtype=accepted.dtype,
        )
        np.testing.assert_array_equal(accepted.x, expected.x)  # rounded to the dtype alike
        assert panel.error is None
        return
    assert _panel_state(panel) == before
    error = panel.field_error("x")
    assert error
    assert error.startswith("x: ")
    assert panel.message.text() == error
    assert panel.problem is before[0]  # still valid: Run stays possible


def test_npy_import_refuses_pickles_without_unpickling(
    qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Bomb:
        def __reduce__(self):
            return (Path(tmp_path / "pwned").touch, ())

    path = tmp_path / "bomb.npy"
    path.write_bytes(_npy_bytes(np.array([Bomb(), 1], dtype=object), allow_pickle=True))
    panel = InputPanel()
    qtbot.addWidget(panel)
    panel.load_fixture("hand_checkable")
    monkeypatch.setattr(dialogs, "choose_open_file", lambda *a: str(path))
    panel.import_npy()
    assert not (tmp_path / "pwned").exists()
    assert "pickle" in panel.field_error("x").lower() or "object" in panel.field_error("x")


# ------------------------------------------------------------------------------ session open


@pytest.fixture(scope="module")
def base_session(tmp_path_factory) -> tuple[bytes, Session]:
    result = pipeline.run_check(
        synthetic_problem(3, 37, seed=11, row_stride=40), pipeline.CheckConfig(run_kernel=False)
    )
    path = tmp_path_factory.mktemp("fuzz_session") / "base.h5"
    session = Session.from_check(result)
    save_session(path, session)
    return path.read_bytes(), load_session(path)


def _load_with_timeout(path: Path, seconds: float = 20.0) -> Session | Exception:
    box: list = []

    def target() -> None:
        try:
            box.append(load_session(path))
        except BaseException as exc:  # reported to the test below, whatever it is
            box.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"load_session hung on {path}"
    return box[0]


@st.composite
def damage(draw, size: int) -> tuple[str, list]:
    kind = draw(st.sampled_from(["flip", "truncate", "zero", "header"]))
    if kind == "truncate":
        return kind, [draw(st.integers(0, size - 1))]
    if kind == "zero":
        start = draw(st.integers(0, size - 1))
        return kind, [start, draw(st.integers(1, 2048))]
    limit = 1023 if kind == "header" else size - 1  # the seal and HDF5 superblock live here
    flips = draw(st.lists(st.tuples(st.integers(0, limit), st.integers(1, 255)), min_size=1))
    return kind, flips[:8]


def _apply(source: bytes, kind: str, spec: list) -> bytes:
    data = bytearray(source)
    if kind == "truncate":
        return bytes(data[: spec[0]])
    if kind == "zero":
        start, count = spec
        end = min(len(data), start + count)
        data[start:end] = bytes(end - start)
        return bytes(data)
    for position, xor in spec:
        data[position % len(data)] ^= xor
    return bytes(data)


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_session_open_refuses_damage_or_loads_an_equal_session(
    qtbot, window, tmp_path, base_session, data
) -> None:
    source, original = base_session
    kind, spec = data.draw(damage(len(source)))
    damaged = _apply(source, kind, spec)
    assume(damaged != source)
    path = tmp_path / f"damaged_{hashlib.sha256(damaged).hexdigest()[:16]}.h5"
    path.write_bytes(damaged)
    outcome = _load_with_timeout(path)
    assert path.read_bytes() == damaged
    if isinstance(outcome, Session):
        assert session_differences(original, outcome) == []
        return
    assert isinstance(outcome, SessionError), f"{type(outcome).__name__}: {outcome}"
    assert str(path) in str(outcome)
    # The window: the error is shown, its state stays, the file stays untouched.
    problem, tiled, title = window.state.problem, window.state.tiled, window.windowTitle()
    assert not window.files.open_session(str(path))
    assert window.state.problem is problem
    assert window.state.tiled is tiled
    assert window.windowTitle() == title
    assert window.status_line.text().startswith("open failed")
    assert path.read_bytes() == damaged
