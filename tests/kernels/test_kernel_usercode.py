"""A user's kernel (FILE.py:FUNCTION) in its own process: parsed specs, results, and every way a
kernel can misbehave (a crash, a hang, an exception, stores past its rows or into x, a launcher
without out=) reported as a finding while this process carries on."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kernels.sandbox.process import STDERR_TAIL
from kernels.sandbox.usercode import KernelSpecError, UserKernel, parse_kernel_spec

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "resources" / "kernels" / "tutorial.py"
POISON = -3072.0


def _inputs(rows=3, width=70, seed=0):
    generator = np.random.default_rng(seed)
    x = generator.standard_normal((rows, width)).astype(np.float32)
    w = generator.standard_normal(width).astype(np.float32)
    return x, w


def _reference(x, w, eps):
    x64 = x.astype(np.float64)
    return x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + eps) * w


def _run(kernel, x, w, stride=75, guard=128):
    return kernel.run(x, w, eps=1e-6, dtype="float32", x_stride=stride, poison=POISON, guard=guard)


@pytest.fixture(scope="module")
def bad_file(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("kernels")
    (folder / "tutorial.py").write_text(TUTORIAL.read_text())
    path = folder / "bad.py"
    path.write_text(
        textwrap.dedent(
            """
            import os, time
            from tutorial import rms_norm as good  # a sibling import, as when run itself

            def aborts(x, weight, eps, out=None):
                os.abort()

            def hangs(x, weight, eps, out=None):
                time.sleep(600)

            def raises(x, weight, eps, out=None):
                raise RuntimeError("no kernel today")

            def no_out(x, weight, eps):
                return good(x, weight, eps)

            def writes_past_rows(x, weight, eps, out=None):
                y = good(x, weight, eps, out=out)
                flat = out.as_strided((out.shape[0] * out.stride(0) + 3,), (1,))
                flat[out.shape[1]] = 1.0  # the padding after row 0
                flat[-1] = 2.0  # 3 elements past the last row's stride
                return y

            def writes_x(x, weight, eps, out=None):
                y = good(x, weight, eps, out=out)
                x[0, 0] = 5.0
                return y

            def wrong_shape(x, weight, eps, out=None):
                return x[:, :3]

            def chatty(x, weight, eps, out=None):
                print("debug " * 50_000)  # 300 KB a call, past a pipe's 64 KiB buffer
                os.write(2, b"x" * 200_000)  # C's stderr too
                return good(x, weight, eps, out=out)

            def aborts_loudly(x, weight, eps, out=None):
                print("noise " * 50_000)
                print("LAST WORDS", flush=True)
                os.abort()

            NOT_CALLABLE = 3
            """
        )
    )
    return path


def test_the_tutorial_kernel_matches_the_reference_with_its_guards_untouched() -> None:
    x, w = _inputs()
    with UserKernel(parse_kernel_spec(f"{TUTORIAL}:rms_norm")) as kernel:
        run = _run(kernel, x, w)
        again = _run(kernel, x[:1], w, stride=70, guard=128)  # the same child, a packed row
    assert run.outcome == "ok", run.detail
    np.testing.assert_allclose(run.y, _reference(x, w, 1e-6), rtol=2e-6, atol=1e-6)
    assert run.oob_writes == ()
    assert run.x_writes == ()
    assert run.refused_out == ""
    assert again.outcome == "ok"
    np.testing.assert_allclose(again.y, _reference(x[:1], w, 1e-6), rtol=2e-6, atol=1e-6)


def test_a_crash_is_a_finding_and_the_next_run_starts_a_new_child(bad_file) -> None:
    x, w = _inputs()
    with UserKernel(parse_kernel_spec(f"{bad_file}:aborts")) as kernel:
        first = _run(kernel, x, w)
        second = _run(kernel, x, w)
    assert first.outcome == "crashed"
    assert "signal SIGABRT" in first.detail
    assert second.outcome == "crashed"  # a fresh child, the same kernel, the same finding


def test_a_hang_is_a_timeout(bad_file) -> None:
    x, w = _inputs()
    with UserKernel(parse_kernel_spec(f"{bad_file}:hangs"), run_timeout_s=3) as kernel:
        run = _run(kernel, x, w)
    assert run.outcome == "timeout"
    assert run.detail == "no result within 3 s"


def test_a_kernel_that_prints_runs_as_one_that_does_not(bad_file, tmp_path) -> None:
    # Its prints go to a pipe this process drains: unread, the child would block once the
    # pipe's buffer is full and the run would end as a timeout.
    x, w = _inputs()
    with UserKernel(parse_kernel_spec(f"{bad_file}:chatty"), run_timeout_s=60) as kernel:
        runs = [_run(kernel, x, w) for _ in range(3)]
    assert [run.outcome for run in runs] == ["ok"] * 3, runs[0].detail
    np.testing.assert_allclose(runs[2].y, _reference(x, w, 1e-6), rtol=2e-6, atol=1e-6)
    path = tmp_path / "loud.py"
    path.write_text("print('hello ' * 50_000)\nfrom bad import chatty\n")
    with UserKernel(
        parse_kernel_spec(f"{path}:chatty"), pythonpath_first=str(bad_file.parent)
    ) as kernel:
        assert _run(kernel, x, w).outcome == "ok"


def test_a_crash_after_many_prints_keeps_only_the_tail_of_its_stderr(bad_file) -> None:
    x, w = _inputs()
    with UserKernel(parse_kernel_spec(f"{bad_file}:aborts_loudly"), run_timeout_s=60) as kernel:
        run = _run(kernel, x, w)
    assert run.outcome == "crashed"
    assert "signal SIGABRT" in run.detail
    assert run.detail.rstrip().endswith("LAST WORDS")
    assert len(run.detail) < STDERR_TAIL + 200


def test_an_exception_is_an_error_with_its_message(bad_file) -> None:
    x, w = _inputs()
    with UserKernel(parse_kernel_spec(f"{bad_file}:raises")) as kernel:
        run = _run(kernel, x, w)
        shape = UserKernel(parse_kernel_spec(f"{bad_file}:wrong_shape"))
    assert (run.outcome, run.detail) == ("error", "RuntimeError: no kernel today")
    with shape:
        wrong = _run(shape, x, w)
    assert wrong.outcome == "error"
    assert "returned shape (3, 3); x is (3, 70)" in wrong.detail


def test_stores_past_the_rows_and_into_x_are_reported_by_address(bad_file) -> None:
    x, w = _inputs()
    with UserKernel(parse_kernel_spec(f"{bad_file}:writes_past_rows")) as kernel:
        past = _run(kernel, x, w, stride=75, guard=128)
    with UserKernel(parse_kernel_spec(f"{bad_file}:writes_x")) as kernel:
        into_x = _run(kernel, x, w)
    # guard 128 + row 0's 70 elements; guard 128 + 3 rows * 75 + 2.
    assert past.oob_writes == (128 + 70, 128 + 3 * 75 + 2)
    assert into_x.x_writes == (128,)
    assert into_x.oob_writes == ()


def test_a_launcher_without_out_is_checked_on_its_output_and_says_so(bad_file) -> None:
    x, w = _inputs()
    with UserKernel(parse_kernel_spec(f"{bad_file}:no_out")) as kernel:
        run = _run(kernel, x, w)
    assert run.outcome == "ok"
    assert "unexpected keyword argument 'out'" in run.refused_out
    np.testing.assert_allclose(run.y, _reference(x, w, 1e-6), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("NOT_CALLABLE", "NOT_CALLABLE is a int, not a function"),
        ("missing", "defines no 'missing'"),
    ],
)
def test_a_file_without_the_launcher_is_refused_on_start(bad_file, function, message) -> None:
    with pytest.raises(KernelSpecError, match=message):
        UserKernel(parse_kernel_spec(f"{bad_file}:{function}")).__enter__()


def test_a_file_that_does_not_import_is_refused_with_its_error(tmp_path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def rms_norm(:\n")
    with pytest.raises(KernelSpecError, match="SyntaxError"):
        UserKernel(parse_kernel_spec(f"{path}:rms_norm")).__enter__()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kernel.py", "--kernel must be FILE.py:FUNCTION; got 'kernel.py'"),
        (":rms_norm", "--kernel must be FILE.py:FUNCTION"),
        ("{tmp}/k.py:1abc", "--kernel FUNCTION must be a Python identifier; got '1abc'"),
        ("{tmp}/k.py:a.b", "--kernel FUNCTION must be a Python identifier; got 'a.b'"),
        ("{tmp}/k.txt:rms_norm", "--kernel FILE must be a .py file"),
        ("{tmp}/none.py:rms_norm", "is not a readable file"),
        ("{tmp}:rms_norm", "--kernel FILE must be a .py file"),
    ],
)
def test_parse_kernel_spec_names_the_part_that_is_wrong(tmp_path, text, message) -> None:
    (tmp_path / "k.py").write_text("")
    (tmp_path / "k.txt").write_text("")
    with pytest.raises(KernelSpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_kernel_spec(text.format(tmp=tmp_path))


def test_the_spec_hashes_the_file_it_names(tmp_path) -> None:
    path = tmp_path / "k.py"
    path.write_bytes(b"def f(x, w, eps, out=None):\n    return x\n")
    spec = parse_kernel_spec(f"{path}:f")
    assert spec.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert spec.path == path.resolve()
    assert spec.function == "f"


def test_a_file_that_hangs_while_importing_is_refused_after_the_start_timeout(
    tmp_path, monkeypatch
) -> None:
    from kernels.sandbox import usercode

    path = tmp_path / "slow.py"
    path.write_text("import time\n\ntime.sleep(600)\n")
    monkeypatch.setattr(usercode, "START_TIMEOUT_S", 3.0)
    with pytest.raises(KernelSpecError, match="did not finish importing within 3 s"):
        UserKernel(parse_kernel_spec(f"{path}:rms_norm")).__enter__()


def test_a_cancel_ends_the_wait_for_a_hanging_import_and_kills_the_child(tmp_path) -> None:
    import threading

    from kernels.sandbox.usercode import KernelCancelled

    path = tmp_path / "slow.py"
    path.write_text("import time\n\ntime.sleep(600)\n")
    cancel = threading.Event()
    kernel = UserKernel(parse_kernel_spec(f"{path}:rms_norm"), cancel=cancel)
    timer = threading.Timer(0.5, cancel.set)
    timer.start()
    try:
        # Without the cancel this waits START_TIMEOUT_S (120 s), then raises KernelSpecError.
        with pytest.raises(KernelCancelled, match="cancelled"):
            kernel.__enter__()
    finally:
        timer.cancel()
    assert kernel._child is None  # closed: the child was killed and reaped


@pytest.mark.parametrize(
    "header", [b"[1, 2]\n", b'{"ok": true, "array_bytes": [-5]}\n', b"[" * 60_000 + b"\n"]
)
def test_a_file_that_writes_past_the_protocol_is_refused_not_trusted(tmp_path, header) -> None:
    # The protocol's pipe is an inherited descriptor; code may write to it (a C library, a
    # crafted file). Whatever it sends must be this protocol's or the start is refused.
    path = tmp_path / "forger.py"
    path.write_text(
        textwrap.dedent(
            f"""
            import os, stat
            for fd in range(3, 16):
                try:
                    if stat.S_ISFIFO(os.fstat(fd).st_mode):
                        os.write(fd, {header!r})
                        break
                except OSError:
                    pass

            def rms_norm(x, weight, eps, out=None):
                return x
            """
        )
    )
    with pytest.raises(KernelSpecError, match=r"not this protocol's|nested too deep"):
        UserKernel(parse_kernel_spec(f"{path}:rms_norm")).__enter__()
