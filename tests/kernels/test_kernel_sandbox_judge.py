"""The judge outside the judged: a user's kernel runs under a reaper, in an environment and a
folder of its own, within a memory limit and a time budget, and the inspector judges its raw
buffers; a kernel that breaks the launcher's contract fails by name."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from inspector.check.user_kernel import UserImplementation, UserKernelFailed
from kernels.sandbox import reaper
from kernels.sandbox.judge import contract_broken, judge
from kernels.sandbox.usercode import UserKernel, parse_kernel_spec
from oracle.spec import make_problem

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "resources" / "kernels" / "tutorial.py"
POISON = -3072.0

pytestmark = pytest.mark.skipif(not reaper.available(), reason="the reaper needs Linux /proc")


def _kernel_file(folder: Path, body: str) -> Path:
    (folder / "tutorial.py").write_text(TUTORIAL.read_text())
    path = folder / "attack.py"
    path.write_text("from tutorial import rms_norm as good\n" + textwrap.dedent(body))
    return path


def _run(kernel: UserKernel, rows: int = 3, width: int = 70):
    x = np.random.default_rng(0).standard_normal((rows, width)).astype(np.float32)
    w = np.ones(width, dtype=np.float32)
    return kernel.run(
        x, w, eps=1e-6, dtype="float32", x_stride=width, y_stride=width + 128, poison=POISON,
        guard=128,
    )  # fmt: skip


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


# ------------------------------------------------------------------ the judge, by itself


def _header(rows: int, width: int, guard: int = 4) -> dict:
    return {"dtype": "float32", "guard": guard, "poison": POISON, "x_stride": width,
            "y_stride": width + guard}  # fmt: skip


def _buffers(x, w, header):
    from kernels.sandbox.judge import bits, guarded_buffers

    xb, wb, yb = guarded_buffers(
        x, w, dtype="float32", guard=header["guard"], poison=POISON,
        x_stride=header["x_stride"], y_stride=header["y_stride"],
    )  # fmt: skip
    return xb, wb, yb, bits


RETURNED = {"dtype": "float32", "column_stride": 1, "aliases": []}


def test_the_judge_finds_each_changed_bit_outside_the_data_and_in_x_and_the_weight():
    x, w = np.arange(6.0).reshape(2, 3), np.ones(3)
    header = _header(2, 3)
    xb, wb, yb, bits = _buffers(x, w, header)
    yb[4:7] = 1.0  # row 0's data
    yb[4 + 7 : 4 + 10] = 1.0  # row 1's data
    clean = judge(header, x, w, (bits(yb), bits(xb), bits(wb)), RETURNED)
    assert (clean.out_of_bounds, clean.into_x, clean.into_weight, clean.broken) == ((), (), (), ())
    yb[7] = 5.0  # row 0's padding, the first element past its width
    yb[0] = 5.0  # the leading guard
    xb[5] = 9.0  # x[0, 1]
    wb[4] = 0.0  # weight[0]
    found = judge(header, x, w, (bits(yb), bits(xb), bits(wb)), RETURNED)
    assert found.out_of_bounds == (0, 7)
    assert found.into_x == (5,)
    assert found.into_weight == (4,)
    assert found.broken == ("changed 1 element(s) of its weight buffer",)


def test_the_judge_refuses_a_buffer_of_another_size_than_it_gave():
    x, w = np.ones((2, 3)), np.ones(3)
    header = _header(2, 3)
    xb, wb, yb, bits = _buffers(x, w, header)
    with pytest.raises(ValueError, match="sent a x buffer of"):
        judge(header, x, w, (bits(yb), bits(xb)[:-1], bits(wb)), RETURNED)


@pytest.mark.parametrize(
    ("returned", "said"),
    [
        ({**RETURNED, "dtype": "float64"}, "returned float64 for a float32 input"),
        ({**RETURNED, "column_stride": 3}, "columns are not contiguous (column stride 3)"),
        ({**RETURNED, "aliases": ["x"]}, "returned a tensor in the memory of x"),
        ({}, "returned an unknown dtype for a float32 input"),
    ],
)
def test_each_broken_contract_is_named(returned, said):
    assert any(said in text for text in contract_broken("float32", returned, 0))
    assert contract_broken("float32", RETURNED, 0) == ()


# ------------------------------------------------------------------ contracts, end to end


CONTRACT_BREAKERS = {
    "zeroes_weight": (
        """
        def zeroes_weight(x, weight, eps, out=None):
            y = good(x, weight, eps, out=out)
            weight.zero_()
            return y
        """,
        "changed 70 element(s) of its weight buffer",
    ),
    "float64": (
        """
        def float64(x, weight, eps, out=None):
            return good(x, weight, eps).double()
        """,
        "returned float64 for a float32 input",
    ),
    "aliased": (
        """
        def aliased(x, weight, eps, out=None):
            x.copy_(good(x, weight, eps))
            return x
        """,
        "returned a tensor in the memory of x",
    ),
    "strided": (
        """
        def strided(x, weight, eps, out=None):
            return good(x, weight, eps).t().contiguous().t()
        """,
        "columns are not contiguous (column stride 3)",
    ),
}


@pytest.fixture(scope="module")
def contract_file(tmp_path_factory) -> Path:
    body = "".join(textwrap.dedent(code) for code, _ in CONTRACT_BREAKERS.values())
    return _kernel_file(tmp_path_factory.mktemp("contract"), body)


@pytest.mark.parametrize("name", sorted(CONTRACT_BREAKERS))
def test_a_kernel_that_breaks_the_contract_fails_by_name(contract_file, name):
    spec = parse_kernel_spec(f"{contract_file}:{name}")
    problem = make_problem(np.random.default_rng(1).standard_normal((3, 70)), np.ones(70), eps=1e-6)
    user = UserImplementation(spec, poison=POISON)
    try:
        with pytest.raises(UserKernelFailed, match="broke its contract") as failed:
            user.run(problem, POISON)
    finally:
        user.close()
    assert CONTRACT_BREAKERS[name][1] in str(failed.value)


def test_a_kernel_that_forges_the_childs_judgement_is_still_caught(tmp_path):
    """The kernel rewrites, in its own process, everything that used to count its stores there:
    the inspector counts them from the buffers."""
    path = _kernel_file(
        tmp_path,
        """
        import sys
        import kernels.sandbox.judge as judge

        judge.judge = lambda *a, **k: None
        judge.contract_broken = lambda *a, **k: ()
        main = sys.modules["__main__"]

        def forged(x, weight, eps, out=None):
            y = good(x, weight, eps, out=out)
            base = out.as_strided((out.numel() + 300,), (1,))
            base[out.shape[1] : out.shape[1] + 10] = 7.0  # into row 0's padding
            return y
        """,
    )
    with UserKernel(parse_kernel_spec(f"{path}:forged")) as kernel:
        run = _run(kernel)
    assert run.outcome == "ok", run.detail
    assert len(run.oob_writes) == 10


# ------------------------------------------------------------------ its process


def test_the_kernel_sees_none_of_this_processs_environment_and_a_folder_of_its_own(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("RMSNORM_TEST_SECRET", "hunter2-token")
    path = _kernel_file(
        tmp_path,
        """
        import os

        def tells(x, weight, eps, out=None):
            raise RuntimeError(
                f"env={sorted(os.environ)!r} cwd={os.getcwd()} tmp={os.environ.get('TMPDIR')} "
                f"secret={os.environ.get('RMSNORM_TEST_SECRET')}"
            )
        """,
    )
    with UserKernel(parse_kernel_spec(f"{path}:tells")) as kernel:
        run = _run(kernel)
        folder = kernel._folder
    assert run.outcome == "error"
    assert "hunter2" not in run.detail
    assert "RMSNORM_TEST_SECRET" not in run.detail
    assert f"cwd={folder} tmp={folder}" in run.detail
    assert not os.path.exists(folder)  # removed with the process


def _spawner(tmp_path: Path) -> Path:
    """A kernel that leaves a process in a session of its own, and one double-forked, each
    writing its pid to ``tmp_path``."""
    return _kernel_file(
        tmp_path,
        f"""
        import os, subprocess

        def leaves(x, weight, eps, out=None):
            child = subprocess.Popen(["sleep", "300"], start_new_session=True)
            open({str(tmp_path / "setsid.pid")!r}, "w").write(str(child.pid))
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    open({str(tmp_path / "double.pid")!r}, "w").write(str(os.getpid()))
                    os.execvp("sleep", ["sleep", "300"])
                os._exit(0)
            return good(x, weight, eps, out=out)
        """,
    )


def _pids(tmp_path: Path) -> list[int]:
    deadline = time.monotonic() + 10
    names = ("setsid.pid", "double.pid")
    while time.monotonic() < deadline and not all((tmp_path / n).exists() for n in names):
        time.sleep(0.05)
    return [int((tmp_path / n).read_text()) for n in names]


def test_nothing_the_kernel_starts_outlives_its_run(tmp_path):
    path = _spawner(tmp_path)
    with UserKernel(parse_kernel_spec(f"{path}:leaves")) as kernel:
        run = _run(kernel)
        pids = _pids(tmp_path)
        assert all(_alive(pid) for pid in pids)
    assert run.outcome == "ok", run.detail
    assert all(_gone(pid) for pid in pids), [p for p in pids if _alive(p)]


@pytest.mark.timeout(120)
def test_nothing_the_kernel_starts_outlives_a_killed_inspector(tmp_path):
    path = _spawner(tmp_path)
    script = textwrap.dedent(
        f"""
        import sys, time
        import numpy as np
        from kernels.sandbox.usercode import UserKernel, parse_kernel_spec
        kernel = UserKernel(parse_kernel_spec({f"{path}:leaves"!r})).__enter__()
        x = np.ones((3, 70), dtype=np.float32)
        run = kernel.run(x, np.ones(70, dtype=np.float32), eps=1e-6, dtype="float32",
                         x_stride=70, y_stride=198, poison=-3072.0, guard=128)
        print(kernel._child.pid, run.outcome, flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        line = parent.stdout.readline().split()
        assert line, "the parent said nothing"
        assert line[1] == "ok", line
        pids = [*_pids(tmp_path), int(line[0])]
        assert all(_alive(pid) for pid in pids)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        parent.stdout.close()
    assert all(_gone(pid) for pid in pids), [p for p in pids if _alive(p)]


@pytest.mark.timeout(120)
def test_a_kernel_past_the_memory_limit_is_ended_and_the_limit_named(tmp_path):
    path = _kernel_file(
        tmp_path,
        """
        import time
        import numpy as np

        def hoards(x, weight, eps, out=None):
            kept = np.ones(2**30 // 8)  # 1 GiB, touched
            time.sleep(20)
            return good(x, weight, eps, out=out)
        """,
    )
    started = time.monotonic()
    with UserKernel(parse_kernel_spec(f"{path}:hoards"), memory_limit_bytes=900 * 2**20) as k:
        run = _run(k)
    assert run.outcome == "crashed"
    assert "over the memory limit of 900 MiB (--kernel-memory)" in run.detail
    assert time.monotonic() - started < 15


def test_a_kernel_within_the_default_memory_limit_runs(tmp_path):
    with UserKernel(parse_kernel_spec(f"{TUTORIAL}:rms_norm")) as kernel:
        assert kernel.memory_limit_bytes == 2 * 2**30
        run = _run(kernel, rows=64, width=4096)
    assert run.outcome == "ok", run.detail


@pytest.mark.timeout(120)
def test_the_time_budget_ends_the_runs_at_the_budget_and_names_it(tmp_path):
    path = _kernel_file(
        tmp_path,
        """
        import time

        def slow(x, weight, eps, out=None):
            time.sleep(1.5)
            return good(x, weight, eps, out=out)
        """,
    )
    spec = parse_kernel_spec(f"{path}:slow")
    with UserKernel(spec, time_budget_s=6.0) as kernel:
        first = _run(kernel)  # the child's start is not a run: the budget is the runs'
        second = _run(kernel)
        assert (first.outcome, second.outcome) == ("ok", "ok"), (first.detail, second.detail)
        kernel._spent_s = 5.0  # one second left: the next run is cut at the budget
        cut = _run(kernel)
        after = _run(kernel)
    budget = "time budget of 6 s for all its runs is spent (--kernel-time)"
    assert cut.outcome == "timeout"
    assert budget in cut.detail
    assert after.outcome == "timeout"
    assert budget in after.detail


@pytest.mark.parametrize(
    ("memory", "seconds", "said"),
    [
        (256, 1.0, ""),
        (1 << 20, 86_400.0, ""),
        (None, None, ""),
        (255, 1.0, "--kernel-memory must be in [256, 1048576] MiB; got 255"),
        ((1 << 20) + 1, 1.0, "--kernel-memory must be in [256, 1048576] MiB; got 1048577"),
        (256, 0.99, "--kernel-time must be in [1, 86400] seconds; got 0.99"),
        (256, 86_401.0, "--kernel-time must be in [1, 86400] seconds; got 86401"),
    ],
)
def test_the_kernel_limits_at_their_bounds_and_one_step_past(memory, seconds, said):
    from kernels.sandbox.usercode import kernel_limits

    if said:
        with pytest.raises(ValueError, match=re.escape(said)):
            kernel_limits(memory, seconds)
    else:
        limit, budget = kernel_limits(memory, seconds)
        assert limit == (memory or 2048) * 2**20
        assert budget == (seconds or 300.0)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--kernel-memory", "4096"], "error: --kernel-memory: a limit of your kernel's; it goes "
         "with --kernel"),
        (["--kernel", f"{TUTORIAL}:rms_norm", "--kernel-time", "0"],
         "error: --kernel-time must be in [1, 86400] seconds; got 0"),
    ],
)  # fmt: skip
def test_a_bad_kernel_limit_on_the_command_line_is_one_line_exit_2(tmp_path, extra, said):
    done = subprocess.run(
        [sys.executable, "main.py", "check", "--x", "1,2", "--weight", "1,1", "--eps", "1e-6",
         "--out", str(tmp_path / "out"), *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == said
    assert not (tmp_path / "out").exists()


def test_a_launcher_that_cannot_take_x_weight_eps_is_refused_at_load(tmp_path):
    from kernels.sandbox.usercode import KernelSpecError

    path = tmp_path / "one.py"
    path.write_text("def one(x):\n    return x\n\n\ndef any_args(*args, **kwargs):\n    return 0\n")
    with pytest.raises(KernelSpecError, match=r"one\(x\) cannot be called as FUNCTION\(x, weight"):
        UserKernel(parse_kernel_spec(f"{path}:one")).__enter__()
    with UserKernel(parse_kernel_spec(f"{path}:any_args")) as kernel:  # bindable: loads
        assert kernel.mode


PLANTERS = {
    "check": (
        "receipt.csv",
        ["check", "--x", "1,2,3;4,5,6", "--weight", "1,1,1", "--eps", "1e-6", "--quiet"],
        "error: --out/--session changed while the kernel ran (receipt.csv: a new symbolic link);",
    ),
    "mutate": (
        "mutation.json",
        ["mutate", "--count", "1", "--jobs", "1", "--no-ttir", "--no-coverage"],
        "error: --out changed while the mutants ran (mutation.json: a new symbolic link);",
    ),
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("command", sorted(PLANTERS))
def test_a_kernel_that_plants_a_link_in_out_gets_nothing_written_through_it(tmp_path, command):
    name, arguments, said = PLANTERS[command]
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("precious")
    path = _kernel_file(
        tmp_path,
        f"""
        import os

        def plants(x, weight, eps, out=None):
            link = {str(out / name)!r}
            if not os.path.lexists(link):
                os.symlink({str(victim)!r}, link)
            return good(x, weight, eps, out=out)
        """,
    )
    done = subprocess.run(
        [sys.executable, "main.py", *arguments, "--kernel", f"{path}:plants", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=280, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert said in done.stderr
    assert victim.read_text() == "precious"
    written = {p.name for p in out.iterdir()} - {".rmsnorm-inspector.lock", name}
    assert written == set()  # the run's lock and the planted link only
