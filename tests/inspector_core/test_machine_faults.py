"""Verdicts that separate the kernel from the machine: under the interpreter the check probes
what the interpreter gets wrong (kernels.sandbox.interpreter_probe), and a user kernel's run that
used it is *not judged* (exit 3, by cause, in the receipt), never failed; an autotuned kernel is
proven config by config. The expectations follow the probe, so a triton whose interpreter is fixed
judges these kernels and they pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kernels
from inspector.check import findings, pipeline
from kernels.mode import INTERPRETER
from kernels.sandbox import interpreter_probe as probe
from oracle import fixtures, matrix, scalar

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "resources" / "kernels"
interpreted = pytest.mark.skipif(kernels.MODE != INTERPRETER, reason="interpreter mode only")


def run_main(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        capture_output=True, text=True, cwd=ROOT, env=dict(os.environ), timeout=timeout,
        check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def faults():
    if kernels.MODE != INTERPRETER:
        yield ()
        return
    found = probe.probe()
    yield found
    probe.RECORDER.keep_only(())  # this worker's later kernel runs pay for no wrapper


def _named(faults: tuple[probe.Fault, ...], name: str) -> probe.Fault | None:
    return next((f for f in faults if f.name == name), None)


# ---- the probe ----


@interpreted
def test_a_kernel_that_accumulates_in_float32_meets_no_fault_in_any_dtype(faults) -> None:
    # The bundled kernel loads half-precision values, converts them and works in float32: the
    # operations it runs are exactly the ones the probe found right, in every dtype.
    for dtype in ("float32", "float16", "bfloat16"):
        x = np.linspace(-2.0, 3.0, 3 * 70).reshape(3, 70)
        with probe.RECORDER.recording() as seen:
            kernels.run_checked(x, np.ones(70), eps=1e-6, dtype=dtype)
        assert seen, dtype
        assert probe.faults_hit(faults, seen) == [], (dtype, sorted(seen))


@interpreted
def test_the_probe_names_what_it_saw_and_only_operations_no_passing_probe_ran(faults) -> None:
    bf16 = _named(faults, "bfloat16 arithmetic")
    if bf16 is None:
        pytest.skip("this triton's interpreter computes bfloat16 right")
    assert "gave" in bf16.cause or "raised" in bf16.cause
    assert bf16.signature
    assert all(op.endswith(":bf16") for op in bf16.signature), bf16.signature
    loads_and_stores = {op for op in bf16.signature if "load" in op or "store" in op}
    assert not loads_and_stores
    # float32 and float16 arithmetic is right in every triton this product supports.
    assert _named(faults, "float32 arithmetic") is None
    assert _named(faults, "float16 arithmetic") is None


@interpreted
def test_after_the_probe_only_the_operations_a_fault_names_stay_wrapped(faults) -> None:
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    probe.RECORDER.keep_only(faults)
    wanted = {mark.split(":")[0] for fault in faults for mark in fault.signature}
    wrapped = {name for name in vars(builder) if name.startswith("create_")}
    assert wrapped - {"create_masked_load"} <= wanted  # guarded reads wrap the masked load
    # What stays wrapped still records: a bf16 product is seen, an fp32 load is not.
    if "create_fmul" in wanted:
        with probe.RECORDER.recording() as seen:
            kernels.run_checked(np.ones((1, 8)), np.ones(8), eps=1e-6, dtype="float32")
        assert not any(op.startswith("create_load") for op in seen)


def test_a_fault_is_hit_by_its_operations_or_by_an_error_naming_the_machine() -> None:
    fault = probe.Fault(
        "libdevice", "rsqrt raised", frozenset({"libdevice:"}), ("no 'get_bf16' in Interpreter",)
    )
    other = probe.Fault("bfloat16 arithmetic", "mul gave 1e35", frozenset({"create_fmul:bf16"}))
    assert probe.faults_hit((fault, other), {"libdevice:exp", "create_load:fp32"}) == [fault]
    assert probe.faults_hit((fault, other), {"create_fmul:bf16"}) == [other]
    assert probe.faults_hit((fault, other), {"create_fmul:fp32"}) == []
    assert probe.faults_hit((fault, other), set(), "x: no 'get_bf16' in Interpreter") == [fault]
    assert probe.faults_hit((fault, other), set(), "ValueError: shapes differ") == []


# ---- the matrix: not judged is neither a pass, a failure nor a kill ----


def test_a_run_the_machine_cannot_judge_is_neither_passed_failed_nor_a_kill() -> None:
    def implementation(problem, poison, mutant):
        if problem.dtype == "bfloat16":
            raise matrix.NotJudged("bfloat16 arithmetic: mul gave 1e35")
        if mutant is not None:
            raise ValueError("a mutant that fails everything it runs")
        return matrix.model_implementation(problem, poison, None)

    chosen = [f for f in fixtures.FIXTURES if f.name in ("width_70", "bfloat16_rows")]
    result = matrix.kill_matrix(implementation, ["broken"], chosen, target="kernel")
    outcome = {o.fixture: o for o in result.baseline}["bfloat16_rows"]
    assert outcome.actual == matrix.NOT_JUDGED
    assert not outcome.passed
    assert outcome.detail == "not judged on this machine: bfloat16 arithmetic: mul gave 1e35"
    assert result.baseline_failures == ()
    assert [o.fixture for o in result.not_judged] == ["bfloat16_rows"]
    assert result.killed_by("broken") == ("width_70",)


# ---- check and mutate on real kernels ----


@interpreted
def test_a_kernel_with_bf16_products_is_not_judged_on_those_fixtures_exit_3(faults, tmp_path):
    out = tmp_path / "out"
    kernel = f"{EXAMPLES / 'llama_order.py'}:rms_norm"
    done = run_main("check", "--quiet", "--kernel", kernel, "--out", str(out))
    receipt = json.loads((out / "receipt.json").read_text())
    if _named(faults, "bfloat16 arithmetic") is None:
        assert done.returncode == 0, done.stdout[-2000:]
        return
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-2000:]
    last = done.stdout.splitlines()[-1]
    assert last.startswith("NOT JUDGED: nothing failed")
    assert "--device cuda" in last
    unjudged = {entry["run"] for entry in receipt["kernel"]["not_judged"]}
    assert unjudged == {f.name for f in fixtures.FIXTURES if f.name.startswith("bfloat16")}
    assert all("bfloat16 arithmetic" in e["why"] for e in receipt["kernel"]["not_judged"])
    # Once, by cause: one NOT JUDGED line names the fault and every fixture it took.
    cause_lines = [line for line in done.stdout.splitlines() if line.startswith("NOT JUDGED on")]
    assert len(cause_lines) == 1
    assert f"({len(unjudged)} run(s): " in cause_lines[0]
    assert "passed 28/31 runnable (3 not judged on this machine)" in done.stdout
    assert receipt["verdict"] == {"passed": False, "failures": [], "outcome": "not judged"}
    assert {f["name"] for f in receipt["kernel"]["machine_faults"]} >= {"bfloat16 arithmetic"}
    verified = run_main("verify", str(out / "receipt.json"), str(out / "receipt.csv"))
    assert verified.returncode == 1
    assert "every fixture judged: not judged on the machine that ran it" in verified.stdout
    assert "ok   verdict names its outcome: outcome 'not judged'" in verified.stdout


@interpreted
def test_a_kernel_calling_libdevice_gets_the_machines_verdict_on_every_run(faults, tmp_path):
    libdevice = _named(faults, "libdevice")
    out = tmp_path / "out"
    kernel = f"{EXAMPLES / 'libdevice_rsqrt.py'}:rms_norm"
    done = run_main("check", "--quiet", "--kernel", kernel, "--out", str(out))
    if libdevice is None:
        assert done.returncode == 0, done.stdout[-2000:]
        return
    assert done.returncode == 3, done.stdout[-3000:]
    receipt = json.loads((out / "receipt.json").read_text())
    unjudged = [entry["run"] for entry in receipt["kernel"]["not_judged"]]
    assert unjudged[0] == "the input"
    runnable = [f.name for f in fixtures.FIXTURES if f.check != "rejection"]
    assert unjudged[1:] == runnable
    assert "InterpreterError" not in done.stdout  # the kernel is not blamed for the machine


@interpreted
def test_mutate_judges_mutants_only_where_the_machine_can_and_says_so(faults) -> None:
    from inspector.mutate.baseline_run import run_baseline
    from kernels.sandbox.usercode import parse_kernel_spec

    spec = parse_kernel_spec(f"{EXAMPLES / 'llama_order.py'}:rms_norm")
    baseline = run_baseline(spec, str(EXAMPLES), -3072.0, 120.0)
    assert baseline.failed == ()
    if _named(faults, "bfloat16 arithmetic") is not None:
        assert {name for name, _ in baseline.not_judged} == {
            f.name for f in fixtures.FIXTURES if f.name.startswith("bfloat16")
        }
    assert len(baseline.passed) + len(baseline.not_judged) == sum(
        f.check != "rejection" for f in fixtures.FIXTURES
    )


# ---- autotune: every config is a layout to prove ----


def test_an_autotuned_kernel_is_proven_config_by_config(tmp_path) -> None:
    out = tmp_path / "out"
    kernel = f"{EXAMPLES / 'autotuned.py'}:rms_norm"
    done = run_main("check", "--quiet", "--kernel", kernel, "--out", str(out))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    receipt = json.loads((out / "receipt.json").read_text())
    configs = receipt["kernel"]["autotune_configs"]
    assert [c.split(", ")[0] for c in configs] == [
        "_rms_norm_row: CHUNK=64", "_rms_norm_row: CHUNK=256", "_rms_norm_row: CHUNK=1024"
    ]  # fmt: skip
    assert "autotune: each of 3 configs run and judged on every fixture" in done.stdout


def test_a_config_that_computes_wrong_fails_its_fixture_by_name(tmp_path) -> None:
    # One config of three scales the output by 1 + 2**-6 (BUG=1): only that config is wrong,
    # on every shape; an autotuner that benchmarked would as likely never run it.
    source = (EXAMPLES / "autotuned.py").read_text()
    for chunk, warps, bug in ((64, 1, 0), (256, 2, 1), (1024, 4, 0)):
        source = source.replace(
            f'triton.Config({{"CHUNK": {chunk}}}, num_warps={warps})',
            f'triton.Config({{"CHUNK": {chunk}, "BUG": {bug}}}, num_warps={warps})',
        )
    source = source.replace("CHUNK: tl.constexpr):", "CHUNK: tl.constexpr, BUG: tl.constexpr):")
    source = source.replace("rrms = 1.0 / tl.sqrt(", "rrms = (1.0 + BUG / 64) / tl.sqrt(")
    assert source.count("BUG") == 5
    planted = tmp_path / "autotuned_bug.py"
    planted.write_text(source)
    from inspector.check.user_kernel import UserImplementation
    from kernels.sandbox.usercode import parse_kernel_spec

    implementation = UserImplementation(
        parse_kernel_spec(f"{planted}:rms_norm"), poison=float("nan")
    )
    try:
        assert len(implementation.configs) == 3
        fixture = next(f for f in fixtures.FIXTURES if f.name == "width_70")
        outcome = matrix.evaluate(fixture, implementation)
        # The check's run on the input judges every config too, not only the first.
        problem = fixture.build()
        reference = scalar.reference(problem)
        kernel_run = pipeline.run_and_judge_user_kernel(implementation, problem, reference.y)
        found, _ = findings.kernel_run_findings(kernel_run, problem, reference)
    finally:
        implementation.close()
    assert outcome.actual == "fail"
    assert outcome.detail.startswith("config _rms_norm_row: BUG=1, CHUNK=256"), outcome.detail
    assert "BUG=0" not in outcome.detail
    assert kernel_run.comparison.passed  # the first config (BUG=0)
    labels = [label for label, _ in kernel_run.variant_comparisons]
    assert len(labels) == 2
    assert labels[0].startswith("_rms_norm_row: BUG=1, CHUNK=256, num_warps=2")
    assert labels[1].startswith("_rms_norm_row: BUG=0, CHUNK=1024, num_warps=4")
    assert len(found) == 1
    assert found[0].startswith(f"kernel config {labels[0]} vs scalar reference: FAIL")


def test_a_problem_run_through_every_config_compares_each_to_the_reference() -> None:
    def implementation(problem, poison, mutant):
        good = matrix.model_implementation(problem, poison, None).y
        return matrix.RunOutput(y=good, variants=(("A", good), ("B", good * 1.5)))

    fixture = next(f for f in fixtures.FIXTURES if f.name == "width_70")
    outcome = matrix.evaluate(fixture, implementation)
    assert outcome.actual == "fail"
    assert outcome.detail.startswith("config B: output vs scalar reference: FAIL")
    assert "config A" not in outcome.detail


# ---- a float argument: a Python float under the interpreter, a float32 scalar on a GPU ----


def _eps_cast_kernel(tmp_path: Path, where: str) -> str:
    """The libdevice example with libdevice's rsqrt swapped for 1 / sqrt and ``eps`` cast with
    ``.to(tl.float32)`` (as Liger-Kernel writes it) in the kernel body, or in the launcher."""
    source = (EXAMPLES / "libdevice_rsqrt.py").read_text()
    source = source.replace("from triton.language.extra import libdevice\n", "")
    body = "1.0 / tl.sqrt(tl.sum(x * x, axis=0) / width + eps.to(tl.float32))"
    if where == "launcher":
        body = "1.0 / tl.sqrt(tl.sum(x * x, axis=0) / width + eps)"
        source = source.replace(
            "    width = x.shape[-1]\n", "    width = x.shape[-1]\n    eps.to(x)\n"
        )
    source = source.replace("libdevice.rsqrt(tl.sum(x * x, axis=0) / width + eps)", body)
    assert "libdevice" not in source.split('"""')[-1]
    path = tmp_path / f"eps_cast_in_{where}.py"
    path.write_text(source)
    return f"{path}:rms_norm"


@interpreted
def test_a_float_argument_cast_in_the_kernel_is_the_machines_fault_not_the_kernels(
    faults, tmp_path
) -> None:
    scalar = _named(faults, "float scalar arguments")
    out = tmp_path / "out"
    done = run_main("check", "--quiet", "--kernel", _eps_cast_kernel(tmp_path, "kernel"),
                    "--out", str(out))  # fmt: skip
    if scalar is None:
        assert done.returncode == 0, done.stdout[-2000:]
        return
    assert "'float' object has no attribute 'to'" in scalar.errors
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-2000:]
    receipt = json.loads((out / "receipt.json").read_text())
    whys = [entry["why"] for entry in receipt["kernel"]["not_judged"]]
    runnable = [f.name for f in fixtures.FIXTURES if f.check != "rejection"]
    assert len(whys) == 1 + len(runnable)
    assert all("float scalar arguments" in why for why in whys)
    assert receipt["verdict"]["failures"] == []


@interpreted
def test_the_same_cast_in_the_launchers_own_python_is_the_kernels_failure(faults, tmp_path):
    done = run_main("check", "--quiet", "--kernel", _eps_cast_kernel(tmp_path, "launcher"),
                    "--out", str(tmp_path / "out"))  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:]
    assert "'float' object has no attribute 'to'" in done.stdout
    assert "NOT JUDGED" not in done.stdout
